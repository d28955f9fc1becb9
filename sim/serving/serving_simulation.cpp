#include "sim/serving/serving_simulation.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/serving/fleet.hpp"

namespace clustersim::sim {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("simulate_serving: " + what);
}

}  // namespace

ServingResult simulate_serving(const ServingSetup& setup, const std::vector<ServingRequest>& requests) {
  require(setup.model != nullptr, "no inference model");
  require(setup.replicas >= 1, "replicas must be >= 1");
  const EnginePolicy& p = setup.policy;
  require(p.max_num_seqs >= 1 && p.max_num_batched_tokens >= 1 && p.block_size >= 1 && p.scheduler_steps >= 1,
          "max_num_seqs, max_num_batched_tokens, block_size and scheduler_steps must be >= 1");
  require(setup.kv_cache_tokens >= p.block_size, "the KV cache holds less than one block");
  require(setup.speculative == nullptr || p.scheduler_steps == 1,
          "speculative decoding does not run with multi-step scheduling (scheduler_steps > 1)");
  require(setup.sample_interval_s > 0, "the sample interval must be positive");
  require(setup.max_model_len >= 0, "max_model_len must be >= 0");
  require(setup.concurrency >= 0, "concurrency must be >= 0");
  require(setup.provisioning_s >= 0 && std::isfinite(setup.provisioning_s), "the provisioning time must be >= 0");
  require(setup.iteration_log.every >= 1 && setup.iteration_log.max_records >= 0 &&
              !(setup.iteration_log.to_s < setup.iteration_log.from_s),
          "the iteration log needs every >= 1, max_records >= 0 and from_s <= to_s");
  if (setup.autoscaling) {
    const ServingAutoscaling& a = *setup.autoscaling;
    require(a.min_replicas >= 1 && a.min_replicas <= setup.replicas && setup.replicas <= a.max_replicas,
            "autoscaling needs 1 <= min_replicas <= replicas <= max_replicas");
    require(a.target_outstanding_per_replica > 0 && a.interval_s > 0 && a.scale_down_window_s >= 0,
            "autoscaling needs a positive target and interval and a non-negative window");
  }
  const SpotReplicas& spot = setup.spot;
  require(spot.replicas >= 0 && spot.replicas <= setup.replicas, "spot replicas must be in [0, replicas]");
  require(spot.replicas == 0 || !setup.autoscaling, "spot replicas with autoscaling are not modelled");
  require(spot.replicas_per_vm >= 1 && spot.vms_per_replica >= 1, "spot grouping must be >= 1");
  require(spot.eviction_rate_per_hour >= 0 && spot.reprovision_mean_s >= 0 && spot.notice_s >= 0,
          "spot rates and times must be >= 0");
  const int64_t slots = setup.autoscaling ? setup.autoscaling->max_replicas : setup.replicas;
  require(setup.zones.zones >= 1 && setup.zones.zones <= slots, "zones must be in [1, replica slots]");
  require(!setup.zones.outage_start_s || (*setup.zones.outage_start_s >= 0 && setup.zones.outage_duration_s > 0),
          "a zone outage needs a start >= 0 and a positive duration");
  if (setup.decode_pool) {
    const DecodePool& d = *setup.decode_pool;
    const KvTransferNetwork& n = d.network;
    require(d.model != nullptr && d.replicas >= 1, "the decode pool needs a model and >= 1 replica");
    require(d.policy.max_num_seqs >= 1 && d.policy.max_num_batched_tokens >= 1 && d.policy.scheduler_steps >= 1 &&
                d.policy.block_size == p.block_size,
            "the decode pool's limits must be >= 1 and its block size the prefill pool's");
    require(d.kv_cache_tokens >= p.block_size, "the decode pool's KV cache holds less than one block");
    require(!setup.autoscaling && spot.replicas == 0 && !setup.zones.outage_start_s,
            "split pools with autoscaling, spot replicas or a zone outage are not modelled");
    require(n.prefill_nic_bytes_per_s > 0 && n.decode_nic_bytes_per_s > 0 && n.kv_bytes_per_token > 0 &&
                n.infiniband_latency_s >= 0 && n.nvlink_latency_s >= 0,
            "the KV transfer needs positive NIC rates and KV bytes per token, and latencies >= 0");
    require(n.domain.empty() || (static_cast<int64_t>(n.domain.size()) == setup.replicas + d.replicas &&
                                 n.prefill_nvlink_bytes_per_s > 0 && n.decode_nvlink_bytes_per_s > 0),
            "NVLink domains need one per replica slot and positive NVLink rates");
  }
  // Each request's message is built only when its check fails (issue 31: five strings per request were built).
  for (size_t i = 0; i < requests.size(); ++i) {
    const ServingRequest& q = requests[i];
    const auto check = [i](bool ok, const char* what) {
      if (!ok) require(false, "request " + std::to_string(i) + ": " + what);
    };
    check(q.prompt_tokens >= 1 && q.output_tokens >= 1, "prompt and output must be >= 1 token");
    check(std::isfinite(q.arrival_s) && q.arrival_s >= 0, "bad arrival time");
    if (!(setup.concurrency > 0 || i == 0 || q.arrival_s >= requests[i - 1].arrival_s)) {
      require(false, "arrival times must be ascending");
    }
    check(q.prefix_tokens >= 0 && q.prefix_tokens <= q.prompt_tokens,
          "the shared prefix must be 0 to prompt tokens long");
    check(q.previous < static_cast<int64_t>(i) && (q.previous < 0 || setup.concurrency == 0),
          "a session's previous turn must come earlier in the list (open loop)");
    check(std::isfinite(q.think_s) && q.think_s >= 0, "bad think time");
  }
  ServingResult result;
  result.requests.resize(requests.size());
  serving_engine::Fleet fleet(setup, requests, result);
  fleet.run();
  return result;
}

}  // namespace clustersim::sim
