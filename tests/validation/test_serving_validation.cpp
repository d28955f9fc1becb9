// The serving validation group (issue 15): the shipped rows load and are predicted as `clustersim run` predicts
// them; the engine fit picks the grid point with the least error; leave-one-source-out refits without the
// held-out dataset. The group's errors are a report (`make validate`, docs/serving.md), not a bound here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/serving/serving_summary.hpp"
#include "sim/validation/serving_validation.hpp"
#include "tests/support/files.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kRows = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "validation-serving";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// Copies three small rows of two engine families and two datasets into `dir` (a fresh temporary directory).
void small_suite(const fs::path& dir) {
  for (const char* row : {"lmdeploy-a100-fp16-v010a1-45.toml", "lmdeploy-a100-fp16-v010a1-48.toml",
                          "vllm-buildkite-9515-71.toml"}) {
    fs::copy_file(kRows / row, dir / row);
  }
}

TEST(ServingValidation, EveryShippedRowLoads) {
  // The dense rows (fitted on) and the mixture-of-experts rows (predicted only).
  const fs::path moe_rows = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "validation-serving-moe";
  for (const auto& [dir, at_least] : {std::pair{kRows, 170u}, std::pair{moe_rows, 120u}}) {
    const ServingValidationSuite suite = ServingValidationSuite::load(dir, catalog());
    EXPECT_GE(suite.size(), at_least) << dir;
    for (const ServingValidationRow& r : suite.rows()) {
      EXPECT_TRUE(r.error.empty()) << r.name << ": " << r.error;
      EXPECT_GT(r.measured, 0.0) << r.name;
    }
  }
}

TEST(ServingValidation, PredictsAsRunDoesFitsAndLeavesOneOut) {
  const clustersim::testing::TempDir tmp("clustersim-serving-validation-");
  const fs::path& dir = tmp.path();
  small_suite(dir);
  const ServingValidationSuite suite = ServingValidationSuite::load(dir, catalog());
  ASSERT_EQ(suite.size(), 3u);
  const std::vector<ServingValidationRow> rows = suite.evaluate(catalog(), 2);
  ASSERT_EQ(rows.size(), 3u);
  for (const ServingValidationRow& r : rows) {
    ASSERT_TRUE(r.predicted) << r.name << ": " << r.error;
    const ServingScenario sc = load_serving_scenario(r.file, {}, catalog());
    const ServingRun run = run_serving_scenario(sc, catalog());
    EXPECT_DOUBLE_EQ(*r.predicted, serving_metric(run.summary, r.metric, sc.serving.tensor * sc.serving.replicas));
  }
  EXPECT_NE(format_serving_validation(rows).find("lmdeploy_a100_fp16_v0.1.0a1"), std::string::npos);
  // The fit, per engine family (lmdeploy-0.1's rows calibrate the lmdeploy family): no grid point does better on
  // the family's rows than the one it picks.
  const auto grid = suite.predict_grid(catalog(), 2);
  const EngineFit fit = suite.fit(grid, "lmdeploy");
  for (size_t g = 0; g < grid.front().size(); ++g) {
    double sum = 0;
    for (size_t i = 0; i < 2; ++i) sum += std::abs(grid[i][g] / suite.rows()[i].measured - 1.0);
    EXPECT_GE(sum / 2 + 1e-12, fit.in_sample.mean_abs) << g;
  }
  EXPECT_THROW((void)suite.fit(grid, "sglang"), std::invalid_argument);
  // Leave one source out: two datasets, each predicted with the other family's fit (the only other rows).
  const std::vector<HeldOutServingDataset> held = leave_one_serving_dataset_out(suite, grid);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].dataset, "lmdeploy_a100_fp16_v0.1.0a1");
  ASSERT_EQ(held[0].fits.size(), 1u);
  EXPECT_EQ(held[0].fits[0].family, "lmdeploy");
  EXPECT_EQ(held[0].rows.size(), 2u);
  EXPECT_EQ(held[0].summary.rows, 2);
  EXPECT_NE(format_serving_leave_one_out(held).find("Every held-out row"), std::string::npos);
}

}  // namespace
}  // namespace clustersim::sim
