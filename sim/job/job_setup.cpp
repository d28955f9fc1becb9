#include "sim/job/job_setup.hpp"

#include <stdexcept>

#include "models/workload/transformer.hpp"
#include "sim/io/eviction_trace.hpp"
#include "sim/io/scenario.hpp"
#include "sim/job/job_simulation.hpp"
#include "sim/step/step_simulation.hpp"

namespace clustersim::sim {

static_assert(kMaxEvictionTraceEvents == kJobEventBudget,
              "the loader bounds eviction traces by the job simulation's event budget");

models::JobSpec job_spec_of(const Scenario& sc, const StepReport& step) {
  if (!sc.job) throw std::invalid_argument("job_spec_of: the scenario has no [job]");
  const JobConfig& j = *sc.job;
  models::JobSpec spec;
  spec.steps = j.steps;
  spec.step_time = step.step_time;
  spec.vms = sc.cluster.nodes;

  models::CheckpointPolicy& c = spec.checkpoint;
  if (j.checkpoint_every_steps) {
    c.kind = models::CheckpointPolicy::Kind::steps;
    c.every_steps = *j.checkpoint_every_steps;
  } else if (j.checkpoint_every) {
    c.kind = models::CheckpointPolicy::Kind::minutes;
    c.every = *j.checkpoint_every;
  } else {
    c.kind = models::CheckpointPolicy::Kind::automatic;
  }
  c.size = j.checkpoint_size ? *j.checkpoint_size
                             : models::checkpoint_bytes(models::parameter_count(sc.model));
  c.write_bandwidth = j.checkpoint_write;
  c.read_bandwidth = j.checkpoint_read;
  c.asynchronous = j.checkpoint_async;
  constexpr double kDeviceToHostBytesPerSecond = 25e9;
  c.async_stall = units::Seconds(c.size.value() / static_cast<double>(step.gpus) / kDeviceToHostBytesPerSecond);

  models::InterruptionModel& m = spec.interruptions;
  m.spot = j.spot;
  m.spot_eviction_rate_per_hour = j.spot_eviction_rate_per_hour;
  m.eviction_trace = j.eviction_trace;
  m.failure_rate_per_gpu_day = j.failure_rate_per_gpu_day;
  m.gpus_per_vm = step.gpus / sc.cluster.nodes;
  m.detection_time = j.detection;
  m.restart_time = j.restart;
  m.reprovision_failure = j.reprovision;
  m.reprovision_spot_mean = j.spot_reprovision_mean;

  spec.cost.vm_price_usd_per_hour = j.vm_price_usd_per_hour;
  spec.cost.spot_discount = j.spot_discount;
  spec.cost.storage_usd_per_gb_month = j.storage_usd_per_gb_month;
  spec.cost.egress_usd_per_gb = j.egress_usd_per_gb;

  // Cross-zone traffic per step.
  const auto& p = sc.parallelism;
  double bytes = 0.0;
  if (step.crosses_zones.pipeline) {
    const double activation = static_cast<double>(sc.training.micro_batch_size * sc.model.seq_length *
                                                  sc.model.hidden_size) *
                              models::activation_bytes_per_element(sc.training.precision);
    bytes += 2.0 * activation * static_cast<double>(step.microbatches * p.data * p.virtual_stages);
  }
  if (step.crosses_zones.data_parallel) {
    const double grad_bytes = models::grad_reduce_bytes_per_element(sc.training);  // as the step program
    const double params_per_gpu = models::parameter_count(sc.model) /
                                  static_cast<double>(p.tensor * p.pipeline);
    bytes += 2.0 * params_per_gpu * grad_bytes * static_cast<double>(p.tensor * p.pipeline);
  }
  spec.inter_zone_bytes_per_step = units::Bytes(bytes);
  return spec;
}

}  // namespace clustersim::sim
