// The validation suite as text: one table of rows grouped by published dataset, a summary by GPU group and
// framework, the fitted calibration and the leave-one-source-out table (`clustersim validate`, `make
// validate`, the validation test).
#pragma once

#include <string>
#include <vector>

#include "sim/validation/validation.hpp"

namespace clustersim::sim {

/// Every row, grouped by dataset (in first-appearance order), each group closed by its summary; excluded rows
/// are printed with their reason; a last line gives the overall summary of the modelled rows.
std::string format_validation_rows(const std::vector<ValidationRow>& rows);

/// Mean and max |error| per calibration group x framework over the modelled rows.
std::string format_validation_by_group(const std::vector<ValidationRow>& rows);

/// One line per held-out dataset: its rows, the refitted fractions and the errors; then the mean over every
/// held-out row.
std::string format_leave_one_out(const std::vector<HeldOutDataset>& held_out);

/// The mean |error| over every modelled row of every held-out dataset (leave-one-source-out).
/// (format_leave_one_out prints the held-out rows' errors per dataset, per workload and per GPU group, framework
/// and workload.)
ErrorSummary leave_one_out_summary(const std::vector<HeldOutDataset>& held_out);

/// The catalog's prediction_uncertainty.toml from leave-one-source-out results: one table per
/// "GROUP/FAMILY/WORKLOAD" (calibration group, framework family of models::framework_family, workload of
/// models::validation_workload), per "GROUP/*/WORKLOAD", per "*/FAMILY/WORKLOAD" and "*/*/WORKLOAD", each with
/// rms_relative_error, max_relative_error (|predicted / measured - 1| of the held-out modelled rows) and rows.
/// Throws std::invalid_argument on a row whose framework is unknown.
std::string format_prediction_uncertainty(const std::vector<HeldOutDataset>& held_out);

}  // namespace clustersim::sim
