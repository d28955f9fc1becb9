// twin_rows: see route_rows.hpp.
#include "models/network/route_rows.hpp"

#include <algorithm>

namespace clustersim::models::detail {

std::vector<std::size_t> twin_rows(const std::vector<std::size_t>& adj_begin,
                                   const std::vector<std::pair<LinkId, VertexId>>& adj,
                                   const std::vector<VertexId>& row_source) {
  std::vector<std::size_t> twin(row_source.size());
  for (std::size_t r = 0; r < row_source.size(); ++r) {
    twin[r] = r;
    if (r == 0) continue;
    const VertexId s = row_source[r], p = row_source[r - 1];
    const auto same_target = [](const std::pair<LinkId, VertexId>& x, const std::pair<LinkId, VertexId>& y) {
      return x.second == y.second;
    };
    if (std::equal(adj.begin() + static_cast<std::ptrdiff_t>(adj_begin[s]),
                   adj.begin() + static_cast<std::ptrdiff_t>(adj_begin[s + 1]),
                   adj.begin() + static_cast<std::ptrdiff_t>(adj_begin[p]),
                   adj.begin() + static_cast<std::ptrdiff_t>(adj_begin[p + 1]), same_target)) {
      twin[r] = twin[r - 1];
    }
  }
  return twin;
}

}  // namespace clustersim::models::detail
