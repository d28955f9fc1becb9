// Prefix caching's side of a replica (sim/serving/prefix_cache.hpp; EnginePolicy::prefix_caching): the hooks that
// replica.cpp's admission, iteration end and free call. A sequence's first `named` blocks are cache entries it
// references; the rest of its `blocks` are its own (the block being filled). Replica::used_blocks counts the blocks
// at least one sequence references, each once.
#include <algorithm>
#include <cstdint>

#include "sim/serving/fleet.hpp"
#include "sim/serving/replica.hpp"

namespace clustersim::sim::serving_engine {

int64_t Replica::cached_prefix_blocks(const ServingRequest& q, int64_t index, int64_t prompt) const {
  const int64_t block = fleet_.setup().policy.block_size;
  return cache_.match([&](int64_t i) { return block_name(q, index, i, block); }, (prompt - 1) / block);
}

bool Replica::admit_cached(Sequence& s, int64_t hit, int64_t reserve) {
  const int64_t block = fleet_.setup().policy.block_size;
  const ServingRequest& q = fleet_.request(s);
  auto name = [&](int64_t i) { return block_name(q, s.index, i, block); };
  // The hit blocks that sit in the free queue become referenced; the rest of `reserve` needs fresh blocks.
  const int64_t taken = cache_.free_among(name, hit);
  const int64_t fresh = blocks_for(reserve, block) - hit;
  if (used_blocks_ + taken + fresh > total_blocks_) return false;
  for (int64_t i = 0; i < hit; ++i) cache_.acquire(name(i));
  used_blocks_ += taken;
  fleet_.blocks_changed(taken);
  s.blocks = s.named = hit;
  s.computed = hit * block;
  if (s.generated == 0) fleet_.outcome(s).cached_tokens = hit * block;
  return grow(s, reserve);  // fits: checked above
}

void Replica::fill_blocks(Sequence& s) {
  const int64_t block = fleet_.setup().policy.block_size;
  const ServingRequest& q = fleet_.request(s);
  // Blocks no other request can hit stay the sequence's own (named only if it is preempted: release_blocks).
  for (; s.named < s.computed / block && shared_content(q, s.named, block); ++s.named) {
    const int64_t delta = cache_.fill(block_name(q, s.index, s.named, block));
    used_blocks_ += delta;
    fleet_.blocks_changed(delta);
  }
}

int64_t Replica::release_blocks(Sequence& s, bool returns) {
  const int64_t block = fleet_.setup().policy.block_size;
  const ServingRequest& q = fleet_.request(s);
  // Tail first into the free queue, so that a prompt's tail is evicted before its head (vLLM's free order): the
  // blocks past its full ones, its own full blocks (named when it will come back for them), its named blocks.
  const int64_t full = std::max(s.named, std::min(s.blocks, s.computed / block));
  int64_t freed = s.blocks - s.named;
  cache_.free_unnamed(s.blocks - full);
  if (returns) {
    for (int64_t i = full - 1; i >= s.named; --i) cache_.free_named(block_name(q, s.index, i, block));
  } else {
    cache_.free_unnamed(full - s.named);
  }
  for (int64_t i = s.named - 1; i >= 0; --i) freed += cache_.release(block_name(q, s.index, i, block)) ? 1 : 0;
  s.named = 0;
  return freed;
}

}  // namespace clustersim::sim::serving_engine
