// Micro-benchmark of the max-min fair solver (models/network/fair_share.hpp).
//
// Topologies:
//   FatTree/F - a two-level fat tree: H hosts with an up and a down link (50 GB/s), leaves of 32 hosts, 16
//               spines, one up and one down link per (leaf, spine) of 32 x 50 / 16 = 100 GB/s (non-blocking).
//               F flows between random host pairs (F / H per host), routed host-up, leaf-up, spine-down,
//               leaf-down with the spine picked by a hash of the pair (ECMP); same-leaf pairs skip the spine.
//               Random pairs connect everything: the network is ONE component, so an incremental update
//               costs a full solve.
//   Pods/F    - F / 32 independent pods of 32 hosts under their own leaf; 32 flows per pod between random
//               host pairs of the pod, routed host-up, leaf backplane (oversubscribed, 8 x 50 GB/s),
//               host-down. Each pod is one component of 32 flows: the realistic case of many independent
//               jobs or parallel groups.
// Cases:
//   BM_FullSolve<...>   - remove one flow, add one flow, invalidate_all() + solve(): recompute every rate.
//   BM_Incremental<...> - remove one flow, add one flow (same component), solve(): the dirty component only.
// Time is per update (one solve, or one remove + add + solve), in microseconds. Counters: flows (concurrent
// flows), touched_flows (flows recomputed by one solve, mean).
// Run: `make bench` (or this program directly).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "models/network/fair_share.hpp"
#include "models/units.hpp"

namespace {

using clustersim::models::FairShareSolver;
using clustersim::models::FlowId;
using clustersim::models::LinkId;
using clustersim::units::gigabytes_per_second;

constexpr uint32_t kLeafHosts = 32;
constexpr uint32_t kSpines = 16;

uint32_t below(std::mt19937_64& rng, uint32_t n) { return static_cast<uint32_t>(rng() % n); }

/// A topology with its solver and live flows; new_flow() adds one more random flow (in `pod`, if pods).
class Network {
 public:
  virtual ~Network() = default;
  virtual FlowId new_flow(uint32_t pod) = 0;
  [[nodiscard]] virtual uint32_t pod_of(size_t flow_index) const = 0;
  FairShareSolver solver;
  std::vector<FlowId> flows;
  std::mt19937_64 rng{42};
};

class FatTree final : public Network {
 public:
  explicit FatTree(uint32_t n_flows) {
    hosts_ = n_flows <= 1024 ? 256 : (n_flows <= 16384 ? 2048 : 16384);
    leaves_ = hosts_ / kLeafHosts;
    for (uint32_t h = 0; h < 2 * hosts_; ++h) solver.add_link(gigabytes_per_second(50));  // up h, down h
    first_fabric_ = static_cast<LinkId>(solver.link_count());
    for (uint32_t i = 0; i < 2 * leaves_ * kSpines; ++i) solver.add_link(gigabytes_per_second(100));
    for (uint32_t f = 0; f < n_flows; ++f) flows.push_back(new_flow(0));
    solver.solve();
  }
  FlowId new_flow(uint32_t /*pod*/) override {
    const uint32_t src = below(rng, hosts_);
    uint32_t dst = below(rng, hosts_ - 1);
    if (dst >= src) ++dst;
    const uint32_t ls = src / kLeafHosts;
    const uint32_t ld = dst / kLeafHosts;
    path_.clear();
    path_.push_back(2 * src);  // host up
    if (ls != ld) {
      const uint32_t spine = (src * 2654435761U + dst) % kSpines;
      path_.push_back(first_fabric_ + 2 * (ls * kSpines + spine));      // leaf ls -> spine
      path_.push_back(first_fabric_ + 2 * (ld * kSpines + spine) + 1);  // spine -> leaf ld
    }
    path_.push_back(2 * dst + 1);  // host down
    return solver.add_flow(path_);
  }
  [[nodiscard]] uint32_t pod_of(size_t /*flow_index*/) const override { return 0; }

 private:
  uint32_t hosts_ = 0;
  uint32_t leaves_ = 0;
  LinkId first_fabric_ = 0;
  std::vector<LinkId> path_;
};

class Pods final : public Network {
 public:
  explicit Pods(uint32_t n_flows) {
    const uint32_t pods = n_flows / kLeafHosts;
    for (uint32_t p = 0; p < pods; ++p) {
      for (uint32_t h = 0; h < 2 * kLeafHosts; ++h) solver.add_link(gigabytes_per_second(50));
      solver.add_link(gigabytes_per_second(8 * 50));  // the pod's leaf backplane
    }
    for (uint32_t f = 0; f < n_flows; ++f) {
      flows.push_back(new_flow(f / kLeafHosts));
      pod_.push_back(f / kLeafHosts);
    }
    solver.solve();
  }
  FlowId new_flow(uint32_t pod) override {
    const LinkId base = pod * (2 * kLeafHosts + 1);
    const uint32_t src = below(rng, kLeafHosts);
    uint32_t dst = below(rng, kLeafHosts - 1);
    if (dst >= src) ++dst;
    const LinkId path[] = {base + 2 * src, base + 2 * kLeafHosts, base + 2 * dst + 1};
    return solver.add_flow(path);
  }
  [[nodiscard]] uint32_t pod_of(size_t flow_index) const override { return pod_[flow_index]; }

 private:
  std::vector<uint32_t> pod_;
};

// One update: replace a random flow by a new one in the same pod, then solve the dirty components (or, with
// `full`, the whole network). Full solves get the same churn: re-solving an unchanged network every
// iteration lets the branch predictor learn it and reads up to 2.5x too fast at 1K flows.
template <class Net>
void run_updates(benchmark::State& state, bool full) {
  Net net(static_cast<uint32_t>(state.range(0)));
  std::mt19937_64 pick(7);
  size_t touched = 0;
  for (auto _ : state) {
    const size_t victim = pick() % net.flows.size();
    net.solver.remove_flow(net.flows[victim]);
    net.flows[victim] = net.new_flow(net.pod_of(victim));
    if (full) net.solver.invalidate_all();
    net.solver.solve();
    touched += net.solver.last_solve_flows_touched();
  }
  state.counters["flows"] = static_cast<double>(net.solver.flow_count());
  state.counters["touched_flows"] = static_cast<double>(touched) / static_cast<double>(state.iterations());
}

template <class Net>
void BM_FullSolve(benchmark::State& state) {
  run_updates<Net>(state, true);
}

template <class Net>
void BM_Incremental(benchmark::State& state) {
  run_updates<Net>(state, false);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1024)->Arg(16384)->Arg(131072)->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_FullSolve<FatTree>)->Apply(sizes);
BENCHMARK(BM_Incremental<FatTree>)->Apply(sizes);
BENCHMARK(BM_FullSolve<Pods>)->Apply(sizes);
BENCHMARK(BM_Incremental<Pods>)->Apply(sizes);

}  // namespace
