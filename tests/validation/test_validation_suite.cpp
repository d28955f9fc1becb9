// The validation suite (docs/validation.md; `make validate`): every scenario under scenarios/validation/ (one
// per published row of scenarios/validation/published/) is simulated with the shipped catalog and compared with
// its measurement. The table is printed grouped by published dataset, then by GPU group and framework, then the
// leave-one-source-out table. Rows with reference.exclude_reason are printed and left out of the bounds.
//
// Bounds (issue 11): over the modelled dense rows, mean |error| <= 4 % and every row <= 10 %, over at least 60 rows
// spanning A100 and H100, Megatron and FSDP; leave-one-source-out mean <= 8 %. One row is above 10 %
// (docs/validation.md "Where the model is weak"): it is held to 12 % by name, so that it cannot drift further and
// no other row may join it. Context-parallel rows (issue 13) are held to that 15 %, and the three that
// miss it to 25 % by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "models/hardware/catalog.hpp"
#include "sim/validation/validation.hpp"
#include "sim/validation/validation_report.hpp"
#include "tests/support/files.hpp"

namespace clustersim {
namespace {

constexpr double kMaxRowError = 0.10;
constexpr double kMaxMeanError = 0.04;
constexpr double kMaxLeaveOneOutMean = 0.08;
constexpr int kMinRows = 60;
/// Rows known to miss kMaxRowError, and the bound they are held to until the missing physics is found.
constexpr double kKnownOutlierMaxError = 0.12;
/// NeMo 25.02 GPT-3 175B FP8 on 512 H100: -11.3 % (pessimistic) since the 16-bit GEMMs run from the measured H100
/// table (issue 25): its FP8 GEMMs run at the fp8 MAMF (torch._scaled_mm, 70.9 % of peak) with the bf16 table's
/// shape correction, an estimate, and the hopper fit sits at its bound (matmul 1.00): Transformer Engine's FP8 GEMMs
/// are faster than that microbenchmark (DeepGEMM's FP8 GEMMs reach 1,300-1,500 TFLOP/s on the same GH100 die at
/// training shapes); no FP8 GEMM table of TE's kernels exists to say by how much.
const std::set<std::string> kKnownOutliers = {"nemo-2-h100-r2502-gpt3-175b-512"};

/// Context-parallel rows: issue 13's bound, and the rows known to miss it.
constexpr double kMaxContextParallelRowError = 0.15;
constexpr double kContextParallelOutlierMaxError = 0.25;
const std::set<std::string> kContextParallelOutliers = {
    // torchtitan Llama 3.1 8B on one 8-GPU node at 131K and 262K tokens (CP 4 and 8): +17.5 % and +21.8 %, while
    // CP 2 at 64K is -11 % and NeMo's CP rows are within 12 %: the measured step grows faster than the
    // attention work from CP 2 on, a cost of PyTorch's Dec-2024 context_parallel the model lacks (not found).
    "torchtitan-h100-t2-cp4",
    "torchtitan-h100-t2-cp8",
    // Llama 3.1 405B 4D at 262K (CP 8): +16 %; its measurement is 16 tokens/s/GPU, rounded to 3 %.
    "torchtitan-h100-t6-4d-cp8",
};

/// MoE rows: issue 13's bound, and the rows known to miss it.
constexpr double kMaxMoeRowError = 0.15;
const std::map<std::string, double> kMoeOutliers = {
    // Qwen3-30B-A3B dropless on 16 H100 (Megatron-Bridge 25.11, 26.02): +95 % and +97 %, while the same layout
    // with token dropping padded to capacity (25.09) is -2 %. NVIDIA tracks it as a release regression
    // (NVIDIA-NeMo/Megatron-Bridge#1998: "2X slower ... with the dropless schedule compared to the token-drop
    // schedule"). The host synchronisation dropless dispatch adds (host_queue.hpp) costs 0.2 % here, and the
    // measured loss scales with the tokens of a microbatch (25.11 at micro batch 2 and 26.02 at 1 lose the same
    // share), which a per-layer host cost cannot: not identified (docs/validation.md item 0).
    {"nemo-2-h100-r2511-qwen3-30b-a3b-16", 1.05},
    {"nemo-2-h100-r2602-qwen3-30b-a3b-16", 1.05},
    // DeepSeek-V3 671B BF16 on 512 / 1,024 H100 (DGX Cloud recipe, NeMo 25.04): +19 % (too fast) with the
    // recipe's MTP module, stage sizes, recompute module and the sorting of received tokens modelled. The
    // release predates Transformer Engine's permute rewrite for top-k << experts (PR 1927, "up to 10x" per
    // kernel), which is not modelled (docs/validation.md item 0).
    {"dgxc-h100-deepseek-v3-bf16-512", 0.22},
    {"dgxc-h100-deepseek-v3-bf16-1024", 0.22},
    // Qwen3-235B-A22B TP 4 x EP 8 with DeepEP (Megatron-MoE-ModelZoo): -39 % (29.0 s measured, 17.8 s predicted),
    // while the same model at TP 2 x EP 32 is within 10 % with and without the all-to-all overlap; the model ranks
    // this layout first where the ModelZoo measured it last. Not identified (docs/validation.md item 0).
    {"modelzoo-h100-qwen3-235b-deepep-tp4-pp8-vp4-ep8", 0.4},
};

double row_bound(const sim::ValidationRow& r) {
  if (r.workload == "moe") {
    const auto known = kMoeOutliers.find(r.name);
    return known != kMoeOutliers.end() ? known->second : kMaxMoeRowError;
  }
  if (r.workload == "context-parallel") {
    return kContextParallelOutliers.count(r.name) ? kContextParallelOutlierMaxError : kMaxContextParallelRowError;
  }
  return kKnownOutliers.count(r.name) ? kKnownOutlierMaxError : kMaxRowError;
}

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
  // The mean bound and the row count are the calibrated (dense) model's; context-parallel and MoE rows are held
  // to their own row bounds (row_bound).
  const sim::ErrorSummary all = sim::summarize(rows, [](const sim::ValidationRow& r) { return r.calibrates(); });
  std::set<std::string> groups, frameworks;
  for (const sim::ValidationRow& r : rows) {
    if (!r.comparison) {
      ADD_FAILURE() << r.name << ": no prediction: " << r.error;
      continue;
    }
    if (!r.modelled()) continue;
    groups.insert(r.calibration_group);
    frameworks.insert(r.framework.rfind("megatron", 0) == 0 || r.framework == "nemo" ? "megatron" : r.framework);
    EXPECT_LE(std::abs(r.comparison->relative_error), row_bound(r))
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
  // The bound is the calibrated (dense) model's; context-parallel rows are printed with the rest.
  sim::ErrorSummary all, context, moe;
  for (const sim::HeldOutDataset& h : held_out) {
    for (const sim::ValidationRow& r : h.rows) {
      if (r.calibrates()) all.add(r);
      if (r.modelled() && r.workload == "context-parallel") context.add(r);
      if (r.modelled() && r.workload == "moe") moe.add(r);
    }
  }
  std::printf("  dense rows: %s\n  context-parallel rows: %s\n  moe rows: %s\n", all.text().c_str(),
              context.text().c_str(), moe.text().c_str());
  EXPECT_GT(all.rows, 0);
  EXPECT_LE(all.mean_abs, kMaxLeaveOneOutMean) << all.text();
  // The shipped prediction bands are these held-out errors (regenerate: clustersim validate --leave-one-out
  // --write-uncertainty models/hardware/catalog/prediction_uncertainty.toml).
  std::ifstream shipped(models::Catalog::default_directory() / "prediction_uncertainty.toml");
  const std::string text((std::istreambuf_iterator<char>(shipped)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, sim::format_prediction_uncertainty(held_out));
}

}  // namespace
}  // namespace clustersim

namespace clustersim {
namespace {

sim::ValidationRow held_out_row(const std::string& group, const std::string& framework, double error) {
  sim::ValidationRow r;
  r.calibration_group = group;
  r.framework = framework;
  sim::ReferenceComparison c;
  c.measured = 100.0;
  c.predicted = 100.0 * (1.0 + error);
  c.relative_error = error;
  r.comparison = c;
  return r;
}

// The prediction bands: leave-one-source-out errors per calibration group, framework family and workload, written
// as the catalog's prediction_uncertainty.toml, read back by Catalog::load, and looked up for a run as
// group/family -> group/* -> */family -> */*, each of the run's own workload. Two hopper Megatron-family dense rows
// at +3 % and -4 %: RMS sqrt((9 + 16) / 2) % = 3.536 %, max 4 %; one ampere FSDP dense row at +10 %; one hopper
// Megatron-family MoE row at +30 %.
TEST(PredictionBands, WrittenFromHeldOutRowsAndReadBackByTheCatalog) {
  sim::HeldOutDataset a, b, moe;
  a.rows = {held_out_row("hopper", "nemo", 0.03), held_out_row("hopper", "megatron-core", -0.04)};
  b.rows = {held_out_row("ampere", "fsdp2", 0.10)};
  moe.rows = {held_out_row("hopper", "nemo", 0.30)};
  moe.rows[0].workload = "moe";
  const std::string text = sim::format_prediction_uncertainty({a, b, moe});
  const clustersim::testing::TempDir tmp("clustersim-bands-test-");
  const std::filesystem::path& dir = tmp.path();
  const auto shipped = models::Catalog::default_directory();
  std::filesystem::copy_file(shipped / "devices.toml", dir / "devices.toml");
  std::filesystem::copy_file(shipped / "vm_sizes.toml", dir / "vm_sizes.toml");
  std::filesystem::copy(shipped / "kernels", dir / "kernels", std::filesystem::copy_options::recursive);
  {
    std::ofstream out(dir / "prediction_uncertainty.toml");
    out << text;
  }
  const models::Catalog c = models::Catalog::load(dir);
  const auto megatron = c.device("H100-SXM5-80GB").prediction_band("megatron");
  ASSERT_TRUE(megatron.has_value());
  EXPECT_NEAR(megatron->rms_relative_error, std::sqrt((0.03 * 0.03 + 0.04 * 0.04) / 2.0), 1e-4);
  EXPECT_NEAR(megatron->max_relative_error, 0.04, 1e-4);
  EXPECT_EQ(megatron->rows, 2);
  EXPECT_EQ(megatron->scope, "hopper/megatron/dense");
  // No hopper FSDP row: the hopper group's band over every family.
  EXPECT_EQ(c.device("H100-SXM5-80GB").prediction_band("fsdp")->scope, "hopper/*/dense");
  // A device of a group without rows: the suite's band for its family, then the suite's over all.
  EXPECT_EQ(c.device("MI300X").prediction_band("fsdp")->rows, 1);
  EXPECT_NEAR(c.device("MI300X").prediction_band("fsdp")->rms_relative_error, 0.10, 1e-4);
  EXPECT_EQ(c.device("MI300X").prediction_band("deepspeed")->rows, 3);
  // A mixture-of-experts run takes the MoE rows' band, never the dense one; no context-parallel row: none.
  const auto mixture = c.device("H100-SXM5-80GB").prediction_band("megatron", "moe");
  ASSERT_TRUE(mixture.has_value());
  EXPECT_NEAR(mixture->rms_relative_error, 0.30, 1e-4);
  EXPECT_EQ(mixture->scope, "hopper/megatron/moe");
  EXPECT_EQ(c.device("MI300X").prediction_band("fsdp", "moe")->scope, "*/*/moe");
  EXPECT_FALSE(c.device("H100-SXM5-80GB").prediction_band("megatron", "context-parallel").has_value());
  // An unknown framework is an error, not a silently dropped row.
  sim::HeldOutDataset bad;
  bad.rows = {held_out_row("hopper", "jax", 0.01)};
  EXPECT_THROW((void)sim::format_prediction_uncertainty({bad}), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim
