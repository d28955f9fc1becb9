// The kernel time memo (models/compute/kernel_time_memo.hpp): a ComputeModel with a memo gives every GEMM time
// and attention rate of a model without one, bit for bit, on the first call (computed) and on later ones
// (memoised), for every catalog device (with and without measured tables, estimated tables), every precision it
// has, several widths, shapes and attention calls; and a device copy with another matmul scale (a what-if)
// sharing the memo gets its own times.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/compute/kernel_time_memo.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

using test::catalog;

uint64_t bits(units::Seconds t) { return std::bit_cast<uint64_t>(t.value()); }

const std::vector<GemmShape> kShapes = {
    {1, 1, 1, 1},          {8192, 12288, 12288, 1}, {4096, 3072, 12288, 1}, {1, 4096, 4096, 1},
    {2048, 2048, 128, 96}, {3000, 7000, 512, 3},    {16384, 1536, 7168, 1}, {1, 129, 257, 1}};

TEST(KernelTimeMemo, MemoisedTimesAreTheComputedOnesBitForBitOnEveryDevice) {
  KernelTimeMemo memo;
  size_t compared = 0;
  for (const auto& [name, device] : catalog().devices()) {
    for (const double share : {1.0, 0.5}) {
      const ComputeModel plain(device, share);
      const ComputeModel memoised(device, share, &memo);
      for (const Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8}) {
        for (const GemmShape& shape : kShapes) {
          for (const auto& [element, output] : {std::pair{2.0, -1.0}, {2.0, 8.0}, {1.0, -1.0}, {4.0, 4.0}}) {
            units::Seconds expected;
            try {
              expected = plain.gemm_time(shape, p, element, output);
            } catch (const std::out_of_range&) {
              EXPECT_THROW((void)memoised.gemm_time(shape, p, element, output), std::out_of_range) << name;
              continue;
            }
            for (int call = 0; call < 2; ++call) {  // computed, then memoised
              ASSERT_EQ(bits(memoised.gemm_time(shape, p, element, output)), bits(expected))
                  << name << " share " << share << " precision " << static_cast<int>(p) << " m " << shape.m
                  << " call " << call;
            }
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100U);
  EXPECT_GT(memo.size(), 100U);
}

TEST(KernelTimeMemo, ADeviceCopyWithAnotherMatmulScaleGetsItsOwnTimes) {
  KernelTimeMemo memo;
  const DeviceSpec& a100 = catalog().device("A100-SXM4-80GB");
  DeviceSpec faster = a100;  // a what-if's copy: same table, another rate
  faster.matmul_rate_scale = 2.0;
  const GemmShape shape{8192, 12288, 12288, 1};
  const units::Seconds base = ComputeModel(a100, 1.0, &memo).gemm_time(shape, Precision::bf16, 2.0);
  const units::Seconds scaled = ComputeModel(faster, 1.0, &memo).gemm_time(shape, Precision::bf16, 2.0);
  EXPECT_EQ(bits(scaled), bits(ComputeModel(faster, 1.0).gemm_time(shape, Precision::bf16, 2.0)));
  EXPECT_LT(scaled.value(), base.value());
  EXPECT_EQ(bits(ComputeModel(a100, 1.0, &memo).gemm_time(shape, Precision::bf16, 2.0)), bits(base));
}

TEST(KernelTimeMemo, ZeroDimensionsStillThrow) {
  KernelTimeMemo memo;
  const ComputeModel model(catalog().device("A100-SXM4-80GB"), 1.0, &memo);
  EXPECT_THROW((void)model.gemm_time({0, 8, 8, 1}, Precision::bf16, 2.0), std::invalid_argument);
  EXPECT_THROW((void)model.gemm_time({0, 8, 8, 1}, Precision::bf16, 2.0), std::invalid_argument);
  EXPECT_EQ(memo.size(), 0U);
}

TEST(KernelTimeMemo, IsClearedPastItsBound) {
  KernelTimeMemo memo;
  const ComputeModel model(catalog().device("H100-SXM5-80GB"), 1.0, &memo);
  for (int64_t m = 1; m <= static_cast<int64_t>(KernelTimeMemo::kMaxEntries) + 10; ++m) {
    (void)model.gemm_time({m, 64, 64, 1}, Precision::bf16, 2.0);
  }
  EXPECT_LE(memo.size(), KernelTimeMemo::kMaxEntries);
  EXPECT_EQ(bits(model.gemm_time({5, 64, 64, 1}, Precision::bf16, 2.0)),
            bits(ComputeModel(catalog().device("H100-SXM5-80GB")).gemm_time({5, 64, 64, 1}, Precision::bf16, 2.0)));
}

TEST(KernelTimeMemo, MemoisedAttentionRatesAreTheComputedOnesBitForBitOnEveryDevice) {
  KernelTimeMemo memo;
  size_t compared = 0;
  for (const auto& [name, device] : catalog().devices()) {
    for (const double share : {1.0, 0.5}) {
      const ComputeModel plain(device, share);
      const ComputeModel memoised(device, share, &memo);
      for (const AttentionKernel kernel : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn}) {
        for (const bool backward : {false, true}) {
          for (const bool causal : {false, true}) {
            for (const int64_t head_dim : {64, 128, 192}) {
              for (const int64_t length : {1, 512, 4096, 6000, 32768, 131072}) {
                const AttentionCall call{kernel, backward, head_dim, causal, length};
                const Precision p = device.peak.count(Precision::bf16) != 0 ? Precision::bf16 : Precision::fp16;
                const units::FlopsPerSecond expected = plain.attention_rate(p, call);
                for (int round = 0; round < 2; ++round) {  // computed, then memoised
                  ASSERT_EQ(std::bit_cast<uint64_t>(memoised.attention_rate(p, call).value()),
                            std::bit_cast<uint64_t>(expected.value()))
                      << name << " kernel " << static_cast<int>(kernel) << " backward " << backward << " causal "
                      << causal << " d " << head_dim << " s " << length << " round " << round;
                }
                ++compared;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100U);
  EXPECT_GT(memo.attention_size(), 10U);  // the catalog's measured tables were memoised
}

}  // namespace
}  // namespace clustersim::models
