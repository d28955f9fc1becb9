// Test support: published model shapes the tests and benchmarks share.
#pragma once

#include <cstdint>

#include "models/workload/model_config.hpp"

namespace clustersim::testing {

/// Llama 2 7B (Touvron et al. 2023, Table 1 and the released config): 32 layers, width 4096, 32 heads (no
/// grouped-query attention), SwiGLU 11008, vocabulary 32000, RoPE, untied output layer, 4K context.
inline models::ModelConfig llama2_7b() {
  models::ModelConfig m;
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_query_groups = 32;
  m.ffn_hidden_size = 11008;
  m.vocab_size = 32000;
  m.seq_length = 4096;
  m.gated_mlp = true;
  m.rope = true;
  m.dropout = 0.0;
  m.tie_embeddings = false;
  return m;
}

/// DeepSeek-V3 (DeepSeek-AI 2024, arXiv 2412.19437, Table/config.json of deepseek-ai/DeepSeek-V3): 61 layers,
/// width 7168, 128 heads with multi-latent attention (q latent 1536, kv latent 512, 128 + 64 query/key, 128
/// value), the first 3 layers dense (18432), then 256 routed experts of 2048 (top-8) and one shared expert of 2048;
/// vocabulary 129280, untied; a context of `seq_length` tokens (its training sequence 4096 by default; 163840 served).
inline models::ModelConfig deepseek_v3(int64_t seq_length = 4096) {
  models::ModelConfig m;
  m.num_layers = 61;
  m.hidden_size = 7168;
  m.num_attention_heads = 128;
  m.multi_latent_attention = true;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_head_dim = 128;
  m.qk_pos_emb_head_dim = 64;
  m.v_head_dim = 128;
  m.ffn_hidden_size = 18432;
  m.vocab_size = 129280;
  m.seq_length = seq_length;
  m.gated_mlp = true;
  m.rope = true;
  m.dropout = 0.0;
  m.tie_embeddings = false;
  m.num_experts = 256;
  m.moe_router_topk = 8;
  m.moe_ffn_hidden_size = 2048;
  m.moe_shared_expert_intermediate_size = 2048;
  m.num_dense_layers_first = 3;
  return m;
}

}  // namespace clustersim::testing
