// Running the points of a sweep (docs/sweeps.md): the scenario's [sweep] loaded into points, one point run into
// a row of results, and many points run on threads. `clustersim sweep` (sim/cli/sweep_command.cpp) adds the
// sidecar, the progress display and the results file; tests/bench/bench_sweep.cpp measures points per second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/output/results_file.hpp"
#include "sim/step/step_simulation.hpp"
#include "sim/sweep/sweep.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// The sweep's points: the scenario's [sweep] expanded, base seed from the scenario with the --set overrides.
struct LoadedSweep {
  std::filesystem::path scenario;
  ScenarioDocument document;           ///< the scenario file, parsed once for all points
  std::vector<std::string> overrides;  ///< --set
  Scenario base;                       ///< a training scenario (default-constructed for a serving one)
  std::optional<ServingScenario> serving;  ///< a serving scenario's base (with the overrides)
  SweepSpec spec;
  std::vector<SweepPoint> points;
  /// Per point (by position), the scenario the layout search's screening loaded for it
  /// (enumerate_layout_points), or null: the runner then loads the point itself. Empty for a grid sweep.
  std::vector<std::shared_ptr<const Scenario>> loaded;
  /// The base scenario's resolved TOML (the results file's /metadata).
  [[nodiscard]] const std::string& resolved_toml() const { return serving ? serving->resolved_toml : base.resolved_toml; }
};

/// Loads `scenario` with `overrides` (--set) and expands its [sweep] into points (a serving scenario: with
/// load_serving_scenario, its points run run_serving_scenario); for parallelism = "auto",
/// the layouts of each grid point (enumerate_layouts, with the overrides in force) numbered in order.
/// Throws ScenarioError / CatalogError like load_scenario. `jobs` threads check the layouts.
LoadedSweep load_sweep(const std::filesystem::path& scenario, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog, int jobs = 1);

using SweepValue = std::variant<double, std::string>;

/// One result column of a point: name, units, description, type.
struct SweepColumnMeta {
  std::string name;
  std::string units;
  std::string description;
  bool is_string = false;
  bool operator==(const SweepColumnMeta&) const = default;
};
using SweepMetaList = std::vector<SweepColumnMeta>;

/// One point's outcome.
struct SweepRow {
  int64_t index = 0;
  uint64_t seed = 0;
  std::string status;  ///< ok | invalid | out_of_memory
  std::string reason;
  std::shared_ptr<const SweepMetaList> meta;  ///< result columns; null for invalid points
  std::vector<SweepValue> values;            ///< one per meta column
};

/// A point's columns straight into its row (SweepRow::values), as SweepPointRunner::run takes them: a float64
/// column's value as it is, an int64's converted to double, a string's as it is; a whole column's (column()) first
/// value, NaN or "" if it has none. The names, units and descriptions are compared in place with `last` (the
/// runner's previous row's list), which list() returns when every column matched it and the count is the same;
/// at the first difference the entries so far (equal to `last`'s first ones) are copied and the rest appended,
/// into a new list: the list, entry for entry, that building it from the columns gives. No SummaryColumn,
/// vector or string is built per column while the columns are the last row's (a layout search's points).
class SweepRowColumns final : public SummaryColumnSink {
 public:
  /// `values`: the row's, appended to; `last`: the list to compare with, or null.
  SweepRowColumns(std::vector<SweepValue>& values, std::shared_ptr<const SweepMetaList> last);
  void real(std::string_view name, std::string_view units, std::string_view description, double value) override;
  void integer(std::string_view name, std::string_view units, std::string_view description, int64_t value) override;
  void text(std::string_view name, std::string_view units, std::string_view description,
            std::string_view value) override;
  void column(SummaryColumn column) override;
  /// The row's list: `last` if every column received matched it, else the list built. Call once, at the end.
  std::shared_ptr<const SweepMetaList> list();

 private:
  void meta(std::string_view name, std::string_view units, std::string_view description, bool is_text);
  /// Starts the built list with the columns that matched `last` so far.
  void copy_matched();
  std::vector<SweepValue>& values_;
  std::shared_ptr<const SweepMetaList> last_;
  size_t count_ = 0;                    ///< columns received
  std::optional<SweepMetaList> fresh_;  ///< the list built, from the first column that differs from `last`
};

/// Runs points one at a time with its own StepSimulator (one per thread): the point's overrides on top of the
/// sweep's, simulation.seed = the point's seed (a layout point the screening loaded already, LoadedSweep::loaded:
/// that scenario with the point's seed, which is what loading it again gives, since the seed changes no
/// other field; a scenario with [analysis] what_if is loaded again, its what-if rows reload it); the step (and, for a multi-zone cluster, the single-zone
/// reference), then the job when the scenario has one; a serving sweep's point, run_serving_scenario (its rows
/// are "ok": whether the fleet meets the SLO is its meets_slo column). Invalid points (ScenarioError, std::invalid_argument,
/// std::out_of_range) become rows with status "invalid"; other exceptions propagate.
class SweepPointRunner {
 public:
  /// `clusters`: shared with the sweep's other runners (run_sweep does), or null for a private cache.
  SweepPointRunner(const LoadedSweep& sweep, const models::Catalog& catalog,
                   std::shared_ptr<ClusterCache> clusters = nullptr)
      : sweep_(sweep), catalog_(catalog), simulator_(std::move(clusters)) {
    simulator_.set_record_spans(false);  // sweeps write no traces
  }
  SweepRow run(const SweepPoint& point);

 private:
  /// The point's training scenario: LoadedSweep::loaded's with the seed, or loaded with `overrides`.
  Scenario point_scenario(const SweepPoint& point, const std::vector<std::string>& overrides) const;
  const LoadedSweep& sweep_;
  const models::Catalog& catalog_;
  StepSimulator simulator_;
  std::shared_ptr<const SweepMetaList> last_meta_;
};

/// How run_sweep runs.
struct SweepRunOptions {
  int jobs = 1;                    ///< worker threads (at least 1; no more than the points)
  int64_t limit = -1;              ///< >= 0: run only the first `limit` points (then stop)
  /// Called from the worker thread after each point, before the row is stored (e.g. the sidecar); may be
  /// called concurrently: must be thread-safe. An exception stops the sweep and is rethrown.
  std::function<void(const SweepRow&)> on_row;
  /// Called on the calling thread about every 100 ms while the points run, with the number finished.
  std::function<void(size_t finished)> progress;
  /// The clusters (topologies, memoised collective solves, layout patterns) the points run on: one shared with
  /// earlier sweeps of the same process keeps their solves warm (a solve is a function of its pattern, so the
  /// rows do not depend on it); null: a fresh one for this call, as `clustersim sweep` runs.
  std::shared_ptr<ClusterCache> clusters;
};

/// Runs `points` on `options.jobs` threads, each with its own SweepPointRunner (all sharing one ClusterCache, so
/// a flow solve is done once for all threads); threads take chunks from one GuidedScheduler (the one the MPI
/// hand-out uses, sim/sweep/distribution.hpp) and store each row at the point's position, so the result does not
/// depend on the number of threads. Returns one row per point (rows past `limit` are left with index -1 and
/// empty status). Rethrows the first exception of a worker (its own type, so that its exit status holds).
std::vector<SweepRow> run_sweep(const LoadedSweep& sweep, const models::Catalog& catalog,
                                const std::vector<const SweepPoint*>& points, const SweepRunOptions& options);

}  // namespace clustersim::sim
