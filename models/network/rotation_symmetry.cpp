#include "models/network/rotation_symmetry.hpp"

#include <cstdint>
#include <vector>

namespace clustersim::models {

namespace {

/// Whether the claim's fabric conditions hold: one zone, rail NICs (one per GPU), and a single switch, a fat
/// tree of one leaf, or a two-tier fat tree whose leaves hold whole nodes (so gpus_per_node divides the spine
/// count, leaf_down_ports).
bool rotation_fabric(const FabricShape& shape, int64_t gpn) {
  if (shape.zones != 1 || !shape.rail_nics || shape.nics_per_node != gpn || gpn < 2) return false;
  if (shape.fabric == FabricKind::single_switch) return true;
  if (shape.fabric != FabricKind::fat_tree) return false;  // rail_optimized: rail_symmetry.hpp
  if (shape.tiers == 1) return true;
  return shape.tiers == 2 && shape.leaf_down_ports % gpn == 0;
}

}  // namespace

std::optional<CommPattern> rotation_representative(const CommPattern& pattern, const Topology& topology) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2 || groups.front().empty()) return std::nullopt;
  const int64_t gpn = topology.gpus_per_node();
  if (!rotation_fabric(topology.fabric_shape(), gpn)) return std::nullopt;
  const int64_t gpus = topology.gpu_count();
  const size_t size = groups.front().size();
  // A rank's local index, by a mask when gpus_per_node is a power of two (8 on every shipped multi-GPU VM: no
  // division per rank); ranks are checked to lie in [0, gpus) first.
  const bool power_of_two = (gpn & (gpn - 1)) == 0;
  const auto local_of = [gpn, power_of_two](int64_t r) { return power_of_two ? r & (gpn - 1) : r % gpn; };
  // Each group's local index (its first rank's); the blocks (groups by local index, in pattern order).
  std::vector<std::vector<uint32_t>> blocks(static_cast<size_t>(gpn));
  for (uint32_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.size() != size) return std::nullopt;
    const int64_t front = group.front();
    if (front < 0 || front >= gpus) return std::nullopt;
    blocks[static_cast<size_t>(local_of(front))].push_back(g);
  }
  const int64_t t0 = local_of(groups.front().front());
  const std::vector<uint32_t>& first = blocks[static_cast<size_t>(t0)];
  // Block 0's ranks all lie in the cluster at local index t0. The other blocks' ranks need no such check: the
  // comparison below requires each to equal a rank of block 0 plus t - t0, which is in the cluster at local
  // index t (the same node, as t0 + (t - t0) = t < gpus_per_node), so a rank at another local index or outside
  // the cluster fails it: the same patterns are accepted as when every rank was checked.
  for (uint32_t g : first) {
    for (int64_t r : groups[g]) {
      if (r < 0 || r >= gpus || local_of(r) != t0) return std::nullopt;
    }
  }
  size_t block_count = 0;
  for (int64_t t = 0; t < gpn; ++t) {
    const std::vector<uint32_t>& block = blocks[static_cast<size_t>(t)];
    if (block.empty()) continue;
    ++block_count;
    if (t == t0) continue;
    // Block t is block 0 moved by t - t0 local indices, group by group and rank by rank.
    if (block.size() != first.size()) return std::nullopt;
    const int64_t shift = t - t0;
    for (size_t i = 0; i < block.size(); ++i) {
      const auto& moved = groups[block[i]];
      const auto& base = groups[first[i]];
      for (size_t j = 0; j < size; ++j) {
        if (moved[j] != base[j] + shift) return std::nullopt;
      }
    }
  }
  if (block_count < 2) return std::nullopt;
  CommPattern representative;
  representative.groups.reserve(first.size(), first.size() * size);
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

}  // namespace clustersim::models
