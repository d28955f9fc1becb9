// A parallelism plan: how one training job is laid out over GPUs.
#pragma once

#include <cstdint>

namespace clustersim::models {

/// Tensor x pipeline x data parallel layout (Megatron-LM PTD-P, Narayanan et al. SC'21).
/// GPUs = tensor * pipeline * data. Rank order (Megatron): tensor fastest, then data, then pipeline, so a
/// tensor-parallel group sits inside one node when tensor <= GPUs per node.
struct ParallelismConfig {
  int64_t tensor = 1;          ///< t: tensor-parallel group size
  int64_t pipeline = 1;        ///< p: pipeline stages
  int64_t data = 1;            ///< d: data-parallel replicas
  int64_t virtual_stages = 1;  ///< v: model chunks per pipeline rank (interleaved 1F1B when > 1)
  bool sequence_parallel = false;  ///< Megatron sequence parallelism (reduce-scatter/all-gather for TP)
  int64_t zero_stage = 0;          ///< ZeRO stage over the data-parallel group, 0-3
  bool overlap_grad_reduce = false;  ///< gradient reduction overlapped with the last backward, by bucket

  [[nodiscard]] int64_t gpus() const { return tensor * pipeline * data; }
};

}  // namespace clustersim::models
