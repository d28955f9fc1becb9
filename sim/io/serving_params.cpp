// The serving keys of the scenario parameter table (scenario_params.hpp): [serving], [workload] and [slo], in file
// order. scenario_params() splices them in after [cost]; docs/scenario-format.md is rendered from the whole table.
#include <array>
#include <string_view>

#include "models/serving/engine_profile.hpp"
#include "models/serving/speculative.hpp"
#include "sim/io/scenario_params.hpp"

namespace clustersim::sim::detail {
namespace {

using enum ParamType;

// Must match the serving loader (sim/io/scenario.cpp, build_serving).
constexpr std::array<std::string_view, 5> kServingPrecisions{"bf16", "fp16", "fp8", "int8", "fp4"};
constexpr std::array<std::string_view, 2> kKvDtypes{"auto", "fp8"};
constexpr std::array<std::string_view, 3> kRoutings{"least_outstanding", "prefix_aware", "round_robin"};
constexpr std::array<std::string_view, 4> kArrivals{"poisson", "gamma", "offline", "closed_loop"};
constexpr std::array<std::string_view, 3> kLengths{"fixed", "uniform", "lognormal"};

constexpr std::array kServingParams{
    // [serving]
    ParamSpec{.key = "serving.vm_size", .type = string, .need = Need::required, .non_empty = true,
              .help = "Catalog VM size of every replica (`clustersim catalog`)."},
    ParamSpec{.key = "serving.replicas", .type = integer, .unit = "replicas", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 100000,
              .help = "Model replicas, each on its own GPUs; the router spreads requests over them.",
              .bound_reason = "100,000 replicas: far beyond any published fleet"},
    ParamSpec{.key = "serving.tensor", .type = integer, .unit = "GPUs", .need = Need::defaulted, .default_text = "1",
              .min_int = 1, .max_int = 72,
              .help = "Tensor-parallel GPUs per replica, inside one NVLink domain of the VM size; divides the heads.",
              .bound_reason = "72: the largest NVLink domain (GB200 NVL72)"},
    ParamSpec{.key = "serving.pipeline", .type = integer, .unit = "stages", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 128,
              .help = "Pipeline stages per replica (vLLM --pipeline-parallel-size): a replica is tensor x pipeline "
                      "GPUs over the fewest VMs, the layers split evenly; with stages > 1 it keeps that many "
                      "batches in flight (virtual engines). Not with autoscaling, spot replicas or a zone outage.",
              .bound_reason = "128 stages: beyond any published deployment"},
    ParamSpec{.key = "serving.expert_parallel", .type = integer, .unit = "GPUs", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1024,
              .help = "Expert-parallel GPUs per replica (an MoE model): each holds (num_experts + redundant_experts) / "
                      "expert_parallel whole experts. Either equal to serving.tensor (tensor-parallel attention, vLLM "
                      "--enable-expert-parallel) or with data_parallel_attention and tensor = 1; pipeline 1. 1: experts "
                      "split tensor-parallel.",
              .bound_reason = "1,024 GPUs: beyond the largest published EP group (DeepEP V2's EP2048 aside)"},
    ParamSpec{.key = "serving.data_parallel_attention", .type = boolean, .need = Need::defaulted,
              .default_text = "false",
              .help = "Attention data-parallel over the expert-parallel GPUs (SGLang --enable-dp-attention; vLLM "
                      "--data-parallel-size with --enable-expert-parallel): each GPU runs its share of the batch and "
                      "holds its sequences' KV cache; MoE dispatch and combine are DeepEP all-to-alls. Needs "
                      "expert_parallel > 1 and tensor = 1."},
    ParamSpec{.key = "serving.redundant_experts", .type = integer, .unit = "experts", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 4096,
              .help = "Replicas of hot experts spread over the expert-parallel GPUs (EPLB; SGLang "
                      "--ep-num-redundant-experts): weights only, routing taken as uniform. Needs expert_parallel > 1.",
              .bound_reason = "4,096: 16 x DeepSeek-V3's 256 experts"},
    ParamSpec{.key = "serving.precision", .type = string, .need = Need::defaulted, .default_text = "\"bf16\"",
              .choices = kServingPrecisions,
              .help = "Weights and GEMM math: bf16 or fp16 (2-byte weights), fp8 (W8A8, fp8 GEMMs), int8 (weight-only "
                      "W8A16: 1-byte weights, fp16 math), fp4 (NVFP4 W4A4: 0.5625-byte weights, GEMMs on FP4 tensor "
                      "cores; Blackwell only)."},
    ParamSpec{.key = "serving.kv_cache_dtype", .type = string, .need = Need::defaulted, .default_text = "\"auto\"",
              .choices = kKvDtypes, .help = "KV cache elements: auto (2 bytes) or fp8 (1 byte; vLLM --kv-cache-dtype)."},
    ParamSpec{.key = "serving.max_num_seqs", .type = integer, .unit = "sequences", .need = Need::defaulted,
              .default_text = "256", .min_int = 1, .max_int = 1 << 20,
              .help = "Sequences an engine runs at once (vLLM --max-num-seqs).", .bound_reason = "2^20 sequences"},
    ParamSpec{.key = "serving.max_num_batched_tokens", .type = integer, .unit = "tokens", .need = Need::defaulted,
              .default_text = "8192", .min_int = 1, .max_int = 1 << 24,
              .help = "Tokens of one iteration (vLLM --max-num-batched-tokens).", .bound_reason = "2^24, as seq_length"},
    ParamSpec{.key = "serving.chunked_prefill", .type = boolean, .need = Need::defaulted, .default_text = "true",
              .help = "Split long prompts over iterations (Sarathi-Serve); off: a prompt runs whole."},
    ParamSpec{.key = "serving.block_size", .type = integer, .unit = "tokens", .need = Need::defaulted,
              .default_text = "16", .min_int = 1, .max_int = 1024, .help = "Tokens per KV-cache block (vLLM --block-size).",
              .bound_reason = "1,024 tokens"},
    ParamSpec{.key = "serving.gpu_memory_utilization", .type = number, .unit = "fraction", .need = Need::defaulted,
              .default_text = "0.9", .lo = 0.0, .lo_open = true, .hi = 1.0,
              .help = "The engine's memory fraction: vllm, of the whole GPU memory for weights, activations and KV "
                      "cache (gpu_memory_utilization); tensorrt-llm and lmdeploy, of the memory left free after "
                      "the weights and buffers, for the KV cache (kv_cache_free_gpu_mem_fraction, "
                      "cache_max_entry_count)."},
    ParamSpec{.key = "serving.routing", .type = string, .need = Need::defaulted,
              .default_text = "\"least_outstanding\"", .choices = kRoutings,
              .help = "How the router picks a replica: fewest outstanding requests, round robin, or prefix_aware "
                      "(the replica whose prefix cache holds most of the prompt, of the session's last, the system "
                      "prompt's last and the least loaded; SGLang's cache-aware router; needs prefix_caching)."},
    ParamSpec{.key = "serving.prefix_caching", .type = boolean, .need = Need::defaulted, .default_text = "false",
              .help = "Automatic prefix caching (vLLM --enable-prefix-caching; on by default since vLLM V1): full KV "
                      "blocks are hashed by content, shared, kept after use and evicted least recently used; a "
                      "prompt's cached blocks are not computed again. Random-prompt benchmarks get no hits."},
    ParamSpec{.key = "serving.engine", .type = string, .need = Need::defaulted, .default_text = "\"vllm\"",
              .choices = models::kEngineNames,
              .help = "The inference engine release (docs/serving.md, \"Engines\"): its host work per iteration and "
                      "how it meets the GPU's, its collectives, KV-cache sizing and admission. A family name (vllm, "
                      "tensorrt-llm, lmdeploy) stands for its newest modelled release; the resolved scenario names "
                      "the release."},
    ParamSpec{.key = "serving.scheduler_steps", .type = integer, .unit = "iterations", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 64,
              .help = "Multi-step scheduling (vLLM --num-scheduler-steps; vllm-0.6 only): decode iterations run per "
                      "scheduling step, which pays the fixed host work once; new requests join between blocks.",
              .bound_reason = "64 steps: beyond the values vLLM's multi-step scheduler was tuned for (8-16)"},
    ParamSpec{.key = "serving.capacity_scheduler_policy", .type = string, .need = Need::derived,
              .default_text = "the engine's", .choices = models::kCapacityPolicyNames,
              .help = "KV-cache admission (TensorRT-LLM's names): max_utilization admits on the prompt's blocks and "
                      "preempts the newest request when the cache fills (vllm, lmdeploy); guaranteed_no_evict "
                      "admits only with blocks for the prompt and the whole output, never preempting "
                      "(tensorrt-llm's default, and trtllm-bench's)."},
    ParamSpec{.key = "serving.engine_overhead_ms", .type = number, .unit = "ms", .need = Need::derived,
              .default_text = "the engine's", .lo = 0.0, .hi = 1000.0,
              .help = "CPU work of the engine per iteration (scheduling, inputs, sampling, outputs)."},
    ParamSpec{.key = "serving.engine_overhead_per_sequence_us", .type = number, .unit = "us", .need = Need::derived,
              .default_text = "the engine's", .lo = 0.0, .hi = 1e6,
              .help = "The same per sequence of the iteration."},
    ParamSpec{.key = "serving.min_replicas", .type = integer, .unit = "replicas", .need = Need::optional,
              .min_int = 1, .max_int = 100000,
              .help = "Autoscaling (with max_replicas): the fewest replicas; `replicas` is the count at time 0.",
              .bound_reason = "as serving.replicas"},
    ParamSpec{.key = "serving.max_replicas", .type = integer, .unit = "replicas", .need = Need::optional,
              .min_int = 1, .max_int = 100000,
              .help = "Autoscaling: the most replicas (Kubernetes HPA rule, docs/serving.md).",
              .bound_reason = "as serving.replicas"},
    ParamSpec{.key = "serving.target_outstanding_per_replica", .type = number, .unit = "requests",
              .need = Need::defaulted, .default_text = "16", .lo = 0.0, .lo_open = true, .hi = 1e6,
              .help = "Autoscaling: requests outstanding (queued and running) per replica the autoscaler aims at."},
    ParamSpec{.key = "serving.autoscale_interval_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "15", .lo = 0.0, .lo_open = true, .hi = 86400.0,
              .help = "Autoscaling: how often the autoscaler decides (the HPA's default sync period)."},
    ParamSpec{.key = "serving.scale_down_window_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "300", .lo = 0.0, .hi = 86400.0,
              .help = "Autoscaling: a scale-down takes the highest desired count of this window (the HPA's "
                      "default stabilization)."},
    ParamSpec{.key = "serving.provisioning_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "300", .lo = 0.0, .hi = 86400.0,
              .help = "A new or returning replica's start: VM allocation and boot, weights loaded, engine warmed "
                      "(an assumption: minutes for a GPU VM)."},
    ParamSpec{.key = "serving.spot_replicas", .type = integer, .unit = "replicas", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 100000,
              .help = "Replicas on spot VMs (of `replicas`; not with autoscaling): evicted, restarted elsewhere, "
                      "back after capacity returns.",
              .bound_reason = "as serving.replicas"},
    ParamSpec{.key = "serving.spot_eviction_rate_per_hour", .type = number, .unit = "1/h per VM",
              .need = Need::defaulted, .default_text = "0.05", .lo = 0.0, .hi = 3600.0,
              .help = "Eviction rate of one spot VM, as reliability.spot_eviction_rate_per_hour."},
    ParamSpec{.key = "serving.spot_reprovision_mean_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "1800", .lo = 0.0, .hi = 1e7,
              .help = "Mean wait for spot capacity after an eviction (exponential; an assumption, as the job's)."},
    ParamSpec{.key = "serving.spot_notice_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "30", .lo = 0.0, .hi = 3600.0,
              .help = "Eviction notice (Azure Scheduled Events: 30 s for spot): the replica takes no new requests."},
    ParamSpec{.key = "serving.spot_discount", .type = number, .unit = "fraction", .need = Need::defaulted,
              .default_text = "0.7", .lo = 0.0, .hi = 1.0, .hi_open = true,
              .help = "Spot price = on-demand × (1 - discount), as cost.spot_discount."},
    ParamSpec{.key = "serving.zones", .type = integer, .unit = "zones", .need = Need::defaulted, .default_text = "1",
              .min_int = 1, .max_int = 100,
              .help = "Availability zones the replicas spread over (replica r in zone r mod zones).",
              .bound_reason = "100: more than any Azure region has"},
    ParamSpec{.key = "serving.zone_outage_start_s", .type = number, .unit = "s", .need = Need::optional, .lo = 0.0,
              .hi = 1e6, .help = "Zone 0 is lost at this time: its replicas stop, their requests go to the other zones."},
    ParamSpec{.key = "serving.zone_outage_duration_s", .type = number, .unit = "s", .need = Need::optional,
              .lo = 0.0, .lo_open = true, .hi = 1e6,
              .help = "How long zone 0 stays lost (absent: to the end); then its replicas start again."},
    // Disaggregated prefill and decode (issue 30; docs/serving.md, "Disaggregated prefill and decode").
    ParamSpec{.key = "serving.prefill_replicas", .type = integer, .unit = "replicas", .need = Need::optional,
              .min_int = 0, .max_int = 100000,
              .help = "Split pools: replicas that only compute prompts; their KV caches move to the decode pool, "
                      "which the other serving keys then describe (vm_size, replicas, tensor, engine limits). "
                      "Absent or 0: one co-located pool.",
              .bound_reason = "as serving.replicas"},
    ParamSpec{.key = "serving.prefill_vm_size", .type = string, .need = Need::optional, .non_empty = true,
              .help = "Split pools: the prefill pool's VM size (absent: serving.vm_size)."},
    ParamSpec{.key = "serving.prefill_tensor", .type = integer, .unit = "GPUs", .need = Need::optional,
              .min_int = 1, .max_int = 72,
              .help = "Split pools: a prefill replica's tensor-parallel GPUs (absent: serving.tensor).",
              .bound_reason = "as serving.tensor"},
    ParamSpec{.key = "serving.prefill_max_num_seqs", .type = integer, .unit = "sequences", .need = Need::optional,
              .min_int = 1, .max_int = 1 << 20,
              .help = "Split pools: a prefill engine's max_num_seqs (absent: serving.max_num_seqs).",
              .bound_reason = "as serving.max_num_seqs"},
    ParamSpec{.key = "serving.prefill_max_num_batched_tokens", .type = integer, .unit = "tokens",
              .need = Need::optional, .min_int = 1, .max_int = 1 << 24,
              .help = "Split pools: a prefill engine's max_num_batched_tokens (absent: serving.max_num_batched_tokens).",
              .bound_reason = "as serving.max_num_batched_tokens"},
    ParamSpec{.key = "serving.sample_interval_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "1", .lo = 0.0, .lo_open = true, .hi = 86400.0,
              .help = "Period of the queue and KV-cache time series."},
    ParamSpec{.key = "serving.speculative_method", .type = string, .need = Need::optional,
              .choices = models::kSpeculativeMethodNames,
              .help = "Speculative decoding (docs/serving.md, \"Speculative decoding\"): a draft model, EAGLE heads or "
                      "DeepSeek MTP modules propose speculative_tokens per decoding sequence, the model verifies "
                      "them in one pass. Absent: none."},
    ParamSpec{.key = "serving.speculative_tokens", .type = integer, .unit = "tokens", .need = Need::optional,
              .min_int = 1, .max_int = models::SpeculativeDecoding::kMaxSpeculativeTokens,
              .help = "Tokens drafted per step, k (vLLM num_speculative_tokens); with speculative_method.",
              .bound_reason = "16: beyond published chain depths (1-8)"},
    ParamSpec{.key = "serving.speculative_acceptance", .type = number, .unit = "fraction", .need = Need::optional,
              .lo = 0.0, .hi = 1.0,
              .help = "Per-position acceptance rate a: each drafted token is accepted with probability a given the "
                      "earlier ones were; tokens per step 1 + a + ... + a^k. With speculative_method (or "
                      "speculative_acceptance_by_position)."},
    ParamSpec{.key = "serving.speculative_acceptance_by_position", .type = number_list, .unit = "fraction",
              .need = Need::optional, .lo = 0.0, .hi = 1.0,
              .help = "The conditional acceptance a_i of each drafted position i = 1..k (k values), instead of one "
                      "rate: tokens per step 1 + sum_i prod_{j<=i} a_j (an EAGLE or DeepSeek MTP paper's table)."},
    ParamSpec{.key = "serving.draft_layers", .type = integer, .unit = "layers", .need = Need::optional,
              .min_int = 1, .max_int = 1024,
              .help = "The proposer's decoder layers: a draft model's (required), or EAGLE heads' / MTP modules' of "
                      "the model's width (absent: 1).",
              .bound_reason = "as model.num_layers"},
    ParamSpec{.key = "serving.draft_hidden_size", .type = integer, .need = Need::optional, .min_int = 1,
              .max_int = 1 << 20, .help = "A draft model's width (speculative_method = \"draft\").",
              .bound_reason = "as model.hidden_size"},
    ParamSpec{.key = "serving.draft_num_attention_heads", .type = integer, .need = Need::optional, .min_int = 1,
              .max_int = 1 << 16, .help = "A draft model's query heads (speculative_method = \"draft\").",
              .bound_reason = "as model.num_attention_heads"},
    ParamSpec{.key = "serving.draft_num_query_groups", .type = integer, .need = Need::optional, .min_int = 1,
              .max_int = 1 << 16,
              .help = "A draft model's key/value heads (absent: its query heads).",
              .bound_reason = "as model.num_query_groups"},
    ParamSpec{.key = "serving.draft_ffn_hidden_size", .type = integer, .need = Need::optional, .min_int = 1,
              .max_int = 1 << 22,
              .help = "A draft model's MLP width (gated as the model's; its vocabulary is the model's).",
              .bound_reason = "as model.ffn_hidden_size"},
    // [workload]
    ParamSpec{.key = "workload.trace", .type = string, .need = Need::optional, .non_empty = true,
              .help = "A request trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens, Azure's LLM inference trace "
                      "format), relative to the scenario file; replaces the synthetic keys but duration_s."},
    ParamSpec{.key = "workload.duration_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "60", .lo = 0.0, .lo_open = true, .hi = 1e6,
              .help = "Arrivals in [0, duration_s): the synthetic stream's length, or the trace's window (without "
                      "it a trace runs whole; the requests a window cuts are counted: trace_requests_cut).",
              .bound_reason = "1e6 s: 11.6 days of traffic"},
    ParamSpec{.key = "workload.arrival", .type = string, .need = Need::defaulted, .default_text = "\"poisson\"",
              .choices = kArrivals,
              .help = "Arrival process: Poisson, or gamma gaps with coefficient of variation arrival_cv (both at "
                      "rate_per_s); offline: all `requests` at time 0 (an offline throughput benchmark); "
                      "closed_loop: `concurrency` clients, each sending its next request when the last finishes."},
    ParamSpec{.key = "workload.requests", .type = integer, .unit = "requests", .need = Need::optional, .min_int = 1,
              .max_int = 2000000,
              .help = "The stream's length in requests (a benchmark's request count); required with offline and "
                      "closed_loop; with a rate it replaces duration_s.",
              .bound_reason = "the simulation's budget of 2,000,000 requests"},
    ParamSpec{.key = "workload.concurrency", .type = integer, .unit = "requests", .need = Need::optional,
              .min_int = 1, .max_int = 1000000,
              .help = "closed_loop: requests in flight at once (genai-perf --concurrency).",
              .bound_reason = "1,000,000 clients"},
    ParamSpec{.key = "workload.rate_per_s", .type = number, .unit = "requests/s", .need = Need::optional, .lo = 0.0,
              .lo_open = true, .hi = 1e6, .help = "Mean arrival rate; required without a trace.",
              .bound_reason = "1e6 requests/s"},
    ParamSpec{.key = "workload.arrival_cv", .type = number, .need = Need::defaulted, .default_text = "1", .lo = 0.0,
              .lo_open = true, .hi = 100.0, .help = "Gamma arrivals: the gaps' coefficient of variation (> 1 bursty)."},
    ParamSpec{.key = "workload.prompt", .type = string, .need = Need::defaulted, .default_text = "\"fixed\"",
              .choices = kLengths,
              .help = "Prompt lengths: fixed (prompt_tokens), uniform (prompt_min..prompt_max) or lognormal (median "
                      "prompt_tokens, prompt_sigma; truncated to prompt_min..prompt_max when either is given)."},
    ParamSpec{.key = "workload.prompt_tokens", .type = integer, .unit = "tokens", .need = Need::defaulted,
              .default_text = "512", .min_int = 1, .max_int = 1 << 24, .help = "Fixed prompt length, or the lognormal's median.",
              .bound_reason = "2^24, as seq_length"},
    ParamSpec{.key = "workload.prompt_min", .type = integer, .unit = "tokens", .need = Need::optional, .min_int = 1,
              .max_int = 1 << 24,
              .help = "Uniform prompts: the shortest. Lognormal: the lower truncation bound (shorter draws are not "
                      "made, as a benchmark's sampler drops them).",
              .bound_reason = "2^24"},
    ParamSpec{.key = "workload.prompt_max", .type = integer, .unit = "tokens", .need = Need::optional, .min_int = 1,
              .max_int = 1 << 24,
              .help = "Uniform prompts: the longest. Lognormal: the upper truncation bound (benchmark samplers cap "
                      "prompts, e.g. at 1,024 tokens for ShareGPT, and at the context).",
              .bound_reason = "2^24"},
    ParamSpec{.key = "workload.prompt_sigma", .type = number, .need = Need::defaulted, .default_text = "1", .lo = 0.0,
              .lo_open = true, .hi = 10.0, .help = "Lognormal prompts: standard deviation of ln(length)."},
    ParamSpec{.key = "workload.system_prompt_tokens", .type = integer, .unit = "tokens", .need = Need::defaulted,
              .default_text = "0", .min_int = 0, .max_int = 1 << 24,
              .help = "A system prompt of this many tokens before each prompt drawn (of the share of sessions that "
                      "have it); 0: none. Shared blocks hit with serving.prefix_caching.",
              .bound_reason = "2^24, as seq_length"},
    ParamSpec{.key = "workload.system_prompt_share", .type = number, .unit = "fraction", .need = Need::defaulted,
              .default_text = "1", .lo = 0.0, .hi = 1.0,
              .help = "The fraction of sessions (requests, without turns) whose prompt starts with a system prompt."},
    ParamSpec{.key = "workload.system_prompts", .type = integer, .unit = "prompts", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1000000,
              .help = "Distinct system prompts, each equally likely.", .bound_reason = "1,000,000 prompts"},
    ParamSpec{.key = "workload.turns", .type = integer, .unit = "requests", .need = Need::defaulted,
              .default_text = "1", .min_int = 1, .max_int = 1000,
              .help = "Requests per multi-turn session: each arrival starts a session; a later turn's prompt is the "
                      "conversation so far (prompt and output) plus new tokens drawn from workload.prompt, sent "
                      "a think time after the previous turn finished.",
              .bound_reason = "1,000 turns: beyond any published chat or agent trace"},
    ParamSpec{.key = "workload.think_time_s", .type = number, .unit = "s", .need = Need::defaulted,
              .default_text = "0", .lo = 0.0, .hi = 86400.0,
              .help = "Mean think time between a session's turns (exponential; an assumption of shape)."},
    ParamSpec{.key = "workload.output", .type = string, .need = Need::defaulted, .default_text = "\"fixed\"",
              .choices = kLengths, .help = "Output lengths, as workload.prompt."},
    ParamSpec{.key = "workload.output_tokens", .type = integer, .unit = "tokens", .need = Need::defaulted,
              .default_text = "128", .min_int = 1, .max_int = 1 << 24, .help = "Fixed output length, or the lognormal's median.",
              .bound_reason = "2^24"},
    ParamSpec{.key = "workload.output_min", .type = integer, .unit = "tokens", .need = Need::optional, .min_int = 1,
              .max_int = 1 << 24, .help = "Uniform outputs: the shortest. Lognormal: the lower truncation bound.",
              .bound_reason = "2^24"},
    ParamSpec{.key = "workload.output_max", .type = integer, .unit = "tokens", .need = Need::optional, .min_int = 1,
              .max_int = 1 << 24, .help = "Uniform outputs: the longest. Lognormal: the upper truncation bound.",
              .bound_reason = "2^24"},
    ParamSpec{.key = "workload.output_sigma", .type = number, .need = Need::defaulted, .default_text = "1", .lo = 0.0,
              .lo_open = true, .hi = 10.0, .help = "Lognormal outputs: standard deviation of ln(length)."},
    // [slo]
    ParamSpec{.key = "slo.ttft_p99_ms", .type = number, .unit = "ms", .need = Need::optional, .lo = 0.0, .lo_open = true,
              .help = "Time-to-first-token target: goodput counts requests at or below it."},
    ParamSpec{.key = "slo.tpot_p99_ms", .type = number, .unit = "ms", .need = Need::optional, .lo = 0.0, .lo_open = true,
              .help = "Time-per-output-token target (after the first token)."},
};

}  // namespace

std::span<const ParamSpec> serving_params() { return kServingParams; }

}  // namespace clustersim::sim::detail
