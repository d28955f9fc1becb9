#include "models/serving/engine_profile.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace clustersim::models {
namespace {

using units::microseconds;
using units::milliseconds;

// The families' host work per iteration (fixed + per sampled sequence) is fitted to the serving validation group
// (`clustersim validate --fit`, docs/serving.md, "Validation", 2026-11-27, with the measured GEMM and attention tables
// of models/compute): per family, the grid point of
// ServingValidationSuite with the least mean |error| over its releases' rows: vllm on 20 rows of 4 sources,
// tensorrt-llm on 175 of 6, lmdeploy on 9 of 1. It absorbs what the kernel model leaves out of
// an iteration: the host's scheduling, input preparation, sampling and output processing, and the launch gaps
// between the kernels.
constexpr EngineOverhead vllm_host(HostOverlap overlap) { return {milliseconds(1.5), microseconds(0.0), overlap}; }
constexpr EngineOverhead tensorrt_llm_host(units::Seconds collective_launch) {
  return {milliseconds(1.0), microseconds(1.0), HostOverlap::serial, collective_launch};
}
// SGLang: no serving validation rows of its own yet, so no fit. A documented choice: the vLLM family's fitted pair
// (both are Python schedulers driving PyTorch models with CUDA graphs on the same GPUs), exposed only where it
// exceeds the GPU's time (the overlap scheduler). `clustersim validate --fit` fits it once SGLang rows exist.
constexpr EngineOverhead sglang_host() {
  return {milliseconds(1.5), microseconds(0.0), HostOverlap::overlapped, units::Seconds(0.0)};
}
constexpr EngineOverhead lmdeploy_host() {
  return {milliseconds(0.25), microseconds(30.0), HostOverlap::serial, kNcclCallHost};
}

// vLLM V1's speculative host work before its EAGLE proposer was captured in CUDA graphs (vLLM PR #17211, "[V1][Spec
// Decode] Apply torch.compile & cudagraph to EAGLE", opened 2025-04-26; PR #17504 did the same for EAGLE-3 on
// 2025-04-30, its profile of a K = 3 step at batch 1 showing propose() shrink from ~16 to ~6 ms under the torch
// profiler). Measured on that code: vLLM PR #16035 ("[V1][Spec Decode] Eagle Model loading"), comment by
// ekagra-ranjan of 2025-04-09 (https://github.com/vllm-project/vllm/pull/16035#issuecomment-2790985075), V1 engine,
// Llama 3 8B Instruct with lmsys/sglang-EAGLE-LLaMA3-Instruct-8B, MT-Bench, max_num_seqs 1 (the same author's
// setup as the PR #16937 validation rows, which name the H100): without speculation 128.64 output tokens/s
// (7.774 ms a token); K = 2, 175.49 tokens/s at acceptance length 1.89 (10.770 ms a step); K = 4, 165.65 at 2.08
// (12.557 ms). Two more draft passes cost (12.557 - 10.770) / 2 = 0.893 ms each: the eager pass's launches (the
// model's GPU time of one EAGLE-layer pass with Llama 3's 128K-vocabulary LM head on an H100 is ~0.54 ms, so the
// pass is launch-bound); the step besides its passes, 10.770 - 2 x 0.893 - 7.774 = 1.209 ms: the rejection
// sampler and the proposer's input preparation with their GPU->CPU syncs (vLLM PR #20078, 2025-06-25: "Rejection
// sampling on GPU -> sync -> CPU computation -> sync -> GPU upload ... on the critical path"). The PR #16937 rows
// (two weeks later, Llama 3.1 8B) are not used here: they are the validation (docs/serving.md).
constexpr units::Seconds kVllmV1EagerDraftPass = microseconds((12.557 - 10.770) / 2.0 * 1000.0);
constexpr units::Seconds kVllmV1SpeculativeStep = microseconds((10.770 - 2.0 * (12.557 - 10.770) / 2.0 - 7.774) * 1000.0);

// Every release's basis names the source of each structural value; the fitted pair's is the family's.
constexpr std::array kProfiles{
    EngineProfile{"vllm-0.5", "vllm", "vLLM v0.4.0-v0.5.5, V0 engine (2024-03 to 2024-08)",
                  vllm_host(HostOverlap::serial), {}, false, CapacityPolicy::max_utilization, false,
                  "host work serial: scheduling, input preparation and output processing between two forward passes "
                  "(vLLM v0.6.0 release blog, 2024-09-05: under v0.5.3 the GPU was busy 38 % of a Llama 3 8B step on "
                  "one H100, the API server took 33 % and scheduling 29 %); collectives: the custom all-reduce kernel "
                  "(since v0.3.0) and CUDA-graph decode, no host NCCL call per collective; KV cache: "
                  "gpu_memory_utilization of the whole memory; admission: blocks as sequences grow, recompute "
                  "preemption (vLLM docs, 'Preemption')"},
    EngineProfile{"vllm-0.6", "vllm", "vLLM v0.6.0-v0.7.3, V0 engine (2024-09 to 2025-02)",
                  vllm_host(HostOverlap::async_output), {}, false, CapacityPolicy::max_utilization, true,
                  "as vllm-0.5, with asynchronous output processing on by default (output processing of step k "
                  "overlaps the GPU's step k + 1; v0.6.0 release blog and notes) and optional multi-step scheduling "
                  "(--num-scheduler-steps: scheduling and input preparation once per n decode steps, new requests "
                  "admitted between blocks; serving.scheduler_steps)"},
    EngineProfile{"vllm-v1-0.8", "vllm", "vLLM V1 engine of v0.8.x and main up to PR #17211 (2025-03 to 2025-04)",
                  vllm_host(HostOverlap::async_output), {}, false, CapacityPolicy::max_utilization, false,
                  "as vllm-v1, but with speculative decoding the EAGLE proposer runs eagerly, without torch.compile "
                  "or CUDA graphs (vLLM PR #17211, opened 2025-04-26, captured it), and every speculative step "
                  "pays the rejection sampler's and the proposer's input preparation's host syncs: measured on "
                  "that code (vLLM PR #16035, 2025-04-09), 0.893 ms a draft pass (a pass lasts at least that) "
                  "and 1.209 ms a step",
                  {kVllmV1EagerDraftPass, kVllmV1SpeculativeStep}},
    EngineProfile{"vllm-v1", "vllm",
                  "vLLM v0.8.0 and later, V1 engine (2025-03 onward; with speculative decoding before PR #17211, "
                  "vllm-v1-0.8)",
                  vllm_host(HostOverlap::async_output), {}, false, CapacityPolicy::max_utilization, false,
                  "V1 engine (vLLM V1 alpha blog, 2025-01-27): detokenisation and output processing in the API "
                  "server's process, overlapped with the engine core's steps (async_output); chunked prefill always "
                  "on; piecewise CUDA graphs; no multi-step scheduling (removed with V0); speculative decoding: the "
                  "proposer in CUDA graphs (PR #17211), no host work of its own modelled (none measured)"},
    EngineProfile{"tensorrt-llm-0.6", "tensorrt-llm", "TensorRT-LLM v0.5.0-v0.6.1 (2023-10 to 2023-12)",
                  tensorrt_llm_host(kNcclCallHost), {true}, true, CapacityPolicy::guaranteed_no_evict, false,
                  "host work serial (C++ runtime, TensorRT engines); collectives: the NCCL all-reduce plugin from "
                  "the host every layer (the v0.6.1 performance.md build commands do not enable "
                  "--use_custom_all_reduce, and gptSessionBenchmark runs without CUDA graphs), at Vidur's 20 us per "
                  "call; decode attention: masked multi-head attention with one block per (sequence, query head), "
                  "no grouped-query sharing (release notes v0.7.1: 'MMHA optimization for MQA and GQA'; XQA blog: "
                  "2.4x Llama-70B throughput); KV cache: kv_cache_free_gpu_mem_fraction of the free memory; "
                  "admission: GUARANTEED_NO_EVICT"},
    EngineProfile{"tensorrt-llm-0.17", "tensorrt-llm",
                  "TensorRT-LLM v0.7-v0.17, TensorRT engines and the C++ runtime (2024-01 to 2025-02)",
                  tensorrt_llm_host(units::Seconds(0.0)), {}, true, CapacityPolicy::guaranteed_no_evict, false,
                  "host work serial (the C++ executor's in-flight batching); collectives: the custom all-reduce "
                  "kernels (release notes v0.8-v0.12; NCCL only above their size limits); decode attention: XQA, "
                  "grouped-query aware (v0.7.1 onward); KV cache: kv_cache_free_gpu_mem_fraction of the free memory "
                  "(trtllm-serve docs); admission: GUARANTEED_NO_EVICT (the executor's default, and what "
                  "trtllm-bench throughput sets, tensorrt_llm/bench/benchmark/throughput.py)"},
    EngineProfile{"lmdeploy-0.1", "lmdeploy", "LMDeploy v0.1.0, TurboMind (2023-11)", lmdeploy_host(), {}, true,
                  CapacityPolicy::max_utilization, false,
                  "host work serial (TurboMind's C++ persistent batch); collectives: NCCL all-reduce called from "
                  "TurboMind's layer loop every layer (the FasterTransformer heritage; no CUDA graphs), at Vidur's "
                  "20 us per call; KV cache: cache_max_entry_count of the free memory; admission: blocks as "
                  "sequences grow, inactive sequences evicted when short (its SequenceManager)"},
    EngineProfile{"sglang-0.4", "sglang", "SGLang v0.4.0 and later (2024-12 onward)", sglang_host(), {}, false,
                  CapacityPolicy::max_utilization, false,
                  "host work overlapped: the zero-overhead batch scheduler runs the CPU's scheduling of batch k + 1 "
                  "while the GPU runs batch k (LMSYS blog 'SGLang v0.4: Zero-Overhead Batch Scheduler, "
                  "Cache-Aware Load Balancer, Faster Structured Outputs', 2024-12-04; on by default since v0.4); "
                  "collectives: CUDA graphs for decode and its custom all-reduce kernel (server_args "
                  "disable_cuda_graph and disable_custom_all_reduce default false), no host NCCL call per "
                  "collective; KV cache: mem_fraction_static of the whole memory holds the weights and the KV pool "
                  "(read as serving.gpu_memory_utilization; SGLang's default is 0.88 at tp 1 down to 0.81 at tp 8, "
                  "server_args.py v0.4); admission: RadixAttention's token pool, retracting (recomputing) the "
                  "newest requests when it runs out (scheduler 'retract_decode'); scheduler defaults: "
                  "chunked_prefill_size 8192, max_running_requests from the KV pool (the scenario's "
                  "max_num_batched_tokens and max_num_seqs); host pair: the vllm family's (no SGLang rows to fit)"},
};

constexpr std::array kAliases{
    EngineAlias{"vllm", "vllm-0.6"},
    EngineAlias{"tensorrt-llm", "tensorrt-llm-0.17"},
    EngineAlias{"lmdeploy", "lmdeploy-0.1"},
    EngineAlias{"sglang", "sglang-0.4"},
};

/// Whether kEngineNames lists the profiles' names, then the aliases', in order.
constexpr bool names_agree() {
  if (std::size(kEngineNames) != kProfiles.size() + kAliases.size()) return false;
  size_t i = 0;
  for (const EngineProfile& p : kProfiles) {
    if (kEngineNames[i++] != p.name) return false;
  }
  for (const EngineAlias& a : kAliases) {
    if (kEngineNames[i++] != a.name) return false;
  }
  return true;
}
static_assert(names_agree(), "kEngineNames (engine_profile.hpp) must list the profiles, then the aliases");

}  // namespace

std::span<const EngineProfile> engine_profiles() { return kProfiles; }
std::span<const EngineAlias> engine_aliases() { return kAliases; }

CapacityPolicy capacity_policy(std::string_view name) {
  for (size_t i = 0; i < std::size(kCapacityPolicyNames); ++i) {
    if (kCapacityPolicyNames[i] == name) return static_cast<CapacityPolicy>(i);
  }
  throw std::invalid_argument("unknown capacity scheduler policy '" + std::string(name) + "'");
}

const EngineProfile& engine_profile(std::string_view name) {
  for (const EngineAlias& a : kAliases) {
    if (a.name == name) name = a.release;
  }
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
