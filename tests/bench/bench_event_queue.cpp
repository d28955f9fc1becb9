// Micro-benchmark of the event queue and the simulator loop (ns-3 utils/bench-scheduler.cc).
//
// Steady-state "hold" model (Jones 1986): keep N events pending; each operation pops the earliest and
// pushes one new event at (popped time + d), d uniform in [1, 1'000'000] ns. The queue size stays N, so
// the cost per operation is the steady-state cost of one push + one pop at that size.
//
//   BM_QueueHold     - BinaryHeapEventQueue directly: one pop_min + one push per operation.
//   BM_SimulatorHold - Simulator::schedule_in + run: each executed callback schedules its successor, so one
//                      operation = pop + slot bookkeeping + fingerprint + std::function call + schedule.
//
// Counter "ns_per_op" is the CPU time of one operation (one push+pop pair / one executed event), in ns;
// items_per_second is its inverse. Results: docs/performance.md. Run: `make bench` (or this program directly).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <utility>

#include "sim/engine/event_queue.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/engine/time.hpp"

namespace {

using clustersim::sim::BinaryHeapEventQueue;
using clustersim::sim::EventKey;
using clustersim::sim::ScheduledEvent;
using clustersim::sim::Simulator;
using clustersim::sim::Time;

constexpr std::uint64_t kMaxDelayNs = 1'000'000;

// xorshift64*: a few cycles per draw, so the generator does not dominate the measurement.
struct FastRng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dULL;
  }
  Time delay() { return Time::from_ns(static_cast<std::int64_t>(1 + next() % kMaxDelayNs)); }
};

void set_counters(benchmark::State& state, std::int64_t ops_per_iteration) {
  state.SetItemsProcessed(state.iterations() * ops_per_iteration);
  // An inverted rate is seconds per unit counted: counting operations in billions makes it ns per operation.
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(ops_per_iteration) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_QueueHold(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  FastRng rng{0x9e3779b97f4a7c15ULL};
  std::uint64_t counter = 0;  // what the payload touches
  BinaryHeapEventQueue queue;
  queue.reserve(n + 1);
  std::uint64_t sequence = 0;
  for (std::uint64_t i = 0; i < n; ++i, ++sequence) {
    queue.push(ScheduledEvent{EventKey{rng.delay(), 0, sequence}, sequence + 1, [&counter] { ++counter; }});
  }
  for (auto _ : state) {
    ScheduledEvent event = queue.pop_min();
    const Time next = event.key.time + rng.delay();
    queue.push(ScheduledEvent{EventKey{next, 0, sequence}, sequence + 1, [&counter] { ++counter; }});
    ++sequence;
    benchmark::DoNotOptimize(event);
  }
  set_counters(state, 1);
}
BENCHMARK(BM_QueueHold)->ArgName("pending")->Arg(1'000)->Arg(100'000)->Arg(1'000'000);

// Each callback schedules its successor and counts down a budget; at zero it stops the run, so one
// benchmark iteration executes exactly kBatch events.
constexpr std::int64_t kBatch = 1000;

struct SimHold {
  Simulator sim;
  FastRng rng{0x9e3779b97f4a7c15ULL};
  std::int64_t remaining = 0;

  void fire() {
    sim.schedule_in(rng.delay(), [this] { fire(); });
    if (--remaining == 0) sim.stop();
  }
};

void BM_SimulatorHold(benchmark::State& state) {
  const auto n = state.range(0);
  SimHold hold;
  for (std::int64_t i = 0; i < n; ++i) hold.sim.schedule(hold.rng.delay(), [&hold] { hold.fire(); });
  for (auto _ : state) {
    hold.remaining = kBatch;
    hold.sim.run();
  }
  benchmark::DoNotOptimize(hold.sim.fingerprint());
  set_counters(state, kBatch);
}
BENCHMARK(BM_SimulatorHold)
    ->ArgName("pending")
    ->Arg(1'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
