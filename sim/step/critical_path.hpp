// The critical path of one simulated training step, split by what it was doing (issue 29).
//
// The pipeline executor records, for every pass, when it started and ended and what it waited for: the same
// stage's previous pass (the stage's in-order stream) or its input (the activation or gradient of the
// neighbouring virtual stage, plus the transfer). Walking back from the event that ends the step to time 0,
// always through the predecessor that finished last (the same stage on a tie), gives one chain of passes,
// transfers and tails that tiles [0, step time] without a gap: the critical path (Daydream, ATC 2020; dPRO,
// MLSys 2022, call the same chain the "critical path" of the dependency graph).
//
// Attribution. Every instant of the step is counted once:
// - The *home stage* is the stage with the most pass time: the stage the pipeline runs at the pace of (the
//   busiest one; the last stage of a balanced 1F1B). While it runs a pass, the instant counts by the pass's
//   kinds: compute kernels, exposed tensor-, context-, expert-parallel communication, host issue, ZeRO-3
//   data-parallel traffic inside the pass.
// - While the home stage runs no pass (before its first, between passes, after its last), the instant counts by
//   what the critical path runs then: another stage's pass is *pipeline wait* (fill, drain, imbalance: the home
//   stage waiting on that stage, kept with what that stage was doing, CriticalPath::waits); a pipeline transfer
//   is exposed pipeline communication; the tail of the stage that ends the step is exposed data-parallel
//   communication (gradient reduction past the last backward, ZeRO parameter all-gather) and optimizer.
// In a balanced 1F1B of p stages and m microbatches the pipeline wait is (p-1)/(m+p-1) of the step's passes,
// and with v chunks per rank (p-1)/(v m+p-1), the analytic bubbles (Narayanan et al., SC21, Sec. 2.2).
#pragma once

#include <cstdint>
#include <vector>

#include "models/units.hpp"

namespace clustersim::sim {

/// What one stage was doing while the home stage waited on it along the critical path, by kind; the parts sum
/// to `time`.
struct StageWait {
  int64_t stage = 0;     ///< pipeline rank
  units::Seconds time;   ///< its passes on the path while the home stage had none
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
  units::Seconds compute;        ///< home-stage compute kernels
  units::Seconds attention;      ///< of compute: fused attention kernels
  units::Seconds memory_bound;   ///< of compute: memory-bound kernels (the rest of compute is GEMMs)
  units::Seconds tp_comm;        ///< home-stage tensor-parallel collectives not hidden
  units::Seconds cp_comm;        ///< home-stage context-parallel K/V exchange not hidden
  units::Seconds ep_comm;        ///< home-stage MoE dispatch and combine not hidden
  units::Seconds host;           ///< home-stage GPU idle waiting on the host to issue kernels
  units::Seconds pp_comm;        ///< pipeline transfers on the path while the home stage has no pass
  units::Seconds dp_comm;        ///< data-parallel communication on the path (tail, ZeRO-3 inside passes)
  units::Seconds optimizer;      ///< the optimizer step of the stage that ends the step
  units::Seconds pipeline_wait;  ///< other stages' passes on the path while the home stage has none (the bubble)
  int64_t home_stage = 0;        ///< the stage with the most pass time (the pipeline's pace)
  int64_t end_stage = 0;         ///< the stage whose tail ends the step
  std::vector<StageWait> waits;  ///< per stage waited on, in stage order; times sum to pipeline_wait

  /// The sum of the parts (the step time).
  [[nodiscard]] units::Seconds total() const {
    return compute + tp_comm + cp_comm + ep_comm + host + pp_comm + dp_comm + optimizer + pipeline_wait;
  }
};

}  // namespace clustersim::sim
