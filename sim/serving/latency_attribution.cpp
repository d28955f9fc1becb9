#include "sim/serving/latency_attribution.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace clustersim::sim {
namespace {

/// A remainder within 1e-9 of the whole is rounding, not time: 0 (so that a run with no queueing or preemption
/// says exactly 0, on any compiler).
double remainder_of(double whole, double explained) {
  const double r = whole - explained;
  return std::abs(r) <= 1e-9 * std::abs(whole) ? 0.0 : r;
}

/// Keys read in the calibration of decode attention (large, for a precise slope).
constexpr int64_t kCalibrationKeys = int64_t{1} << 20;

models::IterationBatch one_decode(int64_t keys) {
  models::IterationBatch b;
  b.decode_sequences = 1;
  b.decode_kv_tokens = keys;
  b.sampled_sequences = 1;
  return b;
}

}  // namespace

IterationResources::IterationResources(const models::InferenceModel& model) {
  const models::IterationTime small = model.iteration_time(one_decode(0));
  const models::IterationTime large = model.iteration_time(one_decode(kCalibrationKeys));
  gemm_floor_s_ = small.gemm.value();
  // Decode attention reads (keys + sequences) tokens' K and V: small reads 1, large kCalibrationKeys + 1.
  decode_attention_per_key_s_ =
      (large.attention.value() - small.attention.value()) / static_cast<double>(kCalibrationKeys);
  decode_attention_base_s_ = small.attention.value() - decode_attention_per_key_s_;
}

ResourceSplit IterationResources::split(const models::IterationBatch& b, const models::IterationTime& t) const {
  ResourceSplit r;
  const double gemm = t.gemm.value(), attention = t.attention.value();
  const double gemm_memory = std::min(gemm, gemm_floor_s_);
  double decode_attention = 0.0;
  if (b.decode_sequences > 0) {
    decode_attention =
        b.prefill_tokens > 0
            ? std::clamp(decode_attention_base_s_ +
                             decode_attention_per_key_s_ *
                                 static_cast<double>(b.decode_kv_tokens + b.decode_sequences * b.decode_queries),
                         0.0, attention)
            : attention;
  }
  r.compute_s = (gemm - gemm_memory) + (attention - decode_attention);
  r.memory_s = gemm_memory + decode_attention + t.memory_bound.value();
  r.communication_s = t.communication.value();
  r.host_s = t.overhead.value() + t.collective_launch.value();
  return r;
}

TtftParts ttft_parts(const RequestOutcome& o, const LatencyParts& p) {
  TtftParts t;
  t.kv_wait_s = p.kv_wait_s;
  t.compute_s = p.prefill_compute_s;
  t.memory_s = p.prefill_memory_s;
  t.communication_s = p.prefill_communication_s;
  t.host_s = p.prefill_host_s;
  t.co_scheduled_s = p.prefill_co_scheduled_s;
  t.restart_s = p.prefill_restart_s;
  const double explained =
      t.kv_wait_s + t.compute_s + t.memory_s + t.communication_s + t.host_s + t.co_scheduled_s + t.restart_s;
  t.queueing_s = remainder_of(o.ttft_s(), explained);
  return t;
}

TpotParts tpot_parts(const RequestOutcome& o, const LatencyParts& p) {
  TpotParts t;
  const double n = static_cast<double>(std::max<int64_t>(o.output_tokens - 1, 1));
  t.compute_s = p.decode_compute_s / n;
  t.memory_s = p.decode_memory_s / n;
  t.communication_s = p.decode_communication_s / n;
  t.host_s = p.decode_host_s / n;
  t.prefill_stall_s = p.decode_prefill_stall_s / n;
  t.preemption_s =
      remainder_of(o.tpot_s(), t.compute_s + t.memory_s + t.communication_s + t.host_s + t.prefill_stall_s);
  return t;
}

LatencyShares latency_shares(const ServingResult& result) {
  LatencyShares s;
  if (result.parts.size() != result.requests.size()) return s;
  for (size_t i = 0; i < result.requests.size(); ++i) {
    const RequestOutcome& o = result.requests[i];
    if (o.rejected || !std::isfinite(o.finish_s)) continue;
    const double ttft = o.ttft_s();
    if (ttft > 0) {
      const TtftParts p = ttft_parts(o, result.parts[i]);
      ++s.ttft_requests;
      s.ttft.queueing_s += p.queueing_s / ttft;
      s.ttft.kv_wait_s += p.kv_wait_s / ttft;
      s.ttft.compute_s += p.compute_s / ttft;
      s.ttft.memory_s += p.memory_s / ttft;
      s.ttft.communication_s += p.communication_s / ttft;
      s.ttft.host_s += p.host_s / ttft;
      s.ttft.co_scheduled_s += p.co_scheduled_s / ttft;
      s.ttft.restart_s += p.restart_s / ttft;
    }
    const double tpot = o.tpot_s();
    if (o.output_tokens > 1 && tpot > 0) {
      const TpotParts p = tpot_parts(o, result.parts[i]);
      ++s.tpot_requests;
      s.tpot.compute_s += p.compute_s / tpot;
      s.tpot.memory_s += p.memory_s / tpot;
      s.tpot.communication_s += p.communication_s / tpot;
      s.tpot.host_s += p.host_s / tpot;
      s.tpot.prefill_stall_s += p.prefill_stall_s / tpot;
      s.tpot.preemption_s += p.preemption_s / tpot;
    }
  }
  if (s.ttft_requests > 0) {
    const double n = static_cast<double>(s.ttft_requests);
    for (double* x : {&s.ttft.queueing_s, &s.ttft.kv_wait_s, &s.ttft.compute_s, &s.ttft.memory_s,
                      &s.ttft.communication_s, &s.ttft.host_s, &s.ttft.co_scheduled_s, &s.ttft.restart_s}) {
      *x /= n;
    }
  }
  if (s.tpot_requests > 0) {
    const double n = static_cast<double>(s.tpot_requests);
    for (double* x : {&s.tpot.compute_s, &s.tpot.memory_s, &s.tpot.communication_s, &s.tpot.host_s,
                      &s.tpot.prefill_stall_s, &s.tpot.preemption_s}) {
      *x /= n;
    }
  }
  return s;
}

namespace {
LatencyBottleneck largest(std::initializer_list<std::pair<LatencyLimit, double>> parts) {
  LatencyBottleneck b{parts.begin()->first, parts.begin()->second};
  for (const auto& [limit, share] : parts) {
    if (share > b.share) b = {limit, share};
  }
  return b;
}
}  // namespace

LatencyBottleneck ttft_bottleneck(const TtftParts& s) {
  return largest({{LatencyLimit::queueing, s.queueing_s + s.kv_wait_s},
                  {LatencyLimit::compute, s.compute_s},
                  {LatencyLimit::memory, s.memory_s},
                  {LatencyLimit::communication, s.communication_s},
                  {LatencyLimit::host, s.host_s},
                  {LatencyLimit::co_scheduled, s.co_scheduled_s},
                  {LatencyLimit::restart, s.restart_s}});
}

LatencyBottleneck tpot_bottleneck(const TpotParts& s) {
  return largest({{LatencyLimit::compute, s.compute_s},
                  {LatencyLimit::memory, s.memory_s},
                  {LatencyLimit::communication, s.communication_s},
                  {LatencyLimit::host, s.host_s},
                  {LatencyLimit::co_scheduled, s.prefill_stall_s},
                  {LatencyLimit::preemption, s.preemption_s}});
}

}  // namespace clustersim::sim
