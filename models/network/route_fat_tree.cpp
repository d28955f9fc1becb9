// FatTreeRoutes: see route_fat_tree.hpp.
#include "models/network/route_fat_tree.hpp"

#include <algorithm>
#include <limits>

namespace clustersim::models::detail {

namespace {

/// Distances at or above this are "no path" (Topology::Impl's kInf, max / 4, and NodeExits::kInf alike).
constexpr std::uint32_t kFarAway = std::numeric_limits<std::uint32_t>::max() / 4;

/// The local index (GPUs 0..gpn-1, extras gpn + k) of node 0's vertex `v0`, an intra template edge's target.
std::size_t local_of(const ClusterGraph& g, VertexId v0) {
  return v0 < g.gpus ? static_cast<std::size_t>(v0) : static_cast<std::size_t>(g.gpn) + (v0 - g.gpus);
}

}  // namespace

FatTreeRoutes build_fat_tree_routes(const ClusterGraph& g, const NodeExits& exits,
                                    const std::vector<std::vector<std::uint32_t>>& remote_distances,
                                    const std::vector<bool>& transit_extra) {
  FatTreeRoutes r;
  const bool one_leaf = g.fabric == FabricKind::single_switch ||
                        (g.fabric == FabricKind::fat_tree && g.nics >= 1 && g.half % g.nics == 0);
  const auto gpn = static_cast<std::size_t>(g.gpn);
  if (!one_leaf || g.nodes < 2 || remote_distances.size() != gpn) return r;
  const std::size_t locals = gpn + static_cast<std::size_t>(g.extras);
  r.locals = locals;
  r.nodes_per_leaf = g.fabric == FabricKind::fat_tree ? g.half / g.nics : 0;
  const std::size_t nb = exits.exits.size();
  const auto transit = [&](std::size_t local) { return local >= gpn && transit_extra[local - gpn]; };

  // Source stretch: distances relative to the leaf's, r(v).
  std::vector<std::uint32_t> rel(locals, kFarAway);
  for (const int k : exits.transit_extras) {
    std::uint32_t best = kFarAway;
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint32_t h = exits.hops[static_cast<std::size_t>(k) * nb + b];
      if (exits.exits[b].edge.kind == TemplateEdge::Kind::nic_switch && h < kFarAway) best = std::min(best, h + 1);
    }
    rel[gpn + static_cast<std::size_t>(k)] = best;
  }
  for (std::size_t l = 0; l < gpn; ++l) {
    std::uint32_t best = kFarAway;
    for (std::size_t e = g.tmpl_begin[l]; e < g.tmpl_begin[l + 1]; ++e) {
      const TemplateEdge& edge = g.tmpl_edges[e];
      if (edge.kind == TemplateEdge::Kind::nic_switch) best = std::min(best, std::uint32_t{1});
      if (edge.kind != TemplateEdge::Kind::intra) continue;
      const std::size_t w = local_of(g, edge.target);
      if (transit(w) && rel[w] < kFarAway) best = std::min(best, rel[w] + 1);
    }
    rel[l] = best;
  }
  r.src_begin.assign(locals + 1, 0);
  for (std::size_t v = 0; v < locals; ++v) {
    r.src_begin[v] = static_cast<std::uint32_t>(r.src_next.size());
    if (rel[v] >= kFarAway || (v >= gpn && !transit(v))) continue;
    for (std::size_t e = g.tmpl_begin[v]; e < g.tmpl_begin[v + 1]; ++e) {
      const TemplateEdge& edge = g.tmpl_edges[e];
      if (edge.kind == TemplateEdge::Kind::nic_switch && rel[v] == 1) {
        r.src_next.push_back({static_cast<LinkId>(edge.nic), FatTreeRoutes::Step::kExit});
      } else if (edge.kind == TemplateEdge::Kind::intra) {
        const std::size_t w = local_of(g, edge.target);
        if (transit(w) && rel[w] < kFarAway && rel[w] + 1 == rel[v]) {
          r.src_next.push_back({edge.id, static_cast<std::uint32_t>(w)});
        }
      }
    }
  }
  r.src_begin[locals] = static_cast<std::uint32_t>(r.src_next.size());

  // Destination stretch, per destination GPU m.
  r.down_begin.assign(gpn + 1, 0);
  r.dst_begin.assign(gpn * locals + 1, 0);
  for (std::size_t m = 0; m < gpn; ++m) {
    const std::vector<std::uint32_t>& dd = remote_distances[m];
    std::uint32_t least = kFarAway;
    for (const NodeExits::Exit& x : exits.exits) {
      const std::uint32_t du = dd[gpn + static_cast<std::size_t>(x.extra)];
      if (x.edge.kind == TemplateEdge::Kind::nic_switch && du < kFarAway) least = std::min(least, du + 1);
    }
    r.down_begin[m] = static_cast<std::uint32_t>(r.down_nic.size());
    std::vector<std::pair<int, int>> down;  // (NIC, extra): NIC order is the down-links' id order
    for (const NodeExits::Exit& x : exits.exits) {
      const std::uint32_t du = dd[gpn + static_cast<std::size_t>(x.extra)];
      if (x.edge.kind == TemplateEdge::Kind::nic_switch && du < kFarAway && du + 1 == least) {
        down.emplace_back(x.edge.nic, x.extra);
      }
    }
    std::sort(down.begin(), down.end());
    for (const auto& [nic, extra] : down) {
      r.down_nic.push_back(static_cast<std::uint32_t>(nic));
      r.down_extra.push_back(static_cast<std::uint32_t>(gpn) + static_cast<std::uint32_t>(extra));
    }
    for (std::size_t v = 0; v < locals; ++v) {
      r.dst_begin[m * locals + v] = static_cast<std::uint32_t>(r.dst_next.size());
      if (dd[v] >= kFarAway || dd[v] == 0) continue;
      for (std::size_t e = g.tmpl_begin[v]; e < g.tmpl_begin[v + 1]; ++e) {
        const TemplateEdge& edge = g.tmpl_edges[e];
        if (edge.kind != TemplateEdge::Kind::intra) continue;
        const std::size_t w = local_of(g, edge.target);
        if ((w == m || transit(w)) && dd[w] < kFarAway && dd[w] + 1 == dd[v]) {
          r.dst_next.push_back({edge.id, static_cast<std::uint32_t>(w)});
        }
      }
    }
  }
  r.down_begin[gpn] = static_cast<std::uint32_t>(r.down_nic.size());
  r.dst_begin[gpn * locals] = static_cast<std::uint32_t>(r.dst_next.size());
  r.enabled = true;
  return r;
}

bool FatTreeRoutes::applies(const ClusterGraph& g, VertexId src_gpu, VertexId dst_gpu) const {
  if (!enabled) return false;
  const auto gpn = static_cast<VertexId>(g.gpn);
  const std::int64_t ns = src_gpu / gpn, nd = dst_gpu / gpn;
  if (ns == nd || g.node_zone[static_cast<std::size_t>(ns)] != g.node_zone[static_cast<std::size_t>(nd)]) return false;
  const std::size_t l = src_gpu % gpn, m = dst_gpu % gpn;
  return src_begin[l] != src_begin[l + 1] && down_begin[m] != down_begin[m + 1];
}

bool FatTreeRoutes::append(const ClusterGraph& g, VertexId src_gpu, VertexId dst_gpu,
                           std::uint64_t flow_hash, std::vector<LinkId>& out) const {
  if (!applies(g, src_gpu, dst_gpu)) return false;
  const auto gpn = static_cast<VertexId>(g.gpn);
  const std::int64_t ns = src_gpu / gpn, nd = dst_gpu / gpn;
  const std::size_t m = dst_gpu % gpn;
  const ZoneSection& z = g.zone_sections[static_cast<std::size_t>(g.node_zone[static_cast<std::size_t>(ns)])];
  const std::int64_t zs = ns - z.first_node, zd = nd - z.first_node;  // node indices within the zone
  // The node's leaf (ClusterGraph::nic_switch of any of its NICs) and NIC `nic`'s link up to it.
  const auto leaf = [&](std::int64_t zn) {
    return z.first_switch + static_cast<VertexId>(nodes_per_leaf == 0 ? 0 : zn / nodes_per_leaf);
  };
  const auto nic_link = [&](std::int64_t zn, std::uint32_t nic) {
    return z.nic_first + static_cast<LinkId>(2 * (zn * g.nics + nic));
  };
  const auto block = static_cast<LinkId>(g.tmpl_links.size());
  std::uint64_t digits = flow_hash;
  // The walk's ECMP decision among n candidates (n == 1 consumes no digit).
  const auto take = [&digits](std::size_t n) -> std::size_t {
    if (n == 1) return 0;
    const std::size_t k = digits % n;
    digits /= n;
    return k;
  };
  // 1. Source node: GPU l to its leaf (every GPU met here has a candidate: applies, and tables built from
  // distances, each vertex's least one being one of its candidates).
  std::size_t v = src_gpu % gpn;
  for (;;) {
    const std::size_t first = src_begin[v];
    const Step& e = src_next[first + take(src_begin[v + 1] - first)];
    if (e.to == Step::kExit) {
      out.push_back(nic_link(zs, e.link));
      break;
    }
    out.push_back(e.link + static_cast<LinkId>(ns) * block);
    v = e.to;
  }
  // 2. Network: leaf to leaf. A leaf's up-links are its network links in id order (ClusterGraph::tier_pair):
  // pairs a * half + k (two tiers: tier1 == half spines; three: its pod's half aggregation switches a / half *
  // half + k), and aggregation switch g's c-th up-link (to a core) is pair tier0 * half + g * half + c.
  const VertexId leaf_s = leaf(zs), leaf_d = leaf(zd);
  if (leaf_s != leaf_d) {
    const auto half = static_cast<std::int64_t>(g.half);
    const std::int64_t as = leaf_s - z.first_switch, ad = leaf_d - z.first_switch;
    const auto pair_link = [&z](std::int64_t pair) { return z.tier_first + static_cast<LinkId>(2 * pair); };
    const auto k = static_cast<std::int64_t>(take(static_cast<std::size_t>(half)));
    out.push_back(pair_link(as * half + k));
    if (z.tier2 > 0 && as / half != ad / half) {
      const std::int64_t agg_s = as / half * half + k, agg_d = ad / half * half + k;
      const auto c = static_cast<std::int64_t>(take(static_cast<std::size_t>(half)));
      out.push_back(pair_link(z.tier0 * half + agg_s * half + c));
      out.push_back(pair_link(z.tier0 * half + agg_d * half + c) ^ 1U);
    }
    out.push_back(pair_link(ad * half + k) ^ 1U);
  }
  // 3. Destination node: down to a NIC, then to GPU m (each vertex met is nearer m: it has a candidate).
  const std::size_t d0 = down_begin[m];
  const std::size_t pick = d0 + take(down_begin[m + 1] - d0);
  out.push_back(nic_link(zd, down_nic[pick]) ^ 1U);
  v = down_extra[pick];
  while (v != m) {
    const std::size_t first = dst_begin[m * locals + v];
    const Step& e = dst_next[first + take(dst_begin[m * locals + v + 1] - first)];
    out.push_back(e.link + static_cast<LinkId>(nd) * block);
    v = e.to;
  }
  return true;
}

}  // namespace clustersim::models::detail
