// Exact rotation symmetry on fat trees with rail NICs (models/network/rotation_symmetry.hpp, issue 31): where a
// pattern's groups each sit at one local index and the groups of every local index are those of the first group's
// index moved to it, that index's groups give each phase's time bit for bit, and the same repeats, step counts and
// zone latency, as the whole pattern, for every op and algorithm; elsewhere the reduction declines. Shapes: A100,
// H100 and H200 VMs on two-tier fat trees of radix 16, 32, 48 and 64 (8, 16, 24, 32 spines), non-blocking and
// oversubscribed, node counts that leave the last leaf part-filled, a single leaf and a single switch; data-
// parallel rings of one and several pipeline stages (alone and after pattern_symmetry's translation), strided
// and expert-style groups, a subset of local indices, same-index send/recv pairs. Refusals: three tiers, two
// zones, rail-optimized fabrics, NICs on the host, leaves that split a node (radix 8, 24 and 40, where the
// refusal matters: groups of different local indices share spine links there), groups of two local indices,
// blocks that are not rotations, a single block.
#include "models/network/rotation_symmetry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/network/collective_model.hpp"
#include "models/network/collectives.hpp"
#include "models/network/pattern_symmetry.hpp"
#include "tests/network/network_support.hpp"
#include "tests/network/schedule_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::expect_same_schedules;
using clustersim::testing::shipped_catalog;
using clustersim::testing::topology_config;
namespace units = clustersim::units;

constexpr const char* kA100 = "Standard_ND96amsr_A100_v4";
constexpr const char* kH100 = "Standard_ND96isr_H100_v5";
constexpr const char* kH200 = "Standard_ND96isr_H200_v5";

/// The reduction applies to `pattern`, keeps its first group first and is exact for `op`.
void expect_exact(const Topology& t, const CommPattern& pattern, CollectiveOp op, const std::string& what) {
  const std::optional<CommPattern> rep = rotation_representative(pattern, t);
  ASSERT_TRUE(rep.has_value()) << what;
  EXPECT_LT(rep->groups.size(), pattern.groups.size()) << what;
  EXPECT_TRUE(std::ranges::equal(rep->groups.front(), pattern.groups.front())) << what;
  expect_same_schedules(t, pattern, *rep, op, what);
}

/// Every op but send_recv on `pattern`.
void expect_exact_all_ops(const Topology& t, const CommPattern& pattern, const std::string& what) {
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                          CollectiveOp::broadcast, CollectiveOp::all_to_all, CollectiveOp::ring_shift}) {
    expect_exact(t, pattern, op, what);
  }
}

/// For each node list of `node_lists` (in order) and each local index of `locals` (in order): the group of GPU
/// t of those nodes (a data-parallel group of one pipeline stage when a list is a stage's nodes).
CommPattern rails_of(const std::vector<std::vector<int64_t>>& node_lists, const std::vector<int64_t>& locals,
                     int64_t gpn) {
  CommPattern p;
  for (const auto& nodes : node_lists) {
    for (int64_t t : locals) {
      std::vector<int64_t> group;
      for (int64_t n : nodes) group.push_back(n * gpn + t);
      p.groups.push_back(group);
    }
  }
  return p;
}

/// Nodes first, first + step, ... (count of them).
std::vector<int64_t> nodes_from(int64_t first, int64_t count, int64_t step = 1) {
  std::vector<int64_t> nodes;
  for (int64_t k = 0; k < count; ++k) nodes.push_back(first + k * step);
  return nodes;
}

/// The shapes the claim covers on `t`: one data-parallel stage over every node (all local indices, and a subset
/// starting past 0), stages of contiguous nodes (the whole pattern, and translation's block of it when that
/// reduction applies), strided stages, expert-style groups of 2 and 4 nodes, and same-index send/recv pairs.
void expect_all_exact(const Topology& t, const std::string& what) {
  const int64_t gpn = t.gpus_per_node(), nodes = t.node_count();
  std::vector<int64_t> all(static_cast<size_t>(gpn));
  for (int64_t l = 0; l < gpn; ++l) all[static_cast<size_t>(l)] = l;
  expect_exact_all_ops(t, rails_of({nodes_from(0, nodes)}, all, gpn), what + " one stage");
  expect_exact_all_ops(t, rails_of({nodes_from(0, nodes)}, {3, 1, 6}, gpn), what + " locals 3, 1, 6");
  for (int64_t stages : {2, 4}) {
    if (nodes % stages != 0) continue;
    const int64_t per = nodes / stages;
    std::vector<std::vector<int64_t>> contiguous, strided;
    for (int64_t s = 0; s < stages; ++s) {
      contiguous.push_back(nodes_from(s * per, per));
      strided.push_back(nodes_from(s, per, stages));
    }
    const std::string s = what + " " + std::to_string(stages) + " stages";
    const CommPattern dp = rails_of(contiguous, all, gpn);
    expect_exact_all_ops(t, dp, s);
    expect_exact_all_ops(t, rails_of(strided, all, gpn), s + " strided");
    for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather}) {
      if (const auto block = translation_representative(op, dp, t)) {
        const auto rep = rotation_representative(*block, t);
        ASSERT_TRUE(rep.has_value()) << s;
        EXPECT_EQ(rep->groups.size(), 1u) << s;
        expect_same_schedules(t, dp, *rep, op, s + " after translation");
      }
    }
  }
  for (int64_t span : {2, 4}) {
    std::vector<std::vector<int64_t>> experts;
    for (int64_t b = 0; b + span <= nodes; b += span) experts.push_back(nodes_from(b, span));
    expect_exact(t, rails_of(experts, all, gpn), CollectiveOp::all_to_all, what + " experts of " + std::to_string(span));
  }
  CommPattern pairs, neighbours;  // GPU t of node n sends to GPU t of node n + nodes / 2; of node n + 1
  for (int64_t l = 0; l < gpn; ++l) {
    for (int64_t n = 0; n < nodes / 2; ++n) pairs.groups.push_back({n * gpn + l, (n + nodes / 2) * gpn + l});
    for (int64_t n = 0; n + 1 < nodes; n += 2) neighbours.groups.push_back({(n + 1) * gpn + l, n * gpn + l});
  }
  expect_exact(t, pairs, CollectiveOp::send_recv, what + " half-cluster sends");
  expect_exact(t, neighbours, CollectiveOp::send_recv, what + " neighbour sends");
}

TopologyConfig tree(int64_t nodes, int radix, double oversubscription = 1.0) {
  TopologyConfig cfg = topology_config(nodes, FabricKind::fat_tree);
  cfg.fat_tree_radix = radix;
  cfg.oversubscription = oversubscription;
  return cfg;
}

TEST(RotationSymmetry, ExactOnTwoTierFatTrees) {
  // Radix 16: 8 spines, one node per leaf; 32: 16 spines, 2 nodes per leaf; 48: 24 spines, 3 per leaf (7 and 10
  // nodes part-fill the last leaf); 64: 32 spines, 4 per leaf.
  expect_all_exact(build_shipped(kA100, tree(8, 16)), "A100 x8 radix 16");
  expect_all_exact(build_shipped(kA100, tree(8, 16, 4.0)), "A100 x8 radix 16 4:1");
  expect_all_exact(build_shipped(kH100, tree(7, 32)), "H100 x7 radix 32");
  expect_all_exact(build_shipped(kH100, tree(12, 48, 2.0)), "H100 x12 radix 48 2:1");
  expect_all_exact(build_shipped(kH200, tree(10, 48, 3.0)), "H200 x10 radix 48 3:1");
  expect_all_exact(build_shipped(kA100, tree(16, 64)), "A100 x16 radix 64");
  expect_all_exact(build_shipped(kA100, tree(14, 64, 2.0)), "A100 x14 radix 64 2:1");
}

TEST(RotationSymmetry, ExactOnOneLeafAndOneSwitch) {
  expect_all_exact(build_shipped(kH100, tree(4, 64)), "H100 x4 one leaf");
  expect_all_exact(build_shipped(kH100, topology_config(6, FabricKind::single_switch)), "H100 x6 single switch");
}

TEST(RotationSymmetry, DeclinesWhereNotProven) {
  const Topology t = build_shipped(kA100, tree(8, 16));
  const CommPattern dp = rails_of({nodes_from(0, 8)}, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
  ASSERT_TRUE(rotation_representative(dp, t));
  // Three tiers (radix 16: 8 leaves per pod, 12 nodes need two pods), two zones, rail-optimized, NICs on the host.
  TopologyConfig three = tree(12, 16);
  three.fat_tree_tiers = 3;
  const Topology pods = build_shipped(kA100, three);
  ASSERT_EQ(pods.fabric_shape().tiers, 3);
  EXPECT_FALSE(rotation_representative(rails_of({nodes_from(0, 12)}, {0, 1, 2, 3, 4, 5, 6, 7}, 8), pods));
  TopologyConfig zoned = tree(8, 16);
  zoned.zones = {{"a", 4}, {"b", 4}};
  EXPECT_FALSE(rotation_representative(dp, build_shipped(kA100, zoned)));
  EXPECT_FALSE(rotation_representative(dp, build_shipped(kA100, topology_config(8, FabricKind::rail_optimized))));
  EXPECT_FALSE(rotation_representative(dp, build_shipped("Standard_ND40rs_v2", tree(8, 16))));
  // A group with two local indices (GPUs 0 and 1 of each node), with the same shape at 2 and 3, 4 and 5, 6 and 7.
  CommPattern pairs_of_locals;
  for (int64_t l = 0; l < 8; l += 2) {
    std::vector<int64_t> group;
    for (int64_t n = 0; n < 8; ++n) {
      group.push_back(n * 8 + l);
      group.push_back(n * 8 + l + 1);
    }
    pairs_of_locals.groups.push_back(group);
  }
  EXPECT_FALSE(rotation_representative(pairs_of_locals, t));
  // Blocks that are not rotations: one group's nodes in another order, a missing group, and a single block.
  CommPattern swapped = dp;
  std::swap(swapped.groups.mutable_group(5)[0], swapped.groups.mutable_group(5)[1]);
  EXPECT_FALSE(rotation_representative(swapped, t));
  // A rank at another local index or outside the cluster, in block 0 (checked rank by rank) or in a later block
  // (caught by the comparison with block 0 moved).
  for (const size_t g : {size_t{0}, size_t{3}, size_t{7}}) {
    CommPattern stray = dp;
    stray.groups.mutable_group(g)[2] += 1;
    EXPECT_FALSE(rotation_representative(stray, t)) << g;
    CommPattern outside = dp;
    outside.groups.mutable_group(g).back() = t.gpu_count() + static_cast<int64_t>(g);
    EXPECT_FALSE(rotation_representative(outside, t)) << g;
    outside.groups.mutable_group(g).back() = -1;
    EXPECT_FALSE(rotation_representative(outside, t)) << g;
  }
  CommPattern uneven = rails_of({nodes_from(0, 4), nodes_from(4, 4)}, {0, 1}, 8);
  uneven.groups.pop_back();
  EXPECT_FALSE(rotation_representative(uneven, t));
  EXPECT_FALSE(rotation_representative(rails_of({nodes_from(0, 4), nodes_from(4, 4)}, {2}, 8), t));
  EXPECT_TRUE(rotation_representative(rails_of({nodes_from(0, 4), nodes_from(4, 4)}, {2, 5}, 8), t));
}

TEST(RotationSymmetry, RefusalMattersWhereLeavesSplitNodes) {
  // Radix 8, 24 and 40 (4, 12 and 20 spines: a leaf holds half a node, one and a half, two and a half): a node's
  // NICs sit on two leaves and ECMP's spine (destination % spines) no longer follows the local index modulo 8, so
  // groups of different local indices share up- and down-links and the reduction declines. Where it must: on
  // 4:1 oversubscribed up-links the whole data-parallel pattern is slower than its first group alone (a ring
  // all-gather over 5 nodes on radix 24, twice as slow; an all-to-all over 3 nodes on radix 40).
  EXPECT_FALSE(rotation_representative(rails_of({nodes_from(0, 6)}, {0, 1, 2, 3, 4, 5, 6, 7}, 8),
                                       build_shipped(kH100, tree(6, 8, 4.0))));
  for (auto [radix, nodes, op, algorithm] :
       {std::tuple{24, int64_t{5}, CollectiveOp::all_gather, CollectiveAlgorithm::ring},
        std::tuple{40, int64_t{3}, CollectiveOp::all_to_all, CollectiveAlgorithm::direct}}) {
    const Topology t = build_shipped(kH100, tree(nodes, radix, 4.0));
    const CommPattern dp = rails_of({nodes_from(0, nodes)}, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
    EXPECT_FALSE(rotation_representative(dp, t)) << radix;
    CommPattern first;
    first.groups.push_back(dp.groups.front());
    LinkEfficiency eff;
    const auto whole = build_schedule(op, algorithm, t, dp, false);
    const auto block = build_schedule(op, algorithm, t, first, false);
    ASSERT_TRUE(whole && block) << radix;
    EXPECT_GT(bandwidth_seconds_per_byte(*whole, t, eff), bandwidth_seconds_per_byte(*block, t, eff)) << radix;
  }
}

TEST(RotationSymmetry, ModelTimesEqualTheWholeSchedules) {
  // The model chains translation and rotation on a two-stage data-parallel pattern (radix 16: one node per leaf,
  // so each stage of 4 nodes is 4 leaves, a whole translation period): every op's time equals the whole
  // pattern's schedule priced by hand.
  const Topology t = build_shipped(kH100, tree(8, 16, 2.0));
  const CollectiveConstants k = CollectiveConstants::for_vm(shipped_catalog().vm_size(kH100));
  const CommPattern dp = rails_of({nodes_from(0, 4), nodes_from(4, 4)}, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
  ASSERT_TRUE(translation_representative(CollectiveOp::all_reduce, dp, t));
  LinkEfficiency eff;
  eff.nvlink = k.ring_efficiency;
  eff.pcie = k.pcie_efficiency;
  eff.infinity_fabric = k.ring_efficiency;
  eff.infiniband = k.infiniband_efficiency;
  eff.ethernet = k.ethernet_efficiency;
  eff.inter_zone = k.ethernet_efficiency;
  const units::Bytes bytes(64.0 * 1024 * 1024);
  CollectiveModel model(t, k);
  for (auto [op, algorithm] : {std::pair{CollectiveOp::all_reduce, CollectiveAlgorithm::tree},
                               std::pair{CollectiveOp::all_gather, CollectiveAlgorithm::ring},
                               std::pair{CollectiveOp::all_to_all, CollectiveAlgorithm::direct}}) {
    const CollectiveTiming timing = model.time(op, dp, bytes, algorithm);
    const auto whole = build_schedule(op, algorithm, t, dp, false);
    ASSERT_TRUE(whole);
    const double bw = bandwidth_seconds_per_byte(*whole, t, eff) * bytes.value();
    EXPECT_TRUE(timing.bandwidth_time.value() == bw || timing.bandwidth_time.value() == 4.0 * bw)
        << to_string(op) << " " << timing.bandwidth_time.value() << " vs " << bw;
  }
}

}  // namespace
