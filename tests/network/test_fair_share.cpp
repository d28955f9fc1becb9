// Max-min fair sharing (models/network/fair_share.hpp): hand-checkable cases with the arithmetic in the
// comments, then properties on a random instance (feasibility, a bottleneck for every flow, agreement with a
// naive reference water-filling, incremental == full, determinism), and the solver's bottleneck order (a sorted
// run of first keys beside a heap of re-keyed links) against the previous one-heap algorithm, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "models/network/fair_share.hpp"
#include "models/units.hpp"

namespace {

using clustersim::models::FairShareSolver;
using clustersim::models::FlowId;
using clustersim::models::LinkId;
using clustersim::units::BytesPerSecond;
using clustersim::units::gigabytes_per_second;

constexpr double kGB = 1e9;

double gbps(const FairShareSolver& s, FlowId f) { return s.rate(f).value() / kGB; }

TEST(FairShare, TwoFlowsOnOneLinkSplitItEvenly) {
  // One 100 GB/s link, two flows: 100 / 2 = 50 GB/s each.
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId path[] = {a};
  const FlowId f1 = s.add_flow(path);
  const FlowId f2 = s.add_flow(path);
  EXPECT_EQ(s.rate(f1).value(), 0.0) << "rates are those of the last solve()";
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, f1), 50.0);
  EXPECT_DOUBLE_EQ(gbps(s, f2), 50.0);
  EXPECT_EQ(s.flow_count(), 2u);
}

TEST(FairShare, FlowBottleneckedElsewhereLeavesItsShareToOthers) {
  // A(100) carries f1, f2; B(30) carries f2, f3. Fair shares: A 100/2 = 50, B 30/2 = 15 -> B is the
  // bottleneck: f2 = f3 = 15. Then A has 100 - 15 = 85 left for its one unfrozen flow: f1 = 85.
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId b = s.add_link(gigabytes_per_second(30));
  const LinkId p1[] = {a};
  const LinkId p2[] = {a, b};
  const LinkId p3[] = {b};
  const FlowId f1 = s.add_flow(p1);
  const FlowId f2 = s.add_flow(p2);
  const FlowId f3 = s.add_flow(p3);
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, f1), 85.0);
  EXPECT_DOUBLE_EQ(gbps(s, f2), 15.0);
  EXPECT_DOUBLE_EQ(gbps(s, f3), 15.0);
}

TEST(FairShare, CappedFlowLeavesTheRestToTheOther) {
  // 100 GB/s link, f1 capped at 10, f2 uncapped. The cap (10) is below the fair share (50), so f1 = 10 and
  // f2 = 100 - 10 = 90.
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId path[] = {a};
  const FlowId f1 = s.add_flow(path, gigabytes_per_second(10));
  const FlowId f2 = s.add_flow(path);
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, f1), 10.0);
  EXPECT_DOUBLE_EQ(gbps(s, f2), 90.0);
}

TEST(FairShare, CapAboveFairShareDoesNotBind) {
  // Cap 80 on a 100 link shared with one other flow: fair share 50 < 80, so both get 50.
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId path[] = {a};
  const FlowId f1 = s.add_flow(path, gigabytes_per_second(80));
  const FlowId f2 = s.add_flow(path);
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, f1), 50.0);
  EXPECT_DOUBLE_EQ(gbps(s, f2), 50.0);
}

TEST(FairShare, ParkingLotEqualLinks) {
  // Parking lot: L1, L2, L3 of 100 GB/s in a row; the long flow crosses all three, one short flow per link.
  // Every link has two flows, fair share 100 / 2 = 50: everyone gets 50 (the long flow gets no less for
  // crossing three links, which max-min fairness does not penalise).
  FairShareSolver s;
  std::vector<LinkId> l;
  for (int i = 0; i < 3; ++i) l.push_back(s.add_link(gigabytes_per_second(100)));
  const FlowId lng = s.add_flow(l);
  std::vector<FlowId> shorts;
  for (LinkId id : l) shorts.push_back(s.add_flow(std::span<const LinkId>(&id, 1)));
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, lng), 50.0);
  for (FlowId f : shorts) EXPECT_DOUBLE_EQ(gbps(s, f), 50.0);
}

TEST(FairShare, ParkingLotWithNarrowMiddleLink) {
  // L1 = 100, L2 = 60, L3 = 100; long flow over L1 L2 L3, short flows s1, s2, s3 on one link each.
  // Shares: L1 100/2 = 50, L2 60/2 = 30, L3 50 -> L2 bottleneck: long = s2 = 30.
  // Then L1 and L3 have 100 - 30 = 70 left for one flow each: s1 = s3 = 70.
  FairShareSolver s;
  const LinkId l1 = s.add_link(gigabytes_per_second(100));
  const LinkId l2 = s.add_link(gigabytes_per_second(60));
  const LinkId l3 = s.add_link(gigabytes_per_second(100));
  const LinkId all[] = {l1, l2, l3};
  const FlowId lng = s.add_flow(all);
  const FlowId s1 = s.add_flow(std::span<const LinkId>(&l1, 1));
  const FlowId s2 = s.add_flow(std::span<const LinkId>(&l2, 1));
  const FlowId s3 = s.add_flow(std::span<const LinkId>(&l3, 1));
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, lng), 30.0);
  EXPECT_DOUBLE_EQ(gbps(s, s2), 30.0);
  EXPECT_DOUBLE_EQ(gbps(s, s1), 70.0);
  EXPECT_DOUBLE_EQ(gbps(s, s3), 70.0);
}

TEST(FairShare, RemovalReturnsBandwidth) {
  // The A(100)/B(30) case: f1 = 85, f2 = f3 = 15. Remove f2: f1 alone on A gets 100, f3 alone on B gets 30.
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId b = s.add_link(gigabytes_per_second(30));
  const LinkId p2[] = {a, b};
  const FlowId f1 = s.add_flow(std::span<const LinkId>(&a, 1));
  const FlowId f2 = s.add_flow(p2);
  const FlowId f3 = s.add_flow(std::span<const LinkId>(&b, 1));
  s.solve();
  ASSERT_DOUBLE_EQ(gbps(s, f1), 85.0);
  s.remove_flow(f2);
  EXPECT_FALSE(s.contains(f2));
  EXPECT_THROW((void)s.rate(f2), std::out_of_range);
  EXPECT_EQ(s.flow_count(), 2u);
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, f1), 100.0);
  EXPECT_DOUBLE_EQ(gbps(s, f3), 30.0);
  // The freed slot is reused, but the old id stays invalid: the new id differs.
  const FlowId f4 = s.add_flow(p2);
  EXPECT_NE(f4, f2);
  EXPECT_FALSE(s.contains(f2));
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, f4), 15.0);
  EXPECT_DOUBLE_EQ(gbps(s, f1), 85.0);
}

TEST(FairShare, SolveTouchesOnlyDirtyComponents) {
  // Two disjoint components: X (link a: f1, f2) and Y (link b: f3, f4, f5).
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId b = s.add_link(gigabytes_per_second(90));
  const std::span<const LinkId> pa(&a, 1);
  const std::span<const LinkId> pb(&b, 1);
  const FlowId f1 = s.add_flow(pa);
  const FlowId f2 = s.add_flow(pa);
  const FlowId f3 = s.add_flow(pb);
  const FlowId f4 = s.add_flow(pb);
  const FlowId f5 = s.add_flow(pb);
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 2u);
  EXPECT_EQ(s.last_solve_flows_touched(), 5u);
  EXPECT_DOUBLE_EQ(gbps(s, f3), 30.0);  // 90 / 3

  // Add f6 on a: only X (now 3 flows) is recomputed: 100 / 3 each; Y untouched.
  const FlowId f6 = s.add_flow(pa);
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 1u);
  EXPECT_EQ(s.last_solve_stats().links, 1u);
  EXPECT_EQ(s.last_solve_flows_touched(), 3u);
  EXPECT_DOUBLE_EQ(gbps(s, f1), 100.0 / 3.0);
  EXPECT_DOUBLE_EQ(gbps(s, f6), 100.0 / 3.0);
  EXPECT_DOUBLE_EQ(gbps(s, f4), 30.0);

  // Remove f3: only Y (now 2 flows) is recomputed: 90 / 2 = 45.
  s.remove_flow(f3);
  s.solve();
  EXPECT_EQ(s.last_solve_flows_touched(), 2u);
  EXPECT_DOUBLE_EQ(gbps(s, f4), 45.0);
  EXPECT_DOUBLE_EQ(gbps(s, f5), 45.0);
  EXPECT_DOUBLE_EQ(gbps(s, f2), 100.0 / 3.0);

  // Nothing changed: solve() is a no-op.
  s.solve();
  EXPECT_EQ(s.last_solve_flows_touched(), 0u);

  // A capacity change dirties its component only: b = 60 -> 30 each.
  s.set_capacity(b, gigabytes_per_second(60));
  s.solve();
  EXPECT_EQ(s.last_solve_flows_touched(), 2u);
  EXPECT_DOUBLE_EQ(gbps(s, f5), 30.0);
}

TEST(FairShare, RemovingABridgeSplitsTheComponent) {
  // f_bridge crosses a and b, joining {f1 on a} and {f2 on b} into one component. Removing it leaves two
  // components, both re-solved: f1 = 100 (alone on a), f2 = 50 (alone on b).
  FairShareSolver s;
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId b = s.add_link(gigabytes_per_second(50));
  const LinkId ab[] = {a, b};
  const FlowId f1 = s.add_flow(std::span<const LinkId>(&a, 1));
  const FlowId bridge = s.add_flow(ab);
  const FlowId f2 = s.add_flow(std::span<const LinkId>(&b, 1));
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 1u);
  EXPECT_DOUBLE_EQ(gbps(s, f1), 75.0);  // b: 50/2 = 25 for bridge and f2; a: 100 - 25 = 75 for f1
  s.remove_flow(bridge);
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 2u);
  EXPECT_DOUBLE_EQ(gbps(s, f1), 100.0);
  EXPECT_DOUBLE_EQ(gbps(s, f2), 50.0);
}

TEST(FairShare, PathlessFlowRunsAtItsCapAndRepeatedLinkCountsTwice) {
  FairShareSolver s;
  const FlowId local = s.add_flow({}, gigabytes_per_second(7));
  // A flow crossing link a twice uses its rate twice there: with one other flow, shares are 100 / 3 (three
  // crossings), so both get 33.3 and the link carries 3 x 33.3 = 100.
  const LinkId a = s.add_link(gigabytes_per_second(100));
  const LinkId twice[] = {a, a};
  const FlowId loop = s.add_flow(twice);
  const FlowId other = s.add_flow(std::span<const LinkId>(&a, 1));
  s.solve();
  EXPECT_DOUBLE_EQ(gbps(s, local), 7.0);
  EXPECT_DOUBLE_EQ(gbps(s, loop), 100.0 / 3.0);
  EXPECT_DOUBLE_EQ(gbps(s, other), 100.0 / 3.0);
}

TEST(FairShare, RejectsBadInput) {
  FairShareSolver s;
  EXPECT_THROW(s.add_link(BytesPerSecond(0.0)), std::invalid_argument);
  EXPECT_THROW(s.add_link(BytesPerSecond(std::numeric_limits<double>::infinity())), std::invalid_argument);
  EXPECT_THROW(s.add_link(BytesPerSecond(std::numeric_limits<double>::quiet_NaN())), std::invalid_argument);
  const LinkId a = s.add_link(gigabytes_per_second(1));
  const LinkId bad[] = {a, 7};
  EXPECT_THROW(s.add_flow(bad), std::out_of_range);
  EXPECT_EQ(s.flow_count(), 0u);
  EXPECT_THROW(s.add_flow({}), std::invalid_argument);
  EXPECT_THROW(s.add_flow(std::span<const LinkId>(&a, 1), BytesPerSecond(0.0)), std::invalid_argument);
  EXPECT_THROW(s.remove_flow(12345), std::out_of_range);
  const FlowId f = s.add_flow(std::span<const LinkId>(&a, 1));
  s.remove_flow(f);
  EXPECT_THROW(s.remove_flow(f), std::out_of_range);
  EXPECT_THROW(s.set_capacity(9, gigabytes_per_second(1)), std::out_of_range);
}

// ---- random instance -------------------------------------------------------------------------------------

// Uniform integer in [0, n) from a 64-bit draw. The modulo bias (n / 2^64) is negligible here, and unlike
// std::uniform_int_distribution the mapping is the same on every standard library.
uint64_t below(std::mt19937_64& rng, uint64_t n) { return rng() % n; }

struct Instance {
  std::vector<double> capacity;              // per link, B/s
  std::vector<std::vector<LinkId>> paths;    // per flow
  std::vector<double> cap;                   // per flow, B/s (infinity: none)
};

Instance random_instance(uint64_t seed, size_t links, size_t flows) {
  std::mt19937_64 rng(seed);
  Instance in;
  for (size_t l = 0; l < links; ++l) in.capacity.push_back(static_cast<double>(1 + below(rng, 100)) * kGB);
  for (size_t f = 0; f < flows; ++f) {
    std::vector<LinkId> path;
    const uint64_t hops = 1 + below(rng, 5);
    for (uint64_t h = 0; h < hops; ++h) path.push_back(static_cast<LinkId>(below(rng, links)));
    in.paths.push_back(std::move(path));
    in.cap.push_back(below(rng, 8) == 0 ? static_cast<double>(1 + below(rng, 20)) * 0.1 * kGB
                                        : std::numeric_limits<double>::infinity());
  }
  return in;
}

// Naive progressive filling, O(iterations x (L + H)), for cross-checking.
std::vector<double> reference_rates(const Instance& in) {
  const size_t n_links = in.capacity.size();
  const size_t n_flows = in.paths.size();
  std::vector<double> remaining = in.capacity;
  std::vector<double> rate(n_flows, 0.0);
  std::vector<bool> frozen(n_flows, false);
  size_t left = n_flows;
  while (left > 0) {
    std::vector<size_t> unfrozen(n_links, 0);
    for (size_t f = 0; f < n_flows; ++f) {
      if (!frozen[f]) {
        for (LinkId l : in.paths[f]) ++unfrozen[l];
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < n_links; ++l) {
      if (unfrozen[l] > 0) best = std::min(best, remaining[l] / static_cast<double>(unfrozen[l]));
    }
    for (size_t f = 0; f < n_flows; ++f) {
      if (!frozen[f]) best = std::min(best, in.cap[f]);
    }
    // Freeze every flow whose cap or some link's share equals the minimum (within rounding).
    const double tol = best * 1e-12;
    std::vector<size_t> to_freeze;
    for (size_t f = 0; f < n_flows; ++f) {
      if (frozen[f]) continue;
      bool hit = in.cap[f] <= best + tol;
      for (LinkId l : in.paths[f]) {
        hit = hit || remaining[l] / static_cast<double>(unfrozen[l]) <= best + tol;
      }
      if (hit) to_freeze.push_back(f);
    }
    for (size_t f : to_freeze) {
      frozen[f] = true;
      rate[f] = best;
      --left;
      for (LinkId l : in.paths[f]) remaining[l] = std::max(0.0, remaining[l] - best);
    }
  }
  return rate;
}

std::vector<FlowId> load(FairShareSolver& s, const Instance& in) {
  for (double c : in.capacity) s.add_link(BytesPerSecond(c));
  std::vector<FlowId> ids;
  for (size_t f = 0; f < in.paths.size(); ++f) ids.push_back(s.add_flow(in.paths[f], BytesPerSecond(in.cap[f])));
  return ids;
}

TEST(FairShareRandom, FeasibleAndEveryFlowHasABottleneck) {
  // ~2000 flows of 1-5 hops over 200 links of 1-100 GB/s; one flow in 8 capped at 0.1-2 GB/s.
  const Instance in = random_instance(20261122, 200, 2000);
  FairShareSolver s;
  const std::vector<FlowId> ids = load(s, in);
  s.solve();

  std::vector<double> load_on(in.capacity.size(), 0.0);
  std::vector<double> max_on(in.capacity.size(), 0.0);
  for (size_t f = 0; f < ids.size(); ++f) {
    const double r = s.rate(ids[f]).value();
    ASSERT_GT(r, 0.0);
    ASSERT_LE(r, in.cap[f] * (1 + 1e-12));
    for (LinkId l : in.paths[f]) {
      load_on[l] += r;
      max_on[l] = std::max(max_on[l], r);
    }
  }
  // Feasible: no link carries more than its capacity (1e-9 relative for rounding).
  for (size_t l = 0; l < in.capacity.size(); ++l) {
    EXPECT_LE(load_on[l], in.capacity[l] * (1 + 1e-9)) << "link " << l;
  }
  // Max-min optimal (Bertsekas & Gallager Prop. 6.5.2 condition): each flow is at its cap, or crosses a
  // saturated link on which no flow is faster than it.
  for (size_t f = 0; f < ids.size(); ++f) {
    const double r = s.rate(ids[f]).value();
    bool bottleneck = r >= in.cap[f] * (1 - 1e-9);
    for (LinkId l : in.paths[f]) {
      const bool saturated = load_on[l] >= in.capacity[l] * (1 - 1e-9);
      bottleneck = bottleneck || (saturated && r >= max_on[l] * (1 - 1e-9));
    }
    EXPECT_TRUE(bottleneck) << "flow " << f << " at " << r << " B/s has no bottleneck";
  }
  // Agrees with the naive reference.
  const std::vector<double> ref = reference_rates(in);
  for (size_t f = 0; f < ids.size(); ++f) {
    EXPECT_NEAR(s.rate(ids[f]).value(), ref[f], ref[f] * 1e-9) << "flow " << f;
  }
}

TEST(FairShareRandom, IncrementalEqualsFullAndIsDeterministic) {
  // Many small components (paths inside blocks of 10 links), churned: remove/add flows with a solve after
  // every batch. The rates must equal, bit for bit, a full recompute, and a second identical run.
  auto run = [](bool solve_each_batch, bool full_at_end) {
    std::mt19937_64 rng(7);
    FairShareSolver s;
    for (int l = 0; l < 400; ++l) s.add_link(BytesPerSecond(static_cast<double>(1 + below(rng, 100)) * kGB));
    std::vector<FlowId> live;
    auto add_random = [&] {
      const uint64_t block = below(rng, 40) * 10;
      std::vector<LinkId> path;
      const uint64_t hops = 1 + below(rng, 3);
      for (uint64_t h = 0; h < hops; ++h) path.push_back(static_cast<LinkId>(block + below(rng, 10)));
      const double cap = below(rng, 5) == 0 ? 0.5 * kGB : std::numeric_limits<double>::infinity();
      live.push_back(s.add_flow(path, BytesPerSecond(cap)));
    };
    for (int i = 0; i < 1500; ++i) add_random();
    s.solve();
    size_t max_touched = 0;
    for (int batch = 0; batch < 50; ++batch) {
      for (int k = 0; k < 3; ++k) {
        const size_t victim = below(rng, live.size());
        s.remove_flow(live[victim]);
        live[victim] = live.back();
        live.pop_back();
        add_random();
      }
      if (solve_each_batch) {
        s.solve();
        max_touched = std::max(max_touched, s.last_solve_flows_touched());
      }
    }
    if (full_at_end) s.invalidate_all();
    s.solve();
    std::vector<double> rates;
    for (FlowId f : live) rates.push_back(s.rate(f).value());
    return std::make_pair(rates, max_touched);
  };
  const auto [incremental, touched] = run(true, false);
  const auto [full, unused1] = run(false, true);
  const auto [again, unused2] = run(true, false);
  ASSERT_EQ(incremental.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(incremental[i], full[i]) << "flow " << i;  // bit-identical
    EXPECT_EQ(incremental[i], again[i]) << "flow " << i;
  }
  // Three changes touch at most 6 blocks of ~40 flows each, far fewer than the 1500 flows.
  EXPECT_GT(touched, 0u);
  EXPECT_LT(touched, 500u);
}

// clear() (reused by the collectives' per-component solves): a solver cleared after other problems, some of
// their flows removed (freed slots), gives the same ids, rates to the bit, statistics and errors as a fresh one.
TEST(FairShareRandom, ClearedSolverEqualsAFreshOne) {
  FairShareSolver reused;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const Instance in = random_instance(seed, 10 + 7 * seed, 40 * seed);
    FairShareSolver fresh;
    reused.clear();
    EXPECT_EQ(reused.link_count(), 0u);
    EXPECT_EQ(reused.flow_count(), 0u);
    EXPECT_FALSE(reused.dirty());
    const std::vector<FlowId> a = load(fresh, in), b = load(reused, in);
    ASSERT_EQ(a, b) << "seed " << seed;
    fresh.solve();
    reused.solve();
    EXPECT_EQ(fresh.last_solve_stats().components, reused.last_solve_stats().components);
    EXPECT_EQ(fresh.last_solve_stats().links, reused.last_solve_stats().links);
    EXPECT_EQ(fresh.last_solve_stats().flows, reused.last_solve_stats().flows);
    for (size_t f = 0; f < a.size(); ++f) EXPECT_EQ(fresh.rate(a[f]).value(), reused.rate(b[f]).value());
    // Remove every third flow, solve again, add one back into a freed slot: still equal.
    for (size_t f = 0; f < a.size(); f += 3) {
      fresh.remove_flow(a[f]);
      reused.remove_flow(b[f]);
    }
    fresh.solve();
    reused.solve();
    EXPECT_EQ(fresh.add_flow(in.paths[0]), reused.add_flow(in.paths[0]));
    fresh.solve();
    reused.solve();
    for (size_t f = 1; f < a.size(); ++f) {
      if (f % 3 == 0) continue;
      EXPECT_EQ(fresh.rate(a[f]).value(), reused.rate(b[f]).value()) << "seed " << seed << ", flow " << f;
    }
    // Ids of the cleared problem are unknown afterwards, as in a fresh solver.
    EXPECT_EQ(fresh.contains(a[1]), reused.contains(b[1]));
  }
  reused.clear();
  EXPECT_THROW(reused.rate(0), std::out_of_range);
  EXPECT_THROW(reused.add_flow(std::vector<LinkId>{0}), std::out_of_range);
}

// reserve_flows only sizes a link's flow list: with any reservations (none, too few, exact, too many), the same
// ids, rates to the bit and statistics, before and after removals; an unknown link throws.
TEST(FairShareRandom, ReservedFlowListsChangeNothing) {
  for (uint64_t seed = 30; seed < 36; ++seed) {
    const Instance in = random_instance(seed, 12 + seed, 25 * seed);
    FairShareSolver plain, reserved;
    for (double c : in.capacity) {
      plain.add_link(BytesPerSecond(c));
      const LinkId l = reserved.add_link(BytesPerSecond(c));
      reserved.reserve_flows(l, (seed + l) % 4 == 0 ? 0 : (seed + l) % 4 == 1 ? 1 : 2 * in.paths.size());
    }
    std::vector<FlowId> a, b;
    for (size_t f = 0; f < in.paths.size(); ++f) {
      a.push_back(plain.add_flow(in.paths[f], BytesPerSecond(in.cap[f])));
      b.push_back(reserved.add_flow(in.paths[f], BytesPerSecond(in.cap[f])));
    }
    ASSERT_EQ(a, b);
    for (int round = 0; round < 2; ++round) {
      plain.solve();
      reserved.solve();
      EXPECT_EQ(plain.last_solve_stats().links, reserved.last_solve_stats().links);
      EXPECT_EQ(plain.last_solve_stats().flows, reserved.last_solve_stats().flows);
      for (size_t f = 0; f < a.size(); ++f) {
        if (!plain.contains(a[f])) continue;
        EXPECT_EQ(std::bit_cast<uint64_t>(plain.rate(a[f]).value()), std::bit_cast<uint64_t>(reserved.rate(b[f]).value()))
            << "seed " << seed << ", flow " << f;
      }
      for (size_t f = round; f < a.size(); f += 4) {
        plain.remove_flow(a[f]);
        reserved.remove_flow(b[f]);
      }
    }
    EXPECT_THROW(reserved.reserve_flows(static_cast<LinkId>(in.capacity.size()), 1), std::out_of_range);
  }
}

// ---- the previous bottleneck order: one heap of every link ------------------------------------------------

// The previous FairShareSolver::fill, kept as the oracle of the present one (a sorted run of first keys and a
// heap of the re-keyed links): every link in one binary min-heap on (share, id) with lazy keys, re-keyed in
// place at the top. One solve of the whole instance, flows in order (a flow's slot is its index); flows with
// an empty path run at their cap. The rates, to the bit, of the previous solver on a fresh load.
std::vector<double> one_heap_rates(const Instance& in) {
  struct Item {
    double share;
    LinkId link;
  };
  const auto before = [](const Item& a, const Item& b) {
    return a.share < b.share || (a.share == b.share && a.link < b.link);
  };
  const size_t n_links = in.capacity.size(), n_flows = in.paths.size();
  std::vector<std::vector<size_t>> on(n_links);  // flows per link entry, in add order (one per crossing)
  for (size_t f = 0; f < n_flows; ++f) {
    for (LinkId l : in.paths[f]) on[l].push_back(f);
  }
  std::vector<double> remaining(in.capacity), rate(n_flows, 0.0);
  std::vector<uint32_t> unfrozen(n_links);
  std::vector<bool> frozen(n_flows, false);
  std::vector<Item> heap;
  for (LinkId l = 0; l < n_links; ++l) {
    unfrozen[l] = static_cast<uint32_t>(on[l].size());
    if (unfrozen[l] > 0) heap.push_back({remaining[l] / unfrozen[l], l});
  }
  const auto after = [&](const Item& a, const Item& b) { return before(b, a); };
  std::make_heap(heap.begin(), heap.end(), after);
  const auto sift_down = [&] {  // the top's key grew
    std::pop_heap(heap.begin(), heap.end(), after);
    std::push_heap(heap.begin(), heap.end(), after);
  };
  const auto pop_top = [&] {
    std::pop_heap(heap.begin(), heap.end(), after);
    heap.pop_back();
  };
  std::vector<std::pair<double, size_t>> caps;
  for (size_t f = 0; f < n_flows; ++f) {
    if (std::isfinite(in.cap[f])) caps.emplace_back(in.cap[f], f);
  }
  std::sort(caps.begin(), caps.end());
  const auto freeze = [&](size_t f, double r) {
    frozen[f] = true;
    rate[f] = r;
    for (LinkId l : in.paths[f]) {
      remaining[l] = std::max(0.0, remaining[l] - r);
      --unfrozen[l];
    }
  };
  size_t next_cap = 0;
  while (!heap.empty() || next_cap < caps.size()) {
    double share = std::numeric_limits<double>::infinity();
    if (!heap.empty()) {
      const LinkId l = heap.front().link;
      if (unfrozen[l] == 0) {
        pop_top();
        continue;
      }
      share = remaining[l] / unfrozen[l];
      if (share > heap.front().share) {
        heap.front().share = share;
        sift_down();
        continue;
      }
    }
    if (next_cap < caps.size() && caps[next_cap].first < share) {
      const size_t f = caps[next_cap++].second;
      if (!frozen[f]) freeze(f, in.cap[f]);
      continue;
    }
    for (size_t f : on[heap.front().link]) {
      if (!frozen[f]) freeze(f, share);
    }
    pop_top();
  }
  for (size_t f = 0; f < n_flows; ++f) {
    if (in.paths[f].empty()) rate[f] = in.cap[f];
  }
  return rate;
}

// An instance rich in ties: capacities from a few values (or all equal), paths inside blocks of links (many
// components) or across all of them, repeated links, caps equal to a link's fair share or to each other, and
// capped flows with an empty path.
Instance tie_instance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Instance in;
  const size_t links = 1 + below(rng, 60);
  const size_t flows = below(rng, 200);
  const uint64_t values = 1 + below(rng, 4);  // distinct capacities: 1 to 4
  const size_t block = 1 + below(rng, links);  // paths stay inside blocks of this many links
  for (size_t l = 0; l < links; ++l) in.capacity.push_back(static_cast<double>(1 << below(rng, values)) * 10 * kGB);
  for (size_t f = 0; f < flows; ++f) {
    std::vector<LinkId> path;
    const uint64_t start = below(rng, links) / block * block;
    const uint64_t width = std::min<uint64_t>(block, links - start);
    const uint64_t hops = below(rng, 12) == 0 ? 0 : 1 + below(rng, 4);
    for (uint64_t h = 0; h < hops; ++h) path.push_back(static_cast<LinkId>(start + below(rng, width)));
    double cap = std::numeric_limits<double>::infinity();
    const uint64_t kind = below(rng, 6);
    if (kind == 0 || path.empty()) cap = static_cast<double>(1 + below(rng, 4)) * 2.5 * kGB;   // equal caps
    if (kind == 1 && !path.empty()) cap = in.capacity[path[0]] / static_cast<double>(1 + below(rng, 8));  // a share
    in.paths.push_back(std::move(path));
    in.cap.push_back(cap);
  }
  return in;
}

// The solver's order of bottlenecks (a sorted run of first keys, a heap of the re-keyed links only) examines
// the same link at every step as the previous single heap: the rates are the previous algorithm's to the bit, on
// instances rich in ties (equal capacities and caps, caps at a link's share, many components, repeated links,
// pathless flows) and on the larger random ones; and again on the flows left after removals (the changed
// components re-solved, then the whole). Both ways of sorting the first keys are taken (few distinct shares: a
// counting sort; many: a comparison sort).
TEST(FairShareRandom, BottleneckOrderEqualsOneHeapToTheBit) {
  size_t compared = 0;
  for (uint64_t seed = 1; seed <= 1500; ++seed) {
    Instance in = seed % 10 == 0 ? random_instance(seed, 5 + seed % 200, seed % 700) : tie_instance(seed);
    FairShareSolver s;
    std::vector<FlowId> ids = load(s, in);
    s.solve();
    const std::vector<double> expected = one_heap_rates(in);
    for (size_t f = 0; f < ids.size(); ++f) {
      ASSERT_EQ(std::bit_cast<uint64_t>(s.rate(ids[f]).value()), std::bit_cast<uint64_t>(expected[f]))
          << "seed " << seed << ", flow " << f;
      ++compared;
    }
    // Remove every third flow; the rest, re-solved whole, against the previous algorithm on the rest.
    Instance rest;
    rest.capacity = in.capacity;
    std::vector<FlowId> kept;
    for (size_t f = 0; f < ids.size(); ++f) {
      if (f % 3 == seed % 3) {
        s.remove_flow(ids[f]);
      } else {
        rest.paths.push_back(in.paths[f]);
        rest.cap.push_back(in.cap[f]);
        kept.push_back(ids[f]);
      }
    }
    const std::vector<double> expected_rest = one_heap_rates(rest);
    for (const bool whole : {false, true}) {  // the changed components only, then every link
      if (whole) s.invalidate_all();
      s.solve();
      for (size_t f = 0; f < kept.size(); ++f) {
        ASSERT_EQ(std::bit_cast<uint64_t>(s.rate(kept[f]).value()), std::bit_cast<uint64_t>(expected_rest[f]))
            << "seed " << seed << ", kept flow " << f << (whole ? ", whole" : ", incremental");
      }
    }
  }
  EXPECT_GT(compared, 100000u);
}

// The solver keeps each link's flow list and each flow's path as regions of two shared arrays: a full link region
// moves to the end with twice the room, a freed flow slot keeps its region for the slot's next flow when the path
// fits and takes a new one otherwise. Churn that exercises every case (paths of 0 to 9 hops re-using freed slots
// with longer and shorter paths, links whose lists fill repeatedly, removals in the middle of a list, clear()
// between rounds): after every batch the live flows' rates equal, to the bit, the previous one-heap algorithm on
// a fresh load of the same flows.
TEST(FairShareRandom, PooledListsUnderChurnEqualAFreshLoadToTheBit) {
  FairShareSolver s;
  size_t compared = 0;
  for (uint64_t round = 0; round < 40; ++round) {
    std::mt19937_64 rng(9000 + round);
    s.clear();
    Instance base;
    const size_t links = 1 + below(rng, 40);
    for (size_t l = 0; l < links; ++l) {
      base.capacity.push_back(static_cast<double>(1 + below(rng, 3)) * 10 * kGB);
      s.add_link(BytesPerSecond(base.capacity.back()));
    }
    struct Live {
      FlowId id;
      std::vector<LinkId> path;
      double cap;
    };
    std::vector<Live> live;
    const auto add_random = [&] {
      std::vector<LinkId> path;
      const uint64_t hops = below(rng, 10);
      for (uint64_t h = 0; h < hops; ++h) path.push_back(static_cast<LinkId>(below(rng, links)));
      const double cap = path.empty() || below(rng, 6) == 0 ? static_cast<double>(1 + below(rng, 4)) * 2.5 * kGB
                                                            : std::numeric_limits<double>::infinity();
      live.push_back({s.add_flow(path, BytesPerSecond(cap)), std::move(path), cap});
    };
    for (uint64_t f = below(rng, 30); f > 0; --f) add_random();
    for (int batch = 0; batch < 12; ++batch) {
      for (uint64_t k = below(rng, 8); k > 0 && !live.empty(); --k) {
        const size_t victim = below(rng, live.size());
        s.remove_flow(live[victim].id);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      for (uint64_t k = below(rng, 10); k > 0; --k) add_random();
      s.solve();
      Instance now;
      now.capacity = base.capacity;
      for (const Live& f : live) {
        now.paths.push_back(f.path);
        now.cap.push_back(f.cap);
      }
      const std::vector<double> expected = one_heap_rates(now);
      for (size_t f = 0; f < live.size(); ++f) {
        ASSERT_EQ(std::bit_cast<uint64_t>(s.rate(live[f].id).value()), std::bit_cast<uint64_t>(expected[f]))
            << "round " << round << ", batch " << batch << ", flow " << f;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 3000u);
}

}  // namespace
