// Presentation of a step simulation: the human summary printed by `clustersim run` and the /summary columns
// of its HDF5 file (docs/hdf5-schema.md). Models and the executor never call these; the CLI does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/output/results_file.hpp"

namespace clustersim::models {
class Catalog;
struct ZoneCrossings;
}

namespace clustersim::sim {

struct Scenario;
struct StepReport;

/// The comparison of a prediction with the scenario's [reference] measurement.
struct ReferenceComparison {
  std::string metric;   ///< "tflops_per_gpu" | "step_time_s" | "tokens_per_s_per_gpu" | "mfu"
  std::string units;    ///< "TFLOP/s" | "s" | "tokens/s" | "1"
  double measured = 0.0;
  double predicted = 0.0;
  double relative_error = 0.0;  ///< predicted / measured - 1
  std::string source;
};

/// The first metric the reference gives, in the order tflops_per_gpu, step_time_s, tokens_per_s_per_gpu, mfu;
/// nullopt without one.
std::optional<ReferenceComparison> compare_with_reference(const Scenario& scenario, const StepReport& report);

/// The communication that crosses a zone boundary, in words ("data-parallel gradient all-reduce, pipeline
/// send/recv"); "" when none does.
std::string cross_zone_traffic(const models::ZoneCrossings& crossings);

/// Multi-line text summary: layout, step time and its critical path by kind (s and % of the step; the stages the
/// path waited on, with what they were doing), the bottleneck line, TFLOP/s per GPU,
/// MFU, HFU, the reference comparison when there is one, and, when `one_zone` is given (the same job in a
/// single zone), the cross-zone penalty T / T_one_zone - 1 and what crosses the zone boundary.
std::string format_step_summary(const Scenario& scenario, const models::Catalog& catalog, const StepReport& report,
                                const StepReport* one_zone = nullptr);

/// The stages the critical path waited on (runs/0/critical_path_waits): one row per stage other than the home stage
/// with passes on the path, in stage order: the stage, its time on the path and what it was doing (s; the parts sum
/// to time_s). Zero rows for a one-stage pipeline or a path that stays on its home stage.
std::vector<SummaryColumn> critical_path_wait_columns(const StepReport& report);

/// The per-stage table as text (`clustersim run --stages`): one row per pipeline stage of its own breakdown
/// (StageBreakdown: compute, exposed TP/CP/EP/host, pipeline transfers, bubble, DP sync, optimizer, in s; they sum to
/// the step time) and when it finished; the critical path's home stage is marked.
std::string format_stage_table(const StepReport& report);

/// USD per million training tokens of `scenario` at `step_time_s` on VMs of `price_usd_per_hour` (NaN when
/// nullopt): price x cluster.nodes x step / 3600 / (global batch x sequence length) x 1e6, on demand and without
/// interruptions. /summary's usd_per_million_tokens and the what-if rows (sim/run/what_if.hpp) use it.
double training_usd_per_million_tokens(const Scenario& scenario, std::optional<double> price_usd_per_hour,
                                       double step_time_s);

/// One row of /summary columns for this run (units on each); the cross-zone columns are NaN / "" without
/// `one_zone`. The columns of write_step_summary_columns, collected (SummaryColumnList).
std::vector<SummaryColumn> step_summary_columns(const Scenario& scenario, const StepReport& report,
                                                const StepReport* one_zone = nullptr);

/// The same row, column by column into `out` (the one list of the step's /summary columns, their order, names,
/// units, descriptions and values; step_summary_columns collects it, a sweep's point runner takes it into its
/// row without building a SummaryColumn per column).
void write_step_summary_columns(const Scenario& scenario, const StepReport& report, const StepReport* one_zone,
                                SummaryColumnSink& out);

/// The per-stage table of this run, one row per pipeline stage (written to /runs/<i>/stages): the stage's
/// breakdown (compute, exposed TP/PP/DP communication, bubble, optimizer; they sum to the step time), when it
/// finished, and TFLOP/s per GPU of its own math over the step time. Units on each.
std::vector<SummaryColumn> stage_columns(const StepReport& report);

}  // namespace clustersim::sim
