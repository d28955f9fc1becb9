#include "sim/step/pipeline_executor.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/engine/simulator.hpp"
#include "sim/engine/time.hpp"

namespace clustersim::sim {

namespace {

using models::PassKind;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct StageState {
  size_t next = 0;          ///< index of the next pass in the stage's order
  bool busy = false;
  std::vector<int64_t> forward_arrival_ns;   ///< input activation present (kNever = not yet)
  std::vector<int64_t> backward_arrival_ns;  ///< output gradient present (kNever = not yet)
  StageBreakdown breakdown;
};

class Executor {
 public:
  explicit Executor(const models::StepProgram& program) : program_(program) {
    const size_t p = program.stages.size();
    const auto m = static_cast<size_t>(program.microbatches);
    states_.resize(p);
    for (size_t k = 0; k < p; ++k) {
      StageState& s = states_[k];
      s.forward_arrival_ns.assign(m, k == 0 ? 0 : kNever);
      s.backward_arrival_ns.assign(m, kNever);
      validate(program.stages[k].order, m, k);
    }
    p2p_forward_ = Time::from_seconds(program.p2p_forward);
    p2p_backward_ = Time::from_seconds(program.p2p_backward);
  }

  PipelineResult run() {
    for (size_t k = 0; k < states_.size(); ++k) try_start(k);
    sim_.run();
    PipelineResult result;
    Time end = Time::zero();
    for (size_t k = 0; k < states_.size(); ++k) {
      if (states_[k].next != program_.stages[k].order.size() || !finished_[k]) {
        throw std::logic_error("pipeline executor: stage " + std::to_string(k) + " deadlocked");
      }
      end = std::max(end, finish_[k]);
    }
    result.step_time = end.to_seconds();
    for (size_t k = 0; k < states_.size(); ++k) {
      StageBreakdown b = states_[k].breakdown;
      b.finish = finish_[k].to_seconds();
      // Everything that is not work is idle: filled in by execute_pipeline's attribution.
      b.bubble = result.step_time - (b.compute + b.tp_comm + b.grad_sync + b.optimizer);
      result.stages.push_back(b);
    }
    // The critical stage is the first (lowest index) of those finishing last.
    for (size_t k = 0; k < states_.size(); ++k) {
      if (finish_[k] == end) {
        result.critical_stage = static_cast<int64_t>(k);
        break;
      }
    }
    result.events = sim_.events_executed();
    result.fingerprint = sim_.fingerprint();
    return result;
  }

 private:
  static void validate(const std::vector<models::ScheduledPass>& order, size_t m, size_t stage) {
    std::vector<int> seen_forward(m, 0), seen_backward(m, 0);
    for (const auto& pass : order) {
      if (pass.microbatch < 0 || static_cast<size_t>(pass.microbatch) >= m) {
        throw std::invalid_argument("pipeline executor: stage " + std::to_string(stage) +
                                    " names microbatch " + std::to_string(pass.microbatch) + " out of range");
      }
      const auto i = static_cast<size_t>(pass.microbatch);
      if (pass.kind == PassKind::forward) {
        ++seen_forward[i];
      } else {
        if (seen_forward[i] == 0) {
          throw std::invalid_argument("pipeline executor: stage " + std::to_string(stage) +
                                      " runs backward of microbatch " + std::to_string(i) + " before its forward");
        }
        ++seen_backward[i];
      }
    }
    for (size_t i = 0; i < m; ++i) {
      if (seen_forward[i] != 1 || seen_backward[i] != 1) {
        throw std::invalid_argument("pipeline executor: stage " + std::to_string(stage) +
                                    " must run each microbatch's forward and backward exactly once");
      }
    }
  }

  void try_start(size_t k) {
    StageState& s = states_[k];
    const auto& stage = program_.stages[k];
    if (s.busy || s.next >= stage.order.size()) return;
    const models::ScheduledPass pass = stage.order[s.next];
    const auto i = static_cast<size_t>(pass.microbatch);
    const bool forward = pass.kind == PassKind::forward;
    const int64_t arrival = forward ? s.forward_arrival_ns[i] : s.backward_arrival_ns[i];
    if (arrival == kNever || arrival > sim_.now().ns()) return;  // an arrival event will call again

    const models::PassCost& cost = forward ? stage.forward : stage.backward;
    s.breakdown.compute += cost.compute;
    s.breakdown.tp_comm += cost.tp_comm;
    s.breakdown.flops += cost.flops;
    s.busy = true;
    ++s.next;
    sim_.schedule_in(Time::from_seconds(cost.total()), [this, k, pass] { on_pass_done(k, pass); });
  }

  void on_pass_done(size_t k, models::ScheduledPass pass) {
    StageState& s = states_[k];
    s.busy = false;
    const Time now = sim_.now();
    const auto i = static_cast<size_t>(pass.microbatch);
    const size_t last = states_.size() - 1;
    if (pass.kind == PassKind::forward) {
      if (k < last) {
        deliver(k + 1, i, /*forward=*/true, now + p2p_forward_);
      } else {
        s.backward_arrival_ns[i] = now.ns();
      }
    } else if (k > 0) {
      deliver(k - 1, i, /*forward=*/false, now + p2p_backward_);
    }
    if (s.next == program_.stages[k].order.size()) {
      start_tail(k);
    } else {
      try_start(k);
    }
  }

  void deliver(size_t to, size_t microbatch, bool forward, Time arrival) {
    sim_.schedule(arrival, [this, to, microbatch, forward, arrival] {
      (forward ? states_[to].forward_arrival_ns : states_[to].backward_arrival_ns)[microbatch] = arrival.ns();
      try_start(to);
    });
  }

  void start_tail(size_t k) {
    const auto& stage = program_.stages[k];
    StageState& s = states_[k];
    s.breakdown.grad_sync = stage.grad_sync;
    s.breakdown.optimizer = stage.optimizer;
    sim_.schedule_in(Time::from_seconds(stage.grad_sync) + Time::from_seconds(stage.optimizer), [this, k] {
      finished_[k] = true;
      finish_[k] = sim_.now();
    });
  }

  const models::StepProgram& program_;
  Simulator sim_;
  std::vector<StageState> states_;
  std::vector<bool> finished_ = std::vector<bool>(program_.stages.size(), false);
  std::vector<Time> finish_ = std::vector<Time>(program_.stages.size(), Time::zero());
  Time p2p_forward_;
  Time p2p_backward_;
};

}  // namespace

PipelineResult execute_pipeline(const models::StepProgram& program) {
  if (program.stages.empty() || program.microbatches < 1) {
    throw std::invalid_argument("pipeline executor: need at least one stage and one microbatch");
  }
  PipelineResult result = Executor(program).run();
  if (program.p2p_forward.value() > 0.0 || program.p2p_backward.value() > 0.0) {
    // Exposed pipeline communication is what the transfers cost the step: T - T(free transfers). The same
    // program without transfers can only be as fast or faster (the schedule's order is fixed), so both parts
    // are non-negative.
    models::StepProgram free_transfers = program;
    free_transfers.p2p_forward = units::Seconds(0.0);
    free_transfers.p2p_backward = units::Seconds(0.0);
    const units::Seconds exposed = result.step_time - Executor(free_transfers).run().step_time;
    for (StageBreakdown& stage : result.stages) {
      stage.pp_exposed = exposed;
      stage.bubble -= exposed;
    }
  }
  return result;
}

}  // namespace clustersim::sim
