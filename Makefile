# clustersim: the two commands of the README, plus benchmarks.
#   make demo   install missing Debian packages (as root; otherwise print the apt-get line and stop),
#               configure, build (Release) and run the shipped GPT-3 175B scenario
#   make test   the same set-up, then every test (unit, regression, validation)
#   make bench  the same set-up, then the benchmarks, printed as tables
#   make golden     the same set-up, then rewrite tests/regression/golden/ from the current model (after a
#                   deliberate change; `git diff` then names each moved column under its scenario)
#   make install    the same set-up, then install clustersim, clustersim-mpi, the catalog, the example scenarios
#                   and the analysis package under PREFIX (default /usr/local; as any user: PREFIX=$HOME/.local)
#   make package    the same set-up, then the Debian package $(BUILD_DIR)/clustersim_<version>_amd64.deb
#                   (`apt install ./build/clustersim_*.deb`)
#   make notebooks  the same set-up, then execute the three analysis notebooks: the executed copies, figures
#                   inline, in out/notebooks/<name>.ipynb, the PNGs and HDF5 files they save in out/notebooks/<name>/
# Variables: BUILD_DIR (default build), JOBS (default: number of cores), PREFIX (default /usr/local).

BUILD_DIR ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CLUSTERSIM := $(BUILD_DIR)/sim/cli/clustersim
DEMO_SCENARIO := scenarios/megatron/sc21-table1-145p6b-1536gpus.toml

# Debian 12 packages the build, the tests, the demo, the docs' Python snippets (xarray's engine="h5netcdf"), the
# notebooks (the `jupyter` command: jupyter-core, jupyter-nbconvert) and `make package` (dpkg-shlibdeps:
# dpkg-dev; CPack's shlibdeps step runs file(1)) need.
DEB_PACKAGES := g++ make cmake git dpkg-dev file libboost-graph-dev libboost-program-options-dev libeigen3-dev \
  libhdf5-dev libtomlplusplus-dev libbenchmark-dev libgtest-dev libgmock-dev hdf5-tools \
  python3 python3-h5py python3-numpy python3-pandas python3-matplotlib python3-xarray python3-h5netcdf \
  python3-nbconvert python3-ipykernel jupyter-core jupyter-nbconvert python3-pytest openmpi-bin libopenmpi-dev

.PHONY: all deps configure build demo test bench golden validate install package tsan sanitize fuzz clean

all: build

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${db:Status-Status}\n' $$p 2>/dev/null | grep -qx installed || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing missing Debian packages:" $$missing; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -q && apt-get install -y -q --no-install-recommends $$missing || exit 1; \
	  else \
	    echo "Missing Debian packages. Install them with:"; \
	    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends" $$missing; \
	    exit 1; \
	  fi; \
	fi

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DCLUSTERSIM_WITH_MPI=ON

configure: deps $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@mkdir -p out
	$(CLUSTERSIM) run $(DEMO_SCENARIO) -o out/demo.h5

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	cmake --build $(BUILD_DIR) --target bench

# Every shipped scenario's golden file (tests/regression/test_golden.cpp), rewritten in parallel (one file per
# scenario), and files of scenarios no longer shipped removed.
golden: build
	CLUSTERSIM_UPDATE_GOLDEN=1 ctest --test-dir $(BUILD_DIR) -R '^Golden' -j $(JOBS) --output-on-failure

# README "Install". Needs write access to PREFIX only (no root for PREFIX=$HOME/.local).
install: build
	@test -w $(BUILD_DIR) || { echo "make install: $(BUILD_DIR)/ belongs to $$(stat -c %U $(BUILD_DIR)), and cmake --install" \
	  "writes $(BUILD_DIR)/install_manifest.txt. As $$(id -un): git clone the repository, then make install" \
	  "PREFIX=$(PREFIX) in your clone."; exit 1; }
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

package: build
	cmake --build $(BUILD_DIR) --target package

# The validation suite (docs/validation.md): every published run grouped by source, GPU and framework, the
# training fractions refitted on the whole suite, and the leave-one-source-out table.
validate: build
	$(CLUSTERSIM) validate --fit --leave-one-out -j $(JOBS)

# analysis/notebooks executed with Debian's python3 kernel (jupyter-nbconvert, python3-ipykernel), into
# out/notebooks/ (git-ignored, rewritten on each run); then each executed copy's image count (0 fails).
NOTEBOOKS := analysis/notebooks/capacity_planning_sweep.ipynb analysis/notebooks/cross_zone.ipynb \
  analysis/notebooks/spot_vs_on_demand.ipynb analysis/notebooks/what_if.ipynb
.PHONY: notebooks
notebooks: build
	rm -rf out/notebooks && mkdir -p out/notebooks
	CLUSTERSIM_BINARY=$(abspath $(CLUSTERSIM)) CLUSTERSIM_SOURCE_DIR=$(CURDIR) \
	  CLUSTERSIM_OUTPUT_DIR=$(CURDIR)/out/notebooks PYDEVD_DISABLE_FILE_VALIDATION=1 \
	  jupyter nbconvert --to notebook --execute --ExecutePreprocessor.kernel_name=python3 \
	  --ExecutePreprocessor.timeout=600 --output-dir out/notebooks $(NOTEBOOKS)
	@/usr/bin/python3 tests/analysis/notebook_images.py --count $(addprefix out/notebooks/,$(notdir $(NOTEBOOKS)))

# The sweep's threads under ThreadSanitizer (a separate build in $(BUILD_DIR)-tsan): the tests labelled threads
# (the sweep and run tests, which run points on several threads sharing one cluster cache and two in-memory MPI
# ranks).
tsan: deps
	cmake -S . -B $(BUILD_DIR)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS=-fsanitize=thread \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCLUSTERSIM_WITH_MPI=OFF -DCLUSTERSIM_BUILD_BENCH=OFF
	cmake --build $(BUILD_DIR)-tsan -j $(JOBS) --target clustersim test_sweep test_run
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(BUILD_DIR)-tsan -L '^threads$$' --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer (a separate build in $(BUILD_DIR)-asan): the tests labelled unit,
# threads and fuzz (every unit test, and the fuzzer for FUZZ_SECONDS). The sanitizers slow the code 2-4x, so an
# input may take up to 120 s there (30 s in the Release build: the property the fuzzer checks).
FUZZ_SECONDS ?= 60
sanitize: deps
	cmake -S . -B $(BUILD_DIR)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" -DCLUSTERSIM_WITH_MPI=OFF \
	  -DCLUSTERSIM_BUILD_BENCH=OFF -DCLUSTERSIM_FUZZ_SECONDS=$(FUZZ_SECONDS) -DCLUSTERSIM_FUZZ_INPUT_LIMIT=120
	cmake --build $(BUILD_DIR)-asan -j $(JOBS) --target clustersim fuzz_scenarios test_catalog test_engine test_job \
	  test_layering test_memory test_network test_results_file test_run test_scenario test_serving test_step \
	  test_sweep
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD_DIR)-asan -L '^(unit|threads|fuzz)$$' --output-on-failure -j $(JOBS)

# The fuzzer alone, longer (FUZZ_SECONDS, default 60; the issue-14 local run: FUZZ_SECONDS=1800), on the
# Release build, one process per core with its own seed.
fuzz: build
	@pids=""; for i in $$(seq 1 $(JOBS)); do \
	  $(BUILD_DIR)/tests/fuzz/fuzz_scenarios --seconds $(FUZZ_SECONDS) --seed $$i \
	    --failures $(BUILD_DIR)/fuzz-failures $$(cat tests/fuzz/seeds.txt) & pids="$$pids $$!"; \
	done; status=0; for pid in $$pids; do wait $$pid || status=1; done; exit $$status

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR)-tsan $(BUILD_DIR)-asan out
