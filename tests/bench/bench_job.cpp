// Benchmark of the job-level simulation (issue 5: 1,000 replications of a month-long job in under 1 s).
//
// The job: 64 VMs of 8 H100 (512 GPUs), 30 days of work in 10 s steps (259,200 steps), a blocking checkpoint
// every 30 min (1 TB at 100 GB/s: 10 s), failures at the Llama 3 rate (419 per 54 days on 16,384 GPUs: one
// every 4.1 days on 512 GPUs), detection 1 min, restart 5 min, failed VMs replaced in 10 min, spot capacity back
// after 30 min on average. Cases: on demand; spot at 0.5 %/h and 5 %/h per VM (5 %/h on 64 VMs is an eviction
// every 19 min: the job runs for months of wall time, so this is the heavy case).
// Counters: replications_per_s, events_per_rep (cycles + interruptions + resumes, approximately: checkpoints +
// 2 x interruptions), wall_days (mean wall time to finish, days: at least the 30 days of work; about 30.3 on
// demand), goodput (mean productive / wall time, a fraction). A case whose wall_days is not finite or is shorter
// than the job's work fails (SkipWithError; the program then exits 1: bench_main.cpp).
//
// DoNotOptimize takes the result by const reference: Google Benchmark 1.7.1's non-const overload (GCC: an
// in-out asm operand "+m,r") made GCC 12 -O3 write a stale stack slot back into s.mean_hours after each iteration,
// so wall_days printed 0 or 2.9e-311 (google/benchmark#903 reports the same for doubles).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "models/reliability/job_model.hpp"
#include "sim/job/job_simulation.hpp"

namespace {

using namespace clustersim;

models::JobSpec month_long_job(double eviction_rate_per_hour) {
  models::JobSpec j;
  j.steps = 259200;
  j.step_time = units::seconds(10.0);
  j.vms = 64;
  j.checkpoint.kind = models::CheckpointPolicy::Kind::minutes;
  j.checkpoint.every = units::minutes(30);
  j.checkpoint.size = units::gigabytes(1000.0);
  j.checkpoint.write_bandwidth = units::gigabytes_per_second(100.0);
  j.checkpoint.read_bandwidth = units::gigabytes_per_second(100.0);
  j.interruptions.gpus_per_vm = 8;
  j.interruptions.failure_rate_per_gpu_day = 419.0 / (16384.0 * 54.0);
  j.interruptions.spot = eviction_rate_per_hour > 0.0;
  j.interruptions.spot_eviction_rate_per_hour = eviction_rate_per_hour;
  j.interruptions.detection_time = units::minutes(1);
  j.interruptions.restart_time = units::minutes(5);
  j.interruptions.reprovision_failure = units::minutes(10);
  j.interruptions.reprovision_spot_mean = units::minutes(30);
  j.cost.vm_price_usd_per_hour = 98.32;
  j.cost.spot_discount = 0.7;
  return j;
}

void BM_MonthLongJob(benchmark::State& state) {
  const double rate = static_cast<double>(state.range(0)) / 1000.0;  // per mille per hour
  const models::JobSpec job = month_long_job(rate);
  constexpr int64_t kReplications = 1000;
  sim::JobStatistics s;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    s = sim::simulate_job(job, kReplications, 1);
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    benchmark::DoNotOptimize(std::as_const(s));
  }
  const double wall_days = s.mean_hours / 24.0;
  const double work_days = static_cast<double>(job.steps) * job.step_time.value() / 86400.0;
  if (!s.feasible || !std::isfinite(wall_days) || wall_days < work_days) {
    const std::string why = "wall_days = " + std::to_string(wall_days) +
                            ": not finite or shorter than the job's work of " + std::to_string(work_days) + " days";
    state.SkipWithError(why.c_str());
    return;
  }
  state.counters["replications_per_s"] =
      benchmark::Counter(static_cast<double>(kReplications), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["events_per_rep"] = s.mean_checkpoints + 2.0 * s.mean_interruptions;
  state.counters["wall_days"] = wall_days;
  state.counters["goodput"] = s.mean_goodput;
  state.SetLabel(rate > 0.0 ? "spot" : "on demand");
}

BENCHMARK(BM_MonthLongJob)->Arg(0)->Arg(5)->Arg(50)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
