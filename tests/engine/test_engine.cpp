// Unit tests of the discrete-event engine: Time, the event queue and the Simulator.
// Every expected order below is written out by hand from the rule (time, then priority - lower first,
// then insertion order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "models/units.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/engine/time.hpp"

namespace clustersim::sim {
// Readable gtest failure messages.
void PrintTo(Time t, std::ostream* os) { *os << t.ns() << " ns"; }
void PrintTo(const EventKey& k, std::ostream* os) {
  *os << "{" << k.time.ns() << " ns, prio " << k.priority << ", seq " << k.sequence << "}";
}
}  // namespace clustersim::sim

namespace {

using clustersim::sim::BinaryHeapEventQueue;
using clustersim::sim::EventId;
using clustersim::sim::EventKey;
using clustersim::sim::EventQueue;
using clustersim::sim::Priority;
using clustersim::sim::ScheduledEvent;
using clustersim::sim::Simulator;
using clustersim::sim::Time;
namespace units = clustersim::units;

Time ns(std::int64_t n) { return Time::from_ns(n); }
std::int64_t from_s(double s) { return Time::from_seconds(units::seconds(s)).ns(); }

// Small deterministic generator (SplitMix64) so the workloads are the same on every platform.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

// ---------------------------------------------------------------------------------------------- Time

static_assert(!std::is_convertible_v<std::int64_t, Time>, "no implicit int -> Time");
static_assert(!std::is_convertible_v<double, Time>, "no implicit double -> Time");
static_assert(!std::is_constructible_v<Time, std::int64_t>, "only the named factories build a Time");
static_assert(!std::is_constructible_v<Time, double>, "only the named factories build a Time");
static_assert(!std::is_convertible_v<Time, std::int64_t>, "no implicit Time -> int");
static_assert(!std::is_convertible_v<Time, double>, "no implicit Time -> double");
static_assert(sizeof(Time) == sizeof(std::int64_t));
static_assert(Time::from_ns(3) + Time::from_ns(4) == Time::from_ns(7), "constexpr arithmetic");

TEST(EngineTime, Factories) {
  EXPECT_EQ(Time::from_ns(42).ns(), 42);
  EXPECT_EQ(Time::from_ns(-5).ns(), -5);
  EXPECT_EQ(Time::zero().ns(), 0);
  EXPECT_EQ(Time{}.ns(), 0);
  EXPECT_EQ(Time::max().ns(), std::numeric_limits<std::int64_t>::max());
}

TEST(EngineTime, FromSecondsRoundsUpToWholeNanoseconds) {
  EXPECT_EQ(from_s(1.5e-9), 2);         // ceil(1.5) = 2
  EXPECT_EQ(from_s(2.5e-9), 3);         // ceil(2.5) = 3, not banker's rounding
  EXPECT_EQ(from_s(1.0000001e-9), 2);   // a hair above 1 ns rounds up
  EXPECT_EQ(from_s(0.4e-9), 1);         // a positive delay never becomes 0
  EXPECT_EQ(from_s(1e-20), 1);
  EXPECT_EQ(Time::from_seconds(units::nanoseconds(1.5)).ns(), 2);
}

TEST(EngineTime, FromSecondsKeepsExactValues) {
  EXPECT_EQ(from_s(0.0), 0);
  EXPECT_EQ(from_s(-0.0), 0);
  EXPECT_EQ(from_s(1e-9), 1);   // 1e-9 is not a double; 1e-9 * 1e9 must still give 1, not 2
  EXPECT_EQ(from_s(3e-9), 3);
  EXPECT_EQ(from_s(1e-3), 1'000'000);
  EXPECT_EQ(from_s(0.3), 300'000'000);
  EXPECT_EQ(from_s(0.1), 100'000'000);
  EXPECT_EQ(from_s(1.0), 1'000'000'000);
  EXPECT_EQ(from_s(2.0), 2'000'000'000);
  EXPECT_EQ(from_s(123.456789012), 123'456'789'012);
  EXPECT_EQ(from_s(3600.0 * 24 * 365), 31'536'000'000'000'000);  // one year
  EXPECT_EQ(Time::from_seconds(units::microseconds(1.0)).ns(), 1000);
  EXPECT_EQ(Time::from_seconds(units::milliseconds(7.0)).ns(), 7'000'000);
  // Every whole-ns value up to 10 us, written as k * 1e-9 seconds, converts back to k.
  for (std::int64_t k = 0; k <= 10'000; ++k) {
    ASSERT_EQ(from_s(static_cast<double>(k) * 1e-9), k) << "k = " << k;
  }
}

TEST(EngineTime, FromSecondsRejectsBadInput) {
  EXPECT_THROW((void)from_s(-1e-9), std::invalid_argument);
  EXPECT_THROW((void)from_s(-1.0), std::invalid_argument);
  EXPECT_THROW((void)from_s(std::nan("")), std::invalid_argument);
  EXPECT_THROW((void)from_s(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW((void)from_s(-std::numeric_limits<double>::infinity()), std::invalid_argument);
  // INT64_MAX ns is about 9.223e9 s.
  EXPECT_EQ(from_s(9e9), 9'000'000'000'000'000'000);
  EXPECT_THROW((void)from_s(9.3e9), std::overflow_error);
  EXPECT_THROW((void)from_s(1e300), std::overflow_error);
}

TEST(EngineTime, ToSeconds) {
  EXPECT_EQ(Time::from_ns(1'500'000'000).to_seconds().value(), 1.5);
  EXPECT_EQ(Time::from_ns(0).to_seconds().value(), 0.0);
  EXPECT_EQ(Time::from_ns(1).to_seconds().value(), 1e-9);  // ns / 1e9, correctly rounded
  // Round trip through seconds for whole-ns values.
  for (std::int64_t v : {1LL, 7LL, 999LL, 123'456'789LL, 86'400'000'000'000LL}) {
    EXPECT_EQ(Time::from_seconds(Time::from_ns(v).to_seconds()).ns(), v) << v;
  }
}

TEST(EngineTime, ArithmeticAndComparison) {
  EXPECT_EQ(ns(10) + ns(5), ns(15));
  EXPECT_EQ(ns(10) - ns(15), ns(-5));
  Time t = ns(1);
  t += ns(2);
  EXPECT_EQ(t, ns(3));
  t -= ns(3);
  EXPECT_EQ(t, Time::zero());
  EXPECT_LT(ns(1), ns(2));
  EXPECT_GT(ns(2), ns(1));
  EXPECT_LE(ns(2), ns(2));
  EXPECT_NE(ns(2), ns(3));
  EXPECT_TRUE((ns(1) <=> ns(2)) < 0);
  EXPECT_LT(ns(-1), Time::zero());
}

TEST(EngineTime, ArithmeticOverflowThrows) {
  EXPECT_THROW((void)(Time::max() + ns(1)), std::overflow_error);
  EXPECT_THROW((void)(ns(std::numeric_limits<std::int64_t>::min()) - ns(1)), std::overflow_error);
  EXPECT_EQ(Time::max() - Time::max(), Time::zero());
  EXPECT_EQ(Time::max() + Time::zero(), Time::max());
}

// ----------------------------------------------------------------------------------------- EventKey

TEST(EngineEventKey, OrdersByTimeThenPriorityThenSequence) {
  EXPECT_LT((EventKey{ns(1), 9, 9}), (EventKey{ns(2), 0, 0}));   // time first
  EXPECT_LT((EventKey{ns(5), -1, 9}), (EventKey{ns(5), 0, 0}));  // then priority, lower first
  EXPECT_LT((EventKey{ns(5), 0, 3}), (EventKey{ns(5), 0, 4}));   // then insertion sequence
  EXPECT_EQ((EventKey{ns(5), 0, 3}), (EventKey{ns(5), 0, 3}));
}

// ------------------------------------------------------------------------------------- EventQueue

ScheduledEvent ev(std::int64_t t, Priority p, std::uint64_t seq) {
  return ScheduledEvent{EventKey{ns(t), p, seq}, seq + 1, [] {}};
}

TEST(EngineEventQueue, PopsInKeyOrder) {
  BinaryHeapEventQueue q;
  EventQueue& queue = q;  // used through the interface
  EXPECT_TRUE(queue.empty());
  queue.push(ev(30, 0, 0));
  queue.push(ev(10, 0, 1));
  queue.push(ev(20, 1, 2));
  queue.push(ev(20, 0, 3));
  queue.push(ev(20, 0, 4));
  queue.push(ev(20, -3, 5));
  queue.push(ev(10, 0, 6));
  EXPECT_EQ(queue.size(), 7U);
  // Expected: (10,0,1) (10,0,6) (20,-3,5) (20,0,3) (20,0,4) (20,1,2) (30,0,0)
  const std::vector<std::uint64_t> expected = {1, 6, 5, 3, 4, 2, 0};
  std::vector<std::uint64_t> got;
  while (!queue.empty()) {
    const EventKey k = queue.peek_key();
    ScheduledEvent e = queue.pop_min();
    EXPECT_EQ(e.key, k);
    EXPECT_EQ(e.id, e.key.sequence + 1);
    EXPECT_TRUE(static_cast<bool>(e.fn));
    got.push_back(e.key.sequence);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(queue.size(), 0U);
}

TEST(EngineEventQueue, EmptyQueueThrows) {
  BinaryHeapEventQueue q;
  EXPECT_THROW((void)q.pop_min(), std::logic_error);
  EXPECT_THROW((void)q.peek_key(), std::logic_error);
}

TEST(EngineEventQueue, MatchesSortOnRandomKeysWithManyTies) {
  SplitMix rng{12345};
  BinaryHeapEventQueue q;
  std::vector<EventKey> keys;
  std::uint64_t seq = 0;
  // Interleave pushes and pops (the hold pattern) and compare against a sorted reference.
  std::vector<EventKey> popped;
  for (int round = 0; round < 20'000; ++round) {
    if (q.empty() || rng.below(3) != 0) {
      const EventKey k{ns(static_cast<std::int64_t>(rng.below(50))), static_cast<Priority>(rng.below(3)) - 1,
                       seq++};
      keys.push_back(k);
      q.push(ScheduledEvent{k, k.sequence + 1, [] {}});
    } else {
      const EventKey min = *std::min_element(keys.begin(), keys.end());
      const EventKey got = q.pop_min().key;
      ASSERT_EQ(got, min);
      keys.erase(std::find(keys.begin(), keys.end(), min));
    }
    ASSERT_EQ(q.size(), keys.size());
  }
  std::sort(keys.begin(), keys.end());
  for (const EventKey& k : keys) ASSERT_EQ(q.pop_min().key, k);
  EXPECT_TRUE(q.empty());
}

// -------------------------------------------------------------------------------------- Simulator

TEST(EngineSimulator, StartsEmptyAtZero) {
  Simulator sim;
  EXPECT_EQ(sim.now(), Time::zero());
  EXPECT_EQ(sim.pending(), 0U);
  EXPECT_EQ(sim.events_executed(), 0U);
  EXPECT_EQ(sim.fingerprint(), Simulator::kFingerprintSeed);
  sim.run();  // nothing to do
  EXPECT_EQ(sim.now(), Time::zero());
}

TEST(EngineSimulator, RunsInTimeOrderAndAdvancesNow) {
  Simulator sim;
  std::string order;
  std::vector<std::int64_t> times;
  auto rec = [&](char c) {
    return [&, c] {
      order += c;
      times.push_back(sim.now().ns());
    };
  };
  sim.schedule(ns(30), rec('c'));
  sim.schedule(ns(10), rec('a'));
  sim.schedule(ns(20), rec('b'));
  EXPECT_EQ(sim.pending(), 3U);
  sim.run();
  EXPECT_EQ(order, "abc");
  EXPECT_EQ(times, (std::vector<std::int64_t>{10, 20, 30}));
  EXPECT_EQ(sim.now(), ns(30));
  EXPECT_EQ(sim.events_executed(), 3U);
  EXPECT_EQ(sim.pending(), 0U);
}

TEST(EngineSimulator, TiesBrokenByPriorityThenInsertionOrder) {
  Simulator sim;
  std::string order;
  auto rec = [&](char c) { return [&order, c] { order += c; }; };
  sim.schedule(ns(5), rec('A'), 0);
  sim.schedule(ns(5), rec('B'), -1);
  sim.schedule(ns(5), rec('C'), 0);
  sim.schedule(ns(5), rec('D'), 1);
  sim.schedule(ns(5), rec('E'), -1);
  sim.schedule(ns(4), rec('F'), 100);  // earlier time beats any priority
  sim.schedule(ns(5), rec('G'));       // default priority 0, inserted last
  // t=4: F.  t=5: priority -1: B, E (FIFO); priority 0: A, C, G (FIFO); priority 1: D.
  sim.run();
  EXPECT_EQ(order, "FBEACGD");
}

TEST(EngineSimulator, EventsScheduleFurtherEvents) {
  Simulator sim;
  std::string order;
  // A chain: each tick schedules the next 10 ns later, five ticks in all.
  std::vector<std::int64_t> ticks;
  std::function<void()> tick = [&] {
    ticks.push_back(sim.now().ns());
    if (ticks.size() < 5) sim.schedule_in(ns(10), tick);
  };
  sim.schedule(ns(0), tick);
  sim.run();
  EXPECT_EQ(ticks, (std::vector<std::int64_t>{0, 10, 20, 30, 40}));

  // Same-time scheduling: at t=100, A (prio 0, first) and D (prio 0, second) are queued. A schedules
  // B at now (prio 0) and C at now (prio -5). After A: C (lower priority value), then D before B (D was
  // inserted earlier).
  auto rec = [&](char c) { return [&order, c] { order += c; }; };
  sim.schedule(ns(100), [&] {
    order += 'A';
    sim.schedule(sim.now(), rec('B'));
    sim.schedule_in(Time::zero(), rec('C'), -5);
  });
  sim.schedule(ns(100), rec('D'));
  sim.run();
  EXPECT_EQ(order, "ACDB");
  EXPECT_EQ(sim.now(), ns(100));
  EXPECT_EQ(sim.events_executed(), 5U + 4U);
}

TEST(EngineSimulator, CancellationIsLazyAndExact) {
  Simulator sim;
  std::string order;
  auto rec = [&](char c) { return [&order, c] { order += c; }; };
  const EventId a = sim.schedule(ns(1), rec('a'));
  const EventId b = sim.schedule(ns(2), rec('b'));
  const EventId c = sim.schedule(ns(3), rec('c'));
  EXPECT_NE(a, 0U);
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_EQ(sim.pending(), 3U);

  EXPECT_TRUE(sim.cancel(b));
  EXPECT_EQ(sim.pending(), 2U);
  EXPECT_FALSE(sim.cancel(b));  // twice
  EXPECT_EQ(sim.pending(), 2U);
  EXPECT_FALSE(sim.cancel(0));                    // never a valid id
  EXPECT_FALSE(sim.cancel(0xdeadbeef00000000ULL));  // unknown
  EXPECT_FALSE(sim.cancel(0x0000000100000063ULL));  // slot 99 does not exist

  sim.run();
  EXPECT_EQ(order, "ac");  // b never runs
  EXPECT_EQ(sim.events_executed(), 2U);
  EXPECT_EQ(sim.pending(), 0U);
  EXPECT_EQ(sim.now(), ns(3));
  EXPECT_FALSE(sim.cancel(a));  // after it ran
  EXPECT_FALSE(sim.cancel(c));
  EXPECT_FALSE(sim.cancel(b));
}

TEST(EngineSimulator, StaleIdsDoNotCancelReusedSlots) {
  Simulator sim;
  int ran = 0;
  const EventId first = sim.schedule(ns(1), [&] { ++ran; });
  sim.run();
  // The slot of `first` is free now and is reused by the next event, under a new id.
  const EventId second = sim.schedule(ns(2), [&] { ++ran; });
  EXPECT_NE(first, second);
  EXPECT_FALSE(sim.cancel(first));
  EXPECT_EQ(sim.pending(), 1U);
  sim.run();
  EXPECT_EQ(ran, 2);
}

TEST(EngineSimulator, CancelFromInsideEvents) {
  Simulator sim;
  std::string order;
  EventId self = 0;
  EventId victim = 0;
  bool self_cancel = true;
  self = sim.schedule(ns(1), [&] {
    order += 'x';
    self_cancel = sim.cancel(self);      // running: no longer pending
    EXPECT_TRUE(sim.cancel(victim));     // a later event
    EXPECT_EQ(sim.pending(), 1U);        // only z is left
  });
  victim = sim.schedule(ns(2), [&] { order += 'y'; });
  sim.schedule(ns(2), [&] { order += 'z'; });
  sim.run();
  EXPECT_FALSE(self_cancel);
  EXPECT_EQ(order, "xz");
  EXPECT_EQ(sim.events_executed(), 2U);
  EXPECT_EQ(sim.now(), ns(2));
}

TEST(EngineSimulator, SchedulingInThePastThrows) {
  Simulator sim;
  bool threw_inside = false;
  sim.schedule(ns(100), [&] {
    try {
      sim.schedule(ns(99), [] {});
    } catch (const std::logic_error&) {
      threw_inside = true;
    }
  });
  sim.run();
  EXPECT_TRUE(threw_inside);
  EXPECT_EQ(sim.now(), ns(100));
  EXPECT_THROW(sim.schedule(ns(50), [] {}), std::logic_error);
  EXPECT_THROW(sim.schedule_in(ns(-1), [] {}), std::logic_error);
  EXPECT_THROW(sim.schedule_in(Time::max(), [] {}), std::overflow_error);  // 100 ns + max
  EXPECT_THROW(sim.schedule(ns(200), std::function<void()>{}), std::invalid_argument);
  EXPECT_EQ(sim.pending(), 0U);  // failed calls leave nothing behind
  EXPECT_NO_THROW(sim.schedule(ns(100), [] {}));  // at now() is allowed
  EXPECT_NO_THROW(sim.schedule(Time::max(), [] {}));
  EXPECT_EQ(sim.pending(), 2U);
}

TEST(EngineSimulator, RunUntilIsInclusiveAndAdvancesNowToTheLimit) {
  Simulator sim;
  std::string order;
  auto rec = [&](char c) { return [&order, c] { order += c; }; };
  sim.schedule(ns(10), rec('a'));
  sim.schedule(ns(20), [&] {
    order += 'b';
    sim.schedule(ns(20), rec('B'));  // scheduled during the run, at the limit: runs too
    sim.schedule(ns(21), rec('C'));  // beyond the limit: waits
  });
  sim.schedule(ns(30), rec('c'));

  sim.run_until(ns(20));
  EXPECT_EQ(order, "abB");
  EXPECT_EQ(sim.now(), ns(20));
  EXPECT_EQ(sim.pending(), 2U);

  sim.run_until(ns(20));  // same limit again: nothing to do
  sim.run_until(ns(25));
  EXPECT_EQ(order, "abBC");
  EXPECT_EQ(sim.now(), ns(25));  // no event at 25, yet the clock moves to the limit

  EXPECT_THROW(sim.run_until(ns(24)), std::logic_error);
  sim.run();
  EXPECT_EQ(order, "abBCc");
  EXPECT_EQ(sim.now(), ns(30));

  sim.run_until(ns(1000));  // empty queue: clock still moves
  EXPECT_EQ(sim.now(), ns(1000));
}

TEST(EngineSimulator, StopEndsTheRunAfterTheCurrentEvent) {
  Simulator sim;
  std::string order;
  auto rec = [&](char c) { return [&order, c] { order += c; }; };
  sim.schedule(ns(1), rec('1'));
  sim.schedule(ns(2), rec('2'));
  sim.schedule(ns(3), [&] {
    order += '3';
    sim.stop();
    order += '!';  // the current event finishes
  });
  sim.schedule(ns(3), rec('x'));  // same time, later: not run before the stop takes effect
  sim.schedule(ns(4), rec('4'));
  sim.run();
  EXPECT_EQ(order, "123!");
  EXPECT_EQ(sim.now(), ns(3));
  EXPECT_EQ(sim.pending(), 2U);

  sim.run();  // resumes
  EXPECT_EQ(order, "123!x4");
  EXPECT_EQ(sim.now(), ns(4));

  // stop() inside run_until: the clock stays at the stopping event, not the limit.
  sim.schedule(ns(10), [&] { sim.stop(); });
  sim.schedule(ns(11), rec('y'));
  sim.run_until(ns(50));
  EXPECT_EQ(sim.now(), ns(10));
  EXPECT_EQ(order, "123!x4");
  sim.run_until(ns(50));
  EXPECT_EQ(order, "123!x4y");
  EXPECT_EQ(sim.now(), ns(50));

  // stop() outside a run has no effect on the next run.
  sim.schedule(ns(60), rec('z'));
  sim.stop();
  sim.run();
  EXPECT_EQ(order, "123!x4yz");
}

TEST(EngineSimulator, ExceptionFromCallbackPropagatesAndSimulatorStaysUsable) {
  Simulator sim;
  std::string order;
  sim.schedule(ns(1), [] { throw std::runtime_error("boom"); });
  sim.schedule(ns(2), [&] { order += 'b'; });
  EXPECT_THROW(sim.run(), std::runtime_error);
  EXPECT_EQ(sim.now(), ns(1));
  EXPECT_EQ(sim.events_executed(), 1U);
  EXPECT_EQ(sim.pending(), 1U);
  sim.run();
  EXPECT_EQ(order, "b");
}

TEST(EngineSimulator, NestedRunThrows) {
  Simulator sim;
  bool threw = false;
  sim.schedule(ns(1), [&] {
    try {
      sim.run();
    } catch (const std::logic_error&) {
      threw = true;
    }
  });
  sim.run();
  EXPECT_TRUE(threw);
}

TEST(EngineSimulator, AcceptsAnExplicitQueue) {
  Simulator sim(std::make_unique<BinaryHeapEventQueue>());
  int ran = 0;
  sim.schedule(ns(3), [&] { ++ran; });
  sim.run();
  EXPECT_EQ(ran, 1);
  EXPECT_THROW(Simulator(std::unique_ptr<EventQueue>{}), std::invalid_argument);
}

// ----------------------------------------------------------------------------------- Determinism

std::uint64_t mix64(std::uint64_t z) {  // the SplitMix64 finalizer, as documented in simulator.hpp
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TEST(EngineDeterminism, FingerprintFollowsTheDocumentedFormula) {
  Simulator sim;
  const EventId dropped = sim.schedule(ns(1), [] {});  // sequence 0, cancelled: not hashed
  sim.schedule(ns(7), [] {}, -3);                      // sequence 1
  sim.schedule(ns(9), [] {});                          // sequence 2
  ASSERT_TRUE(sim.cancel(dropped));
  sim.run();
  std::uint64_t h = Simulator::kFingerprintSeed;
  for (auto [t, p, s] : {std::tuple<std::int64_t, Priority, std::uint64_t>{7, -3, 1}, {9, 0, 2}}) {
    h = mix64(h ^ static_cast<std::uint64_t>(t));
    h = mix64(h ^ static_cast<std::uint32_t>(p));
    h = mix64(h ^ s);
  }
  EXPECT_EQ(sim.fingerprint(), h);
  sim.mix_into_fingerprint(42);
  EXPECT_EQ(sim.fingerprint(), mix64(h ^ 42));
}

struct WorkloadResult {
  std::vector<std::pair<std::int64_t, std::uint32_t>> order;  // (time ns, event label) as executed
  std::uint64_t fingerprint = 0;
  std::uint64_t executed = 0;
  std::uint64_t cancelled = 0;
};

// A pseudo-random self-growing workload: 100 seed events; each executed event schedules one or two more
// (random delay 0..999 ns, random priority -2..2) until `total` events have been scheduled, and one time
// in eight cancels a random earlier event (which may already have run).
WorkloadResult run_workload(std::uint64_t seed, std::uint32_t total) {
  Simulator sim;
  SplitMix rng{seed};
  WorkloadResult out;
  std::vector<EventId> ids;
  std::function<void(std::uint32_t)> on_event;
  auto schedule_one = [&] {
    const auto label = static_cast<std::uint32_t>(ids.size());
    const Time delay = Time::from_ns(static_cast<std::int64_t>(rng.below(1000)));
    const auto priority = static_cast<Priority>(rng.below(5)) - 2;
    ids.push_back(sim.schedule_in(delay, [&on_event, label] { on_event(label); }, priority));
  };
  on_event = [&](std::uint32_t label) {
    out.order.emplace_back(sim.now().ns(), label);
    const std::uint64_t children = 1 + rng.below(2);
    for (std::uint64_t i = 0; i < children && ids.size() < total; ++i) schedule_one();
    if (rng.below(8) == 0 && sim.cancel(ids[rng.below(ids.size())])) ++out.cancelled;
  };
  for (int i = 0; i < 100; ++i) schedule_one();
  sim.run();
  out.fingerprint = sim.fingerprint();
  out.executed = sim.events_executed();
  return out;
}

TEST(EngineDeterminism, IdenticalRunsGiveIdenticalFingerprintAndOrder) {
  const WorkloadResult r1 = run_workload(2024, 10'000);
  const WorkloadResult r2 = run_workload(2024, 10'000);
  EXPECT_EQ(r1.executed + r1.cancelled, 10'000U);  // every scheduled event ran or was cancelled
  EXPECT_GT(r1.cancelled, 0U);
  EXPECT_EQ(r1.order.size(), r1.executed);
  EXPECT_EQ(r1.order, r2.order);
  EXPECT_EQ(r1.fingerprint, r2.fingerprint);
  EXPECT_NE(r1.fingerprint, Simulator::kFingerprintSeed);
  // Time never goes backwards.
  for (std::size_t i = 1; i < r1.order.size(); ++i) ASSERT_LE(r1.order[i - 1].first, r1.order[i].first);
}

TEST(EngineDeterminism, DifferentRunsGiveDifferentFingerprints) {
  const WorkloadResult a = run_workload(2024, 10'000);
  const WorkloadResult b = run_workload(2025, 10'000);
  EXPECT_NE(a.order, b.order);
  EXPECT_NE(a.fingerprint, b.fingerprint);
}

TEST(EngineDeterminism, SwappedExecutionOrderChangesTheFingerprint) {
  // Same two events at the same time; only their priorities differ, so they run in the other order.
  auto run = [](Priority first, Priority second) {
    Simulator sim;
    sim.schedule(ns(5), [] {}, first);   // sequence 0
    sim.schedule(ns(5), [] {}, second);  // sequence 1
    sim.run();
    return sim.fingerprint();
  };
  EXPECT_EQ(run(0, 1), run(0, 1));
  EXPECT_NE(run(0, 1), run(1, 0));  // executes (5,0,seq0),(5,1,seq1) vs (5,0,seq1),(5,1,seq0)
  EXPECT_NE(run(0, 0), run(0, 1));
}

}  // namespace
