// build_network_adjacency: see network_adjacency.hpp.
#include "models/network/network_adjacency.hpp"

namespace clustersim::models::detail {

NetworkAdjacency build_network_adjacency(const ClusterGraph& g) {
  NetworkAdjacency out;
  const std::size_t nn = g.vertex_count() - g.first_network;
  std::size_t entries = g.stored.size();
  for (const ZoneSection& z : g.zone_sections) entries += z.tier_end - z.tier_first;
  out.begin.resize(nn + 1);
  out.adj.resize(entries);
  out.component_size.resize(nn);
  std::pair<LinkId, VertexId>* at = out.adj.data();
  std::size_t* begin = out.begin.data();
  const auto half = static_cast<std::int64_t>(g.half);
  for (const ZoneSection& z : g.zone_sections) {
    const VertexId tier1_first = z.first_switch + static_cast<VertexId>(z.tier0);
    const VertexId tier2_first = tier1_first + static_cast<VertexId>(z.tier1);
    const auto link = [&z](std::int64_t pair, LinkId down) {
      return z.tier_first + static_cast<LinkId>(2 * pair) + down;
    };
    const std::size_t first = z.first_switch - g.first_network;
    const std::int64_t switches = z.tier0 + z.tier1 + z.tier2;
    for (std::int64_t s = 0; s < switches; ++s) {
      out.component_size[first + static_cast<std::size_t>(s)] = static_cast<std::uint32_t>(switches);
    }
    if (z.tier1 == 0) {  // one switch, no tier links
      for (std::int64_t a = 0; a < z.tier0; ++a) *begin++ = static_cast<std::size_t>(at - out.adj.data());
    } else if (z.tier2 == 0) {
      // Running ids and targets (pair a * tier1 + s: + 2 per spine along a leaf, + 2 * tier1 per leaf along a spine).
      const auto spines = static_cast<VertexId>(z.tier1);
      LinkId id = z.tier_first;
      for (std::int64_t a = 0; a < z.tier0; ++a) {
        *begin++ = static_cast<std::size_t>(at - out.adj.data());
        for (VertexId s = 0; s < spines; ++s, id += 2) *at++ = {id, tier1_first + s};
      }
      const auto leaves = static_cast<VertexId>(z.tier0);
      for (VertexId s = 0; s < spines; ++s) {
        *begin++ = static_cast<std::size_t>(at - out.adj.data());
        id = link(s, 1);
        for (VertexId a = 0; a < leaves; ++a, id += 2 * spines) *at++ = {id, z.first_switch + a};
      }
    } else {
      const std::int64_t leaf_pairs = z.tier0 * half;
      for (std::int64_t a = 0; a < z.tier0; ++a) {
        *begin++ = static_cast<std::size_t>(at - out.adj.data());
        for (std::int64_t j = 0; j < half; ++j) {
          *at++ = {link(a * half + j, 0), tier1_first + static_cast<VertexId>(a / half * half + j)};
        }
      }
      for (std::int64_t agg = 0; agg < z.tier1; ++agg) {
        *begin++ = static_cast<std::size_t>(at - out.adj.data());
        const std::int64_t pod = agg / half, j = agg % half;
        for (std::int64_t a = pod * half; a < z.tier0 && a < (pod + 1) * half; ++a) {
          *at++ = {link(a * half + j, 1), z.first_switch + static_cast<VertexId>(a)};
        }
        for (std::int64_t c = 0; c < half; ++c) {
          *at++ = {link(leaf_pairs + agg * half + c, 0), tier2_first + static_cast<VertexId>(j * half + c)};
        }
      }
      for (std::int64_t core = 0; core < z.tier2; ++core) {
        *begin++ = static_cast<std::size_t>(at - out.adj.data());
        const std::int64_t j = core / half, c = core % half;
        for (std::int64_t agg = j; agg < z.tier1; agg += half) {
          *at++ = {link(leaf_pairs + agg * half + c, 1), tier1_first + static_cast<VertexId>(agg)};
        }
      }
    }
  }
  // Gateways (several zones): each one's stored pairs, in id order.
  for (VertexId w = g.first_gateway; w < g.vertex_count(); ++w) {
    *begin++ = static_cast<std::size_t>(at - out.adj.data());
    out.component_size[w - g.first_network] = static_cast<std::uint32_t>(g.vertex_count() - g.first_gateway);
    for (std::size_t i = 0; i < g.stored.size(); ++i) {
      if (g.stored[i].src == w) *at++ = {g.pairs_first + static_cast<LinkId>(i), g.stored[i].dst};
    }
  }
  *begin = static_cast<std::size_t>(at - out.adj.data());
  return out;
}

}  // namespace clustersim::models::detail
