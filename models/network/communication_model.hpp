// The seam between the step model and the network: how long the collectives of a communication pattern take.
//
// CollectiveModel (collective_model.hpp) implements it on the flow-level network; tests may substitute a
// closed form.
#pragma once

#include "models/network/collectives.hpp"

namespace clustersim::models {

struct CollectiveTiming;

/// Slowdown of compute kernels while a data-parallel collective runs beside them, as a fraction of the time
/// the two overlap: 0.189. Measured: mean computational slowdown of GPT and Llama training kernels overlapped
/// with NCCL collectives on A100, H100, MI250 and MI210, 18.9 % (max 40 %) (Lee et al., "Characterizing
/// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning: Performance and Power
/// Implications", arXiv 2507.03114, 2025). Mechanism: NCCL runs one thread block per channel on the SMs the
/// GEMMs would use (24 blocks of an H100's 132 = 18 %: an all-gather beside a one-wave GEMM, NVIDIA developer
/// forum thread 337991) and shares the HBM bandwidth. Tensor-parallel overlap (Transformer Engine userbuffers)
/// has its own model (step_program.cpp overlapped_tp).
inline constexpr double kOverlapComputeSlowdown = 0.189;

/// Time of communication operations. Implementations are thread-safe.
class CommunicationModel {
 public:
  virtual ~CommunicationModel() = default;
  /// Time of `op` run by every group of `pattern` at once; `bytes` per rank as in CollectiveModel::time.
  /// All-reduces use the configured algorithm (or the automatic choice). Zero for groups of one.
  [[nodiscard]] virtual CollectiveTiming collective_time(CollectiveOp op, const CommPattern& pattern,
                                                         units::Bytes bytes) const = 0;
};

}  // namespace clustersim::models
