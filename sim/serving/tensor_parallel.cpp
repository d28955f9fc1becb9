#include "sim/serving/tensor_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/network/collective_model.hpp"
#include "models/network/topology.hpp"

namespace clustersim::sim {

namespace {

/// `time` tabulated at 2^8 to 2^34 bytes and interpolated linearly in log(bytes) x log(time) between the points
/// (extrapolated along the last segment above, the first point's time below).
std::function<units::Seconds(units::Bytes)> tabulated(const std::function<units::Seconds(units::Bytes)>& time) {
  constexpr int kFirst = 8, kLast = 34;
  auto log_time = std::make_shared<std::vector<double>>();
  for (int e = kFirst; e <= kLast; ++e) log_time->push_back(std::log(time(units::Bytes(std::ldexp(1.0, e))).value()));
  return [log_time](units::Bytes bytes) {
    const double x = std::log2(std::max(bytes.value(), std::ldexp(1.0, kFirst))) - kFirst;
    const auto k = std::min<size_t>(static_cast<size_t>(x), log_time->size() - 2);
    const double f = x - static_cast<double>(k);
    const double lt = (*log_time)[k] + f * ((*log_time)[k + 1] - (*log_time)[k]);
    return units::Seconds(std::exp(lt));
  };
}

}  // namespace

models::AllReduceTime tensor_parallel_all_reduce(const models::VmSize& vm, const models::DeviceSpec& device,
                                                 int64_t tensor) {
  if (tensor < 1) throw std::invalid_argument("tensor_parallel_all_reduce: tensor must be >= 1");
  if (tensor == 1) return [](units::Bytes) { return units::Seconds(0.0); };
  const int64_t vms = (tensor + vm.devices_per_vm - 1) / vm.devices_per_vm;
  // The replica's VMs make one domain of their own (the rest of the rack runs other replicas).
  if (vms > vm.nvlink_domain_vms || tensor > vm.domain_gpus(vms, std::nullopt)) {
    throw std::invalid_argument("tensor_parallel_all_reduce: tensor " + std::to_string(tensor) +
                                " exceeds one NVLink domain of " + vm.name + " (" +
                                std::to_string(vm.domain_gpus(vm.nvlink_domain_vms, std::nullopt)) + " GPUs)");
  }
  models::TopologyConfig cfg;
  cfg.nodes = vms;
  cfg.fabric = models::FabricKind::single_switch;
  const models::Topology topology = models::build_topology(vm, device, cfg);
  const models::CollectiveModel collectives(topology, models::CollectiveConstants::for_vm(vm), std::nullopt);
  models::CommPattern group;
  std::vector<int64_t> ranks(static_cast<size_t>(tensor));
  std::iota(ranks.begin(), ranks.end(), 0);
  group.groups.push_back(ranks);
  return tabulated([&](units::Bytes bytes) {
    return collectives.collective_time(models::CollectiveOp::all_reduce, group, bytes).time;
  });
}

std::function<units::Seconds(units::Bytes)> pipeline_stage_send(const models::VmSize& vm,
                                                                const models::DeviceSpec& device, int64_t tensor,
                                                                int64_t stages) {
  if (tensor < 1 || stages < 2) {
    throw std::invalid_argument("pipeline_stage_send: tensor must be >= 1 and stages >= 2");
  }
  const int64_t gpus = tensor * stages;
  if (gpus > vm.devices_per_vm && vm.devices_per_vm % tensor != 0) {
    throw std::invalid_argument("pipeline_stage_send: a tensor-parallel group of " + std::to_string(tensor) +
                                " would straddle two " + vm.name + " VMs");
  }
  models::TopologyConfig cfg;
  cfg.nodes = (gpus + vm.devices_per_vm - 1) / vm.devices_per_vm;
  cfg.fabric = models::FabricKind::single_switch;
  const models::Topology topology = models::build_topology(vm, device, cfg);
  const models::CollectiveModel collectives(topology, models::CollectiveConstants::for_vm(vm), std::nullopt);
  // Boundary b: rank i of stage b sends to rank i of stage b + 1, all t pairs at once (each TP rank holds the
  // whole activation after the stage's last all-reduce, vLLM's send of its intermediate tensors).
  std::vector<models::CommPattern> boundaries(static_cast<size_t>(stages - 1));
  for (int64_t b = 0; b + 1 < stages; ++b) {
    for (int64_t i = 0; i < tensor; ++i) {
      boundaries[static_cast<size_t>(b)].groups.push_back(
          {static_cast<int>(b * tensor + i), static_cast<int>((b + 1) * tensor + i)});
    }
  }
  return tabulated([&](units::Bytes bytes) {
    units::Seconds total(0.0);
    for (const models::CommPattern& p : boundaries) {
      total += collectives.collective_time(models::CollectiveOp::send_recv, p, bytes).time;
    }
    return total;
  });
}

}  // namespace clustersim::sim
