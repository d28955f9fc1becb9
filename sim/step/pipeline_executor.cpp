#include "sim/step/pipeline_executor.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/engine/simulator.hpp"
#include "sim/engine/time.hpp"
#include "sim/step/executor_buffers.hpp"
#include "sim/step/order_check.hpp"
#include "sim/step/step_timeline.hpp"

namespace clustersim::sim {

namespace {

using models::PassKind;
using executor_detail::DependencyScratch;
using executor_detail::kParts;
using executor_detail::TimelineBuffers;
using executor_detail::UnitPlan;
using executor_detail::UnitRun;
using executor_detail::dependency_scratch;
using executor_detail::timeline_buffers;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct StageState {
  size_t next = 0;  ///< index of the next pass in the stage's order
  bool busy = false;
  bool finished = false;
  Time finish = Time::zero();
  Time tail_reached = Time::zero();
  TailRun tail;  ///< the tail's times (the critical path's)
  StageBreakdown breakdown;
};

class Executor {
  /// One gradient reduction of a stage: attached to the pass at `trigger` in the stage's order.
  struct Reduction {
    size_t trigger = 0;
    Time duration;
    int64_t buckets = 1;
    size_t reached = 0;  ///< replicas that have started the trigger pass
    Time latest_start;
    Time latest_end;
  };

 public:
  /// `free_transfers`: run the program as if its pipeline transfers took no time (the reference run that
  /// measures their exposed cost), without copying it.
  /// `critical_path`: record each pass's times and walk the step's critical path (PipelineResult::critical_path).
  /// `reference`: without the engine, compute the free-transfer reference run's times alongside the step, in
  /// the same dependency pass (reference_step_time); ignored with the engine or with free transfers.
  Executor(const models::StepProgram& program, const ExecutionFidelity& fidelity, bool record,
           bool free_transfers = false, bool critical_path = true, bool reference = false)
      : program_(program),
        ranks_(program.stages.size()),
        chunks_(static_cast<size_t>(program.virtual_stages)),
        microbatches_(static_cast<size_t>(program.microbatches)),
        replicas_(static_cast<size_t>(fidelity.replicas)),
        record_(record),
        path_(critical_path && !free_transfers),
        engine_(record),
        reference_(reference && !record && !free_transfers) {
    if (chunks_ < 1) throw std::invalid_argument("pipeline executor: virtual_stages must be >= 1");
    if (fidelity.replicas < 1) throw std::invalid_argument("pipeline executor: replicas must be >= 1");
    slowdown_ = fidelity.slowdown.empty() ? std::vector<double>(ranks_ * replicas_, 1.0) : fidelity.slowdown;
    if (slowdown_.size() != ranks_ * replicas_) {
      throw std::invalid_argument("pipeline executor: slowdown needs stages x replicas entries");
    }
    compute_slowdown_ =
        fidelity.compute_slowdown.empty() ? std::vector<double>(ranks_ * replicas_, 1.0) : fidelity.compute_slowdown;
    if (compute_slowdown_.size() != ranks_ * replicas_) {
      throw std::invalid_argument("pipeline executor: compute_slowdown needs stages x replicas entries");
    }
    for (const auto* factors : {&slowdown_, &compute_slowdown_}) {
      for (double f : *factors) {
        if (!(f > 0.0)) throw std::invalid_argument("pipeline executor: slowdown factors must be > 0");
      }
    }
    states_.resize(ranks_ * replicas_);
    // The timeline's buffers of the previous run on this thread (timeline_buffers), their capacity reused.
    TimelineBuffers& buffers = timeline_buffers();
    if (path_) {
      // Each pass's run is written before it is read (every pass runs, or run() throws on the deadlock), so
      // what an entry held before is never read: resized, not cleared.
      passes_ = std::move(buffers.passes);
      passes_.resize(states_.size());
      for (size_t u = 0; u < states_.size(); ++u) passes_[u].resize(program.stages[u / replicas_].order.size());
    }
    const size_t slots = ranks_ * chunks_ * replicas_;
    if (path_) {  // handed back after the critical path (run()); a run without one keeps its own
      forward_arrival_ = std::move(buffers.forward_arrival);
      backward_arrival_ = std::move(buffers.backward_arrival);
    }
    forward_arrival_.assign(slots * microbatches_, kNever);
    backward_arrival_.assign(slots * microbatches_, kNever);
    if (path_) {
      // Uninitialised: an entry is written where an arrival is, and read only there.
      sender_.reset(new uint32_t[2 * slots * microbatches_]);
      busy_ns_.assign(states_.size(), 0);
    }
    // The first virtual stage's inputs (slots 0 .. replicas - 1) are there from the start.
    std::fill(forward_arrival_.begin(), forward_arrival_.begin() + static_cast<std::ptrdiff_t>(replicas_ * microbatches_), 0);
    tail_waiting_.assign(ranks_, 0);
    // The orders checked before on this thread (a search builds the same ones again), with their results.
    thread_local CheckedOrders checked;
    std::vector<uint8_t> seen;  // check_stage_order's scratch, one buffer for every stage
    last_backward_.reserve(ranks_ * chunks_);
    for (size_t k = 0; k < ranks_; ++k) {
      const auto& stage = program.stages[k];
      if (stage.forward.size() != chunks_ || stage.backward.size() != chunks_) {
        throw std::invalid_argument("pipeline executor: stage " + std::to_string(k) + " must cost each of its " +
                                    std::to_string(chunks_) + " chunks");
      }
      if (stage.order.size() > std::numeric_limits<uint32_t>::max()) {  // sender_ holds 32-bit indices
        throw std::invalid_argument("pipeline executor: stage " + std::to_string(k) + " has over 2^32 passes");
      }
      // Checked, and each chunk's last backward found (plan_reductions), in one sweep of the order (or
      // remembered from an equal order checked before).
      const size_t* const last_backward = checked.last_backward(stage.order, chunks_, microbatches_, k, seen);
      last_backward_.insert(last_backward_.end(), last_backward, last_backward + chunks_);
    }
    // Pass durations in engine time, converted once: [((unit * chunks + chunk) * 2 + (forward ? 0 : 1)) * 2 +
    // (merged ? 1 : 0)], merged: the pass runs merged with its 1F1B neighbour (StageProgram::forward_paired).
    pass_time_.resize(states_.size() * chunks_ * 4);
    for (size_t u = 0; u < states_.size(); ++u) {
      const auto& stage = program.stages[u / replicas_];
      for (size_t c = 0; c < chunks_; ++c) {
        for (int merged = 0; merged < 2; ++merged) {
          pass_time_[((u * chunks_ + c) * 2) * 2 + merged] = pass_duration(cost_of(stage, c, true, merged != 0), u);
          pass_time_[((u * chunks_ + c) * 2 + 1) * 2 + merged] =
              pass_duration(cost_of(stage, c, false, merged != 0), u);
        }
      }
    }
    if (!free_transfers) {
      p2p_forward_ = Time::from_seconds(program.p2p_forward);
      p2p_backward_ = Time::from_seconds(program.p2p_backward);
    }
    plan_reductions();
    if (reference_) {
      ref_reductions_ = reductions_;
      ref_dp_stream_free_ = dp_stream_free_;
      ref_tail_reached_.assign(states_.size(), Time::zero());
      ref_finish_.assign(states_.size(), Time::zero());
    }
  }

  /// The step time of the free-transfer reference run, computed alongside the step by run() (constructed with
  /// `reference`): the times the separate Executor(program, fidelity, false, true) gives, bit for bit.
  units::Seconds reference_step_time() const {
    Time end = Time::zero();
    for (const Time finish : ref_finish_) end = std::max(end, finish);
    return end.to_seconds();
  }

  PipelineResult run() {
    if (engine_) {
      for (size_t u = 0; u < states_.size(); ++u) try_start(u);
      sim_.run();
    } else if (reference_) {
      if (path_) {
        run_in_dependency_order<true, true>();
      } else {
        run_in_dependency_order<true, false>();
      }
    } else if (path_) {
      run_in_dependency_order<false, true>();
    } else {
      run_in_dependency_order<false, false>();
    }
    PipelineResult result;
    result.replicas = static_cast<int64_t>(replicas_);
    Time end = Time::zero();
    std::vector<size_t> slowest(ranks_, 0);  // per stage, the replica that finishes last
    for (size_t u = 0; u < states_.size(); ++u) {
      const size_t k = u / replicas_;
      if (states_[u].next != program_.stages[k].order.size() || !states_[u].finished) {
        throw std::logic_error("pipeline executor: stage " + std::to_string(k) + " deadlocked");
      }
      end = std::max(end, states_[u].finish);
      const size_t current = k * replicas_ + slowest[k];
      if (states_[u].finish > states_[current].finish ||
          (states_[u].finish == states_[current].finish &&
           states_[u].breakdown.compute > states_[current].breakdown.compute)) {
        slowest[k] = u % replicas_;
      }
    }
    result.step_time = end.to_seconds();
    for (size_t k = 0; k < ranks_; ++k) {
      const StageState& st = states_[k * replicas_ + slowest[k]];
      StageBreakdown b = st.breakdown;
      b.finish = st.finish.to_seconds();
      // Everything that is not work is idle: split by execute_pipeline's attribution.
      b.bubble =
          result.step_time - (b.compute + b.tp_comm + b.cp_comm + b.ep_comm + b.host + b.grad_sync + b.optimizer);
      result.stages.push_back(b);
    }
    for (size_t k = 0; k < ranks_; ++k) {
      if (result.stages[k].finish == result.step_time) {
        result.critical_stage = static_cast<int64_t>(k);  // the first (lowest index) of those finishing last
        break;
      }
    }
    sort_spans(spans_, ranks_);
    result.spans = std::move(spans_);
    result.events = sim_.events_executed();
    result.fingerprint = sim_.fingerprint();
    if (path_) {
      StepTimeline timeline;
      timeline.program = &program_;
      timeline.replicas = replicas_;
      timeline.passes = std::move(passes_);
      timeline.tails.reserve(states_.size());
      for (const StageState& st : states_) timeline.tails.push_back(st.tail);
      timeline.forward_arrival = std::move(forward_arrival_);
      timeline.backward_arrival = std::move(backward_arrival_);
      timeline.sender = std::move(sender_);
      timeline.busy_ns = std::move(busy_ns_);
      // Moved, not copied: run() is the executor's last use of them (reference_step_time reads ref_finish_ only).
      timeline.slowdown = std::move(slowdown_);
      timeline.compute_slowdown = std::move(compute_slowdown_);
      result.critical_path = critical_path_of(timeline, end.ns());
      // Handed back for the next run on this thread (their contents are rewritten there before being read).
      TimelineBuffers& buffers = timeline_buffers();
      buffers.passes = std::move(timeline.passes);
      buffers.forward_arrival = std::move(timeline.forward_arrival);
      buffers.backward_arrival = std::move(timeline.backward_arrival);
    }
    return result;
  }

 private:
  /// The gradient reductions of each stage: one per model chunk (or one for the whole stage), each attached to
  /// the chunk's last backward pass in the stage's order.
  void plan_reductions() {
    reductions_.resize(ranks_);
    triggers_.resize(ranks_);
    dp_stream_free_.assign(ranks_, Time::zero());
    total_sync_.assign(ranks_, Time::zero());
    for (size_t k = 0; k < ranks_; ++k) {
      const auto& stage = program_.stages[k];
      // Per chunk, the index of its last backward in the order (check_stage_order's); the stage's last backward
      // is the latest of them.
      const size_t* const last_backward = last_backward_.data() + k * chunks_;
      const size_t final_backward = *std::max_element(last_backward, last_backward + chunks_);
      auto& plan = reductions_[k];
      if (stage.chunk_grad_sync.empty()) {
        plan.push_back(Reduction{final_backward, Time::from_seconds(stage.grad_sync), stage.grad_buckets, 0, {}, {}});
      } else {
        if (stage.chunk_grad_sync.size() != chunks_ || stage.chunk_grad_buckets.size() != chunks_) {
          throw std::invalid_argument("pipeline executor: stage " + std::to_string(k) +
                                      " must give a gradient reduction and bucket count per chunk, or none");
        }
        for (size_t c = 0; c < chunks_; ++c) {
          plan.push_back(Reduction{last_backward[c], Time::from_seconds(stage.chunk_grad_sync[c]),
                                   std::max<int64_t>(1, stage.chunk_grad_buckets[c]), 0, {}, {}});
        }
      }
      for (const Reduction& r : plan) total_sync_[k] += r.duration;
      // The passes at which note_reduction_trigger does anything, in order: the dependency loop calls it there
      // only (it returns at once elsewhere).
      std::vector<size_t>& triggers = triggers_[k];
      if (stage.overlap_grad_sync) {
        for (const Reduction& r : plan) {
          if (r.duration != Time::zero()) triggers.push_back(r.trigger);
        }
        std::sort(triggers.begin(), triggers.end());
        triggers.erase(std::unique(triggers.begin(), triggers.end()), triggers.end());
      }
    }
  }

  /// Stage k's pass at `index` of its order started at `start` and runs to `end` on one replica. If it is the
  /// last backward of a chunk and the reduction overlaps backward, its buckets are reduced on the stage's
  /// data-parallel stream once every replica has started it: from then (after earlier reductions), ending
  /// no sooner than one bucket's reduction after the pass ends (the last bucket is ready at the pass's end).
  /// `reductions`, `dp_stream_free`: the run's (the step's, or the fused reference run's: no spans).
  void note_reduction_trigger(size_t k, size_t index, Time start, Time end,
                              std::vector<std::vector<Reduction>>& reductions, std::vector<Time>& dp_stream_free,
                              bool record) {
    if (!program_.stages[k].overlap_grad_sync) return;
    for (Reduction& r : reductions[k]) {
      if (r.trigger != index || r.duration == Time::zero()) continue;
      r.latest_start = std::max(r.latest_start, start);
      r.latest_end = std::max(r.latest_end, end);
      if (++r.reached < replicas_) continue;
      const Time begin = std::max(dp_stream_free[k], r.latest_start);
      const Time last_bucket = Time::from_ns((r.duration.ns() + r.buckets - 1) / r.buckets);
      const Time finish = std::max(begin + r.duration, r.latest_end + last_bucket);
      dp_stream_free[k] = finish;
      if (record) {
        spans_.push_back({static_cast<int64_t>(k), 0, -1, SpanKind::grad_sync, begin.to_seconds(),
                          finish.to_seconds(), {}, {}, {}});
      }
    }
  }

  /// A pass's duration on unit `u`: its compute at the unit's compute pace, the rest as costed, all of it at
  /// the unit's pace. Without a compute factor (1) exactly cost.total() x slowdown.
  Time pass_duration(const models::PassCost& cost, size_t u) const {
    units::Seconds t = cost.total();
    if (compute_slowdown_[u] != 1.0) t += cost.compute * (compute_slowdown_[u] - 1.0);
    return Time::from_seconds(t * slowdown_[u]);
  }

  /// The cost of chunk `c`'s pass in this direction, merged with its 1F1B neighbour or not (the merged costs
  /// exist only with moe_a2a_overlap).
  static const models::PassCost& cost_of(const models::StageProgram& stage, size_t c, bool forward, bool merged) {
    if (merged && !stage.forward_paired.empty()) return forward ? stage.forward_paired[c] : stage.backward_paired[c];
    return forward ? stage.forward[c] : stage.backward[c];
  }

  size_t virtual_stage(size_t rank, int64_t chunk) const { return static_cast<size_t>(chunk) * ranks_ + rank; }
  /// Arrival slot of (virtual stage, replica).
  size_t slot(size_t vs, size_t replica) const { return vs * replicas_ + replica; }

  /// `u` = stage * replicas + replica: one tensor-parallel group's timeline.
  void try_start(size_t u) {
    StageState& s = states_[u];
    const size_t k = u / replicas_;
    const auto& stage = program_.stages[k];
    if (s.busy || s.next >= stage.order.size()) return;
    const int64_t arrival = input_arrival(u);
    if (arrival == kNever || arrival > sim_.now().ns()) return;  // an arrival event will call again
    Time duration;
    const Time end = begin_pass(u, k, u % replicas_, sim_.now(), duration);
    // Captures fit std::function's small buffer (16 bytes): no allocation per event.
    const uint64_t packed = static_cast<uint64_t>(u) << 32 | static_cast<uint64_t>(s.next - 1);
    sim_.schedule(end, [this, packed] {
      const auto unit = static_cast<size_t>(packed >> 32);
      const auto index = static_cast<size_t>(packed & 0xffffffffu);
      on_pass_done(unit, index, program_.stages[unit / replicas_].order[index]);
    });
  }

  /// When the input of unit u's next pass is present (ns), kNever while it is not.
  int64_t input_arrival(size_t u) const {
    const size_t k = u / replicas_, replica = u % replicas_;
    const models::ScheduledPass& pass = program_.stages[k].order[states_[u].next];
    const size_t vs = slot(virtual_stage(k, pass.chunk), replica);
    const auto i = static_cast<size_t>(pass.microbatch);
    return pass.kind == PassKind::forward ? forward_arrival_[vs * microbatches_ + i]
                                          : backward_arrival_[vs * microbatches_ + i];
  }

  /// Starts unit u's next pass at `start` (its stream free and its input present): notes a reduction trigger,
  /// records its run and span (its costs are booked with the unit's tail: book_passes). Returns when it ends.
  /// `k`, `replica`: u's stage and replica (u / replicas, u % replicas), which the callers know already.
  /// `duration`: set to the pass's duration (the fused reference run's pass lasts as long).
  [[gnu::always_inline]] Time begin_pass(size_t u, size_t k, size_t replica, Time start, Time& duration) {
    StageState& s = states_[u];
    const auto& stage = program_.stages[k];
    const models::ScheduledPass pass = stage.order[s.next];
    const bool forward = pass.kind == PassKind::forward;
    const auto chunk = static_cast<size_t>(pass.chunk);
    const double slow = slowdown_[u];
    // In the steady state of 1F1B a forward followed by a backward (and that backward) run merged when the
    // program has merged costs (moe_a2a_overlap).
    const bool merged = forward ? s.next + 1 < stage.order.size() && stage.order[s.next + 1].kind == PassKind::backward
                                : s.next > 0 && stage.order[s.next - 1].kind == PassKind::forward;
    s.busy = true;
    ++s.next;
    duration = pass_time_[((u * chunks_ + chunk) * 2 + (forward ? 0 : 1)) * 2 + (merged ? 1 : 0)];
    const Time end = start + duration;
    if (!forward) note_reduction_trigger(k, s.next - 1, start, end, reductions_, dp_stream_free_, record_);
    if (path_) passes_[u][s.next - 1] = PassRun{start.ns(), end.ns(), end.ns(), merged};
    if (record_ && replica == 0) record_pass_span(k, pass, merged, slow, start, end);
    return end;
  }

  /// The span of stage k's pass (replica 0) that ran from `start` to `end` at pace `slow`. Out of line: the
  /// runs that record no spans (a sweep's) keep begin_pass small.
  [[gnu::noinline]] void record_pass_span(size_t k, const models::ScheduledPass& pass, bool merged, double slow,
                                          Time start, Time end) {
    const bool forward = pass.kind == PassKind::forward;
    const models::PassCost& cost = cost_of(program_.stages[k], static_cast<size_t>(pass.chunk), forward, merged);
    spans_.push_back({static_cast<int64_t>(k), pass.chunk, pass.microbatch,
                      forward ? SpanKind::forward : SpanKind::backward, start.to_seconds(), end.to_seconds(),
                      cost.tp_comm * slow, cost.cp_comm * slow, cost.ep_comm * slow});
  }

  /// The timeline without the engine: every pass starts at max(its stream free, its input present), the rule
  /// the events follow (a stream tries its next pass when it goes on and when an input arrives; the times do
  /// not depend on the order of equal-time events), evaluated unit by unit as far as the inputs are known.
  /// Each unit's passes (and so its breakdown's sums) run in its order, and a stage's reductions complete in
  /// trigger order (every replica starts a chunk's last backward before the next chunk's), so the times,
  /// breakdowns and critical path are those of the events, bit for bit. No events: PipelineResult::events and
  /// fingerprint stay 0.
  /// `kReference`: also compute the free-transfer reference run's times (reference_step_time). Its traversal
  /// is this one: which inputs are present does not depend on the times, and with free transfers no send
  /// blocks, so each of its passes starts at max(its stream free, its input present) in its own times, with
  /// the arithmetic of the separate run, in the same order.
  template <bool kReference, bool kPath>
  void run_in_dependency_order() {
    DependencyScratch& scratch = dependency_scratch();
    const size_t units = states_.size();
    std::vector<size_t>& ready = scratch.ready;
    ready.resize(units);
    for (size_t u = 0; u < units; ++u) ready[u] = units - 1 - u;  // unit 0 first
    // The reference run's arrival times. Left uninitialised (no fill per point): an entry is read only where the
    // step's is present, and the reference writes its own wherever the step writes one, but for the first
    // virtual stage's inputs, present from the start (slots 0 .. replicas - 1, set here).
    const size_t entries = forward_arrival_.size();
    if constexpr (kReference) {
      if (scratch.ref_arrivals.size() < 2 * entries) scratch.ref_arrivals.resize(2 * entries);
    }
    int64_t* const ref_forward_arrival = kReference ? scratch.ref_arrivals.data() : nullptr;
    int64_t* const ref_backward_arrival = kReference ? scratch.ref_arrivals.data() + entries : nullptr;
    if constexpr (kReference) std::fill(ref_forward_arrival, ref_forward_arrival + replicas_ * microbatches_, 0);
    // Per unit, the arrival entry its next pass waits for (kForwardEntry marks forward_arrival_'s), or
    // kNotWaiting: a transfer wakes its receiver only when that is the entry it waits for (a unit that waits
    // for another input would find it absent and stop again; an entry written before its receiver needs it is
    // read when the receiver gets there). A unit is in `ready` only once at a time: it is pushed when woken,
    // which clears its wait.
    constexpr size_t kNotWaiting = std::numeric_limits<size_t>::max();
    constexpr size_t kForwardEntry = size_t{1} << (std::numeric_limits<size_t>::digits - 1);
    constexpr size_t kNone = std::numeric_limits<size_t>::max();
    // Loop invariants held in locals: the stores into the arrival arrays (int64_t) could otherwise alias the
    // size_t members and force their reloads on every pass.
    const size_t ranks = ranks_, replicas = replicas_, microbatches = microbatches_, chunks = chunks_;
    const size_t stride = replicas * microbatches;  // entries per virtual stage
    const size_t chunk_stride = ranks * stride;     // entries per chunk (ranks virtual stages)
    // Per unit, what its passes need that does not change during the run, derived once (not at each of the
    // unit's resumptions, about one per three passes), and its progress (UnitRun).
    std::vector<UnitPlan>& plans = scratch.plans;
    std::vector<UnitRun>& runs_of = scratch.runs;
    plans.resize(units);
    runs_of.resize(units);
    for (size_t u = 0; u < units; ++u) {
      const size_t k = u / replicas, replica = u % replicas;
      const models::StageProgram& stage = program_.stages[k];
      UnitPlan& plan = plans[u];
      plan.passes = stage.order.data();
      plan.n = stage.order.size();
      plan.runs = kPath ? passes_[u].data() : nullptr;
      plan.durations = pass_time_.data() + u * chunks * 4;  // [(chunk * 2 + dir) * 2 + merged]
      plan.triggers = triggers_[k].data();
      plan.trigger_count = triggers_[k].size();
      // The units that receive this one's transfers: the next and the previous rank's (virtual stage vs + 1
      // and vs - 1 sit on rank (k + 1) % ranks and (k - 1) % ranks), same replica.
      plan.next_unit = (k + 1 == ranks ? 0 : k + 1) * replicas + replica;
      plan.previous_unit = (k == 0 ? ranks - 1 : k - 1) * replicas + replica;
      // Entry of (chunk, microbatch i) for this unit: ((chunk x ranks + k) x replicas + replica) x microbatches
      // + i, that is chunk x chunk_stride + unit_base + i. Its forward sends on unless it is the last virtual
      // stage (the last rank's last chunk); its backward unless it is the first (rank 0's chunk 0).
      plan.unit_base = (k * replicas + replica) * microbatches;
      plan.last_chunk = k + 1 == ranks ? chunks - 1 : kNone;
      plan.first_chunk = k == 0 ? 0 : kNone;
      plan.stage = k;
      plan.paired = !stage.forward_paired.empty();  // merged costs (moe_a2a_overlap)
      UnitRun& run = runs_of[u];
      run.next = 0;
      run.cursor = 0;
      run.trigger_at = plan.trigger_count > 0 ? plan.triggers[0] : kNone;
      run.waiting = kNotWaiting;
      run.free = Time::zero();
      run.ref_free = Time::zero();
      std::fill(run.sums, run.sums + kParts, 0.0);  // the breakdown's parts are zero until booked
      run.busy = 0;
    }
    if constexpr (kPath) {
      const size_t table = chunks * 4 * kParts;
      if (scratch.costs.size() < units * table) scratch.costs.resize(units * table);
      for (size_t u = 0; u < units; ++u) {
        fill_cost_table(u, scratch.costs.data() + u * table);
        runs_of[u].costs = scratch.costs.data() + u * table;
      }
    }
    UnitRun* const unit_runs = runs_of.data();
    if constexpr (kPath) unit_runs_ = unit_runs;  // start_tail books each unit's sums
    const auto wake = [&](size_t receiver, size_t entry) {
      if (unit_runs[receiver].waiting != entry) return;
      unit_runs[receiver].waiting = kNotWaiting;
      ready.push_back(receiver);
    };
    int64_t* const forward_arrival = forward_arrival_.data();
    int64_t* const backward_arrival = backward_arrival_.data();
    // Who sent each arrival (index in the sender's order; the backward half after `entries`), for the critical
    // path; without it (no critical path) a scratch slot takes the notes.
    uint32_t scratch_sender = 0;
    uint32_t* const forward_sender = kPath ? sender_.get() : &scratch_sender;
    uint32_t* const backward_sender = kPath ? sender_.get() + entries : &scratch_sender;
    const size_t sender_mask = kPath ? ~size_t{0} : 0;  // every note to the scratch slot without a path
    const Time p2p_forward = p2p_forward_, p2p_backward = p2p_backward_;
    const bool block_forward = sends_block(true), block_backward = sends_block(false);
    while (!ready.empty()) {
      const size_t u = ready.back();
      ready.pop_back();
      const UnitPlan& plan = plans[u];
      UnitRun& run = unit_runs[u];
      const size_t n = plan.n;
      size_t next = run.next;
      if (next == n) continue;  // its stream is done (it reached its tail)
      PassRun* const runs = plan.runs;
      const models::ScheduledPass* const passes = plan.passes;
      // The plan's other fields, and the unit's next reduction trigger (run.trigger_at), are read where used:
      // copied into locals at each resumption they would only be spilled (measured: 12 M instructions more).
      Time free = run.free;
      Time ref_free = run.ref_free;
      // Its passes' parts and durations summed so far (book_passes' sums, pass by pass in its order).
      // Held in scalars (registers across the loop; an array would live in memory): the pad lane is not summed.
      double s0 = run.sums[0], s1 = run.sums[1], s2 = run.sums[2], s3 = run.sums[3], s4 = run.sums[4];
      double s5 = run.sums[5], s6 = run.sums[6], s7 = run.sums[7], s8 = run.sums[8];
      int64_t busy = run.busy;
      while (next < n) {
        const models::ScheduledPass pass = passes[next];
        const bool forward = pass.kind == PassKind::forward;
        const auto chunk = static_cast<size_t>(pass.chunk);
        const size_t entry = chunk * chunk_stride + plan.unit_base + static_cast<size_t>(pass.microbatch);
        const int64_t arrival = forward ? forward_arrival[entry] : backward_arrival[entry];
        if (arrival == kNever) {
          run.waiting = forward ? entry | kForwardEntry : entry;
          break;
        }
        // In the steady state of 1F1B a forward followed by a backward (and that backward) run merged when the
        // program has merged costs (moe_a2a_overlap); without them the merged rows of `durations` are the
        // others, so the pass is not looked at (its run says not merged: PassRun::merged).
        const bool merged = plan.paired && (forward ? next + 1 < n && passes[next + 1].kind == PassKind::backward
                                               : next > 0 && passes[next - 1].kind == PassKind::forward);
        const size_t row = (chunk * 2 + (forward ? 0 : 1)) * 2 + (merged ? 1 : 0);
        const Time duration = plan.durations[row];
        if constexpr (kPath) {
          const double* const parts = run.costs + row * kParts;
          // Lane by lane, in the unit's order.
          s0 += parts[0];
          s1 += parts[1];
          s2 += parts[2];
          s3 += parts[3];
          s4 += parts[4];
          s5 += parts[5];
          s6 += parts[6];
          s7 += parts[7];
          s8 += parts[8];
          busy += duration.ns();
        }
        const Time start = std::max(free, Time::from_ns(arrival));
        const Time end = start + duration;
        Time go_on = end;  // when the stream goes on: the pass's end, or its blocking send's arrival
        Time ref_start;
        if constexpr (kReference) {
          // The reference run's pass: no send blocks and a transfer arrives when it is sent.
          const int64_t ref_arrival = forward ? ref_forward_arrival[entry] : ref_backward_arrival[entry];
          ref_start = std::max(ref_free, Time::from_ns(ref_arrival));
          ref_free = ref_start + duration;
        }
        if (next == run.trigger_at) {  // the last backward of a chunk whose reduction overlaps backward
          note_reduction_trigger(plan.stage, next, start, end, reductions_, dp_stream_free_, false);
          if constexpr (kReference) {
            note_reduction_trigger(plan.stage, next, ref_start, ref_free, ref_reductions_, ref_dp_stream_free_,
                                   false);
          }
          ++run.cursor;
          run.trigger_at = run.cursor < plan.trigger_count ? plan.triggers[run.cursor] : kNone;
        }
        if (forward && chunk != plan.last_chunk) {
          const size_t to = entry + stride;  // virtual stage vs + 1, same replica and microbatch
          const Time sent = end + p2p_forward;
          forward_arrival[to] = sent.ns();
          forward_sender[to & sender_mask] = static_cast<uint32_t>(next);
          if constexpr (kReference) ref_forward_arrival[to] = ref_free.ns();
          if (block_forward) go_on = sent;
          wake(plan.next_unit, to | kForwardEntry);
        } else if (forward) {
          backward_arrival[entry] = end.ns();  // its own backward's input: read when its stream gets there
          backward_sender[entry & sender_mask] = static_cast<uint32_t>(next);
          if constexpr (kReference) ref_backward_arrival[entry] = ref_free.ns();
        } else if (chunk != plan.first_chunk) {  // a backward
          const size_t to = entry - stride;  // virtual stage vs - 1
          const Time sent = end + p2p_backward;
          backward_arrival[to] = sent.ns();
          backward_sender[to & sender_mask] = static_cast<uint32_t>(next);
          if constexpr (kReference) ref_backward_arrival[to] = ref_free.ns();
          if (block_backward) go_on = sent;
          wake(plan.previous_unit, to);
        }
        if constexpr (kPath) runs[next] = PassRun{start.ns(), end.ns(), go_on.ns(), merged};
        ++next;
        free = go_on;
      }
      run.next = next;
      run.free = free;
      run.ref_free = ref_free;
      run.sums[0] = s0;
      run.sums[1] = s1;
      run.sums[2] = s2;
      run.sums[3] = s3;
      run.sums[4] = s4;
      run.sums[5] = s5;
      run.sums[6] = s6;
      run.sums[7] = s7;
      run.sums[8] = s8;
      run.busy = busy;
      if (next == n) {
        states_[u].next = n;
        states_[u].finished = true;  // its stream is done; start_tail sets its finish
        if constexpr (kReference) ref_tail_reached_[u] = ref_free;
        reach_tail(u, free);
      }
    }
    // A unit left waiting deadlocked: its next pass stays where run() finds it.
    for (size_t u = 0; u < units; ++u) states_[u].next = unit_runs[u].next;
  }

  /// Unit u's pass at `index` of its order (`pass`) has ended now: its output is sent (or, the last virtual
  /// stage's forward, is its own backward's input), the sender noted for the critical path.
  void on_pass_done(size_t u, size_t index, const models::ScheduledPass& pass) {
    const size_t k = u / replicas_, replica = u % replicas_;
    const Time now = sim_.now();
    const size_t vs = virtual_stage(k, pass.chunk);
    const size_t last = ranks_ * chunks_ - 1;
    const auto i = static_cast<size_t>(pass.microbatch);
    Time sent = now;  // when this stage's send (if any) has completed
    if (pass.kind == PassKind::forward) {
      if (vs < last) {
        if (path_) sender_[slot(vs + 1, replica) * microbatches_ + i] = static_cast<uint32_t>(index);
        sent = now + p2p_forward_;
        deliver(vs + 1, replica, i, /*forward=*/true, now, sent);
      } else {
        backward_arrival_[slot(vs, replica) * microbatches_ + i] = now.ns();
        if (path_) sender_[entries() + slot(vs, replica) * microbatches_ + i] = static_cast<uint32_t>(index);
      }
    } else if (vs > 0) {
      if (path_) sender_[entries() + slot(vs - 1, replica) * microbatches_ + i] = static_cast<uint32_t>(index);
      sent = now + p2p_backward_;
      deliver(vs - 1, replica, i, /*forward=*/false, now, sent);
    }
    // Blocking send/recv (Megatron without --overlap-p2p-communication): the stage's stream waits for the
    // transfer before its next pass; the arrival event continues it (sends_block), in the same event.
    if (!(sent > now && sends_block(pass.kind == PassKind::forward))) continue_after_pass(u);
  }

  /// Arrival entries per direction (forward_arrival_'s size).
  size_t entries() const { return forward_arrival_.size(); }

  /// Whether a transfer in this direction holds its sender until it arrives.
  bool sends_block(bool forward) const {
    return program_.p2p_blocking && (forward ? p2p_forward_ : p2p_backward_) > Time::zero();
  }

  void continue_after_pass(size_t u) {
    StageState& s = states_[u];
    s.busy = false;
    if (path_) passes_[u][s.next - 1].continue_ns = sim_.now().ns();
    if (s.next == program_.stages[u / replicas_].order.size()) {
      reach_tail(u, sim_.now());
    } else {
      try_start(u);
    }
  }

  void deliver(size_t to_vs, size_t replica, size_t microbatch, bool forward, Time sent, Time arrival) {
    const size_t rank = to_vs % ranks_;
    if (record_ && replica == 0 && arrival > sent) {
      spans_.push_back({static_cast<int64_t>(rank), static_cast<int64_t>(to_vs / ranks_),
                        static_cast<int64_t>(microbatch), SpanKind::p2p, sent.to_seconds(), arrival.to_seconds(),
                        units::Seconds(0.0), units::Seconds(0.0), units::Seconds(0.0)});
    }
    const size_t target = slot(to_vs, replica);
    if (arrival == sim_.now()) {
      // A transfer that takes no time (a free-transfer reference run): the input is present now. Starting the
      // receiver here rather than from an event at the same time gives the same timeline (a pass starts at
      // max(stage free, input present) whatever order equal-time events run in) with one event less.
      (forward ? forward_arrival_ : backward_arrival_)[target * microbatches_ + microbatch] = arrival.ns();
      try_start((to_vs % ranks_) * replicas_ + replica);
      return;
    }
    // Packed so the capture fits std::function's small buffer: target slot, microbatch, direction.
    const uint64_t packed = static_cast<uint64_t>(target) << 33 | static_cast<uint64_t>(microbatch) << 1 |
                            static_cast<uint64_t>(forward ? 1 : 0);
    sim_.schedule(arrival, [this, packed] {
      const auto target_slot = static_cast<size_t>(packed >> 33);
      const auto mb = static_cast<size_t>((packed >> 1) & 0xffffffffu);
      const bool fwd = (packed & 1) != 0;
      (fwd ? forward_arrival_ : backward_arrival_)[target_slot * microbatches_ + mb] = sim_.now().ns();
      const size_t vs = target_slot / replicas_, rep = target_slot % replicas_;
      try_start((vs % ranks_) * replicas_ + rep);
      if (sends_block(fwd)) {  // the sender's send has completed: its stream goes on
        const size_t from_vs = fwd ? vs - 1 : vs + 1;
        continue_after_pass((from_vs % ranks_) * replicas_ + rep);
      }
    });
  }

  /// A replica of stage k has run its last pass (its stream went on at `now`); the stage's reduction waits for
  /// all of its replicas.
  void reach_tail(size_t u, Time now) {
    const size_t k = u / replicas_;
    states_[u].tail_reached = now;
    if (++tail_waiting_[k] < replicas_) return;
    Time all_reached = Time::zero();
    for (size_t r = 0; r < replicas_; ++r) all_reached = std::max(all_reached, states_[k * replicas_ + r].tail_reached);
    for (size_t r = 0; r < replicas_; ++r) start_tail(k * replicas_ + r, all_reached);
    if (reference_) {  // the fused reference run's tails: its units reach theirs with the step's (same traversal)
      Time ref_all_reached = Time::zero();
      for (size_t r = 0; r < replicas_; ++r) ref_all_reached = std::max(ref_all_reached, ref_tail_reached_[k * replicas_ + r]);
      for (size_t r = 0; r < replicas_; ++r) {
        ref_finish_[k * replicas_ + r] = tail_times(k * replicas_ + r, ref_all_reached, ref_dp_stream_free_[k]).end;
      }
    }
  }

  /// Unit u's cost table: [(chunk * 2 + (forward ? 0 : 1)) * 2 + (merged ? 1 : 0)][part] (kParts parts:
  /// compute, attention, memory_bound, tp, cp, ep, host, dp (grad_sync), flops, a zero pad), each part of that
  /// pass's cost at the unit's pace (compute kernels at the compute pace too), laid out as pass_time_'s rows.
  /// Without merged costs the merged rows are never read.
  void fill_cost_table(size_t u, double* table) const {
    const auto& stage = program_.stages[u / replicas_];
    const double slow = slowdown_[u];
    const double compute_slow = compute_slowdown_[u] * slow;  // exactly `slow` without a compute factor
    for (size_t c = 0; c < chunks_; ++c) {
      for (size_t row = 0; row < 4; ++row) {
        const bool forward = row < 2, merged = (row & 1) != 0;
        const models::PassCost& cost = cost_of(stage, c, forward, merged);
        double* const parts = table + (c * 4 + row) * kParts;
        parts[0] = (cost.compute * compute_slow).value();
        parts[1] = (cost.attention * compute_slow).value();
        parts[2] = (cost.memory_bound * compute_slow).value();
        parts[3] = (cost.tp_comm * slow).value();
        parts[4] = (cost.cp_comm * slow).value();
        parts[5] = (cost.ep_comm * slow).value();
        parts[6] = (cost.host * slow).value();
        parts[7] = (cost.dp_comm * slow).value();
        parts[8] = cost.flops.value();
        parts[9] = 0.0;
      }
    }
  }

  /// Books unit u's passes in its breakdown, in its order: per pass, its cost's parts at the unit's pace (compute
  /// kernels at the compute pace too), the same products added in the same order as when each pass booked its
  /// own as it started (a unit runs its passes in its order), so the same sums bit for bit. Which passes run
  /// merged (StageProgram::forward_paired) depends on the order alone, not on the times: the breakdown needs
  /// no timeline. The engine's run sums them here in one tight loop over a table of the products (each computed
  /// once per chunk, direction and merging, fill_cost_table); the dependency-order run sums them as it runs
  /// each pass, from the same table in the same order (store_booked then books its sums). Called once per unit,
  /// before its tail adds its own part of grad_sync. Also sums the unit's pass durations (busy_ns_, integers:
  /// exact), which the critical path compares to find its home stage.
  void book_passes(size_t u) {
    const auto& stage = program_.stages[u / replicas_];
    const bool paired = !stage.forward_paired.empty();
    scaled_costs_.resize(chunks_ * 4 * kParts);
    double* const table = scaled_costs_.data();
    fill_cost_table(u, table);
    double sums[kParts] = {};  // the breakdown's parts are zero until booked
    const models::ScheduledPass* const order = stage.order.data();
    const size_t n = stage.order.size();
    // The unit's pass durations, laid out as the table's rows (without merged costs the merged rows' durations
    // are the others').
    const Time* const durations = pass_time_.data() + u * chunks_ * 4;
    int64_t busy = 0;
    for (size_t j = 0; j < n; ++j) {
      const bool forward = order[j].kind == PassKind::forward;
      const bool merged = paired && (forward ? j + 1 < n && order[j + 1].kind == PassKind::backward
                                             : j > 0 && order[j - 1].kind == PassKind::forward);
      const size_t row = (static_cast<size_t>(order[j].chunk) * 2 + (forward ? 0 : 1)) * 2 + (merged ? 1 : 0);
      const double* const parts = table + row * kParts;
      for (size_t f = 0; f < kParts; ++f) sums[f] += parts[f];  // lane by lane: each part's own sum, in order
      busy += durations[row].ns();
    }
    store_booked(u, sums, busy);
  }

  /// Unit u's passes' parts summed in its order (`sums`, as book_passes' table) and durations (`busy`, ns), into
  /// its breakdown and busy_ns_.
  void store_booked(size_t u, const double* sums, int64_t busy) {
    busy_ns_[u] = busy;
    StageBreakdown& b = states_[u].breakdown;
    b.compute = units::Seconds(sums[0]);
    b.attention = units::Seconds(sums[1]);
    b.memory_bound = units::Seconds(sums[2]);
    b.tp_comm = units::Seconds(sums[3]);
    b.cp_comm = units::Seconds(sums[4]);
    b.ep_comm = units::Seconds(sums[5]);
    b.host = units::Seconds(sums[6]);
    b.grad_sync = units::Seconds(sums[7]);
    b.flops = units::Flops(sums[8]);
  }

  /// When a stage's tail ends its parts: the gradient reduction, the optimizer, the parameter all-gather.
  struct TailTimes {
    Time sync_end;
    Time optimizer_end;
    Time end;
  };

  /// Unit u's tail started when every replica of its stage was `ready`, its data-parallel stream free at
  /// `dp_free` (the step's or the fused reference run's).
  TailTimes tail_times(size_t u, Time ready, Time dp_free) const {
    const size_t k = u / replicas_;
    const auto& stage = program_.stages[k];
    const Time sync = total_sync_[k];
    // Overlapped: the data-parallel stream's last reduction; otherwise all of them after the flush.
    Time sync_end = stage.overlap_grad_sync ? std::max(ready, dp_free) : ready + sync;
    if (stage.overlap_grad_sync) {
      // The part of the reduction that ran beside the backward passes slowed them (contention for SMs and
      // memory bandwidth): the stage finishes later by slowdown x that part.
      const Time hidden = sync > sync_end - ready ? sync - (sync_end - ready) : Time::zero();
      sync_end += Time::from_seconds(hidden.to_seconds() * program_.overlap_compute_slowdown);
    }
    const Time optimizer_end = sync_end + Time::from_seconds(stage.optimizer * compute_slowdown_[u]);
    return TailTimes{sync_end, optimizer_end, optimizer_end + Time::from_seconds(stage.param_gather)};
  }

  /// Gradient reduction (after the flush, or overlapped with backward chunk by chunk: note_reduction_trigger),
  /// optimizer, then the ZeRO 1-2 parameter all-gather. `ready`: every replica of the stage has run its last
  /// pass.
  void start_tail(size_t u, Time ready) {
    const size_t k = u / replicas_;
    const auto& stage = program_.stages[k];
    StageState& s = states_[u];
    const Time now = s.tail_reached;
    const Time sync = total_sync_[k];
    const Time sync_start = ready;
    const TailTimes times = tail_times(u, ready, dp_stream_free_[k]);
    const Time sync_end = times.sync_end, optimizer_end = times.optimizer_end, end = times.end;
    // The passes' parts first: grad_sync's sum adds the tail after them. The dependency-order run has summed
    // them as it ran the passes (unit_runs_).
    if (path_ && unit_runs_ != nullptr) {
      store_booked(u, unit_runs_[u].sums, unit_runs_[u].busy);
    } else if (path_) {
      book_passes(u);
    }
    s.breakdown.grad_sync += (sync_end - now).to_seconds() + (end - optimizer_end).to_seconds();
    s.breakdown.optimizer = (optimizer_end - sync_end).to_seconds();
    s.tail = TailRun{now.ns(), ready.ns(), sync_end.ns(), optimizer_end.ns(), end.ns()};
    if (record_ && u % replicas_ == 0) {
      const auto rank = static_cast<int64_t>(k);
      if (sync > Time::zero() && !stage.overlap_grad_sync) {
        spans_.push_back({rank, 0, -1, SpanKind::grad_sync, sync_start.to_seconds(), sync_end.to_seconds(), {}, {}, {}});
      }
      spans_.push_back({rank, 0, -1, SpanKind::optimizer, sync_end.to_seconds(), optimizer_end.to_seconds(), {}, {}, {}});
      if (end > optimizer_end) {
        spans_.push_back({rank, 0, -1, SpanKind::grad_sync, optimizer_end.to_seconds(), end.to_seconds(), {}, {}, {}});
      }
    }
    if (!engine_) {
      s.finish = end;
      return;
    }
    sim_.schedule(end, [this, u] {
      states_[u].finished = true;
      states_[u].finish = sim_.now();
    });
  }

  const models::StepProgram& program_;
  size_t ranks_;
  size_t chunks_;
  size_t microbatches_;
  size_t replicas_;
  bool record_;
  bool path_;  ///< record pass times and walk the critical path (not in the free-transfer reference run)
  bool engine_;  ///< run on the event engine (when recording spans); else run_in_dependency_order
  bool reference_;  ///< compute the free-transfer reference run alongside (run_in_dependency_order<true>)
  std::vector<double> slowdown_;
  std::vector<double> compute_slowdown_;  ///< per unit, on its compute kernels (ExecutionFidelity)
  std::vector<size_t> tail_waiting_;  ///< per stage, replicas that reached the tail
  Simulator sim_;
  std::vector<StageState> states_;
  /// [slot(virtual stage, replica) x microbatches + microbatch]: when the input is present (ns), kNever until then
  std::vector<int64_t> forward_arrival_;
  std::vector<int64_t> backward_arrival_;  ///< the same for the gradient
  /// With a critical path: [entry] (forward), [entries + entry] (backward): the index in its sender's order of
  /// the pass that sent that arrival (StepTimeline::sender)
  std::unique_ptr<uint32_t[]> sender_;
  std::vector<int64_t> busy_ns_;  ///< with a critical path: per unit, its passes' durations summed (book_passes)
  std::vector<TraceSpan> spans_;
  std::vector<std::vector<PassRun>> passes_;  ///< [unit][index in the stage's order]: how each pass ran
  std::vector<std::vector<Reduction>> reductions_;  ///< per stage
  std::vector<Time> total_sync_;                    ///< per stage, the sum of its reductions
  /// Per stage, the order indices of its overlapped reductions' trigger passes, ascending (empty when its
  /// reductions do not overlap backward): the only passes note_reduction_trigger acts on.
  std::vector<std::vector<size_t>> triggers_;
  std::vector<size_t> last_backward_;  ///< [stage x chunks + chunk]: index of the chunk's last backward in the order
  std::vector<Time> dp_stream_free_;                ///< per stage, when its data-parallel stream is free
  std::vector<Time> pass_time_;  ///< per (unit, chunk, direction): the pass's duration
  std::vector<double> scaled_costs_;  ///< book_passes' table, reused across units
  /// The dependency-order run's units (with a critical path: their passes' parts summed as they ran), or null
  UnitRun* unit_runs_ = nullptr;
  Time p2p_forward_;
  Time p2p_backward_;
  // The fused reference run's state (reference_): its reductions, data-parallel streams and tails.
  std::vector<std::vector<Reduction>> ref_reductions_;  ///< per stage, as reductions_
  std::vector<Time> ref_dp_stream_free_;                ///< per stage, as dp_stream_free_
  std::vector<Time> ref_tail_reached_;                  ///< per unit, when its stream finished
  std::vector<Time> ref_finish_;                        ///< per unit, when its tail ended
};

/// The fidelity of the free-transfer reference run of `program` at `fidelity`: replicas that all run at one
/// speed are identical timelines (transfers join equal replica indices and the gradient barrier waits for
/// copies that finish together), so the separate reference run needs only one.
ExecutionFidelity reference_fidelity(const models::StepProgram& program, const ExecutionFidelity& fidelity) {
  ExecutionFidelity reference = fidelity;
  reference.record_spans = false;
  const auto uniform = [](const std::vector<double>& f) {
    return std::all_of(f.begin(), f.end(), [&](double x) { return x == f.front(); });
  };
  if (uniform(fidelity.slowdown) && uniform(fidelity.compute_slowdown) && fidelity.replicas > 1) {
    reference.replicas = 1;
    if (!fidelity.slowdown.empty()) reference.slowdown.assign(program.stages.size(), fidelity.slowdown.front());
    if (!fidelity.compute_slowdown.empty()) {
      reference.compute_slowdown.assign(program.stages.size(), fidelity.compute_slowdown.front());
    }
  }
  return reference;
}

}  // namespace

PipelineResult execute_pipeline(const models::StepProgram& program, const ExecutionFidelity& fidelity) {
  if (program.stages.empty() || program.microbatches < 1) {
    throw std::invalid_argument("pipeline executor: need at least one stage and one microbatch");
  }
  const bool transfers = program.p2p_forward.value() > 0.0 || program.p2p_backward.value() > 0.0;
  // Without spans the reference run's times are computed in the step's own dependency pass (fused).
  const bool fused = transfers && !fidelity.record_spans;
  Executor executor(program, fidelity, /*record=*/fidelity.record_spans, /*free_transfers=*/false,
                    /*critical_path=*/true, /*reference=*/fused);
  PipelineResult result = executor.run();
  if (transfers) {
    // Exposed pipeline communication is what the transfers cost the step: T - T(free transfers). The same
    // program without transfers can only be as fast or faster (the schedule's order is fixed), so both parts
    // are non-negative.
    const units::Seconds reference =
        fused ? executor.reference_step_time()
              : Executor(program, reference_fidelity(program, fidelity), /*record=*/false, /*free_transfers=*/true)
                    .run()
                    .step_time;
    const units::Seconds exposed = result.step_time - reference;
    for (StageBreakdown& stage : result.stages) {
      stage.pp_exposed = exposed;
      stage.bubble -= exposed;
    }
  }
  return result;
}

units::Seconds free_transfer_step_time(const models::StepProgram& program, const ExecutionFidelity& fidelity,
                                       bool fused) {
  if (program.stages.empty() || program.microbatches < 1) {
    throw std::invalid_argument("pipeline executor: need at least one stage and one microbatch");
  }
  if (fused) {
    Executor executor(program, fidelity, /*record=*/false, /*free_transfers=*/false, /*critical_path=*/true,
                      /*reference=*/true);
    executor.run();
    return executor.reference_step_time();
  }
  return Executor(program, reference_fidelity(program, fidelity), /*record=*/false, /*free_transfers=*/true)
      .run()
      .step_time;
}

units::Seconds pipeline_step_time(const models::StepProgram& program, const ExecutionFidelity& fidelity) {
  if (program.stages.empty() || program.microbatches < 1) {
    throw std::invalid_argument("pipeline executor: need at least one stage and one microbatch");
  }
  return Executor(program, fidelity, /*record=*/false, /*free_transfers=*/false, /*critical_path=*/false).run().step_time;
}

}  // namespace clustersim::sim
