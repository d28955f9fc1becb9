// One ECMP decision at a network switch without building its candidate list (topology.cpp only; not a public
// header). Issue 31: at 131,072 GPUs a leaf's 32 shortest next hops were pushed into a vector for every cold
// route, to take one of them.
#pragma once

#include <cstdint>
#include <utility>

#include "models/network/topology.hpp"

namespace clustersim::models::detail {

/// The next hop Topology's routing contract takes among the out-links [first, last) of a switch (link id
/// order, as the network adjacency lists them) whose target w has row[w - base] == want and w < bar: with
/// count such links, the (digits % count)-th, and digits becomes digits / count. Exactly what collecting the
/// matching links in order and indexing them does (the same links, the same order, the same digit), without
/// the list: one pass counts, a second stops at the pick. nullptr (digits unchanged) when none matches.
inline const std::pair<LinkId, VertexId>* pick_at_distance(const std::pair<LinkId, VertexId>* first,
                                                           const std::pair<LinkId, VertexId>* last,
                                                           const std::uint16_t* row, VertexId base,
                                                           std::uint32_t want, VertexId bar, std::uint64_t& digits) {
  const auto match = [&](const std::pair<LinkId, VertexId>& e) { return row[e.second - base] == want && e.second < bar; };
  std::uint64_t count = 0;
  for (const auto* e = first; e != last; ++e) count += match(*e) ? 1 : 0;
  if (count == 0) return nullptr;
  std::uint64_t index = digits % count;
  digits /= count;
  for (const auto* e = first;; ++e) {
    if (match(*e) && index-- == 0) return e;
  }
}

}  // namespace clustersim::models::detail
