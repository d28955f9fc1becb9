// A parallelism plan: how one training job is laid out over GPUs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::models {

/// How context-parallel ranks exchange keys and values (Megatron-Core --cp-comm-type; Transformer Engine
/// DotProductAttention cp_comm_type):
///   p2p:       ring attention (Liu et al. 2023): each rank's K/V block travels around the context-parallel
///              ring, one hop per step, each hop under the attention of the block that arrived before it; the
///              backward sends K/V again and the K/V gradients back (TE AttnFuncWithCPAndKVP2P);
///   all_gather: the K/V blocks are all-gathered before attention, under the local block's attention only; the
///              backward all-gathers them again and ring-shifts the K/V gradients (PyTorch context_parallel with
///              torchtitan's default rotate method "allgather"; TE AttnFuncWithCPAndKVAllGather).
enum class ContextComm { p2p, all_gather };

/// Tensor x context x pipeline x data parallel layout (Megatron-LM PTD-P, Narayanan et al. SC'21; context
/// parallelism, Megatron-Core). GPUs = tensor * context * pipeline * data. Rank order (Megatron-Core
/// parallel_state): tensor fastest, then context, data, pipeline, so a tensor-parallel group sits inside one
/// node when tensor <= GPUs per node. Context parallelism splits every sequence into `context` shards (2 x
/// context chunks, rank r holding chunks r and 2 context - 1 - r, which balances causal attention); the
/// gradients and ZeRO shards are reduced over data x context ranks, which hold the same parameters.
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
  int64_t context = 1;                          ///< c: context-parallel group size (sequence shards)
  ContextComm context_comm = ContextComm::p2p;  ///< how the context-parallel ranks exchange K/V
  /// MoE layers (Megatron-Core "MoE parallel folding", Liu et al. 2025, arXiv 2504.14960): the tensor x
  /// context x data ranks of a pipeline stage are folded again as expert_tensor x expert x expert-data ranks,
  /// expert_tensor fastest. The experts are split over `expert` ranks and each expert's MLP over
  /// `expert_tensor`; expert gradients are reduced over the expert-data ranks, (t c d) / (expert x
  /// expert_tensor).
  int64_t expert = 1;         ///< EP: expert-parallel group size
  int64_t expert_tensor = 1;  ///< ETP: expert-tensor-parallel group size
  /// Decoder layers of the first and of the last pipeline stage when set (Megatron-Core
  /// --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers; 0: the automatic split of
  /// layers_per_virtual_stage). The other stages share the rest evenly. Recipes shorten the stages that also
  /// hold the embedding, the LM head or multi-token prediction.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;

  [[nodiscard]] int64_t gpus() const { return tensor * context * pipeline * data; }
  /// Ranks holding the same parameters, over which gradients are reduced and ZeRO shards: data x context.
  [[nodiscard]] int64_t replicas() const { return data * context; }
  /// Ranks holding the same experts, over which expert gradients are reduced and their ZeRO shards:
  /// tensor x context x data / (expert x expert_tensor) (at least 1).
  [[nodiscard]] int64_t expert_replicas() const {
    const int64_t folded = expert * expert_tensor;
    return folded > 0 && (tensor * context * data) % folded == 0 ? tensor * context * data / folded : 1;
  }
};

std::string_view to_string(ContextComm c);
/// Parses "p2p" | "all_gather"; std::nullopt otherwise.
std::optional<ContextComm> parse_context_comm(std::string_view name);

/// Decoder layers of each virtual stage (model chunk) vs = chunk * pipeline + rank, for `num_layers` over
/// `pipeline` x `virtual_stages` chunks: as even as possible. When they do not divide evenly, the remainder goes
/// one layer each to the middle chunks first and to the first and last chunks (which also hold the embedding
/// and the LM head) only when every middle chunk has one: Llama 3 405B's 126 layers on 16 stages give 7 to the
/// first and last stage and 8 to the others (Dubey et al. 2024, Sec. 3.3.2), as Megatron-Core's
/// --decoder-first/last-pipeline-num-layers would. Requires num_layers >= pipeline x virtual_stages >= 1;
/// throws std::invalid_argument otherwise.
std::vector<int64_t> layers_per_virtual_stage(int64_t num_layers, int64_t pipeline, int64_t virtual_stages);

/// Decoder layers of each virtual stage of layout `p`: layers_per_virtual_stage, unless p sets
/// first_stage_layers or last_stage_layers (then virtual_stages must be 1): the set stages hold those layers and
/// the others num_layers minus them, split evenly. Throws std::invalid_argument when the rest does not split
/// evenly over at least one other stage (pipeline_split_problem says why, for the loader).
std::vector<int64_t> layers_per_virtual_stage(int64_t num_layers, const ParallelismConfig& p);

/// A layout rule a configuration breaks: the scenario key to blame and what is wrong.
struct LayoutProblem {
  std::string key;      ///< "parallelism.tensor"
  std::string message;  ///< "must divide model.num_attention_heads (16), got 32"
};

/// Why layout `p` cannot place `num_layers` layers with its set first / last stage sizes, or nullopt when it
/// can (or sets none).
std::optional<LayoutProblem> pipeline_split_problem(int64_t num_layers, const ParallelismConfig& p);

}  // namespace clustersim::models
