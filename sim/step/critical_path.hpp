// The critical path of one simulated training step, split by what it was doing (issue 29).
//
// The pipeline executor records, for every pass, when it started and ended and what it waited for: the same
// stage's previous pass (the stage's in-order stream) or its input (the activation or gradient of the
// neighbouring virtual stage, plus the transfer). Walking back from the event that ends the step to time 0,
// always through the predecessor that finished last (the same stage on a tie), gives one chain of passes,
// transfers and tails that tiles [0, step time] without a gap: the critical path (Daydream, ATC 2020; dPRO,
// MLSys 2022, call the same chain the "critical path" of the dependency graph).
//
// Attribution along the path:
// - The *home stage* is the pipeline stage on which the path spends the most pass time: the stage the
//   pipeline runs at the pace of (the busiest one; the last stage in a balanced 1F1B, where the path runs the
//   warm-up forwards down the pipeline, the whole steady state of the last stage, then the cool-down backwards
//   back up).
// - Passes on the home stage count by kind: compute kernels, exposed tensor-, context-, expert-parallel
//   communication, host issue, ZeRO-3 data-parallel traffic inside the pass.
// - Passes on any other stage are *pipeline wait* (fill, drain and imbalance: the home stage waiting on
//   another stage), each kept with the stage and what that stage was doing (CriticalPath::waits).
// - Pipeline transfers on the path are exposed pipeline communication; the tail of the stage that ends the
//   step counts as exposed data-parallel communication (gradient reduction past the last backward, ZeRO
//   parameter all-gather) and optimizer.
// In a balanced 1F1B of p stages and m microbatches the pipeline wait is (p-1)/(m+p-1) of the passes' time,
// the analytic bubble (Narayanan et al., SC21, Sec. 2.2.1).
#pragma once

#include <cstdint>
#include <vector>

#include "models/units.hpp"

namespace clustersim::sim {

/// What one stage was doing while it held the critical path, by kind; the parts sum to `time`.
struct StageWait {
  int64_t stage = 0;     ///< pipeline rank
  units::Seconds time;   ///< pass time of this stage on the path
  units::Seconds compute;
  units::Seconds tp_comm;
  units::Seconds cp_comm;
  units::Seconds ep_comm;
  units::Seconds host;
  units::Seconds dp_comm;  ///< ZeRO-3 traffic inside its passes
};

/// The step's critical path by kind. compute + tp_comm + cp_comm + ep_comm + host + pp_comm + dp_comm +
/// optimizer + pipeline_wait equals the step time exactly (the segments tile the step; each pass's rounding to
/// the engine's nanosecond goes to its compute).
struct CriticalPath {
  units::Seconds compute;        ///< home-stage compute kernels on the path
  units::Seconds attention;      ///< of compute: fused attention kernels
  units::Seconds memory_bound;   ///< of compute: memory-bound kernels (the rest of compute is GEMMs)
  units::Seconds tp_comm;        ///< home-stage tensor-parallel collectives not hidden
  units::Seconds cp_comm;        ///< home-stage context-parallel K/V exchange not hidden
  units::Seconds ep_comm;        ///< home-stage MoE dispatch and combine not hidden
  units::Seconds host;           ///< home-stage GPU idle waiting on the host to issue kernels
  units::Seconds pp_comm;        ///< pipeline transfers on the path
  units::Seconds dp_comm;        ///< data-parallel communication on the path (tail, ZeRO-3 inside passes)
  units::Seconds optimizer;      ///< the optimizer step of the stage that ends the step
  units::Seconds pipeline_wait;  ///< other stages' passes on the path (the bubble: fill, drain, imbalance)
  int64_t home_stage = 0;        ///< the stage with the most pass time on the path
  int64_t end_stage = 0;         ///< the stage whose tail ends the step
  std::vector<StageWait> waits;  ///< per other stage on the path, in stage order; times sum to pipeline_wait

  /// The sum of the parts (the step time).
  [[nodiscard]] units::Seconds total() const {
    return compute + tp_comm + cp_comm + ep_comm + host + pp_comm + dp_comm + optimizer + pipeline_wait;
  }
};

}  // namespace clustersim::sim
