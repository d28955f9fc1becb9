// Benchmarks of one training-step simulation (issue 4): GPT-3 175B, TP 8 x PP 8, on ND96amsr_A100_v4 nodes.
// replica fidelity at 1,536, 16,384 and 131,072 GPUs (issue 31), full fidelity at 1,024 and 16,384 GPUs. Reports wall time of
// the first configuration on a cluster (cold: topology build and flow solves) and of a further configuration
// on the same cluster (warm: the StepSimulator reuses the topology and memoised solves), and peak memory.
// Counters: cold_ms, warm_ms, peak_MiB (the process's VmHWM so far, MiB), step_s (the simulated step time, s).
#include <benchmark/benchmark.h>

#include <chrono>
#include <fstream>
#include <string>

#include "models/hardware/catalog.hpp"
#include "sim/step/step_simulation.hpp"

namespace {

using namespace clustersim;

/// VmHWM (peak resident set) in MiB, or 0 when /proc is not readable.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      status >> kb;
      return kb / 1024.0;
    }
    std::string rest;
    std::getline(status, rest);
  }
  return 0.0;
}

models::StepSetup gpt3(int64_t gpus, int64_t global_batch) {
  models::StepSetup s;
  s.model = {96, 12288, 96, 96, 49152, 51200, 2048, false};
  s.training.global_batch_size = global_batch;
  s.training.micro_batch_size = 1;
  s.training.precision = models::Precision::bf16;
  s.training.activation_recompute = models::Recompute::full;
  s.parallelism.tensor = 8;
  s.parallelism.pipeline = 8;
  s.parallelism.data = gpus / 64;
  s.gpus_per_node = 8;
  return s;
}

void BM_Step(benchmark::State& state) {
  const int64_t gpus = state.range(0);
  const bool full = state.range(1) != 0;
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  const models::VmSize& vm = catalog.vm_size("Standard_ND96amsr_A100_v4");
  sim::NetworkSetup net;
  net.topology.nodes = gpus / 8;
  net.full_fidelity = full;
  const models::StepSetup setup = gpt3(gpus, 2 * gpus);  // 2 sequences per GPU: m = 16 microbatches
  models::StepSetup other = setup;
  other.training.micro_batch_size = 2;  // a second configuration on the same cluster
  double cold_ms = 0, warm_ms = 0, step_s = 0;
  for (auto _ : state) {
    sim::StepSimulator simulator;
    const auto t0 = std::chrono::steady_clock::now();
    step_s = simulator.simulate(setup, vm, catalog.device(vm.device), net).step_time.value();
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(simulator.simulate(other, vm, catalog.device(vm.device), net));
    const auto t2 = std::chrono::steady_clock::now();
    cold_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    warm_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  state.counters["cold_ms"] = cold_ms;
  state.counters["warm_ms"] = warm_ms;
  state.counters["peak_MiB"] = peak_rss_mib();
  state.counters["step_s"] = step_s;
  state.SetLabel(full ? "full fidelity" : "replica");
}

BENCHMARK(BM_Step)->Args({1536, 0})->Args({16384, 0})->Args({131072, 0})->Args({1024, 1})->Args({16384, 1})
    ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
