// The measured kernel tables (models/compute/measured_gemm.hpp, measured_attention.hpp) against hand
// calculations: exact measurements come back, interpolation is linear in log2 M (GEMMs) and log2 s (attention),
// and the catalog's tables reach ComputeModel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/compute/measured_attention.hpp"
#include "models/compute/measured_gemm.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

using test::catalog;

/// A roofline of 1 us per row of M, whatever N and K: ratios are then measured time / (M us).
units::Seconds one_us_per_row(int64_t m, int64_t, int64_t) { return units::microseconds(static_cast<double>(m)); }

TEST(MeasuredGemm, ExactShapesReturnTheirRatioAndMInterpolatesLinearlyInLog2) {
  // Shape (1024, 1024): 2 us at M = 1 (ratio 2), 16 us at M = 4 (ratio 4).
  const std::vector<GemmMeasurement> table{{1, 1024, 1024, units::microseconds(2.0)},
                                           {4, 1024, 1024, units::microseconds(16.0)}};
  const MeasuredGemmCorrection c(table, one_us_per_row, "test");
  EXPECT_NEAR(c.ratio(1, 1024, 1024), 2.0, 1e-12);
  EXPECT_NEAR(c.ratio(4, 1024, 1024), 4.0, 1e-12);
  // M = 2 is halfway between log2 1 = 0 and log2 4 = 2: exp((ln 2 + ln 4) / 2) = sqrt(8).
  EXPECT_NEAR(c.ratio(2, 1024, 1024), std::sqrt(8.0), 1e-12);
  // Beyond the measured counts the end ratio holds.
  EXPECT_NEAR(c.ratio(4096, 1024, 1024), 4.0, 1e-12);
}

TEST(MeasuredGemm, ShapesBetweenMeasurementsWeighTheirNeighboursByInverseSquaredDistance) {
  // At M = 1, in (log2 N, log2 K): (10, 10) ratio 2, (12, 10) ratio 8, (10, 12) ratio 4.
  // (2048, 1024) = (11, 10) is at distance 1 from the first two and sqrt(5) from the third: weights 1, 1, 1/5.
  // (1024, 2048) = (10, 11) is at distance 1 from the first and third and sqrt(5) from the second.
  const std::vector<GemmMeasurement> table{{1, 1024, 1024, units::microseconds(2.0)},
                                           {1, 4096, 1024, units::microseconds(8.0)},
                                           {1, 1024, 4096, units::microseconds(4.0)}};
  const MeasuredGemmCorrection c(table, one_us_per_row, "test");
  const double l2 = std::log(2.0), l4 = std::log(4.0), l8 = std::log(8.0);
  EXPECT_NEAR(c.ratio(1, 2048, 1024), std::exp((l2 + l8 + l4 / 5.0) / 2.2), 1e-12);
  EXPECT_NEAR(c.ratio(1, 1024, 2048), std::exp((l2 + l4 + l8 / 5.0) / 2.2), 1e-12);
  // Outside the measured box (N below 1024) the query is clamped into it: as (1024, 1024).
  EXPECT_NEAR(c.ratio(1, 64, 1024), 2.0, 1e-12);
}

TEST(MeasuredGemm, OneH100GemmFromTheCatalogTableInterpolated) {
  // Vidur's H100 table: the gate+up projection of Llama-2-70B at TP 1, N = 57344, K = 8192, measured 2734.5 us at
  // M = 2048 and 4121.0 us at M = 3072 (models/hardware/catalog/kernels/gemm_h100.csv). M = 2048 returns its
  // measurement; M = 2560 interpolates the two ratios to the roofline in log2 M.
  const DeviceSpec& device = catalog().device("H100-SXM5-80GB");
  ASSERT_TRUE(device.gemm_correction);
  const ComputeModel h100(device);
  auto roofline = [&](int64_t m) {
    return ComputeModel::roofline_gemm_time({m, 57344, 8192, 1}, device.sm_count, device.achievable_matmul_bf16,
                                            device.achievable_memory_bandwidth, 2.0, 2.0)
        .value();
  };
  EXPECT_NEAR(h100.gemm_time({2048, 57344, 8192, 1}, Precision::bf16, 2.0).value(), 2734.5e-6, 1e-9);
  EXPECT_NEAR(h100.gemm_time({3072, 57344, 8192, 1}, Precision::bf16, 2.0).value(), 4121.0e-6, 1e-9);
  const double r1 = 2734.5e-6 / roofline(2048), r2 = 4121.0e-6 / roofline(3072);
  const double w = std::log2(2560.0 / 2048.0) / std::log2(3072.0 / 2048.0);
  const double expected = roofline(2560) * std::exp((1.0 - w) * std::log(r1) + w * std::log(r2));
  EXPECT_NEAR(h100.gemm_time({2560, 57344, 8192, 1}, Precision::bf16, 2.0).value(), expected, 1e-12);
  // The measured 16-bit rate carries no fitted fraction: 2 M N K / t at M = 4096 is Vidur's 683 TFLOP/s.
  EXPECT_NEAR(h100.gemm_rate({4096, 57344, 8192, 1}, Precision::bf16, 2.0).value() / 1e12,
              2.0 * 4096 * 57344 * 8192 / 5708.75e-6 / 1e12, 1e-6);
}

TEST(MeasuredGemm, SameChipDevicesShareTheTableMeasuredOnTheirSibling) {
  const DeviceSpec& h100 = catalog().device("H100-SXM5-80GB");
  const DeviceSpec& h200 = catalog().device("H200-SXM-141GB");
  EXPECT_EQ(h100.gemm_correction, h200.gemm_correction);
  EXPECT_EQ(catalog().device("A100-SXM4-40GB").gemm_correction, catalog().device("A100-SXM4-80GB").gemm_correction);
  EXPECT_FALSE(catalog().device("MI300X").gemm_correction);
}

TEST(MeasuredGemm, MalformedTablesAreRejectedWithTheirLine) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "clustersim_bad_gemm_table.csv";
  {
    std::ofstream out(path);
    out << "# comment\nm,n,k,time_us\n1,1024,1024,2.0\n2,1024,0,3.0\n";
  }
  try {
    (void)read_gemm_table(path.string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(":4:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW((void)read_gemm_table("/nonexistent/table.csv"), std::runtime_error);
}

TEST(MeasuredAttention, RatesInterpolateOverLengthAndHeadDimension) {
  // attention_h100.csv, cuDNN forward without the mask: head dim 128 609 TFLOP/s at 4096 and 600 at 8192; head dim
  // 256 580 at 8192.
  const DeviceSpec& device = catalog().device("H100-SXM5-80GB");
  ASSERT_TRUE(device.attention_table);
  const MeasuredAttention& table = *device.attention_table;
  auto rate = [&](bool backward, int64_t d, bool causal, int64_t s) {
    return table.rate(AttentionCall{AttentionKernel::cudnn, backward, d, causal, s})->value() / 1e12;
  };
  EXPECT_NEAR(rate(false, 128, false, 8192), 600.0, 1e-9);
  // 6000 tokens: w = log2(6000 / 4096) between 609 and 600.
  const double w = std::log2(6000.0 / 4096.0);
  EXPECT_NEAR(rate(false, 128, false, 6000), 609.0 + w * (600.0 - 609.0), 1e-9);
  // Head dim 192 (MLA's d_qk): halfway in log2 between 128 and 256 at 8192: (600 + 580) / 2.
  EXPECT_NEAR(rate(false, 192, false, 8192), 600.0 + std::log2(1.5) * (580.0 - 600.0), 1e-9);
  // A causal backward: the non-causal backward (518) times the forward's causal / non-causal ratio (529 / 600).
  EXPECT_NEAR(rate(true, 128, true, 8192), 518.0 * 529.0 / 600.0, 1e-9);
  // Clamped to the measured lengths: 128K keys run at the 16K rate.
  EXPECT_NEAR(rate(false, 128, false, 131072), rate(false, 128, false, 16384), 1e-9);
}

TEST(MeasuredAttention, ComputeModelUsesTheTableAtTheDevicesClockRatio) {
  // The 500 W H100 runs the 700 W table at its matmul maximum over the SXM's (709.4 / 794.5, its power estimate),
  // and, the table being carried over as an estimate, at its fitted training fraction.
  const DeviceSpec& sxm = catalog().device("H100-SXM5-80GB");
  const DeviceSpec& capped = catalog().device("H100-96GB-HBM2e-500W");
  const AttentionCall call{AttentionKernel::flash3, false, 128, true, 8192};
  const double full = ComputeModel(sxm).attention_rate(Precision::bf16, call).value();
  EXPECT_NEAR(full, 602e12, 1e6);  // FlashAttention-3, causal, head dim 128, 8K: 602 TFLOP/s
  EXPECT_NEAR(ComputeModel(capped).attention_rate(Precision::bf16, call).value(),
              full * 709.4 / 794.5 * capped.training_matmul_fraction, 1e3);
  // A device without a table keeps its scalar measurement: A100 FlashAttention-2 179.5 TFLOP/s forward + backward.
  const DeviceSpec& a100 = catalog().device("A100-SXM4-80GB");
  EXPECT_NEAR(ComputeModel(a100).attention_rate(Precision::bf16, call).value(),
              179.5e12 * a100.training_matmul_fraction, 1e6);
}

}  // namespace
}  // namespace clustersim::models
