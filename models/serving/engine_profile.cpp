#include "models/serving/engine_profile.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace clustersim::models {
namespace {

using units::microseconds;
using units::milliseconds;

// The overheads are fitted to the serving validation group (`clustersim validate --fit`, docs/serving.md,
// "Validation", 2026-11-26): per engine, the grid point of ServingValidationSuite with the least mean |error| over
// its rows. They absorb what the kernel model leaves out of an iteration: the host's scheduling, input
// preparation, sampling and output processing, and the launch gaps between the kernels.
// Admission: vLLM allocates blocks as sequences grow and preempts the newest by recomputation (vLLM docs,
// "Preemption"); TensorRT-LLM's executor defaults to GUARANTEED_NO_EVICT (SchedulerConfig in the LLM API and the
// runtime docs), and trtllm-bench throughput sets it too (tensorrt_llm/bench/benchmark/throughput.py); LMDeploy's
// TurboMind allocates blocks as sequences grow and evicts inactive ones when short (its SequenceManager), the
// on-demand case.
const std::array kProfiles{
    EngineProfile{"vllm", {milliseconds(1.5), microseconds(10.0)}, false, CapacityPolicy::max_utilization,
                  "fitted on 2 rows of one source (vLLM's Buildkite latency tests, H200): weakly determined; a "
                  "Python scheduler and output processing per step (Srivatsa et al., WukLab 2024; vLLM v0.6.0 "
                  "release blog, 2024-09: the GPU idle for over half of a Llama 3 8B step in v0.5.3)"},
    EngineProfile{"tensorrt-llm", {milliseconds(1.5), microseconds(3.0)}, true, CapacityPolicy::guaranteed_no_evict,
                  "fitted on 165 rows of four sources (TensorRT-LLM perf-overview v0.17 and v0.14 online, "
                  "performance.md v0.6.1, NIM 1.8.0; refitted 2026-11-27, unchanged): the C++ executor's in-flight "
                  "batching"},
    EngineProfile{"lmdeploy", {milliseconds(1.0), microseconds(30.0)}, true, CapacityPolicy::max_utilization,
                  "fitted on 9 rows of one source (LMDeploy v0.1.0a1 on A100): TurboMind's C++ persistent batch"},
};

}  // namespace

std::span<const EngineProfile> engine_profiles() { return kProfiles; }

CapacityPolicy capacity_policy(std::string_view name) {
  for (size_t i = 0; i < std::size(kCapacityPolicyNames); ++i) {
    if (kCapacityPolicyNames[i] == name) return static_cast<CapacityPolicy>(i);
  }
  throw std::invalid_argument("unknown capacity scheduler policy '" + std::string(name) + "'");
}

const EngineProfile& engine_profile(std::string_view name) {
  for (const EngineProfile& p : kProfiles) {
    if (p.name == name) return p;
  }
  throw std::invalid_argument("unknown inference engine '" + std::string(name) + "'");
}

KvCacheBudget kv_cache_budget(std::string_view engine, double memory_fraction, int64_t max_batched_tokens,
                              int64_t max_num_seqs, int64_t block_size) {
  return {memory_fraction, engine_profile(engine).kv_of_free_memory, max_batched_tokens, max_num_seqs, block_size};
}

}  // namespace clustersim::models
