// A phase's paths in one link array (models/network/collectives.hpp, Phase::links, issue 31): the route search
// appends every transfer's path to its phase's array, and each transfer is an offset and a length into it, in
// place of a vector per transfer. The oracle is the per-transfer route call the builder made before
// (Topology::route, a fresh vector per call): every transfer's span must be the route from its sender to its
// receiver keyed by the receiver (D-mod-K), or, for a transfer relayed through a node-mate's NIC (PXN), the
// route to the relay followed by the relay's route to the receiver; the spans must tile the array in transfer
// order. Checked for every op and algorithm that applies, on fat trees, rail-optimized fabrics, PCIe nodes,
// two zones, and patterns whose all-to-alls and ring shifts use relays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "models/network/collectives.hpp"
#include "tests/network/network_support.hpp"
#include "tests/network/schedule_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::topology_config;

bool same(std::span<const LinkId> a, const std::vector<LinkId>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

/// Whether `path` is the route the builder asked for: direct from its first link's GPU to its last link's GPU
/// (keyed by the receiver), or through a relay GPU met on the way.
bool is_routed(const Topology& t, std::span<const LinkId> path) {
  if (path.empty()) return false;
  const VertexId from = t.link(path.front()).src, to = t.link(path.back()).dst;
  if (t.vertex(from).kind != VertexKind::gpu || t.vertex(to).kind != VertexKind::gpu) return false;
  if (same(path, t.route(from, to, to))) return true;
  for (size_t h = 0; h + 1 < path.size(); ++h) {
    const VertexId relay = t.link(path[h]).dst;
    if (t.vertex(relay).kind != VertexKind::gpu || relay == from) continue;
    std::vector<LinkId> via = t.route(from, relay, to);
    const std::vector<LinkId> rest = t.route(relay, to, to);
    via.insert(via.end(), rest.begin(), rest.end());
    if (same(path, via)) return true;
  }
  return false;
}


TEST(PhasePaths, EveryTransfersSpanIsItsRouteAndTheSpansTileThePhase) {
  const std::string h100 = "Standard_ND96isr_H100_v5", a100 = "Standard_ND96amsr_A100_v4";
  const std::string t4 = "Standard_NC64as_T4_v3";
  TopologyConfig small_leaves = topology_config(8, FabricKind::fat_tree);
  small_leaves.fat_tree_radix = 16;
  TopologyConfig zoned = topology_config(4, FabricKind::single_switch);
  zoned.zones = {ZoneSpec{"a", 2}, ZoneSpec{"b", 2}};
  const std::vector<std::pair<std::string, TopologyConfig>> shapes = {
      {h100, topology_config(1, FabricKind::single_switch)}, {a100, topology_config(4, FabricKind::fat_tree)},
      {h100, small_leaves},                                  {h100, topology_config(4, FabricKind::rail_optimized)},
      {t4, topology_config(3, FabricKind::single_switch)},   {h100, zoned}};
  const CollectiveOp ops[] = {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                              CollectiveOp::all_to_all, CollectiveOp::broadcast,      CollectiveOp::ring_shift,
                              CollectiveOp::send_recv};
  const CollectiveAlgorithm algorithms[] = {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                            CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::nvls,
                                            CollectiveAlgorithm::direct};
  size_t transfers = 0, relayed = 0, nvls = 0;
  for (const auto& [vm, cfg] : shapes) {
    const Topology t = build_shipped(vm, cfg);
    for (const CommPattern& pattern : clustersim::testing::sample_patterns(t.node_count(), t.gpus_per_node())) {
      for (CollectiveOp op : ops) {
        if ((op == CollectiveOp::send_recv) != (pattern.groups.front().size() == 2)) continue;
        for (CollectiveAlgorithm algorithm : algorithms) {
          const auto schedule = build_schedule(op, algorithm, t, pattern, true);
          if (!schedule) continue;
          const std::string what = vm + " x " + std::to_string(t.node_count()) + ", " + std::string(to_string(op)) +
                                   " " + std::string(to_string(algorithm)) + ", groups of " +
                                   std::to_string(pattern.groups.front().size());
          for (const Phase& phase : schedule->phases) {
            size_t next = 0;
            for (const Transfer& tr : phase.transfers) {
              ASSERT_EQ(tr.first, next) << what;
              next += tr.length;
              ASSERT_LE(next, phase.links.size()) << what;
              const std::span<const LinkId> path = phase.path(tr);
              ASSERT_EQ(path.data(), phase.links.data() + tr.first) << what;
              if (algorithm == CollectiveAlgorithm::nvls) {  // one link to or from the NVSwitch
                EXPECT_EQ(path.size(), 1u) << what;
                ++nvls;
                continue;
              }
              EXPECT_TRUE(is_routed(t, path)) << what << ", transfer " << transfers;
              relayed += same(path, t.route(t.link(path.front()).src, t.link(path.back()).dst,
                                            t.link(path.back()).dst))
                             ? 0
                             : 1;
              ++transfers;
            }
            EXPECT_EQ(next, phase.links.size()) << what;
          }
        }
      }
    }
  }
  EXPECT_GT(transfers, 5000u);
  EXPECT_GT(relayed, 100u);  // PXN relays (ring hops, all-to-alls, ring shifts) were checked
  EXPECT_GT(nvls, 0u);
}

// Phase::add_transfer appends a copy of the path after the others; an empty phase starts at offset 0.
TEST(PhasePaths, AddTransferAppendsASpan) {
  Phase phase;
  const std::vector<LinkId> a = {3, 1, 4}, b = {1, 5};
  phase.add_transfer(a, 0.5);
  phase.add_transfer(std::span<const LinkId>(), 0.25);
  phase.add_transfer(b, 1.0);
  ASSERT_EQ(phase.transfers.size(), 3u);
  EXPECT_TRUE(same(phase.path(phase.transfers[0]), a));
  EXPECT_TRUE(phase.path(phase.transfers[1]).empty());
  EXPECT_TRUE(same(phase.path(phase.transfers[2]), b));
  EXPECT_EQ(phase.transfers[2].first, 3u);
  EXPECT_EQ(phase.transfers[1].bytes_per_byte, 0.25);
  EXPECT_EQ(phase.links, (std::vector<LinkId>{3, 1, 4, 1, 5}));
}

}  // namespace
