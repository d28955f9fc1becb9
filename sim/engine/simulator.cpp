#include "sim/engine/simulator.hpp"

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/splitmix64.hpp"

namespace clustersim::sim {

namespace {

using clustersim::splitmix64;

constexpr std::uint32_t slot_of(EventId id) { return static_cast<std::uint32_t>(id & 0xffffffffULL); }
constexpr std::uint32_t generation_of(EventId id) { return static_cast<std::uint32_t>(id >> 32); }
constexpr EventId make_id(std::uint32_t generation, std::uint32_t slot) {
  return (static_cast<EventId>(generation) << 32) | slot;
}

std::string ns_text(Time t) { return std::to_string(t.ns()) + " ns"; }

}  // namespace

Simulator::Simulator() : Simulator(std::make_unique<BinaryHeapEventQueue>()) {}

Simulator::Simulator(std::unique_ptr<EventQueue> queue) : queue_(std::move(queue)) {
  if (!queue_) throw std::invalid_argument("Simulator: null event queue");
  if (!queue_->empty()) throw std::invalid_argument("Simulator: the event queue must start empty");
}

Simulator::~Simulator() = default;

std::uint32_t Simulator::acquire_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  if (slots_.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("Simulator: more than 2^32 - 1 events scheduled at once");
  }
  slots_.emplace_back();
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

void Simulator::release_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.state = SlotState::kFree;
  if (++s.generation == 0) s.generation = 1;  // ids are never 0
  free_slots_.push_back(slot);
}

EventId Simulator::schedule(Time at, std::function<void()> fn, Priority priority) {
  const EventId id = push_event(at, next_sequence_, std::move(fn), priority, "Simulator::schedule");
  ++next_sequence_;
  return id;
}

std::uint64_t Simulator::reserve_sequences(std::uint64_t count) {
  const std::uint64_t first = next_sequence_;
  next_sequence_ += count;
  return first;
}

EventId Simulator::schedule_reserved(Time at, std::uint64_t sequence, std::function<void()> fn, Priority priority) {
  if (sequence >= next_sequence_) {
    throw std::logic_error("Simulator::schedule_reserved: sequence " + std::to_string(sequence) +
                           " was not reserved");
  }
  return push_event(at, sequence, std::move(fn), priority, "Simulator::schedule_reserved");
}

EventId Simulator::push_event(Time at, std::uint64_t sequence, std::function<void()> fn, Priority priority,
                              const char* who) {
  if (at < now_) {
    throw std::logic_error(std::string(who) + ": time " + ns_text(at) + " is before now (" + ns_text(now_) + ")");
  }
  if (!fn) throw std::invalid_argument(std::string(who) + ": empty callback");
  const std::uint32_t slot = acquire_slot();
  Slot& s = slots_[slot];
  const EventId id = make_id(s.generation, slot);
  try {
    queue_->push(ScheduledEvent{EventKey{at, priority, sequence}, id, std::move(fn)});
  } catch (...) {
    release_slot(slot);
    throw;
  }
  s.state = SlotState::kPending;  // `s` is still valid: slots_ is not touched by push
  ++pending_;
  return id;
}

EventId Simulator::schedule_in(Time delay, std::function<void()> fn, Priority priority) {
  if (delay < Time::zero()) {
    throw std::logic_error("Simulator::schedule_in: negative delay " + ns_text(delay));
  }
  return schedule(now_ + delay, std::move(fn), priority);
}

bool Simulator::cancel(EventId id) {
  const std::uint32_t slot = slot_of(id);
  if (slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (s.generation != generation_of(id) || s.state != SlotState::kPending) return false;
  s.state = SlotState::kCancelled;
  --pending_;
  return true;
}

void Simulator::mix_into_fingerprint(std::uint64_t value) { fingerprint_ = splitmix64(fingerprint_ ^ value); }

void Simulator::run() { run_loop(Time::max()); }

void Simulator::run_until(Time limit) {
  if (limit < now_) {
    throw std::logic_error("Simulator::run_until: limit " + ns_text(limit) + " is before now (" +
                           ns_text(now_) + ")");
  }
  if (!run_loop(limit)) now_ = limit;
}

bool Simulator::run_loop(Time limit) {
  if (running_) throw std::logic_error("Simulator: run()/run_until() called from inside an event");
  struct RunningGuard {
    bool& flag;
    explicit RunningGuard(bool& f) : flag(f) { flag = true; }
    ~RunningGuard() { flag = false; }
    RunningGuard(const RunningGuard&) = delete;
    RunningGuard& operator=(const RunningGuard&) = delete;
  } guard(running_);
  stop_requested_ = false;

  while (!queue_->empty()) {
    if (queue_->peek_key().time > limit) break;
    ScheduledEvent event = queue_->pop_min();
    const std::uint32_t slot = slot_of(event.id);
    const bool cancelled = slots_[slot].state == SlotState::kCancelled;
    release_slot(slot);  // before the call: cancel(own id) from inside the event returns false
    if (cancelled) continue;

    now_ = event.key.time;
    --pending_;
    ++executed_;
    fingerprint_ = splitmix64(fingerprint_ ^ static_cast<std::uint64_t>(event.key.time.ns()));
    fingerprint_ = splitmix64(fingerprint_ ^ static_cast<std::uint32_t>(event.key.priority));
    fingerprint_ = splitmix64(fingerprint_ ^ event.key.sequence);
    event.fn();
    if (stop_requested_) return true;
  }
  return false;
}

}  // namespace clustersim::sim
