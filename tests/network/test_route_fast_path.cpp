// Topology::route's closed form between nodes of one zone's fat tree (models/network/route_fat_tree.hpp)
// against the generic search (Topology::search_route): the same links in the same order for every pair of GPUs
// of many small fabrics (two and three tiers, radix 8 to 64, oversubscribed, partly filled leaves and pods, a
// single switch, rail-optimized and straddling nodes where the closed form must step aside, two zones, every
// shipped VM size) under several hashes, and for random pairs of a 16,384-GPU cluster.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/network/topology.hpp"
#include "tests/network/network_support.hpp"

namespace {

using clustersim::models::FabricKind;
using clustersim::models::Topology;
using clustersim::models::TopologyConfig;
using clustersim::models::VertexId;

TopologyConfig config(std::int64_t nodes, FabricKind fabric, int radix, int tiers = 2) {
  TopologyConfig cfg = clustersim::testing::topology_config(nodes, fabric);
  cfg.fat_tree_radix = radix;
  cfg.fat_tree_tiers = tiers;
  return cfg;
}

/// route() == search_route() for every ordered pair of distinct GPUs under three hashes; returns how many
/// pairs route() read in closed form.
std::int64_t expect_every_pair(const Topology& t, const std::string& what) {
  const auto gpus = static_cast<VertexId>(t.gpu_count());
  std::int64_t closed = 0;
  for (VertexId s = 0; s < gpus; ++s) {
    for (VertexId d = 0; d < gpus; ++d) {
      if (s == d) continue;
      closed += t.closed_form_route(s, d) ? 1 : 0;
      for (const std::uint64_t h : {std::uint64_t{d}, (std::uint64_t{s} * 31 + d) * std::uint64_t{2654435761}, std::uint64_t{12345}}) {
        EXPECT_EQ(t.route(s, d, h), t.search_route(s, d, h)) << what << ": GPU " << s << " -> GPU " << d << ", hash " << h;
        if (::testing::Test::HasFailure()) return closed;
      }
    }
  }
  return closed;
}

TEST(RouteFastPath, TwoAndThreeTierFatTrees) {
  const auto build = [](const std::string& vm, const TopologyConfig& cfg) {
    return clustersim::testing::build_shipped(vm, cfg);
  };
  const std::string a100 = "Standard_ND96amsr_A100_v4";
  // Radix 16/32/64: 1, 2, 4 nodes of 8 NICs per leaf; node counts not multiples of a leaf.
  EXPECT_GT(expect_every_pair(build(a100, config(7, FabricKind::fat_tree, 16)), "radix 16"), 0);
  EXPECT_GT(expect_every_pair(build(a100, config(9, FabricKind::fat_tree, 32)), "radix 32"), 0);
  EXPECT_GT(expect_every_pair(build(a100, config(13, FabricKind::fat_tree, 64)), "radix 64"), 0);
  // Radix 8: a node's 8 NICs straddle two leaves; the closed form steps aside.
  EXPECT_EQ(expect_every_pair(build(a100, config(5, FabricKind::fat_tree, 8)), "radix 8"), 0);
  // Three tiers: radix 16, 19 leaves in 3 pods (the last one partly filled); oversubscribed.
  TopologyConfig three = config(19, FabricKind::fat_tree, 16, 3);
  EXPECT_GT(expect_every_pair(build("Standard_ND96isr_H100_v5", three), "three tiers"), 0);
  three.oversubscription = 3.0;
  three.nodes = 11;
  EXPECT_GT(expect_every_pair(build("Standard_ND96isr_H100_v5", three), "three tiers, oversubscribed"), 0);
  TopologyConfig over = config(10, FabricKind::fat_tree, 32);
  over.oversubscription = 2.0;
  EXPECT_GT(expect_every_pair(build(a100, over), "oversubscribed"), 0);
}

TEST(RouteFastPath, NicsOnTheHostEthernetSingleSwitchRailsAndZones) {
  const auto& catalog = clustersim::testing::shipped_catalog();
  auto vm = catalog.vm_size("Standard_ND96isr_H100_v5");
  vm.infiniband_ports = 4;  // NICs on the host: the NIC is an ECMP choice at both ends
  EXPECT_GT(expect_every_pair(clustersim::models::build_topology(vm, catalog.device(vm.device),
                                                                 config(11, FabricKind::fat_tree, 8, 3)),
                              "NICs on the host, three tiers"),
            0);
  // Ethernet only, one NIC: 4 nodes per leaf at radix 8; three tiers from 17 nodes.
  EXPECT_GT(expect_every_pair(clustersim::testing::build_shipped("Standard_NC64as_T4_v3",
                                                                 config(22, FabricKind::fat_tree, 8, 3)),
                              "T4, three tiers"),
            0);
  EXPECT_GT(expect_every_pair(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5",
                                                                 config(6, FabricKind::single_switch, 64)),
                              "single switch"),
            0);
  EXPECT_EQ(expect_every_pair(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5",
                                                                 config(6, FabricKind::rail_optimized, 16)),
                              "rail-optimized"),
            0);
  TopologyConfig zoned = config(9, FabricKind::fat_tree, 16);
  zoned.zones = {{"a", 4}, {"b", 5}};
  EXPECT_GT(expect_every_pair(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", zoned), "two zones"), 0);
}

TEST(RouteFastPath, EveryShippedVmSize) {
  const auto& catalog = clustersim::testing::shipped_catalog();
  int shapes = 0;
  for (const auto& [name, vm] : catalog.vm_sizes()) {
    const std::int64_t domain = vm.nvlink_domain_vms;
    if (domain > 1) {  // an NVLink domain of 72 GPUs: one pair of nodes, 144 x 143 pairs
      TopologyConfig cfg = config(2 * domain, FabricKind::fat_tree, 64);
      expect_every_pair(clustersim::models::build_topology(vm, catalog.device(vm.device), cfg), name);
    } else {
      for (const int radix : {16, 64}) {
        TopologyConfig cfg = config(5, FabricKind::fat_tree, radix);
        expect_every_pair(clustersim::models::build_topology(vm, catalog.device(vm.device), cfg), name);
        cfg.zones = {{"a", 2}, {"b", 3}};
        expect_every_pair(clustersim::models::build_topology(vm, catalog.device(vm.device), cfg), name + " in two zones");
      }
    }
    if (::testing::Test::HasFailure()) return;
    ++shapes;
  }
  EXPECT_GE(shapes, 20);
}

TEST(RouteFastPath, RandomPairsOf16384Gpus) {
  // The benchmark's fabric: 2,048 ND96amsr_A100_v4 nodes, radix 64, 512 leaves under 32 spines.
  const Topology t =
      clustersim::testing::build_shipped("Standard_ND96amsr_A100_v4", config(2048, FabricKind::fat_tree, 64));
  std::uint64_t seed = 4242;
  const auto next = [&seed] { return seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, seed >> 20; };
  int closed = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto s = static_cast<VertexId>(next() % 16384), d = static_cast<VertexId>(next() % 16384);
    const std::uint64_t h = i % 2 == 0 ? std::uint64_t{d} : next();
    closed += t.closed_form_route(s, d) ? 1 : 0;
    ASSERT_EQ(t.route(s, d, h), t.search_route(s, d, h)) << "GPU " << s << " -> GPU " << d << ", hash " << h;
  }
  EXPECT_GT(closed, 19000);
}

}  // namespace
