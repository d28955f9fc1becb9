#include "models/network/pattern_symmetry.hpp"

#include "models/network/group_blocks.hpp"

#include <bit>
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

namespace {

/// x / d for x >= 0 by a shift when d is a power of two (8 GPUs a node, units of 2^k nodes: no division
/// instruction per rank, tens of cycles each), else by a division; the same quotient either way.
struct Quotient {
  explicit Quotient(uint64_t divisor)
      : d(divisor), shift(std::has_single_bit(divisor) ? std::countr_zero(divisor) : -1) {}
  [[nodiscard]] uint64_t operator()(uint64_t x) const { return shift >= 0 ? x >> shift : x / d; }
  uint64_t d;
  int shift;
};

}  // namespace

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
  // Side s of unit u: slot 2u + s (s = 0 "out", 1 "in"); without split sides only 2u is used.
  //
  // Blocks through the slots: a group joins every slot it touches into one slot component (a union-find over
  // the 2 x units slots, not over the groups), and a group's block is its slots' component. The same partition
  // as joining groups that touch a common slot: groups sharing a slot share its component, and slots in one
  // component are linked by a chain of groups each touching two of them, so their groups are chained by
  // shared slots. Blocks are numbered in order of their first group and list their groups in pattern order,
  // as group_blocks.hpp's blocks_of does. The scan skips a member in its group's previous member's unit, and a
  // cross-node send_recv pair on the previous pair's two slots (already one component): nothing to join.
  detail::GroupUnion slot_union(static_cast<size_t>(2 * units));
  const auto link = [&](size_t a, size_t b) {
    if (a != b) slot_union.join(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  };
  const size_t out_in = sym->split_sides ? 1 : 0;  // the "in" slot's offset from the "out" slot
  const auto ugpus = static_cast<uint64_t>(gpus);
  const Quotient node_of(static_cast<uint64_t>(gpn)), unit_of(static_cast<uint64_t>(unit_ranks));
  const size_t group_size = groups.front().size();
  std::vector<uint32_t> block_of(groups.size());  // a slot of each group, then its block
  size_t pair_out = SIZE_MAX, pair_in = SIZE_MAX;  // the previous group's slots when a cross-node pair
  for (uint32_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.empty() || group.size() != group_size) return std::nullopt;
    if (op == CollectiveOp::send_recv && group_size == 2) {
      // As unsigned, a negative rank is above every GPU: one comparison checks both bounds.
      const auto a = static_cast<uint64_t>(group[0]), b = static_cast<uint64_t>(group[1]);
      if (a >= ugpus || b >= ugpus) return std::nullopt;
      const uint64_t unit_a = unit_of(a), unit_b = unit_of(b);
      if (unit_a != unit_b || node_of(a) != node_of(b)) {  // on two nodes (units hold whole nodes)
        const auto out = static_cast<size_t>(2 * unit_a);
        const auto in = static_cast<size_t>(2 * unit_b) + out_in;
        block_of[g] = static_cast<uint32_t>(out);
        if (out != pair_out || in != pair_in) link(out, in);
        pair_out = out;
        pair_in = in;
        continue;
      }
    }
    pair_out = pair_in = SIZE_MAX;
    if (group.front() < 0 || group.front() >= gpus) return std::nullopt;
    const auto first = static_cast<size_t>(2 * unit_of(static_cast<uint64_t>(group.front())));
    block_of[g] = static_cast<uint32_t>(first);
    int64_t last_unit = -1;
    for (int64_t r : group) {
      if (r < 0 || r >= gpus) return std::nullopt;
      const auto unit = static_cast<int64_t>(unit_of(static_cast<uint64_t>(r)));
      if (unit == last_unit) continue;
      last_unit = unit;
      const auto slot = static_cast<size_t>(2 * unit);
      link(first, slot);
      if (out_in != 0) link(first, slot + out_in);
    }
  }
  // Number the blocks by first group (through each slot component's root).
  constexpr uint32_t kNone = detail::GroupUnion::kNone;
  std::vector<uint32_t> block_of_root(static_cast<size_t>(2 * units), kNone);
  std::vector<size_t> block_sizes;
  uint32_t last_slot = kNone, last_block = 0;  // consecutive groups often start in one slot: one look-up
  for (uint32_t& b : block_of) {
    if (b != last_slot) {
      last_slot = b;
      const uint32_t root = slot_union.root(b);
      if (block_of_root[root] == kNone) {
        block_of_root[root] = static_cast<uint32_t>(block_sizes.size());
        block_sizes.push_back(0);
      }
      last_block = block_of_root[root];
    }
    b = last_block;
    ++block_sizes[b];
  }
  const size_t block_count = block_sizes.size();
  if (block_count < 2) return std::nullopt;
  // Every block must be block 0's size (else nullopt, as below); then block b is members[b x per .. (b + 1) x per).
  const size_t per = block_sizes.front();
  for (size_t n : block_sizes) {
    if (n != per) return std::nullopt;
  }
  std::vector<uint32_t> members(groups.size());
  std::vector<size_t> fill(block_count);
  for (size_t b = 0; b < block_count; ++b) fill[b] = b * per;
  for (uint32_t g = 0; g < groups.size(); ++g) members[fill[block_of[g]]++] = g;
  const std::span<const uint32_t> first(members.data(), per);
  const int64_t period_ranks = sym->period_nodes * gpn;
  for (size_t b = 1; b < block_count; ++b) {
    const std::span<const uint32_t> block(members.data() + b * per, per);
    const int64_t shift = groups[block.front()].front() - groups[first.front()].front();
    if (shift % period_ranks != 0) return std::nullopt;
    for (size_t i = 0; i < per; ++i) {
      const int64_t* moved = groups[block[i]].data();
      const int64_t* base = groups[first[i]].data();
      if (group_size == 2) {  // pairs (pipeline sends), the commonest: unrolled
        if (moved[0] != base[0] + shift || moved[1] != base[1] + shift) return std::nullopt;
        continue;
      }
      for (size_t j = 0; j < group_size; ++j) {
        if (moved[j] != base[j] + shift) return std::nullopt;
      }
    }
  }
  CommPattern representative;
  representative.groups.reserve(per, per * group_size);
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

}  // namespace clustersim::models
