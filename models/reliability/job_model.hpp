// The job over days: what a training job needs (steps, step time, checkpoints) and what interrupts it (spot
// evictions, hardware failures), with the prices that turn VM-hours into dollars. Pure data and closed forms;
// the discrete-event job simulation is sim/job/job_simulation.hpp, the model and its assumptions docs/job.md.
//
// Closed forms (test oracles and report lines), all times in seconds of wall clock or work:
//   Young (1974), "A first order approximation to the optimum checkpoint interval", CACM 17(9):
//     tau_opt = sqrt(2 C M)                                   C checkpoint cost, M mean time between interruptions
//   Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3),
//   Eq. 37 (his delta is our C):
//     tau_opt = sqrt(2 C M) [1 + sqrt(C/(2M))/3 + C/(9 (2M))] - C   for C < 2M,   tau_opt = M   for C >= 2M
//     (his Figs. 3-5: M = 24 h, 6 h, 15 min with C = 5 min give 117, 57 and 9.1 min)
//   Expected time with exponential interruptions of rate lambda = 1/M, a checkpoint after every tau of work
//   (the last one included), checkpoint cost C (blocking), restart cost R, total work W (Daly 2006, the
//   complete model with restart, in which interruptions during the restart restart it again):
//     T = (W / tau) * M e^{R/M} (e^{(tau + C)/M} - 1)
//   The simulation ignores interruptions during a restart (the job is not running), for which the same
//   derivation gives T = (W / tau) (M + R) (e^{(tau + C)/M} - 1): equal to Daly's for R = 0 and to first
//   order in R/M.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/units.hpp"

namespace clustersim::models {

/// How often checkpoints are written. Checkpoints fall on step boundaries: the interval is a whole number of
/// steps k >= 1 (minutes: `every` / step time rounded to the nearest, at least 1), a checkpoint follows steps k,
/// 2k, ... and the last step (the final save of the trained model), so a job of n steps writes ceil(n / k).
struct CheckpointPolicy {
  enum class Kind { steps, minutes, automatic };
  Kind kind = Kind::automatic;
  int64_t every_steps = 0;          ///< Kind::steps, >= 1
  units::Seconds every;             ///< Kind::minutes (converted to seconds), > 0 of training time
  units::Bytes size;                ///< checkpoint size (all ranks together)
  units::BytesPerSecond write_bandwidth;  ///< aggregate storage write bandwidth
  units::BytesPerSecond read_bandwidth;   ///< aggregate storage read bandwidth (reload on restart)
  bool asynchronous = false;        ///< async: training stalls only for a snapshot to host memory
  units::Seconds async_stall;       ///< async: the stall per checkpoint (device-to-host copy)
};

/// Interruption processes. Rates are per VM: every VM is an independent Poisson process of each kind. Any
/// interruption of any VM interrupts the whole (synchronous data-parallel) job.
struct InterruptionModel {
  bool spot = false;                       ///< VMs are spot VMs (eviction process active)
  /// Per VM: Poisson rate of evictions per hour. Azure quotes the chance p of an eviction within the next
  /// hour; the rate is -ln(1 - p) (spot_eviction_rate_from_hourly_probability), p itself to within 1 % for
  /// p <= 2 % and 11 % at p = 20 %.
  double spot_eviction_rate_per_hour = 0;
  /// Replay (spot only): job-level eviction times, wall clock from the job's start, in any order; replaces the
  /// eviction rate when not empty. The same times in every replication. Non-empty without spot is an error.
  std::vector<units::Seconds> eviction_trace;
  double failure_rate_per_gpu_day = 0;     ///< hardware/software failures per GPU per day (any VM kind)
  int64_t gpus_per_vm = 8;
  units::Seconds detection_time;           ///< failure noticed and job torn down (evictions: the notice)
  units::Seconds restart_time;             ///< job relaunch: process start, NCCL init (checkpoint read apart)
  /// Waiting for replacement capacity after an interruption: failures re-provision in a fixed time; spot
  /// evictions wait an exponentially distributed time with this mean (capacity comes back).
  units::Seconds reprovision_failure;
  units::Seconds reprovision_spot_mean;
};

/// Prices.
struct CostModel {
  double vm_price_usd_per_hour = 0;        ///< on-demand price of one VM
  double spot_discount = 0.0;              ///< spot price = on-demand x (1 - discount)
  double storage_usd_per_gb_month = 0.0;   ///< checkpoint storage
  double egress_usd_per_gb = 0.0;          ///< inter-zone traffic
};

/// A training job.
struct JobSpec {
  int64_t steps = 0;                 ///< optimizer steps to train
  units::Seconds step_time;          ///< from the step simulation
  int64_t vms = 1;
  CheckpointPolicy checkpoint;
  InterruptionModel interruptions;
  CostModel cost;
  units::Bytes inter_zone_bytes_per_step;  ///< cross-zone traffic per step (egress), 0 in one zone
};

// Errors of the closed forms: a negative or NaN argument -> std::invalid_argument. An infinite M (nothing
// interrupts) gives infinite Young and Daly intervals, and T = (W / tau) (tau + C).

/// Young's interval sqrt(2 C M).
units::Seconds young_interval(units::Seconds checkpoint_cost, units::Seconds mean_time_between_interruptions);
/// Daly's interval (see the header comment).
units::Seconds daly_interval(units::Seconds checkpoint_cost, units::Seconds mean_time_between_interruptions);
/// Expected wall time for work W with exponential interruptions (Daly's, see the header comment). tau > 0.
units::Seconds expected_time_exponential(units::Seconds work, units::Seconds interval, units::Seconds checkpoint_cost,
                                         units::Seconds restart_cost, units::Seconds mean_time_between_interruptions);
/// The same with restarts that cannot be interrupted (the simulation's model, see the header comment):
/// T = (W / tau) (M + R) (e^{(tau + C)/M} - 1).
units::Seconds expected_time_uninterrupted_restart(units::Seconds work, units::Seconds interval,
                                                   units::Seconds checkpoint_cost, units::Seconds restart_cost,
                                                   units::Seconds mean_time_between_interruptions);
/// Job-level mean time between interruptions: 1 / (vms x eviction rate (spot) + GPUs x failure rate). With an
/// eviction trace the eviction rate is the trace's count over its last time. Infinite when nothing interrupts.
units::Seconds mean_time_between_interruptions(const InterruptionModel& m, int64_t vms);
/// Checkpoint bytes of a model: `parameters` x bytes per parameter (16-bit weights 2 + fp32 master, m, v 12 = 14
/// with mixed-precision Adam; reliability.md: GPT-3 175B about 2.4 TB).
units::Bytes checkpoint_bytes(double parameters, double bytes_per_parameter = 14.0);
/// The Poisson rate per hour of an eviction process whose chance of an eviction within one hour is `p`
/// (Azure's quote): -ln(1 - p). p in [0, 1), else std::invalid_argument.
double spot_eviction_rate_from_hourly_probability(double p);

}  // namespace clustersim::models
