#include "sim/serving/prefix_cache.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim::sim::serving_engine {

size_t BlockNameHash::operator()(const BlockName& b) const noexcept {
  // The three fields spread by odd multipliers and summed, then splitmix64's finaliser (Steele et al., "Fast
  // splittable pseudorandom number generators", OOPSLA 2014) once: only the bucket depends on it, never a result.
  uint64_t x = static_cast<uint64_t>(b.index) * 0x9e3779b97f4a7c15ULL +
               static_cast<uint64_t>(b.stream) * 0xc2b2ae3d27d4eb4fULL +
               static_cast<uint64_t>(b.prefix) * 0x165667b19e3779f9ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>(x ^ (x >> 31));
}

BlockName block_name(const ServingRequest& q, int64_t index, int64_t block, int64_t block_size) {
  if (q.prefix_id >= 0 && (block + 1) * block_size <= q.prefix_tokens) return {q.prefix_id, -1, block};
  return {q.prefix_id, content_stream(q, index), block};
}

std::list<PrefixCache::Freed>::iterator PrefixCache::lru_push(const Freed& f) {
  if (spare_.empty()) return lru_.insert(lru_.end(), f);
  const auto it = spare_.begin();
  *it = f;
  lru_.splice(lru_.end(), spare_, it);
  return it;
}

void PrefixCache::lru_erase(std::list<Freed>::iterator at) { spare_.splice(spare_.end(), lru_, at); }

bool PrefixCache::acquire(const BlockName& name) {
  Entry& e = blocks_.at(name);
  const bool was_free = e.refs == 0;
  if (was_free) {
    lru_erase(e.in_lru);
    --free_;
  }
  ++e.refs;
  return was_free;
}

int64_t PrefixCache::fill(const BlockName& name) {
  auto [entry, inserted] = blocks_.try_emplace(name);
  if (inserted) {
    entry->refs = 1;
    return 0;
  }
  // Already cached: share it, free the own block.
  const bool was_free = entry->refs == 0;
  if (was_free) {
    lru_erase(entry->in_lru);
    --free_;
  }
  ++entry->refs;
  return was_free ? 0 : -1;
}

bool PrefixCache::release(const BlockName& name) {
  Entry& e = blocks_.at(name);
  if (--e.refs > 0) return false;
  e.in_lru = lru_push(Freed{name, 0});
  ++free_;
  return true;
}

void PrefixCache::free_named(const BlockName& name) {
  auto [entry, inserted] = blocks_.try_emplace(name);
  if (!inserted) {
    free_unnamed(1);
    return;
  }
  entry->in_lru = lru_push(Freed{name, 0});
  ++free_;
}

void PrefixCache::free_unnamed(int64_t blocks) {
  if (blocks <= 0) return;
  if (!lru_.empty() && lru_.back().unnamed > 0) {
    lru_.back().unnamed += blocks;  // the same run
  } else {
    lru_push(Freed{{}, blocks});
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
      if (front.unnamed == 0) lru_erase(lru_.begin());
      continue;
    }
    blocks_.erase(front.name);
    lru_erase(lru_.begin());
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
