// Test support for the symmetry reductions' tests (tests/network/test_rail_symmetry.cpp,
// test_rotation_symmetry.cpp): a reduced pattern's schedules against the whole pattern's, bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
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

}  // namespace clustersim::testing
