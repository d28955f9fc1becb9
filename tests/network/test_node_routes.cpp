// Topology::append_route's routes inside one node (route_cache.hpp's NodeRouteCache: node 0's hash-free route
// moved to the flow's node) against the generic search (Topology::search_route): the same links in the same
// order for every ordered pair of GPUs of every node under many hashes, on every shipped VM size (NVSwitch,
// NVLink meshes and bridges, PCIe through the host, NVLink domains of several VMs, one GPU), several fabrics
// and two zones; and the same again after another topology was routed on the thread (the cache rekeys).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/network/topology.hpp"
#include "tests/network/network_support.hpp"

namespace {

using clustersim::models::FabricKind;
using clustersim::models::LinkId;
using clustersim::models::Topology;
using clustersim::models::TopologyConfig;
using clustersim::models::VertexId;

/// append_route() == search_route() for every ordered pair of GPUs of one node, every node, under `hashes`
/// hashes per pair (appended after a prefix, as collective schedules append them); returns the pairs checked.
std::int64_t expect_node_pairs(const Topology& t, const std::string& what, int hashes) {
  const auto gpn = static_cast<VertexId>(t.gpus_per_node());
  const auto gpus = static_cast<VertexId>(t.gpu_count());
  std::int64_t pairs = 0;
  std::uint64_t seed = 77;
  for (VertexId base = 0; base < gpus; base += gpn) {
    for (VertexId s = base; s < base + gpn; ++s) {
      for (VertexId d = base; d < base + gpn; ++d) {
        for (int i = 0; i < hashes; ++i) {
          seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
          const std::uint64_t h = i == 0 ? 0 : (i == 1 ? std::uint64_t{d} : seed >> 7);
          std::vector<LinkId> appended{LinkId{7}};
          t.append_route(s, d, h, appended);
          std::vector<LinkId> expected{LinkId{7}};
          const std::vector<LinkId> searched = t.search_route(s, d, h);
          expected.insert(expected.end(), searched.begin(), searched.end());
          EXPECT_EQ(appended, expected) << what << ": GPU " << s << " -> GPU " << d << ", hash " << h;
          if (::testing::Test::HasFailure()) return pairs;
        }
        ++pairs;
      }
    }
  }
  return pairs;
}

TEST(NodeRoutes, EveryShippedVmSizeEveryNodeManyHashes) {
  const auto& catalog = clustersim::testing::shipped_catalog();
  int shapes = 0;
  for (const auto& [name, vm] : catalog.vm_sizes()) {
    const std::int64_t domain = vm.nvlink_domain_vms;
    for (const FabricKind fabric : {FabricKind::fat_tree, FabricKind::rail_optimized, FabricKind::single_switch}) {
      TopologyConfig cfg = clustersim::testing::topology_config(domain > 1 ? 2 * domain : 5, fabric);
      cfg.fat_tree_radix = 16;
      if (fabric == FabricKind::fat_tree && domain <= 1) cfg.zones = {{"a", 2}, {"b", 3}};
      const Topology t = clustersim::models::build_topology(vm, catalog.device(vm.device), cfg);
      EXPECT_GT(expect_node_pairs(t, name, domain > 1 ? 3 : 12), 0) << name;
      if (::testing::Test::HasFailure()) return;
    }
    ++shapes;
  }
  EXPECT_GE(shapes, 20);
}

TEST(NodeRoutes, TopologiesInTurnOnOneThread) {
  // The cache is keyed to the last topology routed on: alternating two of other shapes rekeys it each time.
  const Topology h100 = clustersim::testing::build_shipped(
      "Standard_ND96isr_H100_v5", clustersim::testing::topology_config(3, FabricKind::rail_optimized));
  const Topology a100 = clustersim::testing::build_shipped(
      "Standard_ND96amsr_A100_v4", clustersim::testing::topology_config(4, FabricKind::fat_tree));
  for (int round = 0; round < 3; ++round) {
    EXPECT_GT(expect_node_pairs(h100, "H100", 4), 0);
    EXPECT_GT(expect_node_pairs(a100, "A100", 4), 0);
  }
}

}  // namespace
