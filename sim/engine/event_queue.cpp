#include "sim/engine/event_queue.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

namespace clustersim::sim {

namespace {
// Same order as EventKey's defaulted <=>, spelled out for the hot loop.
template <class A, class B>
inline bool key_less(const A& a, const B& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.sequence < b.sequence;
}
}  // namespace

void BinaryHeapEventQueue::reserve(std::size_t n) {
  heap_.reserve(n);
  payloads_.reserve(n);
}

void BinaryHeapEventQueue::push(ScheduledEvent event) {
  std::uint32_t payload = 0;
  if (!free_payloads_.empty()) {
    payload = free_payloads_.back();
    payloads_[payload] = Payload{event.id, std::move(event.fn)};
    free_payloads_.pop_back();
  } else {
    if (payloads_.size() >= std::numeric_limits<std::uint32_t>::max()) {
      throw std::length_error("BinaryHeapEventQueue: more than 2^32 - 1 pending events");
    }
    payloads_.push_back(Payload{event.id, std::move(event.fn)});
    payload = static_cast<std::uint32_t>(payloads_.size() - 1);
  }
  const Node node{event.key.time, event.key.priority, payload, event.key.sequence};

  // Sift a hole up from the new last slot, then drop the node into it.
  std::size_t hole = heap_.size();
  heap_.emplace_back();
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 2;
    if (!key_less(node, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = node;
}

ScheduledEvent BinaryHeapEventQueue::pop_min() {
  if (heap_.empty()) throw std::logic_error("BinaryHeapEventQueue::pop_min on an empty queue");
  const Node top = heap_.front();
  Payload& p = payloads_[top.payload];
  ScheduledEvent out{EventKey{top.time, top.priority, top.sequence}, p.id, std::move(p.fn)};
  p.fn = nullptr;  // a moved-from std::function is valid but unspecified; make it empty
  free_payloads_.push_back(top.payload);

  const Node last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return out;
  // Floyd's bottom-up deletion: walk the hole from the root to a leaf along the smaller child (one
  // comparison per level), then sift the former last node up from there. The last node is usually
  // large, so it rarely climbs: about log2(n) + O(1) comparisons instead of 2 log2(n).
  std::size_t hole = 0;
  std::size_t child = 1;
  while (child < n) {
    if (child + 1 < n && key_less(heap_[child + 1], heap_[child])) ++child;
    heap_[hole] = heap_[child];
    hole = child;
    child = 2 * hole + 1;
  }
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 2;
    if (!key_less(last, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = last;
  return out;
}

EventKey BinaryHeapEventQueue::peek_key() const {
  if (heap_.empty()) throw std::logic_error("BinaryHeapEventQueue::peek_key on an empty queue");
  const Node& top = heap_.front();
  return EventKey{top.time, top.priority, top.sequence};
}

}  // namespace clustersim::sim
