// clustersim command-line interface.
//
//   clustersim run SCENARIO [-o FILE.h5] [--set key=value]...   simulate one training step
//   clustersim catalog                                           print the hardware catalog
//   clustersim collective --vm-size VM [options]                 time one collective over message sizes
//   clustersim sweep SCENARIO -o FILE.h5 [-j N] [--shard I/N] [--resume]   run a sweep (docs/sweeps.md)
//   clustersim merge OUT.h5 SHARD.h5...                          combine the files of a sharded sweep
//   clustersim list-runs SCENARIO                                print the points of a sweep
//   clustersim scenario-keys                                     print the scenario key reference (Markdown)
//   clustersim validate [DIR] [--fit] [--leave-one-out]          the validation suite (docs/validation.md)
//   clustersim --version
// Global option: --catalog DIR (default: CLUSTERSIM_CATALOG_DIR, the installed catalog beside the executable, or
// the source tree's catalog: sim/cli/catalog_directory.hpp).
//
// Exit status: the one table of sim/run/exit_status.hpp (sysexits.h; README "Exit status"). On any error
// nothing is written.
#include <boost/program_options.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/cli/catalog_directory.hpp"
#include "sim/cli/collective_command.hpp"
#include "sim/cli/progress.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/errors.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/catalog_table.hpp"
#include "sim/output/json.hpp"
#include "sim/output/output_path.hpp"
#include "sim/run/exit_status.hpp"
#include "sim/run/run_output.hpp"
#include "sim/version.hpp"

namespace po = boost::program_options;
using namespace clustersim;

namespace {

using sim::UsageError;

std::string join_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) s += ' ';
    s += argv[i];
  }
  return s;
}

models::Catalog load_catalog(const po::variables_map& vm) {
  const std::string dir = vm.count("catalog") ? vm["catalog"].as<std::string>()
                                               : cli::default_catalog_directory().string();
  return models::Catalog::load(dir);
}

/// The --format option's value: "text" or "json"; UsageError otherwise.
std::string output_format(const po::variables_map& vm) {
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") throw UsageError("--format must be text or json, got '" + format + "'");
  return format;
}

int cmd_run(const std::vector<std::string>& args, const std::string& command_line) {
  po::options_description options("clustersim run SCENARIO [options]");
  options.add_options()("help,h", "show this help")
      ("output,o", po::value<std::string>(), "write the results to this HDF5 file (atomically)")
      ("trace", po::value<std::string>(),
       "write a Chrome trace JSON file (atomically): a training step's timeline, or a serving run's engine "
       "iterations (one event each, a track per replica)")
      ("iterations", po::bool_switch(), "serving: also write the engine iterations to the -o file's /iterations")
      ("trace-every", po::value<int64_t>()->default_value(1),
       "serving: keep every Nth engine iteration in --trace and /iterations")
      ("trace-from", po::value<double>(), "serving: keep iterations starting at or after this time, s")
      ("trace-to", po::value<double>(), "serving: keep iterations starting before this time, s")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario key, e.g. --set parallelism.tensor=4 (repeatable)")
      ("catalog", po::value<std::string>(), "hardware catalog directory")
      ("format", po::value<std::string>()->default_value("text"),
       "stdout: text (the report) or json (the /summary row: the HDF5 names, values and units)")
      ("stages", po::bool_switch(), "also print each pipeline stage's own breakdown (the HDF5 runs/0/stages)")
      ("what-if", po::bool_switch(),
       "after the run, re-simulate with one resource changed at a time and rank the changes (docs/what-if.md)")
      ("what-if-set", po::value<std::vector<std::string>>()->composing(),
       "one more what-if row: the scenario with this --set, e.g. --what-if-set parallelism.tensor=4 "
       "(repeatable; implies --what-if)");
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + "\n" + [&] { std::ostringstream o; o << options; return o.str(); }());
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("scenario")) {
    std::ostringstream o;
    o << "missing SCENARIO\n" << options;
    throw UsageError(o.str());
  }
  const bool json = output_format(vm) == "json";
  const models::Catalog catalog = load_catalog(vm);
  const std::vector<std::string> overrides =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  sim::RunOptions run_options;
  run_options.command_line = command_line;
  if (vm.count("output")) run_options.output = vm["output"].as<std::string>();
  if (vm.count("trace")) run_options.trace = vm["trace"].as<std::string>();
  run_options.iterations = vm["iterations"].as<bool>();
  run_options.trace_every = vm["trace-every"].as<int64_t>();
  if (vm.count("trace-from")) run_options.trace_from_s = vm["trace-from"].as<double>();
  if (vm.count("trace-to")) run_options.trace_to_s = vm["trace-to"].as<double>();
  run_options.stages = vm["stages"].as<bool>();
  if (vm.count("what-if-set")) run_options.what_if.user = vm["what-if-set"].as<std::vector<std::string>>();
  run_options.what_if.enabled = vm["what-if"].as<bool>() || !run_options.what_if.user.empty();
  // A job's Monte Carlo can take seconds: its replications as progress on stderr (nothing for a short one).
  std::optional<cli::ProgressLine> line;
  run_options.progress = [&line](int64_t done, int64_t planned) {
    if (!line) {
      line.emplace("job", "replications", static_cast<size_t>(planned), static_cast<size_t>(planned), 0, true);
    }
    line->update(static_cast<size_t>(done));
  };
  const sim::RunOutput run = sim::run_scenario_file(vm["scenario"].as<std::string>(), overrides, catalog, run_options);
  if (line) line->finish();
  // With --format json stdout is one JSON object and the "wrote" lines go to stderr.
  std::ostream& said = json ? std::cerr : std::cout;
  if (json) {
    std::cout << "{\"command\": \"run\", \"scenario\": " << sim::json_string(run.scenario_name)
              << ", \"summary\": " << sim::columns_json(run.summary, true);
    if (const sim::ColumnGroup* what_if = sim::what_if_group(run)) {
      std::cout << ", \"what_if\": " << sim::columns_json(what_if->columns, false);
    }
    std::cout << "}\n";
  } else {
    std::cout << run.report;
  }
  if (run_options.trace) {
    sim::write_run_trace(*run_options.trace, run);
    said << "wrote " << *run_options.trace << "\n";
  }
  if (run_options.output) {
    sim::write_run(*run_options.output, run);
    said << "wrote " << *run_options.output << "\n";
  }
  return 0;
}

int cmd_catalog(const std::vector<std::string>& args) {
  po::options_description options("clustersim catalog [options]");
  options.add_options()("help,h", "show this help")("catalog", po::value<std::string>(), "hardware catalog directory");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).run(), vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  std::cout << sim::format_catalog_table(load_catalog(vm));
  return 0;
}

constexpr const char* kUsage =
    "usage: clustersim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO [-o FILE.h5] [--set key=value]...   simulate a scenario: a training step (and job), or a\n"
    "                                                   serving fleet over its workload ([serving])\n"
    "  catalog                                          print the hardware catalog (devices, VM sizes)\n"
    "  collective --vm-size VM [--op OP] [-o FILE.h5]   time one collective over message sizes (nccl-tests)\n"
    "  sweep SCENARIO -o FILE.h5 [-j N] [--shard I/N] [--resume]   run every point of the scenario's [sweep]\n"
    "  merge OUT.h5 SHARD.h5...                         combine the files of a sharded sweep\n"
    "  list-runs SCENARIO                               print the points of a sweep (index, seed, overrides)\n"
    "  scenario-keys                                    print every scenario key (Markdown)\n"
    "  validate [DIR] [--fit] [--leave-one-out]         predictions against the published runs\n"
    "\n"
    "options: --version, --help; 'clustersim <command> --help' for a command's options\n";

}  // namespace

namespace {

/// glibc's allocator returns every block above its (adaptive) mmap threshold to the kernel when it is freed and
/// trims the heap top above 128 KiB, so a sweep that builds and drops the same large vectors for each point
/// (event queues, flow tables of a 500 K-flow all-to-all, communication groups of 2,048 GPUs) pays page faults
/// for them again and again: a tenth of the DeepSeek-V3-like layout search's time. Keeping up to 256 MiB blocks
/// on the heap and trimming only above 512 MiB removes them (mallopt(3): M_MMAP_THRESHOLD, M_TRIM_THRESHOLD).
void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory_for_reuse();
  // A file-size limit (RLIMIT_FSIZE) makes a write fail with EFBIG, reported as exit 74, instead of killing the
  // process with SIGXFSZ halfway through an output (issue 26, defect 4).
  std::signal(SIGXFSZ, SIG_IGN);
  // Redirected stdout keeps a report (up to 64 KiB) whole until the end, so that a failed write is seen by the
  // final check with its reason ("No space left on device"), not inside an earlier fwrite that loses errno.
  // (glibc ignores the size without a buffer of ours.)
  static char stdout_buffer[64 << 10];
  if (::isatty(STDOUT_FILENO) == 0) std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
  const std::string command_line = join_command_line(argc, argv);
  if (argc < 2) {
    std::cerr << kUsage;
    return sim::kExitUsage;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  const int status = sim::exit_status_of(command, [&]() -> int {
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (command == "--version") {
      std::cout << "clustersim " << sim::software_version() << " (" << sim::git_sha() << ")\n";
      return 0;
    }
    if (command == "run") return cmd_run(args, command_line);
    if (command == "catalog") return cmd_catalog(args);
    if (command == "collective") return sim::run_collective_command(args, command_line);
    if (command == "sweep") return sim::run_sweep_command(args, command_line);
    if (command == "merge") return sim::run_merge_command(args, command_line);
    if (command == "list-runs") return sim::run_list_runs_command(args, command_line);
    if (command == "validate") return sim::run_validate_command(args);
    if (command == "scenario-keys") {
      std::cout << sim::scenario_keys_markdown();
      return 0;
    }
    std::cerr << "clustersim: unknown command '" << command << "'\n" << kUsage;
    return sim::kExitUsage;
  });
  // A report or JSON row cut short by a full disk or a closed pipe is an error, not a success (defect 12).
  if (status != 0) return status;
  return sim::exit_status_of(command, [] {
    sim::check_standard_output();
    return 0;
  });
}
