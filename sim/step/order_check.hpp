// The pipeline executor's check of a stage's pass order (sim/step/pipeline_executor.cpp), which also finds each
// chunk's last backward pass (where its overlapped gradient reduction is triggered) in the same sweep of the
// order. Internal to sim/step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
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

/// The valid orders already checked, with their check_stage_order result: a layout search builds the same
/// orders again and again (the DeepSeek-V3-like search: 111 distinct (schedule, stages, microbatches, chunks)
/// over 6,302 points), and the check is a pure function of (order, chunks, microbatches) when it passes. A
/// look-up hashes the counts and the first passes, then compares the whole order byte for byte, so a hit is an
/// order equal to a checked one, pass for pass: exact. Invalid orders throw and are never remembered. One per
/// thread (not thread-safe); bounded (cleared past kMaxPasses passes held).
class CheckedOrders {
 public:
  /// Passes held before the memo is cleared (12 bytes each).
  static constexpr size_t kMaxPasses = size_t{1} << 20;

  /// check_stage_order(order, chunks, microbatches, stage, ...)'s `last_backward` (`chunks` entries): from the
  /// memo when an equal order was checked with the same counts, otherwise checked now (same errors) and
  /// remembered. The pointer stays valid until the next call. `seen`: check_stage_order's scratch.
  const size_t* last_backward(const std::vector<models::ScheduledPass>& order, size_t chunks, size_t microbatches,
                              size_t stage, std::vector<uint8_t>& seen);
  /// Orders held now.
  [[nodiscard]] size_t size() const { return held_; }

 private:
  struct Entry {
    size_t chunks = 0, microbatches = 0;
    std::vector<models::ScheduledPass> order;
    std::vector<size_t> last_backward;
  };
  std::unordered_multimap<uint64_t, std::unique_ptr<Entry>> entries_;
  size_t held_ = 0;    ///< entries
  size_t passes_ = 0;  ///< passes held
  std::vector<size_t> scratch_;
};

}  // namespace clustersim::sim
