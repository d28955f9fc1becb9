#include "models/network/pattern_symmetry.hpp"

#include "models/network/group_blocks.hpp"

#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

namespace clustersim::models {

std::optional<TranslationSymmetry> translation_symmetry(const FabricShape& shape, int gpus_per_node) {
  if (shape.zones != 1 || gpus_per_node < 1 || shape.nics_per_node < 1 || shape.leaf_down_ports < 1) {
    return std::nullopt;
  }
  if (shape.fabric == FabricKind::rail_optimized) return std::nullopt;  // every node of a rail shares its spines
  const int64_t half = shape.leaf_down_ports;
  const int64_t nics = shape.nics_per_node;
  TranslationSymmetry s;
  s.split_sides = shape.rail_nics;
  // ECMP radices a route may read digits of: the NIC on each end when NICs hang off the host, radix/2 per tier
  // above the leaf.
  int64_t radices = shape.rail_nics ? 1 : nics * nics;
  if (shape.fabric == FabricKind::single_switch || shape.tiers == 1) {
    s.unit_nodes = 1;
  } else {
    if (half % nics != 0) return std::nullopt;  // a leaf would hold part of a node's NICs
    s.unit_nodes = shape.tiers == 3 ? half * half / nics : half / nics;
    radices *= shape.tiers == 3 ? half * half : half;
  }
  const int64_t shift_nodes = radices / std::gcd(radices, static_cast<int64_t>(gpus_per_node));
  s.period_nodes = std::lcm(s.unit_nodes, shift_nodes);
  return s;
}

std::optional<CommPattern> translation_representative(CollectiveOp op, const CommPattern& pattern,
                                                       const Topology& topology) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2) return std::nullopt;
  const int gpn = topology.gpus_per_node();
  const std::optional<TranslationSymmetry> sym = translation_symmetry(topology.fabric_shape(), gpn);
  if (!sym) return std::nullopt;
  const int64_t gpus = topology.gpu_count();
  const int64_t unit_ranks = int64_t{gpn} * sym->unit_nodes;  // floor(floor(r / gpn) / unit_nodes) = r / unit_ranks
  const int64_t units = (topology.node_count() + sym->unit_nodes - 1) / sym->unit_nodes;
  // Side s of unit u: 2u + s (s = 0 "out", 1 "in"); without split sides only 2u is used.
  constexpr uint32_t kNone = detail::GroupUnion::kNone;
  std::vector<uint32_t> side_owner(static_cast<size_t>(2 * units), kNone);
  detail::GroupUnion parent(groups.size());
  // Group g touches side slot `slot`: the first toucher owns it, later ones join its block. A group touching a
  // slot it (or a group already in its block) owns joins nothing, so the callers skip a member whose unit is
  // the previous member's: the same blocks, fewer look-ups.
  const auto touch = [&](uint32_t g, size_t slot) {
    const uint32_t owner = side_owner[slot];
    if (owner == kNone) {
      side_owner[slot] = g;
    } else if (owner != g) {
      parent.join(owner, g);
    }
  };
  const size_t out_in = sym->split_sides ? 1 : 0;  // the "in" slot's offset from the "out" slot
  const size_t group_size = groups.front().size();
  // The slots the previous group touched when it was a send_recv pair across nodes (else none): a pair touching
  // the same two slots joins exactly the previous pair's block (both slots' owners are in it already).
  size_t pair_out = SIZE_MAX, pair_in = SIZE_MAX;
  for (uint32_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.empty() || group.size() != group_size) return std::nullopt;
    if (op == CollectiveOp::send_recv && group_size == 2) {
      const int64_t a = group[0], b = group[1];
      if (a < 0 || a >= gpus || b < 0 || b >= gpus) return std::nullopt;
      if (a / gpn != b / gpn) {
        const auto out = static_cast<size_t>(2 * (a / unit_ranks));
        const auto in = static_cast<size_t>(2 * (b / unit_ranks)) + out_in;
        if (out == pair_out && in == pair_in) {
          parent.join(g - 1, g);
        } else {
          touch(g, out);
          touch(g, in);
          pair_out = out;
          pair_in = in;
        }
        continue;
      }
    }
    pair_out = pair_in = SIZE_MAX;
    int64_t last_unit = -1;
    for (int64_t r : group) {
      if (r < 0 || r >= gpus) return std::nullopt;
      const int64_t unit = r / unit_ranks;
      if (unit == last_unit) continue;
      last_unit = unit;
      const auto slot = static_cast<size_t>(2 * unit);
      touch(g, slot);
      if (out_in != 0) touch(g, slot + out_in);
    }
  }
  // Blocks in order of their first group, each group in pattern order (group_blocks.hpp).
  const detail::GroupBlocks blocks = detail::blocks_of(parent);
  const size_t block_count = blocks.count();
  if (block_count < 2) return std::nullopt;
  const auto block_at = [&](size_t b) { return blocks.block(b); };
  const std::span<const uint32_t> first = block_at(0);
  const int64_t period_ranks = sym->period_nodes * gpn;
  for (size_t b = 1; b < block_count; ++b) {
    const std::span<const uint32_t> block = block_at(b);
    if (block.size() != first.size()) return std::nullopt;
    const int64_t shift = groups[block.front()].front() - groups[first.front()].front();
    if (shift % period_ranks != 0) return std::nullopt;
    for (size_t i = 0; i < block.size(); ++i) {
      const auto& moved = groups[block[i]];
      const auto& base = groups[first[i]];
      for (size_t j = 0; j < base.size(); ++j) {
        if (moved[j] != base[j] + shift) return std::nullopt;
      }
    }
  }
  CommPattern representative;
  representative.groups.reserve(first.size());
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

}  // namespace clustersim::models
