#include "sim/cli/sweep_command.hpp"
#include "sim/sweep/mpi_ranks.hpp"

#include <boost/program_options.hpp>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/cli/catalog_directory.hpp"
#include "sim/cli/progress.hpp"
#include "sim/output/json.hpp"
#include "sim/run/exit_status.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/job/job_setup.hpp"
#include "sim/job/job_simulation.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/output_path.hpp"
#include "sim/run/run_inputs.hpp"
#include "sim/output/results_file.hpp"
#include "sim/output/step_report.hpp"
#include "sim/step/step_simulation.hpp"
#include "sim/sweep/distribution.hpp"
#include "sim/sweep/fingerprint.hpp"
#include "sim/sweep/sidecar.hpp"
#include "sim/sweep/summary_file.hpp"
#include "sim/sweep/sweep_table.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;


// ---- SIGINT / SIGTERM ------------------------------------------------------------------------------------

/// The signal that asked a sweep to stop (0: none). Set by on_stop_signal, read by the workers between points.
volatile std::sig_atomic_t g_stop_signal = 0;

/// SIGINT/SIGTERM handler of a one-rank sweep: remember the signal (async-signal-safe) and restore the default
/// action, so that a second signal ends the process at once.
extern "C" void on_stop_signal(int signal) {
  g_stop_signal = signal;
  std::signal(signal, SIG_DFL);
}

/// Thrown from a worker between points after SIGINT/SIGTERM: the sweep stops with the finished points in the
/// sidecar, resumable, and no results file.
struct Interrupted {};

/// Runs `body`, mapping exceptions to exit statuses (sim/run/exit_status.hpp); the error text goes to `message`.
template <typename F>
int attempt(const std::string& command, std::string& message, F&& body) {
  try {
    return body();
  } catch (...) {
    ErrorExit e = exit_for(std::current_exception(), command);
    message = std::move(e.message);
    return e.status;
  }
}

/// Runs `body`, mapping exceptions to exit statuses and messages on stderr.
template <typename F>
int guarded(const std::string& command, F&& body) {
  return exit_status_of(command, std::forward<F>(body));
}

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

models::Catalog load_catalog(const po::variables_map& vm) {
  const std::string dir = vm.count("catalog") ? vm["catalog"].as<std::string>()
                                               : cli::default_catalog_directory().string();
  return models::Catalog::load(dir);
}

std::vector<std::string> set_overrides(const po::variables_map& vm) {
  return vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

using Sweep = LoadedSweep;

// ---- rows -------------------------------------------------------------------------------------------------

using Value = SweepValue;
using ColumnMeta = SweepColumnMeta;
using MetaList = SweepMetaList;
using Row = SweepRow;

/// The command line recorded in the file: what determines the results (scenario, --set, --catalog), not how
/// the points were run (-o, -j, --shard, --resume), so that every way of running a sweep gives the same file.
std::string canonical_command_line(const po::variables_map& vm) {
  std::string s = "clustersim sweep " + vm["scenario"].as<std::string>();
  for (const std::string& o : set_overrides(vm)) s += " --set " + o;
  if (vm.count("catalog")) s += " --catalog " + vm["catalog"].as<std::string>();
  return s;
}

std::string overrides_text(const std::vector<std::string>& overrides) {
  std::string s;
  for (const std::string& o : overrides) s += (s.empty() ? "" : " ") + o;
  return s;
}

/// `clustersim sweep --format json`: {"command": "sweep", "points": columns_json(the /summary table),
/// "objective": "step_time" | "cost_per_token" | "time_to_train", "ranking": [run_index, ...]}, the ranking
/// being rank_points' (the text ranking's order: the simulated points, those that fit first, each by the
/// objective).
std::string sweep_json(const SweepTable& table, SweepObjective objective, const std::vector<const SweepRow*>& ranked) {
  std::string ranking = "[";
  for (size_t i = 0; i < ranked.size(); ++i) ranking += (i == 0 ? "" : ", ") + std::to_string(ranked[i]->index);
  return "{\"command\": \"sweep\", \"points\": " + columns_json(table.columns, false) + ", \"objective\": " +
         json_string(std::string(to_string(objective))) + ", \"ranking\": " + ranking + "]}";
}

struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};

std::optional<int64_t> parse_int(std::string_view t) {
  int64_t v = 0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

Shard parse_shard(const std::string& text) {
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

/// What every rank of a sweep knows once it has read the command line and the scenario.
struct SweepSetup {
  bool help = false;  ///< --help: printed, nothing else to do
  int jobs = 1;       ///< worker threads (per rank)
  Shard shard;
  bool resume = false;
  bool json = false;        ///< --format json: the points as one JSON object on stdout, the rest on stderr
  bool strict = false;      ///< --strict: any invalid point makes the sweep exit 65
  int64_t stop_after = -1;  ///< --stop-after (testing); -1: none
  std::string test_signal;  ///< --test-signal (testing): "setup" or "write", where SIGTERM is raised
  fs::path output, sidecar_path;
  std::optional<models::Catalog> catalog;
  std::optional<Sweep> sweep;
  std::vector<const SweepPoint*> mine;  ///< the shard's points (into sweep->points)
  RunMetadata meta;
  std::vector<FingerprintPart> inputs;  ///< the sweep's inputs by content (sim/sweep/fingerprint.hpp)
  std::vector<FingerprintPart> sidecar_parts;  ///< inputs and the shard: the sidecar's header
  std::string fingerprint;  ///< the sidecar parts as one text (what the MPI ranks agree on)
};

/// Stage 1 of `clustersim sweep`, on every rank: options, catalog, sweep, the shard's points, fingerprint.
/// Prints --help to `out`. Throws UsageError, ScenarioError, CatalogError.
void set_up_sweep(const std::vector<std::string>& args, const SweepRanks& ranks, std::ostream& out,
                  SweepSetup& s) {
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
    s.help = true;
    return;
  }
  if (!vm.count("scenario")) {
    std::ostringstream o;
    o << "missing SCENARIO\n" << options;
    throw UsageError(o.str());
  }
  if (!vm.count("output")) {
    std::ostringstream o;
    o << "missing -o FILE.h5\n" << options;
    throw UsageError(o.str());
  }
  s.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : ranks.default_threads();
  if (s.jobs < 1) throw UsageError("-j must be at least 1");
  s.shard = vm.count("shard") ? parse_shard(vm["shard"].as<std::string>()) : Shard{};
  s.resume = vm.count("resume") > 0;
  s.strict = vm.count("strict") > 0;
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") throw UsageError("--format must be text or json, got '" + format + "'");
  s.json = format == "json";
  s.stop_after = vm.count("stop-after") ? vm["stop-after"].as<int64_t>() : -1;
  s.test_signal = vm.count("test-signal") ? vm["test-signal"].as<std::string>() : std::string();
  if (!s.test_signal.empty() && s.test_signal != "setup" && s.test_signal != "write") {
    throw UsageError("--test-signal must be setup or write");
  }
  s.output = vm["output"].as<std::string>();
  s.sidecar_path = s.output.string() + ".partial";

  s.catalog.emplace(load_catalog(vm));
  s.sweep.emplace(load_sweep(vm["scenario"].as<std::string>(), set_overrides(vm), *s.catalog, s.jobs));
  // Before any point runs: -o and its sidecar must not be a device, a directory or one of the sweep's inputs.
  std::vector<InputFile> inputs = s.sweep->serving ? run_inputs(*s.sweep->serving) : run_inputs(s.sweep->base);
  inputs.push_back({s.sweep->scenario, "the scenario file"});
  check_output_path(s.output, inputs, "-o");
  check_output_path(s.sidecar_path, inputs, "the sidecar of -o");
  for (const SweepPoint& p : s.sweep->points) {
    if (p.index % s.shard.count == s.shard.index) s.mine.push_back(&p);
  }
  s.meta.software_version = software_version();
  s.meta.git_sha = git_sha();
  s.meta.command_line = canonical_command_line(vm);
  s.meta.seed = s.sweep->base.simulation.seed;
  s.meta.scenario_toml = s.sweep->resolved_toml();

  const fs::path catalog_dir = vm.count("catalog") ? fs::path(vm["catalog"].as<std::string>())
                                                   : cli::default_catalog_directory();
  s.inputs = sweep_fingerprint(*s.sweep, catalog_dir);
  s.sidecar_parts = s.inputs;
  s.sidecar_parts.push_back({"shard", std::to_string(s.shard.index) + "/" + std::to_string(s.shard.count)});
  for (const FingerprintPart& p : s.sidecar_parts) s.fingerprint += p.name + "=" + p.hash + "\n";
  if (s.test_signal == "setup" && ranks.size() == 1) std::raise(SIGTERM);
}

/// The first 10 invalid points of `rows` (index, overrides, reason) and their count, as lines for stderr.
std::string invalid_points_text(const Sweep& sweep, const std::vector<const Row*>& rows) {
  std::string out;
  size_t count = 0;
  for (const Row* r : rows) {
    if (r->status != "invalid") continue;
    if (++count > 10) continue;
    const SweepPoint& p = sweep.points[static_cast<size_t>(r->index)];
    // The loader places an error in one of the point's values at "--set:N:C" (N counts the command line's --set,
    // then the point's seed, then its values): the point's overrides, printed before, say it better.
    std::string reason = r->reason;
    if (reason.rfind("--set:", 0) == 0) {
      const size_t colon = reason.find(':', 6);
      const auto n = parse_int(std::string_view(reason).substr(6, colon == std::string::npos ? 0 : colon - 6));
      const size_t end = reason.find(": ", colon == std::string::npos ? 0 : colon + 1);
      if (n && *n > static_cast<int64_t>(sweep.overrides.size()) + 1 && end != std::string::npos) {
        reason = reason.substr(end + 2);
      }
    }
    out += "sweep: point " + std::to_string(r->index) + " (" + overrides_text(p.overrides()) + ") is invalid: " +
           reason + (reason.empty() || reason.back() != '\n' ? "\n" : "");
  }
  if (count > 10) out += "sweep: ... and " + std::to_string(count - 10) + " more invalid points (the reason column)\n";
  if (count > 0) out += "sweep: " + std::to_string(count) + (count == 1 ? " invalid point\n" : " invalid points\n");
  return out;
}

/// SIGINT/SIGTERM caught (on_stop_signal) for the life of a one-rank sweep: setup, points and the final write.
struct StopSignals {
  explicit StopSignals(bool on) : on_(on) {
    if (!on_) return;
    g_stop_signal = 0;
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
  }
  ~StopSignals() {
    if (!on_) return;
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  bool on_;
};

const char* stop_signal_name() { return g_stop_signal == SIGTERM ? "SIGTERM" : "SIGINT"; }

/// `clustersim sweep` on this rank (docs/sweeps.md; docs/scale-out.md for MPI). Stages: (1) every rank reads
/// the options and the sweep; (2) rank 0 opens the sidecar (reading it with --resume); each is agreed on by all
/// ranks, so an error ends every rank with the same exit status; (3) the points are run: on threads
/// (run_sweep) with one rank, else spread over the ranks (serve_points / work_on_points); (4) rank 0 writes the
/// results file, and every rank returns rank 0's exit status.
int sweep_main(const std::vector<std::string>& args, SweepRanks& ranks) {
  const bool root = ranks.rank() == 0;
  const StopSignals signals(ranks.size() == 1);
  std::ostream null_out(nullptr);
  SweepSetup s;
  std::string message;
  int code = attempt("sweep", message, [&] {
    set_up_sweep(args, ranks, root ? std::cout : null_out, s);
    return 0;
  });
  code = ranks.agree(code, message, code == 0 ? fnv1a(s.fingerprint) : 0);
  if (code != 0 || s.help) return code;
  if (g_stop_signal != 0) {
    std::cerr << "sweep: interrupted by " << stop_signal_name() << " while setting up; nothing was run\n";
    return kExitStopped;
  }
  const Sweep& sweep = *s.sweep;
  const models::Catalog& catalog = *s.catalog;

  // Rank 0: the sidecar, and the points still to compute.
  std::map<int64_t, Row> done;
  std::unique_ptr<Sidecar> sidecar;
  if (root) {
    code = attempt("sweep", message, [&] {
      // A resumed row must be one of this shard's points, with that point's seed.
      std::map<int64_t, uint64_t> seeds;
      for (const SweepPoint* p : s.mine) seeds.emplace(p->index, p->seed);
      const Sidecar::RowCheck check = [&seeds](const Row& r) -> std::string {
        const auto it = seeds.find(r.index);
        if (it == seeds.end()) return "point " + std::to_string(r.index) + " is not a point of this sweep (or shard)";
        if (it->second != r.seed) {
          return "point " + std::to_string(r.index) + " has seed " + std::to_string(r.seed) + ", the sweep gives it " +
                 std::to_string(it->second);
        }
        return {};
      };
      sidecar = std::make_unique<Sidecar>(s.sidecar_path, s.sidecar_parts, s.resume, done, check);
      return 0;
    });
  }
  if ((code = ranks.agree(code, message, 0)) != 0) return code;
  std::vector<std::optional<Row>> rows(s.mine.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < s.mine.size(); ++i) {
    if (auto it = done.find(s.mine[i]->index); it != done.end()) {
      rows[i] = std::move(it->second);
    } else {
      todo.push_back(i);
    }
  }
  const size_t resumed = s.mine.size() - todo.size();
  if (root && s.resume) {
    std::cerr << "sweep: resuming: " << resumed << " of " << s.mine.size() << " points already done, computing "
              << todo.size() << "\n";
  }

  const size_t target = s.stop_after >= 0 ? std::min(todo.size(), static_cast<size_t>(s.stop_after)) : todo.size();
  std::vector<const SweepPoint*> todo_points;
  for (const size_t i : todo) todo_points.push_back(s.mine[i]);
  // Progress on stderr (rank 0): a bar redrawn in place on a terminal, else a line every 2 s.
  cli::ProgressLine line("sweep", "points", s.mine.size(), target, resumed);
  const std::function<void(size_t)> progress = [&line](size_t d) { line.update(d); };
  std::vector<Row> computed;
  if (ranks.size() == 1) {
    SweepRunOptions run_options;
    run_options.jobs = s.jobs;
    run_options.limit = s.stop_after;
    // SIGINT/SIGTERM (caught since the start, StopSignals): the workers stop between points (the point in flight
    // is dropped, recomputed on --resume), the sidecar keeps every finished point and no results file is written;
    // exit 75 like --stop-after.
    run_options.on_row = [&](const Row& row) {
      if (g_stop_signal != 0) throw Interrupted{};
      sidecar->append(row);
    };
    run_options.progress = progress;
    bool interrupted = false;
    code = attempt("sweep", message, [&] {
      try {
        computed = run_sweep(sweep, catalog, todo_points, run_options);
      } catch (const Interrupted&) {
        interrupted = true;
      }
      return 0;
    });
    if (interrupted) {
      std::cerr << "\nsweep: interrupted by " << stop_signal_name() << "; "
                << s.sidecar_path.string() << " holds the finished points: rerun with --resume\n";
      return kExitStopped;
    }
    if (code != 0) {
      std::cerr << message;
      return code;
    }
  } else if (root) {
    todo_points.resize(target);
    computed = serve_points(ranks, sweep, catalog, todo_points, s.jobs, [&](const Row& row) { sidecar->append(row); },
                            progress);
  } else {
    work_on_points(ranks, sweep, catalog, s.jobs);
    return ranks.finish(0);
  }

  // Rank 0: the results file.
  code = attempt("sweep", message, [&] {
    for (size_t k = 0; k < target; ++k) rows[todo[k]] = std::move(computed[k]);
    line.finish();
    if (s.stop_after >= 0 && target < todo.size()) {
      std::cerr << "sweep: stopped after " << target << " new points (--stop-after); rerun with --resume\n";
      return kExitStopped;
    }
    std::vector<const Row*> ordered;
    for (const auto& r : rows) ordered.push_back(&*r);
    const SweepTable table = build_sweep_table(sweep, ordered);
    if (g_stop_signal != 0) {
      std::cerr << "\nsweep: interrupted by " << stop_signal_name() << " before writing " << s.output.string() << "; "
                << s.sidecar_path.string() << " holds every point: rerun with --resume\n";
      return kExitStopped;
    }
    if (s.test_signal == "write" && ranks.size() == 1) std::raise(SIGTERM);  // as if it came during the write
    write_sweep_file(s.output, s.meta, table, sweep_grid_axes(sweep, table),
                     SweepIdentity{s.inputs, static_cast<int64_t>(sweep.points.size())});
    if (g_stop_signal != 0) {
      // The write is atomic and finished: the file is whole. The sidecar stays, so --resume only rewrites it.
      std::cerr << "\nsweep: interrupted by " << stop_signal_name() << " while writing " << s.output.string()
                << " (the file was completed); " << s.sidecar_path.string() << " kept: rerun with --resume\n";
      return kExitStopped;
    }
    sidecar->remove();

    size_t ok = 0, oom = 0, invalid = 0;
    for (const Row* r : ordered) {
      (r->status == "ok" ? ok : r->status == "out_of_memory" ? oom : invalid) += 1;
    }
    // With --format json stdout is one JSON object; the summary line, the ranking and "wrote" go to stderr.
    std::ostream& said = s.json ? std::cerr : std::cout;
    said << "sweep " << sweep.scenario.string() << ": " << ordered.size()
         << (ordered.size() == 1 ? " point" : " points");
    if (s.shard.count > 1) {
      said << " (shard " << s.shard.index << "/" << s.shard.count << " of " << sweep.points.size() << ")";
    }
    if (ranks.size() > 1) said << " on " << ranks.size() << " MPI ranks";
    said << ": " << ok << " ok, " << oom << " out_of_memory, " << invalid << " invalid";
    if (resumed > 0) said << " (" << resumed << " resumed from " << s.sidecar_path.string() << ")";
    said << "\n";
    if (sweep.spec.auto_parallelism || sweep.spec.objective_given || sweep.serving) {
      said << format_ranking(sweep, ordered);
    }
    said << "wrote " << s.output.string() << "\n";
    if (s.json) std::cout << sweep_json(table, sweep.spec.objective, rank_points(sweep, ordered)) << "\n";
    std::cerr << invalid_points_text(sweep, ordered);
    if (s.strict && invalid > 0) {
      std::cerr << "sweep: --strict: " << invalid << (invalid == 1 ? " point is" : " points are") << " invalid\n";
      return kExitDataError;
    }
    return 0;
  });
  if (code != 0) std::cerr << message;
  return ranks.finish(code);
}

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
  const fs::path out = files.front();
  std::vector<InputFile> shards;
  for (size_t i = 1; i < files.size(); ++i) shards.push_back({files[i], "a merge input shard"});
  check_output_path(out, shards, "the merged file");

  const MergedSweep merged = merge_sweep_files(std::vector<fs::path>(files.begin() + 1, files.end()));
  const bool allow_partial = vm.count("allow-partial") > 0;
  if (merged.missing > 0 && !allow_partial) {
    throw DataError("the shards hold " + std::to_string(merged.points) + " of the sweep's " +
                    std::to_string(merged.identity.points) + " points (" + std::to_string(merged.missing) +
                    " missing: a shard is not given or did not finish); merge them with --allow-partial to write "
                    "the incomplete file");
  }
  if (merged.identity.points < 0) {
    std::cerr << "merge: warning: the shards carry no fingerprint (written before clustersim checked inputs by "
                 "content): neither their inputs nor their completeness can be checked\n";
  }
  write_sweep_file(out, merged.meta, merged.table, merged.axes, merged.identity);
  std::cout << "merged " << merged.files << " files, " << merged.points << " points";
  if (merged.missing > 0) {
    std::cout << " (partial: " << merged.missing << " of " << merged.identity.points << " points missing)";
  }
  std::cout << "; wrote " << out.string() << "\n";
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
  const models::Catalog catalog = load_catalog(vm);
  const Sweep sweep = load_sweep(vm["scenario"].as<std::string>(), set_overrides(vm), catalog);
  std::cout << "# run_index\tseed\toverrides\n";
  for (const SweepPoint& p : sweep.points) {
    std::cout << p.index << "\t" << p.seed << "\t" << overrides_text(p.overrides()) << "\n";
  }
  return 0;
}

}  // namespace

int run_sweep_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  SweepRanks ranks;
  std::string message;
  const int code = attempt("sweep", message, [&] { return sweep_main(args, ranks); });
  // sweep_main handles its errors; one that escapes it must not leave other ranks waiting.
  if (code != 0 && !message.empty()) {
    if (ranks.size() > 1) ranks.abort(code, message);
    std::cerr << message;
  }
  return code;
}

int run_merge_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return guarded("merge", [&] { return merge_main(args); });
}

int run_list_runs_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return guarded("list-runs", [&] { return list_runs_main(args); });
}

}  // namespace clustersim::sim
