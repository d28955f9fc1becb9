// Test support for the schedule tests (tests/network/test_rail_symmetry.cpp, test_rotation_symmetry.cpp,
// test_phase_paths.cpp, test_phase_pricing.cpp): a reduced pattern's schedules against the whole pattern's, bit for
// bit, and a sample of patterns to build schedules on.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

namespace clustersim::testing {

/// `rep`'s schedule against `pattern`'s for every algorithm: every phase's seconds per byte bit for bit, its
/// repeat, step counts, zone latency and kind; the total too; and applicability.
inline void expect_same_schedules(const models::Topology& t, const models::CommPattern& pattern,
                                  const models::CommPattern& rep, models::CollectiveOp op, const std::string& what) {
  using namespace models;
  LinkEfficiency eff;
  eff.nvlink = 0.842;
  eff.infiniband = 0.9;
  eff.ethernet = 0.8;
  int built = 0;
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
                                CollectiveAlgorithm::nvls, CollectiveAlgorithm::direct}) {
    const std::string w = what + " " + std::string(to_string(op)) + "/" + std::string(to_string(a));
    const auto whole = build_schedule(op, a, t, pattern, true);
    const auto block = build_schedule(op, a, t, rep, true);
    ASSERT_EQ(whole.has_value(), block.has_value()) << w;
    if (!whole) continue;
    ++built;
    ASSERT_EQ(whole->phases.size(), block->phases.size()) << w;
    const std::vector<double> exact = phase_seconds_per_byte(*whole, t, eff);
    const std::vector<double> fast = phase_seconds_per_byte(*block, t, eff);
    for (size_t p = 0; p < exact.size(); ++p) {
      EXPECT_EQ(whole->phases[p].transfers.empty(), block->phases[p].transfers.empty()) << w;
      if (!whole->phases[p].transfers.empty()) {
        EXPECT_GT(exact[p], 0.0) << w;
      }
      EXPECT_EQ(fast[p], exact[p]) << w << " phase " << p;
      EXPECT_EQ(whole->phases[p].repeat, block->phases[p].repeat) << w;
      EXPECT_EQ(whole->phases[p].intra_steps, block->phases[p].intra_steps) << w;
      EXPECT_EQ(whole->phases[p].inter_steps, block->phases[p].inter_steps) << w;
      EXPECT_EQ(whole->phases[p].zone_latency.value(), block->phases[p].zone_latency.value()) << w;
      EXPECT_EQ(whole->phases[p].pipelined, block->phases[p].pipelined) << w;
    }
    EXPECT_EQ(bandwidth_seconds_per_byte(*block, t, eff), bandwidth_seconds_per_byte(*whole, t, eff)) << w;
  }
  EXPECT_GT(built, 0) << what;
}

/// Patterns on `nodes` nodes of `gpn` GPUs for the schedule tests: contiguous groups of 2, gpn and every GPU
/// (those that divide the GPUs), and with more than one node, cross-rail diagonals (GPU (d + t) % gpn of node d),
/// groups of two members per node (GPUs t and t + gpn/2 of every node) and send/recv pairs across two nodes.
inline std::vector<models::CommPattern> sample_patterns(std::int64_t nodes, std::int64_t gpn) {
  using models::CommPattern;
  using std::int64_t;
  std::vector<CommPattern> out;
  const int64_t gpus = nodes * gpn;
  for (int64_t size : {int64_t{2}, gpn, gpus}) {
    if (size < 2 || gpus % size != 0) continue;
    CommPattern p;
    for (int64_t g = 0; g < gpus / size; ++g) {
      std::vector<int64_t> group;
      for (int64_t i = 0; i < size; ++i) group.push_back(g * size + i);
      p.groups.push_back(group);
    }
    out.push_back(p);
  }
  if (nodes > 1) {
    CommPattern columns, halves, pairs;
    for (int64_t t = 0; t < gpn; ++t) {
      std::vector<int64_t> column;
      for (int64_t d = 0; d < nodes; ++d) column.push_back(d * gpn + (d + t) % gpn);  // cross-rail diagonal
      columns.groups.push_back(column);
      pairs.groups.push_back({t, gpn + (t + 1) % gpn});
    }
    for (int64_t t = 0; t < gpn / 2; ++t) {
      std::vector<int64_t> group;
      for (int64_t d = 0; d < nodes; ++d) {
        group.push_back(d * gpn + t);
        group.push_back(d * gpn + t + gpn / 2);
      }
      halves.groups.push_back(group);
    }
    out.push_back(columns);
    if (gpn >= 2) out.push_back(halves);
    out.push_back(pairs);
  }
  return out;
}

}  // namespace clustersim::testing
