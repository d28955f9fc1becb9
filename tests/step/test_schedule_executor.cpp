// Pipeline schedules and their execution on the engine, against hand-checkable closed forms.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "models/parallelism/schedule.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/step/pipeline_executor.hpp"
#include "tests/support/pipeline_programs.hpp"

namespace clustersim {
namespace {

using models::PassKind;
using models::PipelineSchedule;
using models::ScheduledPass;

constexpr PassKind F = PassKind::forward;
constexpr PassKind B = PassKind::backward;

TEST(Schedule, OneFOneBOrderOnTwoStagesThreeMicrobatches) {
  // Stage 0 of 2 warms up with p - 0 - 1 = 1 forward, alternates, then drains.
  EXPECT_EQ(models::stage_order(PipelineSchedule::one_f_one_b, 0, 2, 3),
            (std::vector<ScheduledPass>{{F, 0, 0}, {F, 1, 0}, {B, 0, 0}, {F, 2, 0}, {B, 1, 0}, {B, 2, 0}}));
  // The last stage has no warm-up: strict alternation.
  EXPECT_EQ(models::stage_order(PipelineSchedule::one_f_one_b, 1, 2, 3),
            (std::vector<ScheduledPass>{{F, 0, 0}, {B, 0, 0}, {F, 1, 0}, {B, 1, 0}, {F, 2, 0}, {B, 2, 0}}));
}

TEST(Schedule, WarmupIsCappedByMicrobatches) {
  // Stage 0 of 4 would warm up with 3 forwards, but only 2 microbatches exist.
  EXPECT_EQ(models::stage_order(PipelineSchedule::one_f_one_b, 0, 4, 2),
            (std::vector<ScheduledPass>{{F, 0, 0}, {F, 1, 0}, {B, 0, 0}, {B, 1, 0}}));
}

TEST(Schedule, GPipeRunsAllForwardsFirst) {
  EXPECT_EQ(models::stage_order(PipelineSchedule::gpipe, 1, 3, 2),
            (std::vector<ScheduledPass>{{F, 0, 0}, {F, 1, 0}, {B, 0, 0}, {B, 1, 0}}));
}

TEST(Schedule, CountsPast32BitsAreRefused) {
  // ScheduledPass keeps microbatch and chunk in 32 bits: larger counts are an error, not a wrapped index.
  const int64_t too_many = int64_t{1} << 31;
  EXPECT_THROW((void)models::stage_order(PipelineSchedule::one_f_one_b, 0, 2, too_many), std::invalid_argument);
  EXPECT_THROW((void)models::stage_order(PipelineSchedule::one_f_one_b, 0, 2, 4, too_many), std::invalid_argument);
  EXPECT_EQ(models::stage_order(PipelineSchedule::gpipe, 0, 1, 3).back(), (ScheduledPass{B, 2, 0}));
}

TEST(Schedule, InFlightMicrobatches) {
  EXPECT_EQ(models::max_in_flight(PipelineSchedule::one_f_one_b, 0, 8, 96), 8);
  EXPECT_EQ(models::max_in_flight(PipelineSchedule::one_f_one_b, 7, 8, 96), 1);
  EXPECT_EQ(models::max_in_flight(PipelineSchedule::gpipe, 0, 8, 96), 96);
  EXPECT_THROW(models::stage_order(PipelineSchedule::gpipe, 3, 3, 2), std::invalid_argument);
}

using testing::uniform_program;

double sum_of_parts(const sim::StageBreakdown& b) {
  return (b.compute + b.tp_comm + b.pp_exposed + b.bubble + b.grad_sync + b.optimizer).value();
}

class BubbleOracle : public ::testing::TestWithParam<std::tuple<PipelineSchedule, int64_t, int64_t>> {};

TEST_P(BubbleOracle, BubbleFractionIsPMinusOneOverM) {
  const auto [schedule, p, m] = GetParam();
  const double tf = 1e-3, tb = 2e-3;
  const sim::PipelineResult r = sim::execute_pipeline(uniform_program(schedule, p, m, tf, tb));
  // Ideal time m (tf + tb); the pipeline adds (p - 1)(tf + tb): bubble / ideal = (p - 1) / m.
  const double ideal = static_cast<double>(m) * (tf + tb);
  EXPECT_NEAR(r.step_time.value(), static_cast<double>(m + p - 1) * (tf + tb), 1e-8);
  for (const auto& stage : r.stages) {
    EXPECT_NEAR(stage.bubble.value() / ideal, static_cast<double>(p - 1) / static_cast<double>(m), 1e-6);
    EXPECT_NEAR(sum_of_parts(stage), r.step_time.value(), 1e-8);
    EXPECT_EQ(stage.pp_exposed.value(), 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, BubbleOracle,
                         ::testing::Values(std::tuple{PipelineSchedule::one_f_one_b, int64_t{1}, int64_t{4}},
                                           std::tuple{PipelineSchedule::one_f_one_b, int64_t{4}, int64_t{8}},
                                           std::tuple{PipelineSchedule::one_f_one_b, int64_t{8}, int64_t{96}},
                                           std::tuple{PipelineSchedule::one_f_one_b, int64_t{4}, int64_t{2}},
                                           std::tuple{PipelineSchedule::gpipe, int64_t{4}, int64_t{8}},
                                           std::tuple{PipelineSchedule::gpipe, int64_t{3}, int64_t{5}}));

class InterleavedBubbleOracle : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(InterleavedBubbleOracle, BubbleFractionIsPMinusOneOverVM) {
  const auto [p, m, v] = GetParam();
  const double tf = 1e-3, tb = 2e-3;
  const sim::PipelineResult r =
      sim::execute_pipeline(uniform_program(PipelineSchedule::one_f_one_b, p, m, tf, tb, 0.0, v));
  // Narayanan et al. SC'21 Sec. 2.2.2: bubble / ideal = (p - 1) / (v m), ideal m (tf + tb). Chunk times like
  // 1/3 ms round up to whole nanoseconds per event, so allow 1 ns per pass on the critical path.
  const double ideal = static_cast<double>(m) * (tf + tb);
  const double rounding = 2.0 * static_cast<double>((m * v + p) * 1) * 1e-9;
  EXPECT_NEAR(r.stages[0].bubble.value() / ideal, static_cast<double>(p - 1) / static_cast<double>(v * m),
              rounding / ideal);
  EXPECT_NEAR(r.step_time.value(), ideal * (1.0 + static_cast<double>(p - 1) / static_cast<double>(v * m)),
              rounding);
}

INSTANTIATE_TEST_SUITE_P(Interleaved, InterleavedBubbleOracle,
                         ::testing::Values(std::tuple{int64_t{2}, int64_t{4}, int64_t{2}},
                                           std::tuple{int64_t{4}, int64_t{8}, int64_t{2}},
                                           std::tuple{int64_t{4}, int64_t{16}, int64_t{4}},
                                           std::tuple{int64_t{8}, int64_t{64}, int64_t{3}}));

TEST(Schedule, InterleavedOrderFollowsMegatron) {
  // p = 2, v = 2, m = 2: rank 0 warms up with (2-0-1)*2 + (2-1)*2 = 4 forwards: chunk 0 mb 0, 1, chunk 1 mb 0, 1.
  const auto order = models::stage_order(PipelineSchedule::one_f_one_b, 0, 2, 2, 2);
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(order[0], (ScheduledPass{F, 0, 0}));
  EXPECT_EQ(order[1], (ScheduledPass{F, 1, 0}));
  EXPECT_EQ(order[2], (ScheduledPass{F, 0, 1}));
  EXPECT_EQ(order[3], (ScheduledPass{F, 1, 1}));
  // Backwards start with the last chunk.
  EXPECT_EQ(order[4], (ScheduledPass{B, 0, 1}));
  EXPECT_THROW(models::stage_order(PipelineSchedule::one_f_one_b, 0, 4, 6, 2), std::invalid_argument);
  EXPECT_THROW(models::stage_order(PipelineSchedule::gpipe, 0, 4, 8, 2), std::invalid_argument);
}

TEST(PipelineExecutor, OverlappedGradientSyncHidesBehindTheLastBackward) {
  // One stage, 2 microbatches, backward 2 ms; a 10 ms reduction in 10 buckets: without overlap it follows the
  // last backward (step 6 ms + 10 ms); with overlap it starts with the last backward (at 4 ms) and ends at
  // max(4 + 10, 6 + 1) = 14 ms.
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 1, 2, 1e-3, 2e-3);
  program.stages[0].grad_sync = units::seconds(0.010);
  program.stages[0].grad_buckets = 10;
  EXPECT_NEAR(sim::execute_pipeline(program).step_time.value(), 0.016, 1e-8);
  program.stages[0].overlap_grad_sync = true;
  const sim::PipelineResult r = sim::execute_pipeline(program);
  EXPECT_NEAR(r.step_time.value(), 0.014, 1e-8);
  EXPECT_NEAR(r.stages[0].grad_sync.value(), 0.008, 1e-8);  // exposed: 14 - 6 ms
}

TEST(PipelineExecutor, InterleavedGradientSyncOverlapsChunkByChunk) {
  // p = 2, v = 2, m = 2, a chunk's forward 1 ms and backward 2 ms, no transfers. Stage 0 runs its passes as
  // F(m0,c0) [0,1] F(m1,c0) [1,2] F(m0,c1) [2,3] F(m1,c1) [3,4] B(m0,c1) [6,8] B(m1,c1) [9,11] B(m0,c0) [11,13]
  // B(m1,c0) [13,15]; stage 1 ends its passes at 13. Each chunk reduces 3 ms of gradients in 3 buckets.
  //   after the flush: 15 + 3 + 3 = 21 ms;
  //   whole stage at the final backward (6 ms, 6 buckets): from 13, max(13 + 6, 15 + 1) = 19 ms;
  //   chunk by chunk (Megatron-Core): chunk 1 from 9 to max(9 + 3, 11 + 1) = 12, chunk 0 from 13 to
  //   max(13 + 3, 15 + 1) = 16 ms; stage 1: chunk 1 [7, 10], chunk 0 [11, 14]. Step 16 ms, 1 ms exposed.
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 2, 2, 2e-3, 4e-3, 0.0, 2);
  for (auto& stage : program.stages) {
    stage.grad_sync = units::seconds(6e-3);
    stage.grad_buckets = 6;
  }
  EXPECT_NEAR(sim::execute_pipeline(program).step_time.value(), 21e-3, 1e-8);
  for (auto& stage : program.stages) stage.overlap_grad_sync = true;
  EXPECT_NEAR(sim::execute_pipeline(program).step_time.value(), 19e-3, 1e-8);
  for (auto& stage : program.stages) {
    stage.chunk_grad_sync = {units::seconds(3e-3), units::seconds(3e-3)};
    stage.chunk_grad_buckets = {3, 3};
  }
  const sim::PipelineResult r = sim::execute_pipeline(program);
  EXPECT_NEAR(r.step_time.value(), 16e-3, 1e-8);
  EXPECT_NEAR(r.stages[0].grad_sync.value(), 1e-3, 1e-8);
  EXPECT_NEAR(r.stages[1].finish.value(), 14e-3, 1e-8);
  // One reduction span per chunk on each stage.
  int spans = 0;
  for (const auto& span : r.spans) spans += span.kind == sim::SpanKind::grad_sync ? 1 : 0;
  EXPECT_EQ(spans, 4);
  program.stages[0].chunk_grad_buckets = {3};
  EXPECT_THROW(sim::execute_pipeline(program), std::invalid_argument);
}

TEST(PipelineExecutor, FullFidelityAgreesWithReplicaOnSymmetricPrograms) {
  const auto program = uniform_program(PipelineSchedule::one_f_one_b, 4, 16, 1.3e-3, 2.9e-3, 0.2e-3, 2);
  const sim::PipelineResult replica = sim::execute_pipeline(program);
  const sim::PipelineResult full = sim::execute_pipeline(program, sim::ExecutionFidelity{8, {}, {}});
  EXPECT_EQ(full.replicas, 8);
  EXPECT_EQ(full.step_time.value(), replica.step_time.value());
  for (size_t k = 0; k < replica.stages.size(); ++k) {
    EXPECT_EQ(full.stages[k].bubble.value(), replica.stages[k].bubble.value());
  }
}

TEST(PipelineExecutor, AStragglerDelaysEveryReplicaThroughTheGradientBarrier) {
  // 2 stages x 3 replicas; replica 1 of stage 1 runs 1.5x slower. Its pipeline takes 1.5x as long from stage 1
  // on; the other replicas finish their passes earlier but wait at the stage's gradient reduction.
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 2, 4, 1e-3, 2e-3);
  program.stages[0].grad_sync = units::seconds(1e-3);
  program.stages[1].grad_sync = units::seconds(1e-3);
  const double fast = sim::execute_pipeline(program, sim::ExecutionFidelity{3, {}, {}}).step_time.value();
  const sim::PipelineResult slow =
      sim::execute_pipeline(program, sim::ExecutionFidelity{3, {1.0, 1.0, 1.0, 1.0, 1.5, 1.0}, {}});
  EXPECT_GT(slow.step_time.value(), fast * 1.2);
  // Stage 0's replicas all end together, after the straggler's pipeline released them.
  EXPECT_NEAR(slow.stages[0].finish.value(), slow.stages[1].finish.value(), 5e-3);
  EXPECT_THROW(sim::execute_pipeline(program, sim::ExecutionFidelity{3, {1.0}, {}}), std::invalid_argument);
}

TEST(PipelineExecutor, ComputeSlowdownScalesComputeNotCommunication) {
  // One stage, 4 microbatches of tf = 1 ms and tb = 2 ms compute with 0.5 ms of tensor-parallel communication
  // each, and a 1 ms optimizer. At compute factor 1.1 (its slowest GPU): 4 (1.1 x 3 + 2 x 0.5) + 1.1 x 1 =
  // 18.3 ms, against 4 (3 + 1) + 1 = 17 ms; the collectives keep their time.
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 1, 4, 1e-3, 2e-3);
  program.stages[0].forward[0].tp_comm = units::seconds(0.5e-3);
  program.stages[0].backward[0].tp_comm = units::seconds(0.5e-3);
  program.stages[0].optimizer = units::seconds(1e-3);
  EXPECT_NEAR(sim::execute_pipeline(program).step_time.value(), 17e-3, 1e-9);
  sim::ExecutionFidelity slower;
  slower.compute_slowdown = {1.1};
  const sim::PipelineResult r = sim::execute_pipeline(program, slower);
  EXPECT_NEAR(r.step_time.value(), 18.3e-3, 1e-9);
  EXPECT_NEAR(r.stages[0].compute.value(), 13.2e-3, 1e-9);
  EXPECT_NEAR(r.stages[0].tp_comm.value(), 4e-3, 1e-9);
  EXPECT_NEAR(r.stages[0].optimizer.value(), 1.1e-3, 1e-9);
  EXPECT_EQ(sim::pipeline_step_time(program, slower).value(), r.step_time.value());
  slower.compute_slowdown = {1.1, 1.0};
  EXPECT_THROW(sim::execute_pipeline(program, slower), std::invalid_argument);
}

TEST(PipelineExecutor, MergedCostsApplyToTheSteadyStateOnly) {
  // moe_a2a_overlap: a forward followed by a backward in a stage's order, and that backward, take the merged
  // costs (here half the compute); warm-up forwards and cool-down backwards keep theirs.
  const double tf = 1e-3, tb = 2e-3;
  const auto merged = [&](models::StepProgram program) {
    for (models::StageProgram& s : program.stages) {
      s.forward_paired = s.forward;
      s.backward_paired = s.backward;
      for (models::PassCost& c : s.forward_paired) c.compute = c.compute * 0.5;
      for (models::PassCost& c : s.backward_paired) c.compute = c.compute * 0.5;
    }
    return program;
  };
  // One stage alternates F B F B F B: every pass is merged.
  const sim::PipelineResult one = sim::execute_pipeline(merged(uniform_program(PipelineSchedule::one_f_one_b, 1, 3, tf, tb)));
  EXPECT_NEAR(one.step_time.value(), 3.0 * (tf + tb) / 2.0, 1e-8);
  // Stage 0 of 2 runs F0 F1 B0 F2 B1 B2: F0 (warm-up) and B2 (cool-down) are not merged; stage 1 alternates.
  const sim::PipelineResult two = sim::execute_pipeline(merged(uniform_program(PipelineSchedule::one_f_one_b, 2, 3, tf, tb)));
  EXPECT_NEAR(two.stages[0].compute.value(), tf + tb + 2.0 * (tf + tb) / 2.0, 1e-8);
  EXPECT_NEAR(two.stages[1].compute.value(), 3.0 * (tf + tb) / 2.0, 1e-8);
}

TEST(PipelineExecutor, SingleMicrobatchPaysEveryTransferTwice) {
  // One microbatch walks down p stages and back: p (tf + tb) of work plus 2 (p - 1) transfers of c, all of which
  // stage 0 waits on (its only pass after the forward is the backward, which waits for the whole round trip).
  const int64_t p = 4;
  const double tf = 1e-3, tb = 2e-3, c = 0.5e-3;
  const sim::PipelineResult r =
      sim::execute_pipeline(uniform_program(PipelineSchedule::one_f_one_b, p, 1, tf, tb, c));
  EXPECT_NEAR(r.step_time.value(), p * (tf + tb) + 2.0 * (p - 1) * c, 1e-8);
  EXPECT_EQ(r.critical_stage, 0);
  EXPECT_NEAR(r.stages[0].pp_exposed.value(), 2.0 * (p - 1) * c, 1e-8);
  EXPECT_NEAR(r.stages[0].bubble.value(), (p - 1) * (tf + tb), 1e-8);
}

TEST(PipelineExecutor, BlockingSendsHoldTheSenderUntilTheTransferEnds) {
  // p = 2, m = 2, tf = 1, tb = 2, c = 0.25 (ms). Asynchronous sends: stage 1 runs F0 [1.25, 2.25], B0, F1, B1
  // back to back to 7.25, stage 0's B1 waits for its gradient until 7.5 and ends at 9.5. Blocking sends
  // (Megatron's default): stage 0 sends F0 until 1.25 before F1 [1.25, 2.25] and its send to 2.5; stage 1's B0
  // send holds it to 4.5, so F1 runs [4.5, 5.5], B1 [5.5, 7.5], its send ends 7.75 and stage 0's B1 [7.75, 9.75].
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 2, 2, 1e-3, 2e-3, 0.25e-3);
  EXPECT_NEAR(sim::execute_pipeline(program).step_time.value(), 9.5e-3, 1e-9);
  program.p2p_blocking = true;
  const sim::PipelineResult r = sim::execute_pipeline(program);
  EXPECT_NEAR(r.step_time.value(), 9.75e-3, 1e-9);
  // Exposed pipeline communication: T - T(free transfers) = 9.75 - 9.
  EXPECT_NEAR(r.stages[0].pp_exposed.value(), 0.75e-3, 1e-9);
}

TEST(PipelineExecutor, TailRunsGradientSyncThenOptimizer) {
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 2, 4, 1e-3, 2e-3);
  program.stages[0].grad_sync = units::seconds(0.010);
  program.stages[0].optimizer = units::seconds(0.001);
  const sim::PipelineResult r = sim::execute_pipeline(program);
  // Stage 0 ends last: (m + p - 1)(tf + tb) + sync + optimizer = 5 * 3 ms + 11 ms.
  EXPECT_NEAR(r.step_time.value(), 0.015 + 0.011, 1e-8);
  EXPECT_EQ(r.critical_stage, 0);
  EXPECT_NEAR(sum_of_parts(r.stages[1]), r.step_time.value(), 1e-8);
}

TEST(PipelineExecutor, IsDeterministic) {
  const auto program = uniform_program(PipelineSchedule::one_f_one_b, 8, 64, 1.3e-3, 2.9e-3, 0.1e-3);
  const sim::PipelineResult a = sim::execute_pipeline(program);
  const sim::PipelineResult b = sim::execute_pipeline(program);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.step_time.value(), b.step_time.value());
}

TEST(PipelineExecutor, RejectsBackwardBeforeForward) {
  models::StepProgram program = uniform_program(PipelineSchedule::one_f_one_b, 1, 2, 1e-3, 2e-3);
  program.stages[0].order = {{B, 0, 0}, {F, 0, 0}, {F, 1, 0}, {B, 1, 0}};
  EXPECT_THROW(sim::execute_pipeline(program), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim
