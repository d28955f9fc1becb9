#include "sim/step/order_check.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

namespace {

using models::PassKind;
using models::ScheduledPass;

[[noreturn]] void throw_out_of_range(const ScheduledPass& pass, size_t stage) {
  throw std::invalid_argument("pipeline executor: stage " + std::to_string(stage) + " names microbatch " +
                              std::to_string(pass.microbatch) + " chunk " + std::to_string(pass.chunk) +
                              " out of range");
}

}  // namespace

void check_stage_order(const std::vector<ScheduledPass>& order, size_t chunks, size_t microbatches, size_t stage,
                       std::vector<size_t>& last_backward, std::vector<uint8_t>& seen) {
  // Per (chunk, microbatch): bit 0 its forward seen, bit 1 its backward. A pass seen again only marks the order
  // invalid (`twice`): the faults found as they come (out of range, backward before forward) are reported first,
  // as when every pass was counted and the counts were checked after the sweep.
  constexpr uint8_t kForward = 1, kBackward = 2;
  const size_t slots = microbatches * chunks;
  seen.assign(slots, 0);
  uint8_t* const state = seen.data();
  uint8_t twice = 0;
  last_backward.assign(chunks, order.size());
  const ScheduledPass* const passes = order.data();
  const size_t n = order.size();
  for (size_t j = 0; j < n; ++j) {
    const ScheduledPass pass = passes[j];
    // Sign-extended to 64 bits and read unsigned, a negative index is >= 2^63, past any count (an int64_t): one
    // comparison per index covers both ends.
    const auto microbatch = static_cast<uint64_t>(static_cast<int64_t>(pass.microbatch));
    const auto chunk = static_cast<uint64_t>(static_cast<int64_t>(pass.chunk));
    if (microbatch >= microbatches || chunk >= chunks) throw_out_of_range(pass, stage);
    uint8_t& s = state[chunk * microbatches + microbatch];
    if (pass.kind == PassKind::forward) {
      twice |= s & kForward;
      s |= kForward;
    } else {
      if ((s & kForward) == 0) {
        throw std::invalid_argument("pipeline executor: stage " + std::to_string(stage) +
                                    " runs backward of microbatch " + std::to_string(pass.microbatch) +
                                    " before its forward");
      }
      twice |= s & kBackward;
      s |= kBackward;
      last_backward[chunk] = j;
    }
  }
  // Without a pass seen twice, every pass set one bit of its own: all 2 x slots bits are set (each forward and
  // backward exactly once) exactly when there are 2 x slots passes.
  if (twice != 0 || n != 2 * slots) {
    throw std::invalid_argument("pipeline executor: stage " + std::to_string(stage) +
                                " must run each microbatch's forward and backward exactly once per chunk");
  }
}

}  // namespace clustersim::sim
