// Multi-head latent attention (MLA) for serving (issue 30): DeepSeek-V2/V3's attention as the serving engines
// run it (DeepSeek-AI, "DeepSeek-V2", arXiv 2405.04434, Sec. 2.1; FlashMLA, github.com/deepseek-ai/FlashMLA;
// vLLM's and SGLang's MLA backends).
//
// Shapes, with h the width, a the heads (a / t per GPU under tensor parallelism t), c = kv_lora_rank,
// r = qk_pos_emb_head_dim (the shared rotary key), n = qk_head_dim (the no-position query/key part),
// v = v_head_dim and q = q_lora_rank (0: the query straight from h):
//   down-projections (every token, replicated on the tensor-parallel ranks as vLLM's ReplicatedLinear):
//                  W_DQ [h, q] (when q > 0) and W_DKV+W_KR [h, c + r];
//   up-projections (split by heads): W_UQ+W_QR [q or h, a (n + r)], W_UK+W_UV [c, a (n + v)], W_O [a v, h].
//   KV cache       per token and layer the latent c_KV (c) and the rotary key (r): (c + r) elements, the same
//                  on every tensor-parallel rank (each rank's heads read the whole latent) and, under data-
//                  parallel attention, held only by the rank that runs the sequence. DeepSeek-V3: 61 x (512 +
//                  64) x 2 B = 70,272 B per token in bf16 (DeepSeek-V2 Sec. 2.1.4, Table 1: (d_c + d_h^R) l).
//   decode         absorbed (DeepSeek-V2 Sec. 2.1.3: W_UK folded into the query, W_UV into the output): each
//                  head's query becomes c + r wide, every head reads the shared latent, so the cache is read
//                  once per sequence and layer ((tokens + 1) x (c + r) x kv bytes: FlashMLA's memory-bound
//                  case), at 2 (c + r) + 2 c FLOPs per key and head (scores over c + r, the weighted sum over
//                  c); the absorbed products are per-head batched GEMMs [S, c, n] and [S, v, c].
//   prefill        un-absorbed (vLLM's and SGLang's MHA path for prompts): K and V up-projected from the
//                  latent ([P, a (n + v), c]) and FlashAttention over heads of query/key n + r and value v,
//                  2 (n + r) + 2 v FLOPs per (query, key) pair and head.
#pragma once

#include <cstdint>

#include "models/compute/compute_model.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// KV-cache elements of one token in one layer: kv_lora_rank + qk_pos_emb_head_dim (DeepSeek-V3: 576).
int64_t mla_kv_elements_per_token_layer(const ModelConfig& m);

/// KV-cache bytes of one token over `layers` layers at `kv_bytes` per element, on every GPU that holds the
/// sequence (not divided by tensor parallelism): layers x (c + r) x kv_bytes. DeepSeek-V3 bf16: 70,272 B.
units::Bytes mla_kv_bytes_per_token(const ModelConfig& m, int64_t layers, double kv_bytes);

/// Weight elements of one layer's attention on one of `tensor` GPUs: the down-projections whole (replicated),
/// the up-projections and the output split by heads: h q + q a (n + r) (or h a (n + r) when q = 0) + h (c + r)
/// + c a (n + v) + a v h, the head-split terms / tensor. DeepSeek-V3 at tensor 1: 187,105,280.
double mla_attention_weight_elements(const ModelConfig& m, int64_t tensor);

/// Decode FLOPs per cached key and layer on `heads` heads, absorbed: heads x (2 (c + r) + 2 c).
double mla_decode_flops_per_key(const ModelConfig& m, int64_t heads);

/// Prefill FLOPs per causal (query, key) pair and layer on `heads` heads, un-absorbed: heads x (2 (n + r) + 2 v).
double mla_prefill_flops_per_pair(const ModelConfig& m, int64_t heads);

/// Bytes absorbed decode attention reads in one layer: (kv_tokens + sequences) x (c + r) x kv_bytes (the cache
/// and each new token's entry, read once for all heads).
units::Bytes mla_decode_attention_bytes(const ModelConfig& m, int64_t kv_tokens, int64_t sequences, double kv_bytes);

/// One layer's MLA on one GPU for an iteration of `tokens` = prefill_tokens + decode_sequences.
struct MlaBatch {
  int64_t tokens = 0;
  int64_t prefill_tokens = 0;
  double prefill_attention_pairs = 0.0;
  int64_t decode_sequences = 0;
  int64_t decode_kv_tokens = 0;
  /// Query tokens per decoding sequence: 1, or k + 1 in speculative decoding's verify pass (IterationBatch).
  int64_t decode_queries = 1;
};
/// Where one layer's MLA time goes, s.
struct MlaLayerTime {
  units::Seconds gemm{0.0};       ///< projections (and the absorbed per-head products, the prefill's K/V up-projection)
  units::Seconds attention{0.0};  ///< prefill FlashAttention + absorbed decode (max of its reads and its FLOPs)
};
/// One layer's MLA time on one of `tensor` GPUs through `compute` (GEMMs at `weight_bytes` per weight in
/// `math`; attention at `activations`): the shapes of the header's comment. Absorbed decode is a roofline,
/// max(reads / bandwidth, FLOPs at the attention rate). Throws std::invalid_argument on negative counts.
MlaLayerTime mla_layer_time(const ModelConfig& m, int64_t tensor, const ComputeModel& compute, Precision math,
                            Precision activations, double weight_bytes, double kv_bytes, AttentionKernel kernel,
                            const MlaBatch& b);

}  // namespace clustersim::models
