// Test support: published model shapes the tests and benchmarks share.
#pragma once

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

}  // namespace clustersim::testing
