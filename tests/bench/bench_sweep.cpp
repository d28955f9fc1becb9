// Benchmark of sweep throughput (issue 6, item 6: a replica-fidelity layout search at >= 1,000 points/s with
// -j 2 on the 2-core machine).
//
// The sweep: scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml, GPT-3 175B on 128 ND96amsr_A100_v4 (1,024
// A100), parallelism = "auto": every valid tensor/pipeline/data/micro-batch/virtual-stage layout. Each
// iteration runs all its points with run_sweep (what `clustersim sweep` runs, without the sidecar and the
// results file) on 1 or 2 threads, each thread with a fresh StepSimulator as in the command. Loading and
// expanding the sweep (enumerate_layouts) is measured separately (BM_LoadLayoutSearch).
// BM_MoeLayoutSearch: issue 13's target, scenarios/sweeps/deepseek-v3-like-2048-h100-32k-layouts.toml (a
// DeepSeek-V3-like MoE at 32K on 2,048 H100, tensor/context/pipeline/data/expert/micro-batch layouts): load,
// expand and simulate every point with -j 2, the whole `clustersim sweep` but the file; target < 5 s.
// Counters: points_per_s (points simulated per wall-clock second), points, ok_points (points with status ok).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace {

using namespace clustersim;

const std::string kScenario = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml";
const std::string kMoeScenario =
    std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/sweeps/deepseek-v3-like-2048-h100-32k-layouts.toml";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

void BM_LayoutSearch(benchmark::State& state) {
  const sim::LoadedSweep sweep = sim::load_sweep(kScenario, {}, catalog());
  std::vector<const sim::SweepPoint*> points;
  for (const sim::SweepPoint& p : sweep.points) points.push_back(&p);
  sim::SweepRunOptions options;
  options.jobs = static_cast<int>(state.range(0));
  size_t ok = 0;
  for (auto _ : state) {
    const auto rows = sim::run_sweep(sweep, catalog(), points, options);
    ok = 0;
    for (const auto& r : rows) ok += r.status == "ok" ? 1 : 0;
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["points"] = static_cast<double>(points.size());
  state.counters["ok_points"] = static_cast<double>(ok);
  state.counters["points_per_s"] = benchmark::Counter(static_cast<double>(points.size()) *
                                                      static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LayoutSearch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same points on warm clusters: one ClusterCache kept across iterations (SweepRunOptions::clusters), filled
// by a run before the timing, so every collective pattern is solved already and a point costs its load, one
// warm step (build the program from memoised solves, execute it) and its row. What a second sweep of the same
// cluster in one process (a notebook, a service) pays per point.
void BM_LayoutSearchWarm(benchmark::State& state) {
  const sim::LoadedSweep sweep = sim::load_sweep(kScenario, {}, catalog());
  std::vector<const sim::SweepPoint*> points;
  for (const sim::SweepPoint& p : sweep.points) points.push_back(&p);
  sim::SweepRunOptions options;
  options.jobs = static_cast<int>(state.range(0));
  options.clusters = std::make_shared<sim::ClusterCache>();
  benchmark::DoNotOptimize(sim::run_sweep(sweep, catalog(), points, options).data());  // fills the caches
  for (auto _ : state) {
    const auto rows = sim::run_sweep(sweep, catalog(), points, options);
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["points"] = static_cast<double>(points.size());
  state.counters["points_per_s"] = benchmark::Counter(static_cast<double>(points.size()) *
                                                      static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LayoutSearchWarm)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadLayoutSearch(benchmark::State& state) {
  size_t n = 0;
  for (auto _ : state) {
    const sim::LoadedSweep sweep = sim::load_sweep(kScenario, {}, catalog());
    n = sweep.points.size();
    benchmark::DoNotOptimize(std::as_const(n));  // const: see bench_job.cpp (GCC and "+m,r")
  }
  state.counters["points"] = static_cast<double>(n);
}
BENCHMARK(BM_LoadLayoutSearch)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MoeLayoutSearch(benchmark::State& state) {
  size_t n = 0, ok = 0;
  for (auto _ : state) {
    const sim::LoadedSweep sweep = sim::load_sweep(kMoeScenario, {}, catalog(), 2);
    std::vector<const sim::SweepPoint*> points;
    for (const sim::SweepPoint& p : sweep.points) points.push_back(&p);
    sim::SweepRunOptions options;
    options.jobs = 2;
    const auto rows = sim::run_sweep(sweep, catalog(), points, options);
    n = points.size();
    ok = 0;
    for (const auto& r : rows) ok += r.status == "ok" ? 1 : 0;
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["points"] = static_cast<double>(n);
  state.counters["ok_points"] = static_cast<double>(ok);
}
BENCHMARK(BM_MoeLayoutSearch)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
