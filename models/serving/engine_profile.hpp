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

/// How an engine admits requests into its KV cache, in TensorRT-LLM's names (CapacitySchedulerPolicy, TensorRT-LLM
/// docs "Useful Runtime Options"):
///   max_utilization      a request is admitted when its prompt's blocks are free; blocks are added as it decodes,
///                        and when none is free the newest running request is preempted and later recomputed
///                        (vLLM's scheduler, Kwon et al. SOSP 2023; TensorRT-LLM's MAX_UTILIZATION pauses it);
///   guaranteed_no_evict  a request is admitted only when the blocks of its prompt and of all its output tokens are
///                        free, and holds them to its end: nothing is ever preempted (TensorRT-LLM's default).
enum class CapacityPolicy { max_utilization, guaranteed_no_evict };

/// serving.capacity_scheduler_policy's names, in CapacityPolicy's order.
inline constexpr std::string_view kCapacityPolicyNames[] = {"max_utilization", "guaranteed_no_evict"};

/// The policy named `name`. Throws std::invalid_argument for another name.
CapacityPolicy capacity_policy(std::string_view name);

struct EngineProfile {
  std::string_view name;      ///< serving.engine
  EngineOverhead overhead;    ///< per iteration: fixed + per_sequence x the batch's sequences
  bool kv_of_free_memory;     ///< KvCacheBudget::of_free_memory: how the engine reads its memory fraction
  CapacityPolicy admission;   ///< the engine's default capacity scheduler policy
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
