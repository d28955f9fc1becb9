// A node's ways out into the network, read once off node 0's template (topology.cpp only; not a public header).
//
// Issue 31: a route between GPUs of two nodes spent most of its ~8,100 instructions (131,072 GPUs, cold) on
// its two end nodes, not on the switches: a fixed point relaxing the source node's NICs and host against the
// network (every out-link of every one of them, twice), and a scan of every out-link of every vertex of the
// destination node for the ones into the network. Both depend on the node only through the network vertices
// its exits reach, so the node-local part is computed once here from the template:
//
// - exits: the node's links into the network (NIC -> switch, Ethernet NIC -> zone gateway) in the order the
//   route search meets them: by local index of the node vertex, then by the template's edge order (which is
//   link-id order; ClusterGraph::for_each_out);
// - hops[k][b]: hops from extra k to the vertex of exit b for a flow leaving the node, through the node's
//   vertices a flow between nodes may cross (Topology::Impl::transit(v, false): its host, NICs and Ethernet NIC;
//   never a GPU, never an NVSwitch), kInf where none.
//
// Why the source distances are exact: Topology::Impl::compute_route's fixed point computes, for every transit
// extra v of the source node, the shortest distance to the destination over links v -> w where w is a transit
// extra of the node (GPUs are skipped as next hops) or a network vertex, whose distance is net_distance(w).
// The node's vertices then reach the network only through its exits, so that distance is the minimum over
// exits b of hops[v][b] + 1 + net_distance(target of b) (a shortest path within the node to the exit's vertex,
// then the exit, then the network's shortest path): the same least solution, computed without iterating.
// The source GPU is never a next hop, so its distance is one relaxation over its own out-links afterwards.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/network/topology_graph.hpp"

namespace clustersim::models::detail {

struct NodeExits {
  static constexpr std::uint32_t kInf = 0xffffffffU;
  /// One link out of a node: the extra it leaves from (index k, local index gpn + k) and its template edge
  /// (kind nic_switch or ethernet_gateway).
  struct Exit {
    int extra = 0;
    TemplateEdge edge;
  };
  std::vector<Exit> exits;           ///< in (extra, link id) order
  std::vector<int> transit_extras;   ///< extras a flow between nodes may cross, in increasing index
  std::vector<std::uint32_t> hops;   ///< extras x exits, row-major: hops[k * exits.size() + b]

  /// Distance to the destination from extra k (transit) of a node whose exit b leads on at via[b] (1 + its
  /// target's network distance, or inf): the minimum over b of hops + via[b], inf where no term is finite.
  [[nodiscard]] std::uint32_t extra_distance(std::size_t k, const std::uint32_t* via, std::uint32_t inf) const {
    const std::size_t nb = exits.size();
    const std::uint32_t* h = hops.data() + k * nb;
    std::uint32_t d = inf;
    for (std::size_t b = 0; b < nb; ++b) {
      if (h[b] != kInf && via[b] != inf) d = std::min(d, h[b] + via[b]);
    }
    return d;
  }
  /// Sets via[b] = 1 + net_distance(target of exit b on node n), or inf where net_distance is inf (a callable
  /// VertexId -> std::uint32_t; consecutive exits with one target, the NICs of one leaf, ask it once).
  template <class NetDistance>
  void fill_via(const ClusterGraph& g, std::int64_t n, NetDistance&& net_distance, std::uint32_t inf,
                std::vector<std::uint32_t>& via) const {
    via.resize(exits.size());
    VertexId last_target = 0;
    std::uint32_t last = inf;
    for (std::size_t b = 0; b < exits.size(); ++b) {
      const VertexId f = target(g, exits[b], n);
      if (b == 0 || f != last_target) last = net_distance(f);
      last_target = f;
      via[b] = last == inf ? inf : last + 1;
    }
  }
  /// The network vertex exit `x` of node n leads to.
  [[nodiscard]] static VertexId target(const ClusterGraph& g, const Exit& x, std::int64_t n) {
    if (x.edge.kind == TemplateEdge::Kind::nic_switch) return g.nic_switch(n, x.edge.nic);
    return g.first_gateway + static_cast<VertexId>(g.node_zone[static_cast<std::size_t>(n)]);
  }
  /// The link node n -> network of exit `x` (its partner, id ^ 1, comes back down).
  [[nodiscard]] static LinkId link(const ClusterGraph& g, const Exit& x, std::int64_t n) {
    if (x.edge.kind == TemplateEdge::Kind::nic_switch) return g.nic_switch_link(n, x.edge.nic);
    return g.eth_first + static_cast<LinkId>(2 * n);
  }
};

/// Builds the exits of g's node template and their hop table. transit_extra[k] (size g.extras): whether extra
/// k may carry a flow between GPUs of two nodes (Topology::Impl::transit(extra k, same_node = false)).
NodeExits build_node_exits(const ClusterGraph& g, const std::vector<bool>& transit_extra);

}  // namespace clustersim::models::detail
