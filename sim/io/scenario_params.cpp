// The scenario parameter table and the reference generated from it (docs/scenario-format.md).
#include "sim/io/scenario_params.hpp"

#include <array>
#include <charconv>
#include <sstream>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/io/what_if_names.hpp"

namespace clustersim::sim::detail {
namespace {

using enum ParamType;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Must match models::parse_precision and models::parse_recompute (tests/scenario checks both).
constexpr std::array<std::string_view, 5> kPrecisions{"fp32", "tf32", "fp16", "bf16", "fp8"};
constexpr std::array<std::string_view, 4> kRecompute{"none", "selective", "full", "selective_op"};
// Must match models::parse_kernel_fusion (tests/scenario checks it).
constexpr std::array<std::string_view, 3> kFusions{"fused", "compiled", "eager"};
constexpr std::array<std::string_view, 2> kPositions{"learned", "rope"};
// Must match models::parse_framework and framework_names() (tests/scenario checks both).
constexpr std::array<std::string_view, 7> kFrameworkChoices{"megatron-core", "nemo",  "megatron-lm-2022",
                                                           "megatron-lm-2021", "fsdp", "fsdp2", "deepspeed"};
constexpr std::array<std::string_view, 3> kReduceDtypes{"fp32", "bf16", "fp16"};
// Must match models::parse_attention_kernel.
constexpr std::array<std::string_view, 3> kAttentionKernels{"flash2", "flash3", "cudnn"};
// Must match models::FabricKind and models::parse_collective_algorithm (tests/scenario checks them).
constexpr std::array<std::string_view, 3> kFabrics{"single_switch", "fat_tree", "rail_optimized"};
constexpr std::array<std::string_view, 5> kAllReduceAlgorithms{"auto", "ring", "tree", "hierarchical", "nvls"};
constexpr std::array<std::string_view, 2> kMlps{"gelu", "swiglu"};
constexpr std::array<std::string_view, 2> kSchedules{"1f1b", "gpipe"};
constexpr std::array<std::string_view, 2> kContextComms{"p2p", "all_gather"};
constexpr std::array<std::string_view, 5> kRecomputeModules{"core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp"};
constexpr std::array<std::string_view, 3> kDispatchers{"alltoall", "allgather", "flex"};
constexpr std::array<std::string_view, 3> kBalancing{"forced", "aux_loss", "aux_free"};
constexpr std::array<std::string_view, 2> kFidelities{"replica", "full"};
constexpr std::array<std::string_view, 2> kOnOff{"off", "on"};
constexpr std::array<std::string_view, 2> kStorages{"local_nvme", "parallel_fs"};
// Must match ServingReference (sim/io/scenario.hpp) and serving_metric (sim/validation/serving_validation.cpp).
constexpr std::array<std::string_view, 11> kServingMetrics{
    "output_tokens_per_s", "output_tokens_per_s_per_gpu", "requests_per_s", "ttft_mean_ms", "ttft_p50_ms",
    "ttft_p99_ms",         "tpot_mean_ms",                "tpot_p50_ms",    "e2e_mean_s",   "e2e_p50_s",
    "e2e_p99_s"};

constexpr std::array kTables{
    TableSpec{"", true, "File-level identification."},
    TableSpec{"model", true, "Transformer decoder shape (GPT-style)."},
    TableSpec{"training", true, "Batch and numerics of the training run."},
    TableSpec{"parallelism", false,
              "Megatron-LM PTD-P layout with context parallelism: GPUs = tensor × context × pipeline × data. Every "
              "key has a default."},
    TableSpec{"cluster", true, "The VMs the job runs on, their network fabric and their availability zones."},
    TableSpec{"network", false, "Collective algorithm choices (NCCL's, by default)."},
    TableSpec{"reference", false,
              "A published measurement to compare the prediction with: `source` and, for a training run, at least "
              "one of `tflops_per_gpu`, `step_time_s`, `tokens_per_s_per_gpu`, `mfu` (the first given is "
              "compared); for a serving scenario `metric` and `value`."},
    TableSpec{"job", false,
              "The whole training run: `clustersim run` adds time and cost to train, with `[reliability]` and "
              "`[cost]`. Give `train_tokens` or `steps`."},
    TableSpec{"reliability", false, "Interruptions (spot evictions, failures), checkpoints and restarts."},
    TableSpec{"cost", false, "Prices that turn VM-hours, storage and inter-zone traffic into dollars."},
    TableSpec{"serving", false,
              "An LLM serving fleet instead of a training run (docs/serving.md): replicas of one VM size, each a "
              "continuous-batching engine with a paged KV cache. A scenario with [serving] has no [training], "
              "[parallelism], [cluster], [network], [job], [reliability] or [cost], and needs "
              "[workload]."},
    TableSpec{"workload", false,
              "The requests a serving scenario replays: synthetic (arrivals at rate_per_s, prompt and output "
              "lengths from distributions) or a trace CSV in the format of Azure's LLM inference traces."},
    TableSpec{"slo", false, "Latency targets of a serving scenario: goodput counts the requests that meet them."},
    TableSpec{"simulation", false, "Settings of the simulation itself."},
    TableSpec{"analysis", false,
              "Analyses added to every run of a training scenario: what-if rows (docs/what-if.md), in the report of "
              "`clustersim run` and as /summary columns of every point of `clustersim sweep`."},
    TableSpec{"sweep", false,
              "Parameter sweep for `clustersim sweep` (docs/sweeps.md): dotted scenario keys over lists or "
              "ranges, `zip` groups, `parallelism = \"auto\"`. Ignored by `clustersim run`."},
};

// Keys before the serving ones: the root, [model] to [cost].
constexpr std::array kParamsBefore{
    // root
    ParamSpec{.key = "schema_version", .type = integer, .need = Need::required, .min_int = 1, .max_int = 1,
              .help = "Version of this format. This build reads 1."},
    ParamSpec{.key = "name", .type = string, .need = Need::required, .non_empty = true,
              .help = "Short identifier of the scenario, used in reports and output files."},
    ParamSpec{.key = "description", .type = string, .need = Need::defaulted, .default_text = "\"\"",
              .help = "One line saying what is simulated and where it comes from."},
    // [model]
    ParamSpec{.key = "model.num_layers", .type = integer, .unit = "layers", .need = Need::required, .min_int = 1, .max_int = 16384,
              .help = "Decoder layers, l. At least parallelism.pipeline × parallelism.virtual_stages; when they do not "
                      "divide it, the middle model chunks take one layer more than the first and last (which "
                      "hold the embedding and the LM head), as Llama 3's 126 layers on 16 stages.",
              .bound_reason = "16,384 layers: 80x the deepest published decoders (Llama 3 405B: 126); the step keeps every layer's work"},
    ParamSpec{.key = "model.hidden_size", .type = integer, .unit = "elements", .need = Need::required, .min_int = 1, .max_int = 1048576,
              .help = "Model width, h. Must be divisible by num_attention_heads.",
              .bound_reason = "2^20: 40x the widest published model (Megatron 1T: 25,600); one h x h weight is then 2 TiB in bf16"},
    ParamSpec{.key = "model.num_attention_heads", .type = integer, .unit = "heads", .need = Need::required,
              .min_int = 1, .max_int = 65536, .help = "Query heads, a. Must be divisible by parallelism.tensor.",
              .bound_reason = "65,536: 500x the most published query heads (DeepSeek-V3: 128)"},
    ParamSpec{.key = "model.num_query_groups", .type = integer, .unit = "heads", .need = Need::derived,
              .default_text = "num_attention_heads", .min_int = 1, .max_int = 65536,
              .help = "Key/value heads (grouped-query attention); equal to num_attention_heads for multi-head "
                      "attention. Must divide num_attention_heads and be divisible by parallelism.tensor.",
              .bound_reason = "65,536, as num_attention_heads"},
    ParamSpec{.key = "model.ffn_hidden_size", .type = integer, .unit = "elements", .need = Need::derived,
              .default_text = "4 × hidden_size", .min_int = 1, .max_int = 4194304, .help = "Inner width of the MLP.",
              .bound_reason = "2^22: 40x the widest published feed-forward (Megatron 1T: 102,400)"},
    ParamSpec{.key = "model.vocab_size", .type = integer, .unit = "tokens", .need = Need::required, .min_int = 1, .max_int = 16777216,
              .help = "Vocabulary size, V.",
              .bound_reason = "2^24: 64x the largest published vocabulary (Gemma: 256,000)"},
    ParamSpec{.key = "model.seq_length", .type = integer, .unit = "tokens", .need = Need::required, .min_int = 1, .max_int = 16777216,
              .help = "Tokens per sequence, s.",
              .bound_reason = "2^24 tokens: 16x the longest published training context (1M tokens: NeMo Llama 2 7B on 1,024 H100)"},
    ParamSpec{.key = "model.mlp", .type = string, .need = Need::defaulted, .default_text = "\"gelu\"",
              .choices = kMlps,
              .help = "MLP activation: gelu (two GEMMs, GPT) or swiglu (gated: fc1 produces 2 × ffn_hidden_size "
                      "columns, Llama)."},
    ParamSpec{.key = "model.position_embedding", .type = string, .need = Need::defaulted,
              .default_text = "\"learned\"", .choices = kPositions,
              .help = "learned: an s × h table of absolute positions added at the input (GPT); rope: rotary "
                      "embedding applied to Q and K in every layer, no table (Llama)."},
    ParamSpec{.key = "model.dropout", .type = number, .unit = "probability", .need = Need::defaulted,
              .default_text = "0.1", .lo = 0.0, .hi = 1.0, .hi_open = true,
              .help = "Hidden and attention dropout (Megatron-LM's default 0.1; Llama recipes 0). With 0 there "
                      "are no dropout kernels and no dropout masks."},
    ParamSpec{.key = "model.tie_embeddings", .type = boolean, .need = Need::defaulted, .default_text = "true",
              .help = "The LM head reuses the word embedding (GPT). false: a separate vocab_size × hidden_size "
                      "output weight (Llama 3; Megatron --untie-embeddings-and-output-weights)."},
    ParamSpec{.key = "model.kv_channels", .type = integer, .unit = "elements", .need = Need::derived,
              .default_text = "hidden_size / num_attention_heads", .min_int = 1, .max_int = 65536,
              .help = "Width of one attention head, d (Megatron --kv-channels). Given, hidden_size need not be "
                      "divisible by the heads (Qwen3: 64 heads of 128 with hidden_size 4096).",
              .bound_reason = "65,536: 256x the widest published head (256)"},
    ParamSpec{.key = "model.multi_latent_attention", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Multi-head latent attention (DeepSeek-V2/V3; Megatron --multi-latent-attention): queries and "
                      "keys/values from low-rank latents. Uses q_lora_rank, kv_lora_rank, qk_head_dim, "
                      "qk_pos_emb_head_dim, v_head_dim; num_query_groups and kv_channels do not apply."},
    ParamSpec{.key = "model.q_lora_rank", .type = integer, .unit = "elements", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 1048576,
              .help = "MLA: width of the query latent (DeepSeek-V3 1536); 0: queries straight from the hidden state.",
              .bound_reason = "2^20, as hidden_size"},
    ParamSpec{.key = "model.kv_lora_rank", .type = integer, .unit = "elements", .need = Need::defaulted,
              .default_text = "512", .min_int = 1, .max_int = 1048576, .help = "MLA: width of the key/value latent (DeepSeek-V3 512).",
              .bound_reason = "2^20, as hidden_size"},
    ParamSpec{.key = "model.qk_head_dim", .type = integer, .unit = "elements", .need = Need::defaulted,
              .default_text = "128", .min_int = 1, .max_int = 65536,
              .help = "MLA: a head's query/key width without the rotary part (DeepSeek-V3 128).",
              .bound_reason = "65,536: 256x the widest published head (256)"},
    ParamSpec{.key = "model.qk_pos_emb_head_dim", .type = integer, .unit = "elements", .need = Need::defaulted,
              .default_text = "64", .min_int = 0, .max_int = 65536,
              .help = "MLA: the rotary part of a head's query and of the shared key (DeepSeek-V3 64).",
              .bound_reason = "65,536: 256x the widest published head (256)"},
    ParamSpec{.key = "model.v_head_dim", .type = integer, .unit = "elements", .need = Need::defaulted,
              .default_text = "128", .min_int = 1, .max_int = 65536, .help = "MLA: a head's value width (DeepSeek-V3 128).",
              .bound_reason = "65,536: 256x the widest published head (256)"},
    ParamSpec{.key = "model.num_experts", .type = integer, .unit = "experts", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 65536,
              .help = "Routed experts of each MoE layer (Megatron --num-experts); 0: a dense model. MoE is "
                      "modelled as Megatron-Core runs it (training.framework megatron-core or nemo).",
              .bound_reason = "65,536: 170x the most published routed experts (Kimi K2: 384)"},
    ParamSpec{.key = "model.moe_router_topk", .type = integer, .unit = "experts", .need = Need::defaulted,
              .default_text = "2", .min_int = 1, .max_int = 65536,
              .help = "Experts each token is routed to, k (Megatron --moe-router-topk); at most num_experts.",
              .bound_reason = "65,536, as num_experts"},
    ParamSpec{.key = "model.moe_ffn_hidden_size", .type = integer, .unit = "elements", .need = Need::derived,
              .default_text = "ffn_hidden_size", .min_int = 1, .max_int = 4194304,
              .help = "MLP width of one routed expert (Megatron --moe-ffn-hidden-size), gated like the dense MLP.",
              .bound_reason = "2^22: 40x the widest published feed-forward (Megatron 1T: 102,400)"},
    ParamSpec{.key = "model.moe_shared_expert_intermediate_size", .type = integer, .unit = "elements",
              .need = Need::defaulted, .default_text = "0", .min_int = 0, .max_int = 4194304,
              .help = "MLP width of the shared expert every token passes through (DeepSeek, Qwen-MoE); 0: none.",
              .bound_reason = "2^22: 40x the widest published feed-forward (Megatron 1T: 102,400)"},
    ParamSpec{.key = "model.moe_layer_freq", .type = integer, .unit = "layers", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 16384,
              .help = "Every moe_layer_freq-th layer is an MoE layer (layer i when i % freq == 0; Megatron "
                      "--moe-layer-freq as an integer).",
              .bound_reason = "16,384, as num_layers"},
    ParamSpec{.key = "model.num_dense_layers_first", .type = integer, .unit = "layers", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 16384,
              .help = "The first layers are dense (DeepSeek-V3: 3; Megatron --moe-layer-freq \"[0]*3+[1]*58\").",
              .bound_reason = "16,384, as num_layers"},
    ParamSpec{.key = "model.mtp_num_layers", .type = integer, .unit = "modules", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 16384,
              .help = "Multi-token prediction modules (DeepSeek-V3 Sec. 2.2; Megatron --mtp-num-layers), on the "
                      "last pipeline stage: each two norms, a 2h -> h projection, a block of the last layer's "
                      "kind and the output head and loss again. Counted in model FLOPs and memory, not in the "
                      "parameter count. Megatron-Core and NeMo only.",
              .bound_reason = "16,384, as num_layers"},
    // [training]
    ParamSpec{.key = "training.framework", .type = string, .need = Need::defaulted,
              .default_text = "\"megatron-core\"", .choices = kFrameworkChoices,
              .help = "The training framework. It sets the defaults its published recipes use for the other keys "
                      "(overlaps, fused kernels, reduce dtype, ZeRO stage; \"Framework profiles\" below) and how "
                      "a sharded model gathers its parameters. A key given in the scenario wins."},
    ParamSpec{.key = "training.global_batch_size", .type = integer, .unit = "sequences", .need = Need::required,
              .min_int = 1, .max_int = 16777216,
              .help = "Sequences per optimizer step, B. Must be divisible by micro_batch_size × parallelism.data.",
              .bound_reason = "2^24 sequences: 4,000x the largest published batches (Llama 3 405B: 4,096 sequences)"},
    ParamSpec{.key = "training.micro_batch_size", .type = integer, .unit = "sequences", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 16777216, .help = "Sequences per microbatch, b.",
              .bound_reason = "2^24, as global_batch_size"},
    ParamSpec{.key = "training.precision", .type = string, .need = Need::defaulted, .default_text = "\"bf16\"",
              .choices = kPrecisions,
              .help = "Precision of the GEMMs. fp8: GEMMs at the FP8 tensor-core rate, everything else in bf16."},
    ParamSpec{.key = "training.activation_recompute", .type = string, .need = Need::defaulted,
              .default_text = "\"none\"", .choices = kRecompute,
              .help = "Activation recomputation: selective re-runs the attention core (Korthikanti et al. 2022; "
                      "nothing with flash_attention), full re-runs each layer's forward during backward, "
                      "selective_op is PyTorch's per-op checkpointing with torchtitan's policy (matmul and "
                      "attention outputs saved except every second matmul; the rest re-run)."},
    ParamSpec{.key = "training.recompute_num_layers", .type = integer, .unit = "layers", .need = Need::derived,
              .default_text = "every layer", .min_int = 0, .max_int = 16384,
              .help = "With activation_recompute = \"full\": layers of each pipeline model chunk that recompute "
                      "(Megatron --recompute-method block --recompute-num-layers); the others keep their "
                      "activations. torchtitan's every-k-th-layer checkpointing is num_layers / k.",
              .bound_reason = "16,384, as num_layers"},
    ParamSpec{.key = "training.recompute_modules", .type = string_list, .need = Need::defaulted,
              .default_text = "[\"core_attn\"]", .choices = kRecomputeModules,
              .help = "With activation_recompute = \"selective\": what is re-run (Megatron --recompute-modules): "
                      "core_attn (the attention core), mla_up_proj (MLA's up-projections and RoPE; Q, K, V not "
                      "stored), layernorm (the pre-norms; their outputs not stored), moe_act (the routed experts' "
                      "activation; its output not stored), mlp (a dense layer's MLP; only its input stored)."},
    ParamSpec{.key = "training.moe_token_dispatcher", .type = string, .need = Need::defaulted,
              .default_text = "\"alltoall\"", .choices = kDispatchers,
              .help = "MoE token dispatcher (Megatron --moe-token-dispatcher-type): alltoall (an all-to-all over "
                      "the expert-parallel group, then an all-gather over expert_tensor), allgather (all tokens of "
                      "the expert x expert_tensor group gathered on every rank) or flex (DeepEP: each token crosses "
                      "the network once per destination node and NVLink once per destination GPU; needs "
                      "expert_tensor = 1)."},
    ParamSpec{.key = "training.moe_router_load_balancing", .type = string, .need = Need::defaulted,
              .default_text = "\"aux_loss\"", .choices = kBalancing,
              .help = "Router load balancing, for the busiest expert rank's load: forced (an even split, as "
                      "benchmark tables force it), aux_loss (an auxiliary loss, Megatron's default) or aux_free "
                      "(DeepSeek's expert bias). Imbalance from Wang et al. 2024's measured maximal violations."},
    ParamSpec{.key = "training.moe_expert_capacity_factor", .type = number, .unit = "x mean", .need = Need::defaulted,
              .default_text = "0.0", .lo = 0.0,
              .help = "Tokens an expert may take in units of its mean share; more are dropped (Megatron "
                      "--moe-expert-capacity-factor). 0: dropless."},
    ParamSpec{.key = "training.moe_pad_expert_input_to_capacity", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "With a capacity factor: pad every expert's input to its capacity (Megatron "
                      "--moe-pad-expert-input-to-capacity): each expert computes and exchanges capacity x its mean "
                      "share, and the shapes are static, so the host never waits for the routing's token counts."},
    ParamSpec{.key = "training.moe_router_fusion", .type = boolean, .need = Need::defaulted, .default_text = "false",
              .help = "Fused router kernels (Megatron-Core --moe-router-fusion, v0.14; Transformer Engine PR 1883): "
                      "31 kernel launches per router forward instead of 72, for the host's issue time."},
    ParamSpec{.key = "training.moe_grouped_gemm", .type = boolean, .need = Need::defaulted, .default_text = "true",
              .help = "Run a rank's local experts as one grouped GEMM (Megatron --moe-grouped-gemm); false: one "
                      "GEMM per expert, one after another."},
    ParamSpec{.key = "training.moe_shared_expert_overlap", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Run the shared expert beside the dispatch and combine (Megatron --moe-shared-expert-overlap)."},
    ParamSpec{.key = "training.moe_a2a_overlap", .type = boolean, .need = Need::defaulted, .default_text = "false",
              .help = "Hide each MoE layer's dispatch and combine under another microbatch's compute: in the "
                      "steady state of 1F1B a forward and a backward run merged (Megatron-Core "
                      "--overlap-moe-expert-parallel-comm). Needs expert > 1, the alltoall or flex dispatcher, "
                      "virtual_stages > 1 with pipeline > 1, no full recompute and no shared-expert overlap."},
    ParamSpec{.key = "training.grad_reduce_dtype", .type = string, .need = Need::derived,
              .default_text = "fp16 when precision is fp16; bf16 with deepspeed; else fp32 (or the framework profile's)",
              .choices = kReduceDtypes,
              .help = "Precision of the data-parallel gradient reduction and of the main-gradient buffer: fp32 "
                      "(Megatron --accumulate-allreduce-grads-in-fp32, FSDP reduce_dtype float32) or 16-bit "
                      "(DeepSpeed's communication_data_type default, FSDP reduce_dtype bfloat16)."},
    ParamSpec{.key = "training.kernel_fusion", .type = string, .need = Need::defaulted,
              .default_text = "\"fused\"", .choices = kFusions,
              .help = "How element-wise and normalisation work runs: fused (Megatron / Transformer Engine "
                      "kernels), compiled (torch.compile: fused chains, separate Q/K/V and gate/up projections), "
                      "eager (PyTorch eager: every ATen op a kernel). Sets HBM traffic and kernel launches."},
    ParamSpec{.key = "training.flash_attention", .type = boolean, .need = Need::defaulted, .default_text = "false",
              .help = "Fused attention (FlashAttention, Dao et al. 2022): no s × s score matrix in memory; the "
                      "attention core runs as one kernel."},
    ParamSpec{.key = "training.attention_kernel", .type = string, .need = Need::defaulted,
              .default_text = "\"flash2\"", .choices = kAttentionKernels,
              .help = "With flash_attention: flash2 (FlashAttention-2, PyTorch's scaled_dot_product_attention), "
                      "flash3 (FlashAttention-3, Hopper) or cudnn (cuDNN fused attention, Transformer Engine's "
                      "default backend). Each runs at the device's measured rate over sequence length and head "
                      "dimension (catalog kernels/attention_*.csv); flash3 and cudnn at the flash2 rate on GPUs "
                      "without their measurement."},
    ParamSpec{.key = "training.gradient_accumulation_fusion", .type = boolean, .need = Need::defaulted,
              .default_text = "true",
              .help = "Weight-gradient GEMMs accumulate into the main gradient (Megatron "
                      "--gradient-accumulation-fusion, 2022 on). false: a separate kernel adds each microbatch's "
                      "16-bit weight gradient into the main gradient (Megatron-LM 2021)."},
    // [parallelism]
    ParamSpec{.key = "parallelism.tensor", .type = integer, .unit = "GPUs", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1048576, .help = "Tensor-parallel group size, t.",
              .bound_reason = "2^20 GPUs: 10x the largest published clusters (~100,000 GPUs)"},
    ParamSpec{.key = "parallelism.context", .type = integer, .unit = "GPUs", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1048576,
              .help = "Context-parallel size, c (Megatron-Core --context-parallel-size): each sequence is split "
                      "into 2c chunks, rank r holding chunks r and 2c - 1 - r (causal load balancing), so "
                      "model.seq_length must be divisible by 2c. Gradients and ZeRO shards span data × context.",
              .bound_reason = "2^20 GPUs, as tensor"},
    ParamSpec{.key = "parallelism.cp_comm_type", .type = string, .need = Need::defaulted,
              .default_text = "\"p2p\"", .choices = kContextComms,
              .help = "How context-parallel ranks exchange keys and values (Megatron-Core --cp-comm-type): p2p "
                      "(ring attention, each hop under one step's attention) or all_gather (all-gathered under "
                      "the local block's attention; PyTorch context_parallel's default)."},
    ParamSpec{.key = "parallelism.expert", .type = integer, .unit = "GPUs", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1048576,
              .help = "Expert-parallel size, EP (Megatron --expert-model-parallel-size): the MoE layers' experts "
                      "split over EP ranks folded over tensor × context × data (Megatron-Core MoE parallel "
                      "folding). Must divide model.num_experts; expert × expert_tensor must divide tensor × "
                      "context × data.",
              .bound_reason = "2^20 GPUs, as tensor"},
    ParamSpec{.key = "parallelism.expert_tensor", .type = integer, .unit = "GPUs", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1048576,
              .help = "Expert-tensor-parallel size, ETP (Megatron --expert-tensor-parallel-size): each expert's MLP "
                      "split over ETP ranks. Must divide model.moe_ffn_hidden_size.",
              .bound_reason = "2^20 GPUs, as tensor"},
    ParamSpec{.key = "parallelism.pipeline", .type = integer, .unit = "stages", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1048576, .help = "Pipeline stages, p.",
              .bound_reason = "2^20 GPUs, as tensor"},
    ParamSpec{.key = "parallelism.data", .type = integer, .unit = "replicas", .need = Need::derived,
              .default_text = "GPUs / (tensor × context × pipeline)", .min_int = 1, .max_int = 1048576,
              .help = "Data-parallel replicas, d. When given, tensor × context × pipeline × data must equal the "
                      "cluster's GPUs (nodes × GPUs per VM); when omitted, tensor × context × pipeline must "
                      "divide them.",
              .bound_reason = "2^20 GPUs, as tensor"},
    ParamSpec{.key = "parallelism.virtual_stages", .type = integer, .unit = "chunks", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 16384,
              .help = "Model chunks per pipeline rank, v. Above 1 selects interleaved 1F1B and needs pipeline > 1.",
              .bound_reason = "16,384, as num_layers (a virtual stage holds at least one layer)"},
    ParamSpec{.key = "parallelism.first_stage_layers", .type = integer, .unit = "layers", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 16384,
              .help = "Decoder layers of the first pipeline stage (Megatron --decoder-first-pipeline-num-layers); "
                      "0: the automatic split. Set, the stages not set share the other layers evenly; needs "
                      "pipeline > 1 and virtual_stages = 1.",
              .bound_reason = "16,384, as num_layers"},
    ParamSpec{.key = "parallelism.last_stage_layers", .type = integer, .unit = "layers", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 16384,
              .help = "Decoder layers of the last pipeline stage (Megatron --decoder-last-pipeline-num-layers), "
                      "which also holds the LM head and multi-token prediction; 0: the automatic split.",
              .bound_reason = "16,384, as num_layers"},
    ParamSpec{.key = "parallelism.sequence_parallel", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Megatron sequence parallelism. Needs model.seq_length / context divisible by tensor."},
    ParamSpec{.key = "parallelism.schedule", .type = string, .need = Need::defaulted, .default_text = "\"1f1b\"",
              .choices = kSchedules,
              .help = "Pipeline schedule: 1f1b (PipeDream-Flush; interleaved when virtual_stages > 1) or gpipe "
                      "(all forwards, then all backwards; virtual_stages must be 1)."},
    ParamSpec{.key = "parallelism.zero_stage", .type = integer, .need = Need::defaulted, .default_text = "0",
              .min_int = 0, .max_int = 3,
              .help = "ZeRO (Rajbhandari et al. 2020) over the data-parallel group: 1 shards optimizer states "
                      "(Megatron's distributed optimizer: gradient reduce-scatter, parameter all-gather), 2 also "
                      "gradients, 3 also parameters (FSDP: all-gather per layer in forward and backward)."},
    ParamSpec{.key = "parallelism.overlap_grad_reduce", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Overlap the data-parallel gradient reduction with the last microbatch's backward, bucket "
                      "by bucket (Megatron --overlap-grad-reduce, PyTorch DDP). Off: after the pipeline flush."},
    ParamSpec{.key = "parallelism.overlap_param_gather", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "With zero_stage 1 or 2: overlap the all-gather of the updated parameters with the next "
                      "step's first forward pass (Megatron --overlap-param-gather); only its excess is exposed. "
                      "Off: after the optimizer."},
    ParamSpec{.key = "parallelism.overlap_p2p_comm", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Overlap pipeline send/recv with compute (Megatron --overlap-p2p-communication). false "
                      "(Megatron's default): a stage waits for each send to finish before its next pass."},
    ParamSpec{.key = "parallelism.tp_comm_overlap", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Overlap the tensor-parallel all-gathers and reduce-scatters (sequence parallelism) with the "
                      "GEMMs that consume and produce them, chunk by chunk (Megatron --tp-comm-overlap, "
                      "Transformer Engine userbuffers; torchtitan async TP). Given explicitly, it needs sequence_parallel; "
                      "from a framework profile it applies where sequence_parallel is on."},
    ParamSpec{.key = "parallelism.async_tensor_parallel_allreduce", .type = boolean, .need = Need::defaulted,
              .default_text = "true",
              .help = "Overlap the backward tensor-parallel all-reduce (reduce-scatter with sequence parallelism) "
                      "of a column-parallel layer's input gradient with its weight-gradient GEMM (Megatron "
                      "--async-tensor-model-parallel-allreduce, 2022 on). false: serialised (Megatron-LM 2021)."},
    // [cluster]
    ParamSpec{.key = "cluster.vm_size", .type = string, .need = Need::required, .non_empty = true,
              .help = "VM size: a name from the hardware catalog (models/hardware/catalog/vm_sizes.toml)."},
    ParamSpec{.key = "cluster.nodes", .type = integer, .unit = "VMs", .need = Need::required, .min_int = 1, .max_int = 16384,
              .help = "VMs in the job. GPUs = nodes × GPUs per VM.",
              .bound_reason = "2^14 VMs (131,072 GPUs at 8 per VM, above the largest published clusters of about 100,000): the routing tables hold a hop count from every leaf switch to every switch, O(nodes^2): 7 s and 0.4 GB at 2^14 ND H100 v5 VMs, 150 s at 2^16"},
    ParamSpec{.key = "cluster.vms_per_nvlink_domain", .type = integer, .unit = "VMs", .need = Need::derived,
              .default_text = "the VM size's whole NVLink domain (18 for ND GB200 v6, 1 for single-VM sizes)",
              .min_int = 1,
              .help = "VMs of each NVLink domain the job uses, for VM sizes whose NVLink domain spans VMs: 16 "
                      "runs 64 ND GB200 v6 VMs as 4 racks of 16 of their 18 trays. From 1 to the domain's VMs (1: "
                      "every VM its own domain, GPUs of different VMs talk over InfiniBand); cluster.nodes and "
                      "every zone must be whole domains of it."},
    ParamSpec{.key = "cluster.fabric", .type = string, .need = Need::defaulted, .default_text = "\"fat_tree\"",
              .choices = kFabrics,
              .help = "Inter-node network of each zone: one switch, a two-tier fat tree (three tiers when it "
                      "outgrows radix/2 leaves), or rail-optimized (NIC i of every node on rail switch i)."},
    ParamSpec{.key = "cluster.oversubscription", .type = number, .unit = "ratio", .need = Need::defaulted,
              .default_text = "1.0", .lo = 1.0, .hi = 1024.0, .help = "Fat-tree leaf down/up capacity ratio (2 means 2:1).",
              .bound_reason = "1,024:1 leaves a leaf no uplink worth simulating (published fabrics: 1:1 to 3:1)"},
    ParamSpec{.key = "cluster.fat_tree_radix", .type = integer, .unit = "ports", .need = Need::defaulted,
              .default_text = "64", .min_int = 2, .max_int = 4096,
              .help = "Switch ports; a leaf takes radix/2 NICs. Even.",
              .bound_reason = "4,096 ports: 8x the largest switch ASICs (512 x 100G)"},
    ParamSpec{.key = "cluster.zones", .type = zone_list, .need = Need::optional,
              .help = "Availability zones as `[[cluster.zones]]` tables with `name` (string) and `nodes` "
                      "(integer >= 1); node counts must sum to cluster.nodes. Nodes fill zones in order. "
                      "Absent: one zone. InfiniBand does not cross zones; cross-zone traffic takes the "
                      "inter-zone link."},
    ParamSpec{.key = "cluster.inter_zone_latency_ms", .type = number, .unit = "ms", .need = Need::defaulted,
              .default_text = "1.0", .lo = 0.0, .lo_open = true, .hi = 1000.0,
              .help = "One-way latency between zones (Azure: under 2 ms round trip between zones of a region).",
              .bound_reason = "1 s: 6x the longest one-way latency between Azure regions (about 150 ms)"},
    ParamSpec{.key = "cluster.inter_zone_bandwidth_gbps", .type = number, .unit = "Gb/s per node",
              .need = Need::derived, .default_text = "the VM's Ethernet NIC rate", .lo = 0.001, .hi = 1.0e6,
              .help = "Bandwidth each node gets across zones (bits per second, as NICs are quoted).",
              .bound_reason = "1 Mb/s to 1 Pb/s: below any Azure VM's network and 1,000x above its fastest NIC"},
    // [network]
    ParamSpec{.key = "network.all_reduce_algorithm", .type = string, .need = Need::defaulted,
              .default_text = "\"auto\"", .choices = kAllReduceAlgorithms,
              .help = "All-reduce algorithm of every group; auto takes the fastest applicable per size, as "
                      "NCCL's tuner does. nvls needs one node of H100/H200; tree and hierarchical several nodes."},
    // [reference]
    ParamSpec{.key = "reference.tflops_per_gpu", .type = number, .unit = "TFLOP/s", .need = Need::optional,
              .lo = 0.0, .lo_open = true, .hi = kInf, .hi_open = true,
              .help = "Achieved TFLOP/s per GPU, as the source counts it."},
    ParamSpec{.key = "reference.step_time_s", .type = number, .unit = "s", .need = Need::optional, .lo = 0.0,
              .lo_open = true, .hi = kInf, .hi_open = true, .help = "Iteration (optimizer step) time."},
    ParamSpec{.key = "reference.tokens_per_s_per_gpu", .type = number, .unit = "tokens/s", .need = Need::optional,
              .lo = 0.0, .lo_open = true, .hi = kInf, .hi_open = true,
              .help = "Training throughput per GPU: global_batch_size × seq_length / (step time × GPUs)."},
    ParamSpec{.key = "reference.mfu", .type = number, .unit = "fraction", .need = Need::optional, .lo = 0.0,
              .lo_open = true, .hi = 1.0, .hi_open = false, .help = "Model FLOPs utilisation."},
    ParamSpec{.key = "reference.metric", .type = string, .need = Need::optional, .choices = kServingMetrics,
              .help = "Serving scenarios: the measured statistic (output tokens/s of the fleet or per GPU, "
                      "requests/s, TTFT / TPOT / end-to-end mean, median or p99)."},
    ParamSpec{.key = "reference.value", .type = number, .unit = "the metric's", .need = Need::optional, .lo = 0.0,
              .lo_open = true, .hi = kInf, .hi_open = true,
              .help = "Serving scenarios: the measured value of reference.metric, in the unit its name ends with."},
    ParamSpec{.key = "reference.dataset", .type = string, .need = Need::optional, .non_empty = true,
              .help = "Short name of the published table the row belongs to (e.g. \"torchtitan-h100\"): the "
                      "validation suite groups, calibrates and leaves out rows by it."},
    ParamSpec{.key = "reference.exclude_reason", .type = string, .need = Need::optional, .non_empty = true,
              .help = "Why the validation suite reports this row but leaves it out of its bounds and of the "
                      "calibration (a behaviour the model does not capture, stated with its evidence)."},
    ParamSpec{.key = "reference.source", .type = string, .need = Need::required, .non_empty = true,
              .help = "Citation of the measurement (paper, table, page)."},
    // [job]
    ParamSpec{.key = "job.train_tokens", .type = number, .unit = "tokens", .need = Need::optional, .lo = 0.0,
              .lo_open = true, .hi = 1e18,
              .help = "Tokens to train on; steps = ceil(train_tokens / (global_batch_size × seq_length)).",
              .bound_reason = "1e18 tokens: 25,000x the largest published pre-training runs (Qwen3: 36T tokens)"},
    ParamSpec{.key = "job.steps", .type = integer, .unit = "steps", .need = Need::optional, .min_int = 1,
              .help = "Optimizer steps to train (instead of train_tokens)."},
    ParamSpec{.key = "job.replications", .type = integer, .need = Need::defaulted, .default_text = "200",
              .min_int = 1, .max_int = 100000, .help = "Monte Carlo replications of the job (seed + replication index).",
              .bound_reason = "100,000: the standard error is then 0.3 % of the spread of one run; each replication replays the whole job"},
    // [reliability]
    ParamSpec{.key = "reliability.spot", .type = boolean, .need = Need::defaulted, .default_text = "false",
              .help = "Spot VMs: evictions at spot_eviction_rate_per_hour per VM, and the spot price. The report "
                      "compares with the same job on demand."},
    ParamSpec{.key = "reliability.spot_eviction_rate_per_hour", .type = number, .unit = "1/h per VM",
              .need = Need::defaulted, .default_text = "0.05", .lo = 0.0,
              .help = "Eviction rate of one spot VM (Azure quotes the chance of eviction within the next hour; "
                      "portal buckets 0-5 %, ... 20+ %)."},
    ParamSpec{.key = "reliability.spot_eviction_trace", .type = string, .need = Need::optional, .non_empty = true,
              .help = "CSV of eviction times in hours from the job's start (one per line, '#' comments), replayed "
                      "instead of the eviction rate; a path relative to the scenario file."},
    ParamSpec{.key = "reliability.failure_rate_per_gpu_day", .type = number, .unit = "1/(GPU day)",
              .need = Need::defaulted, .default_text = "4.736e-4", .lo = 0.0,
              .help = "Job interruptions by hardware and software failures per GPU per day. Default: Llama 3 405B, "
                      "419 unexpected interruptions in 54 days on 16,384 H100 (Dubey et al. 2024, Table 5)."},
    ParamSpec{.key = "reliability.checkpoint_interval_minutes", .type = number, .unit = "min", .need = Need::optional,
              .lo = 0.0, .lo_open = true,
              .help = "Checkpoint every this much training time. Absent (and no _steps): the interval that minimises "
                      "the expected time to train, searched by simulation (Young's and Daly's are reported too)."},
    ParamSpec{.key = "reliability.checkpoint_interval_steps", .type = integer, .unit = "steps", .need = Need::optional,
              .min_int = 1, .help = "Checkpoint every this many steps."},
    ParamSpec{.key = "reliability.checkpoint_size_gb", .type = number, .unit = "GB", .need = Need::derived,
              .default_text = "parameters × 14 B (16-bit weights + fp32 master, m, v)", .lo = 0.0, .lo_open = true,
              .hi = 1e10, .help = "Bytes of one checkpoint, all ranks together.",
              .bound_reason = "10 EB: the largest model the key bounds allow (about 2e17 parameters) at 14 B each, "
                              "a million times any published checkpoint"},
    ParamSpec{.key = "reliability.checkpoint_storage", .type = string, .need = Need::defaulted,
              .default_text = "\"parallel_fs\"", .choices = kStorages,
              .help = "Where checkpoints go: parallel_fs (273 GB/s write, 1 TB/s read: Megatron SC'21's file "
                      "system) or local_nvme (each VM's NVMe, 28 GB/s write and read per VM: Azure ND H100 v5)."},
    ParamSpec{.key = "reliability.checkpoint_write_gb_per_s", .type = number, .unit = "GB/s", .need = Need::derived,
              .default_text = "from checkpoint_storage", .lo = 0.0, .lo_open = true,
              .help = "Aggregate checkpoint write bandwidth."},
    ParamSpec{.key = "reliability.checkpoint_read_gb_per_s", .type = number, .unit = "GB/s", .need = Need::derived,
              .default_text = "from checkpoint_storage", .lo = 0.0, .lo_open = true,
              .help = "Aggregate checkpoint read bandwidth (reload after a restart)."},
    ParamSpec{.key = "reliability.checkpoint_async", .type = boolean, .need = Need::defaulted, .default_text = "false",
              .help = "Asynchronous checkpoints: training stalls only for the device-to-host snapshot (each GPU's "
                      "share at 25 GB/s, PCIe gen4 x16), the write overlaps training."},
    ParamSpec{.key = "reliability.detection_time_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "120", .lo = 0.0,
              .help = "From a failure to the job torn down (spot: the 30 s eviction notice is inside it)."},
    ParamSpec{.key = "reliability.reprovision_time_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "600", .lo = 0.0,
              .help = "Replacing a failed VM. With detection and restart: MegaScale's 'within 15 min'."},
    ParamSpec{.key = "reliability.spot_reprovision_mean_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "1800", .lo = 0.0,
              .help = "Mean wait for spot capacity after an eviction (exponential; an assumption)."},
    ParamSpec{.key = "reliability.restart_time_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "180", .lo = 0.0,
              .help = "Relaunching the job: processes, NCCL initialisation (the checkpoint reload is extra)."},
    // [cost]
    ParamSpec{.key = "cost.vm_price_usd_per_hour", .type = number, .unit = "USD/h", .need = Need::derived,
              .default_text = "the catalog's pay-as-you-go price", .lo = 0.0,
              .help = "On-demand price of one VM; required when the catalog has none for the VM size."},
    ParamSpec{.key = "cost.spot_discount", .type = number, .unit = "fraction", .need = Need::defaulted,
              .default_text = "0.7", .lo = 0.0, .hi = 1.0, .hi_open = true,
              .help = "Spot price = on-demand × (1 - discount). Azure: 60-90 % for GPU VMs (unverified range)."},
    ParamSpec{.key = "cost.storage_usd_per_gb_month", .type = number, .unit = "USD/(GB month)",
              .need = Need::defaulted, .default_text = "0.02", .lo = 0.0,
              .help = "Checkpoint storage (one checkpoint kept); an assumption near Azure Blob hot tier."},
    ParamSpec{.key = "cost.egress_usd_per_gb", .type = number, .unit = "USD/GB", .need = Need::defaulted,
              .default_text = "0.01", .lo = 0.0,
              .help = "Traffic between availability zones (Azure inter-AZ data transfer, each direction)."},
};

// Keys after the serving ones (scenario_params() splices serving_params() in between).
constexpr std::array kParamsAfter{
    // [analysis]
    ParamSpec{.key = "analysis.what_if", .type = string_list, .need = Need::defaulted, .default_text = "[]",
              .choices = kTrainingWhatIfNames,
              .help = "What-if perturbations of the step to add to every run (docs/what-if.md): `clustersim run` "
                      "prints their table as with --what-if, and each sweep point gets what_if_<name>_step_time_s "
                      "and what_if_<name>_change columns ('.' in a name written as 'p')."},
    // [simulation]
    ParamSpec{.key = "simulation.seed", .type = integer, .need = Need::defaulted, .default_text = "0", .min_int = 0,
              .help = "Base seed of every random stream of the run."},
    ParamSpec{.key = "simulation.fidelity", .type = string, .need = Need::defaulted, .default_text = "\"replica\"",
              .choices = kFidelities,
              .help = "replica: one representative GPU per pipeline stage runs the passes, collectives timed on the "
                      "whole cluster's traffic; full: every GPU runs its own timeline and collectives wait for "
                      "every member of their group."},
    ParamSpec{.key = "simulation.variability", .type = string, .need = Need::defaulted, .default_text = "\"off\"",
              .choices = kOnOff,
              .help = "on: every GPU computes at its own pace (a spread between GPUs of one SKU, and slow VMs) and "
                      "the step waits for the slowest (docs/model.md, \"Variability at scale\"): replica fidelity "
                      "runs the step at the expected slowest factor of the job's GPUs, full fidelity draws every "
                      "GPU and VM from simulation.seed; the report and /summary add the step time's p50 and p99. "
                      "off: every GPU at its nominal speed (the numbers of earlier releases)."},
    ParamSpec{.key = "simulation.gpu_compute_cv", .type = number, .unit = "fraction", .need = Need::derived,
              .default_text = "0.015 with variability on", .lo = 0.0, .hi = 0.1,
              .help = "With variability on: standard deviation of one GPU's compute-time factor around 1 (normal). "
                      "Default an estimate from Sinha et al., \"Not All GPUs Are Created Equal\", SC'22: an 8 % "
                      "average spread between GPUs of one SKU, read as a normal's whisker-to-whisker range (5.4 "
                      "sigma).",
              .bound_reason = "0.1: 2.5x the sigma of the largest spread Sinha et al. measured (22 % = 5.4 sigma); "
                              "above it a GPU's factor 1 + sigma Z could reach 0"},
    ParamSpec{.key = "simulation.slow_vm_fraction", .type = number, .unit = "probability", .need = Need::derived,
              .default_text = "0.005 with variability on", .lo = 0.0, .hi = 1.0,
              .help = "With variability on: probability that a VM is slow (fail-slow: a degraded host whose GPUs "
                      "all compute slow_vm_factor times longer). Default measured: MegaScale (NSDI'24) Sec. 5.1, "
                      "about 0.5 % of the machines of a 10,000-GPU job."},
    ParamSpec{.key = "simulation.slow_vm_factor", .type = number, .unit = "x compute time", .need = Need::derived,
              .default_text = "1.1 with variability on", .lo = 1.0, .hi = 10.0,
              .help = "With variability on: compute-time factor of a slow VM's GPUs. Default measured: MegaScale "
                      "(NSDI'24) Sec. 6.3, a straggling host took about 10 % longer for the same forward "
                      "computation.",
              .bound_reason = "10x: over 3x the average slowdown of jobs dominated by a faulty worker in ByteDance's "
                              "trace (3.04, Lin et al., OSDI'25)"},
};

std::string escape_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::span<const TableSpec> scenario_tables() { return kTables; }
std::span<const ParamSpec> scenario_params() {
  static const std::vector<ParamSpec> all = [] {
    std::vector<ParamSpec> v(kParamsBefore.begin(), kParamsBefore.end());
    const std::span<const ParamSpec> serving = serving_params();
    v.insert(v.end(), serving.begin(), serving.end());
    v.insert(v.end(), kParamsAfter.begin(), kParamsAfter.end());
    return v;
  }();
  return all;
}

const ParamSpec* find_param(std::string_view dotted) {
  for (const auto& p : scenario_params()) {
    if (p.key == dotted) return &p;
  }
  return nullptr;
}

const TableSpec* find_table(std::string_view name) {
  for (const auto& t : kTables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string_view type_name(ParamType t) {
  switch (t) {
    case integer: return "integer";
    case number: return "number";
    case string: return "string";
    case boolean: return "boolean";
    case zone_list: return "array of tables";
    case string_list: return "array of strings";
    case number_list: return "array of numbers";
  }
  return "?";
}

std::string format_number(double v) {
  std::array<char, 64> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), res.ptr);
}

std::string allowed_text(const ParamSpec& p) {
  switch (p.type) {
    case integer: {
      const bool has_min = p.min_int != std::numeric_limits<int64_t>::min();
      const bool has_max = p.max_int != std::numeric_limits<int64_t>::max();
      if (has_min && has_max && p.min_int == p.max_int) return std::to_string(p.min_int);
      if (has_min && has_max) return "in [" + std::to_string(p.min_int) + ", " + std::to_string(p.max_int) + "]";
      if (has_min) return ">= " + std::to_string(p.min_int);
      if (has_max) return "<= " + std::to_string(p.max_int);
      return "";
    }
    case number_list:
    case number: {
      const std::string each = p.type == number_list ? "each " : "";
      const bool has_lo = p.lo != -kInf;
      const bool has_hi = p.hi != kInf;
      if (has_lo && has_hi) {
        return each + "in " + (p.lo_open ? "(" : "[") + format_number(p.lo) + ", " + format_number(p.hi) +
               (p.hi_open ? ")" : "]");
      }
      if (has_lo) return each + (p.lo_open ? "> " : ">= ") + format_number(p.lo);
      if (has_hi) return each + (p.hi_open ? "< " : "<= ") + format_number(p.hi);
      return "";
    }
    case string_list:
    case string: {
      if (!p.choices.empty()) {
        std::string s = p.type == string_list ? "each one of " : "one of ";
        for (size_t i = 0; i < p.choices.size(); ++i) {
          if (i > 0) s += ", ";
          s += p.choices[i];
        }
        return s;
      }
      return p.non_empty ? "non-empty" : "";
    }
    case boolean:
    case zone_list: return "";
  }
  return "";
}

}  // namespace clustersim::sim::detail

namespace clustersim::sim {

std::string scenario_keys_markdown() {
  using namespace detail;
  std::ostringstream md;
  md << "| Key | Type | Unit | Default | Meaning |\n";
  md << "|---|---|---|---|---|\n";
  for (const auto& t : scenario_tables()) {
    if (!t.name.empty()) {
      md << "| **`[" << t.name << "]`** | table | | " << (t.required ? "required" : "optional") << " | "
         << escape_cell(t.help) << " |\n";
    }
    for (const auto& p : scenario_params()) {
      if (p.table() != t.name) continue;
      std::string type{type_name(p.type)};
      if (const auto allowed = allowed_text(p); !allowed.empty()) {
        type += (p.type == ParamType::integer && p.min_int == p.max_int) ? ", exactly " : ", ";
        type += allowed;
      }
      std::string def;
      switch (p.need) {
        case Need::required:
          def = "required";
          if (!t.required) def.append(" in `[").append(t.name).append("]`");
          break;
        case Need::defaulted: def.append("`").append(p.default_text).append("`"); break;
        case Need::derived: def.append("= ").append(p.default_text); break;
        case Need::optional: def = "—"; break;
      }
      std::string meaning{p.help};
      if (!p.bound_reason.empty()) meaning.append(" Bound: ").append(p.bound_reason).append(".");
      md << "| `" << p.key << "` | " << escape_cell(type) << " | " << (p.unit.empty() ? "—" : p.unit) << " | "
         << escape_cell(def) << " | " << escape_cell(meaning) << " |\n";
    }
  }
  return md.str();
}

}  // namespace clustersim::sim
