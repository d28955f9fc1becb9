#include "sim/io/serving_rules.hpp"

#include <algorithm>

#include "sim/io/request_trace.hpp"

namespace clustersim::sim::detail {

std::optional<KeyViolation> read_trace_facts(const std::filesystem::path& file, std::optional<double> window_s,
                                             int64_t context_tokens, TraceFacts& facts) {
  try {
    const RequestTrace trace = load_request_trace(file, window_s);
    facts = TraceFacts{};
    facts.requests = static_cast<int64_t>(trace.requests.size());
    facts.cut = trace.cut;
    for (const TraceRequest& r : trace.requests) {
      if (r.prompt_tokens + r.output_tokens <= context_tokens) {  // each <= 2^31: no overflow
        facts.longest_prompt_tokens = std::max(facts.longest_prompt_tokens, r.prompt_tokens);
      }
      facts.last_arrival_s = std::max(facts.last_arrival_s, r.arrival_s);
    }
  } catch (const TraceError& e) {
    return KeyViolation{"workload.trace", e.what()};
  }
  return std::nullopt;
}

std::optional<int64_t> longest_prompt_tokens(const LengthKeys& prompt, int64_t seq_length) {
  std::optional<int64_t> longest;
  if (prompt.kind == "fixed") longest = prompt.tokens;
  if (prompt.kind == "uniform" || prompt.kind == "lognormal") longest = prompt.max;
  if (longest) longest = std::min(*longest, seq_length - 1);
  return longest;
}

std::optional<KeyViolation> check_prompt_fits_batch(std::optional<int64_t> longest, const std::string& where,
                                                    int64_t max_num_batched_tokens, bool chunked_prefill) {
  if (chunked_prefill || !longest || *longest <= max_num_batched_tokens) return std::nullopt;
  return KeyViolation{"serving.max_num_batched_tokens",
                      "max_num_batched_tokens (" + std::to_string(max_num_batched_tokens) +
                          ") is smaller than the longest prompt (" + std::to_string(*longest) + ", " + where +
                          ") and chunked prefill is off: such a prompt is never scheduled; raise "
                          "serving.max_num_batched_tokens or set serving.chunked_prefill = true"};
}

std::optional<KeyViolation> check_fleet_budget(const FleetShape& f) {
  const int64_t engines = f.replica_slots * f.pipeline_stages;  // each at most 1e5 and 128: no overflow
  if (engines > kMaxServingEngines) {
    return KeyViolation{f.autoscaling ? "serving.max_replicas" : "serving.replicas",
                        std::to_string(f.replica_slots) + " replicas x " + std::to_string(f.pipeline_stages) +
                            " pipeline stages = " + std::to_string(engines) +
                            " engines, above the simulation's budget of " + std::to_string(kMaxServingEngines)};
  }
  const double decisions = f.window_s / f.autoscale_interval_s;
  if (f.autoscaling && decisions > kMaxAutoscaleTicks) {
    return KeyViolation{"serving.autoscale_interval_s",
                        "about " + std::to_string(static_cast<int64_t>(decisions)) +
                            " autoscaler decisions over the workload's window, above the simulation's budget of "
                            "1,000,000: raise the interval"};
  }
  if (f.autoscaling && static_cast<double>(f.replica_slots) * decisions > 1e8) {
    return KeyViolation{"serving.autoscale_interval_s", "max_replicas x decisions over workload.duration_s exceeds "
                                                        "the simulation's budget of 100,000,000: raise the interval"};
  }
  const double evictions = static_cast<double>(f.spot_replicas) * f.spot_eviction_rate_per_hour * f.window_s / 3600.0;
  if (f.spot_replicas > 0 && evictions > 1e6) {
    return KeyViolation{"serving.spot_eviction_rate_per_hour",
                        "about " + std::to_string(static_cast<int64_t>(evictions)) +
                            " evictions over workload.duration_s, above the simulation's budget of 1,000,000"};
  }
  return std::nullopt;
}

}  // namespace clustersim::sim::detail
