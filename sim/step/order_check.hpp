// The pipeline executor's check of a stage's pass order (sim/step/pipeline_executor.cpp), which also finds each
// chunk's last backward pass (where its overlapped gradient reduction is triggered) in the same sweep of the
// order. Internal to sim/step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/parallelism/schedule.hpp"

namespace clustersim::sim {

/// Checks `order`, the pass order of stage `stage` of a program of `chunks` model chunks per rank and
/// `microbatches` microbatches: every (chunk, microbatch) runs its forward exactly once, then its backward
/// exactly once, and no pass names a chunk or microbatch out of range. Throws std::invalid_argument otherwise,
/// naming `stage` and the first fault in order. Sets `last_backward` to `chunks` entries: per chunk, the index in
/// `order` of its (only) backward pass that comes last. `seen`: scratch (chunks x microbatches entries, any
/// contents on entry), so that one buffer serves every stage.
void check_stage_order(const std::vector<models::ScheduledPass>& order, size_t chunks, size_t microbatches,
                       size_t stage, std::vector<size_t>& last_backward, std::vector<uint8_t>& seen);

}  // namespace clustersim::sim
