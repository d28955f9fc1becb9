// The serving engine's own containers (issue 31), against the standard ones they replaced: the prefix cache's
// open-addressing BlockMap against std::unordered_map, the fleet's LoadIndex against a std::set of (outstanding, id).
// Random operation sequences; a deliberately weak hash makes BlockMap's probe runs long and wrap around its array.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <unordered_map>
#include <utility>

#include "sim/serving/block_map.hpp"
#include "sim/serving/load_index.hpp"
#include "sim/serving/prefix_cache.hpp"

namespace clustersim::sim::serving_engine {
namespace {

/// Seven buckets for many names, the array's last seven at every capacity: long probe runs that wrap around its
/// end, and deletions that shift entries back across it.
struct WeakHash {
  size_t operator()(const BlockName& b) const noexcept { return ~static_cast<size_t>(b.index % 7); }
};

struct StdHash {
  size_t operator()(const BlockName& b) const noexcept { return BlockNameHash{}(b); }
};

template <typename Hash>
void matches_unordered_map(uint64_t seed) {
  BlockMap<BlockName, int64_t, Hash> map;
  std::unordered_map<BlockName, int64_t, StdHash> reference;
  std::mt19937_64 rng(seed);
  for (int step = 0; step < 20000; ++step) {
    const BlockName name{static_cast<int64_t>(rng() % 3) - 1, static_cast<int64_t>(rng() % 5),
                         static_cast<int64_t>(rng() % 40)};
    switch (rng() % 4) {
      case 0:
      case 1: {  // insert (or find) and set
        auto [value, inserted] = map.try_emplace(name);
        EXPECT_EQ(inserted, !reference.contains(name));
        if (inserted) {
          EXPECT_EQ(*value, 0);
        }
        *value = step;
        reference[name] = step;
        break;
      }
      case 2:
        map.erase(name);
        reference.erase(name);
        break;
      default: {
        const int64_t* value = map.find(name);
        const auto it = reference.find(name);
        ASSERT_EQ(value != nullptr, it != reference.end());
        if (value != nullptr) {
          EXPECT_EQ(*value, it->second);
        }
      }
    }
    ASSERT_EQ(map.size(), reference.size());
    if (step % 5000 == 4999) {  // every stored name still found with its value
      for (const auto& [key, v] : reference) ASSERT_EQ(map.at(key), v);
    }
    if (step == 12000) {
      map.clear();
      reference.clear();
    }
  }
}

TEST(BlockMap, MatchesUnorderedMapUnderCollisions) { matches_unordered_map<WeakHash>(1); }
TEST(BlockMap, MatchesUnorderedMapWithItsOwnHash) { matches_unordered_map<BlockNameHash>(2); }

TEST(BlockMap, AtThrowsForAMissingName) {
  BlockMap<BlockName, int64_t, BlockNameHash> map;
  EXPECT_THROW((void)map.at(BlockName{0, 1, 2}), std::out_of_range);
  map.try_emplace(BlockName{0, 1, 2});
  EXPECT_THROW((void)map.at(BlockName{0, 1, 3}), std::out_of_range);
  EXPECT_FALSE(map.contains(BlockName{0, 1, 3}));
  EXPECT_TRUE(map.contains(BlockName{0, 1, 2}));
}

TEST(LoadIndex, MatchesASetOfOutstandingAndId) {
  LoadIndex index;
  index.reset(5);
  EXPECT_EQ(index.least(), -1);
  std::set<std::pair<int64_t, int64_t>> reference;
  std::unordered_map<int64_t, int64_t> key;  // slot -> outstanding, for the indexed slots
  std::mt19937_64 rng(3);
  for (int step = 0; step < 20000; ++step) {
    const auto slot = static_cast<int64_t>(rng() % 13);  // beyond the 5 reset for: the index grows
    if (key.contains(slot)) reference.erase({key[slot], slot});
    if (rng() % 3 == 0) {
      index.remove(slot);
      key.erase(slot);
    } else {
      const auto outstanding = static_cast<int64_t>(rng() % 6);
      index.set(slot, outstanding);
      key[slot] = outstanding;
      reference.insert({outstanding, slot});
    }
    ASSERT_EQ(index.least(), reference.empty() ? -1 : reference.begin()->second) << "step " << step;
  }
}

}  // namespace
}  // namespace clustersim::sim::serving_engine
