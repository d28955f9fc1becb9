// Distance rows that are another row with two entries swapped (topology.cpp only; not a public header).
//
// Issue 31: routing needs, per destination switch f, the hop distances from f to every network vertex (a
// breadth-first search over the switch graph; at 131,072 GPUs 258 rows of 4,128 vertices, 33 M instructions
// of the cold step). Two switches f and f' with the same set of network neighbours are twins: exchanging them
// (and nothing else) maps every network link to a network link (a link f - u becomes f' - u, which exists as
// u is a neighbour of f'; f - f' cannot exist, f' not being its own neighbour), so it preserves every hop
// distance: d(f', w) = d(f, t(w)) where t swaps f and f'. Every leaf of a two-tier fat tree, every rail
// switch of a rail-optimized fabric, are twins of their siblings. So f's row is searched once and f''s row is
// that row with its entries at f and f' exchanged: exact, and a copy instead of a search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/network/topology.hpp"

namespace clustersim::models::detail {

/// Per row r (row_source[r]: its network vertex index; adjacency: CSR over network vertex indices, in link id
/// order): the row r's twins are copied from, r itself or twin_rows[r - 1] when r's vertex lists the same
/// neighbours in the same order as row r - 1's (so the same set: twins; siblings are numbered consecutively
/// on every fabric here, a leaf's up-links in spine order). A twin elsewhere is not sought (a search instead,
/// still exact). Cost: one comparison of two neighbour lists per row.
std::vector<std::size_t> twin_rows(const std::vector<std::size_t>& adj_begin,
                                   const std::vector<std::pair<LinkId, VertexId>>& adj,
                                   const std::vector<VertexId>& row_source);

/// The row of network vertex index b from the row of its twin a (size n): a copy with entries a and b swapped.
inline std::unique_ptr<std::uint16_t[]> swapped_row(const std::uint16_t* row_a, std::size_t n, VertexId a, VertexId b) {
  auto row = std::make_unique_for_overwrite<std::uint16_t[]>(n);
  for (std::size_t w = 0; w < n; ++w) row[w] = row_a[w];
  std::swap(row[a], row[b]);
  return row;
}

}  // namespace clustersim::models::detail
