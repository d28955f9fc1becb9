// What one run of a scenario computes, in one place: `clustersim run`, every point of a sweep (threads and MPI
// ranks) and the tests call run_scenario, so the recipe (the step; for a cluster over several zones the same
// job in one zone, the reference of the cross-zone penalty; with a [job] the Monte Carlo job and, for spot, the
// same job on demand) and the row of /summary columns it yields cannot differ between the commands.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "sim/job/job_simulation.hpp"
#include "sim/output/results_file.hpp"
#include "sim/run/run_output.hpp"  // RunProgress
#include "sim/step/step_simulation.hpp"

namespace clustersim::models {
class Catalog;
struct JobSpec;
}  // namespace clustersim::models

namespace clustersim::sim {

struct Scenario;

/// The outcome of one run of a scenario.
struct RunResult {
  StepReport step;                        ///< one training step on the scenario's cluster
  std::optional<StepReport> one_zone;     ///< the same step in one zone; set when [cluster] has >= 2 zones
  std::optional<JobStatistics> job;       ///< the job over its replications; set with a [job]
  std::optional<JobStatistics> on_demand; ///< the same job without spot; set with a spot [job]

  [[nodiscard]] const StepReport* one_zone_report() const { return one_zone ? &*one_zone : nullptr; }
  [[nodiscard]] const JobStatistics* on_demand_job() const { return on_demand ? &*on_demand : nullptr; }
};

/// The spot job's on-demand counterpart: the same work, checkpoints and failures, without evictions (no spot,
/// no eviction trace) and at the pay-as-you-go price (spot_discount 0). The comparison the report prints.
models::JobSpec on_demand_counterpart(const models::JobSpec& spot);

/// Runs `scenario`: the step on `simulator` (whose cluster cache it reuses), the one-zone reference for a
/// multi-zone cluster, and the job (and on-demand job for spot) with the scenario's replications and seed.
/// Errors: as StepSimulator::simulate (std::invalid_argument for an inconsistent layout, std::out_of_range for a
/// precision the device lacks), models::CatalogError for an unknown VM size, and simulate_job's errors.
/// `progress`, when set, is told after each job replication how many have finished and how many are planned at
/// most (planned_replications, twice for spot: the on-demand job too).
RunResult run_scenario(const Scenario& scenario, const models::Catalog& catalog, StepSimulator& simulator,
                       const RunProgress& progress = {});
/// As above with a private StepSimulator (trace spans recorded).
RunResult run_scenario(const Scenario& scenario, const models::Catalog& catalog, const RunProgress& progress = {});

/// The run's row of /summary columns (docs/hdf5-schema.md): the step's columns (with the cross-zone penalty
/// when the one-zone reference was run), then the job's when there is one.
std::vector<SummaryColumn> run_summary_columns(const Scenario& scenario, const RunResult& run);

/// The same row column by column into `out` (run_summary_columns collects it; a sweep's point runner takes it
/// into its row).
void write_run_summary_columns(const Scenario& scenario, const RunResult& run, SummaryColumnSink& out);

}  // namespace clustersim::sim
