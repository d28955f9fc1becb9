// Validation: predictions for the Megatron-LM SC'21 Table 1 runs against the published TFLOP/s per GPU.
// Prints the whole table. Bounds (issue 2): the 175B-class row within 15 %; every row within 15 % and the mean
// absolute error within 10 % (to be tightened as the model improves; the goal is a 3 % mean).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/step_report.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/support/cli.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

TEST(ValidationMegatronSc21, Table1TflopsPerGpu) {
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  double sum_abs = 0.0, max_abs = 0.0;
  int rows = 0;
  std::printf("\n%-44s %6s %9s %9s %8s\n", "scenario", "GPUs", "measured", "predicted", "error");
  for (const fs::path& file : testing::shipped_scenarios()) {
    if (file.parent_path().filename() != "megatron" || file.filename().string().rfind("sc21-table1", 0) != 0) continue;
    const sim::Scenario sc = sim::load_scenario(fs::path(CLUSTERSIM_SOURCE_DIR) / file, {}, catalog);
    const sim::StepReport r = sim::simulate_scenario(sc, catalog);
    const auto cmp = sim::compare_with_reference(sc, r);
    ASSERT_TRUE(cmp.has_value()) << file;
    ASSERT_EQ(cmp->metric, "tflops_per_gpu");
    std::printf("%-44s %6lld %9.1f %9.1f %+7.1f%%\n", sc.name.c_str(), static_cast<long long>(r.gpus), cmp->measured,
                cmp->predicted, 100.0 * cmp->relative_error);
    const double err = std::abs(cmp->relative_error);
    sum_abs += err;
    max_abs = std::max(max_abs, err);
    ++rows;
    EXPECT_LE(err, 0.15) << sc.name;
    if (sc.model.hidden_size == 12288 && r.gpus == 1536) {
      EXPECT_LE(err, 0.15) << "the 175B-class row";
    }
  }
  ASSERT_EQ(rows, 10) << "one scenario per row of Table 1";
  std::printf("mean |error| %.1f %%, max |error| %.1f %% over %d rows\n", 100.0 * sum_abs / rows, 100.0 * max_abs,
              rows);
  EXPECT_LE(sum_abs / rows, 0.10);
}

}  // namespace
}  // namespace clustersim
