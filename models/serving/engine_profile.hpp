// Inference engine releases (issues 15 and 25): what one continuous-batching iteration costs on the host besides
// its GPU kernels (scheduling, input preparation, sampling, detokenisation, output processing), how that work
// meets the GPU's, how the engine sizes and admits into its KV cache, and what its kernels do differently. A
// serving scenario names its engine release (serving.engine: "vllm-0.6", "tensorrt-llm-0.17", ...; a family name,
// "vllm", stands for the family's newest modelled release); its overhead is the family's unless the scenario sets
// engine_overhead_ms / engine_overhead_per_sequence_us itself.
//
// A family (vllm, tensorrt-llm, lmdeploy) is one code base: its per-iteration host work is one fitted pair,
// shared by its releases (`clustersim validate --fit`). What a release changes is structure, each with its source
// (release notes, benchmark configurations): whether output processing overlaps the GPU, whether the host calls
// NCCL for every collective, whether decode attention shares key/value reads across a query group, and the
// defaults of its scheduler.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "models/serving/inference_model.hpp"
#include "models/serving/speculative.hpp"

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

/// One engine release.
struct EngineProfile {
  std::string_view name;      ///< serving.engine: family-version ("vllm-0.6")
  std::string_view family;    ///< the code base whose host work is one fitted pair: vllm | tensorrt-llm | lmdeploy | sglang
  std::string_view release;   ///< the releases it reproduces, with their dates
  EngineOverhead overhead;    ///< fixed + per_sequence (the family's fit); overlap, collective launch (the release's)
  EngineKernels kernels;      ///< what its kernels do differently
  bool kv_of_free_memory;     ///< KvCacheBudget::of_free_memory: how the engine reads its memory fraction
  CapacityPolicy admission;   ///< the engine's default capacity scheduler policy
  bool multi_step;            ///< accepts serving.scheduler_steps > 1 (vLLM --num-scheduler-steps, v0.6-v0.7 V0)
  std::string_view basis;     ///< where each value comes from (docs/serving.md, "Engines")
  /// The host work speculative decoding adds to an iteration (models/serving/speculative.hpp): measured for the
  /// releases that have a measurement, none (0) elsewhere.
  SpeculativeHost speculative{};
};

/// A family name that stands for one release (scenarios written before releases were named keep working).
struct EngineAlias {
  std::string_view name;     ///< serving.engine: the family's name
  std::string_view release;  ///< the profile it stands for
};

/// Every name serving.engine accepts: the releases (engine_profiles(), in order), then the family aliases
/// (engine_aliases(), in order). engine_profile.cpp checks at compile time that the tables agree.
inline constexpr std::string_view kEngineNames[] = {"vllm-0.5",          "vllm-0.6",     "vllm-v1-0.8", "vllm-v1",
                                                    "tensorrt-llm-0.6",  "tensorrt-llm-0.17", "lmdeploy-0.1",
                                                    "sglang-0.4",        "vllm",         "tensorrt-llm",
                                                    "lmdeploy",          "sglang"};

/// Every engine release the loader accepts, in the order docs list them.
std::span<const EngineProfile> engine_profiles();
/// The family names and the release each stands for.
std::span<const EngineAlias> engine_aliases();

/// The profile of `name` (a release, or a family alias). Throws std::invalid_argument for an unknown engine.
const EngineProfile& engine_profile(std::string_view name);

/// The KV-cache budget of `engine` (its reading of `memory_fraction`) with the engine's batching limits.
/// Throws std::invalid_argument for an unknown engine.
KvCacheBudget kv_cache_budget(std::string_view engine, double memory_fraction, int64_t max_batched_tokens,
                              int64_t max_num_seqs, int64_t block_size);

}  // namespace clustersim::models
