// The computed cluster graph (issue 31) against the whole graph built the way the builder did before: every
// link of every node stored in id order (topology.hpp's contract). Topology now computes a node's links and
// vertices from one node's template; every link (source, destination, capacity, latency and class, bit for
// bit), every vertex and every node vertex's out-links must be the stored build's, on every intra-node fabric,
// on fat trees of two and three tiers, rail-optimized fabrics, single switches, NICs on the host and zones.
// The switch-tier links are computed, not stored (ClusterGraph::tier_pair), and the routing tables' network
// adjacency and component sizes are read off the fabric's layout (network_adjacency.hpp): both must be those of
// the stored build's links (a counting sort by source in id order, a breadth-first search), on the same fabrics
// and on every shipped VM size of one NVLink domain.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "models/network/network_adjacency.hpp"
#include "models/network/topology.hpp"
#include "tests/network/network_support.hpp"

namespace {

using namespace clustersim::models;
namespace units = clustersim::units;

/// The graph as the builder stored it before issue 31 (a transcription of that builder for VMs of one
/// NVLink domain each): vertices in id order and links in id order.
struct StoredGraph {
  std::vector<VertexInfo> vertices;
  std::vector<Link> links;
  void pair(std::int64_t a, std::int64_t b, units::BytesPerSecond cap, units::Seconds lat, LinkClass cls) {
    links.push_back(Link{static_cast<VertexId>(a), static_cast<VertexId>(b), cap, lat, cls});
    links.push_back(Link{static_cast<VertexId>(b), static_cast<VertexId>(a), cap, lat, cls});
  }
};

StoredGraph stored_build(const VmSize& vm, const DeviceSpec& device, const TopologyConfig& cfg) {
  StoredGraph s;
  std::vector<ZoneSpec> zones = cfg.zones;
  if (zones.empty()) zones.push_back(ZoneSpec{"zone-0", cfg.nodes});
  const bool multi_zone = zones.size() > 1;
  const bool infiniband = vm.infiniband_ports > 0;
  const int nics = infiniband ? vm.infiniband_ports : 1;
  const int gpn = vm.devices_per_vm;
  const bool rail_nics = infiniband && vm.infiniband_ports == vm.devices_per_vm;
  const bool switched = vm.fabric == IntraNodeFabric::nvswitch || vm.fabric == IntraNodeFabric::nvlink_mesh;
  int k = 0;
  const int off_nvswitch = switched ? k++ : -1;
  const int off_host = k++;
  const int off_nic0 = k;
  k += nics;
  const int off_eth = infiniband && multi_zone ? k++ : -1;
  const int extras = k;
  const auto gpus = static_cast<VertexId>(cfg.nodes * gpn);
  const auto extra = [&](std::int64_t n, int e) { return gpus + static_cast<VertexId>(n * extras + e); };
  const int half = cfg.fat_tree_radix / 2;
  std::vector<int> node_zone;
  for (std::size_t z = 0; z < zones.size(); ++z) node_zone.insert(node_zone.end(), zones[z].nodes, static_cast<int>(z));
  for (std::int64_t n = 0; n < cfg.nodes; ++n) {
    for (int l = 0; l < gpn; ++l) s.vertices.push_back(VertexInfo{VertexKind::gpu, n, node_zone[n], 0});
  }
  for (std::int64_t n = 0; n < cfg.nodes; ++n) {
    for (int e = 0; e < extras; ++e) {
      VertexKind kind = infiniband ? VertexKind::nic : VertexKind::ethernet_nic;
      if (e == off_nvswitch) kind = VertexKind::nvswitch;
      else if (e == off_host) kind = VertexKind::host;
      else if (e == off_eth) kind = VertexKind::ethernet_nic;
      s.vertices.push_back(VertexInfo{kind, n, node_zone[n], 0});
    }
  }
  struct Tiers { std::int64_t t0 = 0, t1 = 0, t2 = 0; VertexId first = 0; std::int64_t first_node = 0; };
  std::vector<Tiers> tiers(zones.size());
  std::int64_t first_node = 0;
  for (std::size_t z = 0; z < zones.size(); ++z) {
    Tiers& f = tiers[z];
    f.first_node = first_node;
    first_node += zones[z].nodes;
    f.first = static_cast<VertexId>(s.vertices.size());
    if (cfg.fabric == FabricKind::single_switch) f.t0 = 1;
    if (cfg.fabric == FabricKind::rail_optimized) { f.t0 = nics; f.t1 = nics > 1 ? half : 0; }
    if (cfg.fabric == FabricKind::fat_tree) {
      f.t0 = (zones[z].nodes * nics + half - 1) / half;
      if (cfg.fat_tree_tiers == 3 && f.t0 > half) { f.t1 = (f.t0 + half - 1) / half * half; f.t2 = std::int64_t{half} * half; }
      else if (f.t0 > 1) f.t1 = half;
    }
    for (int tier = 0; tier < 3; ++tier) {
      for (std::int64_t i = 0; i < (tier == 0 ? f.t0 : tier == 1 ? f.t1 : f.t2); ++i) {
        s.vertices.push_back(VertexInfo{VertexKind::network_switch, -1, static_cast<int>(z), tier});
      }
    }
  }
  const auto first_gateway = static_cast<VertexId>(s.vertices.size());
  if (multi_zone) {
    for (std::size_t z = 0; z < zones.size(); ++z) s.vertices.push_back(VertexInfo{VertexKind::zone_gateway, -1, static_cast<int>(z), 0});
  }
  const units::BytesPerSecond fabric_rate = device.fabric_bandwidth_per_direction;
  const units::BytesPerSecond port_rate = units::to_bytes_per_second(infiniband ? vm.infiniband_port_rate : vm.ethernet_bandwidth);
  const units::BytesPerSecond ethernet_rate = units::to_bytes_per_second(vm.ethernet_bandwidth);
  const LinkClass net_class = infiniband ? LinkClass::infiniband : LinkClass::ethernet;
  const units::Seconds net_latency = infiniband ? kInfinibandHopLatency : kEthernetHopLatency;
  const bool host_is_fabric = vm.fabric == IntraNodeFabric::pcie || vm.fabric == IntraNodeFabric::none;
  const units::BytesPerSecond host_rate = host_is_fabric && fabric_rate.value() > 0.0 ? fabric_rate : kHostPcieBandwidth;
  for (std::int64_t n = 0; n < cfg.nodes; ++n) {
    const auto g0 = static_cast<VertexId>(n * gpn);
    if (switched) {
      for (int l = 0; l < gpn; ++l) s.pair(g0 + l, extra(n, off_nvswitch), fabric_rate, kNvlinkHopLatency, LinkClass::nvlink);
    } else if (vm.fabric == IntraNodeFabric::nvlink_bridge) {
      for (int l = 0; l + 1 < gpn; l += 2) s.pair(g0 + l, g0 + l + 1, fabric_rate, kNvlinkHopLatency, LinkClass::nvlink);
    } else if (vm.fabric == IntraNodeFabric::infinity_fabric && gpn > 1) {
      for (int a = 0; a < gpn; ++a) {
        for (int b = a + 1; b < gpn; ++b) {
          s.pair(g0 + a, g0 + b, fabric_rate / static_cast<double>(gpn - 1), kInfinityFabricLatency, LinkClass::infinity_fabric);
        }
      }
    }
    for (int l = 0; l < gpn; ++l) s.pair(g0 + l, extra(n, off_host), host_rate, kPcieHopLatency, LinkClass::pcie);
    for (int i = 0; i < nics; ++i) {
      s.pair(rail_nics ? g0 + i : extra(n, off_host), extra(n, off_nic0 + i), port_rate, kPcieHopLatency, LinkClass::pcie);
    }
    if (off_eth >= 0) s.pair(extra(n, off_host), extra(n, off_eth), ethernet_rate, kPcieHopLatency, LinkClass::pcie);
  }
  for (std::size_t z = 0; z < zones.size(); ++z) {
    const Tiers& f = tiers[z];
    for (std::int64_t ln = 0; ln < zones[z].nodes; ++ln) {
      for (int i = 0; i < nics; ++i) {
        std::int64_t sw = 0;
        if (cfg.fabric == FabricKind::fat_tree) sw = (ln * nics + i) / half;
        if (cfg.fabric == FabricKind::rail_optimized) sw = i;
        s.pair(extra(f.first_node + ln, off_nic0 + i), f.first + static_cast<VertexId>(sw), port_rate, net_latency, net_class);
      }
    }
    const VertexId t1 = f.first + static_cast<VertexId>(f.t0);
    if (f.t2 > 0) {
      const units::BytesPerSecond up = port_rate / cfg.oversubscription;
      for (std::int64_t a = 0; a < f.t0; ++a) {
        for (int j = 0; j < half; ++j) s.pair(f.first + a, t1 + static_cast<VertexId>(a / half * half + j), up, net_latency, net_class);
      }
      for (std::int64_t agg = 0; agg < f.t1; ++agg) {
        for (int c = 0; c < half; ++c) {
          s.pair(t1 + agg, t1 + static_cast<VertexId>(f.t1 + agg % half * half + c), up, net_latency, net_class);
        }
      }
    } else if (f.t1 > 0) {
      const double down = cfg.fabric == FabricKind::fat_tree ? half : static_cast<double>(std::max<std::int64_t>(zones[z].nodes, half));
      const units::BytesPerSecond up = port_rate * down / cfg.oversubscription / static_cast<double>(f.t1);
      for (std::int64_t a = 0; a < f.t0; ++a) {
        for (std::int64_t sp = 0; sp < f.t1; ++sp) s.pair(f.first + a, t1 + sp, up, net_latency, net_class);
      }
    }
  }
  if (multi_zone) {
    const units::BytesPerSecond per_node = cfg.inter_zone_bandwidth_per_node.value_or(ethernet_rate);
    for (std::int64_t n = 0; n < cfg.nodes; ++n) {
      s.pair(extra(n, off_eth >= 0 ? off_eth : off_nic0), first_gateway + node_zone[n], ethernet_rate, kEthernetHopLatency,
             LinkClass::ethernet);
    }
    for (std::size_t a = 0; a < zones.size(); ++a) {
      for (std::size_t b = a + 1; b < zones.size(); ++b) {
        s.pair(first_gateway + static_cast<std::int64_t>(a), first_gateway + static_cast<std::int64_t>(b), per_node * static_cast<double>(std::min(zones[a].nodes, zones[b].nodes)),
               cfg.inter_zone_latency, LinkClass::inter_zone);
      }
    }
  }
  return s;
}

/// The topology's network adjacency (network_adjacency.hpp) against the stored build's links between network
/// vertices, each vertex's in id order, and its component sizes against a breadth-first search over them.
void expect_same_network_adjacency(const Topology& t, const StoredGraph& s) {
  VertexId first_network = 0;
  while (first_network < s.vertices.size() && s.vertices[first_network].node >= 0) ++first_network;
  const std::size_t nn = s.vertices.size() - first_network;
  std::vector<std::vector<std::pair<LinkId, VertexId>>> adj(nn);
  for (LinkId id = 0; id < s.links.size(); ++id) {
    const Link& l = s.links[id];
    if (l.src >= first_network && l.dst >= first_network) adj[l.src - first_network].emplace_back(id, l.dst);
  }
  const clustersim::models::detail::NetworkAdjacency& net = t.network_adjacency();
  ASSERT_EQ(net.begin.size(), nn + 1);
  ASSERT_EQ(net.component_size.size(), nn);
  ASSERT_EQ(net.begin[nn], net.adj.size());
  for (std::size_t w = 0; w < nn; ++w) {
    ASSERT_LE(net.begin[w], net.begin[w + 1]);
    const std::vector<std::pair<LinkId, VertexId>> got(net.adj.begin() + static_cast<std::ptrdiff_t>(net.begin[w]),
                                                       net.adj.begin() + static_cast<std::ptrdiff_t>(net.begin[w + 1]));
    ASSERT_EQ(got, adj[w]) << "network vertex " << first_network + w;
  }
  std::vector<std::size_t> component(nn, nn), sizes;
  for (std::size_t root = 0; root < nn; ++root) {
    if (component[root] != nn) continue;
    std::vector<std::size_t> queue{root};
    component[root] = sizes.size();
    for (std::size_t head = 0; head < queue.size(); ++head) {
      for (const auto& [id, w] : adj[queue[head]]) {
        if (component[w - first_network] == nn) {
          component[w - first_network] = sizes.size();
          queue.push_back(w - first_network);
        }
      }
    }
    sizes.push_back(queue.size());
  }
  for (std::size_t w = 0; w < nn; ++w) {
    ASSERT_EQ(net.component_size[w], sizes[component[w]]) << "network vertex " << first_network + w;
  }
}

void expect_same_graph(const VmSize& vm, const TopologyConfig& cfg) {
  const auto& catalog = clustersim::testing::shipped_catalog();
  const Topology t = build_topology(vm, catalog.device(vm.device), cfg);
  const StoredGraph s = stored_build(vm, catalog.device(vm.device), cfg);
  ASSERT_EQ(t.vertex_count(), s.vertices.size());
  ASSERT_EQ(t.link_count(), s.links.size());
  for (VertexId v = 0; v < s.vertices.size(); ++v) {
    const VertexInfo got = t.vertex(v);
    const VertexInfo& want = s.vertices[v];
    ASSERT_TRUE(got.kind == want.kind && got.node == want.node && got.zone == want.zone && got.tier == want.tier)
        << "vertex " << v;
  }
  std::vector<std::vector<LinkId>> out(s.vertices.size());
  for (LinkId id = 0; id < s.links.size(); ++id) {
    const Link got = t.link(id);
    const Link& want = s.links[id];
    ASSERT_EQ(got.src, want.src) << "link " << id;
    ASSERT_EQ(got.dst, want.dst) << "link " << id;
    ASSERT_EQ(std::bit_cast<std::uint64_t>(got.capacity.value()), std::bit_cast<std::uint64_t>(want.capacity.value()))
        << "link " << id;
    ASSERT_EQ(std::bit_cast<std::uint64_t>(got.latency.value()), std::bit_cast<std::uint64_t>(want.latency.value()))
        << "link " << id;
    ASSERT_EQ(got.link_class, want.link_class) << "link " << id;
    ASSERT_EQ(t.is_inter_zone(id), want.link_class == LinkClass::inter_zone) << "link " << id;
    out[want.src].push_back(id);
  }
  for (VertexId v = 0; v < s.vertices.size(); ++v) {
    if (s.vertices[v].node < 0) {
      EXPECT_THROW((void)t.out_links(v), std::invalid_argument);
      continue;
    }
    ASSERT_EQ(t.out_links(v), out[v]) << "vertex " << v;
  }
  ASSERT_NO_FATAL_FAILURE(expect_same_network_adjacency(t, s));
  EXPECT_THROW((void)t.link(static_cast<LinkId>(s.links.size())), std::out_of_range);
  EXPECT_THROW((void)t.vertex(static_cast<VertexId>(s.vertices.size())), std::out_of_range);
}

const VmSize& vm(const std::string& name) { return clustersim::testing::shipped_catalog().vm_size(name); }

TopologyConfig config(std::int64_t nodes, FabricKind fabric, int radix = 64) {
  TopologyConfig cfg = clustersim::testing::topology_config(nodes, fabric);
  cfg.fat_tree_radix = radix;
  return cfg;
}

TEST(TopologyGraph, FatTreesOfTwoAndThreeTiersAreTheStoredBuild) {
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), config(24, FabricKind::fat_tree, 8)));
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96amsr_A100_v4"), config(130, FabricKind::fat_tree)));
  TopologyConfig three = config(21, FabricKind::fat_tree, 16);
  three.fat_tree_tiers = 3;
  three.oversubscription = 2.0;
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), three));
}

TEST(TopologyGraph, RailsSingleSwitchesAndEveryIntraNodeFabricAreTheStoredBuild) {
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), config(12, FabricKind::rail_optimized, 8)));
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_MI300X_v5"), config(6, FabricKind::single_switch)));
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_NC96ads_A100_v4"), config(9, FabricKind::fat_tree, 4)));
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND40rs_v2"), config(5, FabricKind::fat_tree, 4)));
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_NC64as_T4_v3"), config(7, FabricKind::rail_optimized, 4)));
  VmSize host_nics = vm("Standard_ND96isr_H100_v5");
  host_nics.infiniband_ports = 4;
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(host_nics, config(10, FabricKind::fat_tree, 8)));
}

TEST(TopologyGraph, ZonesAreTheStoredBuild) {
  TopologyConfig zoned = config(18, FabricKind::fat_tree, 8);
  zoned.zones = {{"a", 6}, {"b", 7}, {"c", 5}};
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), zoned));
  zoned.inter_zone_bandwidth_per_node = units::gigabytes_per_second(3.0);
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_NC64as_T4_v3"), zoned));
  zoned.fabric = FabricKind::rail_optimized;
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), zoned));
}

TEST(TopologyGraph, PartFilledPodsOversubscriptionOneLeafAndZonedTiersAreTheStoredBuild) {
  TopologyConfig three = config(100, FabricKind::fat_tree, 8);  // 400 NICs, 100 leaves, 25 pods, the last part-filled
  three.fat_tree_tiers = 3;
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), three));
  three.zones = {{"a", 37}, {"b", 2}, {"c", 61}};  // a three-tier zone, a one-leaf zone, a three-tier zone
  three.oversubscription = 3.0;
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), three));
  TopologyConfig two = config(70, FabricKind::fat_tree, 16);
  two.oversubscription = 1.5;
  two.zones = {{"a", 33}, {"b", 1}, {"c", 36}};
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96amsr_A100_v4"), two));
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96amsr_A100_v4"), config(4, FabricKind::fat_tree, 64)));
  TopologyConfig rails = config(40, FabricKind::rail_optimized, 16);
  rails.oversubscription = 2.0;
  rails.zones = {{"a", 3}, {"b", 37}};
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96isr_H100_v5"), rails));
  TopologyConfig single = config(11, FabricKind::single_switch);
  single.zones = {{"a", 5}, {"b", 6}};
  EXPECT_NO_FATAL_FAILURE(expect_same_graph(vm("Standard_ND96amsr_A100_v4"), single));
}

TEST(TopologyGraph, EveryShippedVmSizeOfOneDomainIsTheStoredBuild) {
  int shapes = 0;
  for (const auto& [name, size] : clustersim::testing::shipped_catalog().vm_sizes()) {
    if (size.nvlink_domain_vms > 1) continue;  // stored_build transcribes VMs of one NVLink domain each
    for (const FabricKind fabric : {FabricKind::fat_tree, FabricKind::rail_optimized, FabricKind::single_switch}) {
      TopologyConfig cfg = config(9, fabric, 8);
      EXPECT_NO_FATAL_FAILURE(expect_same_graph(size, cfg)) << name;
      cfg.fat_tree_tiers = 3;
      cfg.zones = {{"a", 4}, {"b", 5}};
      EXPECT_NO_FATAL_FAILURE(expect_same_graph(size, cfg)) << name << " in two zones";
    }
    if (::testing::Test::HasFailure()) return;
    ++shapes;
  }
  EXPECT_GE(shapes, 20);
}

}  // namespace
