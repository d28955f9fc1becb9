// Inference engines' per-iteration CPU work (issue 15): what one continuous-batching iteration costs on the host
// besides its GPU kernels (scheduling, input preparation, sampling, detokenisation, output processing), by engine.
// A serving scenario names its engine (serving.engine); its overhead is the engine's unless the scenario sets
// engine_overhead_ms / engine_overhead_per_sequence_us itself.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "models/serving/inference_model.hpp"

namespace clustersim::models {

struct EngineProfile {
  std::string_view name;      ///< serving.engine
  EngineOverhead overhead;    ///< per iteration: fixed + per_sequence x the batch's sequences
  bool kv_of_free_memory;     ///< KvCacheBudget::of_free_memory: how the engine reads its memory fraction
  std::string_view basis;     ///< where the values come from (docs/serving.md, "Engines")
};

/// Every engine the loader accepts, in the order docs list them.
std::span<const EngineProfile> engine_profiles();

/// The profile of `name`. Throws std::invalid_argument for an unknown engine.
const EngineProfile& engine_profile(std::string_view name);

/// The KV-cache budget of `engine` (its reading of `memory_fraction`) with the engine's batching limits.
/// Throws std::invalid_argument for an unknown engine.
KvCacheBudget kv_cache_budget(std::string_view engine, double memory_fraction, int64_t max_batched_tokens,
                              int64_t max_num_seqs, int64_t block_size);

}  // namespace clustersim::models
