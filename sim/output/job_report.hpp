// Presentation of a job simulation: the text `clustersim run` prints for a scenario with a [job], and its HDF5
// columns (docs/hdf5-schema.md). `on_demand` is the same job without spot (shown when the scenario uses spot).
#pragma once

#include <string>
#include <vector>

#include "sim/output/results_file.hpp"

namespace clustersim::sim {

struct Scenario;
struct JobStatistics;

/// Multi-line text: steps, time to train and cost (mean, p50, p90, p99), goodput, interruptions, lost GPU-hours,
/// the checkpoint interval with Young's and Daly's, and the spot vs on-demand comparison when given.
std::string format_job_summary(const Scenario& scenario, const JobStatistics& job, const JobStatistics* on_demand);

/// /summary columns of the job (one row); the on_demand_* columns are NaN without `on_demand`.
std::vector<SummaryColumn> job_summary_columns(const Scenario& scenario, const JobStatistics& job,
                                               const JobStatistics* on_demand);

/// /runs/0/replications: one row per replication.
std::vector<SummaryColumn> replication_columns(const JobStatistics& job);

}  // namespace clustersim::sim
