// LLM serving as a discrete-event simulation (issue 15): requests arrive, a router sends each to a replica, and
// each replica runs a continuous-batching engine (vLLM's scheduler, Kwon et al. SOSP 2023; Orca's
// iteration-level scheduling, Yu et al. OSDI 2022) with a paged KV cache. An iteration's duration comes from
// models::InferenceModel; the scheduler decides what the next one holds.
//
// The scheduler, per iteration, with a token budget of max_num_batched_tokens:
//   1. every running sequence that has finished its prompt decodes one token; when the KV cache has no block
//      for it, the most recently admitted running sequence is preempted (its blocks freed; it goes back to
//      the front of the queue and later recomputes its prompt and the tokens it had generated: vLLM's
//      recompute preemption);
//   2. running sequences with prompt left take chunks of it (chunked prefill, Agrawal et al., Sarathi-Serve,
//      OSDI 2024); without chunked prefill a prompt is computed whole;
//   3. waiting requests are admitted first come, first served while there are fewer than max_num_seqs running,
//      budget left and free blocks for their whole prompt (and one more token), the first that does not fit
//      stopping admission (no overtaking).
// With multi-step scheduling (EnginePolicy::scheduler_steps = n > 1) a decode-only iteration opens a block of n:
// the next n - 1 iterations decode the block's sequences again without scheduling; they finish at its end.
// The iteration that completes a prompt samples its first token (time to first token, TTFT); each decode
// samples one more; a request finishes with its last output token and frees its blocks.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "models/units.hpp"
#include "sim/serving/iteration_log.hpp"

namespace clustersim::sim {

class SpeculativeServing;  // sim/serving/speculation.hpp

/// One request: when it arrives, its prompt and how many tokens it generates (>= 1).
///
/// Content (issue 30, prefix caching; sim/serving/prefix_cache.hpp): which tokens the prompt holds, named rather
/// than stored. The first prefix_tokens tokens are the shared system prompt prefix_id (-1: none); the rest belong
/// to the request's stream: its session's conversation (session >= 0; a turn's prompt is the previous turn's prompt,
/// its output and the new tokens, so each turn's prompt is a prefix of the next one's) or its own tokens.
/// A later turn of a session (previous >= 0: the index of the session's previous turn, earlier in the list) is
/// sent think_s after that turn finishes (or is rejected); its arrival_s is then a placeholder (the session's first
/// arrival, keeping the list's arrival order) and RequestOutcome::arrival_s says when it was sent.
struct ServingRequest {
  double arrival_s = 0.0;
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
  int64_t prefix_id = -1;      ///< the shared system prompt (-1: none)
  int64_t prefix_tokens = 0;   ///< its length, tokens (<= prompt_tokens)
  int64_t session = -1;        ///< the multi-turn session (-1: none)
  int64_t previous = -1;       ///< the session's previous turn, an index into the request list (-1: a first turn)
  double think_s = 0.0;        ///< from the previous turn's finish to this turn's arrival, s
};

/// The engine's batching limits (vLLM's engine arguments and defaults).
struct EnginePolicy {
  int64_t max_num_seqs = 256;            ///< sequences running at once (vLLM --max-num-seqs)
  int64_t max_num_batched_tokens = 8192; ///< tokens per iteration (--max-num-batched-tokens)
  bool chunked_prefill = true;           ///< split prompts over iterations (--enable-chunked-prefill)
  int64_t block_size = 16;               ///< tokens per KV-cache block (--block-size, default 16)
  /// KV-cache admission (models::CapacityPolicy): max_utilization admits on the prompt's blocks and preempts the
  /// newest when the cache is full; guaranteed_no_evict admits only with the blocks of the prompt and the whole
  /// output free, held to the end, and never preempts.
  models::CapacityPolicy admission = models::CapacityPolicy::max_utilization;
  /// Multi-step scheduling (vLLM --num-scheduler-steps, v0.6-v0.7): after a decode-only iteration the engine runs
  /// scheduler_steps - 1 more decode iterations of the same sequences without scheduling (their host fixed work
  /// is not paid: IterationBatch::scheduled), admitting no new request until the block ends. The block's batch is
  /// fixed: a sequence that samples its last token inside it decodes on, and finishes, at the block's end (vLLM
  /// checks stop conditions and returns a block's tokens when it ends). A block ends early when the KV cache has
  /// no block for the next token. 1: every iteration schedules.
  int64_t scheduler_steps = 1;
  /// Automatic prefix caching (vLLM --enable-prefix-caching, on by default in vLLM V1; sim/serving/prefix_cache.hpp):
  /// a prompt's full blocks already in the replica's KV cache are shared, not computed again.
  bool prefix_caching = false;
};

/// How the router picks a replica for an arriving request. prefix_aware (issue 30): the replica whose prefix cache
/// holds the longest prefix of the request among two candidates, the replica its session's previous turn went to
/// and the least outstanding one (ties and no hit: the least outstanding); O(log replicas + prompt blocks) per
/// request, never a scan of every replica's cache (Fleet::route_prefix_aware).
enum class Routing { round_robin, least_outstanding, prefix_aware };

/// The most decisions an autoscaler makes in one run, drain included: 10,000,000 (a few seconds); beyond them
/// simulate_serving throws std::invalid_argument (an interval far too short for the run).
inline constexpr int64_t kMaxAutoscaleDecisions = 10'000'000;

/// The most engine iterations (scheduler steps of all replicas, drain included) one run may take: 10,000,000, about
/// 10-15 s of one core (1.0-1.3 us each, measured on a 1-token max_num_batched_tokens run and on 1,100 lightly
/// loaded replicas). The shipped serving scenarios take at most 1.1 million, the 350 validation rows at most 0.5
/// million. Beyond it simulate_serving throws std::invalid_argument (65): too many replicas stepping for the
/// workload, a per-iteration token budget far too small for it (serving.max_num_batched_tokens of a few tokens),
/// or a workload too long to simulate at once.
inline constexpr int64_t kMaxEngineIterations = 10'000'000;

/// Replicas that follow the load (Kubernetes' Horizontal Pod Autoscaler rule, kubernetes.io "Horizontal Pod
/// Autoscaling": desired = ceil(metric / target), evaluated every sync period, a scale-down taking the highest
/// recommendation of a stabilization window). The metric is the requests outstanding in the fleet (queued at the
/// router and at the replicas, and running): desired = ceil(outstanding / target_outstanding_per_replica),
/// clamped to [min_replicas, max_replicas]. A new replica serves after ServingSetup::provisioning_s; a replica
/// scaled down takes no new requests and stops when its last one finishes.
struct ServingAutoscaling {
  int64_t min_replicas = 1;
  int64_t max_replicas = 1;
  double target_outstanding_per_replica = 16.0;
  double interval_s = 15.0;              ///< the HPA's default sync period
  double scale_down_window_s = 300.0;    ///< the HPA's default scale-down stabilization window
};

/// Replicas on spot VMs: the first `replicas` replica slots. A spot VM is evicted at `eviction_rate_per_hour`
/// (a Poisson process, as the job model's); after `notice_s` of notice (Azure Scheduled Events: 30 s for a spot
/// eviction) in which its replicas take no new requests, they stop, and their unfinished requests go back to the
/// router and start again (their prompt and the tokens already generated recomputed). Capacity comes back after an
/// exponential wait of mean `reprovision_mean_s`, then ServingSetup::provisioning_s. Replicas that share a VM are
/// evicted together; a replica wider than a VM is evicted when any of its VMs is.
struct SpotReplicas {
  int64_t replicas = 0;
  int64_t replicas_per_vm = 1;  ///< replicas sharing one VM (1 when a replica fills a VM or more)
  int64_t vms_per_replica = 1;  ///< VMs one replica spans (1 when it fits one)
  double eviction_rate_per_hour = 0.05;
  double reprovision_mean_s = 1800.0;
  double notice_s = 30.0;
  uint64_t seed = 0;
};

/// Replicas spread over availability zones (replica r in zone r mod zones), and the loss of zone 0 for a while:
/// at outage_start_s its replicas stop at once (no notice) and their unfinished requests go to the other zones;
/// after outage_duration_s the zone's replica slots may start again (a fixed fleet's start at once, serving after
/// ServingSetup::provisioning_s; an autoscaler's when it wants them).
struct ServingZones {
  int64_t zones = 1;
  std::optional<double> outage_start_s;
  double outage_duration_s = std::numeric_limits<double>::infinity();
};

/// Where a KV cache moves between a prefill and a decode replica (sim/serving/kv_transfer.hpp): the links of
/// the fabric a transfer crosses, per replica and per direction, and their latency. B/s and s.
struct KvTransferNetwork {
  double prefill_nic_bytes_per_s = 0.0;     ///< a prefill replica's InfiniBand NICs (its GPUs' share of the ports)
  double decode_nic_bytes_per_s = 0.0;      ///< a decode replica's
  double prefill_nvlink_bytes_per_s = 0.0;  ///< a prefill replica's GPUs into their NVLink domain (per direction)
  double decode_nvlink_bytes_per_s = 0.0;
  double infiniband_latency_s = 0.0;        ///< one transfer's latency over InfiniBand (NICs, PCIe, switch hops)
  double nvlink_latency_s = 0.0;            ///< over NVLink (two NVSwitch hops)
  /// The NVLink domain of each replica slot (prefill pool first, then the decode pool), or empty: every transfer
  /// crosses InfiniBand. Two replicas of one domain move the KV cache over NVLink.
  std::vector<int64_t> domain;
  double kv_bytes_per_token = 0.0;  ///< the whole replica's KV cache bytes per token (all GPUs, all layers)
};

/// Disaggregated prefill and decode (docs/serving.md, "Disaggregated prefill and decode"): ServingSetup's model,
/// policy, kv_cache_tokens and replicas are the prefill pool's, these the decode pool's.
struct DecodePool {
  std::shared_ptr<const models::InferenceModel> model;
  EnginePolicy policy;
  int64_t kv_cache_tokens = 0;  ///< per decode replica
  int64_t replicas = 1;
  KvTransferNetwork network;
};

/// What simulate_serving runs.
struct ServingSetup {
  std::shared_ptr<const models::InferenceModel> model;
  EnginePolicy policy;
  int64_t kv_cache_tokens = 0;  ///< per replica (InferenceModel::kv_cache_tokens)
  int64_t max_model_len = 0;    ///< longest prompt + output an engine accepts (vLLM --max-model-len); 0: no limit
  int64_t replicas = 1;
  Routing routing = Routing::round_robin;
  double sample_interval_s = 1.0;  ///< period of the queue and KV-cache time series
  /// 0: an open loop, each request arrives at its arrival_s. C > 0: a closed loop of C clients (a benchmark at
  /// fixed concurrency: genai-perf / AIPerf --concurrency, vLLM benchmark_serving --max-concurrency): the first
  /// C requests are sent at 0 and each later one the moment an earlier one finishes (or is rejected), in list
  /// order; the requests' arrival_s are not used.
  int64_t concurrency = 0;
  /// Load-following replicas; `replicas` is then the count at time 0 (within [min, max]).
  std::optional<ServingAutoscaling> autoscaling;
  SpotReplicas spot;
  ServingZones zones;
  /// From a replica's start (VM allocated) to serving: VM boot, weights loaded, engine warmed up, s.
  double provisioning_s = 0.0;
  /// The run's budget of engine iterations (kMaxEngineIterations; a test lowers it).
  int64_t max_engine_iterations = kMaxEngineIterations;
  /// Split pools: requests prefill on this setup's replicas and decode on the decode pool's, their KV cache moved
  /// between them. Not with autoscaling, spot replicas or zone outages. Absent: one co-located pool.
  std::optional<DecodePool> decode_pool;
  /// Speculative decoding (sim/serving/speculation.hpp); null: none. Not with scheduler_steps > 1.
  std::shared_ptr<const SpeculativeServing> speculative;
  /// Which iterations ServingResult::inside records (off by default: no memory); `every` >= 1.
  IterationSampling iteration_log;
};

/// What happened to one request. first_token_s and finish_s are NaN when it never got that far (it needs more
/// KV cache than a replica has: rejected).
struct RequestOutcome {
  double arrival_s = 0.0;
  double first_token_s = 0.0;
  double finish_s = 0.0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t replica = 0;
  int64_t preemptions = 0;
  bool rejected = false;  ///< its prompt and output exceed one replica's KV cache, or max_model_len
  int64_t evictions = 0;  ///< times its replica was evicted while it was there (it started again elsewhere)
  /// Prompt tokens found in the prefix cache when it was admitted for its first token (0 without prefix caching).
  int64_t cached_tokens = 0;
  [[nodiscard]] double ttft_s() const { return first_token_s - arrival_s; }
  /// Mean time per output token after the first, s (0 for a single output token).
  [[nodiscard]] double tpot_s() const {
    return output_tokens > 1 ? (finish_s - first_token_s) / static_cast<double>(output_tokens - 1) : 0.0;
  }
  [[nodiscard]] double e2e_s() const { return finish_s - arrival_s; }
};

/// Where one request's time went inside the iterations that carried it (issue 29), s; docs/serving.md
/// ("What limits TTFT and TPOT"). An iteration's duration is split by the resource that bounded each of its terms
/// (latency_attribution.hpp, IterationResources) and, between the requests of its batch, by tokens: a prompt chunk
/// of c tokens in an iteration of T tokens (prefill tokens + decoding sequences) owns c / T of it, the other
/// requests' tokens the rest; the decoding sequences together own D / T (D of them), the prompt chunks the rest.
/// What no iteration explains (queueing before the first token; after it, waits and recomputation after a
/// preemption or eviction) is the remainder of TTFT and TPOT (latency_attribution.hpp, ttft_parts and tpot_parts).
struct LatencyParts {
  // Before the first token (TTFT), in the iterations that computed the request's prompt: its own share, by resource.
  double prefill_compute_s = 0.0;        ///< matmul compute (GEMMs beyond streaming their weights; prefill attention)
  double prefill_memory_s = 0.0;         ///< HBM bandwidth (weight streaming, KV reads, element-wise kernels)
  double prefill_communication_s = 0.0;  ///< tensor-parallel all-reduces, logits gather, pipeline sends
  double prefill_host_s = 0.0;           ///< the engine's host work and NCCL calls the GPU waits for
  double prefill_co_scheduled_s = 0.0;   ///< the other requests' tokens (decodes, other chunks) of those iterations
  /// Prompt work lost to a preemption or an eviction before the first token (computed again later).
  double prefill_restart_s = 0.0;
  /// Waiting in a replica's queue, before the first token, while the replica's admission stopped for want of KV
  /// blocks (the head of its queue did not fit).
  double kv_wait_s = 0.0;
  // After the first token (TPOT x (output tokens - 1)): the decode iterations' share of the decoding sequences.
  double decode_compute_s = 0.0;
  double decode_memory_s = 0.0;
  double decode_communication_s = 0.0;
  double decode_host_s = 0.0;
  double decode_prefill_stall_s = 0.0;  ///< the prompt chunks' share of the iterations that also decoded it
};

/// One sample of the fleet's state.
struct ServingSample {
  double time_s = 0.0;
  int64_t waiting = 0;        ///< queued requests over all replicas
  int64_t running = 0;        ///< running sequences over all replicas
  double kv_occupancy = 0.0;  ///< used / total KV blocks over all replicas
  int64_t replicas = 0;       ///< replicas serving (taking requests)
  int64_t provisioning = 0;   ///< replicas starting
};

/// One replica slot's bill: the seconds it was provisioned, serving or draining, up to the makespan.
struct ReplicaUsage {
  double billed_s = 0.0;
  bool spot = false;
};

struct ServingResult {
  std::vector<RequestOutcome> requests;  ///< in the order given
  std::vector<ServingSample> samples;    ///< every sample_interval_s from 0 to the last finish (at most 2^20)
  int64_t iterations = 0;
  double busy_s = 0.0;      ///< replica-seconds spent in iterations
  double makespan_s = 0.0;  ///< the last request's finish (or the last arrival)
  uint64_t fingerprint = 0; ///< the engine's determinism fingerprint
  std::vector<ReplicaUsage> usage;  ///< per replica slot (autoscaling, spot or zone-outage runs; empty otherwise)
  int64_t evictions = 0;            ///< spot VM evictions before the makespan
  /// Requests rejected because they can never be scheduled: without chunked prefill, a prompt (or a preempted or
  /// evicted request's prompt and generated tokens, recomputed) longer than max_num_batched_tokens (vLLM's
  /// scheduler ignores such a prompt). Counted among the rejected requests too.
  int64_t unschedulable = 0;
  std::vector<LatencyParts> parts;  ///< per request, in the order given (issue 29)
  /// Iterations whose admission stopped because the head of the queue found no free KV blocks for its prompt (or,
  /// under guaranteed_no_evict, its whole context): the KV cache, not the batch limits, held requests back.
  int64_t kv_limited_iterations = 0;
  // Split pools only (ServingSetup::decode_pool; empty or 0 otherwise).
  std::vector<double> kv_transfer_s;  ///< per request: its KV cache's transfer, reserved to landed, s; NaN: none
  double decode_busy_s = 0.0;         ///< the decode pool's replica-seconds in iterations (of busy_s)
  int64_t held_transfers = 0;         ///< transfers that waited for a decode replica's free KV blocks
  /// Inside the run (issue 30): batch statistics, the gaps between tokens (TBT) and the recorded iterations.
  InsideServing inside;
};

/// Prefix caching's outcome (issue 30): prompt tokens found in the cache over the prompt tokens of the requests that
/// were admitted for their first token (RequestOutcome::cached_tokens; rejected and unserved requests left out).
/// The hit rate is vLLM's prefix-cache hit rate (its /metrics' prefix_cache_hits / prefix_cache_queries, in tokens).
struct PrefixCacheStats {
  int64_t cached_tokens = 0;
  int64_t prompt_tokens = 0;
  [[nodiscard]] double hit_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / static_cast<double>(prompt_tokens) : 0.0;
  }
};
/// Sums `r`'s requests that got a first token (prefix_cache.cpp).
PrefixCacheStats prefix_cache_stats(const ServingResult& r);

/// Simulates `requests` (arrival times ascending, else std::invalid_argument) on the setup's replicas. Every
/// request ends completed, rejected (RequestOutcome::rejected; ServingResult::unschedulable) or unserved (no
/// replica serving when the simulation ends); anything else is a bug of the engine and throws std::logic_error
/// naming the counts. Throws
/// std::invalid_argument on a setup without a model, replicas < 1, a non-positive limit (scheduler_steps included),
/// a KV cache smaller than one block, a request with prompt or output < 1, autoscaling limits out of order (min <
/// 1, min > replicas > max, non-positive target or interval), more spot replicas than replicas, spot with autoscaling,
/// zones < 1 or more zones than replica slots, a negative rate or time, speculative decoding with scheduler_steps
/// > 1, or an iteration log with every < 1 or from_s > to_s; a request whose prefix_tokens is outside [0,
/// prompt_tokens], whose previous turn is not earlier in the list, or that has one in a closed loop.
ServingResult simulate_serving(const ServingSetup& setup, const std::vector<ServingRequest>& requests);

}  // namespace clustersim::sim
