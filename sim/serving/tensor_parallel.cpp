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

models::AllReduceTime tensor_parallel_all_reduce(const models::VmSize& vm, const models::DeviceSpec& device,
                                                 int64_t tensor) {
  if (tensor < 1) throw std::invalid_argument("tensor_parallel_all_reduce: tensor must be >= 1");
  if (tensor == 1) return [](units::Bytes) { return units::Seconds(0.0); };
  const int64_t vms = (tensor + vm.devices_per_vm - 1) / vm.devices_per_vm;
  if (vms > vm.nvlink_domain_vms || tensor > vm.domain_gpus(vms)) {
    throw std::invalid_argument("tensor_parallel_all_reduce: tensor " + std::to_string(tensor) +
                                " exceeds one NVLink domain of " + vm.name + " (" +
                                std::to_string(vm.domain_gpus(vm.nvlink_domain_vms)) + " GPUs)");
  }
  models::TopologyConfig cfg;
  cfg.nodes = vms;
  cfg.fabric = models::FabricKind::single_switch;
  const models::Topology topology = models::build_topology(vm, device, cfg);
  const models::CollectiveModel collectives(topology, models::CollectiveConstants::for_vm(vm), std::nullopt);
  models::CommPattern group;
  group.groups.emplace_back(static_cast<size_t>(tensor));
  std::iota(group.groups.front().begin(), group.groups.front().end(), 0);
  // log2(bytes) from 8 to 34: the table of log(time).
  constexpr int kFirst = 8, kLast = 34;
  auto log_time = std::make_shared<std::vector<double>>();
  for (int e = kFirst; e <= kLast; ++e) {
    const units::Bytes bytes(std::ldexp(1.0, e));
    log_time->push_back(std::log(collectives.collective_time(models::CollectiveOp::all_reduce, group, bytes).time.value()));
  }
  return [log_time](units::Bytes bytes) {
    const double x = std::log2(std::max(bytes.value(), std::ldexp(1.0, kFirst))) - kFirst;
    const auto k = std::min<size_t>(static_cast<size_t>(x), log_time->size() - 2);
    const double f = x - static_cast<double>(k);
    const double lt = (*log_time)[k] + f * ((*log_time)[k + 1] - (*log_time)[k]);
    return units::Seconds(std::exp(lt));
  };
}

}  // namespace clustersim::sim
