#include "sim/serving/serving_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/engine/random_stream.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/serving/latency_attribution.hpp"

namespace clustersim::sim {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("simulate_serving: " + what);
}

int64_t blocks_for(int64_t tokens, int64_t block_size) { return (tokens + block_size - 1) / block_size; }

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

/// A request inside a replica.
struct Sequence {
  int64_t index = 0;       ///< into the request list
  int64_t prompt = 0;      ///< tokens to compute before sampling (the prompt; after a preemption, also the
                           ///< tokens it had generated)
  int64_t computed = 0;    ///< of them in the KV cache
  int64_t generated = 0;   ///< output tokens sampled so far
  int64_t output = 0;      ///< output tokens wanted
  int64_t blocks = 0;      ///< KV blocks held
  double kv_mark_s = 0.0;  ///< its replica's KV-wait clock when it joined the queue (Replica::kv_clock_now)
  bool decoding = false;   ///< in every iteration of its replica's decodes since decode_mark (Replica::stop_decoding)
  DecodeClock decode_mark;  ///< its replica's decode clocks when it started decoding
  LatencyParts parts;      ///< where its time went (ServingResult::parts at the end; here, beside the rest)
  [[nodiscard]] bool prefilling() const { return computed < prompt; }
  /// Tokens in the KV cache once the next decode has written its token.
  [[nodiscard]] int64_t cached() const { return computed; }
};

/// What one iteration does to one sequence.
struct Work {
  Sequence* seq;
  int64_t chunk;  ///< prompt tokens computed (0: a decode)
};

class Fleet;

/// A replica's life: provisioning (billed, not serving), serving, draining (no new requests: scaled down or
/// warned of an eviction), stopped (not billed).
enum class ReplicaState { provisioning, serving, draining, stopped };

class Replica {
 public:
  Replica(Fleet& fleet, int64_t id, int64_t total_blocks, bool spot)
      : fleet_(fleet), id_(id), total_blocks_(total_blocks), spot_(spot) {}
  void enqueue(Sequence* s);
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

 private:
  void start_iteration();
  /// Schedules the next iteration into batch_ (decodes, prompt chunks, admissions); false when nothing runs.
  void schedule();
  /// The next iteration of a multi-step block: the running decodes again; false when the block cannot go on.
  bool continue_block();
  /// Finished sequences leave now: their finish time, blocks and place freed (a closed loop sends the next).
  void release(const std::vector<Sequence*>& done);
  void finish_iteration();
  bool grow(Sequence& s, int64_t tokens);
  void free(Sequence& s);
  void preempt_last();
  /// Queue and batch changes, reported to the fleet's running totals and load index.
  void push_waiting(Sequence* s, bool front);
  Sequence* pop_waiting();
  void push_running(Sequence* s);
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
  int64_t used_blocks_ = 0;
  bool busy_ = false;
  uint64_t epoch_ = 0;  ///< bumped by evict(): events of an abandoned iteration do nothing
  ReplicaState state_ = ReplicaState::serving;
  double billed_since_s_ = 0.0;  ///< when the current billing interval started (not stopped)
  std::vector<std::pair<double, double>> billed_;  ///< closed billing intervals [from, to), s
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  ///< in admission order
  std::vector<Work> batch_;
  int64_t block_left_ = 0;  ///< iterations left in the current multi-step block (EnginePolicy::scheduler_steps)
  double started_s_ = 0.0;
  // Latency attribution (issue 29): the current iteration's resource split and token counts, the KV-wait clock.
  ResourceSplit split_;
  int64_t batch_prefill_tokens_ = 0;
  int64_t batch_decodes_ = 0;
  bool kv_blocked_ = false;  ///< the current iteration's admission stopped for want of KV blocks
  double kv_clock_s_ = 0.0;  ///< the KV-wait clock up to the current iteration's start
  DecodeClock decode_clock_;
};

/// Random stream of the spot evictions (the workload uses streams 1-3).
constexpr uint64_t kEvictionStream = 4;

class Fleet {
 public:
  Fleet(const ServingSetup& setup, const std::vector<ServingRequest>& requests, ServingResult& result)
      : setup_(setup), requests_(requests), result_(result), sequences_(requests.size()),
        evictions_(setup.spot.seed, 0, kEvictionStream), resources_(*setup.model) {
    const int64_t blocks = setup.kv_cache_tokens / setup.policy.block_size;
    const int64_t slots = setup.autoscaling ? setup.autoscaling->max_replicas : setup.replicas;
    replicas_.reserve(static_cast<size_t>(slots));  // replicas capture `this` in their events
    indexed_ = setup.routing == Routing::least_outstanding || setup.autoscaling.has_value();
    for (int64_t r = 0; r < slots; ++r) {
      replicas_.emplace_back(*this, r, blocks, r < setup.spot.replicas);
      count_state(ReplicaState::serving, +1, blocks);
      serving_ids_.insert(r);
      reindex(replicas_.back());
    }
    for (int64_t r = setup.replicas; r < slots; ++r) replicas_[static_cast<size_t>(r)].set_state(ReplicaState::stopped);
  }

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
    if (to == ReplicaState::serving) serving_ids_.insert(r.id());
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
    if (r.indexed_outstanding >= 0) by_load_.erase({r.indexed_outstanding, r.id()});
    r.indexed_outstanding = -1;
    if (r.state() != ReplicaState::serving) return;
    r.indexed_outstanding = r.outstanding();
    by_load_.insert({r.indexed_outstanding, r.id()});
  }
  Replica* least_loaded() {
    return by_load_.empty() ? nullptr : &replicas_[static_cast<size_t>(by_load_.begin()->second)];
  }

  void run() {
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
    for (size_t i = 0; i < first; ++i) send(i, units::Seconds(setup_.concurrency > 0 ? 0.0 : requests_[i].arrival_s));
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
    result_.parts.reserve(sequences_.size());
    for (const Sequence& s : sequences_) result_.parts.push_back(s.parts);
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

  /// A request left the fleet (finished or rejected): in a closed loop its client sends the next one now.
  void left() {
    if (setup_.concurrency > 0 && sent_ < requests_.size()) send(sent_, units::Seconds(now_s()));
  }

  void arrive(int64_t i) {
    const ServingRequest& q = requests_[static_cast<size_t>(i)];
    Sequence& s = sequences_[static_cast<size_t>(i)];
    s.index = i;
    s.prompt = q.prompt_tokens;
    s.output = q.output_tokens;
    ++arrived_;
    ++unfinished_;
    // A request that can never fit one replica's KV cache (its whole context), or longer than the engine's
    // max_model_len, is rejected on arrival (vLLM refuses it).
    const bool too_long = setup_.max_model_len > 0 && q.prompt_tokens + q.output_tokens > setup_.max_model_len;
    if (too_long ||
        blocks_for(q.prompt_tokens + q.output_tokens, setup_.policy.block_size) > replicas_.front().total_blocks()) {
      result_.requests[static_cast<size_t>(i)].rejected = true;
      --unfinished_;
      left();
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
    left();
  }

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
    if (total_waiting_ + total_running_ == 0 && completed + rejected + unserved == total) return;
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
      target = least_loaded();
    }
    if (target == nullptr) {
      unrouted_.push_back(s);
      return;
    }
    result_.requests[static_cast<size_t>(s->index)].replica = target->id();
    target->enqueue(s);
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
  const IterationResources& resources() const { return resources_; }
  ServingResult& result() { return result_; }
  void finished() {
    --unfinished_;
    result_.makespan_s = std::max(result_.makespan_s, now_s());
    left();
  }

 private:
  const ServingSetup& setup_;
  const std::vector<ServingRequest>& requests_;
  ServingResult& result_;
  std::vector<Sequence> sequences_;
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
  size_t arrived_ = 0;  ///< requests that have arrived
  // Running totals (count_state, queues_changed, blocks_changed) and the load index (reindex).
  int64_t total_waiting_ = 0, total_running_ = 0, used_blocks_ = 0, live_blocks_ = 0;
  int64_t serving_count_ = 0, provisioning_count_ = 0;
  bool indexed_ = false;
  int64_t decisions_ = 0;  ///< the autoscaler's, so far
  int64_t iterations_ = 0;  ///< every replica's engine iterations, so far
  std::set<std::pair<int64_t, int64_t>> by_load_;
  std::set<int64_t> serving_ids_;  ///< the serving replicas (round robin)
  IterationResources resources_;
};

void Replica::set_state(ReplicaState next) {
  const double now = fleet_.now_s();
  if (state_ == ReplicaState::stopped && next != ReplicaState::stopped) billed_since_s_ = now;
  if (state_ != ReplicaState::stopped && next == ReplicaState::stopped) billed_.emplace_back(billed_since_s_, now);
  const ReplicaState from = state_;
  state_ = next;
  fleet_.state_changed(*this, from, next);
}

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
  if (s.generated == 0) s.parts.kv_wait_s += kv_clock_now() - s.kv_mark_s;
}

void Replica::account_restart(Sequence& s) {
  if (s.generated != 0) return;
  LatencyParts& p = s.parts;
  p.prefill_restart_s += p.prefill_compute_s + p.prefill_memory_s + p.prefill_communication_s + p.prefill_host_s +
                         p.prefill_co_scheduled_s;
  p.prefill_compute_s = p.prefill_memory_s = p.prefill_communication_s = p.prefill_host_s =
      p.prefill_co_scheduled_s = 0.0;
}

void Replica::stop_decoding(Sequence& s) {
  if (!s.decoding) return;
  s.decoding = false;
  LatencyParts& p = s.parts;
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
  for (const Work& w : batch_) {
    Sequence& s = *w.seq;
    LatencyParts& p = s.parts;
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
  push_waiting(s, false);
  // An idle engine starts its next iteration once every arrival of this instant is queued (a later priority
  // at the same time), as a real engine's loop picks up all requests waiting at the start of its step.
  if (!busy_) {
    busy_ = true;
    fleet_.simulator().schedule(
        fleet_.simulator().now(), [this, e = epoch_] { if (e == epoch_) start_iteration(); }, kAfterArrivals);
  }
}

bool Replica::grow(Sequence& s, int64_t tokens) {
  const int64_t need = blocks_for(tokens, fleet_.setup().policy.block_size) - s.blocks;
  if (need <= 0) return true;
  if (used_blocks_ + need > total_blocks_) return false;
  used_blocks_ += need;
  fleet_.blocks_changed(need);
  s.blocks += need;
  return true;
}

void Replica::free(Sequence& s) {
  used_blocks_ -= s.blocks;
  fleet_.blocks_changed(-s.blocks);
  s.blocks = 0;
}

void Replica::preempt_last() {
  Sequence* victim = running_.back();
  erase_running(running_.end() - 1);
  stop_decoding(*victim);
  account_restart(*victim);
  free(*victim);
  // Recompute: the prompt and the tokens generated so far are prefilled again.
  victim->prompt = fleet_.outcome(*victim).prompt_tokens + victim->generated;
  victim->computed = 0;
  ++fleet_.outcome(*victim).preemptions;
  push_waiting(victim, true);
}

bool Replica::continue_block() {
  batch_.clear();
  for (Sequence* s : running_) {
    if (s->prefilling() || !grow(*s, s->computed + 1)) {  // a block decodes only; no block free: schedule
      batch_.clear();
      return false;
    }
    batch_.push_back({s, 0});
  }
  for (const Work& w : batch_) start_decoding(*w.seq);
  return !batch_.empty();
}

void Replica::start_iteration() {
  fleet_.count_iteration();
  const EnginePolicy& policy = fleet_.setup().policy;
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
    // A decode-only iteration opens a multi-step block.
    const bool decode_only = !batch_.empty() && std::all_of(batch_.begin(), batch_.end(), [](const Work& w) {
      return w.chunk == 0;
    });
    if (decode_only) block_left_ = policy.scheduler_steps - 1;
  }
  if (batch_.empty()) {
    busy_ = false;
    kv_blocked_ = false;
    if (state_ == ReplicaState::draining && outstanding() == 0) fleet_.drained(*this);
    return;
  }
  models::IterationBatch b;
  b.scheduled = !in_block;
  for (const Work& w : batch_) {
    if (w.chunk > 0) {
      b.prefill_tokens += w.chunk;
      b.prefill_attention_pairs += models::prefill_attention_pairs(w.seq->computed, w.chunk);
      if (w.seq->computed + w.chunk == w.seq->prompt) ++b.sampled_sequences;
    } else {
      ++b.decode_sequences;
      b.decode_kv_tokens += w.seq->cached();
      ++b.sampled_sequences;
    }
  }
  const models::IterationTime time = fleet_.setup().model->iteration_time(b);
  const units::Seconds duration = time.total();
  split_ = fleet_.resources().split(b, time);
  batch_prefill_tokens_ = b.prefill_tokens;
  batch_decodes_ = b.decode_sequences;
  if (kv_blocked_) ++fleet_.result().kv_limited_iterations;
  busy_ = true;
  started_s_ = fleet_.now_s();
  ++fleet_.result().iterations;
  fleet_.simulator().mix_into_fingerprint(static_cast<uint64_t>(id_));
  fleet_.simulator().schedule_in(Time::from_seconds(duration), [this, e = epoch_] {
    if (e == epoch_) finish_iteration();
  });
}

void Replica::schedule() {
  const EnginePolicy& policy = fleet_.setup().policy;
  batch_.clear();
  kv_blocked_ = false;
  int64_t budget = policy.max_num_batched_tokens;
  // 1. Decodes, oldest first; preempt the newest when the cache is full.
  size_t k = 0;
  for (; k < running_.size() && budget > 0; ++k) {
    Sequence* s = running_[k];
    if (s->prefilling()) continue;
    while (!grow(*s, s->computed + 1)) {
      if (running_.back() == s) {  // s itself is the newest: it waits
        preempt_last();
        s = nullptr;
        break;
      }
      preempt_last();
    }
    if (s == nullptr) break;
    batch_.push_back({s, 0});
    start_decoding(*s);
    --budget;
  }
  // Decodes the token budget left out of this iteration: their decode parts pause (TPOT's remainder).
  for (; budget <= 0 && k < running_.size(); ++k) stop_decoding(*running_[k]);
  // 2. Prompts in progress.
  for (Sequence* s : running_) {
    if (budget <= 0) break;
    if (!s->prefilling()) continue;
    const int64_t chunk = std::min(s->prompt - s->computed, budget);
    batch_.push_back({s, chunk});
    budget -= chunk;
  }
  // 3. Admission, first come first served.
  while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < policy.max_num_seqs) {
    Sequence* s = waiting_.front();
    const int64_t left = s->prompt - s->computed;
    if (!fleet_.fits_iteration(*s)) {  // never schedulable (a preempted prompt grown past the budget): rejected
      pop_waiting();
      fleet_.reject_unschedulable(*s);
      continue;
    }
    if (!policy.chunked_prefill && left > budget) break;
    // max_utilization: the prompt and the first output token's slot; guaranteed_no_evict: every token it will
    // hold, so that its decodes never need a block (a request is never preempted under it).
    const int64_t reserve = policy.admission == models::CapacityPolicy::guaranteed_no_evict
                                ? fleet_.outcome(*s).prompt_tokens + s->output
                                : s->prompt + 1;
    if (!grow(*s, reserve)) {
      kv_blocked_ = true;
      break;
    }
    pop_waiting();
    push_running(s);
    const int64_t chunk = std::min(left, budget);
    batch_.push_back({s, chunk});
    budget -= chunk;
  }
}

void Replica::finish_iteration() {
  const double now = fleet_.now_s();
  fleet_.result().busy_s += now - started_s_;
  attribute_iteration(now - started_s_);
  if (kv_blocked_) kv_clock_s_ += now - started_s_;
  kv_blocked_ = false;
  std::vector<Sequence*> done;
  for (const Work& w : batch_) {
    Sequence& s = *w.seq;
    if (w.chunk > 0) {
      s.computed += w.chunk;
      if (s.computed < s.prompt) continue;  // more of the prompt next iteration
    } else {
      ++s.computed;  // the decoded token's K and V
    }
    // A completed prompt or a decode samples one token.
    ++s.generated;
    RequestOutcome& o = fleet_.outcome(s);
    if (s.generated == 1) o.first_token_s = now;
    // Inside a multi-step block a finished sequence decodes on to the block's end, which returns its tokens.
    if (s.generated >= s.output && block_left_ == 0) done.push_back(&s);
  }
  release(done);
  start_iteration();
}

void Replica::release(const std::vector<Sequence*>& done) {
  const double now = fleet_.now_s();
  for (Sequence* s : done) {
    stop_decoding(*s);
    fleet_.outcome(*s).finish_s = now;
    free(*s);
    erase_running(std::find(running_.begin(), running_.end(), s));
    fleet_.finished();
  }
}

}  // namespace

ServingResult simulate_serving(const ServingSetup& setup, const std::vector<ServingRequest>& requests) {
  require(setup.model != nullptr, "no inference model");
  require(setup.replicas >= 1, "replicas must be >= 1");
  const EnginePolicy& p = setup.policy;
  require(p.max_num_seqs >= 1 && p.max_num_batched_tokens >= 1 && p.block_size >= 1 && p.scheduler_steps >= 1,
          "max_num_seqs, max_num_batched_tokens, block_size and scheduler_steps must be >= 1");
  require(setup.kv_cache_tokens >= p.block_size, "the KV cache holds less than one block");
  require(setup.sample_interval_s > 0, "the sample interval must be positive");
  require(setup.max_model_len >= 0, "max_model_len must be >= 0");
  require(setup.concurrency >= 0, "concurrency must be >= 0");
  require(setup.provisioning_s >= 0 && std::isfinite(setup.provisioning_s), "the provisioning time must be >= 0");
  if (setup.autoscaling) {
    const ServingAutoscaling& a = *setup.autoscaling;
    require(a.min_replicas >= 1 && a.min_replicas <= setup.replicas && setup.replicas <= a.max_replicas,
            "autoscaling needs 1 <= min_replicas <= replicas <= max_replicas");
    require(a.target_outstanding_per_replica > 0 && a.interval_s > 0 && a.scale_down_window_s >= 0,
            "autoscaling needs a positive target and interval and a non-negative window");
  }
  const SpotReplicas& spot = setup.spot;
  require(spot.replicas >= 0 && spot.replicas <= setup.replicas, "spot replicas must be in [0, replicas]");
  require(spot.replicas == 0 || !setup.autoscaling, "spot replicas with autoscaling are not modelled");
  require(spot.replicas_per_vm >= 1 && spot.vms_per_replica >= 1, "spot grouping must be >= 1");
  require(spot.eviction_rate_per_hour >= 0 && spot.reprovision_mean_s >= 0 && spot.notice_s >= 0,
          "spot rates and times must be >= 0");
  const int64_t slots = setup.autoscaling ? setup.autoscaling->max_replicas : setup.replicas;
  require(setup.zones.zones >= 1 && setup.zones.zones <= slots, "zones must be in [1, replica slots]");
  require(!setup.zones.outage_start_s || (*setup.zones.outage_start_s >= 0 && setup.zones.outage_duration_s > 0),
          "a zone outage needs a start >= 0 and a positive duration");
  for (size_t i = 0; i < requests.size(); ++i) {
    const ServingRequest& q = requests[i];
    require(q.prompt_tokens >= 1 && q.output_tokens >= 1, "request " + std::to_string(i) +
                                                              ": prompt and output must be >= 1 token");
    require(std::isfinite(q.arrival_s) && q.arrival_s >= 0, "request " + std::to_string(i) + ": bad arrival time");
    require(setup.concurrency > 0 || i == 0 || q.arrival_s >= requests[i - 1].arrival_s,
            "arrival times must be ascending");
  }
  ServingResult result;
  result.requests.resize(requests.size());
  Fleet fleet(setup, requests, result);
  fleet.run();
  return result;
}

}  // namespace clustersim::sim
