// One forward or backward pass of a fully sharded data-parallel model (ZeRO-3, PyTorch FSDP, DeepSpeed stage 3)
// as two streams: the compute stream runs the units' kernels in order, the communication stream the units'
// parameter all-gathers and gradient reduce-scatters, one at a time (the collectives of one process group are
// serialised on its NCCL stream: PyTorch ProcessGroupNCCL issues every collective of a group on one stream).
//
// Forward (units in model order, i = 0 .. n-1). The all-gather of unit i starts when the previous collective
// has ended and, with at most `max_gathers_in_flight` = k units gathered at once, when unit i-k's compute
// has ended and its parameters were freed (FSDP1's limit_all_gathers rate limiter, k = 2; FSDP2's implicit
// prefetch of the next unit, also k = 2; PyTorch FSDP docs and torch/distributed/fsdp/_runtime_utils.py);
// unit i's compute starts when unit i-1's has ended and its all-gather has:
//   G_i = max(GE_{i-1}, CE_{i-k}),  GE_i = G_i + g_i,  C_i = max(CE_{i-1}, GE_i),  CE_i = C_i + c_i.
// Backward (units in backward order, j = 0 .. n-1: the last layer first), FSDP's BACKWARD_PRE prefetch: when
// unit j's backward starts, the all-gather of unit j+1 is issued; when it ends, its reduce-scatter is. The
// communication stream runs them in that order, each no earlier than issued:
//   AG_0 first; at B_j start: AG_{j+1}; at B_j end: RS_j;   B_j = max(BE_{j-1}, AG_j end),  BE_j = B_j + c_j.
// The pass ends when both streams are done: the last reduce-scatter is exposed, and so is the first
// all-gather of each pass. Units whose parameters stay gathered (FSDP's root, or a block with
// reshard_after_forward = false) have g = 0 in the pass that does not gather them.
//
// Contention: a unit's kernels run slower while a collective runs beside them, since NCCL's kernels occupy
// SMs (one thread block per channel; an H100 all-gather launches 24 blocks of 132 SMs) and memory bandwidth.
// With `contention` = kappa, a unit's compute becomes c_i + kappa x (the time the communication stream is busy
// during the unit's window), the windows taken from the schedule without contention (one fixed-point step).
// The stretch shows in total, so exposed() counts it with the communication that caused it. Measured
// kappa: kOverlapComputeSlowdown (communication_model.hpp).
#pragma once

#include <span>

#include "models/units.hpp"

namespace clustersim::models {

/// One sharded unit (a transformer block, or the root: embedding, final norm and output layer) in one pass.
struct ShardedUnit {
  units::Seconds compute;  ///< the unit's kernels in this pass (and its tensor-parallel communication)
  units::Seconds gather;   ///< all-gather of its parameters before it runs in this pass (0: already gathered)
  units::Seconds reduce;   ///< backward: reduce-scatter of its gradients after it (0 in forward)
};

struct ShardedPassTime {
  units::Seconds total;    ///< from the pass's start until both streams are done
  units::Seconds compute;  ///< sum of the units' compute
  /// total - compute: the communication the compute stream waited for or that ran past it.
  [[nodiscard]] units::Seconds exposed() const { return total - compute; }
};

inline constexpr int kDefaultGathersInFlight = 2;

/// Forward pass of `units` in model order, compute slowed by `contention` (in [0, 1)) while the stream
/// gathers. Throws std::invalid_argument if max_gathers_in_flight < 1 or contention is outside [0, 1).
ShardedPassTime sharded_forward(std::span<const ShardedUnit> units,
                                int max_gathers_in_flight = kDefaultGathersInFlight, double contention = 0.0);

/// Backward pass of `units` in backward order (last layer first), BACKWARD_PRE prefetch. With
/// `one_reduce_in_flight` (FSDP2) the compute stream, after unit j's backward, waits for unit j-1's
/// reduce-scatter before it issues unit j's: B_{j+1} = max(BE_j, RS_{j-1} end, AG_{j+1} end).
/// `contention` as sharded_forward.
ShardedPassTime sharded_backward(std::span<const ShardedUnit> units, bool one_reduce_in_flight = false,
                                 double contention = 0.0);

}  // namespace clustersim::models
