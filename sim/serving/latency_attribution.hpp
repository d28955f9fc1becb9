// What limits TTFT and TPOT (issue 29): an iteration's time split by the resource that bounded it, each request's
// TTFT and TPOT split into parts that sum to them, and the fleet's mean shares with the part that dominates.
// Definitions and an example: docs/serving.md ("What limits TTFT and TPOT").
#pragma once

#include <cstdint>
#include <string>

#include "models/serving/inference_model.hpp"
#include "sim/serving/serving_simulation.hpp"

namespace clustersim::sim {

/// One iteration's duration by the resource that bounded each of its terms, s; the four sum to
/// IterationTime::total().
struct ResourceSplit {
  double compute_s = 0.0;        ///< GEMM time beyond streaming the weights, prefill (FlashAttention) attention
  double memory_s = 0.0;         ///< GEMM time up to streaming the weights, decode attention's KV reads, element-wise
  double communication_s = 0.0;  ///< IterationTime::communication
  double host_s = 0.0;           ///< IterationTime::overhead + collective_launch
  [[nodiscard]] double total_s() const { return compute_s + memory_s + communication_s + host_s; }
};

/// Splits an inference model's iteration times by resource (the roofline terms models::InferenceModel computes).
/// GEMMs: their time up to that of a one-token iteration's GEMMs (streaming every weight once, the floor of any
/// batch) is HBM bandwidth, the rest matmul compute: a small decode batch is all bandwidth, a long prefill chunk
/// mostly compute. Attention: decode attention (PagedAttention's KV reads, affine in the keys read:
/// ComputeModel::memory_time) is bandwidth, the rest of the term (prefill FlashAttention) compute. For a mixture of
/// experts the floor is one token's experts: the weights of the further experts a larger batch touches count as
/// compute (an approximation). Three iteration_time calls at construction, O(1) per split.
class IterationResources {
 public:
  explicit IterationResources(const models::InferenceModel& model);
  /// The split of `time`, the model's iteration_time(batch).
  [[nodiscard]] ResourceSplit split(const models::IterationBatch& batch, const models::IterationTime& time) const;

 private:
  double gemm_floor_s_ = 0.0;               ///< GEMMs of a one-token iteration (one decode, sampled)
  double decode_attention_base_s_ = 0.0;    ///< decode attention's time at zero keys read
  double decode_attention_per_key_s_ = 0.0;  ///< per key (cached token or new token) read
};

/// One request's TTFT in parts that sum to it, s. queueing_s is the remainder (0 within 1e-9 of TTFT): time
/// before the first token in no iteration that computed its prompt (the router's and the replica's queue, running
/// with no chunk scheduled, after a restart) less kv_wait_s.
struct TtftParts {
  double queueing_s = 0, kv_wait_s = 0;
  double compute_s = 0, memory_s = 0, communication_s = 0, host_s = 0;
  double co_scheduled_s = 0, restart_s = 0;
  [[nodiscard]] double total_s() const {
    return queueing_s + kv_wait_s + compute_s + memory_s + communication_s + host_s + co_scheduled_s + restart_s;
  }
};
/// The TTFT parts of a completed request (`o` not rejected, finished).
TtftParts ttft_parts(const RequestOutcome& o, const LatencyParts& p);

/// One request's TPOT (output tokens > 1) in parts that sum to it, s per output token after the first.
/// preemption_s is the remainder (0 within 1e-9 of TPOT): time after the first token in no iteration that decoded
/// it (waiting and recomputing after a preemption or an eviction; a decode left out of a full token budget).
struct TpotParts {
  double compute_s = 0, memory_s = 0, communication_s = 0, host_s = 0;
  double prefill_stall_s = 0, preemption_s = 0;
  [[nodiscard]] double total_s() const {
    return compute_s + memory_s + communication_s + host_s + prefill_stall_s + preemption_s;
  }
};
/// The TPOT parts of a completed request with more than one output token.
TpotParts tpot_parts(const RequestOutcome& o, const LatencyParts& p);

/// Means over the completed requests (TPOT: those with more than one output token) of each part's share of
/// their TTFT (TPOT), unit 1; each group sums to 1 (0 with no such request).
struct LatencyShares {
  TtftParts ttft;  ///< shares, not seconds
  TpotParts tpot;  ///< shares, not seconds
  int64_t ttft_requests = 0;
  int64_t tpot_requests = 0;
};
/// The shares of `result` (result.parts parallel to result.requests; empty parts: no request counted).
LatencyShares latency_shares(const ServingResult& result);

/// What dominates TTFT or TPOT: the largest mean share (queueing and kv_wait together as queueing), the first
/// of equals in the order of the enum.
enum class LatencyLimit { queueing, compute, memory, communication, host, co_scheduled, restart, preemption };
struct LatencyBottleneck {
  LatencyLimit limit = LatencyLimit::queueing;
  double share = 0.0;  ///< its mean share, 1
};
LatencyBottleneck ttft_bottleneck(const TtftParts& shares);
LatencyBottleneck tpot_bottleneck(const TpotParts& shares);

}  // namespace clustersim::sim
