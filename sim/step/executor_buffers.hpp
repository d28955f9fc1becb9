// The pipeline executor's per-thread buffers and its dependency-order run's per-unit records
// (sim/step/pipeline_executor.cpp). Internal to sim/step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/parallelism/schedule.hpp"
#include "sim/engine/time.hpp"
#include "sim/step/step_timeline.hpp"

namespace clustersim::sim::executor_detail {

/// The Executor's largest per-run buffers, kept per thread between runs (a search runs one step after another
/// on each thread) so that a run reuses their capacity instead of allocating and clearing them: moved into an
/// Executor when it is built, into its StepTimeline, and back here once the critical path is walked. A run
/// that throws drops them (the next one allocates anew).
struct TimelineBuffers {
  std::vector<std::vector<PassRun>> passes;
  std::vector<int64_t> forward_arrival;
  std::vector<int64_t> backward_arrival;
};

/// This thread's TimelineBuffers.
TimelineBuffers& timeline_buffers();

/// One unit's constants in run_in_dependency_order: derived once per run from the program and the unit's place.
struct UnitPlan {
  const models::ScheduledPass* passes = nullptr;  ///< its stage's order
  size_t n = 0;                                   ///< passes in the order
  PassRun* runs = nullptr;                        ///< its PassRun per pass (with a critical path)
  const Time* durations = nullptr;                ///< its rows of Executor::pass_time_
  const size_t* triggers = nullptr;               ///< its stage's reduction triggers (Executor::triggers_)
  size_t trigger_count = 0;
  size_t next_unit = 0;      ///< receives its forward sends (rank k + 1, same replica)
  size_t previous_unit = 0;  ///< receives its backward sends (rank k - 1)
  size_t unit_base = 0;      ///< its arrival entries' offset within a chunk's
  size_t last_chunk = 0;     ///< the chunk whose forward sends nothing (the last virtual stage's), or none
  size_t first_chunk = 0;    ///< the chunk whose backward sends nothing (the first virtual stage's), or none
  size_t stage = 0;
  bool paired = false;  ///< its stage has merged costs
};

/// Parts of a pass's cost booked in a breakdown (Executor::fill_cost_table): compute, attention, memory_bound,
/// tp, cp, ep, host, dp (grad_sync), flops, and a zero pad (lanes in pairs).
constexpr size_t kParts = 10;

/// One unit's progress in run_in_dependency_order.
struct UnitRun {
  size_t next = 0;        ///< its next pass
  size_t cursor = 0;      ///< its next reduction trigger (index into UnitPlan::triggers)
  size_t trigger_at = 0;  ///< that trigger's pass, or none
  size_t waiting = 0;     ///< the arrival entry its next pass waits for, or none
  Time free;              ///< when its stream is free
  Time ref_free;          ///< the same in the fused free-transfer reference run
  const double* costs = nullptr;  ///< its cost table (Executor::fill_cost_table), with a critical path
  double sums[kParts] = {};       ///< its passes' parts summed in its order so far, with a critical path
  int64_t busy = 0;               ///< its passes' durations summed so far (ns), with a critical path
};

/// run_in_dependency_order's buffers, kept per thread across runs (a search runs one step after another on
/// each thread): their capacity is reused, so a run allocates none of them. Every entry a run reads it has
/// written first in that run (or sized and set there), so what a previous run left is never read.
struct DependencyScratch {
  std::vector<size_t> ready;
  std::vector<UnitPlan> plans;
  std::vector<UnitRun> runs;
  std::vector<int64_t> ref_arrivals;  ///< the fused reference run's arrivals: forward, then backward
  std::vector<double> costs;          ///< every unit's cost table, with a critical path
};

/// This thread's DependencyScratch.
DependencyScratch& dependency_scratch();

}  // namespace clustersim::sim::executor_detail
