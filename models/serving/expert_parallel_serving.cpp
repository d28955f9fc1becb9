#include "models/serving/expert_parallel_serving.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/serving/inference_model.hpp"

namespace clustersim::models {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr double kActivationBytes = 2.0;  // 16-bit activations, as InferenceModel's

}  // namespace

int64_t local_experts(const ModelConfig& m, const ExpertParallelServing& ep) {
  return (m.num_experts + ep.redundant_experts) / std::max<int64_t>(1, ep.ranks);
}

IterationBatch dp_rank_share(const IterationBatch& b, int64_t ranks) {
  if (ranks < 1) throw std::invalid_argument("dp_rank_share: ranks must be >= 1");
  IterationBatch r = b;
  r.prefill_tokens = ceil_div(b.prefill_tokens, ranks);
  r.prefill_attention_pairs = b.prefill_attention_pairs / static_cast<double>(ranks);
  r.decode_sequences = ceil_div(b.decode_sequences, ranks);
  r.decode_kv_tokens = ceil_div(b.decode_kv_tokens, ranks);
  r.sampled_sequences = ceil_div(b.sampled_sequences, ranks);
  return r;
}

double ep_moe_weight_elements(const ModelConfig& m, const ExpertParallelServing& ep, int64_t tensor) {
  const double h = static_cast<double>(m.hidden_size), matrices = m.gated_mlp ? 3.0 : 2.0;
  return matrices * h *
         (static_cast<double>(local_experts(m, ep)) * static_cast<double>(m.expert_ffn()) +
          static_cast<double>(m.moe_shared_expert_intermediate_size) / static_cast<double>(tensor));
}

EpMoeLayerTime ep_moe_layer_time(const ModelConfig& m, const ExpertParallelServing& ep, int64_t tensor,
                                 const ComputeModel& compute, Precision math, Precision activations,
                                 double weight_bytes, int64_t local_tokens, int64_t routed_tokens, bool prefill) {
  if (local_tokens < 0 || routed_tokens < 0) throw std::invalid_argument("ep_moe_layer_time: negative tokens");
  EpMoeLayerTime r;
  if (local_tokens == 0 && routed_tokens == 0) return r;
  const int64_t h = m.hidden_size, fe = m.expert_ffn(), gated = m.gated_mlp ? 2 : 1;
  const int64_t slots = local_experts(m, ep);
  // Copies this GPU receives, and its local experts that receive any (uniform routing, expectation).
  const double copies = static_cast<double>(routed_tokens * m.moe_router_topk) / static_cast<double>(ep.ranks);
  const double touched_share = moe_experts_touched(routed_tokens, m.num_experts, m.moe_router_topk) /
                               static_cast<double>(m.num_experts);
  const int64_t touched =
      std::clamp<int64_t>(std::llround(touched_share * static_cast<double>(slots)), 1, slots);
  const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(copies / static_cast<double>(touched))));
  const auto gemm = [&](int64_t mm, int64_t n, int64_t k, int64_t batch, double bytes, Precision p) {
    return compute.gemm_time({mm, n, k, batch}, p, bytes);
  };
  const int64_t tokens = std::max<int64_t>(local_tokens, 1);
  r.gemm = gemm(tokens, m.num_experts, h, 1, InferenceModel::kEmbeddingBytes, activations) +
           gemm(rows, gated * fe, h, touched, weight_bytes, math) + gemm(rows, h, fe, touched, weight_bytes, math);
  const int64_t fs = m.moe_shared_expert_intermediate_size / tensor;
  if (fs > 0) {
    r.gemm += gemm(tokens, gated * fs, h, 1, weight_bytes, math) + gemm(tokens, h, fs, 1, weight_bytes, math);
  }
  const double T = static_cast<double>(local_tokens), width = static_cast<double>(h);
  const double act = m.gated_mlp ? 3.0 : 2.0;
  r.memory_bound = compute.memory_time(units::Bytes(T * static_cast<double>(m.num_experts) * 4.0 * 2.0)) +
                   2.0 * compute.memory_time(units::Bytes(kActivationBytes * width * (T + copies))) +
                   compute.memory_time(units::Bytes(copies * kActivationBytes * static_cast<double>(fe) * act));
  if (fs > 0) {
    r.memory_bound += compute.memory_time(units::Bytes(T * kActivationBytes * static_cast<double>(fs) * act));
  }
  if (ep.data_parallel_attention && ep.links) {
    r.communication = deepep_dispatch_combine_time(*ep.links,
                                                   prefill ? DeepEpKernel::normal : DeepEpKernel::low_latency,
                                                   local_tokens, h, m.num_experts + ep.redundant_experts,
                                                   m.moe_router_topk);
  }
  return r;
}

}  // namespace clustersim::models
