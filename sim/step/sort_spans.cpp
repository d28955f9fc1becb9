#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "sim/step/pipeline_executor.hpp"

namespace clustersim::sim {

void sort_spans(std::vector<TraceSpan>& spans, size_t stages) {
  const auto by_stage_then_start = [](const TraceSpan& a, const TraceSpan& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start < b.start;
  };
  std::vector<size_t> begin(stages + 1, 0);  // counts, then each stage's first index
  for (const TraceSpan& span : spans) {
    if (span.stage < 0 || static_cast<size_t>(span.stage) >= stages) {
      std::stable_sort(spans.begin(), spans.end(), by_stage_then_start);
      return;
    }
    ++begin[static_cast<size_t>(span.stage) + 1];
  }
  for (size_t k = 0; k < stages; ++k) begin[k + 1] += begin[k];
  // Distributed by stage, each stage's spans in recording order (stable), then each stage sorted by start, stably
  // (most stages record in start order already: then the run is left as it is).
  std::vector<TraceSpan> sorted(spans.size());
  std::vector<size_t> next(begin.begin(), begin.end() - 1);
  for (TraceSpan& span : spans) sorted[next[static_cast<size_t>(span.stage)]++] = std::move(span);
  const auto by_start = [](const TraceSpan& a, const TraceSpan& b) { return a.start < b.start; };
  for (size_t k = 0; k < stages; ++k) {
    const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(begin[k]);
    const auto last = sorted.begin() + static_cast<std::ptrdiff_t>(begin[k + 1]);
    if (!std::is_sorted(first, last, by_start)) std::stable_sort(first, last, by_start);
  }
  spans = std::move(sorted);
}

}  // namespace clustersim::sim
