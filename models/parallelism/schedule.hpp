// Pipeline schedules: the order in which one pipeline stage runs the forward and backward passes of its
// microbatches. Pure data; the step executor (sim/step) runs these orders as events, so the pipeline bubble
// emerges from dependencies rather than from a formula.
//
//   GPipe (Huang et al. 2019): all m forwards, then all m backwards.
//   1F1B (PipeDream-Flush; Narayanan et al. SC'21 Sec. 2.2.1): stage i of p runs min(p-i-1, m) warm-up
//   forwards, then alternates one forward and one backward, then drains the remaining backwards. Same bubble
//   as GPipe, (p-1)/m of the ideal time, but at most p microbatches in flight.
//   Interleaved 1F1B (SC'21 Sec. 2.2.2): each rank holds v model chunks (virtual stages c*p + rank); rank r
//   warms up with (p-r-1)*2 + (v-1)*p chunk-forwards, then alternates; the k-th forward runs chunk
//   (k mod pv) / p on microbatch (k / pv) * p + k mod p, the k-th backward the chunk v-1 minus that (Megatron-
//   LM's schedules.py). Bubble (p-1)/(v m); needs m divisible by p.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace clustersim::models {

enum class PipelineSchedule { gpipe, one_f_one_b };

std::string_view to_string(PipelineSchedule s);
std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name);

enum class PassKind { forward, backward };

/// One pass of one microbatch through one stage's layers. 12 bytes (32-bit indices): a long pipeline's orders
/// hold 2 m v entries per stage, and the executor streams them twice per step (the step and its free-transfer
/// reference); stage_order refuses counts past 32 bits.
struct ScheduledPass {
  PassKind kind = PassKind::forward;
  int32_t microbatch = 0;  ///< 0-based
  int32_t chunk = 0;       ///< model chunk on this rank (0 without interleaving)
  friend bool operator==(const ScheduledPass&, const ScheduledPass&) = default;
};
static_assert(sizeof(ScheduledPass) == 12, "ScheduledPass: 12 bytes (see its comment)");

/// The order of passes on `stage` (0-based, < stages) for `microbatches` microbatches and `virtual_stages`
/// model chunks per rank: 2 * microbatches * virtual_stages entries. Throws std::invalid_argument on stage
/// out of range, non-positive counts, virtual_stages > 1 with GPipe, or an interleaved schedule whose
/// microbatches are not divisible by stages.
std::vector<ScheduledPass> stage_order(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                       int64_t microbatches, int64_t virtual_stages = 1);

/// Most microbatches whose activations a stage holds at once under `schedule` (GPipe: m; 1F1B: min(p-i, m)).
int64_t max_in_flight(PipelineSchedule schedule, int64_t stage, int64_t stages, int64_t microbatches);

}  // namespace clustersim::models
