// The fleet of a serving run (sim/serving/serving_simulation.hpp): the router, the replicas' lives (provisioning,
// spot evictions, zone outages, the autoscaler), the time series and the run's invariants. Only the engine's own
// units include this header.
#pragma once

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/random_stream.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/serving/latency_attribution.hpp"
#include "sim/serving/kv_transfer.hpp"
#include "sim/serving/load_index.hpp"
#include "sim/serving/replica.hpp"

namespace clustersim::sim::serving_engine {

/// Random stream of the spot evictions (the workload uses streams 1-3).
constexpr uint64_t kEvictionStream = 4;

class Fleet {
 public:
  Fleet(const ServingSetup& setup, const std::vector<ServingRequest>& requests, ServingResult& result)
      : setup_(setup), requests_(requests), result_(result),
        evictions_(setup.spot.seed, 0, kEvictionStream), resources_(*setup.model) {
    const int64_t blocks = setup.kv_cache_tokens / setup.policy.block_size;
    const int64_t slots = setup.autoscaling ? setup.autoscaling->max_replicas : setup.replicas;
    replicas_.reserve(static_cast<size_t>(slots));  // replicas capture `this` in their events
    indexed_ = setup.routing != Routing::round_robin || setup.autoscaling.has_value();
    by_load_.reset(slots);
    for (size_t i = 0; i < requests.size(); ++i) {  // multi-turn sessions: each turn's next (ServingRequest::previous)
      if (requests[i].previous < 0) continue;
      if (next_turn_.empty()) next_turn_.assign(requests.size(), -1);
      next_turn_[static_cast<size_t>(requests[i].previous)] = static_cast<int64_t>(i);
    }
    for (int64_t r = 0; r < slots; ++r) {
      replicas_.emplace_back(*this, r, blocks, r < setup.spot.replicas);
      count_state(ReplicaState::serving, +1, blocks);
      serving_ids_.insert(r);
      reindex(replicas_.back());
    }
    for (int64_t r = setup.replicas; r < slots; ++r) replicas_[static_cast<size_t>(r)].set_state(ReplicaState::stopped);
    if (setup.decode_pool) add_decode_pool();
  }

  /// Split pools (kv_transfer.hpp): the replicas so far prefill; the decode pool's follow them.
  void add_decode_pool() {
    const DecodePool& d = *setup_.decode_pool;
    const int64_t prefill = setup_.replicas, blocks = d.kv_cache_tokens / setup_.policy.block_size;
    replicas_.clear();
    by_load_.reset(prefill + d.replicas);
    serving_ids_.clear();
    serving_count_ = live_blocks_ = 0;
    replicas_.reserve(static_cast<size_t>(prefill + d.replicas));
    for (int64_t r = 0; r < prefill + d.replicas; ++r) {
      const bool decode = r >= prefill;
      replicas_.emplace_back(*this, r, decode ? blocks : setup_.kv_cache_tokens / setup_.policy.block_size, false,
                             decode ? ReplicaRole::decode : ReplicaRole::prefill);
      count_state(ReplicaState::serving, +1, replicas_.back().total_blocks());
      if (!decode) serving_ids_.insert(r);
      reindex(replicas_.back());
    }
    decode_resources_ = std::make_unique<IterationResources>(*d.model);
    transfers_ = std::make_unique<KvTransfers>(*this, d, prefill, d.replicas);
    result_.kv_transfer_s.assign(requests_.size(), std::numeric_limits<double>::quiet_NaN());
  }
  Replica& replica(int64_t slot) { return replicas_[static_cast<size_t>(slot)]; }
  /// A prefill replica completed `s`'s prompt (holding its `blocks` KV blocks): the transfer to the decode pool.
  void prefilled(Replica& from, Sequence& s, int64_t blocks) { transfers_->prefilled(from, s, blocks); }

  // Running totals over the replicas, kept as they change, so that a sample, a route or an autoscaler decision
  // costs O(log replicas), not a pass over them (issue 26).
  void count_state(ReplicaState state, int64_t sign, int64_t blocks) {
    if (state == ReplicaState::serving) serving_count_ += sign;
    if (state == ReplicaState::provisioning) provisioning_count_ += sign;
    if (state != ReplicaState::stopped) live_blocks_ += sign * blocks;
  }
  void state_changed(Replica& r, ReplicaState from, ReplicaState to) {
    count_state(from, -1, r.total_blocks());
    count_state(to, +1, r.total_blocks());
    if (from == ReplicaState::serving) serving_ids_.erase(r.id());
    if (to == ReplicaState::serving && r.role() != ReplicaRole::decode) serving_ids_.insert(r.id());
    reindex(r);
  }
  void queues_changed(Replica& r, int64_t waiting_delta, int64_t running_delta) {
    total_waiting_ += waiting_delta;
    total_running_ += running_delta;
    if (waiting_delta + running_delta != 0) reindex(r);
  }
  void blocks_changed(int64_t delta) { used_blocks_ += delta; }
  /// The load index: serving replicas by (outstanding requests, id), the order of the old scans (the fewest
  /// outstanding, the lowest id among equals).
  void reindex(Replica& r) {
    if (!indexed_) return;
    if (r.state() != ReplicaState::serving || r.role() == ReplicaRole::decode) {
      if (r.indexed_outstanding >= 0) by_load_.remove(r.id());
      r.indexed_outstanding = -1;
      return;
    }
    r.indexed_outstanding = r.outstanding();
    by_load_.set(r.id(), r.indexed_outstanding);
  }
  Replica* least_loaded() {
    const int64_t id = by_load_.least();
    return id < 0 ? nullptr : &replicas_[static_cast<size_t>(id)];
  }

  void run() {
    result_.parts.resize(requests_.size());  // filled as the requests are served (Replica::parts)
    for (size_t i = 0; i < requests_.size(); ++i) {
      const ServingRequest& q = requests_[i];
      RequestOutcome& o = result_.requests[i];
      o.arrival_s = q.arrival_s;
      o.prompt_tokens = q.prompt_tokens;
      o.output_tokens = q.output_tokens;
      o.first_token_s = o.finish_s = std::numeric_limits<double>::quiet_NaN();
    }
    // Open loop: every arrival at its time. Closed loop: the first `concurrency` now, each later one when an
    // earlier request leaves (send_next).
    const size_t first = setup_.concurrency > 0
                             ? std::min(requests_.size(), static_cast<size_t>(setup_.concurrency))
                             : requests_.size();
    if (setup_.concurrency > 0) {
      for (size_t i = 0; i < first; ++i) send(i, units::Seconds(0.0));
    } else {
      // Each first turn (a session's later turn is sent when the turn before it ends: left) at its arrival_s,
      // scheduled by the arrival before it under the sequence it would have had scheduled now (send_open).
      size_t turns = 0;
      for (const ServingRequest& q : requests_) turns += q.previous < 0 ? 1 : 0;
      open_sequence_ = sim_.reserve_sequences(turns);
      if (turns > 0) send_open(next_first_turn(0));
    }
    // Spot VMs: each group of replicas that share one (or one replica spanning several) draws its eviction.
    for (int64_t r = 0; r < setup_.spot.replicas; r += group_size()) schedule_eviction(r);
    // The autoscaler's window starts with the fleet at time 0: no scale-down before a window has passed.
    if (setup_.autoscaling) desires_.push_back({0.0, setup_.replicas});
    if (setup_.zones.outage_start_s) {
      sim_.schedule(Time::from_seconds(units::Seconds(*setup_.zones.outage_start_s)), [this] { lose_zone(); });
    }
    if (setup_.autoscaling) sim_.schedule_in(Time::from_seconds(units::Seconds(setup_.autoscaling->interval_s)), [this] { autoscale(); });
    // The first sample runs after the arrivals at time 0 (events at one time run in insertion order), so an
    // offline batch shows its queue.
    sim_.schedule(Time::from_seconds(units::Seconds(0.0)), [this] { sample(); });
    sim_.run();
    check_outcomes();
    result_.fingerprint = sim_.fingerprint();
    if (setup_.autoscaling || setup_.spot.replicas > 0 || setup_.zones.outage_start_s) {
      for (const Replica& r : replicas_) result_.usage.push_back({r.billed_s(result_.makespan_s), r.spot()});
    }
  }

  void send(size_t i, units::Seconds at) {
    result_.requests[i].arrival_s = at.value();
    sim_.schedule(Time::from_seconds(at), [this, i] { arrive(static_cast<int64_t>(i)); });
    ++sent_;
  }

  /// The first request from `i` on that is not a session's later turn (requests_.size(): none).
  [[nodiscard]] size_t next_first_turn(size_t i) const {
    while (i < requests_.size() && requests_[i].previous >= 0) ++i;
    return i;
  }

  /// Open loop: request `i` arrives at its arrival_s, under the next reserved sequence; its arrival sends the next
  /// first turn. The run is the same, event for event, as with every arrival scheduled at the start
  /// (Simulator::reserve_sequences), with a queue of a few events rather than 360,000 (issue 31).
  void send_open(size_t i) {
    result_.requests[i].arrival_s = requests_[i].arrival_s;
    sim_.schedule_reserved(Time::from_seconds(units::Seconds(requests_[i].arrival_s)), open_sequence_++, [this, i] {
      const size_t next = next_first_turn(i + 1);
      if (next < requests_.size()) send_open(next);
      arrive(static_cast<int64_t>(i));
    });
    ++sent_;
  }

  /// Request `index` left the fleet (finished or rejected): in a closed loop its client sends the next one now; a
  /// session's next turn comes after its think time.
  void left(int64_t index) {
    if (setup_.concurrency > 0 && sent_ < requests_.size()) send(sent_, units::Seconds(now_s()));
    if (next_turn_.empty()) return;
    const int64_t next = next_turn_[static_cast<size_t>(index)];
    if (next < 0) return;
    send(static_cast<size_t>(next), units::Seconds(now_s() + requests_[static_cast<size_t>(next)].think_s));
  }

  void arrive(int64_t i) {
    const ServingRequest& q = requests_[static_cast<size_t>(i)];
    Sequence& s = new_sequence();
    s.index = i;
    s.prompt = q.prompt_tokens;
    s.output = q.output_tokens;
    ++arrived_;
    ++unfinished_;
    // A request that can never fit one replica's KV cache (its whole context), or longer than the engine's
    // max_model_len, is rejected on arrival (vLLM refuses it).
    const bool too_long = setup_.max_model_len > 0 && q.prompt_tokens + q.output_tokens > setup_.max_model_len;
    if (too_long ||
        blocks_for(q.prompt_tokens + q.output_tokens, setup_.policy.block_size) > replicas_.back().total_blocks() ||
        blocks_for(q.prompt_tokens, setup_.policy.block_size) > replicas_.front().total_blocks()) {
      result_.requests[static_cast<size_t>(i)].rejected = true;
      --unfinished_;
      left(i);
      recycle(s);
      return;
    }
    if (!fits_iteration(s)) {
      reject_unschedulable(s);
      return;
    }
    route(&s);
  }

  /// Whether `s`'s prompt (after a preemption or eviction, with the tokens to recompute) can ever be scheduled:
  /// without chunked prefill it is computed whole in one iteration of at most max_num_batched_tokens tokens.
  [[nodiscard]] bool fits_iteration(const Sequence& s) const {
    return setup_.policy.chunked_prefill || s.prompt - s.computed <= setup_.policy.max_num_batched_tokens;
  }

  /// Rejects `s`, which can never be scheduled (fits_iteration), as vLLM's scheduler ignores a prompt over its
  /// limit: counted in unschedulable, its first token (if any) forgotten; it holds no KV block.
  void reject_unschedulable(Sequence& s) {
    RequestOutcome& o = outcome(s);
    o.rejected = true;
    o.first_token_s = std::numeric_limits<double>::quiet_NaN();
    ++result_.unschedulable;
    --unfinished_;
    left(s.index);
    recycle(s);
  }

  /// A Sequence for an arriving request: a recycled one (its request gone), reset, or a new one. The requests in
  /// the fleet at once, not all of them, take memory; a recycled one is likely in cache (issue 31).
  Sequence& new_sequence() {
    if (free_sequences_.empty()) return sequence_store_.emplace_back();
    Sequence& s = *free_sequences_.back();
    free_sequences_.pop_back();
    s = Sequence{};
    return s;
  }
  /// `s`'s request left the fleet (finished or rejected): nothing refers to `s` any more; new_sequence reuses it.
  void recycle(Sequence& s) { free_sequences_.push_back(&s); }

  /// The invariant of every run: each request completed, rejected or unserved (waiting at the router with no
  /// replica serving, or never sent by a closed loop's client behind it); none left in a replica's queue or
  /// batch. A violation is a bug of the engine: std::logic_error naming the counts (never a silent result).
  void check_outcomes() const {
    int64_t completed = 0, rejected = 0;
    for (const RequestOutcome& o : result_.requests) {
      if (o.rejected) {
        ++rejected;
      } else if (!std::isnan(o.finish_s)) {
        ++completed;
      }
    }
    const auto total = static_cast<int64_t>(requests_.size());
    const auto unserved = static_cast<int64_t>(unrouted_.size() + (requests_.size() - sent_));
    const int64_t between = transfers_ ? transfers_->in_between() : 0;
    if (total_waiting_ + total_running_ + between == 0 && completed + rejected + unserved == total) return;
    throw std::logic_error("simulate_serving: of " + std::to_string(total) + " requests, " +
                           std::to_string(completed) + " completed, " + std::to_string(rejected) + " rejected, " +
                           std::to_string(unserved) + " unserved, and " +
                           std::to_string(total_waiting_ + total_running_) +
                           " still in a replica's queue or batch when the simulation ended (a stall)");
  }

  /// Sends `s` to a serving replica (round robin, or the fewest outstanding requests); with none serving, it
  /// waits at the router until one is.
  void route(Sequence* s) {
    Replica* target = nullptr;
    if (setup_.routing == Routing::round_robin) {
      // The first serving replica from next_replica_ on, cyclically (the old scan's choice, in O(log replicas));
      // with none serving, next_replica_ stays.
      if (!serving_ids_.empty()) {
        auto it = serving_ids_.lower_bound(next_replica_);
        if (it == serving_ids_.end()) it = serving_ids_.begin();
        target = &replicas_[static_cast<size_t>(*it)];
        next_replica_ = (*it + 1) % static_cast<int64_t>(replicas_.size());
      }
    } else {
      target = setup_.routing == Routing::prefix_aware ? route_prefix_aware(*s) : least_loaded();
    }
    if (target == nullptr) {
      unrouted_.push_back(s);
      return;
    }
    result_.requests[static_cast<size_t>(s->index)].replica = target->id();
    if (setup_.routing == Routing::prefix_aware && request(*s).prefix_id >= 0) {
      last_by_prefix_[request(*s).prefix_id] = target->id();
    }
    target->enqueue(s);
  }

  /// Routing::prefix_aware: of the least outstanding serving replica, the replica the session's previous turn went
  /// to and the last one sent the same system prompt, the one whose prefix cache holds the most of the request's
  /// prompt (SGLang's cache-aware router, docs.sglang.ai "SGLang Router" / lightseekorg/smg
  /// docs/concepts/routing/cache-aware.md; vLLM production-stack's prefix-aware routing), ties to the least
  /// outstanding. As the SGLang router, load wins when the fleet is imbalanced: a cached candidate with more than 64
  /// requests and 1.5 times the least loaded's outstanding is passed over (smg docs/getting-started/load-balancing.md:
  /// --balance-abs-threshold 64, --balance-rel-threshold 1.5, read 2026-11). At most three caches are probed:
  /// O(log replicas + prompt blocks).
  Replica* route_prefix_aware(const Sequence& s) {
    Replica* least = least_loaded();
    if (least == nullptr) return nullptr;
    const ServingRequest& q = request(s);
    Replica* best = least;
    int64_t best_hit = least->cached_prefix_blocks(q, s.index, s.prompt);
    auto consider = [&](int64_t id) {
      if (id < 0) return;
      Replica& c = replicas_[static_cast<size_t>(id)];
      if (&c == best || c.state() != ReplicaState::serving) return;
      const auto load = static_cast<double>(c.outstanding()), low = static_cast<double>(least->outstanding());
      if (load - low > 64.0 && load > 1.5 * low) return;
      const int64_t hit = c.cached_prefix_blocks(q, s.index, s.prompt);
      if (hit > best_hit) {
        best = &c;
        best_hit = hit;
      }
    };
    if (q.previous >= 0) consider(result_.requests[static_cast<size_t>(q.previous)].replica);
    if (q.prefix_id >= 0) {
      const auto it = last_by_prefix_.find(q.prefix_id);
      if (it != last_by_prefix_.end()) consider(it->second);
    }
    return best;
  }

  /// A replica starts serving: the requests waiting at the router go out again.
  void serving(Replica& r) {
    r.set_state(ReplicaState::serving);
    std::deque<Sequence*> waiting;
    waiting.swap(unrouted_);
    for (Sequence* s : waiting) route(s);
  }

  /// Zone 0 is lost: its replicas stop now and their requests go elsewhere; it may return after the outage.
  void lose_zone() {
    zone_down_ = true;
    std::vector<Sequence*> orphans;
    for (Replica& r : replicas_) {
      if (zone_of(r) != 0 || r.state() == ReplicaState::stopped) continue;
      for (Sequence* s : r.evict()) orphans.push_back(s);
    }
    for (Sequence* s : orphans) {
      ++result_.requests[static_cast<size_t>(s->index)].evictions;
      route(s);
    }
    if (!std::isfinite(setup_.zones.outage_duration_s)) return;
    sim_.schedule_in(Time::from_seconds(units::Seconds(setup_.zones.outage_duration_s)), [this] {
      zone_down_ = false;
      if (setup_.autoscaling || work_done()) return;  // an autoscaler starts what it wants
      for (Replica& r : replicas_) {
        if (zone_of(r) == 0 && r.state() == ReplicaState::stopped) provision(r);
      }
    });
  }
  [[nodiscard]] int64_t zone_of(const Replica& r) const { return r.id() % setup_.zones.zones; }

  /// Starts `r` (stopped): serving after the provisioning time; not while its zone is lost.
  void provision(Replica& r) {
    if (zone_down_ && zone_of(r) == 0) return;
    r.set_state(ReplicaState::provisioning);
    sim_.schedule_in(Time::from_seconds(units::Seconds(setup_.provisioning_s)), [this, &r] {
      if (r.state() == ReplicaState::provisioning) serving(r);
    });
  }

  /// A draining replica finished its last request: it stops.
  void drained(Replica& r) { r.set_state(ReplicaState::stopped); }

  // Spot evictions. A group: the replicas of one spot VM, or one replica spanning several VMs.
  [[nodiscard]] int64_t group_size() const { return std::max<int64_t>(1, setup_.spot.replicas_per_vm); }

  void schedule_eviction(int64_t first) {
    if (work_done()) return;
    const double rate_per_s = setup_.spot.eviction_rate_per_hour * static_cast<double>(setup_.spot.vms_per_replica) / 3600.0;
    if (!(rate_per_s > 0)) return;
    const double at = evictions_.exponential_mean(1.0 / rate_per_s);
    const double notice = std::min(setup_.spot.notice_s, at);
    sim_.schedule_in(Time::from_seconds(units::Seconds(at - notice)), [this, first, notice] {
      for_group(first, [](Replica& r) {
        if (r.state() == ReplicaState::serving || r.state() == ReplicaState::provisioning) {
          r.set_state(ReplicaState::draining);
        }
      });
      sim_.schedule_in(Time::from_seconds(units::Seconds(notice)), [this, first] { evict(first); });
    });
  }

  void evict(int64_t first) {
    std::vector<Sequence*> orphans;
    bool live = false;  // a VM that is there (not lost with its zone)
    for_group(first, [&](Replica& r) {
      live = live || !(zone_down_ && zone_of(r) == 0);
      for (Sequence* s : r.evict()) orphans.push_back(s);
    });
    if (live && !work_done()) ++result_.evictions;
    for (Sequence* s : orphans) {
      ++result_.requests[static_cast<size_t>(s->index)].evictions;
      route(s);
    }
    if (work_done()) return;
    // Capacity comes back after the wait for spot capacity, then the replicas provision; the next eviction is
    // drawn from then.
    const double wait = evictions_.exponential_mean(setup_.spot.reprovision_mean_s);
    sim_.schedule_in(Time::from_seconds(units::Seconds(wait)), [this, first] {
      if (work_done()) return;
      for_group(first, [this](Replica& r) { provision(r); });
      sim_.schedule_in(Time::from_seconds(units::Seconds(setup_.provisioning_s)), [this, first] { schedule_eviction(first); });
    });
  }

  template <typename F>
  void for_group(int64_t first, const F& f) {
    const int64_t last = std::min(first + group_size(), setup_.spot.replicas);
    for (int64_t r = first; r < last; ++r) f(replicas_[static_cast<size_t>(r)]);
  }

  /// The autoscaler's step (ServingAutoscaling): the desired count from the outstanding requests, up at once,
  /// down to the highest desire of the stabilization window.
  void autoscale() {
    if (work_done()) return;
    const ServingAutoscaling& a = *setup_.autoscaling;
    if (++decisions_ > kMaxAutoscaleDecisions) {
      throw std::invalid_argument("simulate_serving: the autoscaler made more than " +
                                  std::to_string(kMaxAutoscaleDecisions) +
                                  " decisions (the fleet drains long after the workload): raise the autoscale "
                                  "interval (serving.autoscale_interval_s)");
    }
    const int64_t outstanding = static_cast<int64_t>(unrouted_.size()) + total_waiting_ + total_running_;
    const int64_t current = serving_count_ + provisioning_count_;
    const auto desired = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(static_cast<double>(outstanding) / a.target_outstanding_per_replica)),
        a.min_replicas, a.max_replicas);
    const double now = now_s();
    // The highest desire of the window, from a monotonic queue (each entry above every later one): an entry
    // below a later one can never be the window's highest, so it leaves at once; the front is the highest. O(1)
    // amortised per decision, where a pass over the window cost window / interval (issue 26).
    while (!desires_.empty() && desires_.back().second <= desired) desires_.pop_back();
    desires_.push_back({now, desired});
    while (!desires_.empty() && desires_.front().first < now - a.scale_down_window_s) desires_.pop_front();
    const int64_t down_to = std::max(desired, desires_.front().second);
    if (desired > current) {
      int64_t add = desired - current;
      // A draining replica comes back first (it is warm), then stopped slots provision.
      for (Replica& r : replicas_) {
        if (add > 0 && r.state() == ReplicaState::draining) {
          serving(r);
          --add;
        }
      }
      for (Replica& r : replicas_) {
        if (add > 0 && r.state() == ReplicaState::stopped && !(zone_down_ && zone_of(r) == 0)) {
          provision(r);
          --add;
        }
      }
    } else if (down_to < current) {
      int64_t remove = current - down_to;
      // Provisioning replicas stop first, then the serving ones with the fewest outstanding requests drain.
      for (Replica& r : replicas_) {
        if (remove > 0 && r.state() == ReplicaState::provisioning) {
          r.set_state(ReplicaState::stopped);
          --remove;
        }
      }
      while (remove > 0) {
        Replica* idlest = least_loaded();
        if (idlest == nullptr) break;
        if (idlest->outstanding() == 0) {
          idlest->set_state(ReplicaState::stopped);
        } else {
          idlest->set_state(ReplicaState::draining);
        }
        --remove;
      }
    }
    sim_.schedule_in(Time::from_seconds(units::Seconds(a.interval_s)), [this] { autoscale(); });
  }

  void sample() {
    ServingSample x;
    x.time_s = now_s();
    // A stopped replica holds no block (evicted, drained or stopped idle): the used blocks of all are those of the
    // replicas not stopped.
    const int64_t used = used_blocks_, total = live_blocks_;
    x.waiting = static_cast<int64_t>(unrouted_.size()) + total_waiting_;
    x.running = total_running_;
    x.replicas = serving_count_;
    x.provisioning = provisioning_count_;
    x.kv_occupancy = total > 0 ? static_cast<double>(used) / static_cast<double>(total) : 0.0;
    result_.samples.push_back(x);
    // Sample while work remains (requests still to arrive or unfinished), up to kMaxSamples.
    if (work_done() || result_.samples.size() >= kMaxSamples) return;
    sim_.schedule_in(Time::from_seconds(units::Seconds(setup_.sample_interval_s)), [this] { sample(); });
  }

  [[nodiscard]] bool work_done() const { return arrived_all() && unfinished_ == 0; }

  /// Counts one engine iteration of a replica; throws std::invalid_argument past the setup's
  /// max_engine_iterations.
  void count_iteration() {
    if (++iterations_ > setup_.max_engine_iterations) {
      throw std::invalid_argument("simulate_serving: the engines ran more than " +
                                  std::to_string(setup_.max_engine_iterations) +
                                  " iterations (scheduler steps of all replicas, the run's budget): use fewer "
                                  "replicas, a shorter workload or a larger serving.max_num_batched_tokens");
    }
  }
  [[nodiscard]] bool arrived_all() const { return arrived_ == requests_.size(); }
  [[nodiscard]] double now_s() const { return sim_.now().to_seconds().value(); }
  Simulator& simulator() { return sim_; }
  const ServingSetup& setup() const { return setup_; }
  RequestOutcome& outcome(const Sequence& s) { return result_.requests[static_cast<size_t>(s.index)]; }
  const ServingRequest& request(const Sequence& s) const { return requests_[static_cast<size_t>(s.index)]; }
  const IterationResources& resources() const { return resources_; }
  const IterationResources& resources(ReplicaRole role) const {
    return role == ReplicaRole::decode ? *decode_resources_ : resources_;
  }
  /// The memo of the iteration times of `role`'s model (models::IterationMemo).
  models::IterationMemo& memo(ReplicaRole role) { return role == ReplicaRole::decode ? decode_memo_ : memo_; }
  ServingResult& result() { return result_; }
  /// `s` finished (its replica holds it no more): its request leaves, and `s` is recycled.
  void finished(Sequence& s) {
    --unfinished_;
    result_.makespan_s = std::max(result_.makespan_s, now_s());
    left(s.index);
    if (transfers_) transfers_->retry();  // a decode replica freed blocks
    recycle(s);
  }

 private:
  const ServingSetup& setup_;
  const std::vector<ServingRequest>& requests_;
  ServingResult& result_;
  std::deque<Sequence> sequence_store_;  ///< every Sequence made (stable addresses; new_sequence)
  std::vector<Sequence*> free_sequences_;  ///< of them, those whose request left (recycle)
  std::vector<Replica> replicas_;
  std::deque<Sequence*> unrouted_;  ///< arrived while no replica was serving
  /// The autoscaler's recent (time, desired count), each count above all later ones (a monotonic queue).
  std::deque<std::pair<double, int64_t>> desires_;
  RandomStream evictions_;
  bool zone_down_ = false;  ///< zone 0 lost (ServingZones)
  Simulator sim_;
  int64_t next_replica_ = 0;
  int64_t unfinished_ = 0;
  size_t sent_ = 0;     ///< requests scheduled to arrive
  uint64_t open_sequence_ = 0;  ///< the next first turn's reserved event sequence (open loop, send_open)
  size_t arrived_ = 0;  ///< requests that have arrived
  // Running totals (count_state, queues_changed, blocks_changed) and the load index (reindex).
  int64_t total_waiting_ = 0, total_running_ = 0, used_blocks_ = 0, live_blocks_ = 0;
  int64_t serving_count_ = 0, provisioning_count_ = 0;
  bool indexed_ = false;
  int64_t decisions_ = 0;  ///< the autoscaler's, so far
  int64_t iterations_ = 0;  ///< every replica's engine iterations, so far
  LoadIndex by_load_;  ///< the serving replicas by (outstanding, id) (reindex)
  std::set<int64_t> serving_ids_;  ///< the serving replicas (round robin)
  std::vector<int64_t> next_turn_;  ///< per request, its session's next turn (-1: none); empty without sessions
  std::map<int64_t, int64_t> last_by_prefix_;  ///< prefix_aware: system prompt -> the replica it last went to
  IterationResources resources_;
  std::unique_ptr<IterationResources> decode_resources_;  ///< split pools: the decode pool's model's
  models::IterationMemo memo_, decode_memo_;               ///< the setup's model's, the decode pool's
  std::unique_ptr<KvTransfers> transfers_;                 ///< split pools
};

}  // namespace clustersim::sim::serving_engine
