// Fully sharded passes (models/parallelism/sharded_pass.hpp): the two-stream schedule against closed forms.
#include "models/parallelism/sharded_pass.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace clustersim::models {
namespace {

std::vector<ShardedUnit> units(int n, double compute, double gather, double reduce) {
  return std::vector<ShardedUnit>(static_cast<size_t>(n),
                                  ShardedUnit{units::Seconds(compute), units::Seconds(gather), units::Seconds(reduce)});
}

TEST(ShardedPass, ComputeBoundForwardExposesOnlyTheFirstGather) {
  // g < c: every later gather runs under the previous unit's compute: total = g + n c.
  const ShardedPassTime f = sharded_forward(units(8, 3.0, 1.0, 0.0));
  EXPECT_DOUBLE_EQ(f.total.value(), 1.0 + 8 * 3.0);
  EXPECT_DOUBLE_EQ(f.exposed().value(), 1.0);
}

TEST(ShardedPass, CommunicationBoundForwardRunsAtTheGatherRate) {
  // g > c: the gathers run back to back (the rate limiter never binds: unit i-2 is done long before):
  // total = n g + c.
  const ShardedPassTime f = sharded_forward(units(8, 1.0, 3.0, 0.0));
  EXPECT_DOUBLE_EQ(f.total.value(), 8 * 3.0 + 1.0);
  // Without compute, the pass is its gathers.
  EXPECT_DOUBLE_EQ(sharded_forward(units(5, 0.0, 2.0, 0.0)).total.value(), 10.0);
}

TEST(ShardedPass, RateLimiterHoldsAGatherUntilAnEarlierUnitIsFreed) {
  // With k = 1 every gather waits for the previous unit's compute: total = n (g + c).
  EXPECT_DOUBLE_EQ(sharded_forward(units(4, 3.0, 1.0, 0.0), 1).total.value(), 4 * (1.0 + 3.0));
  // k = 2 lets the next gather run under the current compute: g + n c.
  EXPECT_DOUBLE_EQ(sharded_forward(units(4, 3.0, 1.0, 0.0), 2).total.value(), 1.0 + 4 * 3.0);
  EXPECT_THROW((void)sharded_forward(units(4, 3.0, 1.0, 0.0), 0), std::invalid_argument);
}

TEST(ShardedPass, OverlappedGathersSlowTheComputeBesideThem) {
  // Three units, c = 1, g = 0.5, k = 2. Without contention: G0 [0, 0.5], C0 [0.5, 1.5], G1 [0.5, 1.0] (under C0),
  // C1 [1.5, 2.5], G2 [1.5, 2.0] (waits for unit 0's compute, under C1), C2 [2.5, 3.5]: total 3.5.
  // With kappa = 0.2, C0 and C1 each overlap a 0.5 s gather: c = 1 + 0.2 x 0.5 = 1.1; C2 overlaps none:
  // total = 0.5 + 1.1 + 1.1 + 1.0 = 3.7, and the stretch counts as exposed communication (0.5 + 0.2).
  const auto u = units(3, 1.0, 0.5, 0.0);
  EXPECT_DOUBLE_EQ(sharded_forward(u, 2).total.value(), 3.5);
  const ShardedPassTime f = sharded_forward(u, 2, 0.2);
  EXPECT_NEAR(f.total.value(), 3.7, 1e-12);
  EXPECT_NEAR(f.exposed().value(), 0.7, 1e-12);
  EXPECT_DOUBLE_EQ(f.compute.value(), 3.0);
  // Backward, c = 1, g = 0.5, r = 0.5, two units: AG0 [0, 0.5]; B0 [0.5, 1.5] beside AG1 [0.5, 1.0];
  // RS0 [1.5, 2.0] beside B1 [1.5, 2.5]; RS1 [2.5, 3.0]: total 3.0. With kappa = 0.2 each pass overlaps 0.5 s:
  // B0 [0.5, 1.6], RS0 [1.6, 2.1], B1 [1.6, 2.7], RS1 [2.7, 3.2]: total 3.2.
  const auto b = units(2, 1.0, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(sharded_backward(b).total.value(), 3.0);
  EXPECT_NEAR(sharded_backward(b, false, 0.2).total.value(), 3.2, 1e-12);
  EXPECT_THROW((void)sharded_forward(u, 2, 1.0), std::invalid_argument);
  EXPECT_THROW((void)sharded_backward(b, false, -0.1), std::invalid_argument);
}

TEST(ShardedPass, ComputeBoundBackwardExposesTheFirstGatherAndTheLastReduce) {
  // g + r <= c: AG_{j+1} and RS_j run under B_{j+1}'s and B_j's compute: total = g + n c + r.
  const ShardedPassTime b = sharded_backward(units(6, 5.0, 1.0, 2.0));
  EXPECT_DOUBLE_EQ(b.total.value(), 1.0 + 6 * 5.0 + 2.0);
  EXPECT_DOUBLE_EQ(b.exposed().value(), 3.0);
}

TEST(ShardedPass, CommunicationBoundBackwardIsItsCollectives) {
  // No compute: the communication stream runs n gathers and n reduce-scatters back to back.
  EXPECT_DOUBLE_EQ(sharded_backward(units(6, 0.0, 1.0, 2.0)).total.value(), 6 * 3.0);
  // Communication-heavy: at least the collectives, at most collectives + every compute.
  const double t = sharded_backward(units(6, 1.0, 1.0, 2.0)).total.value();
  EXPECT_GE(t, 6 * 3.0);
  EXPECT_LE(t, 6 * 3.0 + 6 * 1.0);
}

TEST(ShardedPass, UnitsAlreadyGatheredDoNotWait) {
  // The root stays gathered in backward (g = 0) and its reduce-scatter comes last: exposed after its compute.
  std::vector<ShardedUnit> u = units(3, 4.0, 1.0, 1.0);
  u.front().gather = units::Seconds(0.0);
  const ShardedPassTime b = sharded_backward(u);
  // B_0 [0, 4]; AG_1 [0, 1]; RS_0 [4, 5]; B_1 [4, 8]; AG_2 [5, 6]; RS_1 [8, 9]; B_2 [8, 12]; RS_2 [12, 13].
  EXPECT_DOUBLE_EQ(b.total.value(), 13.0);
}

TEST(ShardedPass, OneReduceScatterInFlightHoldsTheComputeStream) {
  // FSDP2 (g = 1, r = 3, c = 1, 4 units): after B_j the compute stream waits for RS_{j-1}.
  //   AG_0 [0,1] B_0 [1,2] AG_1 [1,2] RS_0 [2,5] | B_1 [2,3], waits to 5, AG_2 [5,6] RS_1 [6,9] |
  //   B_2 [6,7], waits to 9, AG_3 [9,10] RS_2 [10,13] | B_3 [10,11], waits to 13, RS_3 [13,16]: 16.
  // Without the rule B_1 ends at 3 and RS_1 still starts at 6 behind AG_2: the communication stream is the
  // bottleneck either way and the pass takes 16; the rule moves the waiting onto the compute stream.
  const auto v = units(4, 1.0, 1.0, 3.0);
  EXPECT_DOUBLE_EQ(sharded_backward(v, true).total.value(), 16.0);
  EXPECT_DOUBLE_EQ(sharded_backward(v, false).total.value(), 16.0);
  // Compute-bound units never wait: g + n c + r either way.
  const auto w = units(4, 5.0, 1.0, 2.0);
  EXPECT_DOUBLE_EQ(sharded_backward(w, true).total.value(), 1.0 + 4 * 5.0 + 2.0);
}

}  // namespace
}  // namespace clustersim::models
