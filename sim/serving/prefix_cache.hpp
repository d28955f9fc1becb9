// Automatic prefix caching of one replica's paged KV cache (issue 30): vLLM's design (docs.vllm.ai, "Automatic
// Prefix Caching", design/v1/prefix_caching, read 2026-11): only FULL blocks are cached; a block's identity is
// hash(its parent block's identity, its tokens); cached blocks are reference-counted and shared by every request
// whose prompt starts with them; a block no request references keeps its content in a free queue and is evicted
// least recently used first when a new block is needed (a request's blocks are freed tail first, so that its tail
// goes before its head); a hit on the whole prompt still computes the last token (the logits need it).
//
// Token content is not stored. A request's tokens are named by ServingRequest's content fields: the first
// prefix_tokens are the shared system prompt prefix_id, the rest the request's own stream (a multi-turn session's
// conversation, each turn's prompt a prefix of the next turn's, or the request's own tokens). Block i of a request
// is therefore fully named by (prefix_id, stream, i), stream -1 for a block inside the system prompt: equal names
// <=> equal parents and equal tokens, the exact identity vLLM's hash chain approximates (no hash collisions here).
//
// Which blocks are named. A block another request can hit (inside a system prompt, or of a multi-turn session,
// whose next turn resends it) is named when it fills. A request's own tokens (no session) can only be found again by
// the request itself, re-admitted after a preemption: its full blocks are named when it is preempted, and when it
// finishes they join the free queue as unnamed blocks, in their place in the LRU order (they still stand between
// the named blocks and eviction, as vLLM's hashed blocks of a finished unique prompt do). The results are those of
// naming every block; the cost of a random-prompt workload stays near that of no caching.
//
// Complexity: a lookup, a hit or a release costs O(1) per block (an open-addressing hash map, block_map.hpp, and an
// intrusive LRU list of named blocks and runs of unnamed ones); no result depends on the map's layout (it is never
// iterated).
#pragma once

#include <cstdint>
#include <list>

#include "sim/serving/block_map.hpp"
#include "sim/serving/serving_simulation.hpp"

namespace clustersim::sim::serving_engine {

/// The content identity of a full KV block (see above).
struct BlockName {
  int64_t prefix = -1;  ///< ServingRequest::prefix_id (-1: none)
  int64_t stream = -1;  ///< -1: inside the system prompt; else the request's stream (content_stream)
  int64_t index = 0;    ///< the block's position in the sequence (0-based; BlockMap marks empty slots with -1)
  bool operator==(const BlockName&) const = default;
};

/// The bucket hash of a BlockName (any mixing of its three fields; only a bucket depends on it).
struct BlockNameHash {
  size_t operator()(const BlockName& b) const noexcept;
};

/// The stream of request `index`'s tokens after its system prompt: its session's (even ids) or its own (odd ids),
/// so that a session's turns share blocks and no two other requests do.
[[nodiscard]] inline int64_t content_stream(const ServingRequest& q, int64_t index) {
  return q.session >= 0 ? 2 * q.session : 2 * index + 1;
}

/// The name of block `block` (0-based) of request `index` whose blocks hold `block_size` tokens.
[[nodiscard]] BlockName block_name(const ServingRequest& q, int64_t index, int64_t block, int64_t block_size);

/// Whether another request can hit block `block` of `q`: inside its system prompt, or of a session.
[[nodiscard]] inline bool shared_content(const ServingRequest& q, int64_t block, int64_t block_size) {
  return q.session >= 0 || (q.prefix_id >= 0 && (block + 1) * block_size <= q.prefix_tokens);
}

/// One replica's cached blocks. The replica keeps its own count of referenced blocks (Replica::used_blocks); this
/// class knows which of them are named (cached, shared) and the unreferenced named blocks that still hold content.
/// A block is either referenced (by >= 1 sequence), cached-free (named, unreferenced: in the LRU queue, reusable by
/// a hit, evictable) or empty. Free capacity = total - referenced, cached-free blocks included.
class PrefixCache {
 public:
  /// Full blocks of `name(0..)` cached here (referenced or free), from block 0 on, stopping at the first miss,
  /// at most `max_blocks`. `name` is a callable int64_t -> BlockName. O(hit blocks + 1).
  template <typename Name>
  [[nodiscard]] int64_t match(const Name& name, int64_t max_blocks) const {
    int64_t n = 0;
    while (n < max_blocks && blocks_.contains(name(n))) ++n;
    return n;
  }
  /// Of the first `blocks` blocks (all cached: match), those in the free queue: taking them uses free capacity.
  template <typename Name>
  [[nodiscard]] int64_t free_among(const Name& name, int64_t blocks) const {
    int64_t n = 0;
    for (int64_t i = 0; i < blocks; ++i) n += blocks_.find(name(i))->refs == 0 ? 1 : 0;
    return n;
  }
  /// A sequence takes a reference to the cached block `name` (which must be cached); true when it was in the free
  /// queue (the replica's referenced count grows by one).
  bool acquire(const BlockName& name);
  /// A sequence's own block just filled: it becomes cached under `name`, referenced once. When the name is already
  /// cached (another sequence computed the same tokens meanwhile), the sequence shares that block instead and its
  /// own is freed (vLLM keeps the duplicate until the request ends; here the capacity comes back at once). Returns
  /// the change of the replica's referenced count: 0 (registered; or the cached block was free: it is referenced
  /// now, the own block freed) or -1 (the cached block was referenced already: only the own block is freed).
  int64_t fill(const BlockName& name);
  /// A sequence drops its reference to `name`; at zero the block joins the free queue's most recent end. true
  /// when it did (the replica's referenced count falls by one).
  bool release(const BlockName& name);
  /// A sequence frees its full own block `name` (a preempted request's): it joins the free queue's most recent end,
  /// named (an unnamed block when the name is cached already).
  void free_named(const BlockName& name);
  /// A sequence frees `blocks` unnamed blocks: one run at the free queue's most recent end.
  void free_unnamed(int64_t blocks);
  /// Makes room for `blocks` new blocks when `empty` blocks (never used) are left: takes the rest from the free
  /// queue's least recently used end (a named block is evicted). Requires enough blocks in the queue.
  void make_room(int64_t blocks, int64_t empty);
  /// Forgets everything (the replica's VM is lost).
  void clear();
  /// Blocks in the free queue, named and unnamed: no sequence references them.
  [[nodiscard]] int64_t free_blocks() const { return free_; }
  /// Cached blocks, referenced or not.
  [[nodiscard]] int64_t cached_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  /// Cached blocks evicted so far.
  [[nodiscard]] int64_t evicted() const { return evicted_; }

 private:
  /// A free queue entry: a named block, or a run of `unnamed` > 0 unnamed blocks.
  struct Freed {
    BlockName name;
    int64_t unnamed = 0;
  };
  struct Entry {
    int64_t refs = 0;
    std::list<Freed>::iterator in_lru;  ///< valid when refs == 0
  };
  BlockMap<BlockName, Entry, BlockNameHash> blocks_;
  /// Appends `f` at the free queue's most recent end, in a node of spare_ when there is one (no allocation).
  std::list<Freed>::iterator lru_push(const Freed& f);
  /// Takes the entry `at` out of the free queue, its node kept in spare_ (issue 31: a node allocated and freed per
  /// released block was a tenth of a run with prefix caching).
  void lru_erase(std::list<Freed>::iterator at);

  std::list<Freed> lru_;    ///< the free queue, least recently used first
  std::list<Freed> spare_;  ///< nodes out of the queue, kept for lru_push (their content meaningless)
  int64_t free_ = 0;      ///< blocks in it
  int64_t evicted_ = 0;
};

}  // namespace clustersim::sim::serving_engine
