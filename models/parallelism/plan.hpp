// A parallelism plan: how one training job is laid out over GPUs.
#pragma once

#include <cstdint>
#include <vector>

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
  /// ZeRO 1-2: the parameter all-gather after the optimizer overlapped with the next step's first forward pass
  /// (Megatron --overlap-param-gather); only its excess over that pass is exposed.
  bool overlap_param_gather = false;
  /// Pipeline send/recv overlapped with compute (Megatron --overlap-p2p-communication). Off (Megatron's
  /// default): a stage waits for its send to complete before its next pass, as Megatron's blocking
  /// send_forward_recv_backward / send_backward_recv_forward exchanges do.
  bool overlap_p2p_comm = false;
  /// Backward tensor-parallel all-reduce (reduce-scatter with sequence parallelism) of a column-parallel
  /// linear's input gradient overlapped with its weight-gradient GEMM (Megatron
  /// --async-tensor-model-parallel-allreduce, LinearWithGradAccumulationAndAsyncCommunication, 2022 on).
  bool async_tensor_parallel_allreduce = true;
  /// Tensor-parallel all-gathers and reduce-scatters (sequence parallelism) overlapped with the GEMMs that
  /// consume and produce them, chunk by chunk (Megatron --tp-comm-overlap, Transformer Engine userbuffers).
  bool tp_comm_overlap = false;

  [[nodiscard]] int64_t gpus() const { return tensor * pipeline * data; }
};

/// Decoder layers of each virtual stage (model chunk) vs = chunk * pipeline + rank, for `num_layers` over
/// `pipeline` x `virtual_stages` chunks: as even as possible. When they do not divide evenly, the remainder goes
/// one layer each to the middle chunks first and to the first and last chunks (which also hold the embedding
/// and the LM head) only when every middle chunk has one: Llama 3 405B's 126 layers on 16 stages give 7 to the
/// first and last stage and 8 to the others (Dubey et al. 2024, Sec. 3.3.2), as Megatron-Core's
/// --decoder-first/last-pipeline-num-layers would. Requires num_layers >= pipeline x virtual_stages >= 1;
/// throws std::invalid_argument otherwise.
std::vector<int64_t> layers_per_virtual_stage(int64_t num_layers, int64_t pipeline, int64_t virtual_stages);

}  // namespace clustersim::models
