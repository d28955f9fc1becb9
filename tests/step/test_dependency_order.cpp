// The pipeline executor without the event engine (ExecutionFidelity::record_spans off, as sweeps run it): the
// timeline evaluated in dependency order must be the event-driven one bit for bit (step time, every stage's
// breakdown, the critical path) on many shapes: schedules, stages, microbatches, virtual stages, transfers
// (asynchronous and blocking), slow stages, replicas with stragglers and compute factors, overlapped and
// chunk-by-chunk gradient reductions, merged MoE passes; and on every shipped training scenario. The
// free-transfer reference run (exposed pipeline communication), fused into the dependency pass, must be the
// separate one bit for bit too.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "models/parallelism/schedule.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/pipeline_executor.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/step/pipeline_compare.hpp"
#include "tests/step/step_support.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/pipeline_programs.hpp"

namespace clustersim {
namespace {

using models::PipelineSchedule;

using testing::expect_same;
using testing::expect_same_result;

/// Uneven stages: stage k's passes cost (1 + k / 7) times more, its forwards carry attention and memory-bound
/// kernels, tensor-, context-, expert-parallel and host time and FLOPs, its backwards ZeRO-3 traffic; each stage reduces gradients and steps its optimizer.
models::StepProgram uneven(models::StepProgram program) {
  for (size_t k = 0; k < program.stages.size(); ++k) {
    models::StageProgram& s = program.stages[k];
    const double f = 1.0 + static_cast<double>(k) / 7.0;
    for (models::PassCost& c : s.forward) {
      c.compute = c.compute * f;
      c.attention = c.compute * 0.31;
      c.memory_bound = c.compute * 0.17;
      c.tp_comm = units::seconds(0.11e-3 * f);
      c.cp_comm = units::seconds(0.029e-3);
      c.ep_comm = units::seconds(0.051e-3 * f);
      c.host = units::seconds(0.013e-3);
      c.flops = units::Flops(3.7e12 * f);
    }
    for (models::PassCost& c : s.backward) {
      c.compute = c.compute * f;
      c.dp_comm = units::seconds(0.07e-3);
    }
    s.grad_sync = units::seconds(3.3e-3 + 0.1e-3 * static_cast<double>(k));
    s.grad_buckets = 5;
    s.optimizer = units::seconds(0.9e-3);
    s.param_gather = units::seconds(k % 2 == 0 ? 0.4e-3 : 0.0);
  }
  return program;
}

TEST(DependencyOrder, EqualsTheEventsOnUniformPipelines) {
  for (const PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
    for (const int64_t p : {1, 2, 3, 4, 8}) {
      for (const int64_t m : {1, 2, 5, 8, 16, 37}) {
        for (const double p2p : {0.0, 0.17e-3}) {
          SCOPED_TRACE(std::string(models::to_string(schedule)) + " p " + std::to_string(p) + " m " +
                       std::to_string(m) + " p2p " + std::to_string(p2p));
          expect_same(testing::uniform_program(schedule, p, m, 1.3e-3, 2.9e-3, p2p));
          expect_same(uneven(testing::uniform_program(schedule, p, m, 1.3e-3, 2.9e-3, p2p, 1, p - 1, 1.37)));
        }
      }
    }
  }
}

TEST(DependencyOrder, EqualsTheEventsOnInterleavedPipelines) {
  for (const int64_t p : {2, 4}) {
    for (const int64_t v : {2, 3}) {
      for (const int64_t m : {4, 8, 12}) {
        for (const bool blocking : {false, true}) {
          SCOPED_TRACE("p " + std::to_string(p) + " v " + std::to_string(v) + " m " + std::to_string(m));
          models::StepProgram program =
              uneven(testing::uniform_program(PipelineSchedule::one_f_one_b, p, m, 1.1e-3, 2.3e-3, 0.21e-3, v));
          program.p2p_blocking = blocking;
          expect_same(program);
          for (auto& stage : program.stages) {
            stage.overlap_grad_sync = true;
            stage.chunk_grad_sync.assign(static_cast<size_t>(v), units::seconds(1.7e-3));
            stage.chunk_grad_buckets.assign(static_cast<size_t>(v), 3);
          }
          program.overlap_compute_slowdown = 0.1;
          expect_same(program);
          // A chunk without a reduction: its last backward triggers nothing (the dependency loop visits only
          // the triggers of reductions that take time; the events note every backward).
          for (size_t k = 0; k < program.stages.size(); ++k) {
            program.stages[k].chunk_grad_sync[k % static_cast<size_t>(v)] = units::seconds(0.0);
          }
          expect_same(program);
        }
      }
    }
  }
}

TEST(DependencyOrder, EqualsTheEventsWithBlockingSendsAndOverlappedReductions) {
  for (const int64_t p : {2, 4, 6}) {
    for (const int64_t m : {3, 8, 24}) {
      SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m));
      models::StepProgram program =
          uneven(testing::uniform_program(PipelineSchedule::one_f_one_b, p, m, 1.0e-3, 2.0e-3, 0.25e-3));
      program.p2p_blocking = true;
      expect_same(program);
      for (auto& stage : program.stages) stage.overlap_grad_sync = true;
      expect_same(program);
      program.p2p_backward = units::seconds(0.0);  // one direction free, the other blocking
      expect_same(program);
    }
  }
}

TEST(DependencyOrder, EqualsTheEventsWithMergedPasses) {
  for (const int64_t p : {1, 2, 4}) {
    for (const int64_t m : {3, 9}) {
      models::StepProgram program =
          uneven(testing::uniform_program(PipelineSchedule::one_f_one_b, p, m, 1e-3, 2e-3, 0.1e-3));
      for (models::StageProgram& s : program.stages) {
        s.forward_paired = s.forward;
        s.backward_paired = s.backward;
        for (models::PassCost& c : s.forward_paired) c.compute = c.compute * 0.55;
        for (models::PassCost& c : s.backward_paired) c.compute = c.compute * 0.6;
      }
      expect_same(program);
    }
  }
}

TEST(DependencyOrder, EqualsTheEventsWithReplicasStragglersAndComputeFactors) {
  for (const int64_t p : {1, 2, 4}) {
    for (const int64_t replicas : {2, 3}) {
      for (const bool overlap : {false, true}) {
        SCOPED_TRACE("p " + std::to_string(p) + " replicas " + std::to_string(replicas));
        models::StepProgram program =
            uneven(testing::uniform_program(PipelineSchedule::one_f_one_b, p, 8, 1.2e-3, 2.5e-3, 0.15e-3, 2));
        for (auto& stage : program.stages) stage.overlap_grad_sync = overlap;
        const auto units = static_cast<size_t>(p * replicas);
        sim::ExecutionFidelity fidelity{replicas, {}, {}};
        expect_same(program, fidelity);
        fidelity.slowdown.assign(units, 1.0);
        fidelity.slowdown[units - 1] = 1.31;
        fidelity.compute_slowdown.assign(units, 1.0);
        for (size_t u = 0; u < units; ++u) fidelity.compute_slowdown[u] = 1.0 + 0.013 * static_cast<double>(u % 5);
        expect_same(program, fidelity);
      }
    }
  }
}

TEST(DependencyOrder, RejectsWhatTheEventsReject) {
  models::StepProgram program = testing::uniform_program(PipelineSchedule::one_f_one_b, 2, 3, 1e-3, 2e-3);
  std::swap(program.stages[1].order[0], program.stages[1].order[1]);  // a backward before its forward
  sim::ExecutionFidelity fidelity;
  fidelity.record_spans = false;
  EXPECT_THROW(sim::execute_pipeline(program, fidelity), std::invalid_argument);
}

// Real programs: every shipped training scenario's step, simulated with spans (the engine) and without (in
// dependency order), gives the same report.
TEST(DependencyOrder, EqualsTheEventsOnEveryShippedTrainingScenario) {
  const models::Catalog& catalog = models::test::catalog();
  const auto clusters = std::make_shared<sim::ClusterCache>();
  sim::StepSimulator with_events(clusters);
  sim::StepSimulator ordered(clusters);
  ordered.set_record_spans(false);
  int checked = 0;
  for (const std::filesystem::path& rel : testing::shipped_scenarios(false)) {
    SCOPED_TRACE(rel.string());
    const sim::Scenario sc = sim::load_scenario(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / rel, {}, catalog);
    const models::VmSize& vm = catalog.vm_size(sc.cluster.vm_size);
    const models::StepSetup setup = sim::step_setup_of(sc, catalog);
    const sim::NetworkSetup network = sim::network_setup_of(sc);
    const sim::StepReport a = with_events.simulate(setup, vm, catalog.device(vm.device), network);
    const sim::StepReport b = ordered.simulate(setup, vm, catalog.device(vm.device), network);
    expect_same_result(a.pipeline, b.pipeline);
    EXPECT_EQ(a.step_time.value(), b.step_time.value());
    if (a.variability) {
      ASSERT_TRUE(b.variability);
      EXPECT_EQ(a.variability->step_time_p99.value(), b.variability->step_time_p99.value());
    }
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace clustersim
