#include "sim/serving/replica.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "sim/serving/fleet.hpp"

namespace clustersim::sim::serving_engine {
namespace {

/// Items ahead in a pass over a replica's sequences whose Sequence is fetched before the pass reaches it.
constexpr size_t kPrefetchDistance = 8;

/// Asks for the cache line of the Sequence kPrefetchDistance items after `i` in `items` (Work or Sequence*): the
/// passes over a batch chase one pointer per token, and a line not in cache stalled each (issue 31). A hint only.
template <typename Items>
void prefetch_ahead(const Items& items, size_t i) {
  if (i + kPrefetchDistance >= items.size()) return;
  const auto& item = items[i + kPrefetchDistance];
  if constexpr (std::is_same_v<std::decay_t<decltype(item)>, Work>) {
    __builtin_prefetch(item.seq);
  } else {
    __builtin_prefetch(item);
  }
}

}  // namespace

void Replica::set_state(ReplicaState next) {
  const double now = fleet_.now_s();
  if (state_ == ReplicaState::stopped && next != ReplicaState::stopped) billed_since_s_ = now;
  if (state_ != ReplicaState::stopped && next == ReplicaState::stopped) billed_.emplace_back(billed_since_s_, now);
  const ReplicaState from = state_;
  state_ = next;
  fleet_.state_changed(*this, from, next);
}

const EnginePolicy& Replica::policy() const {
  return role_ == ReplicaRole::decode ? fleet_.setup().decode_pool->policy : fleet_.setup().policy;
}

const models::InferenceModel& Replica::model() const {
  return role_ == ReplicaRole::decode ? *fleet_.setup().decode_pool->model : *fleet_.setup().model;
}

void Replica::release_blocks(int64_t blocks) {
  used_blocks_ -= blocks;
  fleet_.blocks_changed(-blocks);
  if (!busy_ && !waiting_.empty()) {
    busy_ = true;
    fleet_.simulator().schedule(
        fleet_.simulator().now(), [this, e = epoch_] { if (e == epoch_) start_iteration(); }, kAfterArrivals);
  }
}

LatencyParts& Replica::parts(const Sequence& s) { return fleet_.result().parts[static_cast<size_t>(s.index)]; }

void Replica::push_waiting(Sequence* s, bool front) {
  s->kv_mark_s = kv_clock_now();
  if (front) {
    waiting_.push_front(s);
  } else {
    waiting_.push_back(s);
  }
  fleet_.queues_changed(*this, +1, 0);
}

Sequence* Replica::pop_waiting() {
  Sequence* s = waiting_.front();
  waiting_.pop_front();
  fleet_.queues_changed(*this, -1, 0);
  account_kv_wait(*s);
  return s;
}

double Replica::kv_clock_now() const {
  return kv_clock_s_ + (busy_ && kv_blocked_ ? fleet_.now_s() - started_s_ : 0.0);
}

void Replica::account_kv_wait(Sequence& s) {
  if (s.generated == 0) parts(s).kv_wait_s += kv_clock_now() - s.kv_mark_s;
}

void Replica::account_restart(Sequence& s) {
  if (s.generated != 0) return;
  LatencyParts& p = parts(s);
  p.prefill_restart_s += p.prefill_compute_s + p.prefill_memory_s + p.prefill_communication_s + p.prefill_host_s +
                         p.prefill_co_scheduled_s;
  p.prefill_compute_s = p.prefill_memory_s = p.prefill_communication_s = p.prefill_host_s =
      p.prefill_co_scheduled_s = 0.0;
}

void Replica::stop_decoding(Sequence& s) {
  if (!s.decoding) return;
  s.decoding = false;
  LatencyParts& p = parts(s);
  p.decode_compute_s += decode_clock_.compute_s - s.decode_mark.compute_s;
  p.decode_memory_s += decode_clock_.memory_s - s.decode_mark.memory_s;
  p.decode_communication_s += decode_clock_.communication_s - s.decode_mark.communication_s;
  p.decode_host_s += decode_clock_.host_s - s.decode_mark.host_s;
  p.decode_prefill_stall_s += decode_clock_.prefill_stall_s - s.decode_mark.prefill_stall_s;
}

void Replica::attribute_iteration(double elapsed_s) {
  // The model's terms, scaled to the iteration's elapsed simulated time (the engine's clock rounds to its tick),
  // per token of the batch.
  const double total = split_.total_s();
  const double tokens = static_cast<double>(batch_prefill_tokens_ + batch_decodes_);
  const double per_token = total > 0 ? elapsed_s / total / tokens : 0.0;
  const double compute = split_.compute_s * per_token, memory = split_.memory_s * per_token;
  const double communication = split_.communication_s * per_token, host = split_.host_s * per_token;
  // The decoding sequences together own batch_decodes_ tokens of the iteration, the prompt chunks the rest.
  const double decodes = static_cast<double>(batch_decodes_);
  const double stall = static_cast<double>(batch_prefill_tokens_) / tokens * elapsed_s;
  if (batch_decodes_ > 0) {  // every decoding sequence of the batch gets the same: the clocks (stop_decoding)
    decode_clock_.compute_s += decodes * compute;
    decode_clock_.memory_s += decodes * memory;
    decode_clock_.communication_s += decodes * communication;
    decode_clock_.host_s += decodes * host;
    decode_clock_.prefill_stall_s += stall;
  }
  if (batch_prefill_tokens_ == 0) return;
  // The leading decode_prefix_ Works are decodes (schedule's first pass): no prompt chunk there.
  for (auto it = batch_.begin() + static_cast<std::ptrdiff_t>(decode_prefix_); it != batch_.end(); ++it) {
    const Work& w = *it;
    Sequence& s = *w.seq;
    LatencyParts& p = parts(s);
    if (w.chunk > 0) {
      if (s.generated > 0) continue;  // a preempted or evicted request's recomputation: TPOT's remainder
      const auto own = static_cast<double>(w.chunk);
      p.prefill_compute_s += own * compute;
      p.prefill_memory_s += own * memory;
      p.prefill_communication_s += own * communication;
      p.prefill_host_s += own * host;
      p.prefill_co_scheduled_s += (tokens - own) / tokens * elapsed_s;
    }
  }
}

void Replica::admit_head() {
  Sequence* s = waiting_.front();
  waiting_.pop_front();
  running_.push_back(s);
  fleet_.queues_changed(*this, -1, +1);  // outstanding unchanged: the load index stays as it is
  account_kv_wait(*s);
}

void Replica::push_running(Sequence* s) {
  running_.push_back(s);
  fleet_.queues_changed(*this, 0, +1);
}

void Replica::erase_running(std::vector<Sequence*>::iterator at) {
  running_.erase(at);
  fleet_.queues_changed(*this, 0, -1);
}

double Replica::billed_s(double until) const {
  // Each interval clipped at `until`: what happened after the last request is not the workload's.
  double b = 0.0;
  for (const auto& [from, to] : billed_) b += std::max(0.0, std::min(to, until) - from);
  if (state_ != ReplicaState::stopped) b += std::max(0.0, until - billed_since_s_);
  return b;
}

std::vector<Sequence*> Replica::evict() {
  for (Sequence* s : waiting_) account_kv_wait(*s);
  std::vector<Sequence*> out(running_.begin(), running_.end());
  out.insert(out.end(), waiting_.begin(), waiting_.end());
  for (Sequence* s : out) {
    stop_decoding(*s);
    account_restart(*s);
    free(*s);
    s->prompt = fleet_.outcome(*s).prompt_tokens + s->generated;
    s->computed = 0;
  }
  cache_.clear();  // the VM and its KV cache are lost
  const auto waiting = static_cast<int64_t>(waiting_.size()), running = static_cast<int64_t>(running_.size());
  running_.clear();
  waiting_.clear();
  fleet_.queues_changed(*this, -waiting, -running);
  batch_.clear();
  block_left_ = 0;
  busy_ = false;
  kv_blocked_ = false;
  ++epoch_;
  set_state(ReplicaState::stopped);
  return out;
}

void Replica::enqueue(Sequence* s) {
  if (role_ == ReplicaRole::decode && s->blocks > 0) {
    // A transferred request holds its blocks: it queues behind the others that do, ahead of any that needs blocks
    // (a preempted one), which would otherwise wait at the front for blocks held behind it.
    s->kv_mark_s = kv_clock_now();
    auto at = waiting_.begin();
    while (at != waiting_.end() && (*at)->blocks > 0) ++at;
    waiting_.insert(at, s);
    fleet_.queues_changed(*this, +1, 0);
  } else {
    push_waiting(s, false);
  }
  // An idle engine starts its next iteration once every arrival of this instant is queued (a later priority
  // at the same time), as a real engine's loop picks up all requests waiting at the start of its step.
  if (!busy_) {
    busy_ = true;
    fleet_.simulator().schedule(
        fleet_.simulator().now(), [this, e = epoch_] { if (e == epoch_) start_iteration(); }, kAfterArrivals);
  }
}

bool Replica::grow(Sequence& s, int64_t tokens) {
  const int64_t block_size = fleet_.setup().policy.block_size;
  if (tokens <= s.blocks * block_size) return true;  // its blocks hold them (a decode's usual case): no division
  // One block more holds them (a decode filling its last block, the usual case): blocks_for without its division.
  const int64_t need = tokens <= (s.blocks + 1) * block_size ? 1 : blocks_for(tokens, block_size) - s.blocks;
  if (need <= 0) return true;
  if (used_blocks_ + need > total_blocks_) return false;
  if (fleet_.setup().policy.prefix_caching) {  // the new blocks: empty ones first, then the free queue's oldest
    cache_.make_room(need, total_blocks_ - used_blocks_ - cache_.free_blocks());
  }
  used_blocks_ += need;
  fleet_.blocks_changed(need);
  s.blocks += need;
  return true;
}

void Replica::free(Sequence& s, bool returns) {
  const int64_t freed = fleet_.setup().policy.prefix_caching ? release_blocks(s, returns) : s.blocks;
  used_blocks_ -= freed;
  fleet_.blocks_changed(-freed);
  s.blocks = 0;
}

int64_t Replica::decode_slots(const Sequence& s) const {
  const SpeculativeServing* spec = fleet_.setup().speculative.get();
  return spec == nullptr ? 1 : spec->kv_slots(s.output - s.generated);
}

int64_t Replica::accepted_drafts(const Sequence& s) {
  const SpeculativeServing* spec = fleet_.setup().speculative.get();
  if (spec == nullptr) return 0;
  if (!speculation_stream_) speculation_stream_ = spec->stream(id_);
  return spec->accepted_drafts(*speculation_stream_, s.output - s.generated);
}

void Replica::preempt_last() {
  Sequence* victim = running_.back();
  erase_running(running_.end() - 1);
  stop_decoding(*victim);
  account_restart(*victim);
  free(*victim, true);
  // Recompute: the prompt and the tokens generated so far are prefilled again.
  victim->prompt = fleet_.outcome(*victim).prompt_tokens + victim->generated;
  victim->computed = 0;
  ++fleet_.outcome(*victim).preemptions;
  // On a decode replica the queue holds transferred requests with their blocks reserved: a victim at its front
  // would wait for blocks they hold (a deadlock), so it queues behind them.
  push_waiting(victim, role_ != ReplicaRole::decode);
}

bool Replica::continue_block() {
  batch_.clear();
  int64_t kv_tokens = 0;
  for (Sequence* s : running_) {
    if (s->prefilling() || !grow(*s, s->computed + 1)) {  // a block decodes only; no block free: schedule
      batch_.clear();
      return false;
    }
    batch_.push_back({s, 0, s->cached()});
    kv_tokens += s->cached();
  }
  for (const Work& w : batch_) start_decoding(*w.seq);
  decode_prefix_ = batch_.size();  // every Work a decode
  decode_prefix_kv_tokens_ = kv_tokens;
  return !batch_.empty();
}

void Replica::start_iteration() {
  fleet_.count_iteration();
  const EnginePolicy& policy = this->policy();
  const bool in_block = block_left_ > 0 && continue_block();
  if (in_block) {
    --block_left_;
  } else {
    if (block_left_ > 0) {  // a block that cannot go on ends here: its finished sequences leave
      std::vector<Sequence*> finished;
      for (Sequence* s : running_) {
        if (s->generated >= s->output) finished.push_back(s);
      }
      block_left_ = 0;
      release(finished);
    }
    schedule();
  }
  if (batch_.empty()) {
    busy_ = false;
    kv_blocked_ = false;
    if (state_ == ReplicaState::draining && outstanding() == 0) fleet_.drained(*this);
    return;
  }
  models::IterationBatch b;
  b.scheduled = !in_block;
  // The sums in registers, not in `b` (which escapes, so that each token's addition went through memory). The
  // leading decode_prefix_ Works (decodes: one sampled token each) were summed as they were scheduled.
  const auto prefix = static_cast<int64_t>(decode_prefix_);
  int64_t prefill_tokens = 0, decode_sequences = prefix, decode_kv_tokens = decode_prefix_kv_tokens_;
  int64_t sampled_sequences = prefix;
  double prefill_attention_pairs = 0.0;
  bool decode_only = true;  // every Work's chunk 0
  for (auto it = batch_.begin() + static_cast<std::ptrdiff_t>(decode_prefix_); it != batch_.end(); ++it) {
    const Work& w = *it;
    decode_only = decode_only && w.chunk == 0;
    if (w.chunk > 0) {
      prefill_tokens += w.chunk;
      prefill_attention_pairs += models::prefill_attention_pairs(w.seq->computed, w.chunk);
      if (w.seq->computed + w.chunk == w.seq->prompt) ++sampled_sequences;
    } else {
      ++decode_sequences;
      decode_kv_tokens += w.cached;
      ++sampled_sequences;
    }
  }
  // A decode-only iteration opens a multi-step block.
  if (!in_block && decode_only) block_left_ = policy.scheduler_steps - 1;
  b.prefill_tokens = prefill_tokens;
  b.prefill_attention_pairs = prefill_attention_pairs;
  b.decode_sequences = decode_sequences;
  b.decode_kv_tokens = decode_kv_tokens;
  b.sampled_sequences = sampled_sequences;
  const IterationCost cost = iteration_cost(model(), fleet_.resources(role_), fleet_.setup().speculative.get(), b,
                                            &fleet_.memo(role_));
  const units::Seconds duration = cost.duration;
  split_ = cost.split;
  batch_prefill_tokens_ = b.prefill_tokens;
  batch_decodes_ = b.decode_sequences;
  if (kv_blocked_) ++fleet_.result().kv_limited_iterations;
  busy_ = true;
  started_s_ = fleet_.now_s();
  ++fleet_.result().iterations;
  const Time ticks = Time::from_seconds(duration);  // the engine's clock: the duration rounded to its tick
  observe_iteration(fleet_.result().inside, fleet_.setup().iteration_log,
                    {fleet_.result().iterations - 1, id_, started_s_, ticks.to_seconds().value(),
                     static_cast<int64_t>(batch_.size()), b.prefill_tokens, b.decode_sequences, used_blocks_});
  fleet_.simulator().mix_into_fingerprint(static_cast<uint64_t>(id_));
  fleet_.simulator().schedule_in(ticks, [this, e = epoch_] {
    if (e == epoch_) finish_iteration();
  });
}

void Replica::schedule() {
  const EnginePolicy& policy = this->policy();
  batch_.clear();
  kv_blocked_ = false;
  int64_t budget = policy.max_num_batched_tokens;
  // 1. Decodes, oldest first; preempt the newest when the cache is full.
  size_t k = 0;
  int64_t prefilling = 0;  // among running_[0, k)
  int64_t kv_tokens = 0;   // the decodes' keys read (decode_prefix_kv_tokens_)
  // Read once, not per sequence (the stores of the loop could alias them for the compiler).
  const int64_t block_size = fleet_.setup().policy.block_size;
  const bool speculative = fleet_.setup().speculative != nullptr;
  const bool prefix_caching = fleet_.setup().policy.prefix_caching;
  for (; k < running_.size() && budget > 0; ++k) {
    prefetch_ahead(running_, k);
    Sequence* s = running_[k];
    if (s->prefilling()) {
      ++prefilling;
      continue;
    }
    const int64_t tokens = s->computed + (speculative ? decode_slots(*s) : 1);
    const int64_t held = s->blocks * block_size;
    // grow's usual case (no prefix caching, at most one block more, one free) without a branch on whether the
    // block is needed: a sequence fills one every block_size decodes, which no branch predictor learns (issue 31).
    // (held - tokens) < 0 exactly when the block is needed: its sign bit, not a comparison the compiler branches on.
    const auto one_more = static_cast<int64_t>(static_cast<uint64_t>(held - tokens) >> 63);
    // One test of the three (`&` on bools, not `&&`: each would be a branch).
    if (static_cast<int>(!prefix_caching) & static_cast<int>(tokens <= held + block_size) &
        static_cast<int>(used_blocks_ + one_more <= total_blocks_)) {
      used_blocks_ += one_more;
      fleet_.blocks_changed(one_more);
      s->blocks += one_more;
    } else if (tokens > held) {  // its blocks are full (grow's slow path): preempt until it grows
      while (!grow(*s, tokens)) {
        if (running_.back() == s) {  // s itself is the newest: it waits
          preempt_last();
          s = nullptr;
          break;
        }
        preempt_last();
      }
      if (s == nullptr) break;
    }
    batch_.push_back({s, 0, s->cached()});
    kv_tokens += s->cached();
    start_decoding(*s);
    --budget;
  }
  decode_prefix_ = batch_.size();  // the Works so far are decodes; prompt chunks and admissions follow
  decode_prefix_kv_tokens_ = kv_tokens;
  // Whether a running sequence has prompt left: the loop saw every one (a preemption removes the newest, never one
  // already seen), or some are unseen.
  const bool prompts_left = prefilling > 0 || k < running_.size();
  // Decodes the token budget left out of this iteration: their decode parts pause (TPOT's remainder).
  for (; budget <= 0 && k < running_.size(); ++k) stop_decoding(*running_[k]);
  // 2. Prompts in progress (none: no second pass over the batch).
  for (Sequence* s : running_) {
    if (budget <= 0 || !prompts_left) break;
    if (!s->prefilling()) continue;
    const int64_t chunk = std::min(s->prompt - s->computed, budget);
    batch_.push_back({s, chunk, s->cached()});
    budget -= chunk;
  }
  // 3. Admission, first come first served.
  while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < policy.max_num_seqs) {
    Sequence* s = waiting_.front();
    // Prefix caching: the prompt's full blocks already cached are not computed again (at least its last token is).
    const int64_t hit = policy.prefix_caching ? cached_prefix_blocks(fleet_.request(*s), s->index, s->prompt) : 0;
    const int64_t left = s->prompt - s->computed - hit * policy.block_size;
    // Never schedulable (a preempted prompt grown past the budget, its cached blocks aside): rejected.
    if (!fleet_.fits_iteration(*s) && left > policy.max_num_batched_tokens) {
      pop_waiting();
      fleet_.reject_unschedulable(*s);
      continue;
    }
    if (!policy.chunked_prefill && left > budget) break;
    // max_utilization: the prompt and the first output token's slot; guaranteed_no_evict: every token it will
    // hold, so that its decodes never need a block (a request is never preempted under it).
    // A prefill replica holds the prompt only (its first token is the decode pool's).
    const int64_t reserve = role_ == ReplicaRole::prefill ? s->prompt
                            : policy.admission == models::CapacityPolicy::guaranteed_no_evict
                                ? fleet_.outcome(*s).prompt_tokens + s->output
                                : s->prompt + 1;
    if (!(policy.prefix_caching ? admit_cached(*s, hit, reserve) : grow(*s, reserve))) {
      kv_blocked_ = true;
      break;
    }
    admit_head();
    const int64_t chunk = std::min(left, budget);
    batch_.push_back({s, chunk, s->cached()});
    budget -= std::max<int64_t>(chunk, 1);  // a transferred request (its prompt computed) decodes one token
  }
}

void Replica::finish_iteration() {
  const double now = fleet_.now_s();
  fleet_.result().busy_s += now - started_s_;
  if (role_ == ReplicaRole::decode) fleet_.result().decode_busy_s += now - started_s_;
  attribute_iteration(now - started_s_);
  if (kv_blocked_) kv_clock_s_ += now - started_s_;
  kv_blocked_ = false;
  std::vector<Sequence*>& done = done_;
  std::vector<Sequence*>& prefilled = prefilled_;
  done.clear();
  prefilled.clear();
  const bool speculative = fleet_.setup().speculative != nullptr;
  const bool prefix_caching = fleet_.setup().policy.prefix_caching;
  IterationTokens tokens(fleet_.result().inside, now);  // the TBT gaps, gathered by run (iteration_log.hpp)
  const size_t works = batch_.size();
  for (size_t i = 0; i < works; ++i) {
    const Work& w = batch_[i];
    if (i + kPrefetchDistance < works) __builtin_prefetch(batch_[i + kPrefetchDistance].seq);  // prefetch_ahead
    Sequence& s = *w.seq;
    if (w.chunk > 0) {
      s.computed += w.chunk;
    } else if (speculative) {
      const int64_t drafts = accepted_drafts(s);
      s.computed += 1 + drafts;  // the decoded token's K and V, and the accepted drafts'
      s.generated += drafts;
    } else {
      // Apart from the speculative case: with `generated += 0` beside it the two additions became one 16-byte
      // store, and the load of `generated` just after it could not be forwarded from it (a stall per token).
      s.computed += 1;
    }
    if (prefix_caching) fill_blocks(s);
    if (w.chunk > 0 && s.computed < s.prompt) continue;  // more of the prompt next iteration
    if (w.chunk > 0 && role_ == ReplicaRole::prefill) {  // its KV cache moves to the decode pool
      prefilled.push_back(&s);
      continue;
    }
    // A completed prompt or a decode samples one token.
    ++s.generated;
    tokens.observe(s.generated, s.output, s.last_token_s);
    if (s.generated == 1) fleet_.outcome(s).first_token_s = now;
    // Inside a multi-step block a finished sequence decodes on to the block's end, which returns its tokens.
    if (s.generated >= s.output && block_left_ == 0) done.push_back(&s);
  }
  tokens.flush();
  release(done);
  for (Sequence* s : prefilled) {
    erase_running(std::find(running_.begin(), running_.end(), s));
    const int64_t blocks = s->blocks;
    s->blocks = 0;  // still held here (used_blocks_) until the transfer lands: release_blocks
    fleet_.prefilled(*this, *s, blocks);
  }
  start_iteration();
}

void Replica::release(const std::vector<Sequence*>& done) {
  const double now = fleet_.now_s();
  for (Sequence* s : done) {
    stop_decoding(*s);
    fleet_.outcome(*s).finish_s = now;
    free(*s);
    erase_running(std::find(running_.begin(), running_.end(), s));
    fleet_.finished(*s);
  }
}

}  // namespace clustersim::sim::serving_engine
