// Shape of a decoder-only transformer and of its training run, as a scenario states them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/precision.hpp"

namespace clustersim::models {

/// Transformer decoder shape (GPT-style). All counts are plain integers; sizes are in elements.
struct ModelConfig {
  int64_t num_layers = 0;           ///< decoder layers, l
  int64_t hidden_size = 0;          ///< model width, h
  int64_t num_attention_heads = 0;  ///< query heads, a
  int64_t num_query_groups = 0;     ///< key/value heads for grouped-query attention; 0 or a = multi-head
  int64_t ffn_hidden_size = 0;      ///< MLP inner width; 0 = 4h
  int64_t vocab_size = 0;           ///< V
  int64_t seq_length = 0;           ///< s, tokens per sequence
  bool gated_mlp = false;           ///< SwiGLU (Llama): fc1 produces 2 x ffn columns; false: GeLU (GPT)
  /// Rotary position embedding (Su et al. 2021; Llama): applied to Q and K in every layer, no position-embedding
  /// table. false: learned absolute positions (GPT-2/3, Megatron's default), an s x h table added at the input.
  bool rope = false;
  /// Hidden and attention dropout probability (Megatron-LM's default 0.1; Llama recipes 0). With 0 there are no
  /// dropout kernels and no dropout masks.
  double dropout = 0.1;
  /// The LM head reuses the word-embedding matrix (GPT, Megatron's default). false: a separate V x h output
  /// weight (Llama 3, Megatron --untie-embeddings-and-output-weights).
  bool tie_embeddings = true;
  /// Width of one attention head, d (Megatron --kv-channels); 0 = h / a. Qwen3 uses 128 with h = 4096 and 64
  /// heads, so its Q projection is h x 8192.
  int64_t kv_channels = 0;
  /// Multi-head latent attention (DeepSeek-AI 2024, DeepSeek-V2 Sec. 2.1; Megatron --multi-latent-attention):
  /// Q from a q_lora_rank-wide latent (0: straight from h), K and V from one kv_lora_rank-wide latent, each
  /// head's query and key qk_head_dim wide plus a shared qk_pos_emb_head_dim-wide rotary part, values v_head_dim
  /// wide. DeepSeek-V3: 1536, 512, 128, 64, 128. num_query_groups and kv_channels do not apply.
  bool multi_latent_attention = false;
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 512;
  int64_t qk_head_dim = 128;
  int64_t qk_pos_emb_head_dim = 64;
  int64_t v_head_dim = 128;

  // Mixture of experts (Megatron-Core's names; Shazeer et al. 2017, Fedus et al. 2022 Switch, Jiang et al. 2024
  // Mixtral, DeepSeek-AI 2024): an MoE layer replaces the MLP with a router over num_experts routed experts
  // (each an MLP of width moe_ffn_hidden_size, gated like the dense MLP), of which moe_router_topk process each
  // token, plus an optional shared expert every token passes through.
  int64_t num_experts = 0;                          ///< E routed experts; 0 = a dense model
  int64_t moe_router_topk = 2;                      ///< k experts per token
  int64_t moe_ffn_hidden_size = 0;                  ///< f_e, one expert's MLP width; 0 = ffn()
  int64_t moe_shared_expert_intermediate_size = 0;  ///< f_s, the shared expert's width; 0 = none
  int64_t moe_layer_freq = 1;                       ///< every moe_layer_freq-th layer is an MoE layer
  int64_t num_dense_layers_first = 0;               ///< the first layers are dense (DeepSeek's first_k_dense)
  /// Multi-token prediction modules (DeepSeek-V3 report Sec. 2.2, arXiv 2412.19437; Megatron-Core
  /// --mtp-num-layers): each predicts one more future token from the previous depth's hidden state and the
  /// next token's embedding: two RMSNorms, a 2h -> h projection, one transformer block of the decoder's last
  /// layer kind, and the shared output head and its loss. Megatron-Core runs them on the last pipeline stage.
  int64_t mtp_num_layers = 0;

  [[nodiscard]] int64_t ffn() const { return ffn_hidden_size > 0 ? ffn_hidden_size : 4 * hidden_size; }
  [[nodiscard]] int64_t kv_heads() const { return num_query_groups > 0 ? num_query_groups : num_attention_heads; }
  [[nodiscard]] int64_t head_dim() const {
    return kv_channels > 0 ? kv_channels : hidden_size / num_attention_heads;
  }
  [[nodiscard]] bool moe() const { return num_experts > 0; }
  /// Width of one head's query and key (MLA: qk_head_dim + qk_pos_emb_head_dim; else head_dim()).
  [[nodiscard]] int64_t query_key_dim() const {
    return multi_latent_attention ? qk_head_dim + qk_pos_emb_head_dim : head_dim();
  }
  /// Width of one head's value (MLA: v_head_dim; else head_dim()).
  [[nodiscard]] int64_t value_dim() const { return multi_latent_attention ? v_head_dim : head_dim(); }
  [[nodiscard]] int64_t expert_ffn() const { return moe_ffn_hidden_size > 0 ? moe_ffn_hidden_size : ffn(); }
  /// Whether decoder layer `layer` (0-based) is an MoE layer: layer >= num_dense_layers_first and layer %
  /// moe_layer_freq == 0 (Megatron-Core's moe_layer_pattern for an integer --moe-layer-freq).
  [[nodiscard]] bool is_moe_layer(int64_t layer) const {
    return moe() && layer >= num_dense_layers_first && layer % std::max<int64_t>(1, moe_layer_freq) == 0;
  }
  /// Whether the multi-token-prediction blocks are MoE layers (they take the decoder's last layer kind).
  [[nodiscard]] bool mtp_is_moe() const { return is_moe_layer(num_layers - 1); }
  /// MoE layers among layers [first, first + count).
  [[nodiscard]] int64_t moe_layers_in(int64_t first, int64_t count) const {
    int64_t n = 0;
    for (int64_t l = first; l < first + count; ++l) n += is_moe_layer(l) ? 1 : 0;
    return n;
  }
  /// Every field equal (doubles by value): what the memos of values computed from a model compare.
  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

/// Activation recomputation: none; selective (Korthikanti et al. 2022: the attention core only, the fused
/// attention kernel's forward with FlashAttention, as Megatron-Core checkpoints its core-attention module); full (each
/// layer's forward re-run during backward from its stored input; Megatron --recompute-granularity full);
/// selective_op (PyTorch selective activation checkpointing with torchtitan's policy, torchtitan
/// models/llama*/parallelize_llama.py `_apply_ac_to_transformer_block`, "op" option: the outputs of matmuls and
/// of the attention kernel are saved, except every second matmul; everything else is recomputed).
enum class Recompute { none, selective, full, selective_op };

/// What Megatron-Core's selective recompute re-runs (--recompute-modules, TransformerConfig.recompute_modules),
/// as bits of TrainingConfig::recompute_modules: core_attn (the attention core, Korthikanti et al. 2022's
/// selective recompute, the default), mla_up_proj (MLA's query and key/value up-projections and RoPE: their
/// outputs, the attention's Q, K, V, are not stored), layernorm (the two pre-norms: their outputs are not
/// stored), moe_act (the routed experts' activation function: its output, fc2's input, is not stored), mlp (a
/// dense layer's MLP: only its input is stored). Megatron's moe and shared_experts modules are not modelled.
enum class RecomputeModule : uint32_t { core_attn = 1, mla_up_proj = 2, layernorm = 4, moe_act = 8, mlp = 16 };
std::string_view to_string(RecomputeModule m);
/// Parses Megatron's name of a module ("core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp").
std::optional<RecomputeModule> parse_recompute_module(std::string_view name);

/// How the memory-bound (element-wise, normalisation) work of a layer is implemented, which sets its kernels
/// and HBM traffic (transformer.hpp lists them op by op):
///   fused:    Megatron / Transformer Engine fused kernels (fused LayerNorm/RMSNorm, bias-GeLU or SwiGLU,
///             bias-dropout-add, RoPE, scale-mask-softmax); fused QKV and gate/up projections;
///   compiled: torch.compile (Inductor) fuses each chain of element-wise ops into one kernel, so the traffic is
///             that of `fused`; the model's own modules keep separate Q, K, V and gate/up projections;
///   eager:    PyTorch eager mode: every ATen op one kernel (composite RMSNorm with its fp32 upcast, RoPE by
///             complex multiplication, repeat_kv copies, separate SiLU and multiply), separate projections.
enum class KernelFusion { fused, compiled, eager };

std::string_view to_string(KernelFusion f);
/// Parses "fused" | "compiled" | "eager"; std::nullopt otherwise.
std::optional<KernelFusion> parse_kernel_fusion(std::string_view name);

/// Which fused attention kernel runs when flash_attention is on: FlashAttention-2 (PyTorch's
/// scaled_dot_product_attention flash backend, the flash-attn package 2.x), FlashAttention-3 (the flash-attn
/// package's Hopper kernels, Shah et al. 2024), or cuDNN's fused attention (Transformer Engine's default
/// FusedAttention backend, which Megatron-Core and NeMo run). The Hopper kernels use its asynchronous tensor-core
/// instructions; each runs at the device's measured rate for it (measured_attention.hpp), and a device without a
/// measurement of flash3 or cudnn runs them at its FlashAttention-2 rate.
enum class AttentionKernel { flash2, flash3, cudnn };

std::string_view to_string(AttentionKernel k);
/// Parses "flash2" | "flash3" | "cudnn"; std::nullopt otherwise.
std::optional<AttentionKernel> parse_attention_kernel(std::string_view name);

/// Canonical name as written in scenario files: "none" | "selective" | "full" | "selective_op".
std::string_view to_string(Recompute r);
/// Parses the canonical name; std::nullopt for anything else.
std::optional<Recompute> parse_recompute(std::string_view name);

/// The training framework, for the behaviours that are not scenario keys of their own: how a sharded
/// data-parallel model gathers and frees its parameters (sharded_pass.hpp) and the CPU cost of launching
/// kernels. Its default settings (overlaps, fused kernels, reduce dtype, ...) are scenario defaults
/// (docs/scenario-format.md, "Framework profiles").
///   megatron_lm_2021 / megatron_lm_2022: Megatron-LM of the SC'21 and Korthikanti et al. papers;
///   megatron_core: Megatron-LM with Megatron-Core and Transformer Engine (2023 on); nemo: NeMo 2 / Megatron-
///   Bridge on Megatron-Core; fsdp: PyTorch FullyShardedDataParallel (FSDP1); fsdp2: PyTorch fully_shard
///   (FSDP2, torchtitan); deepspeed: DeepSpeed ZeRO.
enum class Framework { megatron_lm_2021, megatron_lm_2022, megatron_core, nemo, fsdp, fsdp2, deepspeed };

/// "megatron-lm-2021" | "megatron-lm-2022" | "megatron-core" | "nemo" | "fsdp" | "fsdp2" | "deepspeed".
std::string_view to_string(Framework f);
std::optional<Framework> parse_framework(std::string_view name);

/// The ZeRO stages (Rajbhandari et al. 2020) `f` implements over its data-parallel group, ascending; the layout
/// search (parallelism = "auto") tries no other. Megatron-LM 2021: none (local DDP); Megatron-LM 2022,
/// Megatron-Core and NeMo: 1, the distributed optimizer (--use-distributed-optimizer, README "Distributed
/// Optimizer"); FSDP1: 2 and 3 (ShardingStrategy.SHARD_GRAD_OP, FULL_SHARD); FSDP2: 2 and 3 (fully_shard with
/// reshard_after_forward False or True); DeepSpeed: 1, 2 and 3 (zero_optimization.stage).
/// 0 (no sharding) is always implemented.
std::vector<int> implemented_zero_stages(Framework f);

/// How an MoE layer's tokens reach their experts (Megatron-Core --moe-token-dispatcher-type): alltoall (each
/// rank sends each routed token copy to its expert's rank: an all-to-all over the expert-parallel group, then
/// an all-gather over the expert-tensor-parallel group), allgather (every rank all-gathers all tokens of the
/// expert-parallel x expert-tensor group and keeps those of its experts; a reduce-scatter combines), flex
/// (Megatron-Core's flex dispatcher with DeepEP's normal kernels, DeepSeek-AI 2025, github.com/deepseek-ai/DeepEP:
/// each token crosses the network once per distinct destination node, to the GPU with the sender's local index,
/// which forwards it over NVLink once per distinct destination GPU of that node; the RDMA and NVLink parts run
/// pipelined in one kernel).
enum class MoeDispatcher { alltoall, allgather, flex };
std::string_view to_string(MoeDispatcher d);
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name);

/// How the router's load is balanced, for the load-imbalance model (moe_rank_imbalance): forced (benchmarks
/// that force an even split, Megatron --moe-router-force-load-balancing, NeMo's "force-balanced" tables),
/// aux_loss (an auxiliary balance loss, Megatron's default aux_loss), aux_free (DeepSeek's bias-based
/// auxiliary-loss-free balancing, Megatron --moe-router-enable-expert-bias).
enum class MoeBalance { forced, aux_loss, aux_free };
std::string_view to_string(MoeBalance b);
std::optional<MoeBalance> parse_moe_balance(std::string_view name);

/// The busiest expert-parallel rank's routed tokens over the mean (>= 1) in one micro-batch. A rank holds
/// `local_experts` of the experts and receives on average `tokens_per_rank` token copies. Each expert's share
/// deviates systematically from the mean with a coefficient of variation sigma_e that the balancing leaves:
/// from the maximal violation MaxVio = max load / mean load - 1 over E experts measured by Wang et al. 2024
/// ("Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts", arXiv 2408.15664, Table 2: 64
/// experts, top-6; aux loss 0.72 (1B) and 0.52 (3B), loss-free 0.04), read as the expected maximum of E normal
/// loads, 1 + sigma_e sqrt(2 ln E); and a rank's load, the sum of its local experts' (placed without regard to
/// load), has the sampling noise of a multinomial count on top: CV_rank^2 = sigma_e^2 / local_experts +
/// 1 / tokens_per_rank. The busiest of `ranks` ranks: 1 + CV_rank sqrt(2 ln ranks). forced: 1. With a capacity
/// factor (token dropping) no expert takes more than capacity_factor x its mean, so the result is at most
/// capacity_factor (0: dropless). An estimate: published MoE benchmark rows are force-balanced; the model is
/// checked only against Wang et al.'s numbers it is built from.
double moe_rank_imbalance(MoeBalance balance, int64_t experts, int64_t local_experts, int64_t ranks,
                          double tokens_per_rank, double capacity_factor);

struct TrainingConfig;

/// The busiest expert-parallel rank's routed tokens over the mean under `training`'s routing: capacity_factor
/// when every expert's input is padded to its capacity (moe_pad_expert_input_to_capacity: each expert computes
/// and exchanges exactly its capacity), else moe_rank_imbalance. The one rule the step program and the memory
/// model use.
double moe_rank_load(const TrainingConfig& training, int64_t experts, int64_t local_experts, int64_t ranks,
                     double tokens_per_rank);

/// Expected copies of one token that DeepEP's normal dispatch sends (MoeDispatcher::flex), for top-`topk`
/// routing over `experts` experts placed in order on `ranks` expert-parallel ranks, `ranks_per_node` of them on
/// each node of the group (n = ranks / ranks_per_node nodes), every choice of topk distinct experts equally
/// likely (a balanced router): a set of c experts is missed with probability P(c) = C(E - c, k) / C(E, k)
/// (hypergeometric), so
///   network: (n - 1) (1 - P(E / n)) copies, one per distinct destination node other than the sender's;
///   NVLink: n (r - 1) (1 - P(E / ranks)) copies, r = ranks_per_node: in each node, one per destination GPU
///           other than the one the token enters through (the sender itself, or the RDMA receiver).
/// The alltoall dispatcher sends topk (ranks - 1) / ranks copies instead, one per (token, expert) pair.
/// Throws std::invalid_argument unless 1 <= topk <= experts, ranks divides experts and ranks_per_node divides
/// ranks.
struct FlexDispatchCopies {
  double network = 0.0;
  double nvlink = 0.0;
};
FlexDispatchCopies flex_dispatch_copies(int64_t experts, int64_t topk, int64_t ranks, int64_t ranks_per_node);

/// Batch and numerics of a training run.
struct TrainingConfig {
  int64_t global_batch_size = 0;  ///< sequences per optimizer step, B
  int64_t micro_batch_size = 1;   ///< sequences per microbatch, b
  Precision precision = Precision::bf16;
  Recompute activation_recompute = Recompute::none;
  bool flash_attention = false;  ///< fused attention kernel, no s x s scores in memory
  AttentionKernel attention_kernel = AttentionKernel::flash2;  ///< which one, when flash_attention
  /// Weight-gradient GEMMs accumulate straight into the main-gradient buffer (Megatron
  /// --gradient-accumulation-fusion, 2022 on). Off: each backward writes a 16-bit gradient that a separate
  /// kernel adds into the main gradient, once per microbatch.
  bool gradient_accumulation_fusion = true;
  KernelFusion kernel_fusion = KernelFusion::fused;
  Framework framework = Framework::megatron_core;
  /// Precision of the data-parallel gradient reduction (all-reduce or reduce-scatter) and of the main
  /// gradient buffer: fp32 (Megatron --accumulate-allreduce-grads-in-fp32, FSDP reduce_dtype float32), or the
  /// 16-bit type (DeepSpeed's default communication_data_type, FSDP reduce_dtype bfloat16).
  Precision grad_reduce = Precision::fp32;
  /// With full recompute: layers of each model chunk that are recomputed (Megatron --recompute-method block
  /// --recompute-num-layers N; torchtitan's every-k-th-layer checkpointing recomputes l/k); the others keep
  /// their activations. -1: every layer.
  int64_t recompute_num_layers = -1;
  /// With activation_recompute = selective: the RecomputeModule bits re-run (Megatron's default core_attn).
  uint32_t recompute_modules = static_cast<uint32_t>(RecomputeModule::core_attn);
  /// Whether selective recompute re-runs module `m`.
  [[nodiscard]] bool recomputes(RecomputeModule m) const {
    return activation_recompute == Recompute::selective && (recompute_modules & static_cast<uint32_t>(m)) != 0;
  }
  MoeDispatcher moe_token_dispatcher = MoeDispatcher::alltoall;  ///< MoE layers' token dispatcher
  MoeBalance moe_router_load_balancing = MoeBalance::aux_loss;   ///< for moe_rank_imbalance
  /// Tokens an expert may take, in units of its mean share (Megatron --moe-expert-capacity-factor; tokens
  /// above it are dropped); 0: dropless.
  double moe_expert_capacity_factor = 0.0;
  /// With a capacity factor: every expert's input is padded to its capacity (Megatron
  /// --moe-pad-expert-input-to-capacity), so each computes and exchanges capacity_factor x its mean share and
  /// every shape is static (no host synchronisation, moe_host_wait).
  bool moe_pad_expert_input_to_capacity = false;
  /// The router's top-k, score function and auxiliary loss run as fused kernels (Megatron-Core
  /// --moe-router-fusion, v0.14; Transformer Engine PR 1883): 31 kernels instead of 72 (Megatron-LM
  /// docs/discussions/deepseek-v3-gb200-optimization).
  bool moe_router_fusion = false;
  /// An MoE layer's local experts run as one grouped GEMM (Megatron --moe-grouped-gemm, TE GroupedLinear);
  /// false: one GEMM per local expert, one after another.
  bool moe_grouped_gemm = true;
  /// The shared expert runs beside the dispatch and combine all-to-alls (Megatron --moe-shared-expert-overlap).
  bool moe_shared_expert_overlap = false;
  /// MoE layers' dispatch and combine of one microbatch hidden under the compute of another (Megatron-Core
  /// --overlap-moe-expert-parallel-comm, v0.14: in the steady state of 1F1B a forward and a backward pass run
  /// merged, layer by layer, each one's all-to-all beside the other's compute; DeepSeek's DualPipe does the
  /// same within its bidirectional schedule).
  bool moe_a2a_overlap = false;
  /// Every field equal (doubles by value): what the memos of values computed from a training compare.
  friend bool operator==(const TrainingConfig&, const TrainingConfig&) = default;
};

/// Bytes per element of the data-parallel gradient reduction and of the main-gradient buffer: the width of
/// `training.grad_reduce` (4 for fp32, 2 for the 16-bit types). The one rule the step program (collective
/// sizes), the memory model (gradient buffer) and the job's cross-zone egress use.
double grad_reduce_bytes_per_element(const TrainingConfig& training);

/// Why `global_batch` sequences cannot be split into microbatches of `micro_batch` over `data` replicas, ""
/// when they can: every replica runs the same whole number of microbatches per step, m = B / (b x d) (Megatron's
/// num_microbatches_calculator). The one rule behind StepSetup::microbatches and the scenario loader.
std::string batch_split_error(int64_t global_batch, int64_t micro_batch, int64_t data);

}  // namespace clustersim::models
