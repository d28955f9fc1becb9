#include "models/parallelism/schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

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

/// A pass of microbatch `i` through chunk `c` (both checked by stage_order to fit ScheduledPass's 32 bits).
ScheduledPass pass(PassKind kind, int64_t i, int64_t c) {
  return ScheduledPass{kind, static_cast<int32_t>(i), static_cast<int32_t>(c)};
}

}  // namespace

namespace {

/// Megatron-LM's interleaved 1F1B order (schedules.py, forward_backward_pipelining_with_interleaving).
std::vector<ScheduledPass> interleaved_order(int64_t stage, int64_t p, int64_t m, int64_t v) {
  if (m % p != 0) {
    throw std::invalid_argument("interleaved 1F1B needs microbatches (" + std::to_string(m) +
                                ") divisible by pipeline stages (" + std::to_string(p) + ")");
  }
  const int64_t total = m * v;
  const int64_t warmup = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  // The k-th forward is microbatch (k / (p v)) p + k % p through chunk (k % (p v)) / p, the k-th backward the
  // same microbatch through chunk v - 1 - (k % (p v)) / p: walked with counters (group, chunk, position in
  // the chunk) instead of three divisions per pass, the same passes in the same order.
  struct Cursor {
    int32_t base = 0;   ///< first microbatch of the group: (k / (p v)) p
    int32_t chunk = 0;  ///< (k % (p v)) / p
    int32_t at = 0;     ///< k % p
  };
  const auto p32 = static_cast<int32_t>(p), v32 = static_cast<int32_t>(v);
  const auto advance = [&](Cursor& c) {
    if (++c.at < p32) return;
    c.at = 0;
    if (++c.chunk < v32) return;
    c.chunk = 0;
    c.base += p32;
  };
  Cursor f, b;
  std::vector<ScheduledPass> order(static_cast<size_t>(2 * total));
  ScheduledPass* out = order.data();
  const auto forward = [&] {
    *out++ = ScheduledPass{PassKind::forward, f.base + f.at, f.chunk};
    advance(f);
  };
  const auto backward = [&] {
    *out++ = ScheduledPass{PassKind::backward, b.base + b.at, v32 - 1 - b.chunk};
    advance(b);
  };
  for (int64_t k = 0; k < warmup; ++k) forward();
  for (int64_t k = 0; k < total - warmup; ++k) {
    forward();
    backward();
  }
  for (int64_t k = total - warmup; k < total; ++k) backward();
  return order;
}

}  // namespace

std::vector<ScheduledPass> stage_order(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                       int64_t microbatches, int64_t virtual_stages) {
  check(stage, stages, microbatches);
  if (virtual_stages < 1) throw std::invalid_argument("pipeline schedule: virtual_stages must be >= 1");
  if (microbatches > std::numeric_limits<int32_t>::max() || virtual_stages > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument("pipeline schedule: microbatches and virtual_stages must fit 32 bits");
  }
  if (virtual_stages > 1) {
    if (schedule == PipelineSchedule::gpipe) {
      throw std::invalid_argument("pipeline schedule: GPipe has no interleaved form (virtual_stages must be 1)");
    }
    return interleaved_order(stage, stages, microbatches, virtual_stages);
  }
  std::vector<ScheduledPass> order;
  order.reserve(static_cast<size_t>(2 * microbatches));
  if (schedule == PipelineSchedule::gpipe) {
    for (int64_t i = 0; i < microbatches; ++i) order.push_back(pass(PassKind::forward, i, 0));
    for (int64_t i = 0; i < microbatches; ++i) order.push_back(pass(PassKind::backward, i, 0));
    return order;
  }
  const int64_t warmup = std::min(stages - stage - 1, microbatches);
  int64_t next_forward = 0;
  int64_t next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back(pass(PassKind::forward, next_forward, 0));
  while (next_forward < microbatches) {
    order.push_back(pass(PassKind::forward, next_forward++, 0));
    order.push_back(pass(PassKind::backward, next_backward++, 0));
  }
  while (next_backward < microbatches) order.push_back(pass(PassKind::backward, next_backward++, 0));
  return order;
}

int64_t max_in_flight(PipelineSchedule schedule, int64_t stage, int64_t stages, int64_t microbatches) {
  check(stage, stages, microbatches);
  if (schedule == PipelineSchedule::gpipe) return microbatches;
  return std::min(stages - stage, microbatches);
}

}  // namespace clustersim::models
