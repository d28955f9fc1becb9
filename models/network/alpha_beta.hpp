// Closed-form alpha-beta ring model of collectives on a VM size's links (the placeholder network of issue 2).
//
// Ring all-reduce of S bytes on n ranks (Patarasuk & Yuan 2009; Thakur et al. 2005):
//   T = 2 (n-1)/n * S / B + 2 (n-1) * alpha
// reduce-scatter and all-gather each take half: (n-1)/n * S / B + (n-1) * alpha.
// B is the ring's bottleneck bandwidth per direction:
//   - inside one node: the GPU's fabric rate (NVLink per direction) x kFabricEfficiency;
//   - across nodes: NCCL runs one ring per NIC, so a group with k members per node that shares the node's
//     NICs with G-1 other groups gets (node NIC rate x kNetworkEfficiency) / G, and never more than its
//     intra-node rate when k > 1.
// alpha is a per-step latency: kFabricAlpha inside a node, kNetworkAlpha when the ring leaves it.
// Point-to-point: S / B_share + alpha, B_share the fabric rate, or the node's NIC rate / concurrent transfers.
//
// Calibration (docs/calibration.md): kFabricEfficiency = 0.77 is measured busbw / NVLink rate on ND A100 v4
// at 8 GiB (231.6 / 300 GB/s, shared/validation/nccl_allreduce_azure_single_vm.csv); kFabricAlpha = 10 us fits
// the same curve from 16 MiB to 1 GiB within 12 %. kNetworkEfficiency = 0.9 and kNetworkAlpha = 10 us are
// assumptions (NCCL over InfiniBand sustains ~90 % of line rate), to be replaced by the flow-level network.
#pragma once

#include "models/hardware/catalog.hpp"
#include "models/network/communication_model.hpp"

namespace clustersim::models {

class AlphaBetaNetwork final : public CommunicationModel {
 public:
  static constexpr double kFabricEfficiency = 0.77;
  static constexpr units::Seconds kFabricAlpha = units::microseconds(10.0);
  static constexpr double kNetworkEfficiency = 0.9;
  static constexpr units::Seconds kNetworkAlpha = units::microseconds(10.0);

  /// Links of `vm` (its devices from `catalog`). Nodes without InfiniBand use their Ethernet NIC rate.
  /// Throws std::invalid_argument if the VM has neither a device fabric nor a network.
  AlphaBetaNetwork(const VmSize& vm, const DeviceSpec& device);

  [[nodiscard]] units::Seconds collective_time(Collective op, const CommGroup& group,
                                               units::Bytes bytes) const override;
  [[nodiscard]] units::Seconds p2p_time(units::Bytes bytes, bool cross_node,
                                        int64_t concurrent_per_node) const override;

  /// Sustained per-GPU intra-node bandwidth per direction, B/s.
  [[nodiscard]] units::BytesPerSecond fabric_bandwidth() const { return fabric_; }
  /// Sustained network bandwidth of one node (all NICs), per direction, B/s.
  [[nodiscard]] units::BytesPerSecond node_network_bandwidth() const { return network_; }

 private:
  units::BytesPerSecond fabric_;
  units::BytesPerSecond network_;
};

}  // namespace clustersim::models
