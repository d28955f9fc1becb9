// The serving engine's internals (sim/serving/serving_simulation.hpp): a request inside a replica (Sequence), what
// one iteration does to it (Work) and a replica's continuous-batching engine (Replica). Only the engine's own units
// include this header (fleet.hpp, replica.cpp, serving_simulation.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/serving/latency_attribution.hpp"
#include "sim/serving/prefix_cache.hpp"
#include "sim/serving/speculation.hpp"
#include "sim/serving/serving_simulation.hpp"

namespace clustersim::sim::serving_engine {

/// KV blocks of `block_size` tokens that hold `tokens` tokens.
inline int64_t blocks_for(int64_t tokens, int64_t block_size) { return (tokens + block_size - 1) / block_size; }

/// The most samples of the time series a run records (an overloaded fleet's drain can outlast the workload).
constexpr size_t kMaxSamples = size_t{1} << 20;

/// Event priority of an idle engine's start: after the arrivals (priority 0) of the same instant.
constexpr Priority kAfterArrivals = 1;

/// A replica's decode clocks (issue 29): the seconds one decoding sequence of each iteration has been given, by
/// part (LatencyParts' decode_*), since the replica started. A sequence's decode parts are the clocks' advance while
/// it decodes there, read when it starts and stops decoding: O(1) per iteration, not per decoding sequence.
struct DecodeClock {
  double compute_s = 0.0, memory_s = 0.0, communication_s = 0.0, host_s = 0.0, prefill_stall_s = 0.0;
};

/// A request inside a replica. The fields every iteration that carries it reads or writes come first, in one cache
/// line (issue 31: a run touches them about a hundred million times): the struct is aligned to 64 bytes, so that
/// they never straddle two lines; where its time went (LatencyParts) is kept in ServingResult::parts, not here
/// (Replica::parts).
struct alignas(64) Sequence {
  int64_t index = 0;       ///< into the request list
  int64_t prompt = 0;      ///< tokens to compute before sampling (the prompt; after a preemption, also the
                           ///< tokens it had generated)
  int64_t computed = 0;    ///< of them in the KV cache
  int64_t generated = 0;   ///< output tokens sampled so far
  int64_t output = 0;      ///< output tokens wanted
  int64_t blocks = 0;      ///< KV blocks held
  double last_token_s = 0.0;  ///< when it sampled its latest output token (observe_token: TBT)
  bool decoding = false;   ///< in every iteration of its replica's decodes since decode_mark (Replica::stop_decoding)
  int64_t named = 0;       ///< of them, the leading ones held through the prefix cache (EnginePolicy::prefix_caching)
  double kv_mark_s = 0.0;  ///< its replica's KV-wait clock when it joined the queue (Replica::kv_clock_now)
  DecodeClock decode_mark;  ///< its replica's decode clocks when it started decoding
  [[nodiscard]] bool prefilling() const { return computed < prompt; }
  /// Tokens in the KV cache once the next decode has written its token.
  [[nodiscard]] int64_t cached() const { return computed; }
};

/// What one iteration does to one sequence.
struct Work {
  Sequence* seq;
  int64_t chunk;  ///< prompt tokens computed (0: a decode)
  int64_t cached = 0;  ///< seq->cached() when scheduled: a decode's keys read, without a trip to the sequence
};

class Fleet;

/// A replica's life: provisioning (billed, not serving), serving, draining (no new requests: scaled down or
/// warned of an eviction), stopped (not billed).
enum class ReplicaState { provisioning, serving, draining, stopped };

/// What a replica computes: everything (co-located), prompts only (a prefill pool's: a completed prompt is handed
/// to the fleet's KvTransfers, kv_transfer.hpp), or the decode pool's (requests arrive with their prompt's KV
/// cache; ServingSetup::decode_pool's model and policy).
enum class ReplicaRole { colocated, prefill, decode };

class Replica {
 public:
  Replica(Fleet& fleet, int64_t id, int64_t total_blocks, bool spot, ReplicaRole role = ReplicaRole::colocated)
      : fleet_(fleet), id_(id), total_blocks_(total_blocks), spot_(spot), role_(role) {}
  void enqueue(Sequence* s);
  [[nodiscard]] ReplicaRole role() const { return role_; }
  /// Split pools (kv_transfer.hpp): reserves the blocks of `tokens` tokens for `s` arriving by a KV transfer;
  /// false (nothing reserved) when they are not free.
  bool reserve(Sequence& s, int64_t tokens) { return grow(s, tokens); }
  /// Split pools: frees `blocks` blocks a transferred request held here, and starts an idle engine with a queue.
  void release_blocks(int64_t blocks);
  [[nodiscard]] int64_t outstanding() const { return static_cast<int64_t>(waiting_.size() + running_.size()); }
  [[nodiscard]] int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  [[nodiscard]] int64_t running() const { return static_cast<int64_t>(running_.size()); }
  [[nodiscard]] int64_t used_blocks() const { return used_blocks_; }
  [[nodiscard]] int64_t total_blocks() const { return total_blocks_; }
  [[nodiscard]] ReplicaState state() const { return state_; }
  [[nodiscard]] bool spot() const { return spot_; }
  [[nodiscard]] int64_t id() const { return id_; }
  /// Sets the state, keeping the bill: billed from leaving `stopped` until entering it.
  void set_state(ReplicaState next);
  /// Stops the replica now (an eviction): frees its KV cache and hands back its unfinished sequences, which
  /// will compute their prompt and the tokens they generated again. A pending iteration is abandoned.
  std::vector<Sequence*> evict();
  /// Seconds billed up to `until` (the makespan).
  [[nodiscard]] double billed_s(double until) const;
  /// The outstanding count under which the fleet's load index holds this replica (-1: not indexed).
  int64_t indexed_outstanding = -1;
  /// Prefix caching (replica_prefix.cpp): the full blocks of request `index`'s first `prompt` tokens found in this
  /// replica's cache, at most (prompt - 1) / block_size (the last prompt token is always computed). O(hit + 1).
  [[nodiscard]] int64_t cached_prefix_blocks(const ServingRequest& q, int64_t index, int64_t prompt) const;

 private:
  void start_iteration();
  /// The engine's limits and inference model: the decode pool's for a decode replica, else the setup's.
  [[nodiscard]] const EnginePolicy& policy() const;
  [[nodiscard]] const models::InferenceModel& model() const;
  /// Schedules the next iteration into batch_ (decodes, prompt chunks, admissions); false when nothing runs.
  void schedule();
  /// The next iteration of a multi-step block: the running decodes again; false when the block cannot go on.
  bool continue_block();
  /// Finished sequences leave now: their finish time, blocks and place freed (a closed loop sends the next).
  void release(const std::vector<Sequence*>& done);
  void finish_iteration();
  bool grow(Sequence& s, int64_t tokens);
  /// Frees `s`'s blocks; `returns`: it was preempted and will be admitted again (prefix caching keeps its content).
  void free(Sequence& s, bool returns = false);
  void preempt_last();
  // Prefix caching's hooks (replica_prefix.cpp; EnginePolicy::prefix_caching).
  /// Admits `s` (nothing computed) with its first `hit` blocks from the cache and blocks for `reserve` tokens in
  /// all: false, changing nothing, when the free blocks (cached-free ones included) are too few.
  bool admit_cached(Sequence& s, int64_t hit, int64_t reserve);
  /// `s`'s blocks that its computed tokens have filled join the cache.
  void fill_blocks(Sequence& s);
  /// Drops `s`'s references, its blocks tail first into the free queue (its own full blocks named when it
  /// `returns`: preempted, it will look for them); returns the blocks freed.
  int64_t release_blocks(Sequence& s, bool returns);
  /// Where `s`'s time went (ServingResult::parts, by request).
  [[nodiscard]] LatencyParts& parts(const Sequence& s);
  /// KV slots a decoding sequence needs before its pass: 1, or with speculative decoding the k + 1 it writes.
  [[nodiscard]] int64_t decode_slots(const Sequence& s) const;
  /// Drafted tokens `s` keeps beyond its sampled one this iteration: 0, or with speculative decoding a draw.
  int64_t accepted_drafts(const Sequence& s);
  /// Queue and batch changes, reported to the fleet's running totals and load index.
  void push_waiting(Sequence* s, bool front);
  Sequence* pop_waiting();
  void push_running(Sequence* s);
  /// The head of the queue joins the batch: pop_waiting then push_running, the load index touched once (issue 31).
  void admit_head();
  void erase_running(std::vector<Sequence*>::iterator at);
  /// The KV-wait clock: seconds this replica has spent in iterations whose admission stopped for want of KV
  /// blocks, now included. A queued request's KV wait is the clock's advance while it waits (O(1) per request).
  [[nodiscard]] double kv_clock_now() const;
  /// A queued sequence leaves the queue (admitted, rejected or evicted): its KV wait before its first token.
  void account_kv_wait(Sequence& s);
  /// Prompt work lost before the first token (a preemption or an eviction) moves to the restart part.
  void account_restart(Sequence& s);
  /// Adds the finished iteration's time to the parts of its prompt chunks and to the decode clocks (LatencyParts).
  void attribute_iteration(double elapsed_s);
  /// `s` decodes in the iteration being scheduled: from now its decode parts follow the decode clocks.
  void start_decoding(Sequence& s) {
    if (s.decoding) return;
    s.decoding = true;
    s.decode_mark = decode_clock_;
  }
  /// `s` leaves the decodes (finished, preempted, evicted, or left out of an iteration): the clocks' advance since
  /// it started goes to its decode parts.
  void stop_decoding(Sequence& s);

  Fleet& fleet_;
  int64_t id_;
  int64_t total_blocks_;
  bool spot_;
  ReplicaRole role_;
  int64_t used_blocks_ = 0;
  bool busy_ = false;
  uint64_t epoch_ = 0;  ///< bumped by evict(): events of an abandoned iteration do nothing
  ReplicaState state_ = ReplicaState::serving;
  double billed_since_s_ = 0.0;  ///< when the current billing interval started (not stopped)
  std::vector<std::pair<double, double>> billed_;  ///< closed billing intervals [from, to), s
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  ///< in admission order
  std::vector<Work> batch_;
  /// batch_'s leading Works that are decodes (schedule's first pass, or a block's whole batch), and the sum of their
  /// `cached`: start_iteration and attribute_iteration pass over the rest only (issue 31).
  size_t decode_prefix_ = 0;
  int64_t decode_prefix_kv_tokens_ = 0;
  /// finish_iteration's scratch lists (kept to reuse their storage, not state): the sequences finished, and those
  /// whose prompt completed on a prefill replica.
  std::vector<Sequence*> done_, prefilled_;
  int64_t block_left_ = 0;  ///< iterations left in the current multi-step block (EnginePolicy::scheduler_steps)
  double started_s_ = 0.0;
  // Latency attribution (issue 29): the current iteration's resource split and token counts, the KV-wait clock.
  ResourceSplit split_;
  int64_t batch_prefill_tokens_ = 0;
  int64_t batch_decodes_ = 0;
  bool kv_blocked_ = false;  ///< the current iteration's admission stopped for want of KV blocks
  double kv_clock_s_ = 0.0;  ///< the KV-wait clock up to the current iteration's start
  DecodeClock decode_clock_;
  PrefixCache cache_;  ///< EnginePolicy::prefix_caching
  std::optional<RandomStream> speculation_stream_;  ///< this slot's acceptance draws (kSpeculationStream)
};

}  // namespace clustersim::sim::serving_engine
