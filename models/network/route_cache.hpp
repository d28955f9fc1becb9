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

}  // namespace clustersim::models::detail
