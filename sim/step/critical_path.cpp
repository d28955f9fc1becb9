#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/step/step_timeline.hpp"

namespace clustersim::sim {

namespace {

/// A pass's time split by kind (seconds); the kinds sum to `time`.
struct PassParts {
  double time = 0, compute = 0, attention = 0, memory_bound = 0, tp = 0, cp = 0, ep = 0, host = 0, dp = 0;

  void add(const PassParts& p, double fraction) {
    time += fraction * p.time;
    compute += fraction * p.compute;
    attention += fraction * p.attention;
    memory_bound += fraction * p.memory_bound;
    tp += fraction * p.tp;
    cp += fraction * p.cp;
    ep += fraction * p.ep;
    host += fraction * p.host;
    dp += fraction * p.dp;
  }
};

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

/// One interval of a timeline: a pass of a unit, a pipeline transfer, or a piece of a tail.
struct Segment {
  enum class Kind { pass, transfer, dp, optimizer };
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  Kind kind = Kind::pass;
  size_t unit = 0;  ///< for a pass
  size_t index = 0; ///< for a pass: its index in the stage's order
};

class Walk {
 public:
  explicit Walk(const StepTimeline& tl)
      : tl_(tl),
        program_(*tl.program),
        ranks_(program_.stages.size()),
        chunks_(static_cast<size_t>(program_.virtual_stages)),
        microbatches_(static_cast<size_t>(program_.microbatches)),
        replicas_(tl.replicas) {}

  /// A pass's time by kind, as costed (the pass's rounding to whole ns goes to compute).
  PassParts parts(size_t u, size_t j) const {
    const models::StageProgram& stage = program_.stages[u / replicas_];
    const PassRun& run = tl_.passes[u][j];
    const models::ScheduledPass& pass = stage.order[j];
    const bool forward = pass.kind == models::PassKind::forward;
    const auto c = static_cast<size_t>(pass.chunk);
    const models::PassCost& cost = run.merged && !stage.forward_paired.empty()
                                       ? (forward ? stage.forward_paired[c] : stage.backward_paired[c])
                                       : (forward ? stage.forward[c] : stage.backward[c]);
    const double slow = tl_.slowdown[u], compute_slow = tl_.compute_slowdown[u] * slow;
    PassParts p;
    p.time = seconds(run.end_ns - run.start_ns);
    p.tp = cost.tp_comm.value() * slow;
    p.cp = cost.cp_comm.value() * slow;
    p.ep = cost.ep_comm.value() * slow;
    p.host = cost.host.value() * slow;
    p.dp = cost.dp_comm.value() * slow;
    p.compute = p.time - (p.tp + p.cp + p.ep + p.host + p.dp);
    p.attention = cost.attention.value() * compute_slow;
    p.memory_bound = cost.memory_bound.value() * compute_slow;
    return p;
  }

  /// The critical path's segments walked back from unit `u`'s end of tail, ties toward `pace`, into `segments`
  /// (cleared first) in reverse time order, zero-length ones included (the caller reads it backwards and skips
  /// those).
  void path(size_t u, size_t pace, std::vector<Segment>& segments) const {
    segments.clear();
    const TailRun& tail = tl_.tails[u];
    segments.push_back({tail.optimizer_end_ns, tail.end_ns, Segment::Kind::dp, 0, 0});
    segments.push_back({tail.sync_end_ns, tail.optimizer_end_ns, Segment::Kind::optimizer, 0, 0});
    segments.push_back({tail.ready_ns, tail.sync_end_ns, Segment::Kind::dp, 0, 0});
    // The stage's reduction waited for its last replica to reach the tail: the path goes on from that one.
    const size_t first = u - u % replicas_;
    for (size_t v = first; v < first + replicas_ && tl_.tails[u].reached_ns != tail.ready_ns; ++v) {
      if (tl_.tails[v].reached_ns == tail.ready_ns) u = v;
    }
    const auto distance = [pace](size_t k) { return k > pace ? k - pace : pace - k; };
    const size_t last_vs = ranks_ * chunks_ - 1;
    size_t j = tl_.passes[u].size() - 1;
    bool via_stream = true;  // entered from the stage's own stream (not through a transfer the pass sent)
    const size_t most_steps = ranks_ * replicas_ * chunks_ * microbatches_ * 2;
    for (size_t steps = 0;; ++steps) {
      if (steps > most_steps) {
        throw std::logic_error("critical path: the walk does not end");
      }
      const size_t k = u / replicas_, replica = u % replicas_;
      const PassRun& run = tl_.passes[u][j];
      if (via_stream) segments.push_back({run.end_ns, run.continue_ns, Segment::Kind::transfer, 0, 0});
      segments.push_back({run.start_ns, run.end_ns, Segment::Kind::pass, u, j});
      // What the pass waited for: its stream (the previous pass) or its input, whichever came last.
      const models::ScheduledPass& pass = program_.stages[k].order[j];
      const bool forward = pass.kind == models::PassKind::forward;
      const auto chunk = static_cast<size_t>(pass.chunk);
      const auto mb = static_cast<size_t>(pass.microbatch);
      const size_t vs = chunk * ranks_ + k;
      const size_t slot = vs * replicas_ + replica;
      const int64_t free = j > 0 ? tl_.passes[u][j - 1].continue_ns : 0;
      const size_t at = slot * microbatches_ + mb;
      const int64_t arrival = forward ? tl_.forward_arrival[at] : tl_.backward_arrival[at];
      if (run.start_ns != std::max(free, arrival)) {
        throw std::logic_error("critical path: stage " + std::to_string(k) + " pass " + std::to_string(j) +
                               " started at " + std::to_string(run.start_ns) + " ns, not when its inputs were ready");
      }
      const bool first_input = forward && vs == 0;  // there at 0: with the stream's start, the path's start
      if (j > 0 && (free > arrival || first_input)) {
        --j;
        via_stream = true;
        continue;
      }
      if (first_input) break;
      // The sender: the previous virtual stage's forward, the next one's backward, or (the last virtual stage's
      // backward) its own forward.
      size_t sender_vs = forward ? vs - 1 : (vs < last_vs ? vs + 1 : vs);
      const size_t sender_rank = sender_vs % ranks_;
      const size_t sender_unit = sender_rank * replicas_ + replica;
      // The executor noted which pass of the sender's order sent this input.
      const size_t sender_j = tl_.sender[forward ? at : tl_.forward_arrival.size() + at];
      if (j > 0 && free == arrival && (k == pace || distance(sender_rank) >= distance(k))) {  // a tie: stay
        --j;
        via_stream = true;
        continue;
      }
      segments.push_back({tl_.passes[sender_unit][sender_j].end_ns, arrival, Segment::Kind::transfer, 0, 0});
      u = sender_unit;
      j = sender_j;
      via_stream = false;
    }
  }

 private:
  const StepTimeline& tl_;
  const models::StepProgram& program_;
  size_t ranks_, chunks_, microbatches_, replicas_;
};

/// What critical_path_of reuses from one step to the next on a thread (a sweep's threads walk a step per point):
/// the walked segments and the waited-on stages' sums. Only capacity carries over: each call clears and refills.
struct Scratch {
  std::vector<Segment> walked;
  std::vector<PassParts> waits;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

CriticalPath critical_path_of(const StepTimeline& tl, int64_t step_ns) {
  const size_t ranks = tl.program->stages.size();
  const size_t replicas = tl.replicas;
  // The unit whose tail ends the step: the lowest stage, then the lowest replica, that finishes at step_ns.
  size_t end_unit = tl.tails.size();
  for (size_t v = 0; v < tl.tails.size() && end_unit == tl.tails.size(); ++v) {
    if (tl.tails[v].end_ns == step_ns) end_unit = v;
  }
  if (end_unit == tl.tails.size()) throw std::logic_error("critical path: no stage ends the step");
  // The home unit: the most pass time (the last such unit), the stage the pipeline runs at the pace of.
  size_t home = 0;
  int64_t most = -1;
  for (size_t v = 0; v < tl.passes.size(); ++v) {
    const int64_t busy = tl.busy_ns[v];
    if (busy >= most) {
      most = busy;
      home = v;
    }
  }
  const size_t home_stage = home / replicas;
  const Walk walk(tl);
  Scratch& scratch_ = scratch();
  std::vector<Segment>& walked = scratch_.walked;  // the critical path, last segment first
  walk.path(end_unit, home_stage, walked);
  // The home unit's passes (the zero-length ones skipped). After its last pass, what ends the step is the
  // critical path alone (the drain and the tail of the stage that finishes last; the home stage's own tail runs
  // beside them).
  const std::vector<PassRun>& own = tl.passes[home];
  const size_t own_count = own.size();
  // Every instant of the step: the home unit's pass, or, while it has none, what the critical path runs.
  PassParts home_parts;
  std::vector<PassParts>& waits = scratch_.waits;
  waits.assign(ranks, PassParts{});
  double pp = 0.0, dp = 0.0, optimizer = 0.0;
  // [from, to) of pass j of unit u, which runs over [start, end).
  const auto attribute_pass = [&](size_t u, size_t j, int64_t start, int64_t end, int64_t from, int64_t to,
                                  bool idle) {
    const PassParts p = walk.parts(u, j);
    const double fraction = static_cast<double>(to - from) / static_cast<double>(end - start);
    const size_t k = u / replicas;
    (idle && k != home_stage ? waits[k] : home_parts).add(p, fraction);
  };
  const auto attribute = [&](const Segment& s, int64_t from, int64_t to) {  // while the home unit idles
    if (to <= from) return;
    const double t = seconds(to - from);
    switch (s.kind) {
      case Segment::Kind::transfer:
        pp += t;
        return;
      case Segment::Kind::dp:
        dp += t;
        return;
      case Segment::Kind::optimizer:
        optimizer += t;
        return;
      case Segment::Kind::pass:
        break;
    }
    attribute_pass(s.unit, s.index, s.start_ns, s.end_ns, from, to, true);
  };
  // The path in time order, without its zero-length segments, must tile [0, step_ns]: each segment starts where
  // the one before ended (the first at 0), the last ends at step_ns (checked as the segments come).
  size_t o = 0;
  int64_t now = 0;
  int64_t tiled = 0;
  bool any = false;
  for (size_t i = walked.size(); i-- > 0;) {
    const Segment& s = walked[i];
    if (s.end_ns == s.start_ns) continue;
    if (s.start_ns != tiled) throw std::logic_error("critical path: the path's segments do not tile the step");
    tiled = s.end_ns;
    any = true;
    now = s.start_ns;
    while (now < s.end_ns) {
      while (o < own_count && (own[o].end_ns <= now || own[o].end_ns == own[o].start_ns)) ++o;
      if (o < own_count && own[o].start_ns <= now) {  // the home unit is busy
        const int64_t to = std::min(own[o].end_ns, s.end_ns);
        if (to > now) attribute_pass(home, o, own[o].start_ns, own[o].end_ns, now, to, false);
        now = to;
      } else {  // idle until its next work: the critical path's
        const int64_t to = std::min(o < own_count ? own[o].start_ns : s.end_ns, s.end_ns);
        attribute(s, now, to);
        now = to;
      }
    }
  }
  if (any && tiled != step_ns) throw std::logic_error("critical path: the path's segments do not tile the step");
  CriticalPath out;
  out.home_stage = static_cast<int64_t>(home_stage);
  out.end_stage = static_cast<int64_t>(end_unit / replicas);
  out.compute = units::Seconds(home_parts.compute);
  out.attention = units::Seconds(home_parts.attention);
  out.memory_bound = units::Seconds(home_parts.memory_bound);
  out.tp_comm = units::Seconds(home_parts.tp);
  out.cp_comm = units::Seconds(home_parts.cp);
  out.ep_comm = units::Seconds(home_parts.ep);
  out.host = units::Seconds(home_parts.host);
  out.pp_comm = units::Seconds(pp);
  out.dp_comm = units::Seconds(dp + home_parts.dp);
  out.optimizer = units::Seconds(optimizer);
  double wait = 0.0;
  for (size_t k = 0; k < ranks; ++k) {
    const PassParts& p = waits[k];
    if (p.time <= 0.0) continue;
    out.waits.push_back({static_cast<int64_t>(k), units::Seconds(p.time), units::Seconds(p.compute),
                         units::Seconds(p.tp), units::Seconds(p.cp), units::Seconds(p.ep), units::Seconds(p.host),
                         units::Seconds(p.dp)});
    wait += p.time;
  }
  out.pipeline_wait = units::Seconds(wait);
  return out;
}

}  // namespace clustersim::sim
