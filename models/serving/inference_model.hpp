// The time of one LLM inference iteration on one replica (issue 15): a continuous-batching engine (vLLM,
// TensorRT-LLM) runs one forward pass per iteration over the tokens of that iteration's batch, prefill chunks
// and one token of each decoding sequence together, and every sequence that completes its prompt or decodes
// samples one token. Dense decoder-only transformers (GPT, Llama); tensor parallelism inside one replica.
//
// Per layer, with T = prefill tokens + decoding sequences, h the width, a heads, g key/value heads, d the head
// dimension, f the MLP width and t the tensor-parallel size (Megatron's split, Shoeybi et al. 2019):
//   GEMMs       QKV [T, (a + 2g) d / t, h], output [T, h, a d / t], MLP [T, 2f / t (gated) or f / t, h] and
//               [T, h, f / t] through ComputeModel::gemm_time: the roofline makes decoding (small T) memory-bound
//               on the weights and prefill compute-bound, with wave and tile quantisation;
//   attention   prefill: FlashAttention over the chunk's causal (query, key) pairs, 4 d flops per pair and
//               head (QK^T and PV); decode: memory-bound, each sequence's K and V read once
//               (PagedAttention, Kwon et al. SOSP 2023), g / t heads of d at the KV precision;
//   element-wise two RMSNorm/LayerNorms, two residual adds, RoPE on q and k, the activation: memory-bound
//               on their reads and writes;
//   TP comm     two all-reduces of T x h activations (bf16) per layer when t > 1 (Megatron);
// A mixture-of-experts layer (Mixtral; Jiang et al. 2024) replaces the MLP with a router [T, E, h], the routed
// experts as one grouped GEMM over the experts that received tokens (each expert split t ways: TensorRT-LLM's
// Mapping and vLLM's fused MoE shard experts by tensor parallelism unless expert parallelism is asked for), an
// optional shared expert, and the permutation of the T k (token, expert) pairs to their experts and back. With
// uniform routing, T tokens of top-k over E experts touch E (1 - (1 - k / E)^T) experts in expectation: a small
// decode batch reads only those experts' weights, a large one all of them.
// plus the LM head for the sampled sequences [S, V / t, h] and its logits gathered, and a per-iteration engine
// overhead (scheduling, input preparation, sampling, output processing on the CPU) of a + b x sequences:
// vLLM's iteration overhead is a large share of a decode step (Srivatsa et al., "Is the GPU half-empty or
// half-full? Practical scheduling overheads in LLM serving", WukLab 2024: over half of the time at small
// models), an assumption until serving benchmarks calibrate it.
//
// Multi-latent attention (models/serving/mla.hpp) replaces the attention's projections, cache and kernels for a
// model that has it; expert parallelism with or without data-parallel attention
// (models/serving/expert_parallel_serving.hpp) replaces the tensor-parallel experts and, with DP attention, runs
// the rest of the layer on each rank's share of the batch (issue 30).
//
// The kernels run at the device's microbenchmark rates (achievable matmul and stream triad, not the training
// fractions, which describe training steps).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/hardware/catalog.hpp"
#include "models/precision.hpp"
#include "models/serving/expert_parallel_serving.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// Numerics of a served model: the GEMMs' math precision and the bytes of a weight and of a KV-cache element.
/// bf16: bf16 / 2 / 2; fp8 (W8A8, Transformer Engine / vLLM fp8): fp8 / 1; int8 weight-only (W8A16): bf16
/// math with 1-byte weights; kv_bytes 1 for an fp8 KV cache (vLLM --kv-cache-dtype fp8); fp4 (NVFP4 W4A4 on
/// Blackwell): the low-precision GEMM path (math fp8, activations bf16 outside the GEMMs) at the device's FP4
/// tensor-core rate (`fp4`), 0.5625-byte weights (kNvfp4WeightBytes).
struct ServingNumerics {
  Precision math = Precision::bf16;
  double weight_bytes = 2.0;
  double kv_bytes = 2.0;
  /// GEMMs on FP4 tensor cores: InferenceModel runs `math` (fp8) at DeviceSpec::peak_fp4, and a measured fp8
  /// matmul rate scaled by peak_fp4 / peak_fp8 (the device's fp8 microbenchmark fraction: no FP4 GEMM
  /// measurement is in the catalog). Training has no fp4 precision: models::Precision stays as it is.
  bool fp4 = false;
  /// The 16-bit type of the activations, attention and LM head: the GEMMs' own, or bf16 when they run in fp8.
  [[nodiscard]] Precision activations() const { return math == Precision::fp8 ? Precision::bf16 : math; }
};

/// Bytes of an NVFP4 weight: a 4-bit E2M1 value plus one FP8 E4M3 scale per 16-value block, 0.5 + 1 / 16 =
/// 0.5625 (NVIDIA technical blog "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
/// 2025-06-24: "a 16-value micro-block ... shares an FP8 E4M3 scale"; the per-tensor FP32 scale is negligible).
inline constexpr double kNvfp4WeightBytes = 0.5 + 1.0 / 16.0;

/// The numerics of serving.precision (bf16 | fp16 | fp8 | int8 | fp4) with an fp8 KV cache or not: bf16 and fp16 in
/// 2-byte weights; fp8 W8A8 in fp8 math and 1-byte weights; int8 weight-only (W8A16: the AWQ/GPTQ/Marlin kernels
/// dequantize to fp16 activations, which every GPU has) in fp16 math and 1-byte weights; fp4 NVFP4 W4A4
/// (TensorRT Model Optimizer's NVFP4 recipe: weights and GEMM inputs in NVFP4) in kNvfp4WeightBytes weights on
/// FP4 tensor cores (ServingNumerics::fp4). Throws
/// std::invalid_argument for another precision.
ServingNumerics serving_numerics(std::string_view precision, bool kv_cache_fp8);

/// One iteration's batch on one replica.
struct IterationBatch {
  int64_t prefill_tokens = 0;          ///< prompt tokens computed this iteration (sum over the chunks)
  double prefill_attention_pairs = 0;  ///< sum over the chunks of their causal (query, key) pairs
  int64_t decode_sequences = 0;        ///< sequences generating one token
  int64_t decode_kv_tokens = 0;        ///< sum of the decoding sequences' cached tokens (keys read)
  /// Queries each decoding sequence runs: 1, or k + 1 in a speculative verify pass (models/serving/speculative.hpp):
  /// its GEMM rows and element-wise tokens, and its new tokens' K and V written, are decode_sequences x this; its
  /// cached keys are still read once (the k + 1 queries share them).
  int64_t decode_queries = 1;
  int64_t sampled_sequences = 0;       ///< sequences that sample a token (decodes + prompts completed)
  /// Whether the engine's scheduler ran (and prepared the inputs) before this iteration, paying the fixed host
  /// work: false for the later iterations of a multi-step block (vLLM --num-scheduler-steps), which reuse it.
  bool scheduled = true;
};

/// The causal (query, key) pairs of a prefill chunk of `chunk` tokens after `cached` tokens: each new token
/// attends to the cached ones and to itself and the earlier new ones, chunk x cached + chunk (chunk + 1) / 2.
double prefill_attention_pairs(int64_t cached, int64_t chunk);

/// Experts that receive at least one of `tokens` tokens when each picks `topk` of `experts` uniformly, in
/// expectation: experts x (1 - (1 - topk / experts)^tokens).
double moe_experts_touched(int64_t tokens, int64_t experts, int64_t topk);

/// Where an iteration's time goes, s.
struct IterationTime {
  units::Seconds gemm;           ///< the layers' GEMMs and the LM head
  units::Seconds attention;      ///< prefill FlashAttention and decode PagedAttention
  units::Seconds memory_bound;   ///< norms, residual adds, RoPE, activation, sampling
  units::Seconds communication;  ///< tensor-parallel all-reduces and the logits gather
  units::Seconds collective_launch;  ///< the host's NCCL calls on the critical path (EngineOverhead::collective_launch)
  units::Seconds overhead;       ///< the engine's CPU work per iteration the GPU waits for
  [[nodiscard]] units::Seconds total() const {
    return gemm + attention + memory_bound + communication + collective_launch + overhead;
  }
  /// The GPU's share: every kernel and collective, without the host's work.
  [[nodiscard]] units::Seconds gpu() const { return gemm + attention + memory_bound + communication; }
};

/// How an engine's host work of one iteration meets the GPU's.
///   serial        the GPU waits for all of it: scheduling, input preparation, sampling's output processing and
///                 detokenisation run between two forward passes (vLLM up to v0.5, Srivatsa et al., WukLab 2024;
///                 TensorRT-LLM's C++ runtime; LMDeploy's TurboMind);
///   async_output  the per-sequence part (output processing) of iteration k runs while the GPU computes k + 1, so
///                 only its excess over the GPU time is exposed; the fixed part (scheduling, inputs) stays serial
///                 (vLLM v0.6.0's "asynchronous output processing", vLLM blog 2024-09-05; vLLM V1's separate
///                 output process);
///   overlapped    all of it runs while the GPU computes the previous batch, only its excess over the GPU time
///                 exposed (SGLang v0.4's zero-overhead batch scheduler: "the CPU schedules batch k + 1 while the
///                 GPU runs batch k", LMSYS blog "SGLang v0.4", 2024-12-04).
enum class HostOverlap { serial, async_output, overlapped };

/// Per-iteration CPU work of the engine: fixed + per_sequence x the sequences that sample a token (decodes and
/// completed prompts: sampling, detokenisation and output processing are per produced token), exposed as
/// `overlap` says; and the host's cost of each NCCL call an iteration makes.
struct EngineOverhead {
  units::Seconds fixed = units::milliseconds(1.0);
  units::Seconds per_sequence = units::microseconds(10.0);
  HostOverlap overlap = HostOverlap::serial;
  /// Host time of one collective call, paid on the iteration's critical path, for an engine that calls NCCL from
  /// the host for every tensor-parallel all-reduce and pipeline send of every iteration (no CUDA-graph replay, no
  /// custom all-reduce kernel): a collective completes only when every rank has launched it. Vidur (Agrawal et
  /// al., MLSys 2024) adds 0.02 ms per all-reduce (vidur/config/config.py, nccl_cpu_launch_overhead_ms). 0 for an
  /// engine that replays its collectives from a CUDA graph or reduces with its own kernel.
  units::Seconds collective_launch{0.0};
};

/// The host time of one NCCL collective call on an iteration's critical path: 20 us, Vidur's default
/// (microsoft/vidur, vidur/config/config.py: nccl_cpu_launch_overhead_ms = 0.02, added to every tensor-parallel
/// all-reduce by its execution-time predictor) for an engine that calls NCCL from the host every layer.
inline constexpr units::Seconds kNcclCallHost = units::microseconds(20.0);

/// What an engine release's kernels do differently from the model's default (models/serving/engine_profile.cpp).
struct EngineKernels {
  /// Decode attention reads each key/value head once for every query head of its group (a / g times the
  /// grouped-query cache traffic): TensorRT-LLM's masked multi-head attention before v0.7 launched one block per
  /// (sequence, query head), each loading its group's K and V (release notes v0.7.1: "MMHA optimization for MQA
  /// and GQA"; XQA blog, v0.8a: 2.4x Llama-70B throughput with the GQA-aware kernel). False: once per group.
  bool kv_read_per_query_head = false;
};

/// How an engine sizes its KV cache, per GPU. vLLM (`gpu_memory_utilization`, default 0.9): the fraction of the
/// whole memory the engine may use, less the weights, the profile run's activations and the non-torch memory.
/// TensorRT-LLM (`kv_cache_free_gpu_mem_fraction`, default 0.9) and LMDeploy (`cache_max_entry_count`, a
/// fraction since v0.2): the fraction of the memory left free once the weights and the runtime's buffers are
/// in place.
struct KvCacheBudget {
  double memory_fraction = 0.9;
  bool of_free_memory = false;        ///< false: of the whole memory (vLLM); true: of what is free (TRT-LLM, LMDeploy)
  int64_t max_batched_tokens = 8192;  ///< the widest forward pass the activations are sized for
  int64_t max_num_seqs = 256;         ///< sequences sampled at once (the logits' rows)
  int64_t block_size = 16;            ///< tokens per block: the cache holds whole blocks
};

/// Time of an all-reduce of the given bytes over the replica's tensor-parallel GPUs (zero when t = 1).
using AllReduceTime = std::function<units::Seconds(units::Bytes)>;

/// Pipeline parallelism inside a replica (vLLM --pipeline-parallel-size): `stages` groups of t GPUs, each holding
/// a contiguous ceil(layers / stages) layers (the first stage the embedding, the last the LM head), and
/// `send`, the time to pass an activation of the given bytes (per tensor-parallel rank) over all stages'
/// boundaries, one after the other. One iteration's batch passes through every stage in turn, so its latency is
/// the whole model's kernels plus the sends; the engine keeps `stages` batches in flight (vLLM's virtual engines,
/// sim/serving) to keep every stage busy.
struct PipelineStages {
  int64_t stages = 1;
  std::function<units::Seconds(units::Bytes)> send;  ///< over the stages - 1 boundaries; needed when stages > 1
};

class InferenceModel;

/// A memo of the parts of InferenceModel::iteration_time that depend only on the batch's token count (the layers'
/// GEMMs, an MoE layer's routed GEMMs and kernels without expert parallelism) or on its sampled sequences (the LM
/// head), filled as they are first asked for. Each entry holds the value the model computes for that exact input,
/// so an iteration timed with the memo is bit-identical to one timed without (issue 31: the serving engine asks
/// for about a million iterations of a few thousand distinct shapes; the measured-GEMM interpolation was a third
/// of its time). Owned by its caller, one per model and thread (no shared mutable state: the model stays
/// immutable and thread-safe). Memory: 48 B per token count seen up to kMaxTokens, 8 B per sampled count;
/// larger counts are computed every time.
class IterationMemo {
 public:
  /// The largest token (or sampled) count memoised: 2^16 (3 MiB at most); vLLM's default budget is 8,192.
  static constexpr int64_t kMaxTokens = int64_t{1} << 16;

 private:
  friend class InferenceModel;
  struct TokenTerms {
    bool filled = false;
    units::Seconds dense_mlp{0.0};    ///< a dense layer's MLP GEMMs
    units::Seconds projections{0.0};  ///< a layer's attention projections (not with MLA)
    units::Seconds moe_gemm{0.0};     ///< an MoE layer's routed GEMMs (without expert parallelism)
    units::Seconds moe_memory{0.0};   ///< its memory-bound kernels
  };
  const InferenceModel* owner_ = nullptr;  ///< the model whose values it holds (the first to use it)
  std::vector<TokenTerms> by_tokens_;
  std::vector<units::Seconds> lm_head_;  ///< by sampled sequences; negative: not yet computed
};

class InferenceModel {
 public:
  /// A multi-latent-attention model runs MLA as models/serving/mla.hpp says (absorbed decode, un-absorbed
  /// prefill, the latent KV cache); `expert_parallel` lays its MoE layers out as expert_parallel_serving.hpp says
  /// (default: none, the experts tensor-parallel).
  /// Throws std::invalid_argument for tensor < 1 or not
  /// dividing the heads, the key/value heads (or being a multiple of them) and the MLP and experts' widths,
  /// moe_router_topk outside [1, num_experts], non-positive byte widths, a missing all_reduce with tensor > 1;
  /// pipeline stages < 1 or above the layers, or a missing send with stages > 1; expert parallelism on a dense
  /// model, with pipeline stages, ranks not dividing the experts (+ redundant), data-parallel attention with
  /// tensor > 1 or tensor-parallel attention with tensor != ranks; std::out_of_range when the device lacks `math`
  /// (or FP4 tensor cores, DeviceSpec::peak_fp4, for fp4 numerics).
  InferenceModel(const ModelConfig& model, ServingNumerics numerics, int64_t tensor, const DeviceSpec& device,
                 double device_share, AllReduceTime all_reduce, EngineOverhead overhead, PipelineStages pipeline = {},
                 EngineKernels kernels = {}, ExpertParallelServing expert_parallel = {});

  /// The time of one iteration of `batch` (at least one token): its kernels and collectives, the host's NCCL
  /// calls when the engine makes them (2 per layer with tensor > 1, one for the logits gather, one per pipeline
  /// boundary), and the host work the GPU waits for: serial, fixed (when `scheduled`) + per_sequence x sampled;
  /// async_output, the fixed part and the per-sequence part's excess over the GPU time; overlapped, the excess of
  /// both over the GPU time. Throws
  /// std::invalid_argument on negative counts or an empty batch.
  [[nodiscard]] IterationTime iteration_time(const IterationBatch& batch) const;
  /// iteration_time(batch), bit-identical, reading and filling `memo` (IterationMemo) for its token-count terms.
  /// Throws std::invalid_argument as iteration_time does, or for a memo filled by another model.
  [[nodiscard]] IterationTime iteration_time(const IterationBatch& batch, IterationMemo& memo) const;

  /// Weights held by one GPU (of the fullest pipeline stage): the layers' at the numerics' weight bytes (an MoE
  /// layer: all its experts, split t ways, and its router at kEmbeddingBytes), and the embedding and LM head
  /// (untied and one stage: both) at kEmbeddingBytes, split t ways, B.
  [[nodiscard]] units::Bytes weight_bytes_per_gpu() const;
  /// KV-cache bytes one token takes on one GPU: 2 (K and V) x ceil(layers / stages) x ceil(g / t) x d x kv_bytes;
  /// MLA: ceil(layers / stages) x (kv_lora_rank + qk_pos_emb_head_dim) x kv_bytes on every rank (mla.hpp).
  [[nodiscard]] units::Bytes kv_bytes_per_token_per_gpu() const;
  /// Tokens of KV cache one replica holds under `budget`, rounded down to whole blocks; 0 when the weights
  /// leave no room. The runtime's buffers: the activations of one forward pass of max_batched_tokens (a
  /// layer's widest tensors, the MLP's and the QKV output, in bf16) and the fp32 logits of the sampled
  /// sequences (min(max_batched_tokens, max_num_seqs) rows: engines compute logits only for the positions
  /// they sample), and the non-torch reserve. Throws std::invalid_argument on a fraction outside (0, 1] or a
  /// non-positive count. With data-parallel attention each rank holds its own sequences and sizes its buffers
  /// for its share (ceil(count / ranks) of the tokens and sequences): the replica holds ranks x one GPU's blocks.
  [[nodiscard]] int64_t kv_cache_tokens(const KvCacheBudget& budget) const;

  [[nodiscard]] int64_t tensor() const { return tensor_; }
  [[nodiscard]] int64_t pipeline() const { return pipeline_.stages; }
  [[nodiscard]] const ExpertParallelServing& expert_parallel() const { return ep_; }
  [[nodiscard]] const ModelConfig& model() const { return model_; }

  InferenceModel(const InferenceModel&) = delete;  // compute_ points into device_
  InferenceModel& operator=(const InferenceModel&) = delete;

  /// Bytes of an embedding or LM-head weight at every precision: fp8 and int8 quantization leave both in
  /// 16 bits (TensorRT Model Optimizer's default configurations exclude `*lm_head*`; vLLM quantizes linear
  /// layers, not ParallelLMHead or the embedding).
  static constexpr double kEmbeddingBytes = 2.0;

  /// CUDA context, NCCL buffers and the allocator's slack that vLLM's memory profile counts as non-torch
  /// memory, per GPU: 1.5 GiB, an assumption (vLLM logs report 0.5-2 GiB on H100).
  static constexpr units::Bytes kNonTorchReserve = units::gib(1.5);

 private:
  /// One MoE layer's routed GEMMs (router, experts, shared expert) and memory-bound kernels.
  struct MoeLayerTime {
    units::Seconds gemm{0.0};
    units::Seconds memory_bound{0.0};
  };
  [[nodiscard]] MoeLayerTime moe_layer_time(int64_t tokens) const;
  /// iteration_time's body; memo may be null (every term computed).
  [[nodiscard]] IterationTime timed(const IterationBatch& batch, IterationMemo* memo) const;
  /// The terms of `tokens` tokens (IterationMemo::TokenTerms), from `memo` when it holds them.
  [[nodiscard]] IterationMemo::TokenTerms token_terms(int64_t tokens, IterationMemo* memo) const;
  /// The LM head's GEMM over `sampled` sequences, from `memo` when it holds it.
  [[nodiscard]] units::Seconds lm_head_time(int64_t sampled, IterationMemo* memo) const;
  /// A GEMM of `batch` instances of [rows, n, k] with weights of `weight_bytes` per element at math precision p:
  /// ComputeModel::gemm_time, whose split-K roofline runs a decode batch's skinny shapes at the weights' streaming
  /// rate (as cuBLAS's split-K and the engines' GEMV paths do) and whose measured tables (A100, H100, H200) time
  /// them as measured.
  [[nodiscard]] units::Seconds weight_gemm_time(int64_t rows, int64_t n, int64_t k, int64_t batch,
                                                double weight_bytes, Precision p) const;

  ModelConfig model_;
  ServingNumerics numerics_;
  int64_t tensor_;
  PipelineStages pipeline_;
  int64_t moe_layers_;  ///< MoE layers of the model (iteration_time runs every layer: all of them)
  DeviceSpec device_;     ///< at its microbenchmark rates; compute_ points to it (declared before it)
  ComputeModel compute_;
  AllReduceTime all_reduce_;
  EngineOverhead overhead_;
  EngineKernels kernels_;
  ExpertParallelServing ep_;
  units::Bytes memory_capacity_;
  AttentionKernel attention_kernel_;
};

}  // namespace clustersim::models
