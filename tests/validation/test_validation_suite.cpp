// The validation suite (docs/validation.md; `make validate`): every scenario under scenarios/validation/ (one
// per published row of scenarios/validation/published/) is simulated with the shipped catalog and compared with
// its measurement. The table is printed grouped by published dataset, then by GPU group and framework, then the
// leave-one-source-out table. Rows with reference.exclude_reason are printed and left out of the bounds.
//
// Bounds (issue 11): over the modelled rows, mean |error| <= 4 % and every row <= 10 %, over at least 60 rows
// spanning A100 and H100, Megatron and FSDP; leave-one-source-out mean <= 8 %. Two rows are still above 10 %
// (docs/validation.md "Where the model is weak"): they are held to 12 % by name, so that they cannot drift
// further and no other row may join them.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "models/hardware/catalog.hpp"
#include "sim/validation/validation.hpp"
#include "sim/validation/validation_report.hpp"

namespace clustersim {
namespace {

constexpr double kMaxRowError = 0.10;
constexpr double kMaxMeanError = 0.04;
constexpr double kMaxLeaveOneOutMean = 0.08;
constexpr int kMinRows = 60;
/// Rows known to miss kMaxRowError, and the bound they are held to until the missing physics is found.
constexpr double kKnownOutlierMaxError = 0.12;
const std::set<std::string> kKnownOutliers = {
    // NeMo 24.07 GPT-3 175B on 128 H100 at micro batch 1: +11.6 %; the same recipe at micro batch 2 on 512
    // GPUs is +2.5 %, so a per-microbatch cost the model lacks.
    "nemo-24-h100-r2407-gpt3-175b-128",
    // torchtitan Llama 3.1 405B, FSDP x TP 8 x PP 8 interleaved on 512 H100 (500 W): +11.1 %.
    "torchtitan-h100-t5-3d-interleaved",
};

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

const sim::ValidationSuite& suite() {
  static const sim::ValidationSuite s = sim::ValidationSuite::load(
      std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "validation", catalog());
  return s;
}

TEST(ValidationSuite, PublishedRunsWithinBounds) {
  const std::vector<sim::ValidationRow> rows = suite().evaluate(catalog(), 2);
  std::printf("\nValidation suite (bounds: every modelled row <= %.0f %%, mean <= %.0f %%)\n%s\n%s",
              100.0 * kMaxRowError, 100.0 * kMaxMeanError, sim::format_validation_rows(rows).c_str(),
              sim::format_validation_by_group(rows).c_str());
  const sim::ErrorSummary all = sim::summarize(rows);
  std::set<std::string> groups, frameworks;
  for (const sim::ValidationRow& r : rows) {
    if (!r.comparison) {
      ADD_FAILURE() << r.name << ": no prediction: " << r.error;
      continue;
    }
    if (!r.modelled()) continue;
    groups.insert(r.calibration_group);
    frameworks.insert(r.framework.rfind("megatron", 0) == 0 || r.framework == "nemo" ? "megatron" : r.framework);
    EXPECT_LE(std::abs(r.comparison->relative_error), kKnownOutliers.count(r.name) ? kKnownOutlierMaxError
                                                                                    : kMaxRowError)
        << r.name << ": measured " << r.comparison->measured << " " << r.comparison->units << ", predicted "
        << r.comparison->predicted;
  }
  EXPECT_GE(all.rows, kMinRows);
  EXPECT_LE(all.mean_abs, kMaxMeanError) << all.text();
  EXPECT_TRUE(groups.count("ampere") && groups.count("hopper")) << "the suite must span A100 and H100";
  EXPECT_TRUE(frameworks.count("megatron") && (frameworks.count("fsdp") || frameworks.count("fsdp2")))
      << "the suite must span Megatron and FSDP";
}

TEST(ValidationSuite, LeaveOneSourceOutWithinBounds) {
  const auto held_out = sim::leave_one_dataset_out(suite(), catalog(), 2);
  std::printf("\nLeave one source out (bound: mean <= %.0f %%)\n%s", 100.0 * kMaxLeaveOneOutMean,
              sim::format_leave_one_out(held_out).c_str());
  const sim::ErrorSummary all = sim::leave_one_out_summary(held_out);
  EXPECT_GT(all.rows, 0);
  EXPECT_LE(all.mean_abs, kMaxLeaveOneOutMean) << all.text();
}

}  // namespace
}  // namespace clustersim
