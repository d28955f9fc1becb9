#include "sim/step/order_check.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

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

static_assert(std::has_unique_object_representations_v<ScheduledPass>,
              "CheckedOrders compares orders byte for byte: ScheduledPass must have no padding");

const size_t* CheckedOrders::last_backward(const std::vector<ScheduledPass>& order, size_t chunks,
                                           size_t microbatches, size_t stage, std::vector<uint8_t>& seen) {
  // The hash: the counts and the first 64 passes (the stages of one schedule differ in their warm-up, early).
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  const auto mix = [&h](uint64_t x) { h = (h ^ x) * 0x100000001b3ULL; };
  mix(chunks);
  mix(microbatches);
  mix(order.size());
  const size_t sampled = order.size() < 64 ? order.size() : 64;
  for (size_t j = 0; j < sampled; ++j) {
    const ScheduledPass& p = order[j];
    mix((static_cast<uint64_t>(static_cast<uint32_t>(p.microbatch)) << 32) ^
        (static_cast<uint64_t>(static_cast<uint32_t>(p.chunk)) << 8) ^ static_cast<uint64_t>(p.kind));
  }
  const auto [first, last] = entries_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Entry& e = *it->second;
    // ScheduledPass is three 4-byte fields, no padding (its static_assert): equal bytes, equal passes.
    if (e.chunks == chunks && e.microbatches == microbatches && e.order.size() == order.size() &&
        std::memcmp(e.order.data(), order.data(), order.size() * sizeof(ScheduledPass)) == 0) {
      return e.last_backward.data();
    }
  }
  check_stage_order(order, chunks, microbatches, stage, scratch_, seen);  // throws when invalid
  if (passes_ + order.size() > kMaxPasses) {
    entries_.clear();
    held_ = 0;
    passes_ = 0;
  }
  auto entry = std::make_unique<Entry>(Entry{chunks, microbatches, order, scratch_});
  const size_t* const result = entry->last_backward.data();
  entries_.emplace(h, std::move(entry));
  ++held_;
  passes_ += order.size();
  return result;
}

}  // namespace clustersim::sim
