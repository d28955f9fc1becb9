#include "models/serving/deepep.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace clustersim::models {
namespace {

/// One row of a README table: EP size, dispatch GB/s, combine GB/s.
struct Row {
  double ranks;
  double dispatch_gbps;
  double combine_gbps;
};

// docs/legacy.md (commit 0297fc80), "Low-latency kernels with pure RDMA".
constexpr std::array<Row, 6> kLowLatency{{{8, 98, 127}, {16, 63, 74}, {32, 48, 53}, {64, 43, 46}, {128, 39, 39},
                                          {256, 39, 40}}};
// docs/legacy.md (commit 0297fc80), "Normal kernels with NVLink and RDMA forwarding", internode rows.
constexpr std::array<Row, 3> kNormalInternode{{{16, 43, 43}, {32, 58, 57}, {64, 51, 50}}};
constexpr Row kNormalIntranode{8, 153, 158};

template <size_t N>
double lookup(const std::array<Row, N>& table, bool dispatch, double ranks) {
  const auto value = [&](const Row& r) { return dispatch ? r.dispatch_gbps : r.combine_gbps; };
  if (ranks <= table.front().ranks) return value(table.front());
  if (ranks >= table.back().ranks) return value(table.back());
  for (size_t i = 0; i + 1 < N; ++i) {
    if (ranks <= table[i + 1].ranks) {
      const double f = (std::log2(ranks) - std::log2(table[i].ranks)) /
                       (std::log2(table[i + 1].ranks) - std::log2(table[i].ranks));
      return value(table[i]) + f * (value(table[i + 1]) - value(table[i]));
    }
  }
  return value(table.back());
}

}  // namespace

units::BytesPerSecond deepep_rdma_bandwidth(DeepEpKernel kernel, bool dispatch, int64_t ranks) {
  if (ranks < 2) throw std::invalid_argument("deepep_rdma_bandwidth: ranks must be >= 2");
  const double r = static_cast<double>(ranks);
  const double gbps = kernel == DeepEpKernel::low_latency ? lookup(kLowLatency, dispatch, r)
                                                          : lookup(kNormalInternode, dispatch, r);
  return units::BytesPerSecond(gbps * 1e9);
}

units::BytesPerSecond deepep_nvlink_bandwidth(bool dispatch) {
  return units::BytesPerSecond((dispatch ? kNormalIntranode.dispatch_gbps : kNormalIntranode.combine_gbps) * 1e9);
}

DeepEpLinks deepep_links(const VmSize& vm, const DeviceSpec& device, int64_t ranks) {
  if (ranks < 2) throw std::invalid_argument("deepep_links: ranks must be >= 2");
  DeepEpLinks l;
  l.ranks = ranks;
  l.ranks_per_node = std::min<int64_t>(ranks, vm.devices_per_vm);
  const int64_t vms = (ranks + vm.devices_per_vm - 1) / vm.devices_per_vm;
  l.one_domain = vms <= vm.nvlink_domain_vms;
  l.nvlink_scale = device.fabric_bandwidth_per_direction.value() / kDeepEpNvlinkBytesPerS;
  const double ib_per_gpu = static_cast<double>(vm.infiniband_ports) * vm.infiniband_port_rate.value() / 8.0 /
                            static_cast<double>(vm.devices_per_vm);
  if (!l.one_domain && !(ib_per_gpu > 0)) {
    throw std::invalid_argument("deepep_links: an EP group of " + std::to_string(ranks) + " GPUs spans " +
                                std::to_string(vms) + " " + vm.name + " VMs, which have no InfiniBand");
  }
  l.rdma_scale = ib_per_gpu / kDeepEpRdmaBytesPerS;
  return l;
}

double deepep_copy_bytes(int64_t hidden, bool dispatch) {
  const double h = static_cast<double>(hidden);
  return dispatch ? h + h / 128.0 * 4.0 : 2.0 * h;
}

units::Seconds deepep_dispatch_combine_time(const DeepEpLinks& links, DeepEpKernel kernel, int64_t tokens_per_rank,
                                            int64_t hidden, int64_t experts, int64_t topk) {
  if (tokens_per_rank < 0) throw std::invalid_argument("deepep_dispatch_combine_time: negative tokens");
  if (tokens_per_rank == 0 || links.ranks < 2) return units::Seconds(0.0);
  const double tokens = static_cast<double>(tokens_per_rank);
  units::Seconds total(0.0);
  for (const bool dispatch : {true, false}) {
    const double copy = deepep_copy_bytes(hidden, dispatch);
    const double nvlink = deepep_nvlink_bandwidth(dispatch).value() * links.nvlink_scale;
    if (kernel == DeepEpKernel::low_latency) {
      const double bytes = tokens * static_cast<double>(topk) * copy;
      const double rate = links.one_domain ? nvlink
                                           : deepep_rdma_bandwidth(kernel, dispatch, links.ranks).value() *
                                                 links.rdma_scale;
      total += units::Seconds(bytes / rate);
      continue;
    }
    const int64_t per_node = links.one_domain ? links.ranks : links.ranks_per_node;
    const FlexDispatchCopies copies = flex_dispatch_copies(experts, topk, links.ranks, per_node);
    double seconds = tokens * copies.nvlink * copy / nvlink;
    if (!links.one_domain) {
      const double rdma = deepep_rdma_bandwidth(kernel, dispatch, links.ranks).value() * links.rdma_scale;
      seconds = std::max(seconds, tokens * copies.network * copy / rdma);
    }
    total += units::Seconds(seconds);
  }
  return total;
}

}  // namespace clustersim::models
