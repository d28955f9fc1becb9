// The per-thread cache of computed routes behind Topology::append_route (topology.cpp only; not a public header).
//
// Routes are a pure function of (topology, src, dst, flow_hash), and collective schedules ask for the same pairs
// again and again (ring, tree and hierarchical schedules of every layout share their neighbour pairs; a 1,024-GPU
// layout search asks 440 K routes over 32 K distinct pairs). Each thread keeps its own cache of the last topology
// it routed on: no locks, and a sweep's threads never wait on each other. Open addressing with linear probing
// over a power-of-two table, at most half full; bounded: cleared when it reaches kEntries paths. A cache changes
// no route, only how often one is computed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "models/network/topology.hpp"
#include "models/splitmix64.hpp"

namespace clustersim::models::detail {

struct RouteCache {
  static constexpr VertexId kNoVertex = std::numeric_limits<VertexId>::max();
  static constexpr std::size_t kEntries = std::size_t{1} << 20;
  struct Slot {
    VertexId src = kNoVertex;  ///< kNoVertex: empty
    VertexId dst = 0;
    std::uint64_t hash = 0;
    std::uint32_t offset = 0;  ///< into links
    std::uint32_t length = 0;
  };
  std::uint64_t instance = 0;  ///< Topology::Impl::instance of the topology cached; 0: none
  std::size_t size = 0;
  std::vector<Slot> slots;
  std::vector<LinkId> links;   ///< every cached path, back to back

  [[nodiscard]] std::size_t home(VertexId src, VertexId dst, std::uint64_t hash) const {
    return static_cast<std::size_t>(splitmix64((static_cast<std::uint64_t>(src) << 32 | dst) ^ splitmix64(hash))) &
           (slots.size() - 1);
  }
  /// Empties the cache and keys it to topology `id`.
  void reset(std::uint64_t id) {
    instance = id;
    size = 0;
    slots.assign(1024, Slot{});
    links.clear();
  }
  /// Doubles the table, re-placing every entry.
  void grow() {
    std::vector<Slot> old(slots.size() * 2);
    old.swap(slots);
    for (const Slot& e : old) {
      if (e.src == kNoVertex) continue;
      std::size_t i = home(e.src, e.dst, e.hash);
      while (slots[i].src != kNoVertex) i = (i + 1) & (slots.size() - 1);
      slots[i] = e;
    }
  }
};

/// The routes inside one node that do not depend on the flow hash, per thread and topology (behind
/// Topology::append_route). A route between two GPUs of node n is node 0's route between the same local GPUs
/// moved by n nodes: the search inside a node (Topology::Impl::node_distances and the walk of compute_route)
/// reads only the node's template links, moved by whole nodes, and never enters the network (a network vertex
/// is no node's, and at distance kInf for a flow inside a node); the links come in the same order, so every
/// hop has the same candidates in the same order. When every hop of node 0's route had a single candidate,
/// the hash picked nothing (candidate hash % 1 is the only one), so the route is every hash's. An all-to-all
/// of 256 GPUs asks 64 K such routes (every transfer to another local index is relayed through the sender's
/// node, Builder::add_p2p), each with its own hash: the per-hash cache above never hits them again.
struct NodeRouteCache {
  static constexpr std::uint32_t kUnknown = std::numeric_limits<std::uint32_t>::max();  ///< not computed yet
  static constexpr std::uint32_t kHashed = kUnknown - 1;  ///< depends on the hash (or leaves the template)
  std::uint64_t instance = 0;  ///< Topology::Impl::instance of the topology cached; 0: none
  std::size_t gpn = 0;
  /// Per (local src x gpn + local dst): the offset of node 0's route in `links`, or kUnknown / kHashed.
  std::vector<std::uint32_t> first;
  std::vector<std::uint32_t> length;
  std::vector<LinkId> links;  ///< node 0's cached routes, back to back

  /// Empties the cache and keys it to topology `id` of `gpus_per_node` GPUs per node.
  void reset(std::uint64_t id, std::size_t gpus_per_node) {
    instance = id;
    gpn = gpus_per_node;
    first.assign(gpn * gpn, kUnknown);
    length.assign(gpn * gpn, 0);
    links.clear();
  }
};

}  // namespace clustersim::models::detail
