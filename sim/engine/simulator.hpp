// The discrete-event simulator: a clock, a future-event set and a loop (ns-3 simulator.h).
//
// It knows nothing of GPUs, jobs or networks: callers schedule callbacks at engine Times and the simulator
// runs them in EventKey order (time, then priority - lower first, then insertion order). Time only moves
// forward; now() is the time of the event being run (or of the last one, or the run_until limit).
//
// Contract
//   * Units: engine Time (integer ns, sim/engine/time.hpp). Convert model Seconds with Time::from_seconds.
//   * Errors: scheduling before now() -> std::logic_error; an empty callback -> std::invalid_argument;
//     now() + delay beyond Time::max() -> std::overflow_error; run_until(limit < now()) -> std::logic_error;
//     calling run()/run_until() from inside an event -> std::logic_error. A std::invalid_argument is also
//     thrown by the constructor for a null queue. An exception thrown by a callback propagates out of
//     run()/run_until(); that event counts as executed and the simulator stays usable (run() may be called
//     again to continue).
//   * Cancellation is lazy: cancel() marks the event and the loop discards it when it reaches the front of
//     the queue, so it still occupies queue memory until its time; it never runs and is not counted by
//     pending(), events_executed() or fingerprint().
//   * Event ids are opaque: (generation << 32) | slot, slots being reused. An id never equals 0, and
//     cancel() of an id whose event has run or been cancelled returns false - unless the same slot has
//     since been reused 2^32 times, which no realistic run approaches.
//   * Complexity (n = events in the queue, cancelled ones included): schedule O(log n) amortized, cancel
//     O(1), each executed or discarded event O(log n) (one pop_min), now/pending/events_executed/
//     fingerprint O(1). Memory: the queue plus 8 bytes per concurrently scheduled event (slot table).
//   * Not thread-safe; one simulator per thread. No global state: any number of simulators may coexist.
//
// Determinism fingerprint (OMNeT++ cfingerprint.h): a 64-bit hash chained over every executed event, in
// execution order, starting from kFingerprintSeed:
//     h = mix(h ^ time_ns);  h = mix(h ^ (uint32)priority);  h = mix(h ^ sequence);
// where mix is the SplitMix64 finalizer and sequence is the event's insertion counter (0 for the first
// event scheduled on this simulator). Two runs of the same program and inputs give the same value; any
// difference in which events run, when, or in what order changes it (up to 64-bit collisions). The payload
// is not hashed: callbacks that swap their work but keep their keys leave the fingerprint unchanged; models
// that want to catch that fold their own identity in with mix_into_fingerprint(kind or entity id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/engine/event_queue.hpp"
#include "sim/engine/time.hpp"

namespace clustersim::sim {

class Simulator {
 public:
  /// Fingerprint of a simulator that has executed no event.
  static constexpr std::uint64_t kFingerprintSeed = 0xcbf29ce484222325ULL;

  /// A simulator at time zero with a BinaryHeapEventQueue.
  Simulator();
  /// A simulator at time zero using `queue` (must be non-null and empty, else std::invalid_argument).
  explicit Simulator(std::unique_ptr<EventQueue> queue);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;
  Simulator(Simulator&&) = delete;
  Simulator& operator=(Simulator&&) = delete;

  /// Current simulated time.
  [[nodiscard]] Time now() const { return now_; }

  /// Schedules `fn` to run at absolute time `at` (>= now(); equal to now() runs after the current event and
  /// any earlier-inserted events at the same time and priority). Returns the id for cancel().
  EventId schedule(Time at, std::function<void()> fn, Priority priority = 0);
  /// Schedules `fn` to run `delay` after now(): schedule(now() + delay, ...). A negative delay throws
  /// std::logic_error.
  EventId schedule_in(Time delay, std::function<void()> fn, Priority priority = 0);

  /// Reserves `count` consecutive insertion sequences (the third part of EventKey) for events scheduled later with
  /// schedule_reserved; returns the first. An event scheduled with a reserved sequence runs where it would have run
  /// had it been scheduled when the sequence was reserved (same key, same fingerprint), provided it is in the queue
  /// before any event of a larger key runs: a long list of arrivals can then be scheduled one at a time, each by
  /// the one before, keeping the queue small (issue 31: 360,000 arrivals of a serving run). O(1).
  std::uint64_t reserve_sequences(std::uint64_t count);
  /// schedule(at, fn, priority) under `sequence`, one that reserve_sequences returned (each used once: the
  /// caller's contract, else two events share a key). Errors as schedule's, and std::logic_error for a sequence
  /// not reserved yet.
  EventId schedule_reserved(Time at, std::uint64_t sequence, std::function<void()> fn, Priority priority = 0);

  /// Cancels a pending event. True if it was pending and will now never run; false if it has already run,
  /// is running, was already cancelled, or the id is unknown. O(1).
  bool cancel(EventId id);

  /// Runs events in order until the queue is empty or stop() is called. now() ends at the last executed
  /// event's time.
  void run();
  /// Runs every event with time <= limit (including ones scheduled meanwhile), then sets now() to limit -
  /// unless stop() ended the run early, in which case now() stays at the last executed event's time.
  /// limit < now() throws std::logic_error.
  void run_until(Time limit);
  /// Ends the current run()/run_until() after the event that is executing returns. Each run()/run_until()
  /// starts with the request cleared, so stop() called outside a run has no effect.
  void stop() { stop_requested_ = true; }

  /// Events executed so far (cancelled ones excluded).
  [[nodiscard]] std::uint64_t events_executed() const { return executed_; }
  /// Events scheduled and neither executed nor cancelled.
  [[nodiscard]] std::size_t pending() const { return pending_; }
  /// Determinism fingerprint over the executed events (see the header comment).
  [[nodiscard]] std::uint64_t fingerprint() const { return fingerprint_; }
  /// Folds a caller-chosen value (an event kind, an entity id) into the fingerprint: h = mix(h ^ value).
  /// Meant to be called from inside events; deterministic like everything else. O(1).
  void mix_into_fingerprint(std::uint64_t value);

 private:
  enum class SlotState : std::uint8_t { kFree, kPending, kCancelled };
  struct Slot {
    std::uint32_t generation = 1;
    SlotState state = SlotState::kFree;
  };

  /// Executes events with time <= limit. Returns true if stop() ended it.
  bool run_loop(Time limit);
  std::uint32_t acquire_slot();
  /// Pushes an event of key (at, priority, sequence) after schedule's checks.
  EventId push_event(Time at, std::uint64_t sequence, std::function<void()> fn, Priority priority, const char* who);
  void release_slot(std::uint32_t slot);

  std::unique_ptr<EventQueue> queue_;
  Time now_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t executed_ = 0;
  std::size_t pending_ = 0;
  std::uint64_t fingerprint_ = kFingerprintSeed;
  bool stop_requested_ = false;
  bool running_ = false;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace clustersim::sim
