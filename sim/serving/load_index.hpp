// The fleet's load index (sim/serving/fleet.hpp): which serving replica has the fewest outstanding requests. Only the
// engine's own units include this header.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace clustersim::sim::serving_engine {

/// Replica slots keyed by (outstanding requests, slot id), smallest first: a tournament tree over the slots (each
/// inner node the smaller key of its two children), so that an update costs O(log slots) with no allocation and the
/// smallest key is read at the root in O(1). It replaced a std::set of the same keys (issue 31: a node allocated
/// and freed per request arriving and leaving); the order, and so every choice, is the set's: the fewest
/// outstanding, the lowest id among equals. Slots not in the index hold no key.
class LoadIndex {
 public:
  /// Empties the index and makes room for slots 0 .. slots - 1 (more are added as set() meets them).
  void reset(int64_t slots) {
    leaves_ = 1;
    while (leaves_ < slots) leaves_ *= 2;
    tree_.assign(2 * static_cast<size_t>(leaves_), kNone);
  }
  /// Slot `id` (>= 0) is indexed with `outstanding` requests (replacing its key, if any).
  void set(int64_t id, int64_t outstanding) { put(id, outstanding, id); }
  /// Slot `id` leaves the index (nothing when it is not there).
  void remove(int64_t id) {
    if (id < leaves_) put(id, kNone.first, kNone.second);
  }
  /// The slot with the fewest outstanding requests, the lowest id among equals; -1 when the index is empty.
  [[nodiscard]] int64_t least() const { return tree_.empty() || tree_[1] == kNone ? -1 : tree_[1].second; }

 private:
  using Key = std::pair<int64_t, int64_t>;  ///< (outstanding, id)
  static constexpr Key kNone{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};

  void put(int64_t id, Key key) { put(id, key.first, key.second); }
  /// Field by field: a 16-byte copy of a key that had been spilled in two halves stalled on store forwarding.
  void put(int64_t id, int64_t outstanding, int64_t key_id) {
    if (id >= leaves_) [[unlikely]] grow(id + 1);
    size_t node = static_cast<size_t>(leaves_ + id);
    tree_[node].first = outstanding;
    tree_[node].second = key_id;
    for (node /= 2; node >= 1; node /= 2) {
      const Key& a = tree_[2 * node];
      const Key& b = tree_[2 * node + 1];
      const bool right = b < a;
      tree_[node].first = right ? b.first : a.first;
      tree_[node].second = right ? b.second : a.second;
    }
  }
  /// Room for `slots` slots, the keys kept.
  void grow(int64_t slots) {
    std::vector<Key> keys(tree_.begin() + leaves_, tree_.end());
    reset(slots);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != kNone) put(static_cast<int64_t>(i), keys[i]);
    }
  }

  int64_t leaves_ = 0;     ///< slots the tree has room for (a power of two)
  std::vector<Key> tree_;  ///< node 1 the root, node n's children 2n and 2n + 1, slot i at leaves_ + i
};

}  // namespace clustersim::sim::serving_engine
