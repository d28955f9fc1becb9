#include "sim/run/split_pools.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "models/network/topology.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/format.hpp"
#include "sim/serving/tensor_parallel.hpp"

namespace clustersim::sim {

KvTransferNetwork kv_transfer_network(const ServingFleetConfig& f, const models::VmSize& prefill_vm,
                                      const models::VmSize& decode_vm, const models::DeviceSpec& prefill_device,
                                      const models::DeviceSpec& decode_device, double kv_bytes_per_token) {
  KvTransferNetwork n;
  const auto nic = [](const models::VmSize& vm, int64_t gpus) {
    return static_cast<double>(vm.infiniband_ports) * vm.infiniband_port_rate.value() / 8.0 *
           static_cast<double>(gpus) / static_cast<double>(vm.devices_per_vm);
  };
  n.prefill_nic_bytes_per_s = nic(prefill_vm, f.prefill_tensor);
  n.decode_nic_bytes_per_s = nic(decode_vm, f.tensor);
  n.prefill_nvlink_bytes_per_s =
      prefill_device.fabric_bandwidth_per_direction.value() * static_cast<double>(f.prefill_tensor);
  n.decode_nvlink_bytes_per_s = decode_device.fabric_bandwidth_per_direction.value() * static_cast<double>(f.tensor);
  n.infiniband_latency_s = 2.0 * (models::kPcieHopLatency.value() + models::kInfinibandHopLatency.value());
  n.nvlink_latency_s = 2.0 * models::kNvlinkHopLatency.value();
  n.kv_bytes_per_token = kv_bytes_per_token;
  // NVLink domains of more than one VM (a GB200 NVL72 rack): the pools' replicas packed on VMs in order.
  if (prefill_vm.name == decode_vm.name && decode_vm.nvlink_domain_vms > 1 && n.prefill_nvlink_bytes_per_s > 0 &&
      n.decode_nvlink_bytes_per_s > 0) {
    const int64_t g = decode_vm.devices_per_vm, per_domain = decode_vm.nvlink_domain_vms;
    const int64_t prefill_vms = (f.prefill_replicas * f.prefill_tensor + g - 1) / g;
    for (int64_t r = 0; r < f.prefill_replicas; ++r) n.domain.push_back(r * f.prefill_tensor / g / per_domain);
    for (int64_t r = 0; r < f.replicas; ++r) n.domain.push_back((prefill_vms + r * f.tensor / g) / per_domain);
  }
  return n;
}

int64_t configure_split_pools(ServingSetup& setup, const ServingScenario& sc, const models::Catalog& catalog,
                              const models::EngineOverhead& overhead) {
  const ServingFleetConfig& f = sc.serving;
  const models::VmSize& vm = catalog.vm_size(f.prefill_vm_size);
  const models::DeviceSpec& device = catalog.device(vm.device);
  const models::VmSize& decode_vm = catalog.vm_size(f.vm_size);
  const models::EngineProfile& engine = models::engine_profile(f.engine);
  auto model = std::make_shared<const models::InferenceModel>(
      sc.model, models::serving_numerics(f.precision, f.kv_cache_fp8), f.prefill_tensor, device, vm.device_share,
      tensor_parallel_all_reduce(vm, device, f.prefill_tensor), overhead, models::PipelineStages{}, engine.kernels);
  DecodePool d;
  d.model = setup.model;
  d.policy = setup.policy;
  d.kv_cache_tokens = setup.kv_cache_tokens;
  d.replicas = setup.replicas;
  d.network = kv_transfer_network(f, vm, decode_vm, device, catalog.device(decode_vm.device),
                                  model->kv_bytes_per_token_per_gpu().value() * static_cast<double>(f.prefill_tensor));
  setup.decode_pool = std::move(d);
  setup.policy.max_num_seqs = f.prefill_max_num_seqs;
  setup.policy.max_num_batched_tokens = f.prefill_max_num_batched_tokens;
  const int64_t kv = model->kv_cache_tokens(models::kv_cache_budget(
      f.engine, f.gpu_memory_utilization, f.prefill_max_num_batched_tokens, f.prefill_max_num_seqs, f.block_size));
  setup.kv_cache_tokens = kv / f.block_size * f.block_size;
  setup.replicas = f.prefill_replicas;
  setup.model = std::move(model);
  return kv;
}

SplitPoolsSummary summarize_split_pools(const ServingResult& result, const ServingFleetConfig& f,
                                        const models::VmSize& prefill_vm, ServingSummary& summary) {
  SplitPoolsSummary s;
  std::vector<double> transfers;
  double share = 0.0;
  for (size_t i = 0; i < result.requests.size(); ++i) {
    const RequestOutcome& o = result.requests[i];
    const double t = result.kv_transfer_s[i];
    if (o.rejected || std::isnan(o.finish_s) || std::isnan(t)) continue;
    transfers.push_back(t);
    share += o.ttft_s() > 0 ? t / o.ttft_s() : 0.0;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (transfers.empty()) {
    s.transfer_mean_s = s.transfer_p50_s = s.transfer_p99_s = s.transfer_ttft_share = nan;
  } else {
    double sum = 0.0;
    for (const double t : transfers) sum += t;
    s.transfer_mean_s = sum / static_cast<double>(transfers.size());
    s.transfer_ttft_share = share / static_cast<double>(transfers.size());
    s.transfer_p50_s = percentile(transfers, 50.0);
    s.transfer_p99_s = percentile(std::move(transfers), 99.0);
  }
  s.held_transfers = result.held_transfers;
  const double span = summary.makespan_s > 0 ? summary.makespan_s : nan;
  s.prefill_utilization = (result.busy_s - result.decode_busy_s) / (static_cast<double>(f.prefill_replicas) * span);
  s.decode_utilization = result.decode_busy_s / (static_cast<double>(f.replicas) * span);
  // The prefill pool's bill: whole VMs for the makespan, as a fixed co-located fleet's (serving_summary.cpp).
  const int64_t gpus = f.prefill_replicas * f.prefill_tensor;
  s.prefill_vms = (gpus + prefill_vm.devices_per_vm - 1) / prefill_vm.devices_per_vm;
  const double hours = summary.makespan_s / 3600.0;
  const double usd = f.prefill_vm_price_usd_per_hour ? static_cast<double>(s.prefill_vms) * hours *
                                                           *f.prefill_vm_price_usd_per_hour
                                                     : nan;
  // The tokens the co-located formulas divided by, recovered from the decode pool's figures.
  const double output_tokens = summary.output_tokens_per_s * summary.makespan_s;
  const double all_tokens = (summary.output_tokens_per_s + summary.input_tokens_per_s) * summary.makespan_s;
  summary.gpu_hours += static_cast<double>(gpus) * hours;
  summary.vm_hours += static_cast<double>(s.prefill_vms) * hours;
  summary.replica_hours += static_cast<double>(f.prefill_replicas) * hours;
  summary.mean_replicas += static_cast<double>(f.prefill_replicas);
  summary.usd += usd;
  summary.usd_per_million_output_tokens = output_tokens > 0 ? summary.usd / output_tokens * 1e6 : nan;
  summary.usd_per_million_tokens = all_tokens > 0 ? summary.usd / all_tokens * 1e6 : nan;
  summary.utilization = result.busy_s / (static_cast<double>(f.prefill_replicas + f.replicas) * span);
  return s;
}

namespace {

SummaryColumn real(std::string name, std::string units, std::string description, double v) {
  return {std::move(name), std::move(units), std::move(description), std::vector<double>{v}};
}
SummaryColumn integer(std::string name, std::string units, std::string description, int64_t v) {
  return {std::move(name), std::move(units), std::move(description), std::vector<int64_t>{v}};
}

}  // namespace

std::vector<SummaryColumn> split_pools_columns(const ServingFleetConfig& f, const SplitPoolsSummary& s) {
  std::vector<SummaryColumn> c;
  c.push_back(integer("prefill_replicas", "1", "split pools: prefill-only replicas (replicas: the decode pool's)",
                      f.prefill_replicas));
  c.push_back({"prefill_vm_size", "", "split pools: VM size of the prefill replicas",
               std::vector<std::string>{f.prefill_vm_size}});
  c.push_back(integer("prefill_tensor_parallel", "1", "split pools: tensor-parallel GPUs per prefill replica",
                      f.prefill_tensor));
  c.push_back(integer("prefill_vms", "1", "split pools: VMs the prefill replicas occupy", s.prefill_vms));
  c.push_back(integer("prefill_kv_cache_tokens", "tokens", "split pools: KV-cache capacity of one prefill replica",
                      s.prefill_kv_cache_tokens));
  c.push_back(real("kv_transfer_mean_s", "s",
                   "split pools: mean over completed requests of the KV cache's transfer (blocks reserved to landed)",
                   s.transfer_mean_s));
  c.push_back(real("kv_transfer_p50_s", "s", "split pools: median KV transfer", s.transfer_p50_s));
  c.push_back(real("kv_transfer_p99_s", "s", "split pools: 99th percentile KV transfer", s.transfer_p99_s));
  c.push_back(real("kv_transfer_ttft_share", "1", "split pools: mean over completed requests of transfer / TTFT",
                   s.transfer_ttft_share));
  c.push_back(real("prefill_utilization", "1", "split pools: prefill replicas' time in iterations / (replicas x makespan)",
                   s.prefill_utilization));
  c.push_back(real("decode_utilization", "1", "split pools: decode replicas' time in iterations / (replicas x makespan)",
                   s.decode_utilization));
  c.push_back(integer("held_transfers", "1", "split pools: transfers that waited for a decode replica's free KV blocks",
                      s.held_transfers));
  return c;
}

std::string split_pools_lines(const ServingFleetConfig& f, const SplitPoolsSummary& s) {
  return printf_string("split pools %s x TP %lld on %lld x %s prefill, %s x TP %lld decode; prefill %.0f %% busy, "
                       "decode %.0f %% busy\n",
                       counted(f.prefill_replicas, "replica").c_str(), static_cast<long long>(f.prefill_tensor),
                       static_cast<long long>(s.prefill_vms), f.prefill_vm_size.c_str(),
                       counted(f.replicas, "replica").c_str(), static_cast<long long>(f.tensor),
                       100.0 * s.prefill_utilization, 100.0 * s.decode_utilization) +
         printf_string("KV transfer mean %.2f ms   p50 %.2f ms   p99 %.2f ms, %.1f %% of TTFT on average; %lld "
                       "held for decode KV blocks\n",
                       s.transfer_mean_s * 1e3, s.transfer_p50_s * 1e3, s.transfer_p99_s * 1e3,
                       100.0 * s.transfer_ttft_share, static_cast<long long>(s.held_transfers));
}

}  // namespace clustersim::sim
