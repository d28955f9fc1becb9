// Exact symmetry on rail-optimized fabrics (models/network/rail_symmetry.hpp, issue 31): where a pattern's
// blocks of groups are one block moved by whole nodes and rails and no transfer crosses rails, the block's
// schedule, for every op and algorithm, gives each phase's time bit for bit, and the same repeats, step counts
// and zone latency, as the whole pattern's; elsewhere the reduction declines. Shapes: H100, H200 and A100 VMs on
// rails (non-blocking, 2:1 and 16:1 oversubscribed, radix 4 / 16 / 64), GB200 NVL72 domains (72 rails);
// refusals on fat trees, two zones, NICs on the host (ND40rs_v2), no NVLink switch (MI300X), cross-rail and
// uneven groups, blocks that are not translates.
#include "models/network/rail_symmetry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/network/collective_model.hpp"
#include "models/network/collectives.hpp"
#include "tests/network/network_support.hpp"
#include "tests/network/schedule_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::expect_same_schedules;
using clustersim::testing::shipped_catalog;
using clustersim::testing::topology_config;
namespace units = clustersim::units;

constexpr const char* kH100 = "Standard_ND96isr_H100_v5";

/// The reduction applies to `pattern`, keeps its first group first, and the block's schedule is the whole
/// pattern's for every algorithm (expect_same_schedules).
void expect_exact(const Topology& t, const CommPattern& pattern, CollectiveOp op, const std::string& what) {
  const std::optional<CommPattern> rep = rail_block_representative(op, pattern, t);
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

/// Groups of `size` ranks: `per_node` members on each of size / per_node nodes, at local indices
/// `first_local + k * local_step` (k < per_node) of nodes `base + j * node_stride`; one group per base node of
/// `bases`.
CommPattern groups_of(const std::vector<int64_t>& bases, int64_t size, int64_t per_node, int64_t first_local,
                      int64_t local_step, int64_t node_stride, int64_t gpn) {
  CommPattern p;
  for (int64_t base : bases) {
    std::vector<int64_t> group;
    for (int64_t j = 0; j < size / per_node; ++j) {
      for (int64_t k = 0; k < per_node; ++k) group.push_back((base + j * node_stride) * gpn + first_local + k * local_step);
    }
    p.groups.push_back(group);
  }
  return p;
}

/// Every contiguous and strided layout of `nodes` nodes of `gpn` GPUs that the claim covers: whole nodes per
/// group (1, 2, 4 ... nodes), groups interleaved across nodes, two members per node (local indices t and
/// t + gpn/2: blocks moved by whole rails too), one member per node (GPU t of each node: a rail each, the
/// data-parallel shape), and same-rail send/recv pairs.
void expect_all_exact(const Topology& t, const std::string& what) {
  const int64_t gpn = t.gpus_per_node(), nodes = t.node_count();
  for (int64_t span = 1; span < nodes; span *= 2) {
    std::vector<int64_t> bases;
    for (int64_t b = 0; b < nodes; b += span) bases.push_back(b);
    const std::string s = what + " span " + std::to_string(span);
    expect_exact_all_ops(t, groups_of(bases, span * gpn, gpn, 0, 1, 1, gpn), s + " whole nodes");
    if (span < 2) continue;
    // Group g over nodes g, g + stride, ...: blocks moved by one node.
    const int64_t stride = nodes / span;
    std::vector<int64_t> first_nodes;
    for (int64_t b = 0; b < stride; ++b) first_nodes.push_back(b);
    expect_exact_all_ops(t, groups_of(first_nodes, span * gpn, gpn, 0, 1, stride, gpn), s + " interleaved");
    CommPattern two_per_node, rails;
    for (int64_t b : bases) {
      for (int64_t l = 0; l < gpn; ++l) {
        if (gpn >= 2 && l < gpn / 2) two_per_node.groups.push_back(groups_of({b}, span * 2, 2, l, gpn / 2, 1, gpn).groups[0]);
        rails.groups.push_back(groups_of({b}, span, 1, l, 1, 1, gpn).groups[0]);
      }
    }
    if (gpn >= 2) expect_exact_all_ops(t, two_per_node, s + " two per node");
    expect_exact_all_ops(t, rails, s + " one per node");
  }
  CommPattern pairs;  // node n's GPU l sends to node n + nodes / 2's GPU l
  for (int64_t n = 0; n < nodes / 2; ++n) {
    for (int64_t l = 0; l < gpn; l += 3) pairs.groups.push_back({n * gpn + l, (n + nodes / 2) * gpn + l});
  }
  CommPattern neighbours, relayed;  // node 2m's GPU l sends to node 2m + 1's GPU l; GPU gpn-1 -> 0 -> 0 of next
  for (int64_t n = 0; n + 1 < nodes; n += 2) {
    for (int64_t l = 0; l < gpn; l += 3) neighbours.groups.push_back({n * gpn + l, (n + 1) * gpn + l});
    relayed.groups.push_back({n * gpn, (n + 1) * gpn});
    if (gpn >= 2) relayed.groups.push_back({n * gpn + gpn - 1, n * gpn});
  }
  expect_exact(t, neighbours, CollectiveOp::send_recv, what + " neighbour sends");
  expect_exact(t, relayed, CollectiveOp::send_recv, what + " relayed sends");
  if (nodes >= 4) expect_exact(t, pairs, CollectiveOp::send_recv, what + " half-cluster sends");
}

TEST(RailSymmetry, ExactForBlocksMovedByNodesAndRails) {
  expect_all_exact(build_shipped(kH100, topology_config(8, FabricKind::rail_optimized)), "H100 x8");
  TopologyConfig thin = topology_config(8, FabricKind::rail_optimized);
  thin.fat_tree_radix = 4;
  thin.oversubscription = 16.0;  // two spines, a rail-spine link a quarter of a port: any cross-rail hop would show
  expect_all_exact(build_shipped(kH100, thin), "H100 x8 radix 4 16:1");
  TopologyConfig cfg = topology_config(16, FabricKind::rail_optimized);
  cfg.fat_tree_radix = 16;
  expect_all_exact(build_shipped(kH100, cfg), "H100 x16 radix 16");
  cfg.oversubscription = 2.0;
  expect_all_exact(build_shipped("Standard_ND96isr_H200_v5", cfg), "H200 x16 2:1");
  expect_all_exact(build_shipped("Standard_ND96amsr_A100_v4", topology_config(4, FabricKind::rail_optimized)),
                   "A100 x4");
}

TEST(RailSymmetry, Nvl72DomainsOnSeventyTwoRails) {
  // ND GB200 v6: a node is an NVLink domain of 18 VMs, 72 GPUs, 72 rail NICs.
  const Topology t = build_shipped("Standard_ND128isr_NDR_GB200_v6", topology_config(4 * 18, FabricKind::rail_optimized));
  ASSERT_EQ(t.gpus_per_node(), 72);
  expect_all_exact(t, "GB200 x4 domains");
}

TEST(RailSymmetry, ExpertAllToAllOfALayoutSearch) {
  // DeepSeek-V3-like expert groups on 256 H100 nodes (2,048 GPUs): 16 to 256 contiguous ranks.
  const Topology t = build_shipped(kH100, topology_config(256, FabricKind::rail_optimized));
  for (int64_t size : {16, 64, 256}) {
    CommPattern p;
    for (int64_t g = 0; g < 2048 / size; ++g) {
      std::vector<int64_t> group;
      for (int64_t r = 0; r < size; ++r) group.push_back(g * size + r);
      p.groups.push_back(group);
    }
    const auto rep = rail_block_representative(CollectiveOp::all_to_all, p, t);
    ASSERT_TRUE(rep.has_value()) << size;
    EXPECT_EQ(rep->groups.size(), 1u) << size;
    if (size <= 64) expect_exact(t, p, CollectiveOp::all_to_all, "2,048 GPUs, groups of " + std::to_string(size));
  }
}

TEST(RailSymmetry, DeclinesWhereNotProven) {
  const Topology rails = build_shipped(kH100, topology_config(8, FabricKind::rail_optimized));
  const CommPattern whole_nodes = groups_of({0, 2, 4, 6}, 16, 8, 0, 1, 1, 8);
  ASSERT_TRUE(rail_block_representative(CollectiveOp::all_to_all, whole_nodes, rails));
  // Cross-rail groups: GPU (d + t) % 8 of node d (their transfers cross the spines every block shares).
  CommPattern diagonal;
  for (int64_t s = 0; s < 4; ++s) {
    for (int64_t t = 0; t < 8; ++t) diagonal.groups.push_back({(2 * s) * 8 + t, (2 * s + 1) * 8 + (t + 1) % 8});
  }
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, diagonal, rails));
  EXPECT_FALSE(rail_block_representative(CollectiveOp::send_recv, diagonal, rails));
  {
    // ... where the first node pair's groups alone would be wrong: on two thin spines the four pairs'
    // cross-rail sends share the spine links, so the whole pattern is slower than its first block.
    TopologyConfig cfg = topology_config(8, FabricKind::rail_optimized);
    cfg.fat_tree_radix = 4;
    cfg.oversubscription = 16.0;  // a rail-spine link carries a quarter of a port
    const Topology narrow = build_shipped(kH100, cfg);
    EXPECT_FALSE(rail_block_representative(CollectiveOp::send_recv, diagonal, narrow));
    CommPattern first_pair;
    for (size_t g = 0; g < 8; ++g) first_pair.groups.push_back(diagonal.groups[g]);
    LinkEfficiency eff;
    const auto whole = build_schedule(CollectiveOp::send_recv, CollectiveAlgorithm::direct, narrow, diagonal, false);
    const auto block = build_schedule(CollectiveOp::send_recv, CollectiveAlgorithm::direct, narrow, first_pair, false);
    ASSERT_TRUE(whole && block);
    EXPECT_GT(bandwidth_seconds_per_byte(*whole, narrow, eff), bandwidth_seconds_per_byte(*block, narrow, eff));
  }
  // Nodes of a group holding different local indices: {0, 1} on one node, {0, 2} on the next.
  CommPattern uneven;
  for (int64_t s = 0; s < 4; ++s) uneven.groups.push_back({16 * s, 16 * s + 1, 16 * s + 8, 16 * s + 10});
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, uneven, rails));
  // Blocks that are not translates (the last group's ranks in another order; a ring shift's order matters),
  // and a single block.
  CommPattern swapped = groups_of({0, 2, 4, 6}, 8, 4, 0, 1, 1, 8);
  for (int64_t b : {0, 2, 4, 6}) swapped.groups.push_back(groups_of({b}, 8, 4, 4, 1, 1, 8).groups.front());
  ASSERT_TRUE(rail_block_representative(CollectiveOp::ring_shift, swapped, rails));
  std::swap(swapped.groups.mutable_group(7)[0], swapped.groups.mutable_group(7)[1]);
  EXPECT_FALSE(rail_block_representative(CollectiveOp::ring_shift, swapped, rails));
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, swapped, rails));
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, groups_of({0}, 64, 8, 0, 1, 1, 8), rails));
  // Fat trees (translation_representative's domain), two zones, NICs on the host, no NVLink switch.
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, whole_nodes,
                                         build_shipped(kH100, topology_config(8, FabricKind::fat_tree))));
  TopologyConfig zoned = topology_config(8, FabricKind::rail_optimized);
  zoned.zones = {{"a", 4}, {"b", 4}};
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, whole_nodes, build_shipped(kH100, zoned)));
  EXPECT_FALSE(rail_block_representative(CollectiveOp::all_to_all, whole_nodes,
                                         build_shipped("Standard_ND40rs_v2", topology_config(8, FabricKind::rail_optimized))));
  EXPECT_FALSE(rail_block_representative(
      CollectiveOp::all_to_all, whole_nodes,
      build_shipped("Standard_ND96isr_MI300X_v5", topology_config(8, FabricKind::rail_optimized))));
}

TEST(RailSymmetry, ModelTimesEqualTheWholeSchedules) {
  // The model memoises a pattern's representative across ops: its all-to-all, all-reduce and all-gather in one
  // model equal fresh models' and the whole pattern's schedule priced by hand.
  TopologyConfig cfg = topology_config(8, FabricKind::rail_optimized);
  cfg.fat_tree_radix = 4;
  const Topology t = build_shipped(kH100, cfg);
  const CollectiveConstants k = CollectiveConstants::for_vm(shipped_catalog().vm_size(kH100));
  const CommPattern p = groups_of({0, 1}, 8, 2, 0, 4, 2, 8);  // GPUs 0, 4 of nodes {0, 2, 4, 6}; of {1, 3, 5, 7}
  const units::Bytes bytes(64.0 * 1024 * 1024);
  CollectiveModel warm(t, k);
  const CollectiveTiming a2a = warm.collective_time(CollectiveOp::all_to_all, p, bytes);
  const CollectiveTiming ar = warm.collective_time(CollectiveOp::all_reduce, p, bytes);
  const CollectiveTiming ag = warm.collective_time(CollectiveOp::all_gather, p, bytes);
  CollectiveModel fresh_ar(t, k), fresh_ag(t, k);
  const CollectiveTiming ar0 = fresh_ar.collective_time(CollectiveOp::all_reduce, p, bytes);
  const CollectiveTiming ag0 = fresh_ag.collective_time(CollectiveOp::all_gather, p, bytes);
  EXPECT_EQ(ar.time.value(), ar0.time.value());
  EXPECT_EQ(ar.bandwidth_time.value(), ar0.bandwidth_time.value());
  EXPECT_EQ(ag.time.value(), ag0.time.value());
  // The reduced all-to-all equals the whole pattern's schedule priced by hand.
  LinkEfficiency eff;
  eff.nvlink = k.ring_efficiency;
  eff.pcie = k.pcie_efficiency;
  eff.infinity_fabric = k.ring_efficiency;
  eff.infiniband = k.infiniband_efficiency;
  eff.ethernet = k.ethernet_efficiency;
  eff.inter_zone = k.ethernet_efficiency;
  const auto whole = build_schedule(CollectiveOp::all_to_all, CollectiveAlgorithm::direct, t, p, false);
  ASSERT_TRUE(whole);
  const double bw = bandwidth_seconds_per_byte(*whole, t, eff) * bytes.value();
  EXPECT_TRUE(a2a.bandwidth_time.value() == bw || a2a.bandwidth_time.value() == 4.0 * bw) << a2a.bandwidth_time.value();
}

}  // namespace
