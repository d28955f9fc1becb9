// Pricing a schedule's phases (models/network/collectives.cpp, phase_seconds_per_byte, issue 31, seventh
// round): two walks over a phase's links (a union-find over transfers keyed by each link's first user, then the
// structure words, their hash and the restored marks in one walk), the solver fed from the structure words,
// link classes' efficiencies from a table, and build_schedule's zone latency skipped on a cluster of one zone.
// The oracle is the previous algorithm, kept here as it was (a union-find over links, separate passes for the
// components, the words, the hash, Topology::link per link for the solver): every phase's time must be equal
// to the bit, on real schedules of every op and algorithm (fat trees, oversubscribed, rail-optimized, PCIe
// nodes, two and three zones; two efficiency settings; both solve modes) and on random phases whose paths share
// links at random and repeat structures; and every phase's zone latency must be the walk over its links.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/network/fair_share.hpp"
#include "tests/network/network_support.hpp"
#include "tests/network/schedule_support.hpp"

namespace {

using namespace clustersim::models;
using clustersim::testing::build_shipped;
using clustersim::testing::topology_config;

// ---------------------------------------------------------------------------------- the previous algorithm

/// The members' seconds per byte alone on their links (the previous transfers_seconds_per_byte, unchanged but
/// for a fresh solver and a map in place of the per-thread arrays).
double reference_component(const Phase& phase, const std::vector<size_t>& members, const Topology& topology,
                           const LinkEfficiency& efficiency) {
  FairShareSolver solver;
  std::map<LinkId, LinkId> local;
  std::vector<FlowId> flows;
  std::vector<double> remaining;
  for (size_t k : members) {
    const Transfer& t = phase.transfers[k];
    std::vector<LinkId> path;
    for (LinkId l : phase.path(t)) {
      if (!local.contains(l)) {
        const Link link = topology.link(l);
        local[l] = solver.add_link(link.capacity * efficiency.of(link.link_class));
      }
      path.push_back(local[l]);
    }
    flows.push_back(solver.add_flow(path));
    remaining.push_back(t.bytes_per_byte);
  }
  if (phase.pipelined) {
    solver.solve();
    double slowest = 0.0;
    for (size_t i = 0; i < flows.size(); ++i) slowest = std::max(slowest, remaining[i] / solver.rate(flows[i]).value());
    return slowest;
  }
  double elapsed = 0.0;
  std::vector<size_t> live(flows.size());
  for (size_t i = 0; i < live.size(); ++i) live[i] = i;
  while (!live.empty()) {
    solver.solve();
    double step = std::numeric_limits<double>::infinity();
    for (size_t i : live) step = std::min(step, remaining[i] / solver.rate(flows[i]).value());
    elapsed += step;
    std::vector<size_t> still;
    for (size_t i : live) {
      remaining[i] -= solver.rate(flows[i]).value() * step;
      if (remaining[i] <= 1e-9 * phase.transfers[members[i]].bytes_per_byte) {
        solver.remove_flow(flows[i]);
      } else {
        still.push_back(i);
      }
    }
    live.swap(still);
  }
  return elapsed;
}

LinkId reference_find(std::vector<LinkId>& parent, LinkId l) {
  while (parent[l] != l) {
    parent[l] = parent[parent[l]];
    l = parent[l];
  }
  return l;
}

/// The previous phase_seconds_per_byte: a union-find over links, components in order of their first transfer,
/// each component's words (lengths, bytes, links by first use, capacities x efficiency), solved once per
/// distinct words.
std::vector<double> reference_phase_seconds(const CollectiveSchedule& schedule, const Topology& topology,
                                            const LinkEfficiency& efficiency) {
  std::vector<double> per_round(schedule.phases.size(), 0.0);
  std::vector<LinkId> parent(topology.link_count());
  for (size_t p = 0; p < schedule.phases.size(); ++p) {
    const Phase& phase = schedule.phases[p];
    if (phase.transfers.empty()) continue;
    for (LinkId l : phase.links) parent[l] = l;
    for (const Transfer& t : phase.transfers) {
      const std::span<const LinkId> path = phase.path(t);
      for (size_t h = 1; h < path.size(); ++h) {
        const LinkId a = reference_find(parent, path[0]), b = reference_find(parent, path[h]);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
    std::map<LinkId, size_t> component_of_root;
    std::vector<std::vector<size_t>> components;
    for (size_t k = 0; k < phase.transfers.size(); ++k) {
      const std::span<const LinkId> path = phase.path(phase.transfers[k]);
      if (path.empty()) throw std::invalid_argument("a transfer without a path");
      const auto [at, fresh] = component_of_root.try_emplace(reference_find(parent, path.front()), components.size());
      if (fresh) components.emplace_back();
      components[at->second].push_back(k);
    }
    std::map<std::vector<uint64_t>, double> solved;
    double phase_time = 0.0;
    for (const std::vector<size_t>& members : components) {
      std::vector<uint64_t> words;
      std::map<LinkId, uint64_t> number;
      std::vector<LinkId> first_use;
      for (size_t k : members) {
        const Transfer& t = phase.transfers[k];
        words.push_back(t.length);
        words.push_back(std::bit_cast<uint64_t>(t.bytes_per_byte));
        for (LinkId l : phase.path(t)) {
          if (number.try_emplace(l, first_use.size()).second) first_use.push_back(l);
          words.push_back(number[l]);
        }
      }
      for (LinkId l : first_use) {
        const Link link = topology.link(l);
        words.push_back(std::bit_cast<uint64_t>((link.capacity * efficiency.of(link.link_class)).value()));
      }
      auto [at, fresh] = solved.try_emplace(words, 0.0);
      if (fresh) at->second = reference_component(phase, members, topology, efficiency);
      phase_time = std::max(phase_time, at->second);
    }
    per_round[p] = phase_time;
  }
  return per_round;
}

/// A phase's zone latency as build_schedule computed it before: per transfer the sum of its inter-zone links'
/// latencies (read from Topology::link), the largest over the transfers.
double reference_zone_latency(const Phase& phase, const Topology& topology) {
  double worst = 0.0;
  for (const Transfer& t : phase.transfers) {
    double zone = 0.0;
    for (LinkId l : phase.path(t)) {
      const Link link = topology.link(l);
      if (link.link_class == LinkClass::inter_zone) zone += link.latency.value();
    }
    worst = std::max(worst, zone);
  }
  return worst;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i])) return false;
  }
  return true;
}

const LinkEfficiency kUneven{0.8, 0.7, 0.75, 0.9, 0.6, 0.5};

// ------------------------------------------------------------------------------------------- real schedules


TEST(PhasePricing, RealSchedulesEqualThePreviousAlgorithm) {
  const std::string h100 = "Standard_ND96isr_H100_v5", a100 = "Standard_ND96amsr_A100_v4";
  const std::string t4 = "Standard_NC64as_T4_v3";
  TopologyConfig small_leaves = topology_config(8, FabricKind::fat_tree);
  small_leaves.fat_tree_radix = 16;
  TopologyConfig oversubscribed = topology_config(8, FabricKind::fat_tree);
  oversubscribed.fat_tree_radix = 8;
  oversubscribed.oversubscription = 4.0;
  TopologyConfig rails = topology_config(4, FabricKind::rail_optimized);
  rails.oversubscription = 2.0;
  TopologyConfig two_zones = topology_config(4, FabricKind::single_switch);
  two_zones.zones = {ZoneSpec{"a", 2}, ZoneSpec{"b", 2}};
  TopologyConfig three_zones = topology_config(6, FabricKind::fat_tree);
  three_zones.zones = {ZoneSpec{"a", 1}, ZoneSpec{"b", 2}, ZoneSpec{"c", 3}};
  const std::vector<std::pair<std::string, TopologyConfig>> shapes = {
      {h100, topology_config(1, FabricKind::single_switch)}, {a100, topology_config(4, FabricKind::fat_tree)},
      {h100, small_leaves}, {a100, oversubscribed}, {h100, topology_config(4, FabricKind::rail_optimized)},
      {h100, rails}, {t4, topology_config(3, FabricKind::single_switch)}, {h100, two_zones}, {a100, three_zones}};
  const CollectiveOp ops[] = {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                              CollectiveOp::all_to_all, CollectiveOp::broadcast,      CollectiveOp::ring_shift,
                              CollectiveOp::send_recv};
  const CollectiveAlgorithm algorithms[] = {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                            CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::nvls,
                                            CollectiveAlgorithm::direct};
  size_t phases = 0, zoned = 0, shared = 0;
  for (const auto& [vm, cfg] : shapes) {
    const Topology t = build_shipped(vm, cfg);
    for (const CommPattern& pattern : clustersim::testing::sample_patterns(t.node_count(), t.gpus_per_node())) {
      for (CollectiveOp op : ops) {
        if ((op == CollectiveOp::send_recv) != (pattern.groups.front().size() == 2)) continue;
        for (CollectiveAlgorithm algorithm : algorithms) {
          auto schedule = build_schedule(op, algorithm, t, pattern, true);
          if (!schedule) continue;
          const std::string what = vm + " x " + std::to_string(t.node_count()) + " (" +
                                   std::to_string(t.zones().size()) + " zones), " + std::string(to_string(op)) + " " +
                                   std::string(to_string(algorithm)) + ", groups of " +
                                   std::to_string(pattern.groups.front().size());
          for (const Phase& phase : schedule->phases) {
            EXPECT_EQ(std::bit_cast<uint64_t>(phase.zone_latency.value()),
                      std::bit_cast<uint64_t>(reference_zone_latency(phase, t)))
                << what;
            zoned += phase.zone_latency.value() > 0.0 ? 1 : 0;
            std::vector<LinkId> links = phase.links;
            std::sort(links.begin(), links.end());
            shared += std::adjacent_find(links.begin(), links.end()) != links.end() ? 1 : 0;
          }
          phases += schedule->phases.size();
          for (int flip = 0; flip < 2; ++flip) {  // the schedule's solve modes, then the other ones
            for (const LinkEfficiency& efficiency : {LinkEfficiency{}, kUneven}) {
              EXPECT_TRUE(same_bits(phase_seconds_per_byte(*schedule, t, efficiency),
                                    reference_phase_seconds(*schedule, t, efficiency)))
                  << what << (flip ? ", solve modes flipped" : "");
            }
            for (Phase& phase : schedule->phases) phase.pipelined = !phase.pipelined;
          }
        }
      }
    }
  }
  EXPECT_GT(phases, 300u);
  EXPECT_GT(zoned, 20u);   // phases across zones had their latency checked
  EXPECT_GT(shared, 100u);  // phases whose transfers share links (components of several transfers)
}

// ---------------------------------------------------------------------------------------- random phases

/// A random schedule over `topology`'s links: 1-3 phases of up to 80 transfers; paths of 1-6 links drawn from
/// a pool (small: much sharing; large: mostly disjoint transfers), with repeats inside a path; bytes from a
/// short list so that components repeat structures; solve modes at random.
CollectiveSchedule random_schedule(const Topology& topology, std::mt19937_64& rng) {
  CollectiveSchedule s;
  const auto phase_count = static_cast<int>(rng() % 3 + 1);
  for (int p = 0; p < phase_count; ++p) {
    Phase phase;
    phase.pipelined = rng() % 2 == 0;
    const size_t pool_size = std::vector<size_t>{2, 8, 40, 400, topology.link_count()}[rng() % 5];
    const size_t first = rng() % (topology.link_count() - std::min(pool_size, topology.link_count()) + 1);
    const size_t n = rng() % 80 + 1;
    const double bytes[] = {1.0, 0.5, 0.125, 1.0 / 3.0};
    for (size_t k = 0; k < n; ++k) {
      std::vector<LinkId> path;
      const size_t length = rng() % 6 + 1;
      for (size_t h = 0; h < length; ++h) {
        path.push_back(static_cast<LinkId>(first + rng() % std::min(pool_size, topology.link_count())));
      }
      phase.add_transfer(path, bytes[rng() % 4]);
    }
    s.phases.push_back(std::move(phase));
  }
  if (rng() % 4 == 0) s.phases.insert(s.phases.begin() + static_cast<std::ptrdiff_t>(rng() % s.phases.size()), Phase{});
  return s;
}

TEST(PhasePricing, RandomPhasesEqualThePreviousAlgorithm) {
  TopologyConfig zoned = topology_config(4, FabricKind::fat_tree);
  zoned.zones = {ZoneSpec{"a", 1}, ZoneSpec{"b", 3}};
  const Topology fat = build_shipped("Standard_ND96isr_H100_v5", topology_config(4, FabricKind::fat_tree));
  const Topology two = build_shipped("Standard_ND96amsr_A100_v4", zoned);
  std::mt19937_64 rng(45);
  for (int i = 0; i < 400; ++i) {
    const Topology& t = i % 2 == 0 ? fat : two;
    const CollectiveSchedule s = random_schedule(t, rng);
    const LinkEfficiency& efficiency = i % 3 == 0 ? LinkEfficiency{} : kUneven;
    EXPECT_TRUE(same_bits(phase_seconds_per_byte(s, t, efficiency), reference_phase_seconds(s, t, efficiency)))
        << "schedule " << i;
  }
}

// A transfer without a path throws, and the links it marked are cleared: the same thread's next pricing of
// the same links is still the previous algorithm's.
TEST(PhasePricing, AnExceptionLeavesNoMark) {
  const Topology t = build_shipped("Standard_ND96isr_H100_v5", topology_config(2, FabricKind::fat_tree));
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20; ++i) {
    CollectiveSchedule bad = random_schedule(t, rng);
    bad.phases.back().add_transfer(std::span<const LinkId>(), 1.0);
    EXPECT_THROW((void)phase_seconds_per_byte(bad, t, kUneven), std::invalid_argument);
    bad.phases.back().transfers.pop_back();
    EXPECT_TRUE(same_bits(phase_seconds_per_byte(bad, t, kUneven), reference_phase_seconds(bad, t, kUneven)));
  }
}

}  // namespace
