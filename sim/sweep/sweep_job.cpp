#include "sim/sweep/sweep_job.hpp"

#include <algorithm>
#include <csignal>
#include <map>
#include <memory>
#include <ostream>
#include <string_view>
#include <utility>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/output/json.hpp"
#include "sim/output/output_path.hpp"
#include "sim/run/exit_status.hpp"
#include "sim/run/run_inputs.hpp"
#include "sim/sweep/command_support.hpp"
#include "sim/sweep/distribution.hpp"
#include "sim/sweep/fingerprint.hpp"
#include "sim/sweep/rank_channel.hpp"
#include "sim/sweep/sidecar.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/sweep/sweep_table.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

namespace {

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

/// What every rank of a sweep knows once it has read the command line and the scenario.
struct SweepSetup {
  std::optional<SweepRequest> request;  ///< nullopt: --help, printed, nothing else to do
  fs::path sidecar_path;
  std::optional<models::Catalog> catalog;
  std::optional<LoadedSweep> sweep;
  std::vector<const SweepPoint*> mine;  ///< the shard's points (into sweep->points)
  RunMetadata meta;
  std::vector<FingerprintPart> inputs;  ///< the sweep's inputs by content (sim/sweep/fingerprint.hpp)
  std::vector<FingerprintPart> sidecar_parts;  ///< inputs and the shard: the sidecar's header
  std::string fingerprint;  ///< the sidecar parts as one text (what the MPI ranks agree on)
};

/// Stage 1 of a sweep, on every rank: options, catalog, sweep, the shard's points, fingerprint. Throws
/// UsageError, ScenarioError, CatalogError, IoError.
void set_up_sweep(const SweepRequestParser& parse, const SweepGroup& ranks, SweepSetup& s) {
  s.request = parse();
  if (!s.request) return;
  const SweepRequest& r = *s.request;
  s.sidecar_path = r.output.string() + ".partial";
  const fs::path catalog_dir = r.catalog_dir                   ? fs::path(*r.catalog_dir)
                               : !r.default_catalog_dir.empty() ? r.default_catalog_dir
                                                                : models::Catalog::default_directory();
  s.catalog.emplace(models::Catalog::load(catalog_dir.string()));
  s.sweep.emplace(load_sweep(r.scenario, r.overrides, *s.catalog, r.jobs));
  // Before any point runs: -o and its sidecar must not be a device, a directory or one of the sweep's inputs.
  std::vector<InputFile> inputs = s.sweep->serving ? run_inputs(*s.sweep->serving) : run_inputs(s.sweep->base);
  inputs.push_back({s.sweep->scenario, "the scenario file"});
  check_output_path(r.output, inputs, "-o");
  check_output_path(s.sidecar_path, inputs, "the sidecar of -o");
  for (const SweepPoint& p : s.sweep->points) {
    if (p.index % r.shard.count == r.shard.index) s.mine.push_back(&p);
  }
  s.meta.software_version = software_version();
  s.meta.git_sha = git_sha();
  s.meta.command_line = sweep_command_line(r);
  s.meta.seed = s.sweep->base.simulation.seed;
  s.meta.scenario_toml = s.sweep->resolved_toml();

  s.inputs = sweep_fingerprint(*s.sweep, catalog_dir);
  s.sidecar_parts = s.inputs;
  s.sidecar_parts.push_back({"shard", std::to_string(r.shard.index) + "/" + std::to_string(r.shard.count)});
  for (const FingerprintPart& p : s.sidecar_parts) s.fingerprint += p.name + "=" + p.hash + "\n";
  if (r.test_signal == "setup" && ranks.size() == 1) std::raise(SIGTERM);
}

/// The first 10 invalid points of `rows` (index, overrides, reason) and their count, as lines for stderr.
std::string invalid_points_text(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows) {
  std::string out;
  size_t count = 0;
  for (const SweepRow* r : rows) {
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
  if (count > 10) {
    out += "sweep: ... and " + counted(static_cast<int64_t>(count - 10), "more invalid point") + " (the reason column)\n";
  }
  if (count > 0) out += "sweep: " + counted(static_cast<int64_t>(count), "invalid point") + "\n";
  return out;
}

/// The sweep on this rank (run_sweep_job's stages); errors of a stage are agreed on by the ranks.
int sweep_main(SweepGroup& ranks, const SweepRequestParser& parse, SweepProgress& progress, std::ostream& out,
               std::ostream& err) {
  const bool root = ranks.rank() == 0;
  const StopSignals signals(ranks.size() == 1);
  SweepSetup s;
  std::string message;
  int code = attempt("sweep", message, [&] {
    set_up_sweep(parse, ranks, s);
    return 0;
  });
  code = ranks.agree(code, message, code == 0 ? fnv1a(s.fingerprint) : 0);
  if (code != 0 || !s.request) return code;
  if (g_stop_signal != 0) {
    err << "sweep: interrupted by " << stop_signal_name() << " while setting up; nothing was run\n";
    return kExitStopped;
  }
  const SweepRequest& request = *s.request;
  const LoadedSweep& sweep = *s.sweep;
  const models::Catalog& catalog = *s.catalog;

  // Rank 0: the sidecar, and the points still to compute.
  std::map<int64_t, SweepRow> done;
  std::unique_ptr<Sidecar> sidecar;
  if (root) {
    code = attempt("sweep", message, [&] {
      // A resumed row must be one of this shard's points, with that point's seed.
      std::map<int64_t, uint64_t> seeds;
      for (const SweepPoint* p : s.mine) seeds.emplace(p->index, p->seed);
      const Sidecar::RowCheck check = [&seeds](const SweepRow& r) -> std::string {
        const auto it = seeds.find(r.index);
        if (it == seeds.end()) return "point " + std::to_string(r.index) + " is not a point of this sweep (or shard)";
        if (it->second != r.seed) {
          return "point " + std::to_string(r.index) + " has seed " + std::to_string(r.seed) + ", the sweep gives it " +
                 std::to_string(it->second);
        }
        return {};
      };
      sidecar = std::make_unique<Sidecar>(s.sidecar_path, s.sidecar_parts, request.resume, done, check);
      return 0;
    });
  }
  if ((code = ranks.agree(code, message, 0)) != 0) return code;
  std::vector<std::optional<SweepRow>> rows(s.mine.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < s.mine.size(); ++i) {
    if (auto it = done.find(s.mine[i]->index); it != done.end()) {
      rows[i] = std::move(it->second);
    } else {
      todo.push_back(i);
    }
  }
  const size_t resumed = s.mine.size() - todo.size();
  if (root && request.resume) {
    err << "sweep: resuming: " << resumed << " of " << counted(static_cast<int64_t>(s.mine.size()), "point")
        << " already done, computing "
        << todo.size() << "\n";
  }

  const size_t target = request.stop_after >= 0 ? std::min(todo.size(), static_cast<size_t>(request.stop_after))
                                                : todo.size();
  std::vector<const SweepPoint*> todo_points;
  for (const size_t i : todo) todo_points.push_back(s.mine[i]);
  progress.start(s.mine.size(), target, resumed);
  const std::function<void(size_t)> report_progress = [&progress](size_t d) { progress.update(d); };
  std::vector<SweepRow> computed;
  if (ranks.size() == 1) {
    SweepRunOptions run_options;
    run_options.jobs = request.jobs;
    run_options.limit = request.stop_after;
    // SIGINT/SIGTERM (caught since the start, StopSignals): the workers stop between points (the point in flight
    // is dropped, recomputed on --resume), the sidecar keeps every finished point and no results file is written;
    // exit 75 like --stop-after.
    run_options.on_row = [&](const SweepRow& row) {
      if (g_stop_signal != 0) throw Interrupted{};
      sidecar->append(row);
    };
    run_options.progress = report_progress;
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
      err << "\nsweep: interrupted by " << stop_signal_name() << "; " << s.sidecar_path.string()
          << " holds the finished points: rerun with --resume\n";
      return kExitStopped;
    }
    if (code != 0) {
      err << message;
      return code;
    }
  } else if (root) {
    todo_points.resize(target);
    computed = serve_points(ranks, sweep, catalog, todo_points, request.jobs,
                            [&](const SweepRow& row) { sidecar->append(row); }, report_progress);
  } else {
    work_on_points(ranks, sweep, catalog, request.jobs);
    return ranks.finish(0);
  }

  // Rank 0: the results file.
  code = attempt("sweep", message, [&] {
    for (size_t k = 0; k < target; ++k) rows[todo[k]] = std::move(computed[k]);
    progress.finish();
    if (request.stop_after >= 0 && target < todo.size()) {
      err << "sweep: stopped after " << counted(static_cast<int64_t>(target), "new point")
          << " (--stop-after); rerun with --resume\n";
      return kExitStopped;
    }
    std::vector<const SweepRow*> ordered;
    for (const auto& r : rows) ordered.push_back(&*r);
    const SweepTable table = build_sweep_table(sweep, ordered);
    if (g_stop_signal != 0) {
      err << "\nsweep: interrupted by " << stop_signal_name() << " before writing " << request.output.string()
          << "; " << s.sidecar_path.string() << " holds every point: rerun with --resume\n";
      return kExitStopped;
    }
    if (request.test_signal == "write" && ranks.size() == 1) std::raise(SIGTERM);  // as if it came during the write
    write_sweep_file(request.output, s.meta, table, sweep_grid_axes(sweep, table),
                     SweepIdentity{s.inputs, static_cast<int64_t>(sweep.points.size())});
    if (g_stop_signal != 0) {
      // The write is atomic and finished: the file is whole. The sidecar stays, so --resume only rewrites it.
      err << "\nsweep: interrupted by " << stop_signal_name() << " while writing " << request.output.string()
          << " (the file was completed); " << s.sidecar_path.string() << " kept: rerun with --resume\n";
      return kExitStopped;
    }
    sidecar->remove();

    size_t ok = 0, oom = 0, invalid = 0;
    for (const SweepRow* r : ordered) {
      (r->status == "ok" ? ok : r->status == "out_of_memory" ? oom : invalid) += 1;
    }
    // With --format json stdout is one JSON object; the summary line, the ranking and "wrote" go to stderr.
    std::ostream& said = request.json ? err : out;
    said << "sweep " << sweep.scenario.string() << ": " << counted(static_cast<int64_t>(ordered.size()), "point");
    if (request.shard.count > 1) {
      said << " (shard " << request.shard.index << "/" << request.shard.count << " of " << sweep.points.size()
           << ")";
    }
    if (ranks.size() > 1) said << " on " << ranks.size() << " MPI ranks";
    said << ": " << ok << " ok, " << oom << " out_of_memory, " << invalid << " invalid";
    if (resumed > 0) said << " (" << resumed << " resumed from " << s.sidecar_path.string() << ")";
    said << "\n";
    if (sweep.spec.auto_parallelism || sweep.spec.objective_given || sweep.serving) {
      said << format_ranking(sweep, ordered);
    }
    said << "wrote " << request.output.string() << "\n";
    if (request.json) out << sweep_json(table, sweep.spec.objective, rank_points(sweep, ordered)) << "\n";
    err << invalid_points_text(sweep, ordered);
    if (request.strict && invalid > 0) {
      err << "sweep: --strict: " << counted(static_cast<int64_t>(invalid), "point") << (invalid == 1 ? " is" : " are")
          << " invalid\n";
      return kExitDataError;
    }
    return 0;
  });
  if (code != 0) err << message;
  return ranks.finish(code);
}

}  // namespace

std::string sweep_command_line(const SweepRequest& request) {
  std::string s = "clustersim sweep " + request.scenario;
  for (const std::string& o : request.overrides) s += " --set " + o;
  if (request.catalog_dir) s += " --catalog " + *request.catalog_dir;
  return s;
}

int run_sweep_job(SweepGroup& ranks, const SweepRequestParser& parse, SweepProgress& progress, std::ostream& out,
                  std::ostream& err) {
  std::string message;
  const int code = attempt("sweep", message, [&] { return sweep_main(ranks, parse, progress, out, err); });
  // sweep_main handles its errors; one that escapes it must not leave other ranks waiting.
  if (code != 0 && !message.empty()) {
    if (ranks.size() > 1) ranks.abort(code, message);
    err << message;
  }
  return code;
}

std::string merge_sweep_shards(const fs::path& out, const std::vector<fs::path>& shards, bool allow_partial,
                               std::ostream& err) {
  std::vector<InputFile> inputs;
  for (const fs::path& shard : shards) inputs.push_back({shard, "a merge input shard"});
  check_output_path(out, inputs, "the merged file");

  const MergedSweep merged = merge_sweep_files(shards);
  if (merged.missing > 0 && !allow_partial) {
    throw DataError("the shards hold " + std::to_string(merged.points) + " of the sweep's " +
                    std::to_string(merged.identity.points) + " points (" + std::to_string(merged.missing) +
                    " missing: a shard is not given or did not finish); merge them with --allow-partial to write "
                    "the incomplete file");
  }
  if (merged.identity.points < 0) {
    err << "merge: warning: the shards carry no fingerprint (written before clustersim checked inputs by "
           "content): neither their inputs nor their completeness can be checked\n";
  }
  write_sweep_file(out, merged.meta, merged.table, merged.axes, merged.identity);
  std::string line = "merged " + counted(static_cast<int64_t>(merged.files), "file") + ", " +
                     counted(static_cast<int64_t>(merged.points), "point");
  if (merged.missing > 0) {
    line += " (partial: " + std::to_string(merged.missing) + " of " + counted(merged.identity.points, "point") +
            " missing)";
  }
  return line + "; wrote " + out.string() + "\n";
}

std::string sweep_points_listing(const LoadedSweep& sweep) {
  std::string s = "# run_index\tseed\toverrides\n";
  for (const SweepPoint& p : sweep.points) {
    s += std::to_string(p.index) + "\t" + std::to_string(p.seed) + "\t" + overrides_text(p.overrides()) + "\n";
  }
  return s;
}

}  // namespace clustersim::sim
