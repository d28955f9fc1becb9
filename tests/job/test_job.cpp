// Unit tests of the job-level simulation (sim/job/job_simulation.hpp) and its closed forms
// (models/reliability/job_model.hpp). Every expected value is written out by hand from the model's rules or
// from a closed form quoted in the comment; the Monte Carlo checks compare against the closed form within
// three standard errors of the simulated mean.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "models/reliability/job_model.hpp"
#include "models/units.hpp"
#include "sim/job/job_simulation.hpp"

namespace {

using namespace clustersim;
using models::CheckpointPolicy;
using models::JobSpec;
using sim::JobReplication;
using sim::JobStatistics;
using units::Seconds;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A job of `steps` steps of `step_s` seconds on one VM of one GPU, nothing interrupting, blocking checkpoints
/// of `write_s` seconds (size 1 GB at 1 GB/s x write_s), free reload, free restarts.
JobSpec base_job(int64_t steps, double step_s, double write_s) {
  JobSpec j;
  j.steps = steps;
  j.step_time = Seconds(step_s);
  j.vms = 1;
  j.checkpoint.kind = CheckpointPolicy::Kind::automatic;
  j.checkpoint.size = units::gigabytes(write_s);
  j.checkpoint.write_bandwidth = units::gigabytes_per_second(1.0);
  j.checkpoint.read_bandwidth = units::BytesPerSecond(kInf);
  j.interruptions.gpus_per_vm = 1;
  return j;
}

/// Failure rate per GPU-day that gives a job-level mean time between interruptions of `mtbi_s` on one GPU.
double failure_rate_for(double mtbi_s) { return 86400.0 / mtbi_s; }

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool identical(const JobReplication& a, const JobReplication& b) {
  return same_bits(a.wall_time.value(), b.wall_time.value()) &&
         same_bits(a.productive_time.value(), b.productive_time.value()) &&
         same_bits(a.lost_time.value(), b.lost_time.value()) &&
         same_bits(a.checkpoint_time.value(), b.checkpoint_time.value()) &&
         same_bits(a.downtime.value(), b.downtime.value()) && a.interruptions == b.interruptions &&
         a.evictions == b.evictions && a.failures == b.failures && a.checkpoints == b.checkpoints &&
         same_bits(a.vm_hours, b.vm_hours) && same_bits(a.cost_usd, b.cost_usd) && a.fingerprint == b.fingerprint;
}

/// wall = productive + lost + checkpoint + down, each a sum of whole nanoseconds (exact below 2^53 ns).
void expect_accounting(const JobReplication& r) {
  const auto ns = [](Seconds s) { return std::llround(s.value() * 1e9); };
  EXPECT_EQ(ns(r.wall_time), ns(r.productive_time) + ns(r.lost_time) + ns(r.checkpoint_time) + ns(r.downtime));
  EXPECT_EQ(r.interruptions, r.evictions + r.failures);
}

// ---- closed forms ---------------------------------------------------------------------------------------------

TEST(JobModel, YoungAndDalyIntervals) {
  // Young: sqrt(2 C M) = sqrt(2 x 5 min x 24 h) = sqrt(2 x 300 x 86400) = 7200 s.
  EXPECT_DOUBLE_EQ(models::young_interval(units::minutes(5), units::hours(24)).value(), 7200.0);
  // Daly (2006) Figs. 3-5, C = 5 min: M = 24 h -> 117 min, M = 6 h -> 57 min, M = 15 min -> 9.1 min.
  // M = 24 h: r = C/(2M) = 300/172800; 7200 (1 + sqrt(r)/3 + r/9) - 300 = 7001.38 s = 116.69 min.
  const double r = 300.0 / 172800.0;
  EXPECT_NEAR(models::daly_interval(units::minutes(5), units::hours(24)).value(),
              7200.0 * (1.0 + std::sqrt(r) / 3.0 + r / 9.0) - 300.0, 1e-9);
  EXPECT_NEAR(models::daly_interval(units::minutes(5), units::hours(24)).value() / 60.0, 117.0, 0.5);
  EXPECT_NEAR(models::daly_interval(units::minutes(5), units::hours(6)).value() / 60.0, 57.0, 0.5);
  EXPECT_NEAR(models::daly_interval(units::minutes(5), units::minutes(15)).value() / 60.0, 9.1, 0.05);
  // C >= 2M: tau = M.
  EXPECT_DOUBLE_EQ(models::daly_interval(units::hours(3), units::hours(1)).value(), 3600.0);
  // Nothing interrupts: no finite interval.
  EXPECT_TRUE(std::isinf(models::young_interval(units::minutes(5), Seconds(kInf)).value()));
  EXPECT_TRUE(std::isinf(models::daly_interval(units::minutes(5), Seconds(kInf)).value()));
  EXPECT_THROW(models::young_interval(Seconds(-1), units::hours(1)), std::invalid_argument);
}

TEST(JobModel, ExpectedTime) {
  // Daly: T = (W / tau) M e^{R/M} (e^{(tau + C)/M} - 1). W = 100 h, tau = 1 h, C = 5 min, M = 10 h, R = 0:
  // 100 x 10 h x (e^{1.08333/10} - 1) = 114.4192 h.
  const double t = models::expected_time_exponential(units::hours(100), units::hours(1), units::minutes(5),
                                                     Seconds(0), units::hours(10))
                       .value();
  EXPECT_NEAR(t / 3600.0, 1000.0 * std::expm1(1.0833333333333333 / 10.0), 1e-9);
  EXPECT_NEAR(t / 3600.0, 114.4192, 1e-3);
  // With R = 30 min: Daly multiplies by e^{R/M} = e^{0.05}; restarts that cannot be interrupted give
  // (M + R) / M = 1.05 instead.
  const double daly = models::expected_time_exponential(units::hours(100), units::hours(1), units::minutes(5),
                                                        units::minutes(30), units::hours(10))
                          .value();
  const double ours = models::expected_time_uninterrupted_restart(units::hours(100), units::hours(1),
                                                                  units::minutes(5), units::minutes(30),
                                                                  units::hours(10))
                          .value();
  EXPECT_NEAR(daly / t, std::exp(0.05), 1e-12);
  EXPECT_NEAR(ours / t, 1.05, 1e-12);
  // M infinite: (W / tau) (tau + C) = 100 x 65 min.
  EXPECT_DOUBLE_EQ(models::expected_time_exponential(units::hours(100), units::hours(1), units::minutes(5),
                                                     units::minutes(30), Seconds(kInf))
                       .value(),
                   100.0 * 3900.0);
}

TEST(JobModel, RatesAndSizes) {
  // Llama 3: 419 unexpected interruptions in 54 days on 16,384 GPUs (2,048 VMs of 8): M = 54 d / 419.
  models::InterruptionModel m;
  m.failure_rate_per_gpu_day = 419.0 / (16384.0 * 54.0);
  m.gpus_per_vm = 8;
  EXPECT_NEAR(models::mean_time_between_interruptions(m, 2048).value(), 54.0 * 86400.0 / 419.0, 1e-6);
  // Spot adds vms x rate: 10 VMs at 0.1 /h -> 1 /h; with no failures M = 1 h.
  models::InterruptionModel spot;
  spot.spot = true;
  spot.spot_eviction_rate_per_hour = 0.1;
  EXPECT_NEAR(models::mean_time_between_interruptions(spot, 10).value(), 3600.0, 1e-9);
  // A trace: 4 evictions by 8 h -> 0.5 /h.
  spot.eviction_trace = {units::hours(1), units::hours(8), units::hours(3), units::hours(5)};
  EXPECT_NEAR(models::mean_time_between_interruptions(spot, 10).value(), 7200.0, 1e-9);
  EXPECT_TRUE(std::isinf(models::mean_time_between_interruptions(models::InterruptionModel{}, 4).value()));
  // GPT-3 175B x 14 B = 2.45 TB (reliability.md: about 2.4 TB).
  EXPECT_DOUBLE_EQ(models::checkpoint_bytes(175e9).value(), 2.45e12);
  // Azure's 10 % within an hour is a rate of -ln(0.9) = 0.10536 per hour.
  EXPECT_NEAR(models::spot_eviction_rate_from_hourly_probability(0.10), 0.1053605156578263, 1e-15);
  EXPECT_THROW(models::spot_eviction_rate_from_hourly_probability(1.0), std::invalid_argument);
}

// ---- 1. no interruptions: exact times -------------------------------------------------------------------------

TEST(JobSimulation, NoInterruptionsBlockingIsStepsPlusCheckpoints) {
  // 1,000 steps of 1.5 s, a 300 s checkpoint every 300 steps: checkpoints after steps 300, 600, 900 and the
  // last, ceil(1000 / 300) = 4. Wall = 1000 x 1.5 + 4 x 300 = 2700 s exactly.
  JobSpec j = base_job(1000, 1.5, 300.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 300;
  j.cost.vm_price_usd_per_hour = 10.0;
  j.cost.storage_usd_per_gb_month = 0.02;
  j.vms = 4;
  const JobStatistics s = sim::simulate_job(j, 3, 7);
  ASSERT_EQ(s.runs.size(), 3u);
  for (const JobReplication& r : s.runs) {
    EXPECT_EQ(r.wall_time.value(), 2700.0);
    EXPECT_EQ(r.productive_time.value(), 1500.0);
    EXPECT_EQ(r.checkpoint_time.value(), 1200.0);
    EXPECT_EQ(r.lost_time.value(), 0.0);
    EXPECT_EQ(r.downtime.value(), 0.0);
    EXPECT_EQ(r.checkpoints, 4);
    EXPECT_EQ(r.interruptions, 0);
    // 4 VMs x 0.75 h = 3 VM-h x $10 + 300 GB x (0.75 h / 730 h) x $0.02 per GB-month.
    EXPECT_DOUBLE_EQ(r.vm_hours, 3.0);
    EXPECT_NEAR(r.cost_usd, 30.0 + 300.0 * (0.75 / 730.0) * 0.02, 1e-12);
    EXPECT_DOUBLE_EQ(r.goodput(), 1500.0 / 2700.0);
  }
  EXPECT_EQ(s.checkpoint_interval_steps, 300);
  EXPECT_DOUBLE_EQ(s.checkpoint_interval.value(), 450.0);
  EXPECT_DOUBLE_EQ(s.mean_hours, 0.75);
  EXPECT_DOUBLE_EQ(s.p99_hours, 0.75);
  EXPECT_EQ(s.stderr_hours, 0.0);
  EXPECT_TRUE(std::isinf(s.young_interval.value()));

  // "minutes": 7.6 min = 456 s / 1.5 s = 304 steps -> ceil(1000 / 304) = 4 checkpoints again; 1000 steps:
  // the final checkpoint only.
  j.checkpoint.kind = CheckpointPolicy::Kind::minutes;
  j.checkpoint.every = units::minutes(7.6);
  EXPECT_EQ(sim::simulate_job(j, 1, 7).checkpoint_interval_steps, 304);
  j.checkpoint.every = units::hours(10);
  EXPECT_EQ(sim::simulate_job(j, 1, 7).runs[0].wall_time.value(), 1500.0 + 300.0);
  // "auto" with nothing interrupting: no intermediate checkpoint, only the final one.
  j.checkpoint.kind = CheckpointPolicy::Kind::automatic;
  const JobStatistics a = sim::simulate_job(j, 1, 7);
  EXPECT_EQ(a.checkpoint_interval_steps, 1000);
  EXPECT_EQ(a.runs[0].checkpoints, 1);
  EXPECT_EQ(a.runs[0].wall_time.value(), 1800.0);
  EXPECT_EQ(a.interval_evaluations, 0);
}

TEST(JobSimulation, NoInterruptionsAsyncCostsOnlyTheStalls) {
  // Async, 2 s snapshot stall, 100 s write behind training, every 300 steps (450 s > 100 s: no waits).
  // Wall = 1000 x 1.5 + 4 stalls x 2 + the final write 100 (the job ends when its last checkpoint is written)
  // = 1608 s.
  JobSpec j = base_job(1000, 1.5, 100.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 300;
  j.checkpoint.asynchronous = true;
  j.checkpoint.async_stall = Seconds(2.0);
  JobReplication r = sim::simulate_job(j, 1, 1).runs[0];
  EXPECT_EQ(r.wall_time.value(), 1608.0);
  EXPECT_EQ(r.checkpoint_time.value(), 108.0);
  EXPECT_EQ(r.checkpoints, 4);

  // Write-bound: a 1000 s write > the 450 s interval. Cycle 1 ends at 450 + 2 = 452 (write until 1452); cycle 2's
  // work ends at 902, its snapshot waits for 1452, ends 1454 (write until 2454); cycle 3: work to 1904, wait to
  // 2454, snapshot to 2456 (write until 3456); the last 100 steps (150 s): work to 2606, wait to 3456, snapshot to
  // 3458, final write to 4458. Wall = 450 + 2 + 3 x (1000 + 2) + 1000 = 4458 s.
  j.checkpoint.size = units::gigabytes(1000.0);
  r = sim::simulate_job(j, 1, 1).runs[0];
  EXPECT_EQ(r.wall_time.value(), 4458.0);
  EXPECT_EQ(r.checkpoint_time.value(), 4458.0 - 1500.0);
  expect_accounting(r);
}

// ---- hand-checked interruption timelines (replayed eviction trace) --------------------------------------------

/// 100 steps of 60 s, a checkpoint every 10 steps (600 s), 300 GB at 1 GB/s written (300 s), read at 10 GB/s
/// (30 s); detection 30 s, restart 100 s, spot capacity back at once; spot with an eviction trace.
JobSpec trace_job(double eviction_s) {
  JobSpec j = base_job(100, 60.0, 300.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 10;
  j.checkpoint.read_bandwidth = units::gigabytes_per_second(10.0);
  j.interruptions.spot = true;
  j.interruptions.eviction_trace = {Seconds(eviction_s)};
  j.interruptions.detection_time = Seconds(30.0);
  j.interruptions.restart_time = Seconds(100.0);
  return j;
}

TEST(JobSimulation, BlockingEvictionLosesWorkSinceLastCheckpoint) {
  // Cycle 1 = 600 s work + 300 s write ends at 900 (10 steps safe). Cycle 2 starts at 900; the eviction at
  // 1240 loses 340 s of work. Down = 30 + 0 + 100 + 30 (reload) = 160 s: resume at 1400 with 90 steps left,
  // 9 cycles of 900 s: wall = 1400 + 8100 = 9500 s = 6000 + 10 x 300 + 340 + 160.
  const JobReplication r = sim::simulate_job(trace_job(1240.0), 1, 3).runs[0];
  EXPECT_EQ(r.wall_time.value(), 9500.0);
  EXPECT_EQ(r.lost_time.value(), 340.0);
  EXPECT_EQ(r.downtime.value(), 160.0);
  EXPECT_EQ(r.checkpoint_time.value(), 3000.0);
  EXPECT_EQ(r.evictions, 1);
  EXPECT_EQ(r.checkpoints, 10);
  expect_accounting(r);

  // An eviction during cycle 2's write (at 1600 = 900 + 600 + 100) loses its 600 s of work and 100 s of writing.
  const JobReplication w = sim::simulate_job(trace_job(1600.0), 1, 3).runs[0];
  EXPECT_EQ(w.lost_time.value(), 600.0);
  EXPECT_EQ(w.checkpoint_time.value(), 3000.0 + 100.0);
  EXPECT_EQ(w.wall_time.value(), 1600.0 + 160.0 + 9.0 * 900.0);
  expect_accounting(w);

  // Before the first checkpoint there is nothing to reload: an eviction at 500 loses 500 s, down 130 s.
  const JobReplication e = sim::simulate_job(trace_job(500.0), 1, 3).runs[0];
  EXPECT_EQ(e.downtime.value(), 130.0);
  EXPECT_EQ(e.wall_time.value(), 500.0 + 130.0 + 10.0 * 900.0);
}

TEST(JobSimulation, AsyncEvictionLosesTheCheckpointInFlight) {
  // Async: 6 s snapshot stall, the 300 s write runs behind training. Cycle 1 ends at 606, its write at 906.
  JobSpec j = trace_job(800.0);
  j.checkpoint.asynchronous = true;
  j.checkpoint.async_stall = Seconds(6.0);
  // Evicted at 800, before the write finished: cycle 1's 600 s are lost with cycle 2's 194 s; nothing is on
  // storage, so no reload: down 130, resume at 930 from step 0. Then 9 cycles of 606 s and the final one of
  // 600 + 6 + 300: wall = 930 + 9 x 606 + 906 = 7290 s = 6000 + 794 + (6 + 9 x 6 + 306) + 130.
  JobReplication r = sim::simulate_job(j, 1, 3).runs[0];
  EXPECT_EQ(r.lost_time.value(), 794.0);
  EXPECT_EQ(r.downtime.value(), 130.0);
  EXPECT_EQ(r.wall_time.value(), 7290.0);
  EXPECT_EQ(r.checkpoints, 10);
  expect_accounting(r);

  // Evicted at 1000, after the write finished (906): only 394 s lost, reload 30 s: down 160, resume at 1160
  // with 90 steps: 8 x 606 + 906 -> wall = 1160 + 4848 + 906 = 6914 s.
  j.interruptions.eviction_trace = {Seconds(1000.0)};
  r = sim::simulate_job(j, 1, 3).runs[0];
  EXPECT_EQ(r.lost_time.value(), 394.0);
  EXPECT_EQ(r.downtime.value(), 160.0);
  EXPECT_EQ(r.wall_time.value(), 6914.0);
  EXPECT_EQ(r.checkpoints, 10);
  expect_accounting(r);
}

TEST(JobSimulation, InterruptionsWhileDownAreIgnored) {
  // A second eviction at 1300 falls in the downtime [1240, 1400) of the first: ignored, same result as one.
  JobSpec j = trace_job(1240.0);
  j.interruptions.eviction_trace = {Seconds(1300.0), Seconds(1240.0)};
  const JobReplication r = sim::simulate_job(j, 1, 3).runs[0];
  EXPECT_EQ(r.evictions, 1);
  EXPECT_EQ(r.wall_time.value(), 9500.0);
}

// ---- 2. exponential interruptions against Daly's closed form ---------------------------------------------------

TEST(JobSimulation, MeanTimeMatchesDalyClosedForm) {
  // M = 10 h, C = 5 min blocking, tau = 1 h, W = 100 h, R = 0:
  //   T = (W / tau) M (e^{(tau + C)/M} - 1) = 100 x 10 h x (e^{0.108333} - 1) = 114.418 h.
  JobSpec j = base_job(100, 3600.0, 300.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 1;
  j.interruptions.failure_rate_per_gpu_day = failure_rate_for(36000.0);
  const JobStatistics s = sim::simulate_job(j, 2000, 2024);
  const double expected =
      models::expected_time_exponential(units::hours(100), units::hours(1), units::minutes(5), Seconds(0),
                                        units::hours(10))
          .value() /
      3600.0;
  std::printf("Daly, R = 0: simulated %.3f +- %.3f h (2000 replications), closed form %.3f h, %.1f interruptions\n",
              s.mean_hours, s.stderr_hours, expected, s.mean_interruptions);
  EXPECT_LT(std::abs(s.mean_hours - expected), 3.0 * s.stderr_hours);
  // Expected interruptions: (W / tau) (e^{(tau + C)/M} - 1) = 100 x 0.11442 = 11.44.
  EXPECT_NEAR(s.mean_interruptions, 100.0 * std::expm1(0.108333333333), 0.5);
  for (const JobReplication& r : s.runs) expect_accounting(r);

  // With a restart of R = 30 min (detection) that interruptions cannot hit:
  //   T = (W / tau) (M + R) (e^{(tau + C)/M} - 1) = 1.05 x 114.418 = 120.139 h  (Daly's e^{R/M}: 120.284 h).
  j.interruptions.detection_time = units::minutes(30);
  const JobStatistics r = sim::simulate_job(j, 2000, 2024);
  const double expected_r = models::expected_time_uninterrupted_restart(units::hours(100), units::hours(1),
                                                                        units::minutes(5), units::minutes(30),
                                                                        units::hours(10))
                                .value() /
                            3600.0;
  std::printf("R = 30 min: simulated %.3f +- %.3f h, closed form %.3f h (Daly's e^{R/M} form %.3f h)\n",
              r.mean_hours, r.stderr_hours, expected_r,
              models::expected_time_exponential(units::hours(100), units::hours(1), units::minutes(5),
                                                units::minutes(30), units::hours(10))
                      .value() /
                  3600.0);
  EXPECT_LT(std::abs(r.mean_hours - expected_r), 3.0 * r.stderr_hours);
}

// ---- 3. Young's interval near the simulated optimum ------------------------------------------------------------

TEST(JobSimulation, YoungIsNearTheSimulatedOptimum) {
  // C = 1 min << M = 24 h: Young sqrt(2 x 60 x 86400) = 3220 s (53.7 min); Daly 3180 s. W = 500 h in steps of 10 s.
  JobSpec j = base_job(180000, 10.0, 60.0);
  j.interruptions.failure_rate_per_gpu_day = failure_rate_for(86400.0);
  const JobStatistics opt = sim::simulate_job(j, 1000, 99);
  const double young = opt.young_interval.value();
  EXPECT_NEAR(young, std::sqrt(2.0 * 60.0 * 86400.0), 1e-9);
  j.checkpoint.kind = CheckpointPolicy::Kind::minutes;
  j.checkpoint.every = Seconds(young);
  const JobStatistics at_young = sim::simulate_job(j, 1000, 99);
  std::printf("Young %.0f s, Daly %.0f s, searched optimum %.0f s (%lld intervals simulated); mean time %.3f h at "
              "the optimum, %.3f h at Young's (+%.3f %%)\n",
              young, opt.daly_interval.value(), opt.checkpoint_interval.value(),
              static_cast<long long>(opt.interval_evaluations), opt.mean_hours, at_young.mean_hours,
              100.0 * (at_young.mean_hours / opt.mean_hours - 1.0));
  EXPECT_NEAR(opt.checkpoint_interval.value() / young, 1.0, 0.10);
  EXPECT_LE(opt.mean_hours, at_young.mean_hours);
  EXPECT_LT(at_young.mean_hours / opt.mean_hours - 1.0, 0.01);
}

// ---- 4. determinism --------------------------------------------------------------------------------------------

JobSpec noisy_job() {
  // Spot at 2 %/h on 8 VMs and failures, async checkpoints, 2 days of 5 s steps: every mechanism in play.
  JobSpec j = base_job(34560, 5.0, 120.0);
  j.vms = 8;
  j.interruptions.gpus_per_vm = 8;
  j.interruptions.spot = true;
  j.interruptions.spot_eviction_rate_per_hour = 0.02;
  j.interruptions.failure_rate_per_gpu_day = 0.005;
  j.interruptions.detection_time = Seconds(60);
  j.interruptions.restart_time = Seconds(300);
  j.interruptions.reprovision_failure = Seconds(600);
  j.interruptions.reprovision_spot_mean = Seconds(1800);
  j.checkpoint.read_bandwidth = units::gigabytes_per_second(4.0);
  j.checkpoint.asynchronous = true;
  j.checkpoint.async_stall = Seconds(3.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::minutes;
  j.checkpoint.every = units::minutes(30);
  j.cost.vm_price_usd_per_hour = 98.32;
  j.cost.spot_discount = 0.7;
  j.cost.storage_usd_per_gb_month = 0.02;
  j.cost.egress_usd_per_gb = 0.01;
  j.inter_zone_bytes_per_step = units::gigabytes(1.0);
  return j;
}

TEST(JobSimulation, DeterministicAndSplitInvariant) {
  const JobSpec j = noisy_job();
  const JobStatistics a = sim::simulate_job(j, 20, 42);
  const JobStatistics b = sim::simulate_job(j, 20, 42);
  const JobStatistics c = sim::simulate_job(j, 20, 43);
  const JobStatistics first = sim::simulate_job(j, 10, 42);
  ASSERT_EQ(a.runs.size(), 20u);
  int differ = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(identical(a.runs[i], b.runs[i])) << i;
    if (!identical(a.runs[i], c.runs[i])) ++differ;
    if (i < 10) {
      EXPECT_TRUE(identical(a.runs[i], first.runs[i])) << i;
    }
    expect_accounting(a.runs[i]);
  }
  EXPECT_TRUE(same_bits(a.mean_hours, b.mean_hours));
  EXPECT_EQ(differ, 20);
  // Replications 10..19 alone: the same as in the 20-run.
  for (int64_t r = 10; r < 20; ++r) {
    EXPECT_TRUE(identical(sim::simulate_replication(j, a.checkpoint_interval_steps, 42, r),
                          a.runs[static_cast<std::size_t>(r)]))
        << r;
  }
  EXPECT_GT(a.mean_evictions, 0.0);
  EXPECT_GT(a.mean_failures, 0.0);
}

TEST(JobSimulation, SpotStreamLeavesFailureDrawsAlone) {
  // Failures and evictions draw from separate streams: switching spot on with an eviction rate so small that no
  // eviction falls within the horizon (first arrival ~1e15 h) changes no failure time, hence no replication.
  JobSpec j = noisy_job();
  j.interruptions.spot = false;
  const JobStatistics od = sim::simulate_job(j, 10, 8);
  j.interruptions.spot = true;
  j.interruptions.spot_eviction_rate_per_hour = 1e-15;
  j.cost.spot_discount = 0.0;
  const JobStatistics spot = sim::simulate_job(j, 10, 8);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_TRUE(identical(od.runs[i], spot.runs[i])) << i;
  EXPECT_GT(od.mean_failures, 0.0);
}

TEST(JobSimulation, StatisticsFromTheReplications) {
  const JobSpec j = noisy_job();
  const JobStatistics s = sim::simulate_job(j, 50, 5);
  std::vector<double> hours;
  double lost = 0, cost = 0;
  for (const JobReplication& r : s.runs) {
    hours.push_back(r.wall_time.value() / 3600.0);
    lost += r.lost_time.value();
    cost += r.cost_usd;
    // Cost by hand: 8 VMs x wall h x $98.32 x 0.3 + 120 GB x wall months x $0.02 + 1 GB x steps executed x $0.01.
    const double wall_h = r.wall_time.value() / 3600.0;
    const double executed = (r.productive_time.value() + r.lost_time.value()) / 5.0;
    EXPECT_NEAR(r.cost_usd, 8.0 * wall_h * 98.32 * 0.3 + 120.0 * (wall_h / 730.0) * 0.02 + executed * 0.01,
                1e-9 * r.cost_usd);
  }
  std::sort(hours.begin(), hours.end());
  // Nearest rank of 50 values: p50 the 25th, p90 the 45th, p99 the 50th.
  EXPECT_EQ(s.p50_hours, hours[24]);
  EXPECT_EQ(s.p90_hours, hours[44]);
  EXPECT_EQ(s.p99_hours, hours[49]);
  EXPECT_NEAR(s.mean_lost_gpu_hours, lost / 50.0 * 8 * 8 / 3600.0, 1e-9);
  EXPECT_NEAR(s.mean_cost_usd, cost / 50.0, 1e-9 * cost);
}

// ---- 5. Llama 3 -------------------------------------------------------------------------------------------------

TEST(JobSimulation, Llama3EffectiveTrainingTimeRatio) {
  // Llama 3 405B (Dubey et al. 2024): 16,384 H100 = 2,048 VMs x 8, 419 unexpected interruptions in 54 days
  // (Table 5): 4.736e-4 per GPU-day, M = 54 d / 419 = 3.09 h. Effective training time reported > 90 %.
  // Assumptions (stated, not from the paper unless said):
  //   step 6 s (16M-token batch, 6 x 405e9 x 16.8e6 FLOP at ~400 TFLOP/s per GPU);
  //   checkpoint 405e9 x 14 B = 5.67 TB, blocking, written and read at 2 TB/s (Tectonic's sustained
  //   throughput, Llama 3 Sec. 3.3.1): C = 2.835 s;
  //   detection 5 min + replacement 2 min + restart 5 min = 12 min, plus the 2.8 s reload (MegaScale: back
  //   within 15 min); interval: Young's sqrt(2 C M) = 251 s -> 42 steps;
  //   700,000 steps = 48.6 days of work, so the wall time is about Llama 3's 54 days.
  // Closed form: T / W = (M + R)(e^{(tau + C)/M} - 1) / tau = 11857 x 0.02315 / 252 = 1.089 -> ETTR 0.918.
  JobSpec j;
  j.steps = 700000;
  j.step_time = Seconds(6.0);
  j.vms = 2048;
  j.interruptions.gpus_per_vm = 8;
  j.interruptions.failure_rate_per_gpu_day = 419.0 / (16384.0 * 54.0);
  j.interruptions.detection_time = units::minutes(5);
  j.interruptions.reprovision_failure = units::minutes(2);
  j.interruptions.restart_time = units::minutes(5);
  j.checkpoint.size = models::checkpoint_bytes(405e9);
  j.checkpoint.write_bandwidth = units::terabytes_per_second(2.0);
  j.checkpoint.read_bandwidth = units::terabytes_per_second(2.0);
  const Seconds c = j.checkpoint.size / j.checkpoint.write_bandwidth;
  const Seconds m = models::mean_time_between_interruptions(j.interruptions, j.vms);
  j.checkpoint.kind = CheckpointPolicy::Kind::minutes;
  j.checkpoint.every = models::young_interval(c, m);
  const JobStatistics s = sim::simulate_job(j, 100, 3);
  const double work = 700000.0 * 6.0;
  const double closed = work / models::expected_time_uninterrupted_restart(
                                   Seconds(work), s.checkpoint_interval, c,
                                   units::minutes(12) + j.checkpoint.size / j.checkpoint.read_bandwidth, m)
                                   .value();
  std::printf("Llama 3: M = %.2f h, C = %.2f s, interval %.0f s (Young %.0f s, Daly %.0f s); wall %.1f days "
              "(p90 %.1f), %.0f interruptions, ETTR %.3f (closed form %.3f), lost %.0f GPU-hours\n",
              m.value() / 3600.0, c.value(), s.checkpoint_interval.value(), s.young_interval.value(),
              s.daly_interval.value(), s.mean_hours / 24.0, s.p90_hours / 24.0, s.mean_interruptions,
              s.mean_goodput, closed, s.mean_lost_gpu_hours);
  double lost = 0, checkpointing = 0, down = 0;
  for (const JobReplication& r : s.runs) {
    lost += r.lost_time.value() / 100.0;
    checkpointing += r.checkpoint_time.value() / 100.0;
    down += r.downtime.value() / 100.0;
  }
  std::printf("Llama 3: of the mean wall time, lost work %.2f %%, checkpoint stalls %.2f %%, downtime %.2f %%\n",
              100.0 * lost / (s.mean_hours * 3600.0), 100.0 * checkpointing / (s.mean_hours * 3600.0),
              100.0 * down / (s.mean_hours * 3600.0));
  EXPECT_GT(s.mean_goodput, 0.85);
  EXPECT_LT(s.mean_goodput, 0.97);
  EXPECT_NEAR(s.mean_goodput, closed, 0.01);
  EXPECT_NEAR(s.mean_hours / 24.0, 54.0, 3.0);

  // "auto": the searched interval does at least as well as Young's on the same seeds.
  j.checkpoint.kind = CheckpointPolicy::Kind::automatic;
  const JobStatistics a = sim::simulate_job(j, 100, 3);
  std::printf("Llama 3, auto: interval %.0f s, wall %.2f days (Young's: %.2f), ETTR %.4f (Young's: %.4f)\n",
              a.checkpoint_interval.value(), a.mean_hours / 24.0, s.mean_hours / 24.0, a.mean_goodput,
              s.mean_goodput);
  EXPECT_LE(a.mean_hours, s.mean_hours);
  EXPECT_NEAR(a.checkpoint_interval.value() / s.young_interval.value(), 1.0, 0.2);
}

// ---- 6. spot ------------------------------------------------------------------------------------------------------

TEST(JobSimulation, SpotEvictionsCostTimeAndSaveMoney) {
  // 16 ND H100 v5-like VMs ($98.32/h on demand, an assumption; spot 70 % off), one week of 5 s steps, failures at
  // the Llama 3 rate, checkpoints every 30 min (blocking, 500 GB at 20 GB/s = 25 s), spot capacity back after
  // 30 min on average.
  JobSpec j = base_job(120960, 5.0, 25.0);
  j.checkpoint.size = units::gigabytes(500.0);
  j.checkpoint.write_bandwidth = units::gigabytes_per_second(20.0);
  j.checkpoint.read_bandwidth = units::gigabytes_per_second(20.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::minutes;
  j.checkpoint.every = units::minutes(30);
  j.vms = 16;
  j.interruptions.gpus_per_vm = 8;
  j.interruptions.failure_rate_per_gpu_day = 419.0 / (16384.0 * 54.0);
  j.interruptions.detection_time = units::minutes(2);
  j.interruptions.restart_time = units::minutes(5);
  j.interruptions.reprovision_failure = units::minutes(10);
  j.interruptions.reprovision_spot_mean = units::minutes(30);
  j.cost.vm_price_usd_per_hour = 98.32;
  j.cost.spot_discount = 0.7;
  const JobStatistics od = sim::simulate_job(j, 100, 11);
  std::printf("on demand: %.1f h, $%.0f, goodput %.3f, %.1f interruptions\n", od.mean_hours, od.mean_cost_usd,
              od.mean_goodput, od.mean_interruptions);
  j.interruptions.spot = true;
  double previous_goodput = od.mean_goodput, previous_interruptions = od.mean_interruptions;
  for (const double rate : {0.005, 0.02, 0.05}) {
    j.interruptions.spot_eviction_rate_per_hour = rate;
    const JobStatistics s = sim::simulate_job(j, 100, 11);
    std::printf("spot %.1f %%/h per VM: %.1f h, $%.0f, goodput %.3f, %.1f interruptions (%.1f evictions)\n",
                100.0 * rate, s.mean_hours, s.mean_cost_usd, s.mean_goodput, s.mean_interruptions,
                s.mean_evictions);
    EXPECT_LT(s.mean_goodput, previous_goodput) << rate;
    EXPECT_GT(s.mean_interruptions, previous_interruptions) << rate;
    EXPECT_GT(s.mean_hours, od.mean_hours) << rate;
    // VMs only (no storage or egress price): cost = vm_hours x $98.32 x (1 - 0.7).
    for (const JobReplication& r : s.runs) EXPECT_NEAR(r.cost_usd, r.vm_hours * 98.32 * 0.3, 1e-9 * r.cost_usd);
    previous_goodput = s.mean_goodput;
    previous_interruptions = s.mean_interruptions;
    if (rate == 0.005) {
      EXPECT_LT(s.mean_cost_usd, od.mean_cost_usd);
    }
  }
  for (const JobReplication& r : od.runs) EXPECT_NEAR(r.cost_usd, r.vm_hours * 98.32, 1e-9 * r.cost_usd);
}

// ---- errors -------------------------------------------------------------------------------------------------------

TEST(JobSimulation, RejectsBadInput) {
  const JobSpec good = base_job(10, 1.0, 1.0);
  EXPECT_THROW(sim::simulate_job(good, 0, 1), std::invalid_argument);
  JobSpec j = good;
  j.steps = 0;
  EXPECT_THROW(sim::simulate_job(j, 1, 1), std::invalid_argument);
  j = good;
  j.step_time = Seconds(0);
  EXPECT_THROW(sim::simulate_job(j, 1, 1), std::invalid_argument);
  j = good;
  j.checkpoint.write_bandwidth = units::BytesPerSecond(0);
  EXPECT_THROW(sim::simulate_job(j, 1, 1), std::invalid_argument);
  j = good;
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 0;
  EXPECT_THROW(sim::simulate_job(j, 1, 1), std::invalid_argument);
  j = good;
  j.interruptions.eviction_trace = {Seconds(1)};  // without spot
  EXPECT_THROW(sim::simulate_job(j, 1, 1), std::invalid_argument);
  j = good;
  j.cost.spot_discount = 1.5;
  EXPECT_THROW(sim::simulate_job(j, 1, 1), std::invalid_argument);
  // Interruptions every 36 s on average against 1000 s cycles: e^{1000/36} segments never finish.
  j = base_job(100, 1000.0, 1.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 1;
  j.interruptions.failure_rate_per_gpu_day = failure_rate_for(36.0);
  const sim::JobStatistics hopeless = sim::simulate_job(j, 1, 1);
  EXPECT_FALSE(hopeless.feasible);
  EXPECT_NE(hopeless.infeasible_reason.find("interruptions are too frequent"), std::string::npos);
  EXPECT_TRUE(hopeless.runs.empty());
  EXPECT_TRUE(std::isnan(hopeless.mean_hours));
  EXPECT_THROW(sim::simulate_replication(j, 1, 1, 0), sim::JobInfeasible);
}

// The job verdicts: work beyond the horizon, and a recovery or a checkpoint write longer than the horizon (the
// engine's clock would overflow in a replication's sums); none is an exception.
TEST(JobSimulation, JobsThatCannotFinishAreVerdictsNotErrors) {
  JobSpec j = base_job(1000, 1.0e7, 1.0);  // 1e10 s of work: 317 years
  sim::JobStatistics s = sim::simulate_job(j, 3, 1);
  EXPECT_FALSE(s.feasible);
  EXPECT_NE(s.infeasible_reason.find("the work alone"), std::string::npos) << s.infeasible_reason;
  EXPECT_EQ(s.replications, 3);
  j = base_job(100, 10.0, 1.0);
  j.checkpoint.write_bandwidth = units::BytesPerSecond(1e-9);
  s = sim::simulate_job(j, 2, 1);
  EXPECT_FALSE(s.feasible);
  EXPECT_NE(s.infeasible_reason.find("checkpoint write"), std::string::npos) << s.infeasible_reason;
  j = base_job(100, 10.0, 1.0);
  j.interruptions.restart_time = Seconds(5.0e9);
  s = sim::simulate_job(j, 2, 1);
  EXPECT_FALSE(s.feasible);
  EXPECT_NE(s.infeasible_reason.find("restart"), std::string::npos) << s.infeasible_reason;
  EXPECT_TRUE(sim::simulate_job(base_job(100, 10.0, 1.0), 2, 1).feasible);
}

// The event budget: a run of 100 cycles spends about 100 events, so 5 replications fit 1,000 and 20 do not.
TEST(JobSimulation, AnEventBudgetBoundsTheMonteCarlo) {
  JobSpec j = base_job(100, 10.0, 1.0);
  j.checkpoint.kind = CheckpointPolicy::Kind::steps;
  j.checkpoint.every_steps = 1;
  EXPECT_NO_THROW(sim::simulate_job(j, 5, 1, 1000));
  EXPECT_THROW(sim::simulate_job(j, 20, 1, 1000), sim::JobBudgetExceeded);
  EXPECT_EQ(sim::simulate_job(j, 5, 1, 1000).mean_hours, sim::simulate_job(j, 5, 1).mean_hours);
}

// Issue 26 defect 11: replayed evictions spend the event budget, those inside a downtime too (they spent none, so a
// 10^7-line trace ran about an hour). 5,000 evictions within the downtime after the one at 1,240 s change nothing
// in the run (BlockingEvictionLosesWorkSinceLastCheckpoint's 9,500 s) but cost 5,000 events.
TEST(JobSimulation, ReplayedEvictionsSpendTheEventBudget) {
  JobSpec j = trace_job(1240.0);
  for (int i = 1; i < 5000; ++i) j.interruptions.eviction_trace.push_back(Seconds(1240.0 + 0.01 * i));
  EXPECT_THROW(sim::simulate_job(j, 1, 3, 1000), sim::JobBudgetExceeded);
  const JobReplication r = sim::simulate_job(j, 1, 3, 100000).runs[0];
  EXPECT_EQ(r.wall_time.value(), 9500.0);
  EXPECT_EQ(r.evictions, 1);
}

}  // namespace
