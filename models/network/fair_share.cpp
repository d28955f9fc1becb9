#include "models/network/fair_share.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace clustersim::models {

namespace {

constexpr int kSlotBits = 32;
constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;

FlowId make_id(uint32_t slot, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << kSlotBits) | slot;
}

// Takes `room` elements at the end of a pool whose first `used` are in use, and returns the region's offset. The
// pool grows (at least doubling, value-initialised) only when it lacks room; offsets are 32-bit.
template <class T>
uint32_t take_region(std::vector<T>& pool, size_t& used, size_t room, const char* what) {
  const size_t first = used;
  if (first + room > std::numeric_limits<uint32_t>::max()) throw std::length_error(what);
  if (pool.size() < first + room) pool.resize(std::max(first + room, 2 * pool.size()));
  used = first + room;
  return static_cast<uint32_t>(first);
}

void check_capacity(units::BytesPerSecond capacity) {
  const double c = capacity.value();
  if (!(c > 0.0) || !std::isfinite(c)) {
    throw std::invalid_argument("link capacity must be finite and > 0 B/s, got " + std::to_string(c));
  }
}

}  // namespace

LinkId FairShareSolver::add_link(units::BytesPerSecond capacity) {
  check_capacity(capacity);
  if (links_.size() >= std::numeric_limits<LinkId>::max()) throw std::length_error("too many links");
  const auto id = static_cast<LinkId>(links_.size());
  links_.emplace_back();
  links_.back().capacity = capacity.value();
  return id;
}

void FairShareSolver::check_link(LinkId link) const {
  if (link >= links_.size()) throw std::out_of_range("unknown link id " + std::to_string(link));
}

void FairShareSolver::set_capacity(LinkId link, units::BytesPerSecond capacity) {
  check_link(link);
  check_capacity(capacity);
  links_[link].capacity = capacity.value();
  mark_dirty(link);
}

void FairShareSolver::reserve_flows(LinkId link, size_t flows) {
  check_link(link);
  if (links_[link].room < flows) relocate(links_[link], flows);
}

void FairShareSolver::reserve(size_t links, size_t flows, size_t crossings) {
  links_.reserve(links_.size() + links);
  flows_.reserve(flows_.size() + flows);
  if (entries_.size() < entries_used_ + crossings) entries_.resize(entries_used_ + crossings);
  if (hops_.size() < hops_used_ + crossings) hops_.resize(hops_used_ + crossings);
}

void FairShareSolver::relocate(Link& link, size_t room) {
  const uint32_t first = take_region(entries_, entries_used_, room, "too many link entries");
  std::copy_n(entries_.begin() + link.first, link.size, entries_.begin() + first);
  link.first = first;
  link.room = static_cast<uint32_t>(room);
}

units::BytesPerSecond FairShareSolver::capacity(LinkId link) const {
  check_link(link);
  return units::BytesPerSecond(links_[link].capacity);
}

void FairShareSolver::mark_dirty(LinkId link) {
  Link& l = links_[link];
  if (!l.dirty) {
    l.dirty = true;
    dirty_links_.push_back(link);
  }
}

FlowId FairShareSolver::add_flow(std::span<const LinkId> path, units::BytesPerSecond cap) {
  const double c = cap.value();
  if (!(c > 0.0)) throw std::invalid_argument("flow cap must be > 0 B/s, got " + std::to_string(c));
  if (path.empty() && std::isinf(c)) {
    throw std::invalid_argument("a flow with an empty path needs a finite cap");
  }
  for (LinkId link : path) check_link(link);

  uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (flows_.size() >= kSlotMask) throw std::length_error("too many flows");
    slot = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[slot];
  f.live = true;
  f.cap = c;
  f.rate = 0.0;
  if (f.room < path.size()) {  // a new region at the end of hops_
    const size_t room = std::max(path.size(), 2 * size_t{f.room});
    f.first = take_region(hops_, hops_used_, room, "too many hops");
    f.room = static_cast<uint32_t>(room);
  }
  f.size = static_cast<uint32_t>(path.size());
  Hop* const hops = hops_.data() + f.first;
  for (size_t h = 0; h < path.size(); ++h) {
    Link& l = links_[path[h]];
    if (l.size == l.room) relocate(l, std::max<size_t>(4, 2 * size_t{l.room}));
    hops[h] = {path[h], l.size};
    entries_[l.first + l.size++] = {slot, static_cast<uint32_t>(h)};
    mark_dirty(path[h]);
  }
  if (path.empty()) dirty_pathless_.push_back(slot);
  ++live_flows_;
  return make_id(slot, f.generation);
}

uint32_t FairShareSolver::slot_of(FlowId flow) const {
  const auto slot = static_cast<uint32_t>(flow & kSlotMask);
  const auto generation = static_cast<uint32_t>(flow >> kSlotBits);
  if (slot >= flows_.size() || !flows_[slot].live || flows_[slot].generation != generation) {
    throw std::out_of_range("unknown or removed flow id " + std::to_string(flow));
  }
  return slot;
}

bool FairShareSolver::contains(FlowId flow) const {
  const auto slot = static_cast<uint32_t>(flow & kSlotMask);
  const auto generation = static_cast<uint32_t>(flow >> kSlotBits);
  return slot < flows_.size() && flows_[slot].live && flows_[slot].generation == generation;
}

void FairShareSolver::remove_flow(FlowId flow) {
  const uint32_t slot = slot_of(flow);
  Flow& f = flows_[slot];
  for (const Hop& hop : hops_of(f)) {
    Link& l = links_[hop.link];
    const Entry moved = entries_[l.first + l.size - 1];
    entries_[l.first + hop.pos] = moved;
    hops_[flows_[moved.flow].first + moved.hop].pos = hop.pos;  // no-op when the removed entry was the last
    --l.size;
    mark_dirty(hop.link);
  }
  f.live = false;
  f.rate = 0.0;
  ++f.generation;
  free_slots_.push_back(slot);
  --live_flows_;
}

units::BytesPerSecond FairShareSolver::rate(FlowId flow) const {
  return units::BytesPerSecond(flows_[slot_of(flow)].rate);
}

void FairShareSolver::clear() {
  // Only the lists' storage is kept (emptied); every other field is reset, so what follows sees a fresh solver.
  entries_used_ = 0;
  hops_used_ = 0;
  links_.clear();
  flows_.clear();
  free_slots_.clear();
  live_flows_ = 0;
  dirty_links_.clear();
  dirty_pathless_.clear();
  stats_ = {};
}

void FairShareSolver::invalidate_all() {
  for (LinkId l = 0; l < links_.size(); ++l) mark_dirty(l);
  for (uint32_t s = 0; s < flows_.size(); ++s) {
    if (flows_[s].live && flows_[s].size == 0) dirty_pathless_.push_back(s);
  }
}

void FairShareSolver::solve() {
  stats_ = {};
  if (!dirty()) return;
  if (++epoch_ == 0) {  // wrapped: clear the stamps so that no stale one matches
    for (Link& l : links_) l.stamp = 0;
    for (Flow& f : flows_) f.stamp = 0;
    epoch_ = 1;
  }
  collect_components();
  fill();
  // Flows with an empty path form their own components: their rate is their cap.
  for (uint32_t slot : dirty_pathless_) {
    Flow& f = flows_[slot];
    if (f.live && f.size == 0 && f.stamp != epoch_) {
      f.stamp = epoch_;
      f.rate = f.cap;
      ++stats_.flows;
      ++stats_.components;
    }
  }
  dirty_pathless_.clear();
}

// Breadth-first search from every dirty link over link -> flows -> links; comp_links_ / comp_flows_ receive
// the members of all dirty components, in discovery order (a function of the call sequence only).
void FairShareSolver::collect_components() {
  comp_links_.clear();
  comp_flows_.clear();
  for (LinkId seed : dirty_links_) {
    links_[seed].dirty = false;
    if (links_[seed].stamp == epoch_) continue;
    ++stats_.components;
    links_[seed].stamp = epoch_;
    size_t head = comp_links_.size();
    comp_links_.push_back(seed);
    while (head < comp_links_.size()) {
      for (const Entry& e : entries_of(links_[comp_links_[head++]])) {
        Flow& f = flows_[e.flow];
        if (f.stamp == epoch_) continue;
        f.stamp = epoch_;
        comp_flows_.push_back(e.flow);
        for (const Hop& hop : hops_of(f)) {
          Link& next = links_[hop.link];
          if (next.stamp != epoch_) {
            next.stamp = epoch_;
            comp_links_.push_back(hop.link);
          }
        }
      }
    }
  }
  dirty_links_.clear();
  stats_.links = comp_links_.size();
  stats_.flows = comp_flows_.size();
}

namespace {

// Heap order on (share, link id): total, so the order of the rounds is deterministic.
bool before(double share_a, LinkId a, double share_b, LinkId b) {
  return share_a < share_b || (share_a == share_b && a < b);
}

}  // namespace

void FairShareSolver::sift_down(uint32_t pos) {
  const HeapItem item = heap_[pos];
  const auto n = static_cast<uint32_t>(heap_.size());
  while (true) {
    uint32_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && before(heap_[child + 1].share, heap_[child + 1].link, heap_[child].share,
                                heap_[child].link)) {
      ++child;
    }
    if (!before(heap_[child].share, heap_[child].link, item.share, item.link)) break;
    heap_[pos] = heap_[child];
    pos = child;
  }
  heap_[pos] = item;
}

void FairShareSolver::push_heap(HeapItem item) {
  auto pos = static_cast<uint32_t>(heap_.size());
  heap_.push_back(item);
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (!before(item.share, item.link, heap_[parent].share, heap_[parent].link)) break;
    heap_[pos] = heap_[parent];
    pos = parent;
  }
  heap_[pos] = item;
}

void FairShareSolver::pop_top() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
}

void FairShareSolver::freeze(uint32_t slot, double rate) {
  Flow& f = flows_[slot];
  f.frozen = true;
  f.rate = rate;
  for (const Hop& hop : hops_of(f)) {
    Link& l = links_[hop.link];
    l.remaining = std::max(0.0, l.remaining - rate);  // rounding must not make a share negative
    --l.unfrozen;
  }
}

// Sorts run_, given in id order, on (share, id): a stable counting sort on the share when the run has few
// distinct shares (links of a few capacities with a few flows each: a collective's component), else a
// comparison sort. Either gives the one order of the total order (share, id).
void FairShareSolver::sort_run() {
  constexpr size_t kMaxKeys = 16;
  double keys[kMaxKeys];
  size_t count[kMaxKeys];
  size_t distinct = 0, last = 0;
  for (const HeapItem& item : run_) {
    if (distinct > 0 && keys[last] == item.share) {
      ++count[last];
      continue;
    }
    size_t k = 0;
    while (k < distinct && keys[k] != item.share) ++k;
    if (k == distinct) {
      if (distinct == kMaxKeys) {
        std::sort(run_.begin(), run_.end(),
                  [](const HeapItem& a, const HeapItem& b) { return before(a.share, a.link, b.share, b.link); });
        return;
      }
      keys[k] = item.share;
      count[k] = 0;
      ++distinct;
    }
    ++count[k];
    last = k;
  }
  // Rank the distinct shares, then place each item after the smaller shares' items, in run (id) order.
  size_t rank[kMaxKeys], start[kMaxKeys];
  for (size_t k = 0; k < distinct; ++k) {
    rank[k] = 0;
    for (size_t j = 0; j < distinct; ++j) rank[k] += keys[j] < keys[k] ? 1 : 0;
  }
  size_t by_rank[kMaxKeys];
  for (size_t k = 0; k < distinct; ++k) by_rank[rank[k]] = k;
  for (size_t r = 0, at = 0; r < distinct; ++r) {
    start[by_rank[r]] = at;
    at += count[by_rank[r]];
  }
  sorted_.resize(run_.size());
  last = 0;
  for (const HeapItem& item : run_) {
    if (keys[last] != item.share) {
      last = 0;
      while (keys[last] != item.share) ++last;
    }
    sorted_[start[last]++] = item;
  }
  run_.swap(sorted_);
}

// Progressive filling with lazy keys. Freezing flows at the current minimum share never lowers another
// link's share (remaining - k s >= s_l (n - k) when s <= s_l), so a link's key is a lower bound of its share:
// when a link reaches the top, its share is recomputed; if it grew, the link is re-keyed and the next one
// examined, otherwise it is the bottleneck. A link is re-keyed only when it reaches the top, not every time one
// of its flows freezes.
//
// The links wait in two places: the run (run_[head ..], every link's first key, sorted once) and the heap
// (heap_, the links re-keyed since). The top is the smaller of the run's head and the heap's top under the
// total order (share, id). Exact: the items of run and heap together are, step by step, the items of one heap
// holding every link (the previous algorithm, tests/network/test_fair_share.cpp keeps it): both start with the
// same (first key, id) items; a pop removes the minimum from either; a re-key replaces the minimum's key in
// either (here: out of the run, into the heap). The minimum of a set under a total order is one item, so the
// same link is examined at every step, with the same floating-point operations in the same order. Most links
// are never re-keyed (their flows freeze elsewhere, or they are a bottleneck at their first key), and leave the
// run in O(1) instead of a sift-down through a heap of every link.
void FairShareSolver::fill() {
  run_.clear();
  heap_.clear();
  caps_.clear();
  // The run in id order first (every link's id when the solve takes them all, else the component's sorted).
  const auto first_key = [this](LinkId id) {
    Link& l = links_[id];
    l.remaining = l.capacity;
    l.unfrozen = l.size;
    if (l.unfrozen > 0) run_.push_back({l.remaining / l.unfrozen, id});
  };
  if (comp_links_.size() == links_.size()) {  // a permutation of every id
    for (LinkId id = 0; id < links_.size(); ++id) first_key(id);
  } else {
    std::sort(comp_links_.begin(), comp_links_.end());
    for (LinkId id : comp_links_) first_key(id);
  }
  sort_run();
  for (uint32_t slot : comp_flows_) {
    Flow& f = flows_[slot];
    f.frozen = false;
    if (std::isfinite(f.cap)) caps_.push_back({f.cap, slot});
  }
  std::sort(caps_.begin(), caps_.end(), [](const CapItem& a, const CapItem& b) {
    return a.cap < b.cap || (a.cap == b.cap && a.slot < b.slot);
  });

  size_t head = 0;
  size_t next_cap = 0;
  while (head < run_.size() || !heap_.empty() || next_cap < caps_.size()) {
    double share = std::numeric_limits<double>::infinity();
    bool from_run = false;
    if (head < run_.size() || !heap_.empty()) {
      from_run = heap_.empty() || (head < run_.size() && before(run_[head].share, run_[head].link,
                                                                heap_.front().share, heap_.front().link));
      const HeapItem top = from_run ? run_[head] : heap_.front();
      const Link& l = links_[top.link];
      if (l.unfrozen == 0) {  // every flow on it froze elsewhere
        if (from_run) {
          ++head;
        } else {
          pop_top();
        }
        continue;
      }
      share = l.remaining / l.unfrozen;
      if (share > top.share) {  // stale key: re-key and look again
        if (from_run) {
          ++head;
          push_heap({share, top.link});
        } else {
          heap_.front().share = share;
          sift_down(0);
        }
        continue;
      }
    }
    // The smallest cap wins only when strictly below the smallest link share (ties: the link first).
    if (next_cap < caps_.size() && caps_[next_cap].cap < share) {
      const CapItem c = caps_[next_cap++];
      if (!flows_[c.slot].frozen) freeze(c.slot, c.cap);
      continue;
    }
    const LinkId id = from_run ? run_[head].link : heap_.front().link;
    for (const Entry& e : entries_of(links_[id])) {
      if (!flows_[e.flow].frozen) freeze(e.flow, share);
    }
    if (from_run) {
      ++head;
    } else {
      pop_top();
    }
  }
}

}  // namespace clustersim::models
