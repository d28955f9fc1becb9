#include "models/serving/inference_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/serving/mla.hpp"

namespace clustersim::models {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("inference model: " + what);
}

/// The device at its microbenchmark rates: inference kernels are not a training step.
DeviceSpec at_microbenchmark_rates(DeviceSpec d) {
  d.training_matmul_fraction = 1.0;
  d.training_memory_fraction = 1.0;
  return d;
}

/// FP4 numerics: the fp8 GEMM path at the FP4 tensor-core peak, a measured fp8 rate scaled by the same peak
/// ratio (the fp8 microbenchmark fraction). std::out_of_range for a device without FP4 tensor cores.
DeviceSpec with_fp4_rates(DeviceSpec d) {
  if (!d.peak_fp4) throw std::out_of_range("inference model: the " + d.name + " has no FP4 tensor cores");
  const auto fp8 = d.peak.find(Precision::fp8);
  if (fp8 == d.peak.end() || !(fp8->second.value() > 0.0)) {
    throw std::out_of_range("inference model: the " + d.name + " has no fp8 rate to scale to fp4");
  }
  const double ratio = d.peak_fp4->value() / fp8->second.value();
  if (d.achievable_matmul_fp8) d.achievable_matmul_fp8 = *d.achievable_matmul_fp8 * ratio;
  fp8->second = *d.peak_fp4;
  return d;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr double kActivationBytes = 2.0;  // 16-bit activations

}  // namespace

double moe_experts_touched(int64_t tokens, int64_t experts, int64_t topk) {
  const double e = static_cast<double>(experts);
  return e * (1.0 - std::pow(1.0 - static_cast<double>(topk) / e, static_cast<double>(tokens)));
}

double prefill_attention_pairs(int64_t cached, int64_t chunk) {
  const double c = static_cast<double>(chunk);
  return c * static_cast<double>(cached) + c * (c + 1.0) / 2.0;
}

InferenceModel::InferenceModel(const ModelConfig& model, ServingNumerics numerics, int64_t tensor,
                               const DeviceSpec& device, double device_share, AllReduceTime all_reduce,
                               EngineOverhead overhead, PipelineStages pipeline, EngineKernels kernels,
                               ExpertParallelServing expert_parallel)
    : model_(model),
      numerics_(numerics),
      tensor_(tensor),
      pipeline_(std::move(pipeline)),
      moe_layers_(model.moe_layers_in(0, model.num_layers)),
      device_(numerics.fp4 ? with_fp4_rates(at_microbenchmark_rates(device)) : at_microbenchmark_rates(device)),
      compute_(device_, device_share),
      all_reduce_(std::move(all_reduce)),
      overhead_(overhead),
      kernels_(kernels),
      ep_(std::move(expert_parallel)),
      memory_capacity_(device.memory_capacity * device_share),
      attention_kernel_(device.flash_attention_3 ? AttentionKernel::flash3 : AttentionKernel::flash2) {
  require(model.num_layers >= 1 && model.hidden_size >= 1 && model.num_attention_heads >= 1 &&
              model.vocab_size >= 1,
          "layers, width, heads and vocabulary must be positive");
  require(tensor >= 1, "tensor must be >= 1, got " + std::to_string(tensor));
  require(model.num_attention_heads % tensor == 0, "tensor " + std::to_string(tensor) + " does not divide the " +
                                                       std::to_string(model.num_attention_heads) + " heads");
  const int64_t g = model.kv_heads();
  require(g % tensor == 0 || tensor % g == 0,
          "tensor " + std::to_string(tensor) + " neither divides nor is a multiple of the " + std::to_string(g) +
              " key/value heads");
  require(model.ffn() % tensor == 0, "tensor does not divide the MLP width " + std::to_string(model.ffn()));
  if (model.moe()) {
    require(model.moe_router_topk >= 1 && model.moe_router_topk <= model.num_experts,
            "moe_router_topk must be in [1, num_experts]");
    require(model.expert_ffn() % tensor == 0 && model.moe_shared_expert_intermediate_size % tensor == 0,
            "tensor does not divide the experts' MLP width " + std::to_string(model.expert_ffn()));
  }
  require(ep_.ranks >= 1 && ep_.redundant_experts >= 0, "expert-parallel ranks must be >= 1");
  if (ep_.enabled()) {
    require(model.moe(), "expert parallelism needs an MoE model");
    require(pipeline_.stages == 1, "expert parallelism with pipeline stages is not modelled");
    require((model.num_experts + ep_.redundant_experts) % ep_.ranks == 0,
            "expert-parallel ranks must divide the experts (+ redundant)");
    require(ep_.data_parallel_attention ? tensor == 1 : tensor == ep_.ranks,
            "data-parallel attention runs at tensor 1, tensor-parallel attention at tensor = expert-parallel ranks");
  }
  require(!ep_.data_parallel_attention || ep_.enabled(), "data-parallel attention needs expert parallelism");
  require(numerics.weight_bytes > 0 && numerics.kv_bytes > 0, "weight and KV bytes must be positive");
  require(tensor == 1 || static_cast<bool>(all_reduce_), "tensor > 1 needs an all-reduce time");
  require(pipeline_.stages >= 1 && pipeline_.stages <= model.num_layers,
          "pipeline stages must be in [1, layers], got " + std::to_string(pipeline_.stages));
  require(pipeline_.stages == 1 || static_cast<bool>(pipeline_.send), "pipeline stages > 1 need a send time");
  (void)compute_.peak(numerics.math);  // std::out_of_range when the device lacks the precision
}

units::Seconds InferenceModel::weight_gemm_time(int64_t rows, int64_t n, int64_t k, int64_t batch,
                                               double weight_bytes, Precision p) const {
  return compute_.gemm_time({rows, n, k, batch}, p, weight_bytes);
}

InferenceModel::MoeLayerTime InferenceModel::moe_layer_time(int64_t tokens) const {
  const ModelConfig& m = model_;
  const int64_t t = tensor_, h = m.hidden_size, fe = m.expert_ffn() / t, gated = m.gated_mlp ? 2 : 1;
  const int64_t assignments = tokens * m.moe_router_topk;  // (token, expert) pairs
  // The fused MoE kernel runs one grouped GEMM over the experts that received tokens, each padded to its own
  // row tiles: the expected count of experts touched, and the assignments spread evenly over them.
  const int64_t touched = std::clamp<int64_t>(
      std::llround(moe_experts_touched(tokens, m.num_experts, m.moe_router_topk)), 1, m.num_experts);
  const int64_t rows = ceil_div(assignments, touched);
  MoeLayerTime r;
  r.gemm = weight_gemm_time(tokens, m.num_experts, h, 1, kEmbeddingBytes, numerics_.activations()) +  // router
           weight_gemm_time(rows, gated * fe, h, touched, numerics_.weight_bytes, numerics_.math) +
           weight_gemm_time(rows, h, fe, touched, numerics_.weight_bytes, numerics_.math);
  const int64_t fs = m.moe_shared_expert_intermediate_size / t;
  if (fs > 0) {
    r.gemm += weight_gemm_time(tokens, gated * fs, h, 1, numerics_.weight_bytes, numerics_.math) +
              weight_gemm_time(tokens, h, fs, 1, numerics_.weight_bytes, numerics_.math);
  }
  // The router's softmax and top-k over fp32 logits, the permutation of the tokens to their experts and back
  // (weighted by the router's scores: read and write T h and T k h each way), and the experts' activation.
  const double T = static_cast<double>(tokens), A = static_cast<double>(assignments);
  const double width = static_cast<double>(h);
  r.memory_bound = compute_.memory_time(units::Bytes(T * static_cast<double>(m.num_experts) * 4.0 * 2.0)) +
                   2.0 * compute_.memory_time(units::Bytes(kActivationBytes * width * (T + A))) +
                   compute_.memory_time(units::Bytes(A * kActivationBytes * static_cast<double>(fe) *
                                                     (m.gated_mlp ? 3.0 : 2.0)));
  if (fs > 0) {
    r.memory_bound += compute_.memory_time(units::Bytes(T * kActivationBytes * static_cast<double>(fs) *
                                                        (m.gated_mlp ? 3.0 : 2.0)));
  }
  return r;
}

IterationMemo::TokenTerms InferenceModel::token_terms(int64_t tokens, IterationMemo* memo) const {
  const bool memoised = memo != nullptr && tokens <= IterationMemo::kMaxTokens;
  if (memoised && static_cast<size_t>(tokens) < memo->by_tokens_.size() &&
      memo->by_tokens_[static_cast<size_t>(tokens)].filled) {
    return memo->by_tokens_[static_cast<size_t>(tokens)];
  }
  const ModelConfig& m = model_;
  const int64_t t = tensor_;
  const int64_t h = m.hidden_size, a = m.num_attention_heads, d = m.head_dim(), f = m.ffn();
  const int64_t kv_heads_per_gpu = ceil_div(m.kv_heads(), t);
  const int64_t gated = m.gated_mlp ? 2 : 1;
  // A layer's GEMM [rows, n, k] at the layer numerics.
  const auto gemm_time = [&](int64_t rows, int64_t n, int64_t k) {
    return weight_gemm_time(rows, n, k, 1, numerics_.weight_bytes, numerics_.math);
  };
  IterationMemo::TokenTerms terms;
  terms.filled = true;
  terms.dense_mlp = gemm_time(tokens, gated * f / t, h) + gemm_time(tokens, h, f / t);
  if (!m.multi_latent_attention) {
    terms.projections = gemm_time(tokens, (a / t + 2 * kv_heads_per_gpu) * d, h) + gemm_time(tokens, h, a / t * d);
  }
  if (moe_layers_ > 0 && !ep_.enabled()) {
    const MoeLayerTime moe = moe_layer_time(tokens);
    terms.moe_gemm = moe.gemm;
    terms.moe_memory = moe.memory_bound;
  }
  if (memoised) {
    if (static_cast<size_t>(tokens) >= memo->by_tokens_.size()) memo->by_tokens_.resize(static_cast<size_t>(tokens) + 1);
    memo->by_tokens_[static_cast<size_t>(tokens)] = terms;
  }
  return terms;
}

units::Seconds InferenceModel::lm_head_time(int64_t sampled, IterationMemo* memo) const {
  const bool memoised = memo != nullptr && sampled <= IterationMemo::kMaxTokens;
  if (memoised && static_cast<size_t>(sampled) < memo->lm_head_.size() &&
      memo->lm_head_[static_cast<size_t>(sampled)].value() >= 0.0) {
    return memo->lm_head_[static_cast<size_t>(sampled)];
  }
  const ModelConfig& m = model_;
  const int64_t t = tensor_;
  const units::Seconds time = weight_gemm_time(sampled, m.vocab_size / t + (m.vocab_size % t != 0 ? 1 : 0),
                                               m.hidden_size, 1, kEmbeddingBytes, numerics_.activations());
  if (memoised) {
    if (static_cast<size_t>(sampled) >= memo->lm_head_.size()) {
      memo->lm_head_.resize(static_cast<size_t>(sampled) + 1, units::Seconds(-1.0));
    }
    memo->lm_head_[static_cast<size_t>(sampled)] = time;
  }
  return time;
}

IterationTime InferenceModel::iteration_time(const IterationBatch& batch) const { return timed(batch, nullptr); }

IterationTime InferenceModel::iteration_time(const IterationBatch& batch, IterationMemo& memo) const {
  if (memo.owner_ == nullptr) memo.owner_ = this;
  require(memo.owner_ == this, "an iteration memo holds another model's values");
  return timed(batch, &memo);
}

IterationTime InferenceModel::timed(const IterationBatch& batch, IterationMemo* memo) const {
  require(batch.prefill_tokens >= 0 && batch.decode_sequences >= 0 && batch.decode_kv_tokens >= 0 &&
              batch.sampled_sequences >= 0 && batch.prefill_attention_pairs >= 0 && batch.decode_queries >= 1,
          "negative batch counts");
  // The replica's tokens: prompt chunks and each decoding sequence's queries (k + 1 under speculation's verify).
  const int64_t routed = batch.prefill_tokens + batch.decode_sequences * batch.decode_queries;
  require(routed >= 1, "an iteration needs at least one token");
  // With data-parallel attention every rank runs its share; the busiest rank sets the pace.
  const IterationBatch b = ep_.data_parallel_attention ? dp_rank_share(batch, ep_.ranks) : batch;
  const int64_t decode_tokens = b.decode_sequences * b.decode_queries;
  const int64_t tokens = b.prefill_tokens + decode_tokens;
  const ModelConfig& m = model_;
  const int64_t t = tensor_;
  const int64_t h = m.hidden_size, a = m.num_attention_heads, d = m.head_dim(), f = m.ffn();
  const int64_t kv_heads_per_gpu = ceil_div(m.kv_heads(), t);
  const Precision activations = numerics_.activations();

  IterationTime it;
  // The GEMMs that depend on the token count alone (token_terms, memoised when a memo is given).
  const IterationMemo::TokenTerms terms = token_terms(tokens, memo);
  // One layer's attention projections; every layer has them.
  units::Seconds gemm{0.0};
  // A dense layer's MLP.
  const units::Seconds dense_mlp = terms.dense_mlp;
  units::Seconds attention{0.0};
  if (m.multi_latent_attention) {
    const MlaLayerTime mla = mla_layer_time(
        m, t, compute_, numerics_.math, activations, numerics_.weight_bytes, numerics_.kv_bytes, attention_kernel_,
        {tokens, b.prefill_tokens, b.prefill_attention_pairs, b.decode_sequences, b.decode_kv_tokens,
         b.decode_queries});
    gemm = mla.gemm;
    attention = mla.attention;
  } else {
    gemm = terms.projections;
  }
  if (!m.multi_latent_attention && b.prefill_tokens > 0) {
    const units::Flops flops(4.0 * b.prefill_attention_pairs * static_cast<double>(d) *
                             static_cast<double>(a / t));
    attention += compute_.attention_time(flops, activations, attention_kernel_);
  }
  if (!m.multi_latent_attention && b.decode_sequences > 0) {
    // PagedAttention reads each sequence's K and V once (and writes the new token's); a kernel without grouped-query
    // sharing reads them once per query head of the group.
    const double reads = kernels_.kv_read_per_query_head
                             ? static_cast<double>(a / t) / static_cast<double>(kv_heads_per_gpu)
                             : 1.0;
    const double bytes = 2.0 * static_cast<double>(b.decode_kv_tokens + decode_tokens) *
                         static_cast<double>(kv_heads_per_gpu * d) * numerics_.kv_bytes * std::max(reads, 1.0);
    attention += compute_.memory_time(units::Bytes(bytes));
  }
  // Element-wise kernels, bytes per token: two norms (read, write h), two residual adds (read 2h, write h),
  // RoPE on q and k (read, write), the activation (gated: read 2f / t, write f / t; else read and write f / t).
  const double T = static_cast<double>(tokens);
  const double width = static_cast<double>(h);
  // RoPE's q and k: MLA rotates each head's and the shared key's qk_pos_emb_head_dim.
  const double qk = m.multi_latent_attention ? static_cast<double>((a / t + 1) * m.qk_pos_emb_head_dim)
                                             : static_cast<double>((a / t + kv_heads_per_gpu) * d);
  const double act = static_cast<double>(f / t) * (m.gated_mlp ? 3.0 : 2.0);
  units::Seconds element = compute_.memory_time(units::Bytes(T * kActivationBytes * 4.0 * width)) +
                           compute_.memory_time(units::Bytes(T * kActivationBytes * 6.0 * width)) +
                           compute_.memory_time(units::Bytes(T * kActivationBytes * 2.0 * qk));
  const units::Seconds dense_act = compute_.memory_time(units::Bytes(T * kActivationBytes * act));
  units::Seconds comm{0.0};
  if (t > 1) comm = 2.0 * all_reduce_(units::Bytes(T * kActivationBytes * width));

  const double layers = static_cast<double>(m.num_layers);
  const int64_t moe_layers = moe_layers_;
  const double dense_layers = static_cast<double>(m.num_layers - moe_layers);
  it.gemm = layers * gemm + dense_layers * dense_mlp;
  it.attention = layers * attention;
  it.memory_bound = layers * element + dense_layers * dense_act;
  it.communication = layers * comm;
  if (moe_layers > 0 && ep_.enabled()) {
    const EpMoeLayerTime moe = ep_moe_layer_time(m, ep_, t, compute_, numerics_.math, activations,
                                                 numerics_.weight_bytes, tokens, routed, batch.prefill_tokens > 0);
    it.gemm += static_cast<double>(moe_layers) * moe.gemm;
    it.memory_bound += static_cast<double>(moe_layers) * moe.memory_bound;
    it.communication += static_cast<double>(moe_layers) * moe.communication;
  } else if (moe_layers > 0) {
    it.gemm += static_cast<double>(moe_layers) * terms.moe_gemm;
    it.memory_bound += static_cast<double>(moe_layers) * terms.moe_memory;
  }
  // The LM head over the sequences that sample, the logits gathered from the tensor-parallel ranks and the
  // sampler reading them (fp32).
  const int64_t sampled = std::max<int64_t>(b.sampled_sequences, 0);
  if (sampled > 0) {
    it.gemm += lm_head_time(sampled, memo);
    const double logits = static_cast<double>(sampled) * static_cast<double>(m.vocab_size) * 4.0;
    it.memory_bound += compute_.memory_time(units::Bytes(logits));
    if (t > 1) it.communication += all_reduce_(units::Bytes(logits / static_cast<double>(t)));
  }
  // Pipeline stages: the batch's hidden states and residual (2 x T x h, 16 bits) cross every boundary in turn.
  if (pipeline_.stages > 1) it.communication += pipeline_.send(units::Bytes(2.0 * T * kActivationBytes * width));
  // The host's NCCL calls: two all-reduces per layer and the logits gather with tensor parallelism, one send per
  // pipeline boundary.
  const int64_t calls = (t > 1 ? 2 * m.num_layers + (sampled > 0 ? 1 : 0) : 0) + (pipeline_.stages - 1);
  it.collective_launch = overhead_.collective_launch * static_cast<double>(calls);
  // The host's work the GPU waits for.
  const units::Seconds fixed = b.scheduled ? overhead_.fixed : units::Seconds(0.0);
  const units::Seconds per_sequence = overhead_.per_sequence * static_cast<double>(sampled);
  const units::Seconds zero(0.0);
  switch (overhead_.overlap) {
    case HostOverlap::serial: it.overhead = fixed + per_sequence; break;
    case HostOverlap::async_output: it.overhead = fixed + std::max(zero, per_sequence - it.gpu()); break;
    case HostOverlap::overlapped: it.overhead = std::max(zero, fixed + per_sequence - it.gpu()); break;
  }
  return it;
}

units::Bytes InferenceModel::weight_bytes_per_gpu() const {
  const ModelConfig& m = model_;
  const double h = static_cast<double>(m.hidden_size), d = static_cast<double>(m.head_dim());
  const double a = static_cast<double>(m.num_attention_heads), g = static_cast<double>(m.kv_heads());
  const double f = static_cast<double>(m.ffn());
  const double attention = h * (a + 2.0 * g) * d + a * d * h;
  const double matrices = m.gated_mlp ? 3.0 : 2.0;
  const double tp = static_cast<double>(tensor_);
  double dense = (attention + matrices * h * f) / tp + 2.0 * h;  // norms replicated
  // An MoE layer: every expert (each split t ways, TensorRT-LLM's and vLLM's default tensor-parallel experts),
  // the shared expert and the router (replicated, 16 bits: kEmbeddingBytes).
  double moe = (attention + matrices * h *
                                (static_cast<double>(m.num_experts) * static_cast<double>(m.expert_ffn()) +
                                 static_cast<double>(m.moe_shared_expert_intermediate_size))) /
                   tp +
               2.0 * h;
  if (m.multi_latent_attention || ep_.enabled()) {
    // MLA's projections (its down-projections replicated, mla.hpp) and expert parallelism's whole local experts.
    const double attention_per_gpu =
        m.multi_latent_attention ? mla_attention_weight_elements(m, tensor_) : attention / tp;
    dense = attention_per_gpu + matrices * h * f / tp + 2.0 * h;
    moe = attention_per_gpu +
          (ep_.enabled() ? ep_moe_weight_elements(m, ep_, tensor_)
                         : matrices * h *
                               (static_cast<double>(m.num_experts) * static_cast<double>(m.expert_ffn()) +
                                static_cast<double>(m.moe_shared_expert_intermediate_size)) /
                               tp) +
          2.0 * h;
  }
  const double router = h * static_cast<double>(m.num_experts) * kEmbeddingBytes;
  // The fullest stage: the first ceil(L / p) layers (MoE layers counted among them as the model places them).
  const int64_t stage_layers = ceil_div(m.num_layers, pipeline_.stages);
  const double moe_layers = static_cast<double>(m.moe_layers_in(0, stage_layers));
  const double dense_layers = static_cast<double>(stage_layers) - moe_layers;
  // One stage holds the embedding and the LM head (one table when tied); with stages, the first holds the
  // embedding and the last the LM head.
  const double tables = pipeline_.stages > 1 || m.tie_embeddings ? 1.0 : 2.0;
  const double embeddings = static_cast<double>(m.vocab_size) * h * tables / tp;
  return units::Bytes((dense_layers * dense + moe_layers * moe) * numerics_.weight_bytes + moe_layers * router +
                      embeddings * kEmbeddingBytes);
}

units::Bytes InferenceModel::kv_bytes_per_token_per_gpu() const {
  if (model_.multi_latent_attention) {
    return mla_kv_bytes_per_token(model_, ceil_div(model_.num_layers, pipeline_.stages), numerics_.kv_bytes);
  }
  return units::Bytes(2.0 * static_cast<double>(ceil_div(model_.num_layers, pipeline_.stages)) *
                      static_cast<double>(ceil_div(model_.kv_heads(), tensor_) * model_.head_dim()) *
                      numerics_.kv_bytes);
}

ServingNumerics serving_numerics(std::string_view precision, bool kv_cache_fp8) {
  ServingNumerics n;
  if (precision == "bf16") n = {Precision::bf16, 2.0, 2.0};
  else if (precision == "fp16") n = {Precision::fp16, 2.0, 2.0};
  else if (precision == "fp8") n = {Precision::fp8, 1.0, 2.0};
  else if (precision == "int8") n = {Precision::fp16, 1.0, 2.0};
  else if (precision == "fp4") n = {Precision::fp8, kNvfp4WeightBytes, 2.0, true};
  else throw std::invalid_argument("serving precision must be bf16, fp16, fp8, int8 or fp4, got '" + std::string(precision) + "'");
  if (kv_cache_fp8) n.kv_bytes = 1.0;
  return n;
}

int64_t InferenceModel::kv_cache_tokens(const KvCacheBudget& budget) const {
  require(budget.memory_fraction > 0 && budget.memory_fraction <= 1, "memory fraction must be in (0, 1]");
  require(budget.max_batched_tokens >= 1 && budget.max_num_seqs >= 1 && budget.block_size >= 1,
          "batched tokens, sequences and block size must be positive");
  const ModelConfig& m = model_;
  // Data-parallel attention: each rank's forward pass holds its share of the batch's tokens and sequences.
  const int64_t share = ep_.data_parallel_attention ? ep_.ranks : 1;
  const double T = static_cast<double>(ceil_div(budget.max_batched_tokens, share));
  const double sampled = static_cast<double>(ceil_div(std::min(budget.max_batched_tokens, budget.max_num_seqs), share));
  // A layer's widest tensors: the MLP's (an MoE layer's, for its k copies of each token) and the QKV output's.
  const int64_t mlp = m.moe() ? std::max(m.ffn(), m.moe_router_topk * m.expert_ffn()) : m.ffn();
  const double widest = static_cast<double>((m.gated_mlp ? 3 : 2) * mlp / tensor_ + 4 * m.hidden_size);
  const double activations =
      T * widest * 2.0 + sampled * static_cast<double>(m.vocab_size) / static_cast<double>(tensor_) * 4.0;
  const double held = weight_bytes_per_gpu().value() + activations + kNonTorchReserve.value();
  const double capacity = memory_capacity_.value();
  const double free = budget.of_free_memory ? budget.memory_fraction * (capacity - held)
                                            : budget.memory_fraction * capacity - held;
  if (!(free > 0)) return 0;
  const auto tokens = static_cast<int64_t>(std::floor(free / kv_bytes_per_token_per_gpu().value()));
  const int64_t ranks = ep_.data_parallel_attention ? ep_.ranks : 1;
  return tokens / budget.block_size * budget.block_size * ranks;
}

}  // namespace clustersim::models
