// The prefix cache's map from a block's name to its entry (sim/serving/prefix_cache.hpp): open addressing with
// linear probing in one flat array. Only prefix_cache.hpp includes this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace clustersim::sim::serving_engine {

/// A hash map from Key to Value in one array of slots (linear probing, at most half full, deletion by backward
/// shift: no tombstones). It replaced std::unordered_map in the prefix cache (issue 31: about 40 % of a run with
/// prefix caching went to its node allocations and pointer chasing). It is never iterated, so no result depends on
/// its layout. Key needs `==`, a member `index` that is >= 0 in every stored key (-1 marks an empty slot) and a hash
/// from Hash; Value must be default-constructible. A pointer it returns is valid until the next insertion or erase.
template <typename Key, typename Value, typename Hash>
class BlockMap {
 public:
  /// The value stored under `key`, or nullptr. O(1) expected.
  [[nodiscard]] Value* find(const Key& key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key.index < 0) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  [[nodiscard]] const Value* find(const Key& key) const { return const_cast<BlockMap*>(this)->find(key); }
  [[nodiscard]] bool contains(const Key& key) const { return find(key) != nullptr; }
  /// The value under `key`, which must be stored (else std::out_of_range, as std::unordered_map::at).
  [[nodiscard]] Value& at(const Key& key) {
    Value* v = find(key);
    if (v == nullptr) throw std::out_of_range("BlockMap::at: no such block");
    return *v;
  }
  /// The value under `key` and true when it was inserted now (default-constructed), false when it was there.
  std::pair<Value*, bool> try_emplace(const Key& key) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 64 : 2 * slots_.size());
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key.index < 0) break;
      if (s.key == key) return {&s.value, false};
    }
    slots_[i].key = key;
    slots_[i].value = Value{};
    ++size_;
    return {&slots_[i].value, true};
  }
  /// Removes `key` (nothing when it is not stored).
  void erase(const Key& key) {
    if (slots_.empty()) return;
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].key.index < 0) return;
      if (slots_[i].key == key) break;
    }
    // Backward shift: each later entry of the probe run whose home is not cyclically in (i, j] moves into the hole.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      Slot& s = slots_[j];
      if (s.key.index < 0) break;
      const size_t k = home(s.key);
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (stays) continue;
      slots_[i] = std::move(s);
      i = j;
    }
    slots_[i] = Slot{};
    --size_;
  }
  /// Removes every key (the capacity stays).
  void clear() {
    for (Slot& s : slots_) s = Slot{};
    size_ = 0;
  }
  [[nodiscard]] size_t size() const { return size_; }

 private:
  struct Slot {
    Key key{};  ///< index -1: empty
    Value value{};
    Slot() { key.index = -1; }
  };
  [[nodiscard]] size_t home(const Key& key) const { return Hash{}(key) & mask_; }
  void rehash(size_t slots) {
    std::vector<Slot> old(slots);
    old.swap(slots_);
    mask_ = slots - 1;
    size_ = 0;
    for (Slot& s : old) {
      if (s.key.index < 0) continue;
      size_t i = home(s.key);
      while (slots_[i].key.index >= 0) i = (i + 1) & mask_;
      slots_[i] = std::move(s);
      ++size_;
    }
  }

  std::vector<Slot> slots_;  ///< a power of two of them, or none
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace clustersim::sim::serving_engine
