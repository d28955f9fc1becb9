#include "sim/serving/prefix_cache.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim::sim::serving_engine {

size_t BlockNameHash::operator()(const BlockName& b) const noexcept {
  // splitmix64's finaliser over the three fields (Steele et al., "Fast splittable pseudorandom number
  // generators", OOPSLA 2014): only the bucket depends on it, never a result.
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  const uint64_t h = mix(static_cast<uint64_t>(b.prefix) ^ mix(static_cast<uint64_t>(b.stream) ^
                                                              mix(static_cast<uint64_t>(b.index))));
  return static_cast<size_t>(h);
}

BlockName block_name(const ServingRequest& q, int64_t index, int64_t block, int64_t block_size) {
  if (q.prefix_id >= 0 && (block + 1) * block_size <= q.prefix_tokens) return {q.prefix_id, -1, block};
  return {q.prefix_id, content_stream(q, index), block};
}

bool PrefixCache::acquire(const BlockName& name) {
  Entry& e = blocks_.at(name);
  const bool was_free = e.refs == 0;
  if (was_free) {
    lru_.erase(e.in_lru);
    --free_;
  }
  ++e.refs;
  return was_free;
}

int64_t PrefixCache::fill(const BlockName& name) {
  auto [it, inserted] = blocks_.try_emplace(name);
  if (inserted) {
    it->second.refs = 1;
    return 0;
  }
  // Already cached: share it, free the own block.
  return acquire(name) ? 0 : -1;
}

bool PrefixCache::release(const BlockName& name) {
  Entry& e = blocks_.at(name);
  if (--e.refs > 0) return false;
  e.in_lru = lru_.insert(lru_.end(), Freed{name, 0});
  ++free_;
  return true;
}

void PrefixCache::free_named(const BlockName& name) {
  auto [it, inserted] = blocks_.try_emplace(name);
  if (!inserted) {
    free_unnamed(1);
    return;
  }
  it->second.in_lru = lru_.insert(lru_.end(), Freed{name, 0});
  ++free_;
}

void PrefixCache::free_unnamed(int64_t blocks) {
  if (blocks <= 0) return;
  if (!lru_.empty() && lru_.back().unnamed > 0) {
    lru_.back().unnamed += blocks;  // the same run
  } else {
    lru_.push_back(Freed{{}, blocks});
  }
  free_ += blocks;
}

void PrefixCache::make_room(int64_t blocks, int64_t empty) {
  for (int64_t n = blocks - empty; n > 0;) {
    Freed& front = lru_.front();
    if (front.unnamed > 0) {
      const int64_t take = std::min(front.unnamed, n);
      front.unnamed -= take;
      free_ -= take;
      n -= take;
      if (front.unnamed == 0) lru_.pop_front();
      continue;
    }
    blocks_.erase(front.name);
    lru_.pop_front();
    --free_;
    --n;
    ++evicted_;
  }
}

void PrefixCache::clear() {
  blocks_.clear();
  lru_.clear();
  free_ = 0;
}

}  // namespace clustersim::sim::serving_engine

namespace clustersim::sim {

PrefixCacheStats prefix_cache_stats(const ServingResult& r) {
  PrefixCacheStats s;
  for (const RequestOutcome& o : r.requests) {
    if (o.rejected || std::isnan(o.first_token_s)) continue;
    s.cached_tokens += o.cached_tokens;
    s.prompt_tokens += o.prompt_tokens;
  }
  return s;
}

}  // namespace clustersim::sim
