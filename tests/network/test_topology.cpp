// Cluster topology: hand-checkable shapes, capacities and routes on the shipped catalog's VM sizes.
#include "models/network/topology.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "models/hardware/catalog.hpp"
#include "tests/network/network_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace units = clustersim::units;
using clustersim::models::build_topology;
using clustersim::models::Catalog;
using clustersim::models::FabricKind;
using clustersim::models::LinkClass;
using clustersim::models::LinkId;
using clustersim::models::Topology;
using clustersim::models::TopologyConfig;
using clustersim::models::VertexId;
using clustersim::models::VertexKind;

const Catalog& shipped() { return clustersim::testing::shipped_catalog(); }

Topology build(const std::string& vm_name, const TopologyConfig& cfg) {
  return clustersim::testing::build_shipped(vm_name, cfg);
}

TopologyConfig config(std::int64_t nodes, FabricKind fabric) {
  return clustersim::testing::topology_config(nodes, fabric);
}

std::vector<LinkClass> classes(const Topology& t, const std::vector<LinkId>& path) {
  std::vector<LinkClass> out;
  for (LinkId id : path) out.push_back(t.link(id).link_class);
  return out;
}

/// The path is a chain from src to dst.
void expect_chain(const Topology& t, const std::vector<LinkId>& path, VertexId src, VertexId dst) {
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(t.link(path.front()).src, src);
  EXPECT_EQ(t.link(path.back()).dst, dst);
  for (std::size_t i = 1; i < path.size(); ++i) EXPECT_EQ(t.link(path[i - 1]).dst, t.link(path[i]).src);
}

int switches_on(const Topology& t, const std::vector<LinkId>& path) {
  int n = 0;
  for (LinkId id : path) n += t.vertex(t.link(id).dst).kind == VertexKind::network_switch ? 1 : 0;
  return n;
}

constexpr double kNdr = 400e9 / 8.0;  // 400 Gb/s NDR port = 50 GB/s

TEST(Topology, OneH100NodeRoutesThroughNvSwitch) {
  const Topology t = build("Standard_ND96isr_H100_v5", config(1, FabricKind::single_switch));
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(t.gpus_per_node(), 8);
  int nvswitches = 0;
  for (VertexId v = 0; v < t.vertex_count(); ++v) nvswitches += t.vertex(v).kind == VertexKind::nvswitch ? 1 : 0;
  EXPECT_EQ(nvswitches, 1);
  const auto path = t.route(t.gpu(0, 0), t.gpu(0, 5), 0);
  ASSERT_EQ(path.size(), 2u);  // GPU0 -> NVSwitch -> GPU5
  expect_chain(t, path, 0, 5);
  for (LinkId id : path) {
    EXPECT_EQ(t.link(id).link_class, LinkClass::nvlink);
    EXPECT_DOUBLE_EQ(t.link(id).capacity.value(), 450e9);  // NVLink 4: 900 GB/s bidirectional / 2
  }
  EXPECT_EQ(t.vertex(t.link(path[0]).dst).kind, VertexKind::nvswitch);
  EXPECT_TRUE(t.route(3, 3, 0).empty());
  // Links come in direction pairs 2k / 2k+1.
  ASSERT_EQ(t.link_count() % 2, 0u);
  for (LinkId id = 0; id < t.link_count(); id += 2) {
    EXPECT_EQ(t.link(id).src, t.link(id + 1).dst);
    EXPECT_EQ(t.link(id).dst, t.link(id + 1).src);
    EXPECT_EQ(t.link(id).capacity, t.link(id + 1).capacity);
  }
  EXPECT_THROW((void)t.route(0, static_cast<VertexId>(t.vertex_count() - 1), 0), std::invalid_argument);
}

TEST(Topology, NvlinkBridgeJoinsPairsAndTheHostJoinsThePairs) {
  // NC96ads_A100_v4: four A100 PCIe, bridged 0-1 and 2-3 (300 GB/s per direction); across pairs through the
  // host PCIe switch.
  const Topology t = build("Standard_NC96ads_A100_v4", config(1, FabricKind::single_switch));
  const auto bridged = t.route(t.gpu(0, 0), t.gpu(0, 1), 0);
  ASSERT_EQ(bridged.size(), 1u);
  EXPECT_EQ(t.link(bridged[0]).link_class, LinkClass::nvlink);
  EXPECT_DOUBLE_EQ(t.link(bridged[0]).capacity.value(), 300e9);
  const auto across = t.route(t.gpu(0, 1), t.gpu(0, 2), 0);
  expect_chain(t, across, t.gpu(0, 1), t.gpu(0, 2));
  EXPECT_EQ(classes(t, across), (std::vector<LinkClass>{LinkClass::pcie, LinkClass::pcie}));
  EXPECT_EQ(t.vertex(t.link(across[0]).dst).kind, VertexKind::host);
}

TEST(Topology, NvlinkMeshIsBuiltAsACrossbarAtTheGpusNvlinkRate) {
  // ND40rs_v2 (V100 hybrid cube mesh): every GPU at its six links' 150 GB/s per direction; one EDR port.
  const Topology t = build("Standard_ND40rs_v2", config(2, FabricKind::single_switch));
  const auto path = t.route(t.gpu(0, 0), t.gpu(0, 5), 0);
  ASSERT_EQ(path.size(), 2u);
  for (LinkId id : path) {
    EXPECT_EQ(t.link(id).link_class, LinkClass::nvlink);
    EXPECT_DOUBLE_EQ(t.link(id).capacity.value(), 150e9);
  }
  const auto out = t.route(t.gpu(0, 3), t.gpu(1, 3), 0);
  EXPECT_EQ(switches_on(t, out), 1);
}

TEST(Topology, Gb200RackIsOneNvlinkDomainOf72Gpus) {
  // 36 VMs of ND GB200 v6 = 2 NVL72 racks: each a node of 72 GPUs behind one NVSwitch, 72 NDR rails.
  const Topology t = build("Standard_ND128isr_NDR_GB200_v6", config(36, FabricKind::rail_optimized));
  EXPECT_EQ(t.gpu_count(), 144);
  EXPECT_EQ(t.gpus_per_node(), 72);
  const auto in_rack = t.route(t.gpu(0, 0), t.gpu(0, 71), 0);  // VMs 0 and 17 of rack 0
  ASSERT_EQ(in_rack.size(), 2u);
  for (LinkId id : in_rack) {
    EXPECT_EQ(t.link(id).link_class, LinkClass::nvlink);
    EXPECT_DOUBLE_EQ(t.link(id).capacity.value(), 900e9);
  }
  const auto across = t.route(t.gpu(0, 5), t.gpu(1, 5), 0);  // the same rail in the other rack
  EXPECT_EQ(switches_on(t, across), 1);
  EXPECT_EQ(classes(t, across)[1], LinkClass::infiniband);
  EXPECT_DOUBLE_EQ(t.link(across[1]).capacity.value(), kNdr);
  // A cluster that is not whole racks, or a rack split over zones, is refused.
  EXPECT_THROW((void)build("Standard_ND128isr_NDR_GB200_v6", config(20, FabricKind::rail_optimized)),
               std::invalid_argument);
  // Fewer VMs than a rack: one domain of them all.
  EXPECT_EQ(build("Standard_ND128isr_NDR_GB200_v6", config(2, FabricKind::single_switch)).gpus_per_node(), 8);
}

TEST(Topology, PartialGb200RacksAreDomainsOfTheVmsTheJobUses) {
  // 64 VMs of ND GB200 v6 taking 16 of each rack's 18 trays: 64 / 16 = 4 domains of 16 x 4 = 64 GPUs, each behind
  // its NVSwitch with 16 x 4 = 64 NDR rails; 256 GPUs in all.
  TopologyConfig cfg = config(64, FabricKind::rail_optimized);
  cfg.vms_per_nvlink_domain = 16;
  const Topology t = build("Standard_ND128isr_NDR_GB200_v6", cfg);
  EXPECT_EQ(t.gpu_count(), 256);
  EXPECT_EQ(t.node_count(), 4);
  EXPECT_EQ(t.gpus_per_node(), 64);
  const auto in_rack = t.route(t.gpu(3, 0), t.gpu(3, 63), 0);  // VMs 0 and 15 of rack 3: NVLink, 2 hops
  ASSERT_EQ(in_rack.size(), 2u);
  for (LinkId id : in_rack) EXPECT_DOUBLE_EQ(t.link(id).capacity.value(), 900e9);
  const auto across = t.route(t.gpu(0, 63), t.gpu(1, 63), 0);  // rail 63 into the next rack
  EXPECT_EQ(switches_on(t, across), 1);
  EXPECT_EQ(classes(t, across)[1], LinkClass::infiniband);
  EXPECT_DOUBLE_EQ(t.link(across[1]).capacity.value(), kNdr);
  // 1 VM per domain: every VM its own NVLink domain of 4 GPUs; GPUs of two VMs of one rack meet over InfiniBand.
  TopologyConfig own = config(2, FabricKind::single_switch);
  own.vms_per_nvlink_domain = 1;
  const Topology single = build("Standard_ND128isr_NDR_GB200_v6", own);
  EXPECT_EQ(single.gpus_per_node(), 4);
  EXPECT_EQ(classes(single, single.route(single.gpu(0, 0), single.gpu(1, 0), 0))[1], LinkClass::infiniband);
  // More VMs per domain than a rack has, nodes that are not whole domains of it, a domain split over zones, or a
  // partial domain on a size without multi-VM domains: refused.
  for (const auto& [vm, nodes, per_domain] :
       {std::tuple{"Standard_ND128isr_NDR_GB200_v6", 64, 19}, std::tuple{"Standard_ND128isr_NDR_GB200_v6", 72, 16},
        std::tuple{"Standard_ND128isr_NDR_GB200_v6", 64, 0}, std::tuple{"Standard_ND96isr_H100_v5", 64, 2}}) {
    TopologyConfig bad = config(nodes, FabricKind::rail_optimized);
    bad.vms_per_nvlink_domain = per_domain;
    EXPECT_THROW((void)build(vm, bad), std::invalid_argument) << vm << " " << nodes << " " << per_domain;
  }
  TopologyConfig zoned = config(64, FabricKind::fat_tree);
  zoned.vms_per_nvlink_domain = 16;
  zoned.zones = {{"a", 40}, {"b", 24}};
  EXPECT_THROW((void)build("Standard_ND128isr_NDR_GB200_v6", zoned), std::invalid_argument);
  zoned.zones = {{"a", 32}, {"b", 32}};
  EXPECT_EQ(build("Standard_ND128isr_NDR_GB200_v6", zoned).node_count(), 4);
  // 1 on a single-VM size changes nothing.
  TopologyConfig h100 = config(4, FabricKind::rail_optimized);
  h100.vms_per_nvlink_domain = 1;
  EXPECT_EQ(build("Standard_ND96isr_H100_v5", h100).link_count(),
            build("Standard_ND96isr_H100_v5", config(4, FabricKind::rail_optimized)).link_count());
}

TEST(Topology, TwoNodesSingleSwitchGoGpuNicSwitchNicGpu) {
  const Topology t = build("Standard_ND96isr_H100_v5", config(2, FabricKind::single_switch));
  EXPECT_EQ(t.gpu_count(), 16);
  const VertexId src = t.gpu(0, 0);
  const VertexId dst = t.gpu(1, 3);
  EXPECT_EQ(dst, 11u);  // node-major rank
  const auto path = t.route(src, dst, 7);
  expect_chain(t, path, src, dst);
  const std::vector<LinkClass> want = {LinkClass::pcie, LinkClass::infiniband, LinkClass::infiniband,
                                       LinkClass::pcie};
  EXPECT_EQ(classes(t, path), want);
  EXPECT_EQ(t.vertex(t.link(path[0]).dst).kind, VertexKind::nic);
  EXPECT_EQ(t.vertex(t.link(path[1]).dst).kind, VertexKind::network_switch);
  EXPECT_EQ(t.vertex(t.link(path[2]).dst).kind, VertexKind::nic);
  EXPECT_EQ(t.vertex(t.link(path[2]).dst).node, 1);
  for (LinkId id : path) EXPECT_DOUBLE_EQ(t.link(id).capacity.value(), kNdr);
  // One way latency: PCIe/NIC 1 us + switch 130 ns + 130 ns + PCIe/NIC 1 us.
  double latency = 0;
  for (LinkId id : path) latency += t.link(id).latency.value();
  EXPECT_NEAR(latency, 2e-6 + 2 * 130e-9, 1e-15);
}

// Leaf-spine link = (radix/2 * port rate) / oversubscription / spines; radix 8: 4 * 50 GB/s / s / 4.
TEST(Topology, FatTreeOversubscriptionScalesLeafSpineCapacity) {
  for (double over : {1.0, 2.0}) {
    TopologyConfig cfg = config(2, FabricKind::fat_tree);
    cfg.fat_tree_radix = 8;
    cfg.oversubscription = over;
    const Topology t = build("Standard_ND96isr_H100_v5", cfg);
    int leaf_spine = 0;
    for (LinkId id = 0; id < t.link_count(); ++id) {
      const auto l = t.link(id);
      if (t.vertex(l.src).kind == VertexKind::network_switch && t.vertex(l.dst).kind == VertexKind::network_switch) {
        ++leaf_spine;
        EXPECT_DOUBLE_EQ(l.capacity.value(), 4 * kNdr / over / 4);
      }
    }
    EXPECT_EQ(leaf_spine, 2 * 4 * 4);  // 16 NICs / 4 = 4 leaves, 4 spines, both directions
  }
}

// radix 4: leaves of 2 NICs, pods of 2 leaves + 2 aggregation switches, 2 x 2 = 4 cores.
TEST(Topology, ThreeTierFatTree) {
  TopologyConfig cfg = config(2, FabricKind::fat_tree);
  cfg.fat_tree_radix = 4;
  cfg.fat_tree_tiers = 3;
  cfg.oversubscription = 2.0;
  const Topology t = build("Standard_ND96isr_H100_v5", cfg);  // 16 NICs: 8 leaves, 4 pods, 8 aggs, 4 cores
  int per_tier[3] = {0, 0, 0};
  for (VertexId v = 0; v < t.vertex_count(); ++v) {
    if (t.vertex(v).kind == VertexKind::network_switch) ++per_tier[t.vertex(v).tier];
  }
  EXPECT_EQ(per_tier[0], 8);
  EXPECT_EQ(per_tier[1], 8);
  EXPECT_EQ(per_tier[2], 4);
  // Node 0 NIC 0: leaf 0, pod 0. Node 1 NIC 7: zone NIC 15, leaf 7, pod 3: leaf agg core agg leaf.
  std::set<VertexId> cores;
  for (std::uint64_t h = 0; h < 8; ++h) {
    const auto path = t.route(t.gpu(0, 0), t.gpu(1, 7), h);
    expect_chain(t, path, t.gpu(0, 0), t.gpu(1, 7));
    ASSERT_EQ(path.size(), 8u);
    std::vector<int> tiers;
    for (std::size_t i = 1; i + 2 < path.size(); ++i) tiers.push_back(t.vertex(t.link(path[i]).dst).tier);
    EXPECT_EQ(tiers, (std::vector<int>{0, 1, 2, 1, 0}));
    EXPECT_DOUBLE_EQ(t.link(path[2]).capacity.value(), kNdr / 2);  // port rate / oversubscription
    EXPECT_DOUBLE_EQ(t.link(path[3]).capacity.value(), kNdr / 2);
    cores.insert(t.link(path[3]).dst);
  }
  EXPECT_EQ(cores.size(), 4u);  // 2 aggregation choices x 2 core choices, mixed-radix digits of the hash
  // Inside one pod (Ethernet-only, one NIC per node: nodes 0-1 on leaf 0, nodes 2-3 on leaf 1): no core.
  TopologyConfig eth = config(8, FabricKind::fat_tree);
  eth.fat_tree_radix = 4;
  eth.fat_tree_tiers = 3;
  const Topology e = build("Standard_NC64as_T4_v3", eth);
  EXPECT_EQ(switches_on(e, e.route(e.gpu(0, 0), e.gpu(2, 0), 0)), 3);
  EXPECT_EQ(switches_on(e, e.route(e.gpu(0, 0), e.gpu(7, 0), 0)), 5);
}

TEST(Topology, RailOptimizedSameRailCrossesOneSwitch) {
  const Topology t = build("Standard_ND96isr_H100_v5", config(3, FabricKind::rail_optimized));
  for (int i = 0; i < 8; ++i) {
    const auto path = t.route(t.gpu(0, i), t.gpu(2, i), 12345);
    expect_chain(t, path, t.gpu(0, i), t.gpu(2, i));
    EXPECT_EQ(path.size(), 4u);
    EXPECT_EQ(switches_on(t, path), 1);
  }
  // Another rail: rail 1 -> spine -> rail 6 (GPUs do not forward: no PXN).
  const auto cross = t.route(t.gpu(0, 1), t.gpu(2, 6), 0);
  expect_chain(t, cross, t.gpu(0, 1), t.gpu(2, 6));
  EXPECT_EQ(cross.size(), 6u);
  EXPECT_EQ(switches_on(t, cross), 3);
}

TEST(Topology, EcmpSpreadsOverSpinesDeterministically) {
  TopologyConfig cfg = config(2, FabricKind::fat_tree);
  cfg.fat_tree_radix = 8;  // 4 NICs per leaf: node 0 on leaves 0-1, node 1 on leaves 2-3; 4 spines
  const Topology t = build("Standard_ND96isr_H100_v5", cfg);
  const VertexId src = t.gpu(0, 0);
  const VertexId dst = t.gpu(1, 0);
  std::set<VertexId> spines;
  for (std::uint64_t h = 0; h < 16; ++h) {
    const auto path = t.route(src, dst, h);
    expect_chain(t, path, src, dst);
    ASSERT_EQ(path.size(), 6u);  // GPU NIC leaf spine leaf NIC GPU
    const VertexId spine = t.link(path[2]).dst;
    EXPECT_EQ(t.vertex(spine).tier, 1);
    spines.insert(spine);
    EXPECT_EQ(path, t.route(src, dst, h));  // same hash, same path
    // Candidates in link-id order = spine order: hash h takes spine h % 4.
    const VertexId first_spine = t.link(t.route(src, dst, 0)[2]).dst;
    EXPECT_EQ(spine, first_spine + h % 4);
  }
  EXPECT_EQ(spines.size(), 4u);
  // Node 0 NIC 0 is on leaf 0 and node 1 NIC 1 on leaf (8 + 1) / 4 = 2: leaf, spine, leaf.
  EXPECT_EQ(switches_on(t, t.route(t.gpu(0, 0), t.gpu(1, 1), 0)), 3);
}

TEST(Topology, RouteCacheIsPerTopologyAndMatchesAFreshRoute) {
  // route() caches paths per thread, keyed by the topology instance: alternating between two topologies
  // with overlapping GPU ids must give each its own paths, the same as those of a freshly built twin.
  TopologyConfig small = config(2, FabricKind::fat_tree);
  small.fat_tree_radix = 8;
  const Topology a = build("Standard_ND96isr_H100_v5", small);
  const Topology b = build("Standard_ND96isr_H100_v5", config(4, FabricKind::single_switch));
  const VertexId src = a.gpu(0, 3);
  const VertexId dst = a.gpu(1, 5);
  const auto a_first = a.route(src, dst, 7);
  const auto b_first = b.route(src, dst, 7);
  expect_chain(a, a_first, src, dst);
  expect_chain(b, b_first, src, dst);
  EXPECT_NE(a_first, b_first);  // two-tier fat tree vs one switch: different links
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.route(src, dst, 7), a_first);
    EXPECT_EQ(b.route(src, dst, 7), b_first);
  }
  const Topology a_twin = build("Standard_ND96isr_H100_v5", small);
  EXPECT_EQ(a_twin.route(src, dst, 7), a_first);
  EXPECT_EQ(a_twin.route(src, dst, 8), a.route(src, dst, 8));
  EXPECT_THROW((void)a.route(src, static_cast<VertexId>(a.gpu_count()), 7), std::invalid_argument);
}

TEST(Topology, RowsAndTwinsComputedOnFirstUseAreTheSameFromManyThreads) {
  // The network adjacency, the distance rows and the table of twin rows are worked out on the first route
  // that needs them (std::call_once): threads routing on a fresh topology at once must get the paths of one
  // thread routing alone on its twin, on a rail-optimized fabric (rails are twins), a three-tier tree (leaves of a pod
  // are) and zones (gateway rows).
  TopologyConfig rails = config(12, FabricKind::rail_optimized);
  rails.fat_tree_radix = 8;
  TopologyConfig three = config(9, FabricKind::fat_tree);
  three.fat_tree_radix = 8;
  three.fat_tree_tiers = 3;
  three.zones = {{"a", 7}, {"b", 2}};
  for (const TopologyConfig& cfg : {rails, three}) {
    const Topology alone = build("Standard_ND96isr_H100_v5", cfg);
    const auto gpus = static_cast<VertexId>(alone.gpu_count());
    const auto path = [gpus](const Topology& t, VertexId i) {
      const VertexId src = (i * 7) % gpus, dst = (i * 13 + 5) % gpus;
      return t.search_route(src, dst, i);
    };
    std::vector<std::vector<LinkId>> want;
    for (VertexId i = 0; i < 4 * gpus; ++i) want.push_back(path(alone, i));
    const Topology shared = build("Standard_ND96isr_H100_v5", cfg);
    std::vector<std::vector<std::vector<LinkId>>> got(4);
    std::vector<std::thread> threads;
    for (VertexId k = 0; k < got.size(); ++k) {
      threads.emplace_back([&, k] {
        for (VertexId i = 0; i < 4 * gpus; ++i) got[k].push_back(path(shared, (i + k * gpus) % (4 * gpus)));
      });
    }
    for (std::thread& th : threads) th.join();
    for (VertexId k = 0; k < got.size(); ++k) {
      for (VertexId i = 0; i < 4 * gpus; ++i) {
        ASSERT_EQ(got[k][i], want[(i + k * gpus) % (4 * gpus)]) << "thread " << k << ", pair " << i;
      }
    }
  }
}

TEST(Topology, CrossZoneRouteHasOneInterZoneLink) {
  TopologyConfig cfg = config(4, FabricKind::fat_tree);
  cfg.zones = {{"eastus-1", 2}, {"eastus-2", 2}};
  const Topology t = build("Standard_ND96isr_H100_v5", cfg);
  EXPECT_EQ(t.zone_of_node(1), 0);
  EXPECT_EQ(t.zone_of_node(2), 1);
  const auto path = t.route(t.gpu(0, 2), t.gpu(3, 5), 99);
  expect_chain(t, path, t.gpu(0, 2), t.gpu(3, 5));
  const std::vector<LinkClass> want = {LinkClass::pcie,       LinkClass::pcie,     LinkClass::ethernet,
                                       LinkClass::inter_zone, LinkClass::ethernet, LinkClass::pcie,
                                       LinkClass::pcie};
  EXPECT_EQ(classes(t, path), want);
  int inter = 0;
  for (LinkId id : path) {
    if (t.link(id).link_class != LinkClass::inter_zone) continue;
    ++inter;
    EXPECT_DOUBLE_EQ(t.link(id).latency.value(), 1e-3);
    EXPECT_DOUBLE_EQ(t.link(id).capacity.value(), 2 * 80e9 / 8);  // min(2, 2) nodes x 80 Gb/s Ethernet
  }
  EXPECT_EQ(inter, 1);
  // Inside a zone: InfiniBand only, never the gateways.
  const auto local = t.route(t.gpu(0, 2), t.gpu(1, 5), 99);
  for (LinkClass c : classes(t, local)) {
    EXPECT_NE(c, LinkClass::inter_zone);
    EXPECT_NE(c, LinkClass::ethernet);
  }
}

TEST(Topology, Mi300xMeshAndT4PcieAndEthernet) {
  const Topology mi = build("Standard_ND96isr_MI300X_v5", config(1, FabricKind::single_switch));
  const auto p = mi.route(0, 5, 0);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(mi.link(p[0]).link_class, LinkClass::infinity_fabric);
  EXPECT_DOUBLE_EQ(mi.link(p[0]).capacity.value(), 448e9 / 7);  // 896 GB/s bidirectional over 7 peers

  const Topology t4 = build("Standard_NC64as_T4_v3", config(2, FabricKind::single_switch));
  const auto intra = t4.route(0, 3, 0);
  EXPECT_EQ(classes(t4, intra), (std::vector<LinkClass>{LinkClass::pcie, LinkClass::pcie}));
  EXPECT_DOUBLE_EQ(t4.link(intra[0]).capacity.value(), 15.75e9);
  const auto inter = t4.route(t4.gpu(0, 1), t4.gpu(1, 2), 0);
  expect_chain(t4, inter, t4.gpu(0, 1), t4.gpu(1, 2));
  const std::vector<LinkClass> want = {LinkClass::pcie, LinkClass::pcie, LinkClass::ethernet,
                                       LinkClass::ethernet, LinkClass::pcie, LinkClass::pcie};
  EXPECT_EQ(classes(t4, inter), want);
  EXPECT_DOUBLE_EQ(t4.link(inter[2]).capacity.value(), 32e9 / 8);  // 32 Gb/s front-end NIC

  const Topology one = build("Standard_NC4as_T4_v3", config(2, FabricKind::fat_tree));
  EXPECT_EQ(one.gpu_count(), 2);
  EXPECT_EQ(one.route(0, 1, 0).size(), 6u);  // GPU host NIC leaf NIC host GPU (2 NICs share one leaf)
}

TEST(Topology, RejectsInconsistentInput) {
  TopologyConfig cfg = config(4, FabricKind::fat_tree);
  cfg.zones = {{"a", 1}, {"b", 2}};
  try {
    (void)build("Standard_ND96isr_H100_v5", cfg);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sum to 3 but nodes = 4"), std::string::npos) << e.what();
  }
  cfg = config(2, FabricKind::fat_tree);
  cfg.fat_tree_radix = 7;
  EXPECT_THROW((void)build("Standard_ND96isr_H100_v5", cfg), std::invalid_argument);
  cfg = config(2, FabricKind::fat_tree);
  cfg.oversubscription = 0.5;
  EXPECT_THROW((void)build("Standard_ND96isr_H100_v5", cfg), std::invalid_argument);
  cfg = config(2, FabricKind::fat_tree);
  cfg.zones = {{"a", 1}, {"a", 1}};
  EXPECT_THROW((void)build("Standard_ND96isr_H100_v5", cfg), std::invalid_argument);
  cfg = config(2, FabricKind::fat_tree);
  cfg.fat_tree_tiers = 4;
  EXPECT_THROW((void)build("Standard_ND96isr_H100_v5", cfg), std::invalid_argument);
  cfg = config(0, FabricKind::fat_tree);
  EXPECT_THROW((void)build("Standard_ND96isr_H100_v5", cfg), std::invalid_argument);
  const auto& vm = shipped().vm_size("Standard_ND96isr_H100_v5");
  EXPECT_THROW((void)build_topology(vm, shipped().device("A100-SXM4-80GB"), config(1, FabricKind::fat_tree)),
               std::invalid_argument);
}

TEST(Topology, EthernetOnlyZonesAndCustomInterZoneLink) {
  TopologyConfig cfg = config(6, FabricKind::single_switch);
  cfg.zones = {{"z1", 1}, {"z2", 2}, {"z3", 3}};
  cfg.inter_zone_latency = units::milliseconds(0.8);
  cfg.inter_zone_bandwidth_per_node = units::gigabytes_per_second(2.0);
  const Topology t = build("Standard_NC64as_T4_v3", cfg);
  EXPECT_EQ(t.zones().size(), 3u);
  EXPECT_EQ(t.zone_of_node(5), 2);
  // Zone 2 (nodes 1-2) to zone 3 (nodes 3-5): one inter_zone link of min(2, 3) x 2 GB/s, 0.8 ms.
  const auto path = t.route(t.gpu(2, 0), t.gpu(4, 3), 5);
  expect_chain(t, path, t.gpu(2, 0), t.gpu(4, 3));
  const std::vector<LinkClass> want = {LinkClass::pcie, LinkClass::pcie, LinkClass::ethernet,
                                       LinkClass::inter_zone, LinkClass::ethernet, LinkClass::pcie,
                                       LinkClass::pcie};
  EXPECT_EQ(classes(t, path), want);
  EXPECT_EQ(t.vertex(t.link(path[2]).dst).kind, VertexKind::zone_gateway);
  EXPECT_DOUBLE_EQ(t.link(path[3]).capacity.value(), 2 * 2e9);
  EXPECT_DOUBLE_EQ(t.link(path[3]).latency.value(), 0.8e-3);
  // Same zone (nodes 3 and 5): the zone's switch, not its gateway.
  const auto local = t.route(t.gpu(3, 0), t.gpu(5, 0), 5);
  ASSERT_EQ(local.size(), 6u);
  EXPECT_EQ(t.vertex(t.link(local[2]).dst).kind, VertexKind::network_switch);
}

// A VM with fewer InfiniBand ports than GPUs: NICs hang off the host and flows spread over them by hash.
TEST(Topology, NonRailNicsHangOffTheHost) {
  auto vm = shipped().vm_size("Standard_ND96isr_H100_v5");
  vm.infiniband_ports = 4;
  const Topology t = build_topology(vm, shipped().device(vm.device), config(2, FabricKind::single_switch));
  std::set<VertexId> first_nics;
  for (std::uint64_t h = 0; h < 8; ++h) {
    const auto path = t.route(t.gpu(0, 6), t.gpu(1, 1), h);
    expect_chain(t, path, t.gpu(0, 6), t.gpu(1, 1));
    ASSERT_EQ(path.size(), 6u);  // GPU host NIC switch NIC host GPU
    EXPECT_EQ(t.vertex(t.link(path[0]).dst).kind, VertexKind::host);
    EXPECT_DOUBLE_EQ(t.link(path[0]).capacity.value(), 31.5e9);  // kHostPcieBandwidth, assumption
    first_nics.insert(t.link(path[1]).dst);
  }
  EXPECT_EQ(first_nics.size(), 4u);
  // Inside the node still NVSwitch, never the host.
  EXPECT_EQ(classes(t, t.route(t.gpu(0, 6), t.gpu(0, 1), 0)),
            (std::vector<LinkClass>{LinkClass::nvlink, LinkClass::nvlink}));
}

// The build and route times are printed for a reader; their targets are benchmarks (bench_collectives builds
// the same topologies, docs/performance.md), not assertions of a test that also runs under the sanitizers.
TEST(Topology, BuildsAndRoutes2048H100NodesQuickly) {
  const auto start = std::chrono::steady_clock::now();
  const Topology t = build("Standard_ND96isr_H100_v5", config(2048, FabricKind::fat_tree));
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.gpu_count(), 16384);
  const auto route_start = std::chrono::steady_clock::now();
  constexpr int kRoutes = 2000;
  std::size_t hops = 0;
  for (int i = 0; i < kRoutes; ++i) {
    const auto src = static_cast<VertexId>((i * 7919) % 16384);
    const auto dst = static_cast<VertexId>((i * 104729 + 5) % 16384);
    hops += t.route(src, dst, static_cast<std::uint64_t>(i)).size();
  }
  const double route_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - route_start).count();
  std::printf("2048 x ND96isr_H100_v5 fat tree: %zu vertices, %zu links, built in %.1f ms; %.2f us per route "
              "(mean %.2f hops)\n",
              t.vertex_count(), t.link_count(), build_s * 1e3, route_s / kRoutes * 1e6,
              static_cast<double>(hops) / kRoutes);
  const auto far = t.route(t.gpu(0, 0), t.gpu(2047, 7), 3);
  expect_chain(t, far, t.gpu(0, 0), t.gpu(2047, 7));
  EXPECT_EQ(far.size(), 6u);

  // Three tiers at radix 64: 512 leaves in 16 pods, 512 aggregation switches, 1,024 cores.
  TopologyConfig three = config(2048, FabricKind::fat_tree);
  three.fat_tree_tiers = 3;
  const auto three_start = std::chrono::steady_clock::now();
  const Topology f3 = build("Standard_ND96isr_H100_v5", three);
  const double three_build_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - three_start).count();
  const auto three_route_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRoutes; ++i) {
    const auto src = static_cast<VertexId>((i * 7919) % 16384);
    const auto dst = static_cast<VertexId>((i * 104729 + 5) % 16384);
    hops += f3.route(src, dst, static_cast<std::uint64_t>(i)).size();
  }
  const double three_route_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - three_route_start).count();
  std::printf("2048 x ND96isr_H100_v5 three-tier fat tree: built in %.1f ms; %.2f us per route\n",
              three_build_s * 1e3, three_route_s / kRoutes * 1e6);
  EXPECT_EQ(f3.route(f3.gpu(0, 0), f3.gpu(2047, 7), 3).size(), 8u);

  // Rail-optimized: 8 rails of 2,048 ports each, the widest switches this builder makes.
  const auto rail_start = std::chrono::steady_clock::now();
  const Topology r = build("Standard_ND96isr_H100_v5", config(2048, FabricKind::rail_optimized));
  const double rail_build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - rail_start).count();
  const auto rail_route_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRoutes; ++i) {
    const auto src = static_cast<VertexId>((i * 7919) % 16384);
    const auto dst = static_cast<VertexId>((i * 104729 + 5) % 16384);
    hops += r.route(src, dst, static_cast<std::uint64_t>(i)).size();
  }
  const double rail_route_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - rail_route_start).count();
  std::printf("2048 x ND96isr_H100_v5 rail-optimized: built in %.1f ms; %.2f us per route\n", rail_build_s * 1e3,
              rail_route_s / kRoutes * 1e6);
}

}  // namespace
