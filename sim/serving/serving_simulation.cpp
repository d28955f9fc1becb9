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
  for (size_t i = 0; i < requests.size(); ++i) {
    const ServingRequest& q = requests[i];
    require(q.prompt_tokens >= 1 && q.output_tokens >= 1, "request " + std::to_string(i) +
                                                              ": prompt and output must be >= 1 token");
    require(std::isfinite(q.arrival_s) && q.arrival_s >= 0, "request " + std::to_string(i) + ": bad arrival time");
    require(setup.concurrency > 0 || i == 0 || q.arrival_s >= requests[i - 1].arrival_s,
            "arrival times must be ascending");
  }
  ServingResult result;
  result.requests.resize(requests.size());
  serving_engine::Fleet fleet(setup, requests, result);
  fleet.run();
  return result;
}

}  // namespace clustersim::sim
