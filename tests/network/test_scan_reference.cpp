// The O(ranks) scans of a pattern's first solve (issue 31, ninth round) against the code they replaced, kept here
// as references: rotation_representative (models/network/rotation_symmetry.cpp: one pass with a running count
// per local index and contiguous group comparisons, instead of a vector of groups per block, after a pass for
// chunks of consecutive local indices), and
// CollectiveModel's node_local_representative and rank validation (models/network/collective_model.cpp:
// branch-free, division-free reductions). The answers must be the same, group for group, or nullopt for both;
// the first rank outside the cluster the same rank. Shapes: every strided Megatron-like pattern (StridedGroups
// of each below x size x above split of the GPUs and of half of them) and its neighbour pairs, and edits of
// each (a rank moved, off its local index, negative, outside the cluster, at the int64 extremes; a group
// removed, one rank longer, or one longer and another shorter; the groups shuffled, reversed, or block 0's
// later groups moved last so that the other blocks run ahead of it, as they are and with such a group edited),
// on fat trees of one and two nodes per leaf, a single switch, a 6-GPU rail VM (a local index by division, not
// by mask) and a fabric the rotation refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/network/collective_model.hpp"
#include "models/network/collectives.hpp"
#include "models/network/rotation_symmetry.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/strided_groups.hpp"
#include "tests/network/network_support.hpp"
#include "tests/network/rail_vm_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::shipped_catalog;
using clustersim::testing::topology_config;

/// The reference: rotation_representative as on main 0819821 (its fabric test unchanged and repeated here).
std::optional<CommPattern> reference_rotation(const CommPattern& pattern, const Topology& topology) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2 || groups.front().empty()) return std::nullopt;
  const int64_t gpn = topology.gpus_per_node();
  const FabricShape& shape = topology.fabric_shape();
  if (shape.zones != 1 || !shape.rail_nics || shape.nics_per_node != gpn || gpn < 2) return std::nullopt;
  if (shape.fabric != FabricKind::single_switch) {
    if (shape.fabric != FabricKind::fat_tree) return std::nullopt;
    if (shape.tiers != 1 && !(shape.tiers == 2 && shape.leaf_down_ports % gpn == 0)) return std::nullopt;
  }
  const int64_t gpus = topology.gpu_count();
  const size_t size = groups.front().size();
  std::vector<std::vector<uint32_t>> blocks(static_cast<size_t>(gpn));
  for (uint32_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() != size) return std::nullopt;
    const int64_t front = groups[g].front();
    if (front < 0 || front >= gpus) return std::nullopt;
    blocks[static_cast<size_t>(front % gpn)].push_back(g);
  }
  const int64_t t0 = groups.front().front() % gpn;
  const std::vector<uint32_t>& first = blocks[static_cast<size_t>(t0)];
  for (uint32_t g : first) {
    for (int64_t r : groups[g]) {
      if (r < 0 || r >= gpus || r % gpn != t0) return std::nullopt;
    }
  }
  size_t block_count = 0;
  for (int64_t t = 0; t < gpn; ++t) {
    const std::vector<uint32_t>& block = blocks[static_cast<size_t>(t)];
    if (block.empty()) continue;
    ++block_count;
    if (t == t0) continue;
    if (block.size() != first.size()) return std::nullopt;
    for (size_t i = 0; i < block.size(); ++i) {
      for (size_t j = 0; j < size; ++j) {
        if (groups[block[i]][j] != groups[first[i]][j] + (t - t0)) return std::nullopt;
      }
    }
  }
  if (block_count < 2) return std::nullopt;
  CommPattern representative;
  for (uint32_t g : first) representative.groups.push_back(groups[g]);
  return representative;
}

/// The reference: node_local_representative as on main 0819821 (a division per rank, a zeroed table first).
std::optional<CommPattern> reference_node_local(const CommPattern& pattern, int64_t gpus_per_node) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2 || gpus_per_node < 1) return std::nullopt;
  // Node of each group, or nullopt when a group spans nodes.
  std::vector<int64_t> node_of(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.empty()) return std::nullopt;
    const int64_t node = group.front() / gpus_per_node;
    for (int64_t r : group) {
      if (r < 0 || r / gpus_per_node != node) return std::nullopt;
    }
    node_of[g] = node;
  }
  // The groups by node, and inside a node by their local ranks (lexicographically, as std::vector compares):
  // each node's groups as a sorted list, the nodes ascending.
  std::vector<uint32_t> order(groups.size());
  for (uint32_t g = 0; g < order.size(); ++g) order[g] = g;
  const auto local_less = [&](uint32_t a, uint32_t b) {
    const int64_t base_a = node_of[a] * gpus_per_node, base_b = node_of[b] * gpus_per_node;
    return std::lexicographical_compare(
        groups[a].begin(), groups[a].end(), groups[b].begin(), groups[b].end(),
        [&](int64_t x, int64_t y) { return x - base_a < y - base_b; });
  };
  const auto by_node_then_local = [&](uint32_t a, uint32_t b) {
    if (node_of[a] != node_of[b]) return node_of[a] < node_of[b];
    return local_less(a, b);
  };
  // Megatron's groups usually come in this order already (one linear check instead of a sort).
  if (!std::is_sorted(order.begin(), order.end(), by_node_then_local)) {
    std::sort(order.begin(), order.end(), by_node_then_local);
  }
  const auto local_equal = [&](uint32_t a, uint32_t b) {
    const int64_t base_a = node_of[a] * gpus_per_node, base_b = node_of[b] * gpus_per_node;
    return std::equal(groups[a].begin(), groups[a].end(), groups[b].begin(), groups[b].end(),
                      [&](int64_t x, int64_t y) { return x - base_a == y - base_b; });
  };
  // The first node's run; every other node's run must hold the same sorted local groups.
  const int64_t first_node = node_of[order.front()];
  size_t run = 0;
  while (run < order.size() && node_of[order[run]] == first_node) ++run;
  if (run == order.size()) return std::nullopt;  // one node only
  for (size_t start = run; start < order.size();) {
    size_t end = start;
    while (end < order.size() && node_of[order[end]] == node_of[order[start]]) ++end;
    if (end - start != run) return std::nullopt;
    for (size_t i = 0; i < run; ++i) {
      if (!local_equal(order[start + i], order[i])) return std::nullopt;
    }
    start = end;
  }
  // The first node's groups, in pattern order.
  CommPattern reduced;
  reduced.groups.reserve(run, run * groups.front().size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (node_of[g] == first_node) reduced.groups.push_back(groups[g]);
  }
  return reduced;
}

/// The reference: the validation loop as on main 0819821.
const int64_t* reference_first_outside(std::span<const int64_t> ranks, int64_t gpus) {
  for (const int64_t& r : ranks) {
    if (static_cast<uint64_t>(r) >= static_cast<uint64_t>(gpus)) return &r;
  }
  return nullptr;
}

std::vector<std::vector<int64_t>> as_vectors(const CommPattern& p) {
  std::vector<std::vector<int64_t>> groups;
  for (const auto& g : p.groups) groups.emplace_back(g.begin(), g.end());
  return groups;
}

CommPattern from_vectors(const std::vector<std::vector<int64_t>>& groups) {
  CommPattern p;
  p.groups = groups;
  return p;
}

/// `pattern` and edits of it that may break a reduction or the validation (random positions from `rng`).
std::vector<CommPattern> edits(const CommPattern& pattern, int64_t gpus, int64_t gpn, std::mt19937_64& rng) {
  std::vector<CommPattern> out{pattern};
  const size_t count = pattern.groups.size();
  if (count == 0) return out;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  for (const int64_t value : {int64_t{1}, gpn, int64_t{-1}, kMin, kMax}) {
    for (int k = 0; k < 2; ++k) {
      CommPattern p = pattern;
      const size_t g = rng() % count;
      auto group = p.groups.mutable_group(g);
      if (group.empty()) continue;
      int64_t& r = group[rng() % group.size()];
      if (value == 1 || value == gpn) {
        r += k == 0 ? value : -value;  // moved (off its local index, or onto another node)
      } else if (value == -1) {
        r = k == 0 ? -1 : gpus + static_cast<int64_t>(rng() % 3);  // just outside the cluster
      } else {
        r = value;
      }
      out.push_back(p);
    }
  }
  std::vector<std::vector<int64_t>> groups = as_vectors(pattern);
  std::vector<std::vector<int64_t>> v = groups;
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(rng() % count));
  out.push_back(from_vectors(v));  // a group removed
  v = groups;
  v[rng() % count].push_back(v.front().empty() ? 0 : v.front().front());
  out.push_back(from_vectors(v));  // a group one rank longer
  v = groups;
  if (count > 1 && !v[count - 1].empty()) {
    v[rng() % (count - 1)].push_back(v[count - 1].back());
    v[count - 1].pop_back();
    out.push_back(from_vectors(v));  // one group longer, the last one shorter: as many ranks
  }
  v = groups;
  std::ranges::reverse(v);
  out.push_back(from_vectors(v));
  v = groups;
  std::shuffle(v.begin() + 1, v.end(), rng);
  out.push_back(from_vectors(v));  // the first group kept first, the others in random order
  // Block 0's later groups last: the other blocks' groups come before their block-0 counterparts.
  if (!groups.front().empty() && groups.front().front() >= 0) {
    const int64_t t0 = groups.front().front() % gpn;
    v = {groups.front()};
    std::vector<std::vector<int64_t>> later;
    for (size_t g = 1; g < count; ++g) {
      const bool block0 = !groups[g].empty() && groups[g].front() >= 0 && groups[g].front() % gpn == t0;
      (block0 ? later : v).push_back(groups[g]);
    }
    const size_t last_other = v.size() - 1;  // the last group of another block: compared after the pass
    v.insert(v.end(), later.begin(), later.end());
    out.push_back(from_vectors(v));
    if (last_other > 0 && !v[last_other].empty()) {
      v[last_other].back() += gpn;  // the same local index, another node
      out.push_back(from_vectors(v));
    }
  }
  return out;
}

/// Every strided pattern of `gpus` and of half of them (groups and neighbour pairs), edited, in `f`.
template <typename F>
void for_each_pattern(int64_t gpus, int64_t gpn, F&& f) {
  std::mt19937_64 rng(31);
  for (const int64_t ranks : {gpus, gpus / 2}) {
    for (int64_t below = 1; below <= ranks; ++below) {
      if (ranks % below != 0) continue;
      for (int64_t size = 1; below * size <= ranks; ++size) {
        if ((ranks / below) % size != 0) continue;
        const StridedGroups s = strided_groups(below, size, ranks / below / size);
        const std::string shape = std::to_string(ranks) + " ranks, below " + std::to_string(below) + " size " +
                                  std::to_string(size);
        for (const CommPattern& p : edits(s.pattern(), gpus, gpn, rng)) f(p, shape + " groups");
        for (const CommPattern& p : edits(neighbour_pairs(s), gpus, gpn, rng)) f(p, shape + " pairs");
      }
    }
  }
}

/// rotation_representative and the reference agree on every pattern of for_each_pattern; returns how many
/// both reduced.
int compare_rotation(const Topology& t, const std::string& name) {
  int reduced = 0;
  for_each_pattern(t.gpu_count(), t.gpus_per_node(), [&](const CommPattern& p, const std::string& what) {
    const std::optional<CommPattern> fast = rotation_representative(p, t);
    const std::optional<CommPattern> slow = reference_rotation(p, t);
    ASSERT_EQ(fast.has_value(), slow.has_value()) << name << ": " << what << " " << ::testing::PrintToString(p.groups);
    if (fast) {
      EXPECT_EQ(fast->groups, slow->groups) << name << ": " << what;
      ++reduced;
    }
  });
  return reduced;
}

/// The A100 VM with 6 GPUs and 6 rail NICs: a local index by division.
Topology six_gpu_topology(const TopologyConfig& cfg) {
  return clustersim::testing::build_resized("Standard_ND96amsr_A100_v4", 6, cfg);
}

TEST(ScanReference, RotationMatchesTheReference) {
  TopologyConfig one_per_leaf = topology_config(16, FabricKind::fat_tree);
  one_per_leaf.fat_tree_radix = 16;
  EXPECT_GT(compare_rotation(build_shipped("Standard_ND96amsr_A100_v4", one_per_leaf), "radix 16"), 0);
  TopologyConfig two_per_leaf = topology_config(8, FabricKind::fat_tree);
  two_per_leaf.fat_tree_radix = 32;
  two_per_leaf.oversubscription = 2.0;
  EXPECT_GT(compare_rotation(build_shipped("Standard_ND96isr_H100_v5", two_per_leaf), "radix 32 2:1"), 0);
  EXPECT_GT(compare_rotation(build_shipped("Standard_ND96isr_H200_v5", topology_config(6, FabricKind::single_switch)),
                             "single switch"),
            0);
  const Topology six = six_gpu_topology(topology_config(5, FabricKind::single_switch));
  ASSERT_TRUE(six.fabric_shape().rail_nics);
  ASSERT_EQ(six.gpus_per_node(), 6);
  EXPECT_GT(compare_rotation(six, "6 GPUs single switch"), 0);
  TopologyConfig six_tree = topology_config(6, FabricKind::fat_tree);
  six_tree.fat_tree_radix = 24;  // 12 ports down: two nodes per leaf
  EXPECT_GT(compare_rotation(six_gpu_topology(six_tree), "6 GPUs radix 24"), 0);
  TopologyConfig split = topology_config(6, FabricKind::fat_tree);
  split.fat_tree_radix = 24;  // 8 GPUs: a leaf holds one and a half nodes, refused
  EXPECT_EQ(compare_rotation(build_shipped("Standard_ND96amsr_A100_v4", split), "radix 24"), 0);
}

TEST(ScanReference, RotationDefersBlocksAheadOfBlockZero) {
  // GPUs 0..3 of nodes 0 and 1 (8 GPUs each), block 0's second group last: local indices 1..3 are met before
  // their block-0 counterpart, and must still be compared with it.
  const Topology t = build_shipped("Standard_ND96isr_H100_v5", topology_config(4, FabricKind::single_switch));
  CommPattern p;
  p.groups = {{0, 8}, {1, 9}, {17, 25}, {2, 10}, {18, 26}, {16, 24}};
  ASSERT_TRUE(rotation_representative(p, t));
  EXPECT_EQ(rotation_representative(p, t)->groups, (std::vector<std::vector<int64_t>>{{0, 8}, {16, 24}}));
  p.groups = {{0, 8}, {1, 9}, {17, 25}, {2, 10}, {18, 26}, {16, 0}};  // the late block-0 group differs
  EXPECT_FALSE(rotation_representative(p, t));
  EXPECT_FALSE(reference_rotation(p, t));
  p.groups = {{0, 8}, {1, 9}, {17, 25}, {2, 10}, {18, 27}, {16, 24}};  // a deferred group differs
  EXPECT_FALSE(rotation_representative(p, t));
  EXPECT_FALSE(reference_rotation(p, t));
}

TEST(ScanReference, RotationChunksStayOnTheirNode) {
  // Chunks of consecutive local indices 6, 7 and then 0 of the next node: the third group is the first moved
  // by 2 rank by rank, but on another node (local index 0, not 8), so block 0 moved by -6 and no rotation.
  const Topology t = build_shipped("Standard_ND96isr_H100_v5", topology_config(5, FabricKind::single_switch));
  CommPattern p;
  p.groups = {{6, 14}, {7, 15}, {8, 16}, {22, 30}, {23, 31}, {24, 32}};
  EXPECT_FALSE(rotation_representative(p, t));
  EXPECT_FALSE(reference_rotation(p, t));
  CommPattern q;  // the same with local indices 5, 6, 7: a rotation
  q.groups = {{5, 13}, {6, 14}, {7, 15}, {21, 29}, {22, 30}, {23, 31}};
  ASSERT_TRUE(rotation_representative(q, t));
  EXPECT_EQ(rotation_representative(q, t)->groups, (std::vector<std::vector<int64_t>>{{5, 13}, {21, 29}}));
}

TEST(ScanReference, NodeLocalMatchesTheReference) {
  int reduced = 0;
  for (const int64_t gpn : {1, 3, 6, 8}) {
    for_each_pattern(12 * gpn, gpn, [&](const CommPattern& p, const std::string& what) {
      const std::optional<CommPattern> fast = detail::node_local_representative(p, gpn);
      const std::optional<CommPattern> slow = reference_node_local(p, gpn);
      ASSERT_EQ(fast.has_value(), slow.has_value()) << gpn << ": " << what << " " << ::testing::PrintToString(p.groups);
      if (fast) {
        EXPECT_EQ(fast->groups, slow->groups) << gpn << ": " << what;
        ++reduced;
      }
    });
  }
  EXPECT_GT(reduced, 0);
  // Nodes holding their groups in another order, and ranks that differ by a whole node.
  CommPattern p;
  p.groups = {{0, 1}, {2, 3}, {6, 7}, {4, 5}};
  ASSERT_TRUE(detail::node_local_representative(p, 4));
  EXPECT_EQ(detail::node_local_representative(p, 4)->groups, reference_node_local(p, 4)->groups);
  p.groups = {{0, 1}, {2, 3}, {6, 7}, {4, 9}};
  EXPECT_FALSE(detail::node_local_representative(p, 4));
  p.groups = {{-4, -3}, {0, 1}};
  EXPECT_FALSE(detail::node_local_representative(p, 4));
  p.groups = {{4, 5}, {6, 7}};  // a single node
  EXPECT_FALSE(detail::node_local_representative(p, 4));
  p.groups = {{0, 1}, {2, 3}, {4, 5}};  // two nodes, a run of two then one
  EXPECT_FALSE(detail::node_local_representative(p, 4));
  for (const auto& groups : std::vector<std::vector<std::vector<int64_t>>>{
           {{0, 1}, {4, 5}, {2, 3}, {6, 7}},  // nodes out of order: the general algorithm
           {{0, 1}, {4, 5}, {2, 3}, {6, 7}, {8, 9}, {10, 11}},
           {{2, 3}, {0, 1}, {6, 7}, {4, 5}}}) {  // node-major, each node's groups in the same order
    CommPattern q;
    q.groups = groups;
    ASSERT_TRUE(detail::node_local_representative(q, 4));
    EXPECT_EQ(detail::node_local_representative(q, 4)->groups, reference_node_local(q, 4)->groups);
  }
  // Ranks at the int64 extremes: with 3 GPUs a node, 2^63 - 2 starts a node; 2^63 - 1 and -2^63 are one apart
  // modulo 2^64.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const std::vector<std::vector<std::vector<int64_t>>> extremes{
      {{0, 1}, {kMax - 1, kMin}}, {{kMax, kMin}, {0, 1}}, {{0, 1}, {kMax - 1, kMax}}, {{1, 2}, {kMax - 1, kMax}}};
  for (const auto& groups : extremes) {
    p.groups = groups;
    EXPECT_EQ(detail::node_local_representative(p, 3).has_value(), reference_node_local(p, 3).has_value());
  }
}

TEST(ScanReference, FirstRankOutsideMatchesTheReference) {
  std::mt19937_64 rng(47);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  for (const int64_t gpus : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{64}, int64_t{131072}, kMax}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{17}, size_t{1000}}) {
      std::vector<int64_t> ranks(n);
      for (int64_t& r : ranks) r = gpus > 0 ? static_cast<int64_t>(rng() % static_cast<uint64_t>(gpus)) : 0;
      EXPECT_EQ(detail::first_rank_outside(ranks, gpus), reference_first_outside(ranks, gpus)) << gpus << " " << n;
      for (const int64_t bad : {int64_t{-1}, gpus, gpus < kMax ? gpus + 1 : kMin, kMin, kMax, gpus - 1, int64_t{0}}) {
        if (n == 0) continue;
        std::vector<int64_t> edited = ranks;
        edited[rng() % n] = bad;
        if (n > 2) edited[rng() % n] = bad == kMin ? kMax : -2;  // a second one, maybe earlier
        EXPECT_EQ(detail::first_rank_outside(edited, gpus), reference_first_outside(edited, gpus))
            << gpus << " " << n << " " << bad;
      }
    }
  }
}

TEST(ScanReference, ModelRejectsEveryPatternWithARankOutside) {
  // The model validates only patterns that no rotation or translation of the whole pattern reduced: every
  // pattern with a rank outside the cluster must still throw, naming the first such rank. Fat tree of one node
  // per leaf (translation and rotation apply), all_reduce and send_recv.
  TopologyConfig cfg = topology_config(8, FabricKind::fat_tree);
  cfg.fat_tree_radix = 16;
  const Topology t = build_shipped("Standard_ND96isr_H100_v5", cfg);
  const CollectiveModel model(t, CollectiveConstants::for_vm(shipped_catalog().vm_size("Standard_ND96isr_H100_v5")));
  int rejected = 0;
  for_each_pattern(t.gpu_count(), t.gpus_per_node(), [&](const CommPattern& p, const std::string& what) {
    const int64_t* bad = reference_first_outside(p.groups.all_ranks(), t.gpu_count());
    if (bad == nullptr || p.groups.front().size() < 2) return;  // valid (solved elsewhere) or never solved
    const std::string expected =
        "CollectiveModel: rank " + std::to_string(*bad) + " is not a GPU of the " + std::to_string(t.gpu_count()) +
        "-GPU cluster";
    for (const CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::send_recv}) {
      try {
        (void)model.collective_time(op, p, clustersim::units::Bytes(1e6));
        ADD_FAILURE() << "no throw: " << what << " " << ::testing::PrintToString(p.groups);
      } catch (const std::invalid_argument& e) {
        EXPECT_EQ(e.what(), expected) << what;
        ++rejected;
      }
    }
  });
  EXPECT_GT(rejected, 100);
}

TEST(ScanReference, ModelNamesTheFirstRankOutside) {
  const Topology t = build_shipped("Standard_ND96isr_H100_v5", topology_config(2, FabricKind::single_switch));
  const CollectiveModel model(t, CollectiveConstants::for_vm(shipped_catalog().vm_size("Standard_ND96isr_H100_v5")));
  CommPattern p;
  p.groups = {{0, 8}, {1, 9}, {2, -5}, {3, 16}};
  try {
    (void)model.collective_time(CollectiveOp::all_reduce, p, clustersim::units::Bytes(1e6));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "CollectiveModel: rank -5 is not a GPU of the 16-GPU cluster");
  }
  // Node-local groups of three nodes on a two-node cluster: node_local_representative reduces them to node 0's,
  // which does not prove the ranks valid.
  CommPattern three_nodes;  // a new pattern: CommPattern caches its hash
  three_nodes.groups = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}, {16, 17, 18, 19, 20, 21, 22, 23}};
  try {
    (void)model.collective_time(CollectiveOp::all_reduce, three_nodes, clustersim::units::Bytes(1e6));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "CollectiveModel: rank 16 is not a GPU of the 16-GPU cluster");
  }
  CommPattern shuffled;  // the general node-local path (nodes out of order), a rank past the cluster last
  shuffled.groups = {{8, 9, 10, 11}, {0, 1, 2, 3}, {4, 5, 6, 7}, {12, 13, 14, 15}, {20, 21, 22, 23}, {16, 17, 18, 19}};
  EXPECT_TRUE(detail::node_local_representative(shuffled, 8));
  try {
    (void)model.collective_time(CollectiveOp::all_reduce, shuffled, clustersim::units::Bytes(1e6));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "CollectiveModel: rank 20 is not a GPU of the 16-GPU cluster");
  }
}

}  // namespace
