// The rules of a serving scenario that need its workload (docs/serving.md, "Budgets" and "Requests that never
// fit"), apart from the loader: the longest prompt against the iteration's token budget when prompts are not
// chunked, the trace's reading and budgets, and the fleet's size and autoscaler ticks. Each returns the key it
// locates and the message (detail::KeyViolation); the loader (scenario.cpp) reports it at that key's place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "sim/io/workload_rules.hpp"

namespace clustersim::sim::detail {

/// The most engines (replica slots x pipeline stages, each a virtual engine with its queue and KV cache) a
/// serving run simulates: 262,144, about 0.2 GB of engine state.
inline constexpr int64_t kMaxServingEngines = int64_t{1} << 18;
/// The most autoscaler decisions over the workload's window: 1,000,000.
inline constexpr double kMaxAutoscaleTicks = 1e6;

/// What the loader learns of a trace by reading it (sim::load_request_trace, sim/io/request_trace.hpp).
struct TraceFacts {
  int64_t requests = 0;               ///< requests in the window
  int64_t cut = 0;                    ///< rows the window cut
  int64_t longest_prompt_tokens = 0;  ///< over the requests in the window that fit the model's context
  double last_arrival_s = 0.0;        ///< of the requests in the window, relative to the first
};

/// Reads the trace `file` (window_s: the window workload.duration_s gives; nullopt: the whole trace) into `facts`;
/// the longest prompt is over the requests whose prompt and output fit `context_tokens` (the model's seq_length:
/// a longer request is rejected when it arrives, as vLLM's max_model_len check does).
/// A bad trace (sim::TraceError: unreadable, malformed, over a budget) is a violation of workload.trace whose
/// message carries the trace's FILE:LINE.
std::optional<KeyViolation> read_trace_facts(const std::filesystem::path& file, std::optional<double> window_s,
                                             int64_t context_tokens, TraceFacts& facts);

/// The longest prompt a synthetic workload may draw, when its keys bound it: fixed, the length; uniform, _max; a
/// lognormal with _max, _max; each at most seq_length - 1 (a longer prompt leaves no room for an output token in
/// the model's context: such a request is rejected when it arrives). nullopt for
/// an unbounded lognormal (its longest prompt is not certain at load time).
std::optional<int64_t> longest_prompt_tokens(const LengthKeys& prompt, int64_t seq_length);

/// Without chunked prefill an engine computes a prompt whole in one iteration of at most max_num_batched_tokens
/// tokens: a longer prompt is never scheduled. vLLM refuses the configuration at start; so does this rule, as a
/// violation of serving.max_num_batched_tokens naming the longest prompt and `where` it comes from. nullopt when
/// prefill is chunked, the longest prompt is unknown, or it fits.
std::optional<KeyViolation> check_prompt_fits_batch(std::optional<int64_t> longest_prompt_tokens,
                                                    const std::string& where, int64_t max_num_batched_tokens,
                                                    bool chunked_prefill);

/// A fleet's size and its events over the workload's window.
struct FleetShape {
  int64_t replica_slots = 1;  ///< serving.replicas, or serving.max_replicas with autoscaling
  bool autoscaling = false;
  int64_t pipeline_stages = 1;
  double window_s = 60.0;     ///< the workload's window (a trace run whole: its last arrival)
  double autoscale_interval_s = 15.0;
  int64_t spot_replicas = 0;
  double spot_eviction_rate_per_hour = 0.0;
};

/// The fleet's budgets (docs/serving.md, "Budgets"): replica slots x pipeline stages at most kMaxServingEngines
/// (a violation of serving.replicas, or serving.max_replicas with autoscaling); with autoscaling at most
/// kMaxAutoscaleTicks decisions over the window, and replica slots x decisions at most 1e8 (the autoscaler visits
/// every slot at each decision: about a second), both serving.autoscale_interval_s; spot replicas: at most
/// 1,000,000 expected evictions over the window (each re-routes a replica's requests;
/// serving.spot_eviction_rate_per_hour).
std::optional<KeyViolation> check_fleet_budget(const FleetShape& fleet);

}  // namespace clustersim::sim::detail
