#include "models/serving/mla.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::models {

int64_t mla_kv_elements_per_token_layer(const ModelConfig& m) { return m.kv_lora_rank + m.qk_pos_emb_head_dim; }

units::Bytes mla_kv_bytes_per_token(const ModelConfig& m, int64_t layers, double kv_bytes) {
  return units::Bytes(static_cast<double>(layers) * static_cast<double>(mla_kv_elements_per_token_layer(m)) *
                      kv_bytes);
}

double mla_attention_weight_elements(const ModelConfig& m, int64_t tensor) {
  const double h = static_cast<double>(m.hidden_size), a = static_cast<double>(m.num_attention_heads);
  const double q = static_cast<double>(m.q_lora_rank), c = static_cast<double>(m.kv_lora_rank);
  const double r = static_cast<double>(m.qk_pos_emb_head_dim), n = static_cast<double>(m.qk_head_dim);
  const double v = static_cast<double>(m.v_head_dim), t = static_cast<double>(tensor);
  const double replicated = (q > 0 ? h * q : 0.0) + h * (c + r);
  const double split = (q > 0 ? q : h) * a * (n + r) + c * a * (n + v) + a * v * h;
  return replicated + split / t;
}

double mla_decode_flops_per_key(const ModelConfig& m, int64_t heads) {
  const double c = static_cast<double>(m.kv_lora_rank), r = static_cast<double>(m.qk_pos_emb_head_dim);
  return static_cast<double>(heads) * (2.0 * (c + r) + 2.0 * c);
}

double mla_prefill_flops_per_pair(const ModelConfig& m, int64_t heads) {
  const double n = static_cast<double>(m.qk_head_dim), r = static_cast<double>(m.qk_pos_emb_head_dim);
  return static_cast<double>(heads) * (2.0 * (n + r) + 2.0 * static_cast<double>(m.v_head_dim));
}

units::Bytes mla_decode_attention_bytes(const ModelConfig& m, int64_t kv_tokens, int64_t sequences, double kv_bytes) {
  return units::Bytes(static_cast<double>(kv_tokens + sequences) *
                      static_cast<double>(mla_kv_elements_per_token_layer(m)) * kv_bytes);
}

MlaLayerTime mla_layer_time(const ModelConfig& m, int64_t tensor, const ComputeModel& compute, Precision math,
                            Precision activations, double weight_bytes, double kv_bytes, AttentionKernel kernel,
                            const MlaBatch& b) {
  if (b.tokens < 0 || b.prefill_tokens < 0 || b.decode_sequences < 0 || b.decode_kv_tokens < 0 ||
      b.prefill_attention_pairs < 0) {
    throw std::invalid_argument("mla_layer_time: negative batch counts");
  }
  MlaLayerTime out;
  if (b.tokens == 0) return out;
  const int64_t h = m.hidden_size, heads = m.num_attention_heads / tensor;
  const int64_t q = m.q_lora_rank, c = m.kv_lora_rank, r = m.qk_pos_emb_head_dim, n = m.qk_head_dim,
                v = m.v_head_dim;
  const auto gemm = [&](int64_t rows, int64_t cols, int64_t k, int64_t batch) {
    return compute.gemm_time({rows, cols, k, batch}, math, weight_bytes);
  };
  // Every token: the down-projections, the query's up-projection and the output projection.
  if (q > 0) out.gemm += gemm(b.tokens, q, h, 1);
  out.gemm += gemm(b.tokens, heads * (n + r), q > 0 ? q : h, 1) + gemm(b.tokens, c + r, h, 1) +
              gemm(b.tokens, h, heads * v, 1);
  if (b.prefill_tokens > 0) {
    // Un-absorbed: K and V up-projected from the latent, then FlashAttention over (n + r, v) heads.
    out.gemm += gemm(b.prefill_tokens, heads * (n + v), c, 1);
    out.attention += compute.attention_time(units::Flops(b.prefill_attention_pairs * mla_prefill_flops_per_pair(m, heads)),
                                            activations, kernel);
  }
  if (b.decode_sequences > 0) {
    // Absorbed: q_nope W_UK per head [S q, c, n] and the output's W_UV per head [S q, v, c], q queries per sequence
    // (k + 1 in a speculative verify pass). The latent is read once per sequence; each query scores every key.
    const int64_t queries = b.decode_sequences * b.decode_queries;
    out.gemm += gemm(queries, c, n, heads) + gemm(queries, v, c, heads);
    const units::Seconds reads =
        compute.memory_time(mla_decode_attention_bytes(m, b.decode_kv_tokens, b.decode_sequences, kv_bytes));
    const units::Seconds flops = compute.attention_time(
        units::Flops(static_cast<double>(b.decode_queries) *
                     static_cast<double>(b.decode_kv_tokens + b.decode_sequences) * mla_decode_flops_per_key(m, heads)),
        activations, kernel);
    out.attention += std::max(reads, flops);
  }
  return out;
}

}  // namespace clustersim::models
