// Topology::route against a reference router written from topology.hpp's routing contract alone (issue 31):
// a breadth-first search over the whole graph from the destination, then the walk that takes, at each vertex,
// candidate flow_hash's next mixed-radix digit among the shortest next hops in link id order. The library's
// router uses per-leaf distance rows, ingress lists and (at a switch whose shortest next hops can only be the
// destination's ingress switches) a direct look-up of those links instead of scanning every neighbour, and on
// one zone's fat tree or single switch routes the translate of a pair in the first period and moves it back
// (the pairs below use large hashes, the destination rank as collectives do, so most are moved); every
// path must be the reference's, link for link, on fat trees of two and three tiers with many leaves per spine,
// rail-optimized fabrics, zones, NICs on the host, Ethernet-only VMs and every shipped VM size.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "models/network/route_rows.hpp"
#include "models/network/route_scan.hpp"
#include "models/network/topology.hpp"
#include "tests/network/network_support.hpp"

namespace {

using clustersim::models::FabricKind;
using clustersim::models::Link;
using clustersim::models::LinkId;
using clustersim::models::Topology;
using clustersim::models::TopologyConfig;
using clustersim::models::VertexId;
using clustersim::models::VertexKind;

/// The contract's route between GPUs of two different nodes: GPUs never transit, nor does any vertex of a third
/// node, nor an NVSwitch (it only joins GPUs of one node), nor a zone gateway when both ends are in one zone.
std::vector<LinkId> reference_route(const Topology& t, const std::vector<std::vector<LinkId>>& out, VertexId src,
                                    VertexId dst, std::uint64_t flow_hash) {
  const std::int64_t ns = t.vertex(src).node, nd = t.vertex(dst).node;
  const bool same_zone = t.vertex(src).zone == t.vertex(dst).zone;
  const auto allowed = [&](VertexId w) {
    if (w == src || w == dst) return true;
    const auto info = t.vertex(w);
    switch (info.kind) {
      case VertexKind::gpu:
      case VertexKind::nvswitch: return false;
      case VertexKind::zone_gateway: return !same_zone;
      case VertexKind::network_switch: return true;
      default: return info.node == ns || info.node == nd;
    }
  };
  constexpr std::uint32_t kInf = ~std::uint32_t{0};
  std::vector<std::uint32_t> dist(t.vertex_count(), kInf);
  std::vector<VertexId> queue{dst};
  dist[dst] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const VertexId u = queue[head];
    if (u != dst && t.vertex(u).kind == VertexKind::gpu) continue;  // src: an end, never expanded
    for (LinkId id : out[u]) {  // links are symmetric: u -> w has the partner w -> u
      const VertexId w = t.link(id).dst;
      if (dist[w] != kInf || !allowed(w)) continue;
      dist[w] = dist[u] + 1;
      queue.push_back(w);
    }
  }
  std::vector<LinkId> path;
  std::uint64_t digits = flow_hash;
  for (VertexId v = src; v != dst;) {
    std::vector<LinkId> candidates;  // out[v] is in link id order
    for (LinkId id : out[v]) {
      const VertexId w = t.link(id).dst;
      if (allowed(w) && dist[w] != kInf && dist[w] + 1 == dist[v]) candidates.push_back(id);
    }
    if (candidates.empty()) return {};
    const LinkId pick = candidates[digits % candidates.size()];
    digits /= candidates.size();
    path.push_back(pick);
    v = t.link(pick).dst;
  }
  return path;
}

/// Every GPU's first GPU of another node, and pseudo-random pairs, each under several hashes: route() must be
/// the reference path.
void expect_reference_routes(const Topology& t) {
  std::vector<std::vector<LinkId>> out(t.vertex_count());
  for (LinkId id = 0; id < t.link_count(); ++id) out[t.link(id).src].push_back(id);
  const auto gpus = static_cast<std::uint64_t>(t.gpu_count());
  const auto gpn = static_cast<std::uint64_t>(t.gpus_per_node());
  int checked = 0;
  for (std::uint64_t i = 0; i < 600; ++i) {
    const auto src = static_cast<VertexId>((i * 7919) % gpus);
    auto dst = static_cast<VertexId>((i * 104729 + 13 * (i / 7)) % gpus);
    if (src / gpn == dst / gpn) dst = static_cast<VertexId>((dst + gpn) % gpus);
    if (src / gpn == dst / gpn) continue;
    for (std::uint64_t h : {std::uint64_t{0}, i, i * 2654435761U, static_cast<std::uint64_t>(dst)}) {
      const std::vector<LinkId> want = reference_route(t, out, src, dst, h);
      ASSERT_FALSE(want.empty());
      ASSERT_EQ(t.route(src, dst, h), want) << "GPU " << src << " -> GPU " << dst << ", hash " << h;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TopologyConfig config(std::int64_t nodes, FabricKind fabric, int radix) {
  TopologyConfig cfg = clustersim::testing::topology_config(nodes, fabric);
  cfg.fat_tree_radix = radix;
  return cfg;
}

TEST(RouteReference, TwoTierFatTreeWithManyLeavesPerSpine) {
  // Radix 8: 4 NICs per leaf, 24 nodes of 8 rail NICs on 48 leaves under 4 spines.
  EXPECT_NO_FATAL_FAILURE(
      expect_reference_routes(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", config(24, FabricKind::fat_tree, 8))));
  // Radix 64 (the benchmark's fabric): 4 nodes per leaf, 96 nodes on 24 leaves under 32 spines.
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(
      clustersim::testing::build_shipped("Standard_ND96amsr_A100_v4", config(96, FabricKind::fat_tree, 64))));
}

TEST(RouteReference, ThreeTierFatTree) {
  TopologyConfig cfg = config(40, FabricKind::fat_tree, 16);  // 40 leaves: 5 pods of 8, 64 cores
  cfg.fat_tree_tiers = 3;
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", cfg)));
  cfg.oversubscription = 2.0;
  cfg.nodes = 21;  // a last pod only partly filled
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", cfg)));
}

TEST(RouteReference, RailOptimizedAndSingleSwitch) {
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(
      clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", config(12, FabricKind::rail_optimized, 8))));
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(
      clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", config(12, FabricKind::single_switch, 64))));
}

TEST(RouteReference, ZonesNicsOnTheHostAndEthernet) {
  TopologyConfig zoned = config(18, FabricKind::fat_tree, 8);
  zoned.zones = {{"a", 6}, {"b", 7}, {"c", 5}};
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(clustersim::testing::build_shipped("Standard_ND96isr_H100_v5", zoned)));
  const auto& catalog = clustersim::testing::shipped_catalog();
  auto vm = catalog.vm_size("Standard_ND96isr_H100_v5");
  vm.infiniband_ports = 4;  // NICs on the host: the NIC is an ECMP choice at both ends
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(
      clustersim::models::build_topology(vm, catalog.device(vm.device), config(20, FabricKind::fat_tree, 8))));
  EXPECT_NO_FATAL_FAILURE(expect_reference_routes(
      clustersim::testing::build_shipped("Standard_NC64as_T4_v3", config(40, FabricKind::fat_tree, 8))));
}

TEST(RouteReference, EveryShippedVmSizeInOneAndTwoZones) {
  // Every node shape the catalog has (1 to 8 GPUs and NVLink domains of 72, NVSwitch, mesh, bridges, PCIe and
  // Infinity Fabric inside; 0, 1, 4 or 8 NICs; Ethernet only): the source node's distances are computed from
  // its exits in closed form (models/network/route_exits.hpp) and the destination's ingress from its exits,
  // so every shape must route as the reference, in one zone and across two zones' gateways.
  const auto& catalog = clustersim::testing::shipped_catalog();
  int shapes = 0;
  for (const auto& [name, vm] : catalog.vm_sizes()) {
    const std::int64_t domain = vm.nvlink_domain_vms;
    TopologyConfig cfg = config(6 * domain, FabricKind::fat_tree, 8);
    EXPECT_NO_FATAL_FAILURE(
        expect_reference_routes(clustersim::models::build_topology(vm, catalog.device(vm.device), cfg)))
        << name;
    cfg.zones = {{"a", 2 * domain}, {"b", 4 * domain}};
    EXPECT_NO_FATAL_FAILURE(
        expect_reference_routes(clustersim::models::build_topology(vm, catalog.device(vm.device), cfg)))
        << name << " in two zones";
    ++shapes;
  }
  EXPECT_GE(shapes, 20);
}

TEST(RouteReference, PickAtDistanceIsTheIndexedListOfMatches) {
  // detail::pick_at_distance against collecting the matching links in order and taking digit % count.
  std::uint64_t seed = 12345;
  const auto next = [&seed] { return seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, seed >> 33; };
  for (int trial = 0; trial < 2000; ++trial) {
    const VertexId base = 100;
    std::vector<std::uint16_t> row(40);
    for (auto& d : row) d = static_cast<std::uint16_t>(next() % 4 == 0 ? 0xffff : next() % 4);
    std::vector<std::pair<LinkId, VertexId>> adj(next() % 30);
    for (std::size_t k = 0; k < adj.size(); ++k) adj[k] = {static_cast<LinkId>(2 * k), base + static_cast<VertexId>(next() % 40)};
    const auto want = static_cast<std::uint32_t>(next() % 4);
    const VertexId bar = base + static_cast<VertexId>(next() % 48);
    const std::uint64_t hash = next() * next();
    std::vector<std::pair<LinkId, VertexId>> matches;
    for (const auto& e : adj) {
      if (row[e.second - base] == want && e.second < bar) matches.push_back(e);
    }
    std::uint64_t digits = hash;
    const auto* pick = clustersim::models::detail::pick_at_distance(adj.data(), adj.data() + adj.size(), row.data(),
                                                                    base, want, bar, digits);
    if (matches.empty()) {
      EXPECT_EQ(pick, nullptr);
      EXPECT_EQ(digits, hash);
    } else {
      ASSERT_NE(pick, nullptr);
      EXPECT_EQ(*pick, matches[hash % matches.size()]);
      EXPECT_EQ(digits, hash / matches.size());
    }
  }
}

TEST(RouteReference, TwinRowsAreTheirTwinsSwappedRows) {
  // Network vertex indices (first_network 10): leaves 0-3 under spines 4 and 5 (0-2 list them in that order,
  // 3 in the other), leaf 6 under spine 4 only, leaves 7 and 8 with no network link (rails). Rows: 0,1,2,3,6,7,8.
  const clustersim::models::VertexId base = 10;
  const std::vector<std::vector<clustersim::models::VertexId>> nbr = {{4, 5}, {4, 5}, {4, 5}, {5, 4}, {0, 1, 2, 3, 6},
                                                                      {0, 1, 2, 3}, {4}, {}, {}};
  std::vector<std::size_t> begin{0};
  std::vector<std::pair<LinkId, VertexId>> adj;
  for (const auto& list : nbr) {
    for (const VertexId w : list) adj.emplace_back(static_cast<LinkId>(adj.size()), base + w);
    begin.push_back(adj.size());
  }
  const std::vector<VertexId> source = {0, 1, 2, 3, 6, 7, 8};
  const std::vector<std::size_t> twin = clustersim::models::detail::twin_rows(begin, adj, source);
  EXPECT_EQ(twin, (std::vector<std::size_t>{0, 0, 0, 3, 4, 5, 5}));  // 3: same set, other order: searched
  const auto bfs = [&](VertexId s) {
    std::vector<std::uint16_t> d(nbr.size(), 0xffff);
    std::vector<VertexId> queue{s};
    d[s] = 0;
    for (std::size_t h = 0; h < queue.size(); ++h) {
      for (const VertexId w : nbr[queue[h]]) {
        if (d[w] == 0xffff) d[w] = static_cast<std::uint16_t>(d[queue[h]] + 1), queue.push_back(w);
      }
    }
    return d;
  };
  for (std::size_t r = 0; r < source.size(); ++r) {
    const std::vector<std::uint16_t> from = bfs(source[twin[r]]);
    const auto row = clustersim::models::detail::swapped_row(from.data(), nbr.size(), source[twin[r]], source[r]);
    EXPECT_EQ(std::vector<std::uint16_t>(row.get(), row.get() + nbr.size()), bfs(source[r])) << "row " << r;
  }
}

}  // namespace
