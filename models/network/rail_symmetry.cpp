#include "models/network/rail_symmetry.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

namespace clustersim::models {

namespace {

uint32_t find(std::vector<uint32_t>& parent, uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/// Whether GPU 0 has a link to an NVLink switch vertex (Builder::has_nvswitch's test: every node is node 0's
/// template, so every node has one then).
bool has_nvlink_switch(const Topology& topology) {
  for (LinkId id : topology.out_links(0)) {
    if (topology.vertex(topology.link(id).dst).kind == VertexKind::nvswitch) return true;
  }
  return false;
}

/// Whether every node that `sorted` (a group's ranks, ascending) touches holds members at the same local indices
/// (the same sorted sequence of rank % gpn, duplicates included).
bool same_local_indices(std::span<const int64_t> sorted, int64_t gpn) {
  const int64_t first_node = sorted.front() / gpn;
  size_t run = 0;
  while (run < sorted.size() && sorted[run] / gpn == first_node) ++run;
  for (size_t start = run; start < sorted.size();) {
    const int64_t node = sorted[start] / gpn;
    size_t end = start;
    while (end < sorted.size() && sorted[end] / gpn == node) ++end;
    if (end - start != run) return false;
    for (size_t i = 0; i < run; ++i) {
      if (sorted[start + i] - node * gpn != sorted[i] - first_node * gpn) return false;
    }
    start = end;
  }
  return true;
}

}  // namespace

std::optional<CommPattern> rail_block_representative(CollectiveOp op, const CommPattern& pattern,
                                                      const Topology& topology) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2 || groups.front().empty()) return std::nullopt;
  const FabricShape& shape = topology.fabric_shape();
  if (shape.fabric != FabricKind::rail_optimized || shape.zones != 1 || !shape.rail_nics) return std::nullopt;
  if (!has_nvlink_switch(topology)) return std::nullopt;
  const int64_t gpn = topology.gpus_per_node();
  const int64_t gpus = topology.gpu_count();
  const size_t size = groups.front().size();
  if (op == CollectiveOp::send_recv && size != 2) return std::nullopt;

  // The rail condition per group; groups that share a rank are joined.
  constexpr uint32_t kNone = ~uint32_t{0};
  std::vector<uint32_t> rank_owner(static_cast<size_t>(gpus), kNone);
  std::vector<uint32_t> parent(groups.size());
  std::iota(parent.begin(), parent.end(), uint32_t{0});
  const auto touch = [&](uint32_t g, int64_t rank) {
    uint32_t& owner = rank_owner[static_cast<size_t>(rank)];
    if (owner == kNone) {
      owner = g;
    } else {
      const uint32_t a = find(parent, owner), b = find(parent, g);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
  };
  std::vector<int64_t> sorted;
  for (uint32_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.size() != size) return std::nullopt;
    for (int64_t r : group) {
      if (r < 0 || r >= gpus) return std::nullopt;
    }
    if (op == CollectiveOp::send_recv) {
      if (group[0] / gpn != group[1] / gpn && group[0] % gpn != group[1] % gpn) return std::nullopt;  // crosses rails
    } else {
      sorted.assign(group.begin(), group.end());
      std::sort(sorted.begin(), sorted.end());
      if (!same_local_indices(sorted, gpn)) return std::nullopt;
    }
    for (int64_t r : group) touch(g, r);
  }
  // Blocks in order of their first group, each group in pattern order (members[offsets[b] .. offsets[b + 1])).
  std::vector<uint32_t> block_of(groups.size());
  std::vector<uint32_t> block_of_root(groups.size(), kNone);
  uint32_t block_count = 0;
  for (uint32_t g = 0; g < groups.size(); ++g) {
    const uint32_t root = find(parent, g);
    if (block_of_root[root] == kNone) block_of_root[root] = block_count++;
    block_of[g] = block_of_root[root];
  }
  if (block_count < 2) return std::nullopt;
  std::vector<size_t> offsets(static_cast<size_t>(block_count) + 1, 0);
  for (uint32_t b : block_of) ++offsets[b + 1];
  for (size_t b = 0; b < block_count; ++b) offsets[b + 1] += offsets[b];
  std::vector<uint32_t> members(groups.size());
  {
    std::vector<size_t> fill(offsets.begin(), offsets.end() - 1);
    for (uint32_t g = 0; g < groups.size(); ++g) members[fill[block_of[g]]++] = g;
  }
  const auto block_at = [&](size_t b) {
    return std::span<const uint32_t>(members.data() + offsets[b], offsets[b + 1] - offsets[b]);
  };
  // Every block is block 0 moved rank by rank by one shift that moves every rank by the same whole nodes (and
  // so by the same local offset: no rank leaves its node's range).
  const std::span<const uint32_t> first = block_at(0);
  for (size_t b = 1; b < block_count; ++b) {
    const std::span<const uint32_t> block = block_at(b);
    if (block.size() != first.size()) return std::nullopt;
    const int64_t base0 = groups[first.front()].front(), moved0 = groups[block.front()].front();
    const int64_t shift = moved0 - base0;
    const int64_t node_shift = moved0 / gpn - base0 / gpn;
    for (size_t i = 0; i < block.size(); ++i) {
      const auto& moved = groups[block[i]];
      const auto& base = groups[first[i]];
      for (size_t j = 0; j < size; ++j) {
        if (moved[j] != base[j] + shift || moved[j] / gpn - base[j] / gpn != node_shift) return std::nullopt;
      }
    }
  }
  CommPattern representative;
  representative.groups.reserve(first.size());
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

}  // namespace clustersim::models
