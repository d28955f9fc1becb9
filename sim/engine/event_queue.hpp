// The future-event set of the discrete-event engine, behind an interface (ns-3 scheduler.h).
//
// Events are totally ordered by EventKey = (time, priority, sequence):
//   * time      - when the event fires (engine Time, integer ns);
//   * priority  - at equal time, the LOWER value runs first (default 0; negative values run earlier);
//   * sequence  - the insertion counter assigned by the Simulator, unique per event: at equal time and
//                 priority events run in insertion (FIFO) order.
// Since no two events share a sequence, the order is total and a run is bit-reproducible whatever the queue
// implementation (a heap is not a stable sort; the sequence makes stability unnecessary).
//
// Queues hold events and order them; they know nothing of cancellation (the Simulator cancels lazily by
// discarding cancelled events when they reach the front) and never call the payload.
//
// Complexity (n = size()):
//   EventQueue (contract every implementation documents)   push / pop_min / peek_key / empty / size
//   BinaryHeapEventQueue (std::vector-backed binary heap)  O(log n) / O(log n) / O(1) / O(1) / O(1)
//     amortized for push (vector growth); memory: one vector slot per pending event, never shrunk.
// Measured costs: docs/performance.md ("Event queue"), benchmark tests/bench/bench_event_queue.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/engine/time.hpp"

namespace clustersim::sim {

/// Opaque handle of a scheduled event, returned by Simulator::schedule and accepted by Simulator::cancel.
/// Never 0 for a real event.
using EventId = std::uint64_t;
/// Tie-breaker at equal time: lower value runs first.
using Priority = std::int32_t;

/// The total order of events: (time, priority, sequence), lexicographic.
struct EventKey {
  Time time;
  Priority priority = 0;
  std::uint64_t sequence = 0;  ///< insertion counter; unique per event

  friend constexpr auto operator<=>(const EventKey&, const EventKey&) = default;
  friend constexpr bool operator==(const EventKey&, const EventKey&) = default;
};

/// An event as stored in a queue: its key, its id and the callback to run.
struct ScheduledEvent {
  EventKey key;
  EventId id = 0;
  std::function<void()> fn;
};

/// Abstract future-event set. Implementations must order by EventKey exactly; behaviour with two equal keys
/// is unspecified (the Simulator never produces them).
class EventQueue {
 public:
  virtual ~EventQueue() = default;

  /// Inserts an event.
  virtual void push(ScheduledEvent event) = 0;
  /// Removes and returns the event with the smallest key. Throws std::logic_error if empty.
  virtual ScheduledEvent pop_min() = 0;
  /// The smallest key, without removing it. Throws std::logic_error if empty.
  [[nodiscard]] virtual EventKey peek_key() const = 0;
  [[nodiscard]] virtual bool empty() const = 0;
  /// Number of events held (the Simulator's cancelled-but-not-yet-discarded events included).
  [[nodiscard]] virtual std::size_t size() const = 0;

 protected:
  EventQueue() = default;
  EventQueue(const EventQueue&) = default;
  EventQueue& operator=(const EventQueue&) = default;
  EventQueue(EventQueue&&) = default;
  EventQueue& operator=(EventQueue&&) = default;
};

/// Binary min-heap in a std::vector. push and pop_min are O(log n) (push amortized), peek O(1).
///
/// Layout: the heap array holds only 24-byte nodes (time, priority, sequence and a 32-bit index into a
/// payload table); the 40-byte payloads (id + std::function) sit in a separate table with a free list and
/// are touched once per push and once per pop. Sifting therefore moves 24 bytes per level and a cache line
/// holds 2.7 nodes, which matters once the heap outgrows the caches (see docs/performance.md). Sifting moves
/// a hole rather than swapping; pop_min uses Floyd's bottom-up variant (about log2 n comparisons).
/// Memory: 24 + 40 bytes per pending event plus 4 per free payload slot; nothing is shrunk.
class BinaryHeapEventQueue final : public EventQueue {
 public:
  BinaryHeapEventQueue() = default;

  void push(ScheduledEvent event) override;
  ScheduledEvent pop_min() override;
  [[nodiscard]] EventKey peek_key() const override;
  [[nodiscard]] bool empty() const override { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const override { return heap_.size(); }

  /// Pre-allocates room for `n` events (optional; avoids regrowth in long runs).
  void reserve(std::size_t n);

 private:
  struct Node {
    Time time;
    Priority priority = 0;
    std::uint32_t payload = 0;  ///< index into payloads_
    std::uint64_t sequence = 0;
  };
  struct Payload {
    EventId id = 0;
    std::function<void()> fn;
  };

  std::vector<Node> heap_;
  std::vector<Payload> payloads_;
  std::vector<std::uint32_t> free_payloads_;
};

}  // namespace clustersim::sim
