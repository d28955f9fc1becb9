// NodeExits: see route_exits.hpp.
#include "models/network/route_exits.hpp"

#include <cstddef>

namespace clustersim::models::detail {

NodeExits build_node_exits(const ClusterGraph& g, const std::vector<bool>& transit_extra) {
  NodeExits out;
  const auto gpn = static_cast<std::size_t>(g.gpn);
  const auto extras = static_cast<std::size_t>(g.extras);
  // The extra index of a template edge's node-0 target, or -1 for a GPU.
  const auto extra_of = [&](VertexId target) { return target < g.gpus ? -1 : static_cast<int>(target - g.gpus); };
  for (std::size_t k = 0; k < extras; ++k) {
    if (transit_extra[k]) out.transit_extras.push_back(static_cast<int>(k));
    for (std::size_t e = g.tmpl_begin[gpn + k]; e < g.tmpl_begin[gpn + k + 1]; ++e) {
      if (g.tmpl_edges[e].kind != TemplateEdge::Kind::intra) out.exits.push_back({static_cast<int>(k), g.tmpl_edges[e]});
    }
  }
  const std::size_t nb = out.exits.size();
  out.hops.assign(extras * nb, NodeExits::kInf);
  std::vector<std::uint32_t> dist(extras);
  std::vector<int> queue;
  for (const int k : out.transit_extras) {
    // Breadth-first search from extra k over intra-node links into transit extras.
    dist.assign(extras, NodeExits::kInf);
    dist[static_cast<std::size_t>(k)] = 0;
    queue.assign(1, k);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const auto u = static_cast<std::size_t>(queue[head]);
      for (std::size_t e = g.tmpl_begin[gpn + u]; e < g.tmpl_begin[gpn + u + 1]; ++e) {
        const TemplateEdge& edge = g.tmpl_edges[e];
        if (edge.kind != TemplateEdge::Kind::intra) continue;
        const int w = extra_of(edge.target);
        if (w < 0 || !transit_extra[static_cast<std::size_t>(w)]) continue;
        if (dist[static_cast<std::size_t>(w)] != NodeExits::kInf) continue;
        dist[static_cast<std::size_t>(w)] = dist[u] + 1;
        queue.push_back(w);
      }
    }
    for (std::size_t b = 0; b < nb; ++b) {
      out.hops[static_cast<std::size_t>(k) * nb + b] = dist[static_cast<std::size_t>(out.exits[b].extra)];
    }
  }
  return out;
}

}  // namespace clustersim::models::detail
