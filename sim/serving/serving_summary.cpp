#include "sim/serving/serving_summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double h = static_cast<double>(values.size() - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double serving_metric(const ServingSummary& s, std::string_view metric, int64_t gpus) {
  if (metric == "output_tokens_per_s") return s.output_tokens_per_s;
  if (metric == "output_tokens_per_s_per_gpu") return s.output_tokens_per_s / static_cast<double>(gpus);
  if (metric == "requests_per_s") return s.requests_per_s;
  if (metric == "ttft_mean_ms") return s.ttft_mean_s * 1e3;
  if (metric == "ttft_p50_ms") return s.ttft_p50_s * 1e3;
  if (metric == "ttft_p99_ms") return s.ttft_p99_s * 1e3;
  if (metric == "tpot_mean_ms") return s.tpot_mean_s * 1e3;
  if (metric == "tpot_p50_ms") return s.tpot_p50_s * 1e3;
  if (metric == "e2e_mean_s") return s.e2e_mean_s;
  if (metric == "e2e_p50_s") return s.e2e_p50_s;
  if (metric == "e2e_p99_s") return s.e2e_p99_s;
  throw std::invalid_argument("serving_metric: unknown metric '" + std::string(metric) + "'");
}

ServingSummary summarize_serving(const ServingResult& result, const LatencyTargets& targets, int64_t replicas,
                                 int64_t gpus_per_replica, int64_t gpus_per_vm,
                                 std::optional<double> price_usd_per_vm_hour, double spot_discount) {
  ServingSummary s;
  std::vector<double> ttft, tpot, e2e;
  double output_tokens = 0, input_tokens = 0;
  int64_t good = 0;
  double e2e_per_token = 0;  // sum over completed requests of e2e / N
  for (const RequestOutcome& o : result.requests) {
    ++s.requests;
    s.preemptions += o.preemptions;
    if (o.evictions > 0) ++s.restarted_requests;
    if (o.rejected) {
      ++s.rejected;
      continue;
    }
    if (!std::isfinite(o.finish_s)) {  // never served: no replica came back before the simulation ended
      ++s.unserved;
      continue;
    }
    ++s.completed;
    ttft.push_back(o.ttft_s());
    e2e.push_back(o.e2e_s());
    if (o.output_tokens > 1) tpot.push_back(o.tpot_s());
    e2e_per_token += o.e2e_s() / static_cast<double>(o.output_tokens);
    output_tokens += static_cast<double>(o.output_tokens);
    input_tokens += static_cast<double>(o.prompt_tokens);
    const bool meets = (!targets.ttft_s || o.ttft_s() <= *targets.ttft_s) &&
                       (!targets.tpot_s || o.output_tokens <= 1 || o.tpot_s() <= *targets.tpot_s);
    if (meets) ++good;
  }
  for (double x : ttft) s.ttft_mean_s += x / static_cast<double>(ttft.size());
  for (double x : tpot) s.tpot_mean_s += x / static_cast<double>(tpot.size());
  for (double x : e2e) s.e2e_mean_s += x / static_cast<double>(e2e.size());
  s.ttft_p50_s = percentile(ttft, 50);
  s.ttft_p90_s = percentile(ttft, 90);
  s.ttft_p99_s = percentile(ttft, 99);
  s.tpot_p50_s = percentile(tpot, 50);
  s.tpot_p90_s = percentile(tpot, 90);
  s.tpot_p99_s = percentile(tpot, 99);
  s.e2e_p50_s = percentile(e2e, 50);
  s.e2e_p90_s = percentile(e2e, 90);
  s.e2e_p99_s = percentile(e2e, 99);
  s.makespan_s = result.makespan_s;
  const double span = s.makespan_s > 0 ? s.makespan_s : std::numeric_limits<double>::quiet_NaN();
  s.requests_per_s = static_cast<double>(s.completed) / span;
  s.output_tokens_per_s = output_tokens / span;
  s.input_tokens_per_s = input_tokens / span;
  s.goodput_requests_per_s = static_cast<double>(good) / span;
  s.slo_attainment = s.requests > 0 ? static_cast<double>(good) / static_cast<double>(s.requests) : 0.0;
  for (const ServingSample& x : result.samples) {
    s.mean_kv_occupancy += x.kv_occupancy / static_cast<double>(result.samples.size());
    s.peak_kv_occupancy = std::max(s.peak_kv_occupancy, x.kv_occupancy);
    s.peak_waiting = std::max(s.peak_waiting, x.waiting);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.evictions = result.evictions;
  s.latency = latency_shares(result);
  s.kv_limited_iterations = result.kv_limited_iterations;
  for (const ServingSample& x : result.samples) {
    s.running_mean += static_cast<double>(x.running) / static_cast<double>(result.samples.size());
  }
  const BatchStats& b = result.inside.batches;
  const auto iterations = static_cast<double>(b.sequences.count());
  s.sequences_per_iteration_mean = b.sequences.mean();
  s.sequences_per_iteration_p50 = b.sequences.percentile(50);
  s.sequences_per_iteration_p99 = b.sequences.percentile(99);
  s.prefill_tokens_per_iteration_mean = iterations > 0 ? static_cast<double>(b.prefill_tokens) / iterations : nan;
  s.decode_tokens_per_iteration_mean = iterations > 0 ? static_cast<double>(b.decode_tokens) / iterations : nan;
  const int64_t tokens = b.prefill_tokens + b.decode_tokens;
  s.prefill_token_share = tokens > 0 ? static_cast<double>(b.prefill_tokens) / static_cast<double>(tokens) : nan;
  const GapHistogram& tbt = result.inside.tbt;
  s.tbt_mean_s = tbt.mean_s();
  s.tbt_p50_s = tbt.percentile_s(50);
  s.tbt_p90_s = tbt.percentile_s(90);
  s.tbt_p99_s = tbt.percentile_s(99);
  s.e2e_per_output_token_mean_s = s.completed > 0 ? e2e_per_token / static_cast<double>(s.completed) : nan;
  const double share = static_cast<double>(gpus_per_replica) / static_cast<double>(gpus_per_vm);
  if (result.usage.empty()) {
    const int64_t gpus = replicas * gpus_per_replica;
    const int64_t vms = (gpus + gpus_per_vm - 1) / gpus_per_vm;
    s.replica_hours = static_cast<double>(replicas) * s.makespan_s / 3600.0;
    s.gpu_hours = static_cast<double>(gpus) * s.makespan_s / 3600.0;
    s.vm_hours = static_cast<double>(vms) * s.makespan_s / 3600.0;
    s.usd = price_usd_per_vm_hour ? s.vm_hours * *price_usd_per_vm_hour : nan;
  } else {
    double paid_vm_hours = 0.0;  // spot hours at their discount
    for (const ReplicaUsage& u : result.usage) {
      const double hours = u.billed_s / 3600.0;
      s.replica_hours += hours;
      s.vm_hours += hours * share;
      paid_vm_hours += hours * share * (u.spot ? 1.0 - spot_discount : 1.0);
    }
    s.gpu_hours = s.replica_hours * static_cast<double>(gpus_per_replica);
    s.usd = price_usd_per_vm_hour ? paid_vm_hours * *price_usd_per_vm_hour : nan;
  }
  s.mean_replicas = s.makespan_s > 0 ? s.replica_hours * 3600.0 / s.makespan_s : 0.0;
  s.usd_per_million_output_tokens = output_tokens > 0 ? s.usd / output_tokens * 1e6 : nan;
  s.usd_per_million_tokens = output_tokens + input_tokens > 0 ? s.usd / (output_tokens + input_tokens) * 1e6 : nan;
  s.utilization = result.usage.empty() ? result.busy_s / (static_cast<double>(replicas) * span)
                                       : result.busy_s / (s.replica_hours * 3600.0);
  return s;
}

}  // namespace clustersim::sim
