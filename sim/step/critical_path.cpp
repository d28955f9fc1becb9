#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/step/step_timeline.hpp"

namespace clustersim::sim {

namespace {

/// A pass's time on the path, split by kind (seconds).
struct PassParts {
  double time = 0, compute = 0, attention = 0, memory_bound = 0, tp = 0, cp = 0, ep = 0, host = 0, dp = 0;
};

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

CriticalPath critical_path_of(const StepTimeline& tl, int64_t step_ns) {
  const models::StepProgram& program = *tl.program;
  const size_t ranks = program.stages.size();
  const auto chunks = static_cast<size_t>(program.virtual_stages);
  const auto microbatches = static_cast<size_t>(program.microbatches);
  const size_t replicas = tl.replicas;
  const size_t last_vs = ranks * chunks - 1;
  // Per stage, where each (chunk, microbatch, direction) sits in its order.
  std::vector<std::vector<size_t>> index(ranks, std::vector<size_t>(chunks * microbatches * 2, 0));
  for (size_t k = 0; k < ranks; ++k) {
    const auto& order = program.stages[k].order;
    for (size_t j = 0; j < order.size(); ++j) {
      const auto& p = order[j];
      index[k][(static_cast<size_t>(p.chunk) * microbatches + static_cast<size_t>(p.microbatch)) * 2 +
               (p.kind == models::PassKind::forward ? 0 : 1)] = j;
    }
  }
  // The unit whose tail ends the step: the lowest stage, then the lowest replica, that finishes at step_ns.
  size_t u = tl.tails.size();
  for (size_t v = 0; v < tl.tails.size() && u == tl.tails.size(); ++v) {
    if (tl.tails[v].end_ns == step_ns) u = v;
  }
  if (u == tl.tails.size()) throw std::logic_error("critical path: no stage ends the step");
  CriticalPath path;
  path.end_stage = static_cast<int64_t>(u / replicas);
  const TailRun& tail = tl.tails[u];
  double dp = seconds(tail.end_ns - tail.optimizer_end_ns) + seconds(tail.sync_end_ns - tail.ready_ns);
  double pp = 0.0;
  path.optimizer = units::Seconds(seconds(tail.optimizer_end_ns - tail.sync_end_ns));
  // The stage's reduction waited for its last replica to reach the tail: the path goes on from that one.
  const size_t first = u - u % replicas;
  if (tl.tails[u].reached_ns != tail.ready_ns) {
    for (size_t v = first; v < first + replicas; ++v) {
      if (tl.tails[v].reached_ns == tail.ready_ns) {
        u = v;
        break;
      }
    }
  }
  // The stage the pipeline runs at the pace of: the most pass time on one unit (the last such stage). Where two
  // predecessors end at the same time, the walk takes the one nearer this stage, so that the path stays on it
  // as long as the dependencies allow (a balanced 1F1B's path is fill, the last stage's steady state, drain).
  size_t pace = 0;
  double most = -1.0;
  for (size_t v = 0; v < tl.passes.size(); ++v) {
    double busy = 0.0;
    for (const PassRun& run : tl.passes[v]) busy += seconds(run.end_ns - run.start_ns);
    if (busy >= most) {
      most = busy;
      pace = v / replicas;
    }
  }
  const auto distance = [pace](size_t k) { return k > pace ? k - pace : pace - k; };
  std::vector<PassParts> on_stage(ranks);
  size_t j = tl.passes[u].size() - 1;
  bool via_stream = true;  // entered from the stage's own stream (not through a transfer it sent)
  const size_t most_steps = ranks * replicas * chunks * microbatches * 2 + 1;
  for (size_t steps = 0;; ++steps) {
    if (steps > most_steps) throw std::logic_error("critical path: the walk does not end");
    const size_t k = u / replicas, replica = u % replicas;
    const models::StageProgram& stage = program.stages[k];
    const PassRun& run = tl.passes[u][j];
    if (via_stream) pp += seconds(run.continue_ns - run.end_ns);  // a blocking send held the stream
    const models::ScheduledPass& pass = stage.order[j];
    const bool forward = pass.kind == models::PassKind::forward;
    const auto chunk = static_cast<size_t>(pass.chunk);
    const models::PassCost& cost =
        run.merged && !stage.forward_paired.empty()
            ? (forward ? stage.forward_paired[chunk] : stage.backward_paired[chunk])
            : (forward ? stage.forward[chunk] : stage.backward[chunk]);
    const double slow = tl.slowdown[u], compute_slow = tl.compute_slowdown[u] * slow;
    PassParts& parts = on_stage[k];
    const double d = seconds(run.end_ns - run.start_ns);
    const double tp = cost.tp_comm.value() * slow, cp = cost.cp_comm.value() * slow, ep = cost.ep_comm.value() * slow,
                 host = cost.host.value() * slow, pass_dp = cost.dp_comm.value() * slow;
    parts.time += d;
    parts.compute += d - (tp + cp + ep + host + pass_dp);  // the pass's rounding to whole ns goes to compute
    parts.attention += cost.attention.value() * compute_slow;
    parts.memory_bound += cost.memory_bound.value() * compute_slow;
    parts.tp += tp;
    parts.cp += cp;
    parts.ep += ep;
    parts.host += host;
    parts.dp += pass_dp;
    // What the pass waited for: its stream (the previous pass) or its input, whichever came last.
    const size_t vs = chunk * ranks + k;
    const auto mb = static_cast<size_t>(pass.microbatch);
    const size_t slot = vs * replicas + replica;
    const int64_t free = j > 0 ? tl.passes[u][j - 1].continue_ns : 0;
    const int64_t arrival = forward ? tl.forward_arrival[slot][mb] : tl.backward_arrival[slot][mb];
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
    size_t sender_vs = vs, sender_dir = 1;  // the last virtual stage's backward follows its own forward
    if (forward) {
      sender_vs = vs - 1;
      sender_dir = 0;
    } else if (vs < last_vs) {
      sender_vs = vs + 1;
    } else {
      sender_dir = 0;
    }
    const size_t sender_rank = sender_vs % ranks, sender_chunk = sender_vs / ranks;
    const size_t sender_unit = sender_rank * replicas + replica;
    const size_t sender_j = index[sender_rank][(sender_chunk * microbatches + mb) * 2 + sender_dir];
    if (j > 0 && free == arrival && (k == pace || distance(sender_rank) >= distance(k))) {  // a tie: stay
      --j;
      via_stream = true;
      continue;
    }
    pp += seconds(arrival - tl.passes[sender_unit][sender_j].end_ns);
    u = sender_unit;
    j = sender_j;
    via_stream = false;
  }
  // The home stage: the most pass time on the path (the lowest such stage).
  size_t home = 0;
  for (size_t k = 1; k < ranks; ++k) {
    if (on_stage[k].time > on_stage[home].time) home = k;
  }
  path.home_stage = static_cast<int64_t>(home);
  const PassParts& h = on_stage[home];
  path.compute = units::Seconds(h.compute);
  path.attention = units::Seconds(h.attention);
  path.memory_bound = units::Seconds(h.memory_bound);
  path.tp_comm = units::Seconds(h.tp);
  path.cp_comm = units::Seconds(h.cp);
  path.ep_comm = units::Seconds(h.ep);
  path.host = units::Seconds(h.host);
  path.pp_comm = units::Seconds(pp);
  path.dp_comm = units::Seconds(dp + h.dp);
  double wait = 0.0;
  for (size_t k = 0; k < ranks; ++k) {
    const PassParts& p = on_stage[k];
    if (k == home || p.time <= 0.0) continue;
    path.waits.push_back({static_cast<int64_t>(k), units::Seconds(p.time), units::Seconds(p.compute),
                          units::Seconds(p.tp), units::Seconds(p.cp), units::Seconds(p.ep), units::Seconds(p.host),
                          units::Seconds(p.dp)});
    wait += p.time;
  }
  path.pipeline_wait = units::Seconds(wait);
  return path;
}

}  // namespace clustersim::sim
