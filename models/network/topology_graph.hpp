// The cluster graph behind Topology (topology.cpp only; not a public header): every vertex and link of
// topology.hpp's contract, with the links of each node computed from one node's template instead of stored
// (issue 31: a 131,072-GPU cluster has 1.3 million links and 300,000 node vertices; stored, with their
// out-link index, they were 60 MB and a fifth of its cold step).
//
// Link ids are those of topology.hpp, in the order the builder adds them:
//   [0, intra_end)                 per node n, the same block of `tmpl_links.size()` links as node 0's, its
//                                  vertices moved to node n (intra-node fabric, GPU <-> host, NIC attachment,
//                                  host <-> front-end Ethernet NIC);
//   per zone z, in zone order:     its nodes' NIC <-> switch pairs (node-major, NIC-minor), then its switch
//                                  tiers' links (ClusterGraph::tier_pair: leaves x radix/2 at most; computed,
//                                  not stored: 262,144 links, 8 MB, at 131,072 GPUs);
//   [eth_first, pairs_first)       with several zones, per node its Ethernet NIC <-> zone gateway pair;
//   [pairs_first, link_count)      with several zones, the gateway pairs (stored).
// Every physical link is the pair 2k (a -> b) and 2k+1 (b -> a).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/network/topology.hpp"

namespace clustersim::models::detail {

/// A link of node 0's template as seen from one of its vertices: where it leads and what kind of section
/// its id lies in (the id and target move with the node differently for each).
struct TemplateEdge {
  enum class Kind : std::uint8_t { intra, nic_switch, ethernet_gateway };
  VertexId target = 0;  ///< intra: node 0's vertex
  LinkId id = 0;        ///< intra: node 0's link id
  int nic = 0;          ///< nic_switch: the NIC's index
  Kind kind = Kind::intra;
};

/// One zone's node range, switches and link sections.
struct ZoneSection {
  std::int64_t first_node = 0;
  std::int64_t node_count = 0;
  VertexId first_switch = 0;
  LinkId nic_first = 0;          ///< first NIC <-> switch link of the zone
  LinkId tier_first = 0;         ///< first switch-tier link; they end at tier_end
  LinkId tier_end = 0;
  std::int64_t tier0 = 0;        ///< leaves (rails, the single switch), then tier-1 and tier-2 switches
  std::int64_t tier1 = 0;
  std::int64_t tier2 = 0;
  units::BytesPerSecond up;      ///< capacity of every switch-tier link of the zone (topology.cpp's builder)
};

struct ClusterGraph {
  // Shape.
  std::int64_t nodes = 0;
  int gpn = 0;                   ///< GPUs per node
  VertexId gpus = 0;             ///< GPU vertices are 0..gpus-1
  int extras = 0;                ///< non-GPU vertices per node, at gpus + node * extras + k
  int nics = 0;
  int off_nic0 = 0;
  int eth_offset = -1;           ///< the extra joined to the zone gateway (several zones), -1 without
  FabricKind fabric = FabricKind::fat_tree;
  int half = 1;                  ///< radix / 2: NICs per fat-tree leaf
  VertexId first_network = 0;    ///< network switches, then gateways, up to vertex_count
  VertexId first_gateway = 0;    ///< == vertex_count without several zones
  std::vector<VertexKind> extra_kind;   ///< per extra offset k
  std::vector<int> node_zone;           ///< per node
  std::vector<VertexInfo> network_info; ///< per network vertex (index v - first_network)
  // Links.
  std::vector<Link> tmpl_links;         ///< node 0's block: ids 0..size-1
  LinkId intra_end = 0;
  std::vector<ZoneSection> zone_sections;
  LinkId eth_first = 0;
  LinkId pairs_first = 0;
  LinkId link_total = 0;
  std::vector<Link> stored;             ///< the gateway pairs: link pairs_first + i is stored[i]
  units::BytesPerSecond port_rate;
  units::Seconds net_latency;
  LinkClass net_class = LinkClass::infiniband;
  units::BytesPerSecond ethernet_rate;
  // Out-links of node 0's vertices (GPUs 0..gpn-1, then extras), in link id order: CSR by local index.
  std::vector<std::size_t> tmpl_begin;
  std::vector<TemplateEdge> tmpl_edges;

  [[nodiscard]] std::size_t vertex_count() const { return first_gateway + (gateways() ? zone_sections.size() : 0); }
  [[nodiscard]] bool gateways() const { return eth_offset >= 0; }
  [[nodiscard]] VertexId extra(std::int64_t node, int k) const {
    return gpus + static_cast<VertexId>(node * extras + k);
  }
  [[nodiscard]] std::int64_t node_of(VertexId v) const {
    if (v < gpus) return v / static_cast<VertexId>(gpn);
    if (v < first_network) return (v - gpus) / static_cast<VertexId>(extras);
    return -1;
  }
  [[nodiscard]] VertexInfo info(VertexId v) const {
    if (v < gpus) {
      const std::int64_t n = v / static_cast<VertexId>(gpn);
      return VertexInfo{VertexKind::gpu, n, node_zone[static_cast<std::size_t>(n)], 0};
    }
    if (v < first_network) {
      const std::int64_t n = (v - gpus) / static_cast<VertexId>(extras);
      const int k = static_cast<int>((v - gpus) % static_cast<VertexId>(extras));
      return VertexInfo{extra_kind[static_cast<std::size_t>(k)], n, node_zone[static_cast<std::size_t>(n)], 0};
    }
    return network_info[v - first_network];
  }
  /// A vertex's kind alone (info(v).kind without the node's zone).
  [[nodiscard]] VertexKind kind_of(VertexId v) const {
    if (v < gpus) return VertexKind::gpu;
    if (v < first_network) return extra_kind[(v - gpus) % static_cast<VertexId>(extras)];
    return network_info[v - first_network].kind;
  }
  /// Node 0's vertex `v0` moved to node n.
  [[nodiscard]] VertexId move(VertexId v0, std::int64_t n) const {
    if (v0 < gpus) return v0 + static_cast<VertexId>(n * gpn);
    return v0 + static_cast<VertexId>(n * extras);
  }
  /// The switch NIC `nic` of node n hangs off.
  [[nodiscard]] VertexId nic_switch(std::int64_t n, int nic) const {
    const ZoneSection& z = zone_sections[static_cast<std::size_t>(node_zone[static_cast<std::size_t>(n)])];
    std::int64_t sw = 0;
    if (fabric == FabricKind::fat_tree) sw = ((n - z.first_node) * nics + nic) / half;
    else if (fabric == FabricKind::rail_optimized) sw = nic;
    return z.first_switch + static_cast<VertexId>(sw);
  }
  /// The NIC -> switch link of NIC `nic` of node n (its partner, + 1, goes down).
  [[nodiscard]] LinkId nic_switch_link(std::int64_t n, int nic) const {
    const ZoneSection& z = zone_sections[static_cast<std::size_t>(node_zone[static_cast<std::size_t>(n)])];
    return z.nic_first + static_cast<LinkId>(2 * ((n - z.first_node) * nics + nic));
  }
  /// The switches joined by zone z's switch-tier pair p (links tier_first + 2p, lower -> upper, and + 1, back),
  /// in the builder's order: two tiers (leaves or rails, and spines), leaf p / tier1 <-> spine p % tier1; three
  /// tiers, first each leaf a's `half` up-links to the aggregation switches a / half * half + j of its pod, then
  /// each aggregation switch g's `half` up-links to cores g % half * half + c (Al-Fares et al.'s k-ary tree).
  [[nodiscard]] std::pair<VertexId, VertexId> tier_pair(const ZoneSection& z, std::int64_t p) const {
    const VertexId tier1_first = z.first_switch + static_cast<VertexId>(z.tier0);
    if (z.tier2 == 0) {
      return {z.first_switch + static_cast<VertexId>(p / z.tier1), tier1_first + static_cast<VertexId>(p % z.tier1)};
    }
    const std::int64_t leaf_pairs = z.tier0 * half;
    if (p < leaf_pairs) {
      const std::int64_t a = p / half;
      return {z.first_switch + static_cast<VertexId>(a),
              tier1_first + static_cast<VertexId>(a / half * half + p % half)};
    }
    const std::int64_t agg = (p - leaf_pairs) / half, c = (p - leaf_pairs) % half;
    return {tier1_first + static_cast<VertexId>(agg),
            tier1_first + static_cast<VertexId>(z.tier1 + agg % half * half + c)};
  }
  /// Link `id` (id < link_total).
  [[nodiscard]] Link link(LinkId id) const {
    if (id < intra_end) {
      const auto block = static_cast<LinkId>(tmpl_links.size());
      const std::int64_t n = id / block;
      Link l = tmpl_links[id % block];
      l.src = move(l.src, n);
      l.dst = move(l.dst, n);
      return l;
    }
    if (id >= pairs_first) return stored[id - pairs_first];
    if (id >= eth_first) {
      const std::int64_t n = (id - eth_first) / 2;
      const VertexId a = extra(n, eth_offset);
      const VertexId b = first_gateway + static_cast<VertexId>(node_zone[static_cast<std::size_t>(n)]);
      return (id & 1U) == 0 ? Link{a, b, ethernet_rate, kEthernetHopLatency, LinkClass::ethernet}
                            : Link{b, a, ethernet_rate, kEthernetHopLatency, LinkClass::ethernet};
    }
    for (const ZoneSection& z : zone_sections) {
      if (id >= z.tier_end) continue;
      if (id >= z.tier_first) {
        const auto [lower, upper] = tier_pair(z, (id - z.tier_first) / 2);
        return (id & 1U) == 0 ? Link{lower, upper, z.up, net_latency, net_class}
                              : Link{upper, lower, z.up, net_latency, net_class};
      }
      const std::int64_t pair = (id - z.nic_first) / 2;
      const std::int64_t n = z.first_node + pair / nics;
      const int nic = static_cast<int>(pair % nics);
      const VertexId a = extra(n, off_nic0 + nic);
      const VertexId b = nic_switch(n, nic);
      return (id & 1U) == 0 ? Link{a, b, port_rate, net_latency, net_class}
                            : Link{b, a, port_rate, net_latency, net_class};
    }
    throw std::out_of_range("Topology::link: no link " + std::to_string(id));
  }
  /// Link `id` of zone 0 moved with its nodes by `by_nodes` nodes, a whole number of the fabric's units (leaves
  /// on two tiers, pods on three: TranslationSymmetry::unit_nodes): node links move by whole node blocks, NIC
  /// links by whole nodes, leaf up-links by whole leaves, aggregation up-links by whole pods; spines and cores
  /// stay. A link whose moved vertices do not exist is not asked for (the caller moves routes between nodes
  /// of whole units).
  [[nodiscard]] LinkId move_link(LinkId id, std::int64_t by_nodes) const {
    if (id < intra_end) return id + static_cast<LinkId>(by_nodes * static_cast<std::int64_t>(tmpl_links.size()));
    const ZoneSection& z = zone_sections.front();
    if (id < z.tier_first) return id + static_cast<LinkId>(2 * by_nodes * nics);
    const std::int64_t leaves = by_nodes * nics / half;
    if (z.tier2 == 0) return id + static_cast<LinkId>(2 * leaves * z.tier1);
    if (id < z.tier_first + 2 * z.tier0 * half) return id + static_cast<LinkId>(2 * leaves * half);
    return id + static_cast<LinkId>(2 * (leaves / half) * half * half);  // pods x aggregation switches x cores
  }
  /// Calls f(link id, target) for every out-link of node-local vertex v (a GPU or an extra), in id order.
  template <class F>
  void for_each_out(VertexId v, F&& f) const {
    std::int64_t n = 0;
    std::size_t local = 0;
    if (v < gpus) {
      n = v / static_cast<VertexId>(gpn);
      local = v % static_cast<VertexId>(gpn);
    } else {
      n = (v - gpus) / static_cast<VertexId>(extras);
      local = static_cast<std::size_t>(gpn) + (v - gpus) % static_cast<VertexId>(extras);
    }
    const auto block = static_cast<LinkId>(tmpl_links.size());
    for (std::size_t k = tmpl_begin[local]; k < tmpl_begin[local + 1]; ++k) {
      const TemplateEdge& e = tmpl_edges[k];
      switch (e.kind) {
        case TemplateEdge::Kind::intra: f(e.id + static_cast<LinkId>(n) * block, move(e.target, n)); break;
        case TemplateEdge::Kind::nic_switch: f(nic_switch_link(n, e.nic), nic_switch(n, e.nic)); break;
        case TemplateEdge::Kind::ethernet_gateway:
          f(eth_first + static_cast<LinkId>(2 * n),
            first_gateway + static_cast<VertexId>(node_zone[static_cast<std::size_t>(n)]));
          break;
      }
    }
  }
};

}  // namespace clustersim::models::detail
