// The job-level discrete-event simulation (see job_simulation.hpp for the model and docs/job.md for the why).
#include "sim/job/job_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/random_stream.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/engine/time.hpp"

namespace clustersim::sim {

namespace {

using models::JobSpec;

constexpr double kSecondsPerHour = 3600.0;
constexpr double kSecondsPerDay = 86400.0;
constexpr double kHoursPerMonth = 730.0;  // storage is billed per month of 730 h (365 d x 24 h / 12)
constexpr double kInf = std::numeric_limits<double>::infinity();
/// No job may run longer than this: beyond it the interruptions outpace the checkpoints.
constexpr double kHorizonSeconds = 100.0 * 365.25 * kSecondsPerDay;
constexpr int kGoldenEvaluations = 25;

// ---- reproducible randomness -------------------------------------------------------------------------------

enum StreamId : uint64_t { kFailureStream = 1, kEvictionStream = 2, kSpotReprovisionStream = 3 };

/// SplitMix64 stream `stream` of replication `replication` (sim/engine/random_stream.hpp).
using Stream = RandomStream;

// ---- validation ----------------------------------------------------------------------------------------------

void fail(const std::string& what) { throw std::invalid_argument("simulate_job: " + what); }

void check_time(units::Seconds s, const char* what) {
  if (!(s.value() >= 0.0) || !std::isfinite(s.value())) fail(std::string(what) + " must be finite and >= 0");
}
void check_non_negative(double v, const char* what) {
  if (!(v >= 0.0) || !std::isfinite(v)) fail(std::string(what) + " must be finite and >= 0");
}

void validate(const JobSpec& job) {
  if (job.steps < 1) fail("steps must be >= 1");
  if (!(job.step_time.value() > 0.0) || !std::isfinite(job.step_time.value())) {
    fail("step time must be finite and > 0");
  }
  if (job.vms < 1) fail("vms must be >= 1");
  const models::CheckpointPolicy& c = job.checkpoint;
  if (c.kind == models::CheckpointPolicy::Kind::steps && c.every_steps < 1) fail("every_steps must be >= 1");
  if (c.kind == models::CheckpointPolicy::Kind::minutes &&
      (!(c.every.value() > 0.0) || !std::isfinite(c.every.value()))) {
    fail("checkpoint interval must be finite and > 0");
  }
  check_non_negative(c.size.value(), "checkpoint size");
  if (!(c.write_bandwidth.value() > 0.0)) fail("checkpoint write bandwidth must be > 0");
  if (!(c.read_bandwidth.value() > 0.0)) fail("checkpoint read bandwidth must be > 0");
  check_time(c.async_stall, "async stall");
  const models::InterruptionModel& m = job.interruptions;
  if (m.gpus_per_vm < 1) fail("gpus_per_vm must be >= 1");
  check_non_negative(m.spot_eviction_rate_per_hour, "spot eviction rate");
  check_non_negative(m.failure_rate_per_gpu_day, "failure rate");
  check_time(m.detection_time, "detection time");
  check_time(m.restart_time, "restart time");
  check_time(m.reprovision_failure, "re-provisioning time");
  check_time(m.reprovision_spot_mean, "spot re-provisioning mean");
  if (!m.eviction_trace.empty() && !m.spot) fail("an eviction trace needs spot VMs");
  for (const units::Seconds t : m.eviction_trace) check_time(t, "eviction trace time");
  const models::CostModel& p = job.cost;
  check_non_negative(p.vm_price_usd_per_hour, "VM price");
  if (!(p.spot_discount >= 0.0 && p.spot_discount <= 1.0)) fail("spot discount must be in [0, 1]");
  check_non_negative(p.storage_usd_per_gb_month, "storage price");
  check_non_negative(p.egress_usd_per_gb, "egress price");
  check_non_negative(job.inter_zone_bytes_per_step.value(), "inter-zone bytes per step");
}

// ---- the plan shared by every replication --------------------------------------------------------------------

/// Everything a replication needs, converted once to engine time.
struct Plan {
  /// The events (and ignored arrival draws) every replication of this simulate_job may still spend; null: no
  /// budget (simulate_replication). JobBudgetExceeded when it runs out.
  int64_t* events_left = nullptr;
  int64_t event_budget = 0;  ///< the budget events_left started from (for the message)
  const JobProgress* progress = nullptr;  ///< told after each replication, when set
  int64_t steps = 0;
  double step_s = 0;
  int64_t every = 1;       ///< steps per cycle
  int64_t cycles = 0;      ///< ceil(steps / every): checkpoints of a run without interruptions
  Time full_work;          ///< every x step time
  Time last_work;          ///< the last cycle's steps x step time
  bool async = false;
  Time write, stall, reload, detection, restart, reprovision_failure;
  double spot_reprovision_mean_s = 0;
  double failure_rate = 0;   ///< job level, per s
  double eviction_rate = 0;  ///< job level, per s (0 without spot or with a trace)
  std::vector<Time> trace;   ///< sorted eviction times within the horizon
  Time horizon;
  // billing
  double vms = 0, price_per_vm_hour = 0, storage_gb = 0, storage_usd_per_gb_month = 0;
  double egress_gb_per_step = 0, egress_usd_per_gb = 0;
};

Time seconds_to_time(double s) { return Time::from_seconds(units::Seconds(s)); }

/// `s` as engine time; JobInfeasible ("WHAT takes more than 100 years") beyond the horizon, where the engine's
/// clock (292 years) would overflow in the sums of a replication.
/// `s` seconds of `what` within the horizon; JobInfeasible ("WHAT takes more than 100 years") beyond it.
void check_horizon(double s, const char* what) {
  if (!(s <= kHorizonSeconds)) throw JobInfeasible(std::string(what) + " takes more than 100 years");
}

/// The job's fixed durations against the horizon, where the engine's clock (292 years) would overflow in a
/// replication's sums: each of a checkpoint write, snapshot and reload, a detection, restart and re-provisioning
/// (and the mean spot wait), and one whole recovery. JobInfeasible naming the first that exceeds it.
void check_durations(const JobSpec& job) {
  const models::CheckpointPolicy& c = job.checkpoint;
  const models::InterruptionModel& m = job.interruptions;
  check_horizon((c.size / c.write_bandwidth).value(), "one checkpoint write");
  if (c.asynchronous) check_horizon(c.async_stall.value(), "one checkpoint snapshot");
  check_horizon((c.size / c.read_bandwidth).value(), "one checkpoint reload");
  check_horizon(m.detection_time.value(), "detecting an interruption");
  check_horizon(m.restart_time.value(), "one restart");
  check_horizon(m.reprovision_failure.value(), "re-provisioning after a failure");
  check_horizon(m.reprovision_spot_mean.value(), "the mean spot re-provisioning wait");
  check_horizon(m.detection_time.value() + m.restart_time.value() + m.reprovision_failure.value() +
                    (c.size / c.read_bandwidth).value(),
                "one recovery (detection, re-provisioning, restart and reload)");
}

Plan make_plan(const JobSpec& job, int64_t every) {
  Plan p;
  p.steps = job.steps;
  p.step_s = job.step_time.value();
  p.every = std::clamp<int64_t>(every, 1, job.steps);
  p.cycles = (p.steps + p.every - 1) / p.every;
  const int64_t last_steps = p.steps - (p.cycles - 1) * p.every;
  const double full_s = static_cast<double>(p.every) * p.step_s;
  const double last_s = static_cast<double>(last_steps) * p.step_s;
  if (static_cast<double>(p.cycles) * full_s > kHorizonSeconds) {
    throw JobInfeasible("the work alone takes more than 100 years");
  }
  p.full_work = seconds_to_time(full_s);
  p.last_work = seconds_to_time(last_s);
  check_durations(job);
  const models::CheckpointPolicy& c = job.checkpoint;
  p.async = c.asynchronous;
  p.write = seconds_to_time((c.size / c.write_bandwidth).value());
  p.stall = p.async ? Time::from_seconds(c.async_stall) : Time::zero();
  p.reload = seconds_to_time((c.size / c.read_bandwidth).value());
  const models::InterruptionModel& m = job.interruptions;
  p.detection = Time::from_seconds(m.detection_time);
  p.restart = Time::from_seconds(m.restart_time);
  p.reprovision_failure = Time::from_seconds(m.reprovision_failure);
  p.spot_reprovision_mean_s = m.reprovision_spot_mean.value();
  p.vms = static_cast<double>(job.vms);
  p.failure_rate = p.vms * static_cast<double>(m.gpus_per_vm) * m.failure_rate_per_gpu_day / kSecondsPerDay;
  p.horizon = seconds_to_time(kHorizonSeconds);
  if (m.spot) {
    if (m.eviction_trace.empty()) {
      p.eviction_rate = p.vms * m.spot_eviction_rate_per_hour / kSecondsPerHour;
    } else {
      for (const units::Seconds t : m.eviction_trace) {
        if (t.value() < kHorizonSeconds) p.trace.push_back(Time::from_seconds(t));
      }
      std::sort(p.trace.begin(), p.trace.end());
    }
  }
  const models::CostModel& cost = job.cost;
  p.price_per_vm_hour = cost.vm_price_usd_per_hour * (m.spot ? 1.0 - cost.spot_discount : 1.0);
  p.storage_gb = c.size.value() / 1e9;
  p.storage_usd_per_gb_month = cost.storage_usd_per_gb_month;
  p.egress_gb_per_step = job.inter_zone_bytes_per_step.value() / 1e9;
  p.egress_usd_per_gb = cost.egress_usd_per_gb;
  return p;
}

// ---- one replication ------------------------------------------------------------------------------------------

/// One run of the job on its own Simulator. The job alternates cycles (work of `every` steps, then the checkpoint:
/// blocking write, or async wait + snapshot stall) and, after an interruption, downtime. Each cycle is one event at
/// its end; what an interruption inside a cycle costs follows from the time elapsed since the cycle began.
class Replication {
 public:
  Replication(const Plan& plan, uint64_t seed, int64_t replication)
      : plan_(plan),
        failures_(seed, replication, kFailureStream),
        evictions_(seed, replication, kEvictionStream),
        spot_waits_(seed, replication, kSpotReprovisionStream) {}

  JobReplication run() {
    if (plan_.failure_rate > 0.0) schedule_next_failure(Time::zero());
    if (!plan_.trace.empty()) {
      sim_.schedule(plan_.trace.front(), [this] { on_trace_eviction(); }, kInterruptionPriority);
    } else if (plan_.eviction_rate > 0.0) {
      schedule_next_eviction(Time::zero());
    }
    start_cycle(Time::zero());
    sim_.run_until(plan_.horizon);
    if (!done_) {
      throw JobInfeasible(
          "the job does not finish within 100 years of wall time: interruptions are too frequent for the "
          "checkpoint interval and restart time");
    }
    return result();
  }

 private:
  // Event kinds folded into the fingerprint.
  enum Kind : uint64_t { kCycleEnd = 1, kFailure = 2, kEviction = 3 };
  // A cycle that ends at the same nanosecond as an interruption completes first. The job is down during
  // [interruption, resume_at_) and running from resume_at_ on (an arrival at resume_at_ hits it).
  static constexpr Priority kJobPriority = 0;
  static constexpr Priority kInterruptionPriority = 1;

  /// The next arrival after `last` of a Poisson process of `rate` per s, into `at`; false if beyond the horizon.
  /// Arrivals that fall inside the current downtime would be ignored: they are drawn (the timeline stays the
  /// same) but get no event, so a downtime costs at most one ignored event per stream.
  bool next_arrival(Time last, double rate, Stream& stream, Time& at) {
    for (;;) {
      spend();
      const double delay = stream.exponential_mean(1.0 / rate);
      if (!(delay < (plan_.horizon - last).to_seconds().value())) return false;
      at = last + seconds_to_time(delay);
      if (at >= resume_at_) return true;
      last = at;
    }
  }
  /// One event or draw of the job's budget (Plan::events_left).
  void spend() {
    if (plan_.events_left != nullptr && --*plan_.events_left < 0) {
      throw JobBudgetExceeded("the job's Monte Carlo needs more than " + std::to_string(plan_.event_budget) +
                              " events (replications x checkpoint intervals tried x the interruptions and "
                              "checkpoints of a run)");
    }
  }

  void schedule_next_failure(Time last) {
    Time at;
    if (next_arrival(last, plan_.failure_rate, failures_, at)) {
      sim_.schedule(at, [this] { on_failure(); }, kInterruptionPriority);
    }
  }
  void schedule_next_eviction(Time last) {
    Time at;
    if (next_arrival(last, plan_.eviction_rate, evictions_, at)) {
      sim_.schedule(at, [this] { on_eviction(); }, kInterruptionPriority);
    }
  }

  bool running() const { return sim_.now() >= resume_at_; }

  void on_failure() {
    sim_.mix_into_fingerprint(kFailure);
    if (running()) interrupt(false);
    schedule_next_failure(sim_.now());  // after interrupt(): arrivals within the downtime need no event
  }
  void on_eviction() {
    sim_.mix_into_fingerprint(kEviction);
    if (running()) interrupt(true);
    schedule_next_eviction(sim_.now());
  }
  void on_trace_eviction() {
    spend();  // every replayed eviction is an event of the budget, inside a downtime too
    sim_.mix_into_fingerprint(kEviction);
    if (++trace_next_ < plan_.trace.size()) {
      sim_.schedule(plan_.trace[trace_next_], [this] { on_trace_eviction(); }, kInterruptionPriority);
    }
    if (running()) interrupt(true);
  }

  /// Starts the next cycle at `start` (now, or the end of a downtime): the work of min(every, remaining) steps,
  /// then its checkpoint.
  void start_cycle(Time start) {
    const int64_t remaining = plan_.steps - done_steps_;
    final_ = remaining <= plan_.every;
    cycle_steps_ = final_ ? remaining : plan_.every;
    cycle_work_ = final_ ? plan_.last_work : plan_.full_work;
    cycle_start_ = start;
    Time end = cycle_start_ + cycle_work_;
    if (plan_.async) {
      if (has_pending_) end = std::max(end, pending_done_);  // the previous write must finish first
      end += plan_.stall;
      if (final_) end += plan_.write;  // the job ends when its final checkpoint is written
    } else {
      end += plan_.write;
    }
    spend();
    cycle_event_ = sim_.schedule(end, [this] { on_cycle_end(); }, kJobPriority);
  }

  void on_cycle_end() {
    sim_.mix_into_fingerprint(kCycleEnd);
    const Time t = sim_.now();
    checkpoint_ns_ += (t - cycle_start_ - cycle_work_).ns();
    done_steps_ += cycle_steps_;
    if (plan_.async) {
      if (has_pending_) {  // written before this snapshot started
        committed_steps_ = pending_steps_;
        ++checkpoints_;
        has_pending_ = false;
      }
      if (final_) {
        committed_steps_ = done_steps_;
        ++checkpoints_;
        uncommitted_ns_ = 0;
      } else {
        has_pending_ = true;
        pending_steps_ = done_steps_;
        pending_done_ = t + plan_.write;
        uncommitted_ns_ = cycle_work_.ns();
      }
    } else {
      committed_steps_ = done_steps_;
      ++checkpoints_;
    }
    if (final_) {
      done_ = true;
      wall_ = t;
      sim_.stop();
      return;
    }
    start_cycle(t);
  }

  void interrupt(bool eviction) {
    const Time t = sim_.now();
    const Time elapsed = t - cycle_start_;
    const Time worked = std::min(elapsed, cycle_work_);
    checkpoint_ns_ += (elapsed - worked).ns();  // waiting, snapshotting or writing when hit
    if (has_pending_ && pending_done_ <= t) {   // the previous async write made it
      committed_steps_ = pending_steps_;
      ++checkpoints_;
      uncommitted_ns_ = 0;
    }
    has_pending_ = false;
    lost_ns_ += uncommitted_ns_ + worked.ns();
    uncommitted_ns_ = 0;
    done_steps_ = committed_steps_;
    sim_.cancel(cycle_event_);
    ++interruptions_;
    Time down = plan_.detection + plan_.restart;
    if (eviction) {
      ++evictions_count_;
      // A wait beyond the horizon ends the replication unfinished anyway (JobInfeasible); capped so that the
      // sums below stay within the engine's clock.
      down += seconds_to_time(std::min(spot_waits_.exponential_mean(plan_.spot_reprovision_mean_s), kHorizonSeconds));
    } else {
      ++failures_count_;
      down += plan_.reprovision_failure;
    }
    if (committed_steps_ > 0) down += plan_.reload;  // nothing to reload before the first checkpoint
    down_ns_ += down.ns();
    // The job resumes at resume_at_ with the next cycle, scheduled now: no event for the resume itself.
    resume_at_ = t + down;
    start_cycle(resume_at_);
  }

  JobReplication result() const {
    const auto seconds = [](int64_t ns) { return Time::from_ns(ns).to_seconds(); };
    JobReplication r;
    r.wall_time = wall_.to_seconds();
    const int64_t productive_ns = (plan_.cycles - 1) * plan_.full_work.ns() + plan_.last_work.ns();
    r.productive_time = seconds(productive_ns);
    r.lost_time = seconds(lost_ns_);
    r.checkpoint_time = seconds(checkpoint_ns_);
    r.downtime = seconds(down_ns_);
    r.interruptions = interruptions_;
    r.evictions = evictions_count_;
    r.failures = failures_count_;
    r.checkpoints = checkpoints_;
    const double wall_h = r.wall_time.value() / kSecondsPerHour;
    r.vm_hours = plan_.vms * wall_h;
    const double steps_executed = (r.productive_time.value() + r.lost_time.value()) / plan_.step_s;
    r.cost_usd = r.vm_hours * plan_.price_per_vm_hour +
                 plan_.storage_gb * (wall_h / kHoursPerMonth) * plan_.storage_usd_per_gb_month +
                 plan_.egress_gb_per_step * steps_executed * plan_.egress_usd_per_gb;
    r.fingerprint = sim_.fingerprint();
    return r;
  }

  const Plan& plan_;
  Simulator sim_;
  Stream failures_, evictions_, spot_waits_;
  std::size_t trace_next_ = 0;

  // The current cycle.
  Time cycle_start_, cycle_work_;
  int64_t cycle_steps_ = 0;
  bool final_ = false;
  EventId cycle_event_ = 0;

  // Progress. Every cycle before the current one ends on a multiple of `every` steps.
  Time resume_at_;               ///< the end of the last downtime: the job runs from then on
  bool done_ = false;
  int64_t done_steps_ = 0;       ///< steps of the completed cycles since the last restart point
  int64_t committed_steps_ = 0;  ///< steps covered by the last written checkpoint
  bool has_pending_ = false;     ///< async: a write in flight (at most one: snapshots wait for it)
  int64_t pending_steps_ = 0;
  Time pending_done_;
  int64_t uncommitted_ns_ = 0;   ///< async: work of the completed cycle whose write is in flight

  // Accounting (engine ns, so that wall = productive + lost + checkpoint + down exactly).
  Time wall_;
  int64_t lost_ns_ = 0, checkpoint_ns_ = 0, down_ns_ = 0;
  int64_t interruptions_ = 0, evictions_count_ = 0, failures_count_ = 0, checkpoints_ = 0;
};

std::vector<JobReplication> run_all(const Plan& plan, int64_t replications, uint64_t seed) {
  std::vector<JobReplication> runs;
  runs.reserve(static_cast<std::size_t>(replications));
  for (int64_t r = 0; r < replications; ++r) {
    runs.push_back(Replication(plan, seed, r).run());
    if (plan.progress != nullptr && *plan.progress) (*plan.progress)();
  }
  return runs;
}

double mean_wall(const std::vector<JobReplication>& runs) {
  double sum = 0.0;
  for (const JobReplication& r : runs) sum += r.wall_time.value();
  return sum / static_cast<double>(runs.size());
}

// ---- statistics -----------------------------------------------------------------------------------------------

/// The nearest-rank percentile `pct` (integer percent) of `sorted`: its ceil(pct n / 100)-th smallest value.
double percentile(const std::vector<double>& sorted, int64_t pct) {
  const auto n = static_cast<int64_t>(sorted.size());
  const int64_t rank = std::max<int64_t>(1, (pct * n + 99) / 100);
  return sorted[static_cast<std::size_t>(rank - 1)];
}

struct Moments {
  double mean = 0, stderr_of_mean = 0;
};
Moments moments(const std::vector<double>& x) {
  Moments m;
  const auto n = static_cast<double>(x.size());
  for (const double v : x) m.mean += v;
  m.mean /= n;
  if (x.size() > 1) {
    double ss = 0.0;
    for (const double v : x) ss += (v - m.mean) * (v - m.mean);
    m.stderr_of_mean = std::sqrt(ss / (n - 1.0) / n);
  }
  return m;
}

void summarize(JobStatistics& s, const JobSpec& job) {
  const std::size_t n = s.runs.size();
  std::vector<double> hours(n), cost(n);
  double goodput = 0, interruptions = 0, evictions = 0, failures = 0, checkpoints = 0, vm_hours = 0, lost = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const JobReplication& r = s.runs[i];
    hours[i] = r.wall_time.value() / kSecondsPerHour;
    cost[i] = r.cost_usd;
    goodput += r.goodput();
    interruptions += static_cast<double>(r.interruptions);
    evictions += static_cast<double>(r.evictions);
    failures += static_cast<double>(r.failures);
    checkpoints += static_cast<double>(r.checkpoints);
    vm_hours += r.vm_hours;
    lost += r.lost_time.value();
  }
  const double dn = static_cast<double>(n);
  const Moments h = moments(hours), c = moments(cost);
  s.mean_hours = h.mean;
  s.stderr_hours = h.stderr_of_mean;
  s.mean_cost_usd = c.mean;
  s.stderr_cost_usd = c.stderr_of_mean;
  std::sort(hours.begin(), hours.end());
  std::sort(cost.begin(), cost.end());
  s.p50_hours = percentile(hours, 50);
  s.p90_hours = percentile(hours, 90);
  s.p99_hours = percentile(hours, 99);
  s.p50_cost_usd = percentile(cost, 50);
  s.p90_cost_usd = percentile(cost, 90);
  s.p99_cost_usd = percentile(cost, 99);
  s.mean_goodput = goodput / dn;
  s.mean_interruptions = interruptions / dn;
  s.mean_evictions = evictions / dn;
  s.mean_failures = failures / dn;
  s.mean_checkpoints = checkpoints / dn;
  s.mean_vm_hours = vm_hours / dn;
  s.mean_lost_gpu_hours = lost / dn * static_cast<double>(job.vms) *
                          static_cast<double>(job.interruptions.gpus_per_vm) / kSecondsPerHour;
}

// ---- the interval ---------------------------------------------------------------------------------------------

/// What the closed forms need: the stall per checkpoint, the mean time between interruptions and the mean
/// downtime per interruption.
struct ClosedFormInputs {
  units::Seconds stall, mtbi, mean_downtime, write;
  units::Seconds poisson_mtbi;  ///< without a replayed trace (finite: the job outlives it), for the feasibility check
};

ClosedFormInputs closed_form_inputs(const JobSpec& job) {
  const models::CheckpointPolicy& c = job.checkpoint;
  const models::InterruptionModel& m = job.interruptions;
  ClosedFormInputs in;
  in.write = c.size / c.write_bandwidth;
  in.stall = c.asynchronous ? c.async_stall : in.write;
  in.mtbi = models::mean_time_between_interruptions(m, job.vms);
  models::InterruptionModel poisson = m;
  if (!poisson.eviction_trace.empty()) {
    poisson.eviction_trace.clear();
    poisson.spot = false;
  }
  in.poisson_mtbi = models::mean_time_between_interruptions(poisson, job.vms);
  const double n = static_cast<double>(job.vms);
  const double failure_rate = n * static_cast<double>(m.gpus_per_vm) * m.failure_rate_per_gpu_day;
  const double eviction_rate = m.spot && m.eviction_trace.empty() ? n * m.spot_eviction_rate_per_hour * 24.0 : 0.0;
  double reprovision = m.reprovision_failure.value();
  if (failure_rate + eviction_rate > 0.0) {
    reprovision = (failure_rate * m.reprovision_failure.value() + eviction_rate * m.reprovision_spot_mean.value()) /
                  (failure_rate + eviction_rate);
  }
  in.mean_downtime = m.detection_time + m.restart_time + units::Seconds(reprovision) + c.size / c.read_bandwidth;
  return in;
}

/// The closed-form expectation at `every` steps, with the Poisson processes only, is past the horizon:
/// simulating it would never end. (A replayed trace is finite, so the job outlives it.)
bool hopeless(const JobSpec& job, const ClosedFormInputs& in, int64_t every) {
  const double work = static_cast<double>(job.steps) * job.step_time.value();
  const double tau = static_cast<double>(std::min(every, job.steps)) * job.step_time.value();
  const double t = models::expected_time_uninterrupted_restart(units::Seconds(work), units::Seconds(tau), in.stall,
                                                               in.mean_downtime, in.poisson_mtbi)
                       .value();
  return !(t <= kHorizonSeconds);
}

int64_t steps_of(double interval_s, const JobSpec& job) {
  const double k = std::round(interval_s / job.step_time.value());
  if (!(k >= 1.0)) return 1;
  if (k >= static_cast<double>(job.steps)) return job.steps;
  return static_cast<int64_t>(k);
}

}  // namespace

JobReplication simulate_replication(const JobSpec& job, int64_t checkpoint_every_steps, uint64_t seed,
                                    int64_t replication) {
  validate(job);
  if (checkpoint_every_steps < 1) fail("checkpoint_every_steps must be >= 1");
  if (replication < 0) fail("replication must be >= 0");
  const Plan plan = make_plan(job, checkpoint_every_steps);
  return Replication(plan, seed, replication).run();
}

namespace {

void simulate_job_runs(const JobSpec& job, const ClosedFormInputs& in, int64_t replications, uint64_t seed,
                       int64_t event_budget, const JobProgress& progress, JobStatistics& s);

/// simulate_job's statistics when the job cannot finish: the reason, NaN statistics, no runs.
void mark_infeasible(JobStatistics& s, std::string reason) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.feasible = false;
  s.infeasible_reason = std::move(reason);
  s.runs.clear();
  s.checkpoint_interval = units::Seconds(nan);
  s.checkpoint_interval_steps = 0;
  for (double* v : {&s.mean_hours, &s.p50_hours, &s.p90_hours, &s.p99_hours, &s.mean_cost_usd, &s.p50_cost_usd,
                    &s.p90_cost_usd, &s.p99_cost_usd, &s.mean_goodput, &s.mean_interruptions, &s.mean_evictions,
                    &s.mean_failures, &s.mean_checkpoints, &s.mean_vm_hours, &s.mean_lost_gpu_hours,
                    &s.stderr_hours, &s.stderr_cost_usd}) {
    *v = nan;
  }
}

}  // namespace

int64_t planned_replications(const JobSpec& job, int64_t replications) {
  const bool search = job.checkpoint.kind == models::CheckpointPolicy::Kind::automatic &&
                      !std::isinf(closed_form_inputs(job).mtbi.value());
  return replications * (search ? kGoldenEvaluations + 2 : 1);
}

JobStatistics simulate_job(const JobSpec& job, int64_t replications, uint64_t seed, int64_t event_budget,
                           const JobProgress& progress) {
  validate(job);
  if (replications < 1) fail("replications must be >= 1");
  if (event_budget < 1) fail("event_budget must be >= 1");
  const ClosedFormInputs in = closed_form_inputs(job);
  JobStatistics s;
  s.replications = replications;
  s.mean_time_between_interruptions = in.mtbi;
  s.young_interval = models::young_interval(in.stall, in.mtbi);
  s.daly_interval = models::daly_interval(in.stall, in.mtbi);
  const double work_s = static_cast<double>(job.steps) * job.step_time.value();
  if (!(work_s <= kHorizonSeconds)) {
    char years[64];
    std::snprintf(years, sizeof years, "%.3g", work_s / (kSecondsPerDay * 365.25));
    mark_infeasible(s, std::string("the work alone (steps x step time) takes ") + years +
                           " years, beyond the simulation's 100-year horizon");
    return s;
  }
  try {
    simulate_job_runs(job, in, replications, seed, event_budget, progress, s);
  } catch (const JobInfeasible& e) {
    mark_infeasible(s, e.what());
  }
  return s;
}

namespace {

/// simulate_job after its checks: the runs at the policy's interval (or the "auto" search) and their statistics
/// into `s`. JobInfeasible when no interval lets the job finish within the horizon.
void simulate_job_runs(const JobSpec& job, const ClosedFormInputs& in, int64_t replications, uint64_t seed,
                       int64_t event_budget, const JobProgress& progress, JobStatistics& s) {
  // The durations' horizon checks first (a checkpoint write or a recovery longer than the horizon), so that the
  // verdict names them rather than the closed form's "interruptions too frequent".
  check_durations(job);
  int64_t events_left = event_budget;

  const models::CheckpointPolicy& c = job.checkpoint;
  int64_t every = job.steps;
  switch (c.kind) {
    case models::CheckpointPolicy::Kind::steps:
      every = std::min(c.every_steps, job.steps);
      break;
    case models::CheckpointPolicy::Kind::minutes:
      every = steps_of(c.every.value(), job);
      break;
    case models::CheckpointPolicy::Kind::automatic:
      every = job.steps;  // nothing interrupts: the final checkpoint only
      break;
  }

  if (c.kind != models::CheckpointPolicy::Kind::automatic || std::isinf(in.mtbi.value())) {
    if (hopeless(job, in, every)) {
      throw JobInfeasible("the expected time to train exceeds 100 years: interruptions are too frequent for the "
                          "checkpoint interval and restart time");
    }
    Plan plan = make_plan(job, every);
    plan.events_left = &events_left;
    plan.event_budget = event_budget;
    plan.progress = &progress;
    s.runs = run_all(plan, replications, seed);
  } else {
    // Golden-section search on x = log(interval), candidates rounded to whole steps and memoised; every
    // candidate runs the same replications (common random numbers). Young's and Daly's are candidates too.
    const double work = static_cast<double>(job.steps) * job.step_time.value();
    const double daly = s.daly_interval.value();
    const double g_lo = c.asynchronous ? std::min(daly, in.write.value()) : daly;
    const double g_hi = c.asynchronous ? std::max(daly, in.write.value()) : daly;
    const double hi = std::max(job.step_time.value(), std::min(work, 3.0 * g_hi));
    const double lo = std::min(hi, std::max(job.step_time.value(), g_lo / 10.0));

    std::map<int64_t, double> memo;
    double best_mean = kInf;
    int64_t best_every = 0;
    std::vector<JobReplication> best_runs;
    const auto evaluate = [&](int64_t k) {
      if (const auto it = memo.find(k); it != memo.end()) return it->second;
      double mean = kInf;
      if (!hopeless(job, in, k)) {
        Plan plan = make_plan(job, k);
        plan.events_left = &events_left;
        plan.event_budget = event_budget;
        plan.progress = &progress;
        std::vector<JobReplication> runs = run_all(plan, replications, seed);
        mean = mean_wall(runs);
        if (mean < best_mean || (mean == best_mean && k < best_every)) {
          best_mean = mean;
          best_every = k;
          best_runs = std::move(runs);
        }
      }
      memo.emplace(k, mean);
      return mean;
    };
    const auto f = [&](double x) { return evaluate(steps_of(std::exp(x), job)); };

    const double inv_phi = (std::sqrt(5.0) - 1.0) / 2.0;
    double a = std::log(lo), b = std::log(hi);
    double x1 = b - inv_phi * (b - a), x2 = a + inv_phi * (b - a);
    double f1 = f(x1), f2 = f(x2);
    for (int i = 2; i < kGoldenEvaluations; ++i) {
      if (f1 <= f2) {
        b = x2;
        x2 = x1;
        f2 = f1;
        x1 = b - inv_phi * (b - a);
        f1 = f(x1);
      } else {
        a = x1;
        x1 = x2;
        f1 = f2;
        x2 = a + inv_phi * (b - a);
        f2 = f(x2);
      }
    }
    evaluate(steps_of(s.young_interval.value(), job));
    evaluate(steps_of(daly, job));
    if (best_runs.empty()) {
      throw JobInfeasible("the expected time to train exceeds 100 years at every checkpoint interval: "
                          "interruptions are too frequent for the checkpoint cost and restart time");
    }
    every = best_every;
    s.runs = std::move(best_runs);
    s.interval_evaluations = static_cast<int64_t>(memo.size());
  }
  s.checkpoint_interval_steps = every;
  s.checkpoint_interval = units::Seconds(static_cast<double>(every) * job.step_time.value());
  summarize(s, job);
}

}  // namespace

}  // namespace clustersim::sim
