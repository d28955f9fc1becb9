// Executes one training step's IR (models/parallelism/step_program.hpp) as events on the engine.
//
// Each pipeline stage is one in-order compute stream that runs its schedule's passes. A forward pass of
// microbatch i on stage k waits for stage k-1's forward of i plus the activation transfer; a backward pass
// waits for stage k+1's backward of i plus the gradient transfer (the last stage's backward waits only for its
// own forward). After its last backward a stage runs the data-parallel gradient sync, then the optimizer.
// The step ends when the last stage finishes. Nothing here knows the bubble formula: idle time emerges from
// the dependencies, and tests hold it against (p-1)/m.
//
// Attribution of idle time: a stage is idle whenever it is not running a pass or its tail. Exposed pipeline
// communication is what the transfers cost the step, T - T', where T' is the step time of the same program
// with free transfers (executed too when transfers cost anything); the rest of a stage's idle time is pipeline
// bubble (warm-up, drain, imbalance, waiting for slower stages). So every stage's components sum to T.
#pragma once

#include <cstdint>
#include <vector>

#include "models/parallelism/step_program.hpp"
#include "models/units.hpp"

namespace clustersim::sim {

/// Where one stage's step time went. compute + tp_comm + pp_exposed + bubble + grad_sync + optimizer equals
/// the step time (up to the engine's 1 ns rounding per event).
struct StageBreakdown {
  units::Seconds compute;     ///< kernels of all passes
  units::Seconds tp_comm;     ///< tensor-parallel collectives inside the passes
  units::Seconds pp_exposed;  ///< waiting on pipeline transfers
  units::Seconds bubble;      ///< idle waiting on other stages' work (warm-up, drain, imbalance, tail)
  units::Seconds grad_sync;   ///< data-parallel gradient all-reduce
  units::Seconds optimizer;
  units::Seconds finish;      ///< when this stage's optimizer ended
  units::Flops flops;         ///< math executed by one GPU of this stage
};

struct PipelineResult {
  units::Seconds step_time;
  std::vector<StageBreakdown> stages;
  int64_t critical_stage = 0;  ///< the stage that finishes last (its breakdown is the step's)
  uint64_t events = 0;         ///< engine events executed
  uint64_t fingerprint = 0;    ///< the engine's determinism fingerprint
};

/// Runs `program` to completion. Throws std::invalid_argument if a stage's order is not a valid schedule
/// (each microbatch's forward exactly once before its backward) and std::logic_error on a deadlock.
PipelineResult execute_pipeline(const models::StepProgram& program);

}  // namespace clustersim::sim
