// Statistics of a serving run (issue 15): latency percentiles, throughput, goodput against latency targets,
// KV-cache and queue extremes, GPU-hours and cost per million tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/serving/latency_attribution.hpp"
#include "sim/serving/serving_simulation.hpp"

namespace clustersim::sim {

/// The p-th percentile (0-100) of `values` with linear interpolation between the closest ranks (NumPy's default,
/// "linear"): x[floor(h)] + (h - floor(h)) (x[floor(h) + 1] - x[floor(h)]), h = (n - 1) p / 100. NaN for none.
double percentile(std::vector<double> values, double p);

/// Latency targets: a request meets them when its TTFT and its TPOT are at or below the given ones.
struct LatencyTargets {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
};

/// What a planner reads off one serving run. Times in s; rates per s of the run's makespan (the first arrival
/// at 0 to the last finish).
struct ServingSummary {
  int64_t requests = 0;
  int64_t completed = 0;
  int64_t rejected = 0;     ///< larger than one replica's KV cache
  int64_t unserved = 0;     ///< not finished when the simulation ended (every replica lost)
  int64_t preemptions = 0;  ///< over all requests
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0, ttft_mean_s = 0;
  /// Time per output token after the first, (finish - first token) / (N - 1) per request of N > 1 output tokens
  /// (vLLM benchmarks/serve.py calculate_metrics' "TPOT"; genai-perf's inter-token latency); the mean is over
  /// requests.
  double tpot_p50_s = 0, tpot_p90_s = 0, tpot_p99_s = 0, tpot_mean_s = 0;
  double e2e_p50_s = 0, e2e_p90_s = 0, e2e_p99_s = 0, e2e_mean_s = 0;
  double requests_per_s = 0;       ///< completed requests over the makespan
  double output_tokens_per_s = 0;  ///< generated tokens over the makespan
  double input_tokens_per_s = 0;   ///< prompt tokens of completed requests over the makespan
  double goodput_requests_per_s = 0;  ///< completed requests that meet the targets (all completed without targets)
  double slo_attainment = 0;          ///< of all requests, the share that completed within the targets
  double mean_kv_occupancy = 0, peak_kv_occupancy = 0;
  int64_t peak_waiting = 0;
  double makespan_s = 0;
  double gpu_hours = 0;               ///< GPUs x makespan
  double vm_hours = 0;                ///< VMs x makespan
  double usd = 0;                     ///< vm_hours x price; NaN without a price
  double usd_per_million_output_tokens = 0;  ///< NaN without a price
  double usd_per_million_tokens = 0;         ///< over prompt and output tokens of completed requests; NaN without a price
  double utilization = 0;             ///< replica-seconds in iterations / billed replica-seconds
  double replica_hours = 0;           ///< replicas billed (provisioning, serving, draining) x time, to the makespan
  double mean_replicas = 0;           ///< replica_hours / makespan
  int64_t evictions = 0;              ///< spot VM evictions
  int64_t restarted_requests = 0;     ///< requests that started again after their replica's eviction
  LatencyShares latency;              ///< what limits TTFT and TPOT: mean shares of their parts (issue 29)
  int64_t kv_limited_iterations = 0;  ///< iterations whose admission the KV cache stopped
  // Inside the run (issue 30; docs/serving.md, "Inside a serving run"). NaN without an iteration (or a gap).
  /// Sequences per engine iteration: mean, and nearest-rank p50 and p99 of the exact histogram (integers).
  double sequences_per_iteration_mean = 0, sequences_per_iteration_p50 = 0, sequences_per_iteration_p99 = 0;
  double prefill_tokens_per_iteration_mean = 0;  ///< prompt tokens computed per iteration
  double decode_tokens_per_iteration_mean = 0;   ///< decoding sequences per iteration
  double prefill_token_share = 0;                ///< prefill tokens / (prefill + decode tokens), all iterations
  /// Time between tokens (TBT; vLLM benchmark_serving's "ITL" pooled over every token): the gap between successive
  /// output tokens of a request, over every token after each request's first; nearest-rank percentiles of a
  /// log-bucket histogram (GapHistogram: within 0.39 %), the mean exact.
  double tbt_mean_s = 0, tbt_p50_s = 0, tbt_p90_s = 0, tbt_p99_s = 0;
  /// Mean over completed requests of e2e / N (N output tokens): LLMPerf's inter_token_latency_s (ray-project/llmperf
  /// sums every gap from the request's send, TTFT included, and divides by N); above TPOT by about TTFT / N.
  double e2e_per_output_token_mean_s = 0;
  double running_mean = 0;  ///< running sequences over all replicas, mean over the samples
};

/// The value of a published benchmark's statistic in `s` (a fleet of `gpus` GPUs), in the unit the name ends
/// with: output_tokens_per_s, output_tokens_per_s_per_gpu, requests_per_s, ttft_mean_ms, ttft_p50_ms,
/// ttft_p99_ms, tpot_mean_ms, tpot_p50_ms, e2e_mean_s, e2e_p50_s, e2e_p99_s (the choices of reference.metric).
/// Throws std::invalid_argument for another name.
double serving_metric(const ServingSummary& s, std::string_view metric, int64_t gpus);

/// The summary of `result` on `replicas` replicas of `gpus_per_replica` GPUs each, packed on VMs of
/// `gpus_per_vm` (a replica smaller than a VM shares it), at `price_usd_per_vm_hour` when known. A fixed
/// on-demand fleet rents whole VMs for the makespan; with autoscaling, spot replicas or a zone outage (result.usage) each
/// replica pays its share of a VM (gpus_per_replica / gpus_per_vm) for its billed time, a spot one at
/// (1 - spot_discount) of the price.
ServingSummary summarize_serving(const ServingResult& result, const LatencyTargets& targets, int64_t replicas,
                                 int64_t gpus_per_replica, int64_t gpus_per_vm,
                                 std::optional<double> price_usd_per_vm_hour, double spot_discount = 0.0);

}  // namespace clustersim::sim
