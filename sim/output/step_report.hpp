// Presentation of a step simulation: the human summary printed by `clustersim run` and the /summary columns
// of its HDF5 file (docs/hdf5-schema.md). Models and the executor never call these; the CLI does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/output/results_file.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

struct Scenario;
struct StepReport;

/// The comparison of a prediction with the scenario's [reference] measurement.
struct ReferenceComparison {
  std::string metric;   ///< "tflops_per_gpu" | "step_time_s" | "mfu"
  std::string units;    ///< "TFLOP/s" | "s" | "1"
  double measured = 0.0;
  double predicted = 0.0;
  double relative_error = 0.0;  ///< predicted / measured - 1
  std::string source;
};

/// The first metric the reference gives, in the order tflops_per_gpu, step_time_s, mfu; nullopt without one.
std::optional<ReferenceComparison> compare_with_reference(const Scenario& scenario, const StepReport& report);

/// Multi-line text summary: layout, step time and its breakdown (s and % of the step), TFLOP/s per GPU,
/// MFU, HFU, and the reference comparison when there is one.
std::string format_step_summary(const Scenario& scenario, const models::Catalog& catalog, const StepReport& report);

/// One row of /summary columns for this run (units on each).
std::vector<SummaryColumn> step_summary_columns(const Scenario& scenario, const StepReport& report);

}  // namespace clustersim::sim
