// translation_representative (models/network/pattern_symmetry.cpp) against the reference it replaced: a
// union-find over the groups, joined at every rank's unit side with no skipped touches, each group validated
// before any touch. The fast scan joins slots instead of groups (a group's block is its slots' component) and
// skips touches that join nothing; the answer must be the same, group for group, or nullopt for both. Shapes:
// every strided Megatron-like pattern (StridedGroups of each below x size x above split of the GPUs and of half
// of them), their neighbour pairs, and variants that break the translation (a group moved, reversed or
// resized, a rank out of range, groups swapped), on fat trees of two and three tiers, an oversubscribed one,
// NICs on the host, a single switch and a 6-GPU rail VM (nodes and units by division, not by shift), for
// send_recv and all_reduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/network/group_blocks.hpp"
#include "models/network/pattern_symmetry.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/strided_groups.hpp"
#include "tests/network/network_support.hpp"
#include "tests/network/rail_vm_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::topology_config;

/// The reference: translation_representative as it was before the skipped touches (main 7406130).
std::optional<CommPattern> reference_representative(CollectiveOp op, const CommPattern& pattern,
                                                    const Topology& topology) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2) return std::nullopt;
  const int gpn = topology.gpus_per_node();
  const std::optional<TranslationSymmetry> sym = translation_symmetry(topology.fabric_shape(), gpn);
  if (!sym) return std::nullopt;
  const int64_t gpus = topology.gpu_count();
  const int64_t units = (topology.node_count() + sym->unit_nodes - 1) / sym->unit_nodes;
  constexpr uint32_t kNone = detail::GroupUnion::kNone;
  std::vector<uint32_t> side_owner(static_cast<size_t>(2 * units), kNone);
  detail::GroupUnion parent(groups.size());
  const auto touch = [&](uint32_t g, int64_t rank, int side) {
    const int64_t unit = rank / gpn / sym->unit_nodes;
    const size_t slot = static_cast<size_t>(2 * unit + (sym->split_sides ? side : 0));
    if (side_owner[slot] == kNone) {
      side_owner[slot] = g;
    } else {
      parent.join(side_owner[slot], g);
    }
  };
  for (uint32_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.empty() || group.size() != groups.front().size()) return std::nullopt;
    for (int64_t r : group) {
      if (r < 0 || r >= gpus) return std::nullopt;
    }
    if (op == CollectiveOp::send_recv && group.size() == 2 && group[0] / gpn != group[1] / gpn) {
      touch(g, group[0], 0);
      touch(g, group[1], 1);
      continue;
    }
    for (int64_t r : group) {
      touch(g, r, 0);
      touch(g, r, 1);
    }
  }
  const detail::GroupBlocks blocks = detail::blocks_of(parent);
  if (blocks.count() < 2) return std::nullopt;
  const std::span<const uint32_t> first = blocks.block(0);
  const int64_t period_ranks = sym->period_nodes * gpn;
  for (size_t b = 1; b < blocks.count(); ++b) {
    const std::span<const uint32_t> block = blocks.block(b);
    if (block.size() != first.size()) return std::nullopt;
    const int64_t shift = groups[block.front()].front() - groups[first.front()].front();
    if (shift % period_ranks != 0) return std::nullopt;
    for (size_t i = 0; i < block.size(); ++i) {
      for (size_t j = 0; j < groups[first[i]].size(); ++j) {
        if (groups[block[i]][j] != groups[first[i]][j] + shift) return std::nullopt;
      }
    }
  }
  CommPattern representative;
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

/// The fast scan and the reference agree on `pattern` for send_recv and all_reduce; counts the reductions.
void expect_same(const Topology& t, const CommPattern& pattern, const std::string& what, int& reduced) {
  for (CollectiveOp op : {CollectiveOp::send_recv, CollectiveOp::all_reduce}) {
    const std::optional<CommPattern> fast = translation_representative(op, pattern, t);
    const std::optional<CommPattern> slow = reference_representative(op, pattern, t);
    ASSERT_EQ(fast.has_value(), slow.has_value()) << what << " " << to_string(op);
    if (fast) {
      EXPECT_EQ(fast->groups, slow->groups) << what << " " << to_string(op);
      ++reduced;
    }
  }
}

/// `pattern` and variants of it that may break the translation: its last group moved by one rank, reversed,
/// one rank shorter, given a rank outside the cluster, and its first two groups swapped.
std::vector<std::pair<std::string, CommPattern>> variants(const CommPattern& pattern, int64_t gpus) {
  std::vector<std::pair<std::string, CommPattern>> out{{"as built", pattern}};
  if (pattern.groups.size() < 2) return out;
  const size_t last = pattern.groups.size() - 1;
  // The groups as vectors, for the edits that change a group's size or move groups.
  const auto as_vectors = [&pattern] {
    std::vector<std::vector<int64_t>> groups;
    for (const auto& g : pattern.groups) groups.emplace_back(g.begin(), g.end());
    return groups;
  };
  CommPattern p = pattern;
  for (int64_t& r : p.groups.mutable_group(last)) r = (r + 1) % gpus;
  out.emplace_back("last moved", p);
  p = pattern;
  std::ranges::reverse(p.groups.mutable_group(last));
  out.emplace_back("last reversed", p);
  std::vector<std::vector<int64_t>> groups = as_vectors();
  groups.back().pop_back();
  p.groups = groups;
  out.emplace_back("last shorter", p);
  p = pattern;
  p.groups.mutable_group(last).back() = gpus;
  out.emplace_back("rank outside", p);
  groups = as_vectors();
  std::swap(groups[0], groups[1]);
  p.groups = groups;
  out.emplace_back("first two swapped", p);
  return out;
}

/// Every strided pattern (groups and neighbour pairs) of every below x size x above split of `t`'s GPUs and of
/// half of them, with its variants. Returns how many reductions both found.
int compare_all(const Topology& t, const std::string& name) {
  int reduced = 0;
  const int64_t gpus = t.gpu_count();
  for (const int64_t ranks : {gpus, gpus / 2}) {
    for (int64_t below = 1; below <= ranks; ++below) {
      if (ranks % below != 0) continue;
      for (int64_t size = 1; below * size <= ranks; ++size) {
        if ((ranks / below) % size != 0) continue;
        const StridedGroups s = strided_groups(below, size, ranks / below / size);
        const std::string shape = name + " " + std::to_string(ranks) + " ranks: below " + std::to_string(below) +
                                  " size " + std::to_string(size);
        for (const auto& [how, p] : variants(s.pattern(), gpus)) expect_same(t, p, shape + " groups, " + how, reduced);
        for (const auto& [how, p] : variants(neighbour_pairs(s), gpus)) {
          expect_same(t, p, shape + " pairs, " + how, reduced);
        }
      }
    }
  }
  return reduced;
}

TEST(TranslationReference, FastScanMatchesTheReferenceOnStridedPatterns) {
  TopologyConfig two_tier = topology_config(16, FabricKind::fat_tree);
  two_tier.fat_tree_radix = 32;  // 2 nodes per leaf
  EXPECT_GT(compare_all(build_shipped("Standard_ND96isr_H100_v5", two_tier), "two tiers"), 0);
  TopologyConfig three_tier = topology_config(32, FabricKind::fat_tree);
  three_tier.fat_tree_radix = 16;
  three_tier.fat_tree_tiers = 3;  // pods of 8 nodes
  EXPECT_GT(compare_all(build_shipped("Standard_ND96isr_H100_v5", three_tier), "three tiers"), 0);
  TopologyConfig oversubscribed = topology_config(12, FabricKind::fat_tree);
  oversubscribed.fat_tree_radix = 16;
  oversubscribed.oversubscription = 2.0;
  EXPECT_GT(compare_all(build_shipped("Standard_ND96isr_H100_v5", oversubscribed), "2:1"), 0);
  TopologyConfig host_nics = topology_config(8, FabricKind::fat_tree);
  host_nics.fat_tree_radix = 4;  // one port for 8 GPUs: one side per unit
  EXPECT_GT(compare_all(build_shipped("Standard_ND40rs_v2", host_nics), "host NICs"), 0);
  EXPECT_GT(compare_all(build_shipped("Standard_NC64as_T4_v3", topology_config(6, FabricKind::single_switch)),
                        "single switch"),
            0);
}

TEST(TranslationReference, FastScanMatchesTheReferenceWithSixGpusANode) {
  // 6 GPUs and 6 rail NICs a node: nodes and units (12 ranks) by division, not by shift.
  TopologyConfig cfg = topology_config(8, FabricKind::fat_tree);
  cfg.fat_tree_radix = 24;  // 12 ports down: two nodes per leaf
  const Topology t = clustersim::testing::build_resized("Standard_ND96amsr_A100_v4", 6, cfg);
  ASSERT_EQ(t.gpus_per_node(), 6);
  EXPECT_GT(compare_all(t, "6 GPUs radix 24"), 0);
}

TEST(TranslationReference, RepeatedPairsOfAnotherBlockStayApart) {
  // Pairs that repeat the previous pair's slots join its block; a pair between them with other slots must not
  // be merged by the skip. Radix 32: 2 nodes (16 GPUs) per leaf.
  TopologyConfig cfg = topology_config(16, FabricKind::fat_tree);
  cfg.fat_tree_radix = 32;
  const Topology t = build_shipped("Standard_ND96isr_H100_v5", cfg);
  CommPattern p;
  p.groups = {{0, 16}, {1, 17}, {32, 48}, {33, 49}, {2, 18}, {34, 50}};
  int reduced = 0;
  expect_same(t, p, "interleaved pairs", reduced);
  EXPECT_GE(reduced, 1);  // send_recv: two blocks, leaves 0 -> 1 and 2 -> 3, groups {0, 1, 4} and {2, 3, 5}
  p.groups = {{0, 16}, {1, 17}, {16, 32}, {17, 33}};
  expect_same(t, p, "chained pairs", reduced);
}

}  // namespace
