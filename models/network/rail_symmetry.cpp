#include "models/network/rail_symmetry.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "models/network/group_blocks.hpp"

namespace clustersim::models {

namespace {

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
  constexpr uint32_t kNone = detail::GroupUnion::kNone;
  std::vector<uint32_t> rank_owner(static_cast<size_t>(gpus), kNone);
  detail::GroupUnion parent(groups.size());
  const auto touch = [&](uint32_t g, int64_t rank) {
    uint32_t& owner = rank_owner[static_cast<size_t>(rank)];
    if (owner == kNone) {
      owner = g;
    } else {
      parent.join(owner, g);
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
  // Blocks in order of their first group, each group in pattern order (group_blocks.hpp).
  const detail::GroupBlocks blocks = detail::blocks_of(parent);
  const size_t block_count = blocks.count();
  if (block_count < 2) return std::nullopt;
  const auto block_at = [&](size_t b) { return blocks.block(b); };
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
  representative.groups.reserve(first.size(), first.size() * size);
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

}  // namespace clustersim::models
