// Cost of timing one collective on the flow-level network (models/network/collective_model.hpp): a 1 GiB
// all-reduce over 1,024 GPUs (128 nodes) and 16,384 GPUs (2,048 nodes) of Standard_ND96isr_H100_v5 on a
// two-tier fat tree of radix 64 (32 NICs per leaf; 2,048 nodes = 16,384 NICs = 512 leaves and 32 spines).
// Targets (issue 3): <= 20 ms at 1,024 GPUs and <= 0.5 s at 16,384 GPUs for the whole model.time().
//
// Patterns:
//   all - one group of every GPU: the ring runs 8 channels (one per GPU of a node), plus tree and
//         hierarchical schedules; the tuner (no forced algorithm) tries every applicable algorithm.
//   dp  - the data-parallel groups of a TP8 layout: 8 concurrent groups of `nodes` ranks, GPU i of every
//         node (ring with one channel each, and the double binary tree).
// Time per case (manual time, one iteration, 3 repetitions: read the median; each builds everything anew):
//   the benchmark's own time = topology build + first model.time() (the flow solves, cold memo).
// Counters:
//   topology_ms   build_topology (vertices, links, routing distance tables)
//   first_ms      first model.time(): every applicable algorithm's schedule (routing) + max-min solve
//   second_ms     the same call again: memo hit, a multiplication per (algorithm, protocol)
//   route_ms      of `first_ms`: build_schedule for each algorithm the tuner tries (routing every transfer)
//   solve_ms      of `first_ms`: bandwidth_seconds_per_byte for each schedule (progressive max-min filling)
//                 (route and solve are re-measured outside the timed run, on a fresh topology's schedules)
//   transfers     routed transfers over all schedules tried
//   ring_ms, tree_ms, hierarchical_ms  route + solve of that algorithm's schedule (absent where it does not apply)
//   peak_MB       VmHWM of the process after the case (/proc/self/status, in 1e6 B), reset before each case
//                 through /proc/self/clear_refs (Linux >= 4.0) after malloc_trim; includes the catalog and binary.
//   predicted_ms  the all-reduce's simulated time (what the model predicts, not a cost)
// Run: `make bench` (or this program directly; --benchmark_filter=1024 for the small cases only).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

namespace {

namespace models = clustersim::models;
namespace units = clustersim::units;
using Clock = std::chrono::steady_clock;

constexpr const char* kVm = "Standard_ND96isr_H100_v5";
constexpr int kGpusPerNode = 8;

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// VmHWM (peak resident set) in MB (1e6 B), or -1 when /proc is not readable.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0 / 1e6;  // kB
  }
  return -1.0;
}

/// Returns freed heap to the OS and resets VmHWM to the current RSS, so the next peak is the case's own.
void reset_peak_rss() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

models::CommPattern pattern_of(int64_t nodes, bool data_parallel) {
  models::CommPattern p;
  if (data_parallel) {
    for (int64_t local = 0; local < kGpusPerNode; ++local) {
      std::vector<int64_t> group;
      for (int64_t node = 0; node < nodes; ++node) group.push_back(node * kGpusPerNode + local);
      p.groups.push_back(group);
    }
  } else {
    std::vector<int64_t> group;
    for (int64_t r = 0; r < nodes * kGpusPerNode; ++r) group.push_back(r);
    p.groups.push_back(group);
  }
  return p;
}

models::Topology fat_tree(int64_t nodes) {
  const models::VmSize& vm = catalog().vm_size(kVm);
  models::TopologyConfig cfg;
  cfg.nodes = nodes;
  cfg.fabric = models::FabricKind::fat_tree;
  cfg.fat_tree_radix = 64;
  cfg.fat_tree_tiers = 2;
  return models::build_topology(vm, catalog().device(vm.device), cfg);
}

/// state.range(0): nodes; state.range(1): 0 = one group of all GPUs, 1 = the DP groups of TP8.
void BM_AllReduce1GiB(benchmark::State& state) {
  const int64_t nodes = state.range(0);
  const bool dp = state.range(1) != 0;
  const models::CommPattern pattern = pattern_of(nodes, dp);
  const models::CollectiveConstants constants = models::CollectiveConstants::for_vm(catalog().vm_size(kVm));
  const units::Bytes bytes = units::gib(1.0);
  double topology_ms = 0, first_ms = 0, second_ms = 0;
  models::CollectiveTiming timing;
  reset_peak_rss();
  for (auto _ : state) {
    auto start = Clock::now();
    const models::Topology topology = fat_tree(nodes);
    topology_ms = ms_since(start);
    const models::CollectiveModel model(topology, constants);
    start = Clock::now();
    timing = model.time(models::CollectiveOp::all_reduce, pattern, bytes);
    first_ms = ms_since(start);
    start = Clock::now();
    const models::CollectiveTiming again = model.time(models::CollectiveOp::all_reduce, pattern, bytes);
    second_ms = ms_since(start);
    benchmark::DoNotOptimize(again);
    state.SetIterationTime((topology_ms + first_ms) / 1e3);
  }
  const double peak = peak_rss_mb();

  // Where `first` goes: the schedules the tuner tries, built and solved again on a fresh topology.
  double route_ms = 0, solve_ms = 0, transfers = 0;
  std::map<std::string, double> per_algorithm_ms;  // route + solve
  {
    const models::Topology topology = fat_tree(nodes);
    models::LinkEfficiency eff;
    eff.nvlink = eff.pcie = eff.infinity_fabric = constants.ring_efficiency;
    eff.infiniband = constants.infiniband_efficiency;
    eff.ethernet = eff.inter_zone = constants.ethernet_efficiency;
    using models::CollectiveAlgorithm;
    for (CollectiveAlgorithm a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                  CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::nvls}) {
      auto start = Clock::now();
      const auto schedule = models::build_schedule(models::CollectiveOp::all_reduce, a, topology, pattern,
                                                   constants.nvls_efficiency.has_value());
      const double route = ms_since(start);
      route_ms += route;
      if (!schedule) continue;
      for (const auto& phase : schedule->phases) transfers += static_cast<double>(phase.transfers.size());
      start = Clock::now();
      benchmark::DoNotOptimize(models::bandwidth_seconds_per_byte(*schedule, topology, eff));
      const double solve = ms_since(start);
      solve_ms += solve;
      per_algorithm_ms[std::string(models::to_string(a))] = route + solve;
    }
  }

  state.counters["topology_ms"] = topology_ms;
  state.counters["first_ms"] = first_ms;
  state.counters["second_ms"] = second_ms;
  state.counters["route_ms"] = route_ms;
  state.counters["solve_ms"] = solve_ms;
  state.counters["transfers"] = transfers;
  for (const auto& [name, ms] : per_algorithm_ms) state.counters[name + "_ms"] = ms;
  state.counters["peak_MB"] = peak;
  state.counters["predicted_ms"] = timing.time.value() * 1e3;
  state.SetLabel(std::string(dp ? "dp8x" : "all") + " " + std::string(models::to_string(timing.algorithm)) + "/" +
                 std::string(models::to_string(timing.protocol)));
}

BENCHMARK(BM_AllReduce1GiB)
    ->ArgNames({"nodes", "dp"})
    ->Args({128, 0})
    ->Args({128, 1})
    ->Args({2048, 0})
    ->Args({2048, 1})
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
