// Serving simulation speed (issue 15's target: one hour of traffic at 100 requests/s, 360,000 requests, in under
// 10 s on one core). Llama 2 7B on 8 replicas of one H100 each, Poisson arrivals, prompts uniform in
// [128, 2048] tokens and outputs uniform in [16, 512] (means about 1,088 and 264).
// BM_ServeOneHourAt100PerSecondWithPrefixCaching (issue 30: at most 2x the time of the same stream without): the
// same requests, the first min(512, prompt) tokens of each one of 4 shared system prompts, prefix caching on and
// prefix-aware routing; every other block is unique and still enters each replica's cache (a hash map insert per
// full block computed, prompt and output).
// Counters: requests (simulated), engine_iterations (batches the replicas ran, all together), p50_ttft_s (median
// time to first token, s: what the model predicts, not a cost).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "tests/support/models.hpp"

namespace {

using namespace clustersim;

/// Llama 2 7B on one H100 per replica, as every case here serves it.
std::shared_ptr<const models::InferenceModel> llama2_7b_on_h100() {
  const auto catalog = models::Catalog::load(models::Catalog::default_directory());
  return std::make_shared<const models::InferenceModel>(testing::llama2_7b(), models::ServingNumerics{}, 1,
                                                        catalog.device("H100-SXM5-80GB"), 1.0, nullptr,
                                                        models::EngineOverhead{});
}

/// The hour of requests every case serves (seed 1: Poisson at 100/s, prompts in [128, 2048], outputs in [16, 512]);
/// with `shared_prefixes`, each one's first min(512, prompt) tokens are one of 4 system prompts.
std::vector<sim::ServingRequest> one_hour_at_100_per_second(bool shared_prefixes) {
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(100.0);
  std::uniform_int_distribution<int64_t> prompt(128, 2048), output(16, 512);
  std::vector<sim::ServingRequest> requests;
  double t = 0.0;
  while (t < 3600.0) {
    t += gap(rng);
    requests.push_back({t, prompt(rng), output(rng)});
    if (shared_prefixes) {
      requests.back().prefix_id = static_cast<int64_t>(requests.size() % 4);
      requests.back().prefix_tokens = std::min<int64_t>(512, requests.back().prompt_tokens);
    }
  }
  return requests;
}

/// Runs `setup` on `requests` once per benchmark iteration (the timed part: the run, the median TTFT's selection and
/// the result's release) and sets the counters; returns the last run's held transfers (split pools).
int64_t serve(benchmark::State& state, const sim::ServingSetup& setup, const std::vector<sim::ServingRequest>& requests) {
  int64_t iterations = 0, held = 0;
  double p50_ttft = 0.0;
  for (auto _ : state) {
    const sim::ServingResult r = sim::simulate_serving(setup, requests);
    iterations = r.iterations;
    held = r.held_transfers;
    std::vector<double> ttft;
    for (const auto& o : r.requests) ttft.push_back(o.ttft_s());
    std::nth_element(ttft.begin(), ttft.begin() + static_cast<long>(ttft.size() / 2), ttft.end());
    p50_ttft = ttft[ttft.size() / 2];
  }
  state.counters["requests"] = static_cast<double>(requests.size());
  state.counters["engine_iterations"] = static_cast<double>(iterations);
  state.counters["p50_ttft_s"] = p50_ttft;
  return held;
}

void serve_one_hour(benchmark::State& state, bool prefix_caching) {
  sim::ServingSetup setup;
  setup.model = llama2_7b_on_h100();
  setup.replicas = state.range(0);
  setup.routing = prefix_caching ? sim::Routing::prefix_aware : sim::Routing::least_outstanding;
  setup.policy.prefix_caching = prefix_caching;
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, setup.policy.max_num_batched_tokens, setup.policy.max_num_seqs, 16});
  serve(state, setup, one_hour_at_100_per_second(prefix_caching));
}
void BM_ServeOneHourAt100PerSecond(benchmark::State& state) { serve_one_hour(state, false); }
void BM_ServeOneHourAt100PerSecondWithPrefixCaching(benchmark::State& state) { serve_one_hour(state, true); }
BENCHMARK(BM_ServeOneHourAt100PerSecondWithPrefixCaching)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_ServeOneHourAt100PerSecond)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// Split pools (issue 30; sim/serving/kv_transfer.hpp): the same hour on range(0) prefill replicas and range(1)
// decode replicas of one H100 each, each KV cache a flow over one NDR port per replica (50 GB/s). Counters as
// above, plus held_transfers (transfers that waited for a decode replica's free blocks).
void BM_ServeOneHourAt100PerSecondSplitPools(benchmark::State& state) {
  sim::ServingSetup setup;
  setup.model = llama2_7b_on_h100();
  setup.replicas = state.range(0);
  setup.routing = sim::Routing::least_outstanding;
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, setup.policy.max_num_batched_tokens, setup.policy.max_num_seqs, 16});
  sim::DecodePool d;
  d.model = setup.model;
  d.kv_cache_tokens = setup.kv_cache_tokens;
  d.replicas = state.range(1);
  d.network.prefill_nic_bytes_per_s = d.network.decode_nic_bytes_per_s = 50e9;
  d.network.infiniband_latency_s = 2.26e-6;
  d.network.kv_bytes_per_token = setup.model->kv_bytes_per_token_per_gpu().value();
  setup.decode_pool = d;
  state.counters["held_transfers"] = static_cast<double>(serve(state, setup, one_hour_at_100_per_second(false)));
}
BENCHMARK(BM_ServeOneHourAt100PerSecondSplitPools)
    ->Args({3, 5})
    ->Args({6, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
