// Exact translation symmetry (models/network/pattern_symmetry.hpp, issue 31): where a pattern's blocks of
// groups are one block moved by whole leaves or pods, the block's schedule gives the same bandwidth time, to the
// last bit, and the same step counts as the whole pattern's (the exact path); elsewhere the reduction declines.
// Shapes: two-tier fat trees (non-blocking and 2:1 oversubscribed), a three-tier fat tree, a single switch, NICs
// on the host (ND40rs_v2: one EDR port for 8 GPUs); rail-optimized, two zones and asymmetric patterns fall back.
#include "models/network/pattern_symmetry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/network/collectives.hpp"
#include "tests/network/network_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::topology_config;

constexpr const char* kH100 = "Standard_ND96isr_H100_v5";
constexpr const char* kV100OnePort = "Standard_ND40rs_v2";
constexpr const char* kT4x4 = "Standard_NC64as_T4_v3";

/// Every (op, algorithm) a layout's patterns meet, on `pattern`: the representative's schedule against the
/// whole pattern's, bandwidth time bit for bit, and each phase's repeat and step counts.
void expect_exact(const Topology& t, const CommPattern& pattern, CollectiveOp op, const std::string& what) {
  const std::optional<CommPattern> rep = translation_representative(op, pattern, t);
  ASSERT_TRUE(rep.has_value()) << what;
  EXPECT_LT(rep->groups.size(), pattern.groups.size()) << what;
  EXPECT_TRUE(std::ranges::equal(rep->groups.front(), pattern.groups.front())) << what;
  LinkEfficiency eff;
  eff.nvlink = 0.842;
  eff.infiniband = 0.9;
  eff.ethernet = 0.8;
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
                                CollectiveAlgorithm::direct}) {
    const auto whole = build_schedule(op, a, t, pattern, false);
    const auto block = build_schedule(op, a, t, *rep, false);
    ASSERT_EQ(whole.has_value(), block.has_value()) << what << " " << to_string(a);
    if (!whole) continue;
    const double exact = bandwidth_seconds_per_byte(*whole, t, eff);
    const double fast = bandwidth_seconds_per_byte(*block, t, eff);
    EXPECT_GT(exact, 0.0);
    EXPECT_EQ(fast, exact) << what << " " << to_string(op) << "/" << to_string(a);
    ASSERT_EQ(whole->phases.size(), block->phases.size());
    for (size_t p = 0; p < whole->phases.size(); ++p) {
      EXPECT_EQ(whole->phases[p].repeat, block->phases[p].repeat);
      EXPECT_EQ(whole->phases[p].intra_steps, block->phases[p].intra_steps);
      EXPECT_EQ(whole->phases[p].inter_steps, block->phases[p].inter_steps);
    }
  }
}

/// Megatron-like patterns on `stages` stages of `nodes_per_stage` nodes of `gpn` GPUs: per stage, the
/// data-parallel groups (GPU t of every node of the stage), groups of two members per node (GPUs t and
/// t + gpn/2), cross-rail groups (GPU (d + t) % gpn of node d), and the pipeline sends between stages.
struct Patterns {
  CommPattern data, pairs_per_node, cross_rail, pipeline;
};
Patterns stage_patterns(int64_t stages, int64_t nodes_per_stage, int64_t gpn) {
  Patterns p;
  for (int64_t s = 0; s < stages; ++s) {
    for (int64_t t = 0; t < gpn; ++t) {
      std::vector<int64_t> dp, diagonal;
      for (int64_t d = 0; d < nodes_per_stage; ++d) {
        const int64_t node = s * nodes_per_stage + d;
        dp.push_back(node * gpn + t);
        diagonal.push_back(node * gpn + (d + t) % gpn);
        if (s + 1 < stages) p.pipeline.groups.push_back({node * gpn + t, (node + nodes_per_stage) * gpn + t});
      }
      p.data.groups.push_back(dp);
      p.cross_rail.groups.push_back(diagonal);
    }
    for (int64_t t = 0; t < gpn / 2; ++t) {
      std::vector<int64_t> group;
      for (int64_t d = 0; d < nodes_per_stage; ++d) {
        const int64_t node = s * nodes_per_stage + d;
        group.push_back(node * gpn + t);
        group.push_back(node * gpn + t + gpn / 2);
      }
      p.pairs_per_node.groups.push_back(group);
    }
  }
  return p;
}

/// `pipeline_reduces`: false where a node's sends and receives share links (NICs on the host), so the stages'
/// pipeline sends form one block.
void expect_all_exact(const Topology& t, int64_t stages, int64_t nodes_per_stage, const std::string& what,
                      bool pipeline_reduces = true) {
  const Patterns p = stage_patterns(stages, nodes_per_stage, t.gpus_per_node());
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                          CollectiveOp::all_to_all, CollectiveOp::ring_shift, CollectiveOp::broadcast}) {
    expect_exact(t, p.data, op, what + " data");
    expect_exact(t, p.cross_rail, op, what + " cross-rail");
    if (t.gpus_per_node() >= 2) expect_exact(t, p.pairs_per_node, op, what + " two per node");
  }
  if (pipeline_reduces) {
    expect_exact(t, p.pipeline, CollectiveOp::send_recv, what + " pipeline");
  } else {
    EXPECT_FALSE(translation_representative(CollectiveOp::send_recv, p.pipeline, t)) << what;
  }
}

TEST(TranslationSymmetry, PeriodIsWholeLeavesAndEcmpDigits) {
  // H100, radix 32: 16 NICs per leaf = 2 nodes; leaf up-links pick dest % 16: 8 x D = 0 mod 16 -> D even.
  TopologyConfig cfg = topology_config(16, FabricKind::fat_tree);
  cfg.fat_tree_radix = 32;
  const auto two_tier = translation_symmetry(build_shipped(kH100, cfg).fabric_shape(), 8);
  ASSERT_TRUE(two_tier.has_value());
  EXPECT_EQ(two_tier->unit_nodes, 2);
  EXPECT_EQ(two_tier->period_nodes, 2);
  EXPECT_TRUE(two_tier->split_sides);
  // Three tiers, radix 16: pods of 8 leaves of 1 node; two ECMP digits of 8: 8 x D = 0 mod 64 -> D = 8k.
  cfg = topology_config(32, FabricKind::fat_tree);
  cfg.fat_tree_radix = 16;
  cfg.fat_tree_tiers = 3;
  const auto three_tier = translation_symmetry(build_shipped(kH100, cfg).fabric_shape(), 8);
  ASSERT_TRUE(three_tier.has_value());
  EXPECT_EQ(three_tier->unit_nodes, 8);
  EXPECT_EQ(three_tier->period_nodes, 8);
  // Rails share their spines; two zones cross gateways: no reduction.
  EXPECT_FALSE(translation_symmetry(build_shipped(kH100, topology_config(4, FabricKind::rail_optimized)).fabric_shape(), 8));
  cfg = topology_config(4, FabricKind::fat_tree);
  cfg.zones = {{"a", 2}, {"b", 2}};
  EXPECT_FALSE(translation_symmetry(build_shipped(kH100, cfg).fabric_shape(), 8));
}

TEST(TranslationSymmetry, TwoTierFatTreeMatchesExactPath) {
  TopologyConfig cfg = topology_config(16, FabricKind::fat_tree);
  cfg.fat_tree_radix = 32;  // 2 nodes per leaf, 8 leaves, 16 spines
  const Topology t = build_shipped(kH100, cfg);
  expect_all_exact(t, 4, 4, "radix 32, 4 stages of 4 nodes");
  expect_all_exact(t, 8, 2, "radix 32, 8 stages of 2 nodes");
}

TEST(TranslationSymmetry, OversubscribedFatTreeMatchesExactPath) {
  TopologyConfig cfg = topology_config(12, FabricKind::fat_tree);
  cfg.fat_tree_radix = 16;  // 1 node per leaf, 8 spines
  cfg.oversubscription = 2.0;
  const Topology t = build_shipped(kH100, cfg);
  expect_all_exact(t, 4, 3, "radix 16 2:1, 4 stages of 3 nodes");
}

TEST(TranslationSymmetry, ThreeTierFatTreeMatchesExactPath) {
  TopologyConfig cfg = topology_config(32, FabricKind::fat_tree);
  cfg.fat_tree_radix = 16;
  cfg.fat_tree_tiers = 3;  // 32 leaves in 4 pods of 8
  const Topology t = build_shipped(kH100, cfg);
  expect_all_exact(t, 4, 8, "three tiers, 4 stages of one pod");
  expect_all_exact(t, 2, 16, "three tiers, 2 stages of two pods");
}

TEST(TranslationSymmetry, SingleSwitchAndHostNicsMatchExactPath) {
  const Topology t4 = build_shipped(kT4x4, topology_config(6, FabricKind::single_switch));
  expect_all_exact(t4, 3, 2, "T4 x4, single switch");
  TopologyConfig cfg = topology_config(8, FabricKind::fat_tree);
  cfg.fat_tree_radix = 4;  // 2 one-port nodes per leaf, 2 spines
  const Topology v100 = build_shipped(kV100OnePort, cfg);
  EXPECT_FALSE(translation_symmetry(v100.fabric_shape(), 8)->split_sides);
  expect_all_exact(v100, 4, 2, "ND40rs_v2, NICs on the host", /*pipeline_reduces=*/false);
}

TEST(TranslationSymmetry, DeclinesWhereNotProvable) {
  TopologyConfig cfg = topology_config(16, FabricKind::fat_tree);
  cfg.fat_tree_radix = 32;
  const Topology t = build_shipped(kH100, cfg);
  // Two leaf-disjoint rings three nodes apart: a leaf and a half is not a symmetry (2 nodes per leaf).
  CommPattern half_leaf;
  half_leaf.groups = {{0, 8}, {24, 32}};
  EXPECT_FALSE(translation_representative(CollectiveOp::all_reduce, half_leaf, t));
  half_leaf.groups = {{0, 8}, {32, 40}};  // two leaves apart: a symmetry
  EXPECT_TRUE(translation_representative(CollectiveOp::all_reduce, half_leaf, t));
  // Blocks of different shapes: a ring over nodes 0-3 and one over nodes 4, 6, 8 and 10.
  CommPattern uneven;
  uneven.groups = {{0, 8, 16, 24}, {32, 48, 64, 80}};
  EXPECT_FALSE(translation_representative(CollectiveOp::all_reduce, uneven, t));
  // One block: groups that span every leaf.
  EXPECT_FALSE(translation_representative(CollectiveOp::all_reduce, stage_patterns(1, 16, 8).data, t));
  // Blocks that are translates but with their groups in another order.
  CommPattern shuffled;
  shuffled.groups = {{0, 16}, {1, 17}, {33, 49}, {32, 48}};
  EXPECT_FALSE(translation_representative(CollectiveOp::all_reduce, shuffled, t));
  // Rail-optimized and two zones: the exact path.
  const Topology rails = build_shipped(kH100, topology_config(16, FabricKind::rail_optimized));
  EXPECT_FALSE(translation_representative(CollectiveOp::all_reduce, stage_patterns(4, 4, 8).data, rails));
  TopologyConfig zoned = topology_config(16, FabricKind::fat_tree);
  zoned.fat_tree_radix = 32;
  zoned.zones = {{"a", 8}, {"b", 8}};
  EXPECT_FALSE(translation_representative(CollectiveOp::all_reduce, stage_patterns(4, 4, 8).data,
                                          build_shipped(kH100, zoned)));
}

}  // namespace
