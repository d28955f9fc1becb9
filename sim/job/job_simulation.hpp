// The job-level discrete-event simulation: steps, checkpoints, interruptions, restarts and billing over the
// days a training run takes, as Monte Carlo replications with reproducible randomness. docs/job.md has the model,
// every assumption and the checks against closed forms and Llama 3.
//
// One replication runs on its own sim::Simulator. Work advances in steps of JobSpec::step_time; a checkpoint is
// written after every k steps of work and after the last step (CheckpointPolicy). Blocking: training stops for
// size / write bandwidth. Asynchronous: training stops for the snapshot stall only, the write (size / write
// bandwidth) runs behind training and the checkpoint counts once written; a snapshot waits for the previous write
// to finish, and the final checkpoint is waited for. Interruptions arrive from per-VM Poisson processes (spot
// evictions if spot, failures always) or a replayed eviction trace. An interruption loses the work since the last
// completed checkpoint (an unfinished checkpoint is lost too); the job then waits for detection, re-provisioning
// (failures: fixed; spot evictions: exponential with mean reprovision_spot_mean), restart and the checkpoint
// reload (size / read bandwidth; nothing to reload before the first checkpoint), and resumes. Interruptions that
// arrive while the job is down are ignored: the job is not running and its VMs are being provisioned. A cycle
// that completes at the same nanosecond as an interruption completes first.
//
// Events: one per cycle (k steps of work and their checkpoint; after an interruption the next cycle is scheduled
// at once, starting when the downtime ends), one per interruption, and at most one ignored arrival per stream per
// downtime (later arrivals inside a known downtime are drawn but get no event); never one per step. A
// month-long job of 1e6 steps costs O(checkpoints + interruptions) events.
// The per-VM processes of one kind are superposed into one Poisson process of rate vms x rate per VM (the
// superposition of independent Poisson processes is a Poisson process with the summed rate, and which VM was hit
// does not matter to a synchronous job). Arrival times are drawn on fixed absolute timelines, one stream per kind,
// independent of the job's state, so adding spot evictions leaves the failure times unchanged (common random
// numbers).
//
// Billing: every VM is billed for the whole wall time, downtime included (the job keeps its VMs while it waits
// for a replacement: an upper bound). cost = vms x wall hours x price (spot: x (1 - discount)) + checkpoint
// storage (one checkpoint of `size`, for the whole wall time, at $/GB-month with a month of 730 h) + inter-zone
// egress (bytes per step x steps executed, recomputed ones included, at $/GB).
//
// Randomness: replication r's stream s is SplitMix64 (Steele, Lea, Flood 2014) started from
//   h = mix(seed + G);  h = mix(h ^ (r * G + 0x2545f4914f6cdd1d));  h = mix(h ^ (s * 0x9e6c63d0676a9a99 + 1))
// with G = 0x9e3779b97f4a7c15 and mix the SplitMix64 finalizer; uniform u = (next >> 11) * 2^-53 in [0, 1) and
// exponential draws -ln(1 - u) / rate. Streams: 1 failures, 2 evictions, 3 spot re-provisioning waits. So results
// are identical on every platform (no std:: distributions) and replication r is the same whatever other
// replications run (for a given interval; "auto" picks the interval from all the replications it is given).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/reliability/job_model.hpp"
#include "models/units.hpp"

namespace clustersim::sim {

/// One replication.
struct JobReplication {
  // wall_time = productive_time + lost_time + checkpoint_time + downtime exactly (each a sum of engine ns).
  units::Seconds wall_time;           ///< start to the last step done and the final checkpoint written
  units::Seconds productive_time;     ///< steps x step time that survived
  units::Seconds lost_time;           ///< work lost to interruptions (recomputed), partial steps included
  units::Seconds checkpoint_time;     ///< training stalled by checkpoints (waits, snapshots, writes, lost ones)
  units::Seconds downtime;            ///< detection + re-provisioning + restart + reload
  int64_t interruptions = 0;          ///< evictions + failures that hit the running job (ignored ones excluded)
  int64_t evictions = 0;
  int64_t failures = 0;
  int64_t checkpoints = 0;            ///< checkpoints completed (written), the final one included
  double vm_hours = 0.0;              ///< billed VM-hours
  double cost_usd = 0.0;              ///< VMs + checkpoint storage + egress
  uint64_t fingerprint = 0;           ///< the engine's determinism fingerprint (event kinds folded in)
  [[nodiscard]] double goodput() const { return productive_time / wall_time; }  ///< ETTR
};

/// Thrown inside the job simulation when the job cannot finish within the 100-year horizon of wall time; a
/// verdict about the scenario, not an error: simulate_job turns it into JobStatistics::feasible = false.
class JobInfeasible : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by simulate_job when its replications would spend more than its event budget (kJobEventBudget by
/// default): too much requested work, bad input that the caller locates at the scenario's job.replications.
class JobBudgetExceeded : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Statistics over replications. Percentiles are nearest-rank (the ceil(p n)-th smallest); standard errors are
/// the sample standard deviation (n - 1) over sqrt(n), 0 for one replication.
struct JobStatistics {
  int64_t replications = 0;
  /// false when the job cannot finish within the 100-year horizon (the work alone, or the work with the
  /// interruptions' losses at every checkpoint interval); then `infeasible_reason` says why, `runs` is empty and
  /// every statistic below except the Young/Daly intervals and the mean time between interruptions is NaN.
  bool feasible = true;
  std::string infeasible_reason;        ///< one sentence, empty when feasible
  units::Seconds checkpoint_interval;   ///< the interval used (after "auto"): checkpoint_interval_steps x step time
  int64_t checkpoint_interval_steps = 0;
  /// Young's sqrt(2 C M) and Daly's interval, for comparison, with C the training stall per checkpoint (blocking:
  /// size / write bandwidth; async: the snapshot stall) and M the job's mean time between interruptions.
  /// Infinite when nothing interrupts.
  units::Seconds young_interval;
  units::Seconds daly_interval;
  units::Seconds mean_time_between_interruptions;
  int64_t interval_evaluations = 0;     ///< intervals simulated by "auto" (0 for a given interval)
  double mean_hours = 0, p50_hours = 0, p90_hours = 0, p99_hours = 0;
  double mean_cost_usd = 0, p50_cost_usd = 0, p90_cost_usd = 0, p99_cost_usd = 0;
  double mean_goodput = 0;              ///< mean over replications of productive / wall time (ETTR)
  double mean_interruptions = 0;
  double mean_evictions = 0;
  double mean_failures = 0;
  double mean_checkpoints = 0;
  double mean_vm_hours = 0;
  double mean_lost_gpu_hours = 0;       ///< lost time x vms x GPUs per VM / 3600
  double stderr_hours = 0;              ///< standard error of mean_hours
  double stderr_cost_usd = 0;           ///< standard error of mean_cost_usd
  std::vector<JobReplication> runs;     ///< every replication, in index order
};

/// Told after each finished job replication (a progress display; see simulate_job).
using JobProgress = std::function<void()>;

/// Runs `replications` replications of `job` with seeds derived from `seed`. A checkpoint policy of kind
/// automatic searches the interval that minimises the mean wall time: golden-section search on log(interval)
/// over whole steps, 25 evaluations, every candidate with the same seeds (common random numbers), plus Young's
/// and Daly's intervals as candidates; the best mean wins (ties: the shorter interval) and its replications are
/// returned. The bracket is [max(one step, g_lo / 10), min(the job, 3 g_hi)] where g_lo, g_hi are the smaller and
/// larger of Daly's interval and (async) the write time: the exponential model's optimum lies within a few % of
/// Daly's, and an asynchronous write longer than the interval only adds waits. With no interruptions "auto" is
/// one checkpoint, the final one.
///
/// Errors: std::invalid_argument on replications < 1, event_budget < 1, steps < 1, a step time not > 0 and
/// finite, vms or GPUs per VM < 1, a negative or non-finite rate, time, size, price or trace entry, a discount
/// outside [0, 1], a bandwidth not > 0 (infinity is allowed: free), every_steps < 1 or every not > 0, or an
/// eviction trace without spot; JobBudgetExceeded when the replications would spend more than `event_budget`
/// events and ignored arrival draws (over every interval tried). A job that cannot finish within 100 years of wall
/// time (its work alone, a checkpoint write or a recovery, or interruptions far more frequent than the checkpoint
/// interval allows; checked against the closed form first, then by the run) is a verdict: feasible = false and
/// the reason, not an exception.
/// Cost: O(replications x (checkpoints + interruptions) x log) time, O(replications) memory; x 27 for "auto".
/// `progress`, when set, is called after every replication (of every interval the "auto" search tries), on the
/// calling thread.
JobStatistics simulate_job(const models::JobSpec& job, int64_t replications, uint64_t seed,
                           int64_t event_budget, const JobProgress& progress = {});

/// The replications simulate_job runs at most for `replications`: replications, times the intervals the "auto"
/// checkpoint search may try (27) when the job is interrupted at all. A progress bar's total.
int64_t planned_replications(const models::JobSpec& job, int64_t replications);

/// The default event budget of simulate_job: about ten seconds of one core (the engine runs some 20 million job
/// events a second).
inline constexpr int64_t kJobEventBudget = 200'000'000;

/// simulate_job with the default event budget.
inline JobStatistics simulate_job(const models::JobSpec& job, int64_t replications, uint64_t seed) {
  return simulate_job(job, replications, seed, kJobEventBudget);
}

/// Replication `replication` of `job` with a checkpoint after every `checkpoint_every_steps` steps (>= 1; more
/// than the job's steps means the final checkpoint only), whatever the job's policy kind: the building block of
/// simulate_job, equal to its runs[replication] for the same interval. Errors as simulate_job; JobInfeasible
/// when this replication does not finish within the 100-year horizon.
JobReplication simulate_replication(const models::JobSpec& job, int64_t checkpoint_every_steps, uint64_t seed,
                                    int64_t replication);

}  // namespace clustersim::sim
