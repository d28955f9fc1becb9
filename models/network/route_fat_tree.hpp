// The route between GPUs of two nodes on one zone's fat tree (or single switch) in closed form (topology.cpp
// only; not a public header).
//
// Issue 31: at 131,072 GPUs (GPT-3 175B, TP 8 x PP 8, two-tier fat tree of radix 64) the cold step computed
// ~80,000 routes at ~2,000 instructions each (distance rows, ingress lists, the source node's closed form, the
// walk with its candidate lists). On a fat tree where every node's NICs hang off one leaf (half % nics == 0: a
// node never straddles two leaves) the generic walk of Topology::Impl::compute_route between nodes ns != nd of
// one zone takes three independent stretches, each read here off tables built once:
//
// 1. Source node, GPU l -> leaf Ls. Every exit of ns into the network within the zone leads to Ls (a gateway
//    exit is unreachable within a zone), so every source distance is D + r(v) with D = Ls's distance to dst and
//    r(v) independent of the route: for a transit extra k, r = min over NIC exits b of hops[k][b] + 1
//    (route_exits.hpp); for the GPU, 1 + the least r of its transit out-neighbours. The walk's test
//    distance(w) + 1 == remaining is shift-invariant, so its candidates at each vertex of ns are the template
//    edges (in link id order) to a transit extra w with r(w) + 1 == r(v), or the exit to Ls when r(v) == 1:
//    `src_next`, per local vertex.
// 2. Network, Ls -> Ld. Two tiers: every spine is one hop from Ld, so the candidates at Ls are all its up-links
//    (its network links in spine order, read off ClusterGraph::tier_pair's numbering); the k-th leads to
//    spine k, whose only shortest next hop is its link to Ld, the partner of Ld's k-th up-link. Three tiers, one pod: the same with the pod's aggregation
//    switches. Three tiers, two pods: Ls's k-th up-link to aggregation switch j = k of its pod, whose cores
//    j * half + c are all two hops from Ld (core j * half + c joins aggregation switch j of every pod), taken by
//    its c-th up-link (its last `half` adjacency entries); the core's one shortest next hop is aggregation
//    switch j of Ld's pod (the partner of that switch's c-th up-link), then Ld (the partner of Ld's k-th
//    up-link). Ls == Ld: no network hop.
// 3. Destination node, Ld -> GPU m. Its distances are the template's (Impl::remote_distances[m]): the
//    candidates at Ld are the down-links to the NICs of least distance (NIC order = link id order, `down_nic`),
//    then inside the node the template edges to m or a transit extra one hop nearer (`dst_next`); no exit is
//    ever a candidate there (the walk only meets vertices nearer than Ld).
//
// Each stretch consumes flow_hash's mixed-radix digits as the walk does (count == 1 consumes nothing), in the
// walk's order. tests/network/test_route_fast_path.cpp checks every path against the generic search on every
// pair of many small fabrics and on random pairs of a 16,384-GPU cluster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/network/route_exits.hpp"
#include "models/network/topology_graph.hpp"

namespace clustersim::models::detail {

struct FatTreeRoutes {
  /// One candidate of a walk inside a node: `link` is node 0's link id (moved by node * block) and `to` the
  /// local index it reaches, or to == kExit for the NIC -> leaf link of NIC `link`.
  struct Step {
    static constexpr std::uint32_t kExit = 0xffffffffU;
    LinkId link = 0;
    std::uint32_t to = 0;
  };
  bool enabled = false;               ///< the fabric is a fat tree or single switch, nodes within one leaf
  std::size_t locals = 0;             ///< gpn + extras
  std::int64_t nodes_per_leaf = 0;    ///< half / nics on a fat tree; 0 on a single switch (one leaf per zone)
  /// Source stretch: per local vertex v, its candidates src_next[src_begin[v] .. src_begin[v + 1]) in link id
  /// order; none for a GPU that cannot reach its leaf (the generic search then answers).
  std::vector<std::uint32_t> src_begin;
  std::vector<Step> src_next;
  /// Destination stretch, per destination GPU m: down_nic[down_begin[m] .. down_begin[m + 1]) the NICs Ld may
  /// descend to, in order, down_extra[...] their local indices; dst_next CSR over (m * locals + v) as src_next.
  std::vector<std::uint32_t> down_begin, dst_begin;
  std::vector<Step> dst_next;
  std::vector<std::uint32_t> down_nic, down_extra;

  /// Appends the route src -> dst (GPUs of different nodes of one zone) to `out` and returns true, or returns
  /// false with `out` untouched when this closed form does not apply (the caller searches). The switch-tier
  /// links are g's (ClusterGraph::tier_pair): the network adjacency is not read.
  bool append(const ClusterGraph& g,
              VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash, std::vector<LinkId>& out) const;
  /// Whether append applies to the pair (nodes differ, one zone, tables complete for both ends).
  [[nodiscard]] bool applies(const ClusterGraph& g, VertexId src_gpu, VertexId dst_gpu) const;
};

/// Builds the tables of g's node template. remote_distances[m][v]: hops from local vertex v to GPU m of its
/// node for a flow from another node (Topology::Impl::remote_distances); transit_extra[k]: whether extra k may
/// carry such a flow. Not enabled (enabled == false) unless g is a fat tree or single switch on which every
/// node's NICs share one leaf.
FatTreeRoutes build_fat_tree_routes(const ClusterGraph& g, const NodeExits& exits,
                                    const std::vector<std::vector<std::uint32_t>>& remote_distances,
                                    const std::vector<bool>& transit_extra);

}  // namespace clustersim::models::detail
