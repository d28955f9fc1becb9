// What the pipeline executor records of one step for its critical path (sim/step/critical_path.hpp): when each
// pass of each tensor-parallel group ran, when its input arrived, and its tail. Internal to sim/step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/parallelism/step_program.hpp"
#include "sim/step/critical_path.hpp"

namespace clustersim::sim {

/// One pass as it ran on one unit (unit = stage x replicas + replica), engine times in ns from the step start.
struct PassRun {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t continue_ns = 0;  ///< when the stage's stream went on: end_ns, or its blocking send's arrival
  /// ran merged with its 1F1B neighbour at the merged costs (StageProgram::forward_paired); without merged costs
  /// the dependency-order run leaves it false (the costs are the same either way)
  bool merged = false;
};

/// The tail of one unit: reduction, optimizer, parameter all-gather (ns from the step start).
struct TailRun {
  int64_t reached_ns = 0;        ///< this unit ran its last pass (its stream went on)
  int64_t ready_ns = 0;          ///< every replica of the stage had reached its tail
  int64_t sync_end_ns = 0;       ///< gradient reduction done
  int64_t optimizer_end_ns = 0;  ///< optimizer step done
  int64_t end_ns = 0;            ///< ZeRO parameter all-gather done: the unit's finish
};

/// A step's timeline as the executor ran it.
struct StepTimeline {
  const models::StepProgram* program = nullptr;
  size_t replicas = 1;
  std::vector<std::vector<PassRun>> passes;  ///< [unit][index in the stage's order]
  std::vector<TailRun> tails;                ///< [unit]
  /// [((virtual stage) x replicas + replica) x microbatches + microbatch]: when the forward input / backward
  /// gradient arrived, ns
  std::vector<int64_t> forward_arrival;
  std::vector<int64_t> backward_arrival;
  /// [entry] for forward_arrival's entries, [forward_arrival.size() + entry] for backward_arrival's: the index,
  /// in its sender's order, of the pass that sent that input (the last virtual stage's forward for its own
  /// backward). Set only where the input arrived (the rest uninitialised: no fill per step).
  std::unique_ptr<uint32_t[]> sender;
  /// [unit]: the sum of its passes' durations, ns (an integer sum: exact in any order)
  std::vector<int64_t> busy_ns;
  std::vector<double> slowdown;          ///< per unit, on all of a pass (ExecutionFidelity)
  std::vector<double> compute_slowdown;  ///< per unit, on a pass's compute
};

/// The critical path of `timeline` (rules in critical_path.hpp): walked back from the first unit of the lowest
/// stage that ends at `step_ns`. Throws std::logic_error if the timeline's dependencies do not explain a pass's
/// start (an executor bug).
CriticalPath critical_path_of(const StepTimeline& timeline, int64_t step_ns);

}  // namespace clustersim::sim
