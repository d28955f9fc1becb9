// The network vertices' links to each other, written down from the fabric's layout (topology.cpp only, and
// tests; not a public header).
//
// Routing (Topology::Impl::compute_route, its distance rows, route_fat_tree.hpp) reads, per network switch or
// zone gateway, its out-links to other network vertices in link id order, and per network vertex the number of
// network vertices its network links reach (the breadth-first search of a distance row stops once all are
// labelled). Issue 31: these were a counting sort over every stored switch-tier link (two passes over 262,144
// links at 131,072 GPUs) and a breadth-first search over the whole switch graph, 15 M instructions of the cold
// step; the builder knows both already:
//
// - Adjacency, zone z's switches (ClusterGraph::tier_pair gives tier pair p, links tier_first + 2p up and
//   + 1 down). Two tiers (leaves or rails, and spines): leaf a's up-links to spines s = 0..tier1-1 are pairs
//   a * tier1 + s; spine s's down-links to leaves a = 0..tier0-1 are the partners of pairs a * tier1 + s.
//   Three tiers: leaf a's up-links are pairs a * half + j; aggregation switch g (pod g / half, j = g % half) has
//   first the down-links to its pod's leaves a (partners of pairs a * half + j), then its up-links, pairs
//   tier0 * half + g * half + c, to cores j * half + c; core j * half + c has the down-links from aggregation
//   switch j of every pod. Each list is in increasing id: the pair index grows along it, and leaf pairs come
//   before aggregation pairs. Gateways: their stored pairs, in id order.
// - Components: a zone's switches are one component (two tiers: every leaf is joined to every spine; three: a
//   leaf to every aggregation switch of its pod, aggregation switch j of every pod to cores j * half .. + half -
//   1, so any two pods meet at a core; one switch alone otherwise), joined to nothing else (InfiniBand does not
//   cross zones); the gateways are one component (every pair of zones is joined), or absent.
//
// tests/network/test_topology_graph.cpp checks both against a counting sort over Topology::link and a
// breadth-first search, on every fabric.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/network/topology_graph.hpp"

namespace clustersim::models::detail {

struct NetworkAdjacency {
  /// CSR over network vertex indices (v - first_network): vertex i's links are adj[begin[i] .. begin[i + 1]).
  std::vector<std::size_t> begin;
  /// (link id, target vertex) of every link between two network vertices, per source in increasing link id.
  std::vector<std::pair<LinkId, VertexId>> adj;
  /// Per network vertex index: the network vertices its network links reach, itself included.
  std::vector<std::uint32_t> component_size;
};

/// The network adjacency and component sizes of `g` (the header comment gives the layout they are read off).
NetworkAdjacency build_network_adjacency(const ClusterGraph& g);

}  // namespace clustersim::models::detail
