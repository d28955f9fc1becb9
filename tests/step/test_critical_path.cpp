// The critical path of a step (sim/step/critical_path.hpp): its parts tile the step, the balanced 1F1B bubble is
// the analytic (p-1)/(m+p-1), and each kind lands where the dependency it waited on says.
#include <gtest/gtest.h>

#include <cmath>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/schedule.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/bottleneck.hpp"
#include "sim/step/pipeline_executor.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/pipeline_programs.hpp"

namespace clustersim {
namespace {

using models::PipelineSchedule;

models::StepProgram program_of(PipelineSchedule schedule, int64_t p, int64_t m, double tf, double tb,
                               double p2p = 0.0, int64_t v = 1, int64_t slow_stage = -1, double factor = 1.0) {
  return testing::uniform_program(schedule, p, m, tf, tb, p2p, v, slow_stage, factor);
}

void expect_tiles(const sim::PipelineResult& r) {
  const sim::CriticalPath& c = r.critical_path;
  EXPECT_NEAR(c.total().value(), r.step_time.value(), 1e-9 * r.step_time.value());
  double waits = 0.0;
  for (const sim::StageWait& w : c.waits) {
    waits += w.time.value();
    EXPECT_NE(w.stage, c.home_stage);
    EXPECT_NEAR((w.compute + w.tp_comm + w.cp_comm + w.ep_comm + w.host + w.dp_comm).value(), w.time.value(),
                1e-12 + 1e-9 * w.time.value());
  }
  EXPECT_NEAR(waits, c.pipeline_wait.value(), 1e-12 + 1e-9 * waits);
  for (const units::Seconds part : {c.compute, c.tp_comm, c.cp_comm, c.ep_comm, c.host, c.pp_comm, c.dp_comm,
                                    c.optimizer, c.pipeline_wait}) {
    EXPECT_GE(part.value(), -1e-9);
  }
}

class BalancedBubble : public ::testing::TestWithParam<std::tuple<PipelineSchedule, int64_t, int64_t>> {};

TEST_P(BalancedBubble, PipelineWaitIsTheAnalyticBubble) {
  const auto [schedule, p, m] = GetParam();
  const double tf = 1e-3, tb = 2e-3;
  const sim::PipelineResult r = sim::execute_pipeline(program_of(schedule, p, m, tf, tb));
  expect_tiles(r);
  const sim::CriticalPath& c = r.critical_path;
  // Narayanan et al. SC'21 Sec. 2.2.1: the bubble is (p-1)/(m+p-1) of a step of (m+p-1)(tf+tb).
  const double analytic = static_cast<double>(p - 1) / static_cast<double>(m + p - 1);
  EXPECT_NEAR(c.pipeline_wait.value() / r.step_time.value(), analytic, 0.02 * analytic + 1e-12);
  EXPECT_NEAR(c.compute.value(), static_cast<double>(m) * (tf + tb), 1e-8);
  EXPECT_EQ(c.home_stage, p - 1);  // fill down the pipeline, the last stage's steady state, drain back up
  EXPECT_EQ(c.end_stage, 0);
  EXPECT_EQ(static_cast<int64_t>(c.waits.size()), p - 1);
}

INSTANTIATE_TEST_SUITE_P(Schedules, BalancedBubble,
                         ::testing::Values(std::tuple{PipelineSchedule::one_f_one_b, int64_t{4}, int64_t{8}},
                                           std::tuple{PipelineSchedule::one_f_one_b, int64_t{8}, int64_t{96}},
                                           std::tuple{PipelineSchedule::one_f_one_b, int64_t{4}, int64_t{2}},
                                           std::tuple{PipelineSchedule::gpipe, int64_t{4}, int64_t{8}}));

TEST(CriticalPath, OneStageIsAllCompute) {
  const sim::PipelineResult r = sim::execute_pipeline(program_of(PipelineSchedule::one_f_one_b, 1, 4, 1e-3, 2e-3));
  expect_tiles(r);
  EXPECT_NEAR(r.critical_path.compute.value(), 12e-3, 1e-12);
  EXPECT_EQ(r.critical_path.pipeline_wait.value(), 0.0);
  EXPECT_TRUE(r.critical_path.waits.empty());
}

TEST(CriticalPath, TransfersOnThePathArePipelineCommunication) {
  // p = 4, m = 8, 0.1 ms per transfer: the path crosses at least the 2 (p - 1) transfers of fill and drain (in
  // the steady state the transfers delay the inputs too).
  const sim::PipelineResult r =
      sim::execute_pipeline(program_of(PipelineSchedule::one_f_one_b, 4, 8, 1e-3, 2e-3, 1e-4));
  expect_tiles(r);
  EXPECT_GE(r.critical_path.pp_comm.value(), 6e-4 - 1e-9);
  models::StepProgram blocking = program_of(PipelineSchedule::one_f_one_b, 4, 8, 1e-3, 2e-3, 1e-4);
  blocking.p2p_blocking = true;  // the sender's stream waits for its send: more transfers on the path
  const sim::PipelineResult rb = sim::execute_pipeline(blocking);
  expect_tiles(rb);
  EXPECT_GT(rb.critical_path.pp_comm.value(), r.critical_path.pp_comm.value());
}

TEST(CriticalPath, TheSlowestStageSetsThePace) {
  const sim::PipelineResult r =
      sim::execute_pipeline(program_of(PipelineSchedule::one_f_one_b, 4, 16, 1e-3, 2e-3, 0.0, 1, 1, 1.5));
  expect_tiles(r);
  EXPECT_EQ(r.critical_path.home_stage, 1);
  // All of stage 1's passes, 16 x 4.5 ms; the rest of the step is stage 1 waiting on the others.
  EXPECT_NEAR(r.critical_path.compute.value(), 16 * 4.5e-3, 1e-8);
  EXPECT_NEAR(r.critical_path.pipeline_wait.value(), r.step_time.value() - 16 * 4.5e-3, 1e-8);
}

TEST(CriticalPath, InterleavedBubbleIsTheAnalyticOne) {
  // Narayanan et al. SC'21 Sec. 2.2.2: with v chunks per rank the bubble is (p-1)/(v m) of the ideal time, so
  // (p-1)/(v m + p-1) of the step. The path hops between ranks every chunk; the home stage's idle time is the
  // bubble.
  for (const auto& [p, m, v] : {std::tuple{4, 8, 2}, std::tuple{4, 16, 8}, std::tuple{8, 16, 4}}) {
    SCOPED_TRACE(::testing::Message() << "p " << p << " m " << m << " v " << v);
    const sim::PipelineResult r =
        sim::execute_pipeline(program_of(PipelineSchedule::one_f_one_b, p, m, 1e-3, 2e-3, 0.0, v));
    expect_tiles(r);
    const double analytic = static_cast<double>(p - 1) / static_cast<double>(v * m + p - 1);
    EXPECT_NEAR(r.critical_path.pipeline_wait.value() / r.step_time.value(), analytic, 0.02 * analytic);
  }
}

TEST(CriticalPath, InterleavedSchedulesTile) {
  for (const int64_t v : {2, 3}) {
    const sim::PipelineResult r =
        sim::execute_pipeline(program_of(PipelineSchedule::one_f_one_b, 4, 8, 1e-3, 2e-3, 5e-5, v));
    expect_tiles(r);
  }
}

TEST(CriticalPath, TheTailIsGradientSyncOptimizerAndParameterGather) {
  models::StepProgram program = program_of(PipelineSchedule::one_f_one_b, 2, 4, 1e-3, 2e-3);
  for (auto& s : program.stages) {
    s.grad_sync = units::seconds(3e-3);
    s.optimizer = units::seconds(1e-3);
    s.param_gather = units::seconds(5e-4);
  }
  const sim::PipelineResult r = sim::execute_pipeline(program);
  expect_tiles(r);
  EXPECT_NEAR(r.critical_path.dp_comm.value(), 3.5e-3, 1e-12);
  EXPECT_NEAR(r.critical_path.optimizer.value(), 1e-3, 1e-12);
}

TEST(CriticalPath, ExposedCommunicationInsidePassesKeepsItsKind) {
  models::StepProgram program = program_of(PipelineSchedule::one_f_one_b, 1, 2, 1e-3, 2e-3);
  for (auto* cost : {&program.stages[0].forward[0], &program.stages[0].backward[0]}) {
    cost->tp_comm = units::seconds(2e-4);
    cost->ep_comm = units::seconds(3e-4);
    cost->cp_comm = units::seconds(1e-4);
    cost->host = units::seconds(5e-5);
  }
  const sim::PipelineResult r = sim::execute_pipeline(program);
  expect_tiles(r);
  EXPECT_NEAR(r.critical_path.tp_comm.value(), 8e-4, 1e-12);
  EXPECT_NEAR(r.critical_path.ep_comm.value(), 12e-4, 1e-12);
  EXPECT_NEAR(r.critical_path.cp_comm.value(), 4e-4, 1e-12);
  EXPECT_NEAR(r.critical_path.host.value(), 2e-4, 1e-12);
  EXPECT_NEAR(r.critical_path.compute.value(), 6e-3, 1e-9);
}

TEST(CriticalPath, FullFidelityFollowsTheSlowReplica) {
  const models::StepProgram program = program_of(PipelineSchedule::one_f_one_b, 2, 4, 1e-3, 2e-3);
  sim::ExecutionFidelity fidelity;
  fidelity.replicas = 3;
  fidelity.slowdown = {1.0, 1.0, 1.0, 1.0, 1.2, 1.0};  // stage 1, replica 1
  const sim::PipelineResult r = sim::execute_pipeline(program, fidelity);
  expect_tiles(r);
  EXPECT_EQ(r.critical_path.home_stage, 1);
  EXPECT_NEAR(r.critical_path.compute.value(), 4 * 3e-3 * 1.2, 1e-8);
}

TEST(CriticalPath, StageRanges) {
  EXPECT_EQ(sim::stage_ranges({1, 2, 3, 4}), "1-4");
  EXPECT_EQ(sim::stage_ranges({0, 2, 3, 4, 7}), "0, 2-4, 7");
  EXPECT_EQ(sim::stage_ranges({5}), "5");
}

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(std::string(CLUSTERSIM_SOURCE_DIR) + "/models/hardware/catalog");
  return c;
}

sim::StepReport run(const std::filesystem::path& rel, const std::vector<std::string>& overrides = {}) {
  const sim::Scenario sc = sim::load_scenario(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / rel, overrides, catalog());
  return sim::simulate_scenario(sc, catalog());
}

// Done when (issue 29): for every shipped training scenario the parts sum to the step time within 1e-9.
TEST(CriticalPath, PartsSumToTheStepOfEveryShippedTrainingScenario) {
  int checked = 0;
  for (const std::filesystem::path& rel : testing::shipped_scenarios(false)) {
    SCOPED_TRACE(rel.string());
    const sim::StepReport r = run(rel);
    EXPECT_NEAR(r.pipeline.critical_path.total().value(), r.step_time.value(), 1e-9 * r.step_time.value());
    EXPECT_GT(r.bottleneck.share, 0.0);
    EXPECT_FALSE(r.bottleneck.text.empty());
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

// A shipped dense 1F1B scenario: the pipeline wait is the fill and drain, one forward and one backward of every
// other stage; close to the balanced share (p-1)/(m+p-1) (the first and last stages carry the embedding and the
// LM head, so the stages are not quite equal).
TEST(CriticalPath, ShippedDenseOneFOneBBubbleIsAnalytic) {
  const std::filesystem::path rel = "scenarios/azure/gpt3-175b-h100-one-zone.toml";
  const sim::Scenario sc = sim::load_scenario(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / rel, {}, catalog());
  const sim::StepReport r = sim::simulate_scenario(sc, catalog());
  const sim::CriticalPath& c = r.pipeline.critical_path;
  const auto p = static_cast<double>(sc.parallelism.pipeline), m = static_cast<double>(r.microbatches);
  ASSERT_GT(p, 1.0);
  ASSERT_EQ(sc.parallelism.virtual_stages, 1);
  const double passes = (c.total() - c.pp_comm - c.dp_comm - c.optimizer).value();
  EXPECT_NEAR(c.pipeline_wait.value() / passes, (p - 1) / (m + p - 1), 0.05 * (p - 1) / (m + p - 1));
  double fill_and_drain = 0.0;
  for (size_t k = 0; k < r.pipeline.stages.size(); ++k) {
    const sim::StageBreakdown& s = r.pipeline.stages[k];
    if (static_cast<int64_t>(k) != c.home_stage) fill_and_drain += (s.compute + s.tp_comm + s.host).value() / m;
  }
  EXPECT_NEAR(c.pipeline_wait.value(), fill_and_drain, 0.02 * fill_and_drain);
}

// DeepSeek-V3-like: the MoE stages spend most of their step in exposed all-to-all between VMs.
TEST(CriticalPath, DeepSeekV3LikeIsBoundByTheExpertAllToAll) {
  const std::filesystem::path rel = "scenarios/azure/deepseek-v3-like-2048-h100.toml";
  // With the last stage as light as the others (one decoder layer beside the MTP module and the heads), the
  // pipeline runs at the pace of the MoE stages and the exposed all-to-all is the largest part.
  const sim::StepReport balanced =
      run(rel, {"parallelism.first_stage_layers=4", "parallelism.last_stage_layers=1"});
  const sim::CriticalPath& c = balanced.pipeline.critical_path;
  for (const units::Seconds other : {c.compute, c.tp_comm, c.cp_comm, c.host, c.pp_comm, c.dp_comm, c.optimizer,
                                     c.pipeline_wait}) {
    EXPECT_GT(c.ep_comm, other);
  }
  EXPECT_EQ(balanced.bottleneck.part, "ep_comm");
  EXPECT_NE(balanced.bottleneck.text.find("InfiniBand between VMs"), std::string::npos) << balanced.bottleneck.text;
  // As shipped, the last stage (two layers, the MTP module, two LM heads) is a few per cent busier and its
  // compute leads; the line then says the other MoE stages, nearly as busy, are bound by the all-to-all.
  const sim::StepReport shipped = run(rel);
  EXPECT_GT(shipped.pipeline.critical_path.ep_comm.value(), 0.3 * shipped.step_time.value());
  EXPECT_LT(shipped.pipeline.critical_path.pipeline_wait.value(), 0.2 * shipped.step_time.value());
  if (shipped.bottleneck.part != "ep_comm") {
    EXPECT_NE(shipped.bottleneck.text.find("bound by expert dispatch/combine"), std::string::npos)
        << shipped.bottleneck.text;
  }
}

}  // namespace
}  // namespace clustersim
