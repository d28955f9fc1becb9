// The work of a GPT/Llama-style transformer decoder on one tensor-parallel rank: ops with FLOPs, bytes, GEMM
// shapes and kernel launches per layer and per microbatch, and the FLOP and parameter counts papers report.
//
// Layer structure (Megatron-LM, Shoeybi et al. 2019, Fig. 3; Narayanan et al. SC'21 Sec. 2.3): pre-norm,
// QKV projection (column-parallel), [RoPE on Q and K], attention core, output projection (row-parallel),
// residual (bias-dropout-add), norm, MLP fc1 (column-parallel; gate and up for SwiGLU), activation, fc2
// (row-parallel), residual. With tensor parallelism t each rank holds a/t heads and f/t MLP columns; two
// all-reduces of b*s*h elements per layer per pass join the ranks (or, with sequence parallelism,
// reduce-scatter + all-gather of the same volume, and norm/dropout work divided by t: Korthikanti et al.
// 2022, Sec. 4.2.2).
//
// Notation: b micro batch, s sequence, h hidden, a heads, g key/value groups, d = h/a head dim, f MLP width,
// V vocabulary, t tensor-parallel size, e activation bytes per element, T = b s tokens, T_r = T / t in
// sequence-parallel regions (T otherwise), q = (a/t) d and k = (g/t) d the per-rank Q and K/V widths.
//
// Memory-bound ops by KernelFusion (bytes read + written per layer forward; one kernel each unless stated):
//                       fused / compiled                          eager (PyTorch ATen kernels)
//   norm (x2)           2 T_r h e                                  36 T_r h, 7 kernels: to(fp32) 2+4, pow 4+4,
//                                                                  mean 4, x*rsqrt 4+4, type_as 4+2,
//                                                                  *weight 2+2 (ATen rms_norm composite)
//   RoPE (Q and K)      2 T (q + k) e                              20 T (q + k), 3 kernels each of Q, K:
//                                                                  float() 2+4, complex mul 4+4, type_as 4+2
//   repeat_kv (GQA)     -                                          2 T (k + q) e, 2 kernels (K, V expanded
//                                                                  to every head)
//   attention output    -                                          2 T q e (transpose().contiguous())
//   residual (x2)       T_r h (3e + 1) with dropout (mask), 3 T_r h e without
//   activation          GeLU 2 T f e; SwiGLU 3 T f e               SwiGLU: silu 2 T f e + mul 3 T f e
//   dropout (eager)     -                                          T h (2e + 1) after attention and after MLP
// Backward of a memory-bound op reads the output gradient and the saved input and writes the input gradient:
// 1.5x the forward's bytes (forward reads one tensor and writes one, backward moves three). Backward of a GEMM
// Y = X W is two GEMMs of the same FLOPs (dX = dY W^T and dW = X^T dY).
//
// Attention core: unfused (Megatron without FlashAttention: scores GEMM, fused scale-mask-softmax, dropout,
// context GEMM over the full s x s scores), or one FlashAttention kernel (Dao et al. 2022) that skips the
// masked upper half of a causal mask: it executes (1 + 128/s)/2 of the full s x s work with 128-row blocks.
// Its FLOPs are counted, as the papers do, over the full s x s (4 b (a/t) s^2 d forward); backward counts
// 2.5x the forward (5 matmuls against 2: it recomputes S = Q K^T; Dao et al. 2022, Sec. 3.1).
//
// FP8 (Transformer Engine, torchao float8): the linear layers' GEMMs (QKV, output projection, fc1, fc2:
// forward, dgrad and wgrad) run at the FP8 rate; the attention core and the LM head stay 16-bit (TE and
// Megatron keep the output layer in bf16; torchtitan converts only the transformer blocks' nn.Linear). Each
// FP8 GEMM input that is not produced in FP8 by a fused norm is cast and transposed: a memory-bound pass
// reading e and writing 1 + 1 bytes per element, in forward for the inputs of the output projection and fc2,
// in backward for every linear's output gradient (TE cast_transpose; NVIDIA Transformer Engine docs, "FP8
// primer"). The once-per-step cast of the weights is counted with the optimizer (step_program.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/parallelism/plan.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

enum class OpClass {
  gemm,             ///< timed by ComputeModel::gemm_time on `gemm`
  memory_bound,     ///< timed by ComputeModel::memory_time on `bytes`
  fused_attention,  ///< FlashAttention: `flops` x executed_fraction at the device's attention rate
};

/// What a GEMM computes, for tensor-parallel communication overlap and FP8.
enum class GemmRole {
  attention_in,   ///< Q, K, V projection (column-parallel)
  attention_out,  ///< output projection (row-parallel)
  mlp_in,         ///< fc1 / gate and up (column-parallel)
  mlp_out,        ///< fc2 / down (row-parallel)
  attention_core, ///< scores and context batched GEMMs
  lm_head,        ///< output layer
  router,         ///< an MoE layer's router (gate) GEMM
  expert,         ///< the routed experts' GEMMs (grouped over the local experts)
};

/// One kernel (or a few kernels of one op) of one microbatch on one tensor-parallel rank.
struct Op {
  std::string name;
  OpClass op_class = OpClass::gemm;
  GemmShape gemm;         ///< GEMM shape (op_class == gemm)
  units::Bytes bytes;     ///< HBM traffic of a memory-bound op
  units::Flops flops;     ///< math FLOPs as counted (0 for memory-bound ops)
  /// Share of `flops` the kernel executes: (1 + 128/s)/2 for causal FlashAttention, 1 otherwise.
  double executed_fraction = 1.0;
  int kernels = 1;                        ///< kernel launches (CPU launch cost)
  GemmRole role = GemmRole::attention_core;  ///< for GEMMs
  bool fp8 = false;                       ///< a GEMM at the FP8 rate
  /// A weight-gradient GEMM that accumulates into the fp32 main gradient (Megatron's
  /// --gradient-accumulation-fusion: fused_weight_gradient_dense / TE fuse_wgrad_accumulation): its output is
  /// read and written at 4 bytes each (ComputeModel::gemm_time's output_bytes = 8).
  bool accumulates_fp32 = false;
  AttentionKernel attention_kernel = AttentionKernel::flash2;  ///< for fused attention
  /// Fused attention: the kernel call as measured tables are keyed (ComputeModel::attention_time): head
  /// dimension of the queries and keys, the keys one call iterates over (the sequence; with ring attention the
  /// context-parallel block of s / c), a causal mask, and whether this is the backward kernel.
  int64_t attention_head_dim = 128;
  int64_t attention_key_length = 0;
  bool attention_causal = true;
  bool attention_backward = false;
};

/// Tensor-parallel communication of one pass of one layer: `count` collectives of `bytes_each` (the full
/// b*s*h*e activation). Without sequence parallelism each is an all-reduce; with it, `with_sequence_parallel`
/// says what replaces it: a reduce-scatter + all-gather pair (a layer's, Korthikanti et al. 2022 Sec. 4.2.2), or
/// one all-gather (the final norm's output before the LM head) or one reduce-scatter (the embedding's output).
struct TensorParallelTraffic {
  enum class Sequence { pair, all_gather, reduce_scatter };
  int count = 0;
  units::Bytes bytes_each;
  Sequence with_sequence_parallel = Sequence::pair;
};

/// An MoE layer's expert-parallel traffic per pass (forward, or backward: the same volumes in reverse): the
/// dispatch and the combine, each an all-to-all of `all_to_all_bytes` sent per rank over the expert-parallel
/// group (alltoall dispatcher) or an all-gather / reduce-scatter of `all_gather_bytes` over the expert x
/// expert-tensor group (allgather dispatcher), plus, with expert_tensor > 1 and the alltoall dispatcher, an
/// all-gather and a reduce-scatter of `expert_tensor_bytes` over the expert-tensor group; with the flex
/// dispatcher, `token_bytes` (one copy of the rank's routed tokens), sent flex_dispatch_copies times over the
/// network and NVLink (expert_comm_time places them on the groups' nodes). Sizes are the busiest rank's (the
/// mean times moe_rank_imbalance).
struct ExpertTraffic {
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  units::Bytes all_to_all_bytes;
  units::Bytes all_gather_bytes;
  units::Bytes expert_tensor_bytes;
  units::Bytes token_bytes;  ///< flex: imbalance x routed tokens x h x e
  int64_t experts = 0;       ///< flex: E
  int64_t topk = 0;          ///< flex: k
  double imbalance = 1.0;  ///< the busiest rank's routed tokens over the mean
  /// Kernel time the combine can hide under: the shared expert's GEMMs and activation (their op indices in
  /// the pass's op list), with moe_shared_expert_overlap.
  std::vector<size_t> shared_expert_ops;
  [[nodiscard]] bool any() const {
    return all_to_all_bytes.value() > 0.0 || all_gather_bytes.value() > 0.0 || token_bytes.value() > 0.0;
  }
};

/// Where an MoE layer's dispatch and combine run among its ops (indices into LayerWork::forward / backward), and
/// where the host waits for the GPU. The dispatch runs before forward[dispatch] and the combine before
/// forward[combine]; in backward the combine's gradient runs before backward[backward_combine] and the
/// dispatch's before backward[backward_dispatch]. The host waits (a device-to-host copy and stream
/// synchronisation) before forward[host_wait] and before the same op of a full recompute, once per MoE layer,
/// when the layer's shapes depend on the routing (moe_host_wait).
struct MoeIssue {
  bool moe = false;
  size_t dispatch = 0;
  size_t combine = 0;
  size_t backward_combine = 0;
  size_t backward_dispatch = 0;
  bool host_waits = false;
  size_t host_wait = 0;
};

/// Where a Megatron-Core MoE layer's host reads the routing's token counts before it can issue the rest of the
/// layer (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess, and the
/// flex dispatcher on DeepEP):
///   before_dispatch: dropless routing (capacity_factor 0) with any dispatcher: the all-to-all's split sizes and
///     the grouped GEMM's rows per expert are host values ("A synchronization is needed before expert parallel
///     AlltoAll communication to get the input_splits and output_splits CPU values", cuda_sync_point
///     "before_ep_alltoall"; DeepEP's normal dispatch: "the CPU will wait for GPU's signal to arrive",
///     deepseek-ai/DeepEP README; the allgather dispatcher's tokens_per_expert.cpu());
///   before_permutation: token dropping without padding to capacity (the permuted token count num_out_tokens,
///     cuda_sync_point "before_permutation_1");
///   none: token dropping with padding to capacity (--moe-pad-expert-input-to-capacity): every shape is static.
enum class MoeHostWait { none, before_permutation, before_dispatch };
MoeHostWait moe_host_wait(const TrainingConfig& training);

/// The ops of one transformer layer for one microbatch on one TP rank.
struct LayerWork {
  std::vector<Op> forward;
  std::vector<Op> backward;   ///< gradient computation, without recompute
  std::vector<Op> recompute;  ///< forward ops re-run before backward: all of them (full), the attention
                              ///< core (selective), every second GEMM and every memory-bound op
                              ///< (selective_op), none
  TensorParallelTraffic tp_forward;    ///< per forward pass (2 all-reduces when t > 1)
  TensorParallelTraffic tp_backward;   ///< per backward pass
  TensorParallelTraffic tp_recompute;  ///< per recompute (full recompute repeats the forward's)
  /// Per overlappable tp_backward collective (the input gradients of the column-parallel linears, attention
  /// then MLP), the indices into `backward` of the weight-gradient GEMMs it can run under (Megatron's async
  /// tensor-parallel all-reduce).
  std::vector<std::vector<size_t>> tp_backward_hidden_by;
  /// Context parallelism (c > 1): the keys and values of this rank's shard on this tensor rank, b (s/c) 2 (g/t)
  /// d e bytes (b (s/c) 2 (a/t) d e for PyTorch models, whose K/V are repeated to every head before
  /// attention), the block that ring attention passes on at each step; 0 without context parallelism.
  units::Bytes context_kv_block;
  ExpertTraffic expert_forward;   ///< MoE layers: per forward pass (and per recompute, with full recompute)
  ExpertTraffic expert_backward;  ///< MoE layers: per backward pass
  /// Where the MLP (or MoE) block starts in `forward` (its pre-norm), and how many of `backward`'s ops are the
  /// MLP block's (the backward runs the blocks in reverse, so they come first): the split a merged forward /
  /// backward schedule overlaps communication with (moe_a2a_overlap).
  size_t mlp_forward_begin = 0;
  size_t mlp_backward_end = 0;
  /// MoE layers: where the expert-parallel communication and the host's synchronisation fall among the ops, for
  /// the host queue (models/parallelism/host_queue.hpp). See MoeIssue.
  MoeIssue moe_issue;
};

/// Options of the layer that are not part of the model shape.
struct LayerOptions {
  int64_t tensor = 1;               ///< t
  bool sequence_parallel = false;   ///< Megatron sequence parallelism
  /// c: context-parallel size. Each rank holds s / c tokens of every sequence (T = b s / c), so every op but
  /// attention does 1/c of the work; attention computes its s / c queries against all s keys: 1/c of the
  /// full s x s work, the causal share of it balanced over the ranks (chunks r and 2c - 1 - r).
  int64_t context = 1;
  /// How the context-parallel ranks exchange K/V: with ring attention (p2p) each attention call covers one block
  /// of s / c keys; with all_gather one call covers all s.
  ContextComm context_comm = ContextComm::p2p;
  /// An MoE layer (the MLP replaced by the router, the routed experts and the shared expert), laid out over
  /// `expert` x `expert_tensor` folded ranks (ParallelismConfig::expert).
  bool moe = false;
  int64_t expert = 1;
  int64_t expert_tensor = 1;
  friend bool operator==(const LayerOptions&, const LayerOptions&) = default;
};

/// Share of the full s x s attention work a causal FlashAttention kernel executes with 128-row blocks:
/// (n (n + 1) / 2) / n^2 blocks for n = s / 128, i.e. (1 + 128/s) / 2 (1 for s <= 128).
double causal_attention_fraction(int64_t seq_length);

/// Ops of one decoder layer. Throws std::invalid_argument if the shape is not divisible by `tensor` or the
/// sequence by `context`.
LayerWork transformer_layer(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// transformer_layer(model, training, options), shared and never changed: the calling thread keeps the layers of
/// its last 64 distinct inputs (a layout search's points repeat a few layer shapes: the step's other
/// layout dimensions, pipeline and data, leave the layer alone) and returns a kept one for an input equal to
/// its own (every field of the three compared, the doubles by value). transformer_layer reads nothing but its
/// arguments, so an equal input gives the same layer. Throws as transformer_layer (nothing is kept then).
std::shared_ptr<const LayerWork> shared_transformer_layer(const ModelConfig& model, const TrainingConfig& training,
                                                          const LayerOptions& options);

/// The last pipeline stage's extra work: final norm, LM head GEMM (vocabulary split over t) and the
/// vocab-parallel cross-entropy (logits upcast to fp32).
LayerWork lm_head(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// The first stage's extra work: vocab-parallel embedding lookup (one all-reduce of b*s*h when t > 1).
LayerWork embedding(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// A multi-token-prediction module's own work besides its transformer block, embedding lookup and output head
/// (ModelConfig::mtp_num_layers; Megatron-Core MultiTokenPredictionLayer): the RMSNorms of the previous
/// depth's hidden state and of the next token's embedding, their concatenation, and the 2h -> h projection
/// (eh_proj, column-parallel over t). FLOPs 2 T (2h)(h/t) forward for T tokens of the microbatch.
LayerWork mtp_projection(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// Sum of op FLOPs (as counted).
units::Flops total_flops(const std::vector<Op>& ops);

/// Model FLOPs of one iteration, no recomputation (the MFU numerator; Korthikanti et al. 2022 Sec. 6,
/// Chowdhery et al. 2022 App. B): B s tokens x 3 (forward + backward) x [l (2 W_layer + 4 s h) + 2 h V],
/// W_layer = h (h + 2 g d) + h^2 + (1 or 2) h f + f h weights per layer; attention counted over the full
/// s x s score matrix as Megatron does. For multi-head attention and f = 4h this is exactly
/// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
units::Flops model_flops_per_iteration(const ModelConfig& model, const TrainingConfig& training);

/// Hardware FLOPs of one iteration: model FLOPs plus the FLOPs of the recompute ops (LayerWork::recompute, as
/// counted) of every layer that recomputes (recomputed_layers of each of the pipeline x virtual_stages
/// chunks). For full recompute with multi-head attention and f = 4h this is Megatron SC'21's
/// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), the convention of its "TFLOP/s per GPU"
/// (shared/validation/README.md).
units::Flops hardware_flops_per_iteration(const ModelConfig& model, const TrainingConfig& training,
                                          const ParallelismConfig& parallelism = {});

/// Layers of a model chunk of `chunk_layers` layers that recompute their forward: all of them, or with full
/// recompute at most training.recompute_num_layers (Megatron's block method counts per chunk).
int64_t recomputed_layers(const TrainingConfig& training, int64_t chunk_layers);

/// Parameters of one decoder layer: the four GEMMs' weights (GEMM weights of gated MLPs included), their
/// biases and two norms (gain + bias).
double layer_parameter_count(const ModelConfig& model);

/// The routed experts' parameters of one MoE layer, E x the expert MLP's GEMM weights (0 for a dense model).
double moe_layer_expert_parameters(const ModelConfig& model);

/// Parameters of the whole model: layer_parameter_count of each dense layer, an MoE layer's attention, norms,
/// router, shared expert and all its routed experts, + V h (word embedding) + s h (learned positions, none with
/// RoPE) + 2 h (final norm) + V h again when the output layer is not tied to the embedding. The
/// multi-token-prediction modules are not counted (DeepSeek-V3's 671 B leaves out its 14 B MTP module; they are
/// in chunk_parameters, which memory and the optimizer use).
double parameter_count(const ModelConfig& model);

/// Parameters held by one GPU of each model chunk, before ZeRO sharding, virtual stage by virtual stage
/// (p x v entries, virtual stage c p + r is chunk c of rank r): the chunk's layers split over t, the word
/// embedding (V h / t) and learned positions (s h) on virtual stage 0, the output layer (V h / t: Megatron's
/// tied copy when p > 1, or the untied output weight) and the final norm (2 h) on the last virtual stage.
/// Layers per chunk as layers_per_virtual_stage(num_layers, parallelism). Summed over all chunks and multiplied
/// by t (layer and vocabulary parts) it gives parameter_count, plus the tied copy when p > 1; the last virtual
/// stage adds the multi-token-prediction modules (block, 2h x h / t projection, 3 h of norms each, and the word
/// embedding V h / t when untied and p > 1).
/// MoE layers count their attention, norms and shared expert over t and their router whole; their routed
/// experts are not included (chunk_expert_parameters).
std::vector<double> chunk_parameters(const ModelConfig& model, const ParallelismConfig& parallelism);

/// The routed experts' parameters held by one GPU of each model chunk (p x v entries, as chunk_parameters): the
/// chunk's MoE layers (the last also its MoE multi-token-prediction blocks) x moe_layer_expert_parameters /
/// (expert x expert_tensor). Zero for a dense model.
std::vector<double> chunk_expert_parameters(const ModelConfig& model, const ParallelismConfig& parallelism);

}  // namespace clustersim::models
