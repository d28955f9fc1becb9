#include "sim/cli/sweep_command.hpp"

#include <boost/program_options.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/cli/catalog_directory.hpp"
#include "sim/cli/progress.hpp"
#include "sim/errors.hpp"
#include "sim/run/exit_status.hpp"
#include "sim/sweep/command_support.hpp"
#include "sim/sweep/mpi_ranks.hpp"
#include "sim/sweep/sweep_job.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim::sim {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& options,
                        const po::options_description& hidden, const po::positional_options_description& positional) {
  po::options_description all;
  all.add(options).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::ostringstream o;
    o << e.what() << "\n" << options;
    throw UsageError(o.str());
  }
  return vm;
}

std::vector<std::string> set_overrides(const po::variables_map& vm) {
  return vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

/// --shard: "I/N" with 0 <= I < N, or "auto" (a Slurm job array's task id and count). Throws UsageError.
SweepShard parse_shard(const std::string& text) {
  std::string spec = text;
  if (text == "auto") {
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (id == nullptr || count == nullptr) {
      throw UsageError("--shard auto needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (a Slurm job array, "
                       "--array=0-(N-1))");
    }
    spec = std::string(id) + "/" + count;
  }
  const auto slash = spec.find('/');
  const auto i = slash == std::string::npos ? std::nullopt : parse_int(std::string_view(spec).substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : parse_int(std::string_view(spec).substr(slash + 1));
  if (!i || !n || *n < 1 || *i < 0 || *i >= *n) {
    throw UsageError("--shard: '" + spec + "' is not I/N with 0 <= I < N");
  }
  return {*i, *n};
}

/// The command line of `clustersim sweep` as a SweepRequest (-j by default the ranks' default_threads);
/// --help printed to `out`, then nullopt. Throws UsageError.
std::optional<SweepRequest> parse_sweep(const std::vector<std::string>& args, const SweepRanks& ranks,
                                        std::ostream& out) {
  po::options_description options("clustersim sweep SCENARIO -o FILE.h5 [options]");
  options.add_options()("help,h", "show this help")
      ("output,o", po::value<std::string>(), "write the results to this HDF5 file (atomically)")
      ("jobs,j", po::value<int>(), "worker threads (default: the number of CPUs; under MPI, per rank)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario key for every point, e.g. --set training.precision=fp16 (repeatable)")
      ("shard", po::value<std::string>(), "run only points with run_index % N == I: I/N, or auto (Slurm array)")
      ("resume", "continue from FILE.h5.partial, skipping the points it holds (refused when the scenario, --set, "
       "a trace, the catalog or the clustersim version changed since it was written)")
      ("strict", "exit 65 when any point is invalid (the file is still written)")
      ("catalog", po::value<std::string>(), "hardware catalog directory")
      ("format", po::value<std::string>()->default_value("text"),
       "stdout: text (the summary line and the ranking) or json (every point: the HDF5 /summary columns' names, "
       "values and units, and the points ranked by step time)");
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file")
      ("stop-after", po::value<int64_t>(), "testing: stop after this many new points, keeping the sidecar")
      ("test-signal", po::value<std::string>(),
       "testing: raise SIGTERM at the end of setup (setup) or as the results file is written (write)");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  const po::variables_map vm = parse(args, options, hidden, positional);
  if (vm.count("help")) {
    out << options;
    return std::nullopt;
  }
  for (const char* required : {"scenario", "output"}) {
    if (vm.count(required)) continue;
    std::ostringstream o;
    o << (std::string_view(required) == "scenario" ? "missing SCENARIO\n" : "missing -o FILE.h5\n") << options;
    throw UsageError(o.str());
  }
  SweepRequest r;
  r.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : ranks.default_threads();
  if (r.jobs < 1) throw UsageError("-j must be at least 1");
  if (vm.count("shard")) r.shard = parse_shard(vm["shard"].as<std::string>());
  r.resume = vm.count("resume") > 0;
  r.strict = vm.count("strict") > 0;
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") throw UsageError("--format must be text or json, got '" + format + "'");
  r.json = format == "json";
  r.stop_after = vm.count("stop-after") ? vm["stop-after"].as<int64_t>() : -1;
  r.test_signal = vm.count("test-signal") ? vm["test-signal"].as<std::string>() : std::string();
  if (!r.test_signal.empty() && r.test_signal != "setup" && r.test_signal != "write") {
    throw UsageError("--test-signal must be setup or write");
  }
  r.output = vm["output"].as<std::string>();
  r.scenario = vm["scenario"].as<std::string>();
  r.overrides = set_overrides(vm);
  if (vm.count("catalog")) r.catalog_dir = vm["catalog"].as<std::string>();
  r.default_catalog_dir = cli::default_catalog_directory();
  return r;
}

/// The sweep's progress on stderr (rank 0): a bar redrawn in place on a terminal, else a line every 2 s.
class SweepProgressLine final : public SweepProgress {
 public:
  void start(size_t total, size_t target, size_t offset) override {
    line_.emplace("sweep", "points", total, target, offset);
  }
  void update(size_t done) override { line_->update(done); }
  void finish() override { line_->finish(); }

 private:
  std::optional<cli::ProgressLine> line_;
};

int merge_main(const std::vector<std::string>& args) {
  po::options_description options("clustersim merge OUT.h5 SHARD.h5...");
  options.add_options()("help,h", "show this help")
      ("allow-partial", "write the merge of an incomplete set of shards (says how many points are missing)");
  po::options_description hidden;
  hidden.add_options()("files", po::value<std::vector<std::string>>(), "files");
  po::positional_options_description positional;
  positional.add("files", -1);
  const po::variables_map vm = parse(args, options, hidden, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  const auto files = vm.count("files") ? vm["files"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (files.size() < 2) throw UsageError("expected OUT.h5 and at least one SHARD.h5");
  std::cout << merge_sweep_shards(files.front(), std::vector<fs::path>(files.begin() + 1, files.end()),
                                  vm.count("allow-partial") > 0, std::cerr);
  return 0;
}

int list_runs_main(const std::vector<std::string>& args) {
  po::options_description options("clustersim list-runs SCENARIO [options]");
  options.add_options()("help,h", "show this help")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario key (repeatable)")
      ("catalog", po::value<std::string>(), "hardware catalog directory");
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  const po::variables_map vm = parse(args, options, hidden, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("scenario")) throw UsageError("missing SCENARIO");
  const models::Catalog catalog = models::Catalog::load(
      vm.count("catalog") ? vm["catalog"].as<std::string>() : cli::default_catalog_directory().string());
  std::cout << sweep_points_listing(load_sweep(vm["scenario"].as<std::string>(), set_overrides(vm), catalog));
  return 0;
}

}  // namespace

int run_sweep_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  SweepRanks ranks;
  std::ostream null_out(nullptr);
  SweepProgressLine progress;
  const SweepRequestParser parse = [&] {
    return parse_sweep(args, ranks, ranks.rank() == 0 ? std::cout : null_out);
  };
  return run_sweep_job(ranks, parse, progress, std::cout, std::cerr);
}

int run_merge_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return exit_status_of("merge", [&] { return merge_main(args); });
}

int run_list_runs_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return exit_status_of("list-runs", [&] { return list_runs_main(args); });
}

}  // namespace clustersim::sim
