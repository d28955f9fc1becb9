#include "models/network/alpha_beta.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::models {

AlphaBetaNetwork::AlphaBetaNetwork(const VmSize& vm, const DeviceSpec& device) {
  fabric_ = device.fabric_bandwidth_per_direction * kFabricEfficiency;
  const units::BitsPerSecond line =
      vm.infiniband_ports > 0 ? vm.infiniband_port_rate * static_cast<double>(vm.infiniband_ports)
                              : vm.ethernet_bandwidth;
  network_ = units::to_bytes_per_second(line) * kNetworkEfficiency;
  if (network_.value() <= 0.0 && fabric_.value() <= 0.0) {
    throw std::invalid_argument("AlphaBetaNetwork: VM size '" + vm.name + "' has no device fabric and no network");
  }
}

units::Seconds AlphaBetaNetwork::collective_time(Collective op, const CommGroup& g, units::Bytes bytes) const {
  if (g.size <= 1) return units::Seconds(0.0);
  if (g.ranks_per_node < 1 || g.groups_per_node < 1 || g.size % g.ranks_per_node != 0) {
    throw std::invalid_argument("AlphaBetaNetwork: inconsistent communication group");
  }
  const bool spans_nodes = g.ranks_per_node < g.size;
  units::BytesPerSecond bandwidth = fabric_;
  units::Seconds alpha = kFabricAlpha;
  if (spans_nodes) {
    const units::BytesPerSecond share = network_ / static_cast<double>(g.groups_per_node);
    bandwidth = g.ranks_per_node > 1 ? std::min(fabric_, share) : share;
    alpha = kNetworkAlpha;
  }
  if (bandwidth.value() <= 0.0) throw std::invalid_argument("AlphaBetaNetwork: no link for this group");
  const double n = static_cast<double>(g.size);
  const double steps = op == Collective::all_reduce ? 2.0 * (n - 1.0) : (n - 1.0);
  return (bytes * (steps / n)) / bandwidth + alpha * steps;
}

units::Seconds AlphaBetaNetwork::p2p_time(units::Bytes bytes, bool cross_node, int64_t concurrent_per_node) const {
  if (bytes.value() <= 0.0) return units::Seconds(0.0);
  if (!cross_node) return bytes / fabric_ + kFabricAlpha;
  const units::BytesPerSecond share = network_ / static_cast<double>(std::max<int64_t>(1, concurrent_per_node));
  return bytes / share + kNetworkAlpha;
}

}  // namespace clustersim::models
