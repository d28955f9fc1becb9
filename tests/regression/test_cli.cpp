// End-to-end: every shipped scenario runs through the clustersim binary and writes its HDF5 file; bad input
// exits 65 naming file, line, column and key, and writes nothing; same input gives the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/cli.hpp"
#include "tests/support/results.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

/// `err` without the CLI's progress lines (sim/cli/progress.cpp: on a non-terminal a run longer than 2 s prints
/// "LABEL: N of at most M UNIT, ..." or "LABEL: N/M UNIT, ..., ETA ..." lines to stderr; how long a run takes
/// depends on the machine's load, so a shipped scenario's stderr holds nothing else, not nothing at all).
std::string without_progress_lines(const std::string& err) {
  std::string kept;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    end = end == std::string::npos ? err.size() : end + 1;
    const std::string line = err.substr(start, end - start);
    const bool progress = line.find(" of at most ") != std::string::npos || line.find(", ETA ") != std::string::npos;
    if (!progress) kept += line;
    start = end;
  }
  return kept;
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ShippedScenarios, EveryScenarioRunsAndWritesItsResults) {
  const auto scenarios = testing::shipped_scenarios();
  ASSERT_FALSE(scenarios.empty());
  const fs::path dir = temp_dir("shipped");
  for (const fs::path& scenario : scenarios) {
    SCOPED_TRACE(scenario.string());
    const fs::path out = dir / (scenario.stem().string() + ".h5");
    const auto r = run_cli("run '" + scenario.string() + "' -o '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("step time"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(out));
    EXPECT_TRUE(without_progress_lines(r.err).empty()) << r.err;
  }
  fs::remove_all(dir);
}

TEST(ShippedScenarios, EveryServingScenarioRunsAndWritesItsResults) {
  // scenarios/serving/: a synthetic stream and the Azure conversation trace's hour; each report gives the
  // latency percentiles and the cost, and the file its /summary, /requests and /timeseries.
  const auto scenarios = testing::shipped_scenarios(true);
  ASSERT_GE(scenarios.size(), 2u);
  const fs::path dir = temp_dir("serving");
  for (const fs::path& scenario : scenarios) {
    SCOPED_TRACE(scenario.string());
    const fs::path out = dir / (scenario.stem().string() + ".h5");
    const auto r = run_cli("run '" + scenario.string() + "' -o '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("TTFT        p50"), std::string::npos) << r.out;
    // The cost line: per million output tokens, or the GPU-hours of a VM size the catalog has no price for.
    EXPECT_TRUE(r.out.find("per million output tokens") != std::string::npos ||
                r.out.find("no price for") != std::string::npos)
        << r.out;
    EXPECT_TRUE(without_progress_lines(r.err).empty()) << r.err;
    const auto names = [&out](const char* group) {
      std::vector<std::string> n;
      for (const auto& c : sim::read_results_columns(out, group)) n.push_back(c.name);
      return n;
    };
    const auto has = [](const std::vector<std::string>& v, const char* name) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    EXPECT_TRUE(has(names("requests"), "ttft_s"));
    EXPECT_TRUE(has(names("timeseries"), "kv_occupancy"));
    const auto requests = testing::summary_column<double>(out, "ttft_p99_s");
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_GT(requests[0], 0.0);
  }
  // The same serving run twice gives the same bytes; `sweep` ranks a serving sweep's fleets.
  const std::string args = "run scenarios/serving/llama3-70b-nd-h100-tp4-20rps.toml -o '" + (dir / "a.h5").string() + "'";
  ASSERT_EQ(run_cli(args).exit_code, 0);
  const std::string first = testing::read_file(dir / "a.h5");
  ASSERT_EQ(run_cli(args).exit_code, 0);
  EXPECT_EQ(testing::read_file(dir / "a.h5"), first);
  const auto sweep = run_cli("sweep scenarios/sweeps/llama3-70b-serving-fleet.toml --set workload.duration_s=60 -o '" +
                             (dir / "s.h5").string() + "'");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_NE(sweep.out.find("18 points: 18 ok"), std::string::npos) << sweep.out;
  EXPECT_NE(sweep.out.find("cheapest fleet that meets the SLO: run "), std::string::npos) << sweep.out;
  const auto costs = testing::summary_column<double>(dir / "s.h5", "usd_per_million_output_tokens");
  EXPECT_EQ(costs.size(), 18u);
  fs::remove_all(dir);
}

TEST(Cli, SameInputGivesByteIdenticalFiles) {
  const fs::path dir = temp_dir("determinism");
  const std::string args = "run scenarios/megatron/sc21-table1-145p6b-1536gpus.toml -o '" + (dir / "a.h5").string() + "'";
  ASSERT_EQ(run_cli(args).exit_code, 0);
  const std::string first = testing::read_file(dir / "a.h5");
  ASSERT_EQ(run_cli(args).exit_code, 0);
  EXPECT_EQ(testing::read_file(dir / "a.h5"), first);
  fs::remove_all(dir);
}

TEST(Cli, SetOverridesAKey) {
  const auto base = run_cli("run scenarios/megatron/sc21-table1-1p7b-32gpus.toml");
  const auto changed = run_cli("run scenarios/megatron/sc21-table1-1p7b-32gpus.toml --set training.global_batch_size=1024");
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  // micro batch 16 x data 32: 512 sequences is 1 microbatch per replica, 1024 is 2.
  EXPECT_NE(changed.out.find(" 2 microbatches"), std::string::npos) << changed.out;
  EXPECT_NE(base.out.find(" 1 microbatch,"), std::string::npos) << base.out;
  // The file's description no longer describes the run once --set changed it: the header says so (issue 28).
  EXPECT_EQ(base.out.find("the file's description"), std::string::npos) << base.out;
  EXPECT_NE(changed.out.find("  1.7B GPT on 32 A100-80GB (Megatron-LM SC'21, Table 1)\n"
                             "  (the file's description; this run is the file with --set training.global_batch_size=1024)\n"),
            std::string::npos)
      << changed.out;
}

struct BadInput {
  const char* file;     ///< fixture under tests/scenario/data
  const char* where;    ///< expected "FILE:LINE:" prefix fragment
  const char* key;      ///< expected key
};

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, ExitsSixtyFiveNamingFileLineAndKeyAndWritesNothing) {
  const BadInput& bad = GetParam();
  const fs::path dir = temp_dir("bad");
  const fs::path out = dir / "never.h5";
  const auto r = run_cli(std::string("run tests/scenario/data/") + bad.file + " -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find(std::string(bad.file) + ":" + bad.where), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::string("key '") + bad.key + "'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(fs::is_empty(dir)) << "something was written";
  fs::remove_all(dir);
}

// Line numbers are those of the fixtures (tests/scenario/data), checked in tests/scenario too.
INSTANTIATE_TEST_SUITE_P(
    EachClass, CliBadInput,
    ::testing::Values(BadInput{"bad_unknown_key.toml", "20:", "parallelism.tensr"},
                      BadInput{"bad_wrong_type.toml", "20:", "parallelism.tensor"},
                      BadInput{"bad_missing_key.toml", "5:", "model.hidden_size"},
                      BadInput{"bad_out_of_range.toml", "20:", "parallelism.tensor"},
                      BadInput{"bad_gpu_count.toml", "22:", "parallelism.data"},
                      BadInput{"bad_heads_tensor.toml", "20:", "parallelism.tensor"},
                      BadInput{"bad_layers_pipeline.toml", "21:", "parallelism.pipeline"},
                      BadInput{"bad_syntax.toml", "7:", "model.hidden_size"},
                      BadInput{"bad_vm_size.toml", "16:", "cluster.vm_size"}));

TEST(Cli, BadSetOverrideExitsSixtyFive) {
  const auto r = run_cli("run scenarios/megatron/sc21-table1-1p7b-32gpus.toml --set parallelism.tensr=2");
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("--set:1:1: key 'parallelism.tensr'"), std::string::npos) << r.err;
}

TEST(Cli, UsageErrorsExitSixtyFour) {
  EXPECT_EQ(run_cli("").exit_code, 64);
  EXPECT_EQ(run_cli("frobnicate").exit_code, 64);
  EXPECT_EQ(run_cli("run").exit_code, 64);
  EXPECT_EQ(run_cli("run --no-such-option x.toml").exit_code, 64);
}

TEST(Cli, MissingScenarioFileExitsSixtyFive) {
  const auto r = run_cli("run no/such/file.toml");
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("no/such/file.toml"), std::string::npos) << r.err;
}

TEST(Cli, UnwritableOutputExitsSeventyFour) {
  const auto r = run_cli("run scenarios/megatron/sc21-table1-1p7b-32gpus.toml -o /no/such/dir/x.h5");
  EXPECT_EQ(r.exit_code, 74);
  EXPECT_NE(r.err.find("/no/such/dir/x.h5"), std::string::npos) << r.err;
}

TEST(Cli, CatalogPrintsEveryVmSize) {
  const auto r = run_cli("catalog");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* vm : {"Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5", "Standard_D16s_v5"}) {
    EXPECT_NE(r.out.find(vm), std::string::npos) << vm;
  }
}

}  // namespace
}  // namespace clustersim

namespace clustersim {
namespace {

TEST(Cli, OutOfMemoryIsReportedNotACrash) {
  const auto r = testing::run_cli("run scenarios/azure/gpt3-175b-a100-one-node-oom.toml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OUT OF MEMORY"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out of memory: stage 0 needs"), std::string::npos) << r.out;
  // Optimizer states: 12 B per parameter of the 1/8 of 175 B the GPU holds, about 244 GiB.
  EXPECT_NE(r.out.find("optimizer 244.2"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace clustersim
