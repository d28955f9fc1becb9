#include "models/parallelism/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::models {

std::string_view to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
  }
  return "?";
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name) {
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    if (to_string(s) == name) return s;
  }
  return std::nullopt;
}

namespace {

void check(int64_t stage, int64_t stages, int64_t microbatches) {
  if (stages < 1 || microbatches < 1 || stage < 0 || stage >= stages) {
    throw std::invalid_argument("pipeline schedule: need 0 <= stage < stages and microbatches >= 1");
  }
}

}  // namespace

std::vector<ScheduledPass> stage_order(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                       int64_t microbatches) {
  check(stage, stages, microbatches);
  std::vector<ScheduledPass> order;
  order.reserve(static_cast<size_t>(2 * microbatches));
  if (schedule == PipelineSchedule::gpipe) {
    for (int64_t i = 0; i < microbatches; ++i) order.push_back({PassKind::forward, i});
    for (int64_t i = 0; i < microbatches; ++i) order.push_back({PassKind::backward, i});
    return order;
  }
  const int64_t warmup = std::min(stages - stage - 1, microbatches);
  int64_t next_forward = 0;
  int64_t next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back({PassKind::forward, next_forward});
  while (next_forward < microbatches) {
    order.push_back({PassKind::forward, next_forward++});
    order.push_back({PassKind::backward, next_backward++});
  }
  while (next_backward < microbatches) order.push_back({PassKind::backward, next_backward++});
  return order;
}

int64_t max_in_flight(PipelineSchedule schedule, int64_t stage, int64_t stages, int64_t microbatches) {
  check(stage, stages, microbatches);
  if (schedule == PipelineSchedule::gpipe) return microbatches;
  return std::min(stages - stage, microbatches);
}

}  // namespace clustersim::models
