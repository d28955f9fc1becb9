// Comparison of two pipeline executor results, shared by the tests of the executor's dependency-order run
// (tests/step/test_dependency_order*.cpp): the event-driven run (spans recorded) is the reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "models/parallelism/step_program.hpp"
#include "sim/step/pipeline_executor.hpp"

namespace clustersim::testing {

/// `a` and `b` are the same double, bit for bit (EXPECT_EQ on the values: -0.0 and 0.0 aside).
inline void expect_same_seconds(units::Seconds a, units::Seconds b, const char* what) {
  EXPECT_EQ(a.value(), b.value()) << what;
}

/// Two critical paths are identical: every part, the home and end stages, every wait.
inline void expect_same_path(const sim::CriticalPath& a, const sim::CriticalPath& b) {
  expect_same_seconds(a.compute, b.compute, "path compute");
  expect_same_seconds(a.attention, b.attention, "path attention");
  expect_same_seconds(a.memory_bound, b.memory_bound, "path memory_bound");
  expect_same_seconds(a.tp_comm, b.tp_comm, "path tp_comm");
  expect_same_seconds(a.cp_comm, b.cp_comm, "path cp_comm");
  expect_same_seconds(a.ep_comm, b.ep_comm, "path ep_comm");
  expect_same_seconds(a.host, b.host, "path host");
  expect_same_seconds(a.pp_comm, b.pp_comm, "path pp_comm");
  expect_same_seconds(a.dp_comm, b.dp_comm, "path dp_comm");
  expect_same_seconds(a.optimizer, b.optimizer, "path optimizer");
  expect_same_seconds(a.pipeline_wait, b.pipeline_wait, "path pipeline_wait");
  EXPECT_EQ(a.home_stage, b.home_stage);
  EXPECT_EQ(a.end_stage, b.end_stage);
  ASSERT_EQ(a.waits.size(), b.waits.size());
  for (size_t i = 0; i < a.waits.size(); ++i) {
    EXPECT_EQ(a.waits[i].stage, b.waits[i].stage);
    expect_same_seconds(a.waits[i].time, b.waits[i].time, "wait time");
    expect_same_seconds(a.waits[i].compute, b.waits[i].compute, "wait compute");
  }
}

/// Everything but the spans, the events and the fingerprint is identical; `events` ran on the engine (spans
/// recorded), `ordered` in dependency order (none).
inline void expect_same_result(const sim::PipelineResult& events, const sim::PipelineResult& ordered) {
  expect_same_seconds(events.step_time, ordered.step_time, "step_time");
  EXPECT_EQ(events.critical_stage, ordered.critical_stage);
  EXPECT_EQ(events.replicas, ordered.replicas);
  ASSERT_EQ(events.stages.size(), ordered.stages.size());
  for (size_t k = 0; k < events.stages.size(); ++k) {
    SCOPED_TRACE("stage " + std::to_string(k));
    const sim::StageBreakdown& a = events.stages[k];
    const sim::StageBreakdown& b = ordered.stages[k];
    expect_same_seconds(a.compute, b.compute, "compute");
    expect_same_seconds(a.attention, b.attention, "attention");
    expect_same_seconds(a.memory_bound, b.memory_bound, "memory_bound");
    expect_same_seconds(a.tp_comm, b.tp_comm, "tp_comm");
    expect_same_seconds(a.cp_comm, b.cp_comm, "cp_comm");
    expect_same_seconds(a.ep_comm, b.ep_comm, "ep_comm");
    expect_same_seconds(a.host, b.host, "host");
    expect_same_seconds(a.pp_exposed, b.pp_exposed, "pp_exposed");
    expect_same_seconds(a.bubble, b.bubble, "bubble");
    expect_same_seconds(a.grad_sync, b.grad_sync, "grad_sync");
    expect_same_seconds(a.optimizer, b.optimizer, "optimizer");
    expect_same_seconds(a.finish, b.finish, "finish");
    EXPECT_EQ(a.flops.value(), b.flops.value());
  }
  expect_same_path(events.critical_path, ordered.critical_path);
  EXPECT_GT(events.events, 0U);
  EXPECT_EQ(ordered.events, 0U);
  EXPECT_TRUE(ordered.spans.empty());
}

/// The parts of a stage's breakdown that its passes book (all but pp_exposed, bubble, optimizer and grad_sync,
/// which the tail adds to), summed here by their definition: pass by pass in the stage's order, each part of the
/// pass's cost (merged with its 1F1B neighbour or not) at the replica's pace. The executor books them per unit
/// after its passes, from a table of the products (book_passes): the same sums bit for bit. `result.stages[k]`
/// is its slowest replica's, so it must equal one replica's sums.
inline void expect_booked_in_order(const models::StepProgram& program, const sim::ExecutionFidelity& fidelity,
                            const sim::PipelineResult& result) {
  const auto replicas = static_cast<size_t>(fidelity.replicas);
  for (size_t k = 0; k < program.stages.size(); ++k) {
    const models::StageProgram& stage = program.stages[k];
    const sim::StageBreakdown& got = result.stages[k];
    bool matched = false;
    for (size_t r = 0; r < replicas && !matched; ++r) {
      const size_t u = k * replicas + r;
      const double slow = fidelity.slowdown.empty() ? 1.0 : fidelity.slowdown[u];
      const double compute_slow = (fidelity.compute_slowdown.empty() ? 1.0 : fidelity.compute_slowdown[u]) * slow;
      sim::StageBreakdown want;
      for (size_t j = 0; j < stage.order.size(); ++j) {
        const models::ScheduledPass& pass = stage.order[j];
        const bool forward = pass.kind == models::PassKind::forward;
        const bool merged =
            !stage.forward_paired.empty() &&
            (forward ? j + 1 < stage.order.size() && stage.order[j + 1].kind == models::PassKind::backward
                     : j > 0 && stage.order[j - 1].kind == models::PassKind::forward);
        const auto c = static_cast<size_t>(pass.chunk);
        const models::PassCost& cost = merged ? (forward ? stage.forward_paired[c] : stage.backward_paired[c])
                                              : (forward ? stage.forward[c] : stage.backward[c]);
        want.compute += cost.compute * compute_slow;
        want.attention += cost.attention * compute_slow;
        want.memory_bound += cost.memory_bound * compute_slow;
        want.tp_comm += cost.tp_comm * slow;
        want.cp_comm += cost.cp_comm * slow;
        want.ep_comm += cost.ep_comm * slow;
        want.host += cost.host * slow;
        want.flops += cost.flops;
      }
      matched = want.compute.value() == got.compute.value() && want.attention.value() == got.attention.value() &&
                want.memory_bound.value() == got.memory_bound.value() &&
                want.tp_comm.value() == got.tp_comm.value() && want.cp_comm.value() == got.cp_comm.value() &&
                want.ep_comm.value() == got.ep_comm.value() && want.host.value() == got.host.value() &&
                want.flops.value() == got.flops.value();
    }
    EXPECT_TRUE(matched) << "stage " << k << ": its breakdown is no replica's passes summed in order";
  }
}

/// `program` run at `fidelity` on the engine and in dependency order gives the same result (expect_same_result),
/// its passes' parts booked in order (expect_booked_in_order), the same critical-path home stage as the engine's
/// spans give, the same step time from pipeline_step_time, and the same free-transfer reference time fused and
/// separate.
inline void expect_same(const models::StepProgram& program, sim::ExecutionFidelity fidelity = {}) {
  fidelity.record_spans = true;
  const sim::PipelineResult events = sim::execute_pipeline(program, fidelity);
  fidelity.record_spans = false;
  const sim::PipelineResult ordered = sim::execute_pipeline(program, fidelity);
  expect_same_result(events, ordered);
  expect_booked_in_order(program, fidelity, ordered);
  // The critical path's home stage is the one with the most pass time (the last of those): summed here from the
  // engine's pass spans (replica 0's, so one replica only), it is the stage both runs found.
  if (fidelity.replicas == 1) {
    std::vector<int64_t> busy(program.stages.size(), 0);
    for (const sim::TraceSpan& span : events.spans) {
      if (span.kind != sim::SpanKind::forward && span.kind != sim::SpanKind::backward) continue;
      busy[static_cast<size_t>(span.stage)] += std::llround(span.end.value() * 1e9) - std::llround(span.start.value() * 1e9);
    }
    int64_t home = 0;
    for (size_t k = 0; k < busy.size(); ++k) {
      if (busy[k] >= busy[static_cast<size_t>(home)]) home = static_cast<int64_t>(k);
    }
    EXPECT_EQ(ordered.critical_path.home_stage, home);
  }
  // pipeline_step_time (the variability quantiles) runs in dependency order too.
  EXPECT_EQ(sim::pipeline_step_time(program, fidelity).value(), events.step_time.value());
  // The free-transfer reference run, fused into the step's dependency pass and run separately.
  EXPECT_EQ(sim::free_transfer_step_time(program, fidelity, /*fused=*/true).value(),
            sim::free_transfer_step_time(program, fidelity, /*fused=*/false).value());
}

}  // namespace clustersim::testing
