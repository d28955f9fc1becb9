// Shape of a decoder-only transformer and of its training run, as a scenario states them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

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

  [[nodiscard]] int64_t ffn() const { return ffn_hidden_size > 0 ? ffn_hidden_size : 4 * hidden_size; }
  [[nodiscard]] int64_t kv_heads() const { return num_query_groups > 0 ? num_query_groups : num_attention_heads; }
  [[nodiscard]] int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

/// Activation recomputation (Korthikanti et al. 2022): none, selective (attention core only) or full
/// (each layer's forward re-run during backward from its stored input).
enum class Recompute { none, selective, full };

/// Canonical name as written in scenario files: "none" | "selective" | "full".
std::string_view to_string(Recompute r);
/// Parses the canonical name; std::nullopt for anything else.
std::optional<Recompute> parse_recompute(std::string_view name);

/// Batch and numerics of a training run.
struct TrainingConfig {
  int64_t global_batch_size = 0;  ///< sequences per optimizer step, B
  int64_t micro_batch_size = 1;   ///< sequences per microbatch, b
  Precision precision = Precision::bf16;
  Recompute activation_recompute = Recompute::none;
  bool flash_attention = false;  ///< fused attention kernel, no s x s scores in memory
  /// Weight-gradient GEMMs accumulate straight into the main-gradient buffer (Megatron
  /// --gradient-accumulation-fusion, 2022 on). Off: each backward writes a 16-bit gradient that a separate
  /// kernel adds into the main gradient, once per microbatch.
  bool gradient_accumulation_fusion = true;
};

}  // namespace clustersim::models
