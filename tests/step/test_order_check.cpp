// The executor's check of a stage's pass order (sim/step/order_check.hpp), which also finds each chunk's last
// backward: on every schedule shape it accepts the order and finds the last backwards a plain scan finds; it
// rejects, with the first fault's message, every order that breaks the rule (a backward before its forward, a
// pass twice, a pass missing, an index out of range either way, under the 32-bit and the general range check).
// CheckedOrders (the memo of checked orders) gives check_stage_order's answers on every shape, asked in any
// order and again, and never remembers or confuses an order that differs from a checked one in one pass.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/parallelism/schedule.hpp"
#include "sim/step/order_check.hpp"

namespace clustersim {
namespace {

using models::PipelineSchedule;
using models::ScheduledPass;

/// The error message of check_stage_order, or "" if it accepts `order`.
std::string check(const std::vector<ScheduledPass>& order, size_t chunks, size_t microbatches,
                  std::vector<size_t>& last_backward) {
  std::vector<uint8_t> seen(3, 7);  // stale scratch: must not matter
  try {
    sim::check_stage_order(order, chunks, microbatches, 5, last_backward, seen);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(OrderCheck, AcceptsEveryScheduleAndFindsTheLastBackwards) {
  int checked = 0;
  for (const PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
    for (const int64_t p : {1, 2, 3, 4, 8}) {
      for (const int64_t v : {1, 2, 3}) {
        for (const int64_t m : {1, 2, 4, 5, 8, 16, 24}) {
          if (v > 1 && (schedule == PipelineSchedule::gpipe || m % p != 0)) continue;
          for (int64_t k = 0; k < p; ++k) {
            SCOPED_TRACE(std::string(models::to_string(schedule)) + " p " + std::to_string(p) + " v " +
                         std::to_string(v) + " m " + std::to_string(m) + " stage " + std::to_string(k));
            const std::vector<ScheduledPass> order = models::stage_order(schedule, k, p, m, v);
            std::vector<size_t> want(static_cast<size_t>(v), order.size());
            for (size_t j = 0; j < order.size(); ++j) {
              if (order[j].kind == models::PassKind::backward) want[static_cast<size_t>(order[j].chunk)] = j;
            }
            std::vector<size_t> got(9, 42);  // stale: replaced
            EXPECT_EQ(check(order, static_cast<size_t>(v), static_cast<size_t>(m), got), "");
            EXPECT_EQ(got, want);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(OrderCheck, RejectsEveryBrokenOrderWithItsFirstFault) {
  const std::vector<ScheduledPass> valid = models::stage_order(PipelineSchedule::one_f_one_b, 1, 4, 8, 2);
  std::vector<size_t> last_backward;
  ASSERT_EQ(check(valid, 2, 8, last_backward), "");
  const std::string before = "pipeline executor: stage 5 runs backward of microbatch ";
  const std::string once = "pipeline executor: stage 5 must run each microbatch's forward and backward exactly once";
  int swaps = 0;
  for (size_t j = 0; j < valid.size(); ++j) {  // each backward swapped with its forward
    if (valid[j].kind != models::PassKind::backward) continue;
    size_t i = 0;
    while (valid[i].kind != models::PassKind::forward || valid[i].microbatch != valid[j].microbatch ||
           valid[i].chunk != valid[j].chunk) {
      ++i;
    }
    std::vector<ScheduledPass> swapped = valid;
    std::swap(swapped[i], swapped[j]);
    EXPECT_EQ(check(swapped, 2, 8, last_backward),
              before + std::to_string(valid[j].microbatch) + " before its forward");
    ++swaps;
  }
  EXPECT_GT(swaps, 0);
  std::vector<ScheduledPass> twice = valid;
  twice.back() = twice.front();  // a forward twice, a backward missing
  EXPECT_EQ(check(twice, 2, 8, last_backward).substr(0, once.size()), once);
  std::vector<ScheduledPass> backward_twice = valid;
  backward_twice.back() = backward_twice[backward_twice.size() - 2];  // as many passes, one backward twice
  ASSERT_EQ(backward_twice.back().kind, models::PassKind::backward);
  EXPECT_EQ(check(backward_twice, 2, 8, last_backward).substr(0, once.size()), once);
  // A pass twice is reported only after the sweep: a fault found later in the order comes first.
  std::vector<ScheduledPass> twice_then_range = twice;
  twice_then_range[twice_then_range.size() - 2].chunk = 2;
  EXPECT_EQ(check(twice_then_range, 2, 8, last_backward),
            "pipeline executor: stage 5 names microbatch " +
                std::to_string(twice_then_range[twice_then_range.size() - 2].microbatch) + " chunk 2 out of range");
  std::vector<ScheduledPass> twice_then_early = valid;
  twice_then_early[1] = twice_then_early[0];  // the second forward repeats the first: its own is missing
  EXPECT_EQ(check(twice_then_early, 2, 8, last_backward),
            before + std::to_string(valid[1].microbatch) + " before its forward");
  std::vector<ScheduledPass> missing(valid.begin(), valid.end() - 1);
  EXPECT_EQ(check(missing, 2, 8, last_backward).substr(0, once.size()), once);
  // Out of range, each index each way (the most negative too), alone or with the other.
  for (const size_t microbatches : {size_t{8}}) {
    for (const auto& [microbatch, chunk] :
         std::vector<std::pair<int32_t, int32_t>>{{-1, 0}, {-2147483647 - 1, 0}, {0, -1}, {0, -2147483647 - 1}, {0, 2}, {0, 7}, {8, 0}, {9, -1}}) {
      std::vector<ScheduledPass> broken = valid;
      broken[3].microbatch = microbatch;
      broken[3].chunk = chunk;
      EXPECT_EQ(check(broken, 2, microbatches, last_backward),
                "pipeline executor: stage 5 names microbatch " + std::to_string(microbatch) + " chunk " +
                    std::to_string(chunk) + " out of range");
    }
  }
}

/// Every valid order of the shapes above, with its counts.
struct Shape {
  std::vector<ScheduledPass> order;
  size_t chunks = 0, microbatches = 0;
};
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
    for (const int64_t p : {1, 2, 3, 4, 8, 16}) {
      for (const int64_t v : {1, 2, 3}) {
        for (const int64_t m : {1, 2, 4, 5, 8, 16, 24, 48, 96}) {
          if (v > 1 && (schedule == PipelineSchedule::gpipe || m % p != 0)) continue;
          for (int64_t k = 0; k < p; ++k) {
            out.push_back({models::stage_order(schedule, k, p, m, v), static_cast<size_t>(v), static_cast<size_t>(m)});
          }
        }
      }
    }
  }
  return out;
}

TEST(CheckedOrders, AnswersAsTheCheckOnEveryShapeInAnyOrder) {
  const std::vector<Shape> all = shapes();
  ASSERT_GT(all.size(), 500u);
  sim::CheckedOrders memo;
  std::vector<uint8_t> seen;
  for (int round = 0; round < 3; ++round) {  // forwards, backwards (all remembered), forwards again
    for (size_t n = 0; n < all.size(); ++n) {
      const Shape& s = all[round == 1 ? all.size() - 1 - n : n];
      std::vector<size_t> want;
      ASSERT_EQ(check(s.order, s.chunks, s.microbatches, want), "");
      const size_t* got = memo.last_backward(s.order, s.chunks, s.microbatches, 5, seen);
      ASSERT_EQ(std::vector<size_t>(got, got + s.chunks), want) << "shape " << n << ", round " << round;
    }
  }
  // Every distinct order once (GPipe's do not depend on the stage): the later rounds were look-ups.
  std::set<std::tuple<size_t, size_t, std::vector<int64_t>>> distinct;
  for (const Shape& s : all) {
    std::vector<int64_t> passes;
    for (const ScheduledPass& p : s.order) {
      passes.insert(passes.end(), {static_cast<int64_t>(p.kind), p.microbatch, p.chunk});
    }
    distinct.emplace(s.chunks, s.microbatches, std::move(passes));
  }
  EXPECT_EQ(memo.size(), distinct.size());
}

TEST(CheckedOrders, NeverTakesAnotherOrderForARememberedOne) {
  sim::CheckedOrders memo;
  std::vector<uint8_t> seen;
  const std::vector<ScheduledPass> valid = models::stage_order(PipelineSchedule::one_f_one_b, 1, 4, 8, 2);
  (void)memo.last_backward(valid, 2, 8, 5, seen);
  // The same passes with other counts: checked again (and rejected: chunk 1 out of range with one chunk).
  EXPECT_THROW((void)memo.last_backward(valid, 1, 8, 5, seen), std::invalid_argument);
  EXPECT_THROW((void)memo.last_backward(valid, 2, 4, 5, seen), std::invalid_argument);
  // One pass changed anywhere (past the hashed first passes too): the check's own verdict, never the memo's.
  for (size_t j = 0; j < valid.size(); ++j) {
    std::vector<ScheduledPass> broken = valid;
    broken[j].microbatch = broken[j].microbatch == 0 ? 1 : 0;
    std::vector<size_t> want;
    const std::string error = check(broken, 2, 8, want);
    std::string got_error;
    try {
      (void)memo.last_backward(broken, 2, 8, 5, seen);
    } catch (const std::invalid_argument& e) {
      got_error = e.what();
    }
    EXPECT_EQ(got_error, error) << "pass " << j;
    EXPECT_FALSE(error.empty()) << "pass " << j;
  }
  // Two valid orders alike in their first 64 passes, with other last backwards: each its own answer.
  const std::vector<ScheduledPass> a = models::stage_order(PipelineSchedule::gpipe, 0, 2, 80, 1);
  std::vector<ScheduledPass> b = a;
  std::swap(b[b.size() - 1], b[b.size() - 2]);  // the last two backwards swapped
  std::vector<size_t> want_a, want_b;
  ASSERT_EQ(check(a, 1, 80, want_a), "");
  ASSERT_EQ(check(b, 1, 80, want_b), "");
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(*memo.last_backward(a, 1, 80, 5, seen), want_a.front());
    EXPECT_EQ(*memo.last_backward(b, 1, 80, 5, seen), want_b.front());
  }
  EXPECT_EQ(memo.size(), 3u);  // valid, a, b; no broken order remembered
}

}  // namespace
}  // namespace clustersim
