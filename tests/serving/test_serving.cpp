// Serving (issue 15): the iteration time model against its closed forms, and the continuous-batching simulation
// against queueing theory and hand-counted KV-cache admissions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/network/topology.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/io/request_trace.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/serving_summary.hpp"
#include "sim/serving/tensor_parallel.hpp"
#include "sim/serving/workload.hpp"
#include "tests/support/models.hpp"

namespace clustersim::sim {
namespace {

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

using testing::llama2_7b;

/// The H100 without its measured kernel tables: the roofline the hand calculations below assume (the tables
/// are checked in tests/step/test_measured_kernels.cpp). Static: an InferenceModel keeps a pointer to its device.
const models::DeviceSpec& roofline_h100() {
  static const models::DeviceSpec d = [] {
    models::DeviceSpec spec = catalog().device("H100-SXM5-80GB");
    spec.gemm_correction = nullptr;
    spec.attention_table = nullptr;
    return spec;
  }();
  return d;
}

std::shared_ptr<const models::InferenceModel> h100_7b(models::EngineOverhead overhead = {}) {
  return std::make_shared<const models::InferenceModel>(llama2_7b(), models::ServingNumerics{}, 1,
                                                        catalog().device("H100-SXM5-80GB"), 1.0, nullptr, overhead);
}

TEST(InferenceModel, DecodeAtBatchOneReadsTheWeightsOnceAtTheMemoryBandwidth) {
  // One sequence decoding: every GEMM is [1, N, K], memory-bound on its K x N weights, so the GEMM time is the
  // weights read (the layers' and the LM head's; the embedding table is not read) over the measured stream
  // bandwidth, plus one kernel overhead per GEMM.
  const auto model = std::make_shared<const models::InferenceModel>(llama2_7b(), models::ServingNumerics{}, 1,
                                                                    roofline_h100(), 1.0, nullptr,
                                                                    models::EngineOverhead{});
  models::IterationBatch b;
  b.decode_sequences = 1;
  b.decode_kv_tokens = 100;
  b.sampled_sequences = 1;
  const models::IterationTime t = model->iteration_time(b);
  const double h = 4096, f = 11008;
  const double layer_weights = h * 3 * h + h * h + 3 * h * f;  // QKV, output, gate+up and down
  const double bytes = 2.0 * (32 * layer_weights + 32000 * h);
  const double bandwidth = catalog().device("H100-SXM5-80GB").achievable_memory_bandwidth.value();
  const double kernels = 32 * 4 + 1;
  const double expected = bytes / bandwidth + kernels * models::ComputeModel::kKernelOverhead.value();
  EXPECT_NEAR(t.gemm.value(), expected, 0.01 * expected);
  EXPECT_EQ(t.communication.value(), 0.0);  // tensor 1
  // The weights a GPU holds: the same layers plus the embedding table.
  EXPECT_NEAR(model->weight_bytes_per_gpu().value(), bytes + 2.0 * 32000 * h + 2.0 * 32 * 2 * h, 1.0);
}

TEST(InferenceModel, AnMoeDecodeReadsOnlyTheExpertsItsTokensPick) {
  // Mixtral 8x7B's shape (Jiang et al. 2024): 8 experts, top 2. One decoding sequence touches 2 experts per
  // layer, so the GEMMs read the attention weights, the router and two experts' weights: the same bytes as a
  // dense model of twice the MLP width, plus the router (16 bits) and one kernel more per layer.
  EXPECT_DOUBLE_EQ(models::moe_experts_touched(1, 8, 2), 2.0);
  EXPECT_DOUBLE_EQ(models::moe_experts_touched(0, 8, 2), 0.0);
  EXPECT_NEAR(models::moe_experts_touched(64, 8, 2), 8.0, 1e-6);  // a batch of 64 touches every expert
  models::ModelConfig mixtral = llama2_7b();
  mixtral.num_query_groups = 8;
  mixtral.ffn_hidden_size = 14336;
  mixtral.vocab_size = 32000;
  mixtral.num_experts = 8;
  mixtral.moe_router_topk = 2;
  const models::DeviceSpec& h100 = roofline_h100();
  const models::InferenceModel moe(mixtral, {}, 1, h100, 1.0, nullptr, {});
  models::IterationBatch b;
  b.decode_sequences = 1;
  b.decode_kv_tokens = 100;
  b.sampled_sequences = 1;
  const double h = 4096, f = 14336, kv = 8 * 128;
  const double attention = h * (h + 2 * kv) + h * h;
  const double bytes = 2.0 * (32 * (attention + 2 * 3 * h * f + 8 * h) + 32000 * h);
  const double bandwidth = h100.achievable_memory_bandwidth.value();
  const double kernels = 32 * 5 + 1;  // QKV, output, router, experts' gate+up and down; the LM head
  const double expected = bytes / bandwidth + kernels * models::ComputeModel::kKernelOverhead.value();
  EXPECT_NEAR(moe.iteration_time(b).gemm.value(), expected, 0.01 * expected);
  // It holds all eight experts: 46.7 billion parameters (Mixtral's count), in bf16.
  EXPECT_NEAR(moe.weight_bytes_per_gpu().value() / 2.0, 46.7e9, 0.1e9);
  // A batch of 256 decodes reads every expert once: far less than 128 times one sequence's experts.
  b.decode_sequences = 256;
  b.decode_kv_tokens = 256 * 100;
  b.sampled_sequences = 256;
  EXPECT_LT(moe.iteration_time(b).gemm.value(), 4.0 * expected);
  // Tensor parallelism must divide the experts' width (a located loader error names it first).
  mixtral.moe_ffn_hidden_size = 1001;
  EXPECT_THROW(models::InferenceModel(mixtral, {}, 2, h100, 1.0, [](units::Bytes) { return units::Seconds(0); }, {}),
               std::invalid_argument);
}

TEST(InferenceModel, PipelineStagesSplitTheLayersAndAddTheirSends) {
  // Llama 2 7B in two stages of one GPU: each GPU holds 16 layers and one of the two vocabulary tables, a token's
  // KV cache is half as wide per GPU, and one iteration runs the same kernels as one stage of 32 layers plus the
  // send of the hidden states and residual (2 x T x h, 16 bits) over the boundary.
  const auto one = h100_7b();
  const models::DeviceSpec& h100 = catalog().device("H100-SXM5-80GB");
  double sent_bytes = 0;
  const models::InferenceModel two(llama2_7b(), {}, 1, h100, 1.0, nullptr, {},
                                   {2, [&sent_bytes](units::Bytes b) {
                                      sent_bytes = b.value();
                                      return units::Seconds(1e-4);
                                    }});
  const double h = 4096, layer = 2.0 * (h * 3 * h + h * h + 3 * h * 11008 + 2 * h);
  EXPECT_NEAR(two.weight_bytes_per_gpu().value(), 16 * layer + 2.0 * 32000 * h, 1.0);
  EXPECT_NEAR(one->weight_bytes_per_gpu().value(), 32 * layer + 2.0 * 2 * 32000 * h, 1.0);
  EXPECT_DOUBLE_EQ(two.kv_bytes_per_token_per_gpu().value(), one->kv_bytes_per_token_per_gpu().value() / 2);
  models::IterationBatch b;
  b.prefill_tokens = 500;
  b.prefill_attention_pairs = models::prefill_attention_pairs(0, 500);
  b.sampled_sequences = 1;
  const models::IterationTime t1 = one->iteration_time(b), t2 = two.iteration_time(b);
  EXPECT_DOUBLE_EQ(t2.gemm.value(), t1.gemm.value());
  EXPECT_DOUBLE_EQ(t2.attention.value(), t1.attention.value());
  EXPECT_DOUBLE_EQ(t2.communication.value(), t1.communication.value() + 1e-4);
  EXPECT_DOUBLE_EQ(sent_bytes, 2.0 * 500 * h * 2.0);
  // Twice the cache per replica: each GPU's share of a token is half.
  EXPECT_GT(two.kv_cache_tokens({0.9, false, 8192, 256, 16}), 2 * one->kv_cache_tokens({0.9, false, 8192, 256, 16}));
  EXPECT_THROW(models::InferenceModel(llama2_7b(), {}, 1, h100, 1.0, nullptr, {}, {2, nullptr}), std::invalid_argument);
  EXPECT_THROW(models::InferenceModel(llama2_7b(), {}, 1, h100, 1.0, nullptr, {}, {33, [](units::Bytes) {
                                        return units::Seconds(0);
                                      }}),
               std::invalid_argument);
}

TEST(InferenceModel, KvCacheIsWhatTheWeightsAndActivationsLeave) {
  const auto model = h100_7b();
  // 2 (K, V) x 32 layers x 32 heads x 128 x 2 bytes = 512 KiB per token.
  EXPECT_DOUBLE_EQ(model->kv_bytes_per_token_per_gpu().value(), 2.0 * 32 * 32 * 128 * 2);
  const double capacity = catalog().device("H100-SXM5-80GB").memory_capacity.value();
  const double activations = 8192.0 * (3 * 11008 + 4 * 4096) * 2.0 + 256.0 * 32000 * 4.0;
  const double free = 0.9 * capacity - model->weight_bytes_per_gpu().value() - activations -
                      models::InferenceModel::kNonTorchReserve.value();
  const auto tokens = static_cast<int64_t>(std::floor(free / (2.0 * 32 * 32 * 128 * 2))) / 16 * 16;
  EXPECT_EQ(model->kv_cache_tokens({0.9, false, 8192, 256, 16}), tokens);
  EXPECT_GT(tokens, 80000);  // about 40 GB of cache on an 80 GB H100 for a 13.5 GB model
  // Tensor parallelism splits the heads and so the cache per token.
  const models::InferenceModel tp2(llama2_7b(), {}, 2, catalog().device("H100-SXM5-80GB"), 1.0,
                                   [](units::Bytes) { return units::Seconds(1e-5); }, {});
  EXPECT_DOUBLE_EQ(tp2.kv_bytes_per_token_per_gpu().value(), model->kv_bytes_per_token_per_gpu().value() / 2);
  EXPECT_THROW(models::InferenceModel(llama2_7b(), {}, 3, catalog().device("H100-SXM5-80GB"), 1.0,
                                      [](units::Bytes) { return units::Seconds(0); }, {}),
               std::invalid_argument);
}

TEST(ServingSimulation, OneAtATimeAtLowLoadIsAnMD1Queue) {
  // max_num_seqs 1 and one output token: each request is one prefill iteration of the same length S, served
  // first come first served: an M/D/1 queue. Mean wait (Pollaczek-Khinchine) = rho S / (2 (1 - rho)).
  ServingSetup setup;
  setup.model = h100_7b();
  setup.policy.max_num_seqs = 1;
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, setup.policy.max_num_batched_tokens, setup.policy.max_num_seqs, 16});
  models::IterationBatch b;
  b.prefill_tokens = 512;
  b.prefill_attention_pairs = models::prefill_attention_pairs(0, 512);
  b.sampled_sequences = 1;
  const double service = setup.model->iteration_time(b).total().value();
  for (const double rho : {0.3, 0.6}) {
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> gap(rho / service);
    std::vector<ServingRequest> requests;
    double t = 0.0;
    for (int i = 0; i < 40000; ++i) {
      t += gap(rng);
      requests.push_back({t, 512, 1});
    }
    const ServingResult r = simulate_serving(setup, requests);
    double ttft = 0.0;
    for (const RequestOutcome& o : r.requests) ttft += o.ttft_s();
    ttft /= static_cast<double>(r.requests.size());
    const double theory = service + rho * service / (2.0 * (1.0 - rho));
    EXPECT_NEAR(ttft, theory, 0.03 * theory) << "rho " << rho;
    EXPECT_EQ(r.iterations, 40000);
  }
}

/// Requests all arriving at 0 on a replica with a KV cache of `tokens`, without engine overhead.
ServingResult at_once(int64_t tokens, const std::vector<std::pair<int64_t, int64_t>>& prompt_output,
                      models::CapacityPolicy admission = models::CapacityPolicy::max_utilization) {
  ServingSetup setup;
  setup.model = h100_7b(models::EngineOverhead{units::Seconds(0.0), units::Seconds(0.0)});
  setup.kv_cache_tokens = tokens;
  setup.policy.admission = admission;
  std::vector<ServingRequest> requests;
  for (const auto& [prompt, output] : prompt_output) requests.push_back({0.0, prompt, output});
  return simulate_serving(setup, requests);
}

TEST(ServingSimulation, KvCacheAdmitsWhatFitsAndQueuesTheRest) {
  // 4 blocks of 16 tokens. A 20-token prompt needs 2 blocks (its 20 tokens and the first output's), and 20 + 5
  // tokens still fit in them: the first two requests run together, the third waits for a finished one.
  const ServingResult r = at_once(64, {{20, 5}, {20, 5}, {20, 5}});
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, r.requests[1].first_token_s);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, r.requests[1].finish_s);
  EXPECT_GE(r.requests[2].first_token_s, r.requests[0].finish_s);
  for (const RequestOutcome& o : r.requests) EXPECT_EQ(o.preemptions, 0);
  // 5 iterations for the pair (a prefill, then 4 decodes), 5 for the third.
  EXPECT_EQ(r.iterations, 10);
}

TEST(ServingSimulation, AFullCachePreemptsTheNewestWhichRecomputes) {
  // 4 blocks; two 30-token prompts take 2 blocks each. At 32 cached tokens both need a third block: the newer
  // is preempted, the older finishes, then the newer recomputes its prompt and the 2 tokens it had generated.
  const ServingResult r = at_once(64, {{30, 20}, {30, 20}});
  EXPECT_EQ(r.requests[0].preemptions, 0);
  EXPECT_EQ(r.requests[1].preemptions, 1);
  EXPECT_LT(r.requests[0].finish_s, r.requests[1].finish_s);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, r.requests[1].first_token_s);  // both prefilled together
  // A request that can never fit (more than the 4 blocks) is rejected, not run.
  const ServingResult big = at_once(64, {{60, 10}});
  EXPECT_TRUE(big.requests[0].rejected);
  EXPECT_TRUE(std::isnan(big.requests[0].finish_s));
}

TEST(ServingSimulation, GuaranteedNoEvictReservesTheWholeOutputAndNeverPreempts) {
  // The two requests of the test above, under TensorRT-LLM's default: each needs blocks for 30 + 20 tokens (4 of
  // 16) before it starts, so the second waits for the first to finish instead of being preempted.
  const ServingResult r = at_once(64, {{30, 20}, {30, 20}}, models::CapacityPolicy::guaranteed_no_evict);
  for (const RequestOutcome& o : r.requests) EXPECT_EQ(o.preemptions, 0);
  EXPECT_GE(r.requests[1].first_token_s, r.requests[0].finish_s);
  EXPECT_EQ(r.iterations, 40);  // one prefill and 19 decodes each, one after the other
  // Where the whole outputs fit, both run together as under max_utilization.
  const ServingResult both = at_once(128, {{30, 20}, {30, 20}}, models::CapacityPolicy::guaranteed_no_evict);
  EXPECT_DOUBLE_EQ(both.requests[0].finish_s, both.requests[1].finish_s);
  EXPECT_EQ(both.iterations, 20);
}

TEST(ServingSimulation, SameInputGivesTheSameRun) {
  ServingSetup setup;
  setup.model = h100_7b();
  setup.replicas = 3;
  setup.routing = Routing::least_outstanding;
  setup.kv_cache_tokens = 4096;
  std::vector<ServingRequest> requests;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> len(16, 600);
  for (int i = 0; i < 2000; ++i) requests.push_back({0.01 * i, len(rng), len(rng) / 4 + 1});
  const ServingResult a = simulate_serving(setup, requests), b = simulate_serving(setup, requests);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.iterations, b.iterations);
  for (size_t i = 0; i < a.requests.size(); ++i) EXPECT_EQ(a.requests[i].finish_s, b.requests[i].finish_s);
  // Every request finished after its first token, and the samples cover the run.
  for (const RequestOutcome& o : a.requests) EXPECT_GE(o.finish_s, o.first_token_s);
  EXPECT_FALSE(a.samples.empty());
  EXPECT_GE(a.samples.back().time_s + setup.sample_interval_s, a.makespan_s);
}

TEST(TensorParallel, AllReduceFollowsTheCollectiveModelOfTheVm) {
  // TP 8 on one ND H100 v5 (NVSwitch with NVLS): the interpolated time equals the collective model's at the
  // table's sizes and lies between its neighbours elsewhere; a latency floor below 256 B; TP 1 is free.
  const models::VmSize& vm = catalog().vm_size("Standard_ND96isr_H100_v5");
  const models::DeviceSpec& h100 = catalog().device(vm.device);
  const models::AllReduceTime all_reduce = tensor_parallel_all_reduce(vm, h100, 8);
  models::TopologyConfig cfg;
  cfg.fabric = models::FabricKind::single_switch;
  const models::Topology topology = models::build_topology(vm, h100, cfg);
  const models::CollectiveModel direct(topology, models::CollectiveConstants::for_vm(vm), std::nullopt);
  models::CommPattern group;
  group.groups = {{0, 1, 2, 3, 4, 5, 6, 7}};
  for (const double bytes : {1048576.0, 16777216.0}) {
    const double want = direct.collective_time(models::CollectiveOp::all_reduce, group, units::Bytes(bytes)).time.value();
    EXPECT_NEAR(all_reduce(units::Bytes(bytes)).value(), want, 1e-9 * want);
  }
  const double between = all_reduce(units::Bytes(3.0 * 1048576.0)).value();
  EXPECT_GT(between, all_reduce(units::Bytes(2.0 * 1048576.0)).value());
  EXPECT_LT(between, all_reduce(units::Bytes(4.0 * 1048576.0)).value());
  EXPECT_EQ(all_reduce(units::Bytes(10.0)).value(), all_reduce(units::Bytes(256.0)).value());
  EXPECT_EQ(tensor_parallel_all_reduce(vm, h100, 1)(units::Bytes(1e6)).value(), 0.0);
  // A replica's group stays in one NVLink domain: 16 GPUs of ND H100 v5 is two VMs.
  EXPECT_THROW((void)tensor_parallel_all_reduce(vm, h100, 16), std::invalid_argument);
  // Pipeline sends: two stages of TP 4 in one VM cross NVLink; two of TP 8 cross the VMs' InfiniBand, slower.
  const auto nvlink = pipeline_stage_send(vm, h100, 4, 2), infiniband = pipeline_stage_send(vm, h100, 8, 2);
  EXPECT_GT(nvlink(units::Bytes(64e6)).value(), 0.0);
  EXPECT_GT(infiniband(units::Bytes(64e6)).value(), 2.0 * nvlink(units::Bytes(64e6)).value());
  // Four stages of TP 8 cross three boundaries, one after the other.
  EXPECT_NEAR(pipeline_stage_send(vm, h100, 8, 4)(units::Bytes(64e6)).value(), 3.0 * infiniband(units::Bytes(64e6)).value(),
              0.05 * infiniband(units::Bytes(64e6)).value());
  EXPECT_THROW((void)pipeline_stage_send(vm, h100, 3, 4), std::invalid_argument);  // a TP group across two VMs
  // GB200: up to the rack's 72.
  const models::VmSize& gb = catalog().vm_size("Standard_ND128isr_NDR_GB200_v6");
  EXPECT_GT(tensor_parallel_all_reduce(gb, catalog().device("GB200"), 16)(units::Bytes(1e6)).value(), 0.0);
}

TEST(ServingSummary, PercentilesInterpolateAndTheSummaryCountsByHand) {
  // NumPy's linear percentile: p50 of 1..4 = 2.5, p99 = 3.97; none: NaN.
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(percentile({7}, 90), 7.0);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  // Three requests over 10 s on 2 replicas of 4 GPUs packed on one 8-GPU VM at $80/h: one meets a 0.5 s TTFT
  // target, one misses it, one was rejected.
  ServingResult r;
  r.makespan_s = 10.0;
  r.busy_s = 10.0;
  RequestOutcome fast, slow, big;
  fast = {0.0, 0.2, 2.2, 100, 11, 0, 0, false};   // TTFT 0.2 s, TPOT 0.2 s
  slow = {1.0, 2.0, 4.0, 100, 5, 1, 1, false};    // TTFT 1.0 s, TPOT 0.5 s, preempted once
  big = {2.0, std::nan(""), std::nan(""), 9000, 100, 0, 0, true};
  r.requests = {fast, slow, big};
  const ServingSummary s = summarize_serving(r, LatencyTargets{0.5, std::nullopt}, 2, 4, 8, 80.0);
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.rejected, 1);
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_DOUBLE_EQ(s.ttft_p50_s, 0.6);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 1.6);            // 16 tokens / 10 s
  EXPECT_DOUBLE_EQ(s.goodput_requests_per_s, 0.1);          // one within the target
  EXPECT_DOUBLE_EQ(s.slo_attainment, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.gpu_hours, 8 * 10.0 / 3600.0);
  EXPECT_DOUBLE_EQ(s.usd, 80.0 * 10.0 / 3600.0);            // one VM
  EXPECT_DOUBLE_EQ(s.usd_per_million_output_tokens, s.usd / 16.0 * 1e6);
  EXPECT_DOUBLE_EQ(s.utilization, 0.5);
  EXPECT_TRUE(std::isnan(summarize_serving(r, {}, 2, 4, 8, std::nullopt).usd));
}

// ---- workloads ----------------------------------------------------------------------------------------------

TEST(Workload, PoissonAndGammaArrivalsHaveTheirRateAndBurstiness) {
  for (const double cv : {1.0, 3.0}) {
    SyntheticWorkload w;
    w.arrivals = {cv == 1.0 ? ArrivalProcess::Kind::poisson : ArrivalProcess::Kind::gamma, 50.0, cv};
    w.duration_s = 2000.0;
    w.seed = 11;
    const std::vector<ServingRequest> r = generate_workload(w);
    // 100,000 arrivals expected; the count's standard deviation is about sqrt(n) cv.
    EXPECT_NEAR(static_cast<double>(r.size()), 100000.0, 5.0 * std::sqrt(100000.0) * cv);
    double sum = 0.0, sum2 = 0.0;
    for (size_t i = 1; i < r.size(); ++i) {
      const double g = r[i].arrival_s - r[i - 1].arrival_s;
      ASSERT_GE(g, 0.0);
      sum += g;
      sum2 += g * g;
    }
    const double n = static_cast<double>(r.size() - 1), mean = sum / n;
    const double sd = std::sqrt(sum2 / n - mean * mean);
    EXPECT_NEAR(mean, 0.02, 0.02 * 0.03);
    EXPECT_NEAR(sd / mean, cv, 0.05 * cv) << "cv " << cv;
  }
}

TEST(Workload, LengthsFollowTheirDistributionsAndTheSameSeedRepeats) {
  SyntheticWorkload w;
  w.arrivals.rate_per_s = 100.0;
  w.duration_s = 500.0;
  w.prompt.kind = LengthDistribution::Kind::uniform;
  w.prompt.low = 100;
  w.prompt.high = 300;
  w.output.kind = LengthDistribution::Kind::lognormal;
  w.output.median = 200;
  w.output.sigma = 0.8;
  const std::vector<ServingRequest> r = generate_workload(w);
  std::vector<double> outputs;
  double prompt_sum = 0.0;
  for (const ServingRequest& q : r) {
    ASSERT_GE(q.prompt_tokens, 100);
    ASSERT_LE(q.prompt_tokens, 300);
    prompt_sum += static_cast<double>(q.prompt_tokens);
    outputs.push_back(static_cast<double>(q.output_tokens));
  }
  EXPECT_NEAR(prompt_sum / static_cast<double>(r.size()), 200.0, 1.0);
  std::nth_element(outputs.begin(), outputs.begin() + static_cast<long>(outputs.size() / 2), outputs.end());
  EXPECT_NEAR(outputs[outputs.size() / 2], 200.0, 4.0);  // the lognormal's median
  const std::vector<ServingRequest> again = generate_workload(w);
  ASSERT_EQ(again.size(), r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(again[i].arrival_s, r[i].arrival_s);
    EXPECT_EQ(again[i].output_tokens, r[i].output_tokens);
  }
  w.prompt.low = 400;
  EXPECT_THROW((void)generate_workload(w), std::invalid_argument);
}

const std::filesystem::path kTraces = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "tests" / "serving" / "data";

/// The requests of a trace (sim/io/request_trace.hpp) within `window_s`, as the serving run builds them.
std::vector<ServingRequest> read_request_trace(const std::filesystem::path& file,
                                               std::optional<double> window_s = std::nullopt) {
  std::vector<ServingRequest> out;
  for (const TraceRequest& r : load_request_trace(file, window_s).requests) {
    out.push_back({r.arrival_s, r.prompt_tokens, r.output_tokens});
  }
  return out;
}

TEST(Workload, AzureTraceReplaysRelativeToItsFirstRequest) {
  // The first rows of Azure's 2023 conversation trace (CC-BY 4.0, Patel et al., Splitwise, ISCA 2024):
  // 2023-11-16 18:15:46.6805900,374,44 then 18:15:50.9951690,396,109.
  const std::vector<ServingRequest> r = read_request_trace(kTraces / "azure_conv_2023_first300.csv");
  ASSERT_EQ(r.size(), 300u);
  EXPECT_EQ(r[0].arrival_s, 0.0);
  EXPECT_EQ(r[0].prompt_tokens, 374);
  EXPECT_EQ(r[0].output_tokens, 44);
  EXPECT_NEAR(r[1].arrival_s, 4.314579, 1e-6);
  EXPECT_EQ(r[1].prompt_tokens, 396);
  // A window of the first 10 s.
  const std::vector<ServingRequest> window = read_request_trace(kTraces / "azure_conv_2023_first300.csv", 10.0);
  ASSERT_FALSE(window.empty());
  EXPECT_LT(window.back().arrival_s, 10.0);
  EXPECT_LT(window.size(), r.size());
  // It runs: the 200 code requests on one Llama 2 7B replica of an H100.
  ServingSetup setup;
  setup.model = h100_7b();
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, setup.policy.max_num_batched_tokens, setup.policy.max_num_seqs, 16});
  const ServingResult served = simulate_serving(setup, read_request_trace(kTraces / "azure_code_2023_first200.csv"));
  for (const RequestOutcome& o : served.requests) {
    EXPECT_FALSE(o.rejected);
    EXPECT_GT(o.ttft_s(), 0.0);
  }
}

TEST(Workload, BadTracesNameTheFileAndLine) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const auto write = [&dir](const char* name, const char* text) {
    const std::filesystem::path p = dir / name;
    std::ofstream(p) << text;
    return p;
  };
  const auto message = [](const std::filesystem::path& p) {
    try {
      (void)read_request_trace(p);
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto header = write("trace-header.csv", "time,prompt,output\n");
  EXPECT_NE(message(header).find("trace-header.csv:1: expected the header"), std::string::npos) << message(header);
  const auto zero = write("trace-zero.csv",
                          "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n"
                          "2023-11-16 18:15:47.00,0,5\n");
  EXPECT_NE(message(zero).find("trace-zero.csv:3: ContextTokens must be a whole number >= 1"), std::string::npos)
      << message(zero);
  const auto order = write("trace-order.csv",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n"
                           "2023-11-16 18:15:40.00,10,5\n");
  EXPECT_NE(message(order).find("trace-order.csv:3: timestamps must be ascending"), std::string::npos);
  const auto stamp = write("trace-stamp.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n16/11/2023,10,5\n");
  EXPECT_NE(message(stamp).find("trace-stamp.csv:2: malformed timestamp"), std::string::npos);
  for (const char* f : {"trace-header.csv", "trace-zero.csv", "trace-order.csv", "trace-stamp.csv"}) {
    std::filesystem::remove(dir / f);
  }
}

TEST(ServingSimulation, AnOfflineBatchIsSampledFromItsQueueToItsEnd) {
  // Every request at time 0: the first sample sees all of them (queued or running) and the samples cover the
  // run, as for a stream. (The first sample once ran before the arrivals and ended the series at t = 0.)
  ServingSetup setup;
  setup.model = h100_7b();
  setup.kv_cache_tokens = 4096;
  setup.sample_interval_s = 0.05;
  const std::vector<ServingRequest> requests(40, ServingRequest{0.0, 500, 50});
  const ServingResult r = simulate_serving(setup, requests);
  ASSERT_GE(r.samples.size(), 2u);
  EXPECT_EQ(r.samples.front().time_s, 0.0);
  EXPECT_EQ(r.samples.front().waiting + r.samples.front().running, 40);
  EXPECT_GE(r.samples.back().time_s + setup.sample_interval_s, r.makespan_s);
  const bool cache_used = std::any_of(r.samples.begin(), r.samples.end(),
                                      [](const ServingSample& x) { return x.kv_occupancy > 0.5; });
  EXPECT_TRUE(cache_used);
}

TEST(ServingSimulation, AClosedLoopSendsEachRequestWhenAnEarlierOneLeaves) {
  ServingSetup setup;
  setup.model = h100_7b();
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, 8192, 256, 16});
  std::vector<ServingRequest> requests(6, ServingRequest{0.0, 100, 20});
  // One client: every request arrives the moment the one before finishes.
  setup.concurrency = 1;
  const ServingResult one = simulate_serving(setup, requests);
  EXPECT_DOUBLE_EQ(one.requests[0].arrival_s, 0.0);
  for (size_t i = 1; i < requests.size(); ++i) {
    EXPECT_DOUBLE_EQ(one.requests[i].arrival_s, one.requests[i - 1].finish_s) << i;
  }
  // Three clients: never more than three requests in the fleet, and the first three sent at once.
  setup.concurrency = 3;
  const ServingResult three = simulate_serving(setup, requests);
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(three.requests[i].arrival_s, 0.0);
  for (const RequestOutcome& o : three.requests) {
    int64_t in_flight = 0;
    for (const RequestOutcome& q : three.requests) {
      if (q.arrival_s <= o.arrival_s && q.finish_s > o.arrival_s) ++in_flight;
    }
    EXPECT_LE(in_flight, 3);
  }
  EXPECT_LT(three.makespan_s, one.makespan_s);  // batching three at a time is faster than one by one
}

TEST(Workload, OfflineAndCountedStreams) {
  SyntheticWorkload w;
  w.arrivals.kind = ArrivalProcess::Kind::at_once;
  w.requests = 50;
  const std::vector<ServingRequest> offline = generate_workload(w);
  ASSERT_EQ(offline.size(), 50u);
  for (const ServingRequest& q : offline) EXPECT_EQ(q.arrival_s, 0.0);
  w.requests.reset();
  EXPECT_THROW((void)generate_workload(w), std::invalid_argument);  // at once needs a count
  // A Poisson stream of a given count ignores the duration.
  w.arrivals = {ArrivalProcess::Kind::poisson, 100.0, 1.0};
  w.requests = 1000;
  w.duration_s = 1.0;
  EXPECT_EQ(generate_workload(w).size(), 1000u);
}

TEST(InferenceModel, EnginesSizeTheirKvCacheTheirWay) {
  const auto model = h100_7b();
  const double capacity = catalog().device("H100-SXM5-80GB").memory_capacity.value();
  const double held = model->weight_bytes_per_gpu().value() + 8192.0 * (3 * 11008 + 4 * 4096) * 2.0 +
                      256.0 * 32000 * 4.0 + models::InferenceModel::kNonTorchReserve.value();
  const double per_token = model->kv_bytes_per_token_per_gpu().value();
  // vLLM: the fraction of the whole memory, less what the weights and buffers hold.
  EXPECT_EQ(model->kv_cache_tokens({0.9, false, 8192, 256, 16}),
            static_cast<int64_t>(std::floor((0.9 * capacity - held) / per_token)) / 16 * 16);
  // TensorRT-LLM and LMDeploy: the fraction of what is left free.
  EXPECT_EQ(model->kv_cache_tokens({0.9, true, 8192, 256, 16}),
            static_cast<int64_t>(std::floor(0.9 * (capacity - held) / per_token)) / 16 * 16);
  // fp8 weights: the layers in one byte, the embedding and LM head in two.
  const models::InferenceModel fp8(llama2_7b(), {models::Precision::fp8, 1.0, 1.0}, 1,
                                   catalog().device("H100-SXM5-80GB"), 1.0, [](units::Bytes) { return units::Seconds(0); },
                                   {});
  EXPECT_NEAR(fp8.weight_bytes_per_gpu().value(),
              (model->weight_bytes_per_gpu().value() - 2.0 * 2 * 32000 * 4096) / 2.0 + 2.0 * 2 * 32000 * 4096, 1.0);
}

/// A step load: `low` requests/s, then `high` from 600 s to 1,200 s, then `low` again until 1,800 s; 200-token
/// prompts, 100-token outputs.
std::vector<ServingRequest> step_load(double low, double high) {
  std::vector<ServingRequest> out;
  std::mt19937_64 rng(7);
  double t = 0.0;
  while (t < 1800.0) {
    const double rate = t >= 600.0 && t < 1200.0 ? high : low;
    t += std::exponential_distribution<double>(rate)(rng);
    if (t < 1800.0) out.push_back({t, 200, 100});
  }
  return out;
}

TEST(ServingSimulation, TheAutoscalerFollowsTheLoadAndBillsWhatRuns) {
  ServingSetup setup;
  setup.model = h100_7b();
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, 8192, 256, 16});
  setup.policy.max_num_seqs = 8;  // a small engine, so that the load needs several
  setup.replicas = 1;
  setup.autoscaling = ServingAutoscaling{1, 6, 8.0, 15.0, 120.0};
  setup.provisioning_s = 60.0;
  setup.sample_interval_s = 10.0;
  const std::vector<ServingRequest> requests = step_load(2.0, 40.0);
  const ServingResult r = simulate_serving(setup, requests);
  int64_t peak_early = 0, peak_burst = 0, late = 0;
  for (const ServingSample& x : r.samples) {
    if (x.time_s < 500) peak_early = std::max(peak_early, x.replicas);
    if (x.time_s >= 700 && x.time_s < 1200) peak_burst = std::max(peak_burst, x.replicas);
    if (x.time_s >= 1700 && x.time_s < 1800) late = x.replicas;
  }
  EXPECT_LE(peak_early, 2);      // light load: one replica (two while the first window passes)
  EXPECT_EQ(peak_burst, 6);      // the burst takes every replica it may
  EXPECT_LE(late, 2);            // and they go once the window has passed
  ASSERT_EQ(r.usage.size(), 6u);  // one bill per slot
  double billed = 0;
  for (const ReplicaUsage& u : r.usage) {
    EXPECT_LE(u.billed_s, r.makespan_s + 1e-9);
    billed += u.billed_s;
  }
  EXPECT_GT(billed, r.makespan_s);        // more than one replica for the whole run
  EXPECT_LT(billed, 6.0 * r.makespan_s);  // less than all of them
  for (const RequestOutcome& o : r.requests) EXPECT_TRUE(std::isfinite(o.finish_s));
  // The summary: replica-hours are the bills; the cost is each replica's share of a VM (8 GPUs) for its time.
  const ServingSummary s = summarize_serving(r, {}, 1, 1, 8, 80.0);
  EXPECT_NEAR(s.replica_hours, billed / 3600.0, 1e-9);
  EXPECT_NEAR(s.usd, billed / 3600.0 / 8.0 * 80.0, 1e-9);
  EXPECT_NEAR(s.mean_replicas, billed / r.makespan_s, 1e-9);
  setup.autoscaling->min_replicas = 2;  // min above the count at time 0
  EXPECT_THROW((void)simulate_serving(setup, requests), std::invalid_argument);
}

TEST(ServingSimulation, SpotEvictionsRestartTheirRequestsAndCutTheBill) {
  ServingSetup setup;
  setup.model = h100_7b();
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, 8192, 256, 16});
  setup.replicas = 4;
  setup.provisioning_s = 60.0;
  // Two spot replicas, one per VM, evicted about every 3 minutes without notice.
  setup.spot = {2, 1, 1, 20.0, 300.0, 0.0, 11};
  const std::vector<ServingRequest> requests = step_load(10.0, 10.0);
  const ServingResult r = simulate_serving(setup, requests);
  EXPECT_GT(r.evictions, 2);
  int64_t restarted = 0;
  for (const RequestOutcome& o : r.requests) {
    EXPECT_TRUE(std::isfinite(o.finish_s));  // no request is lost: it starts again elsewhere
    if (o.evictions > 0) {
      ++restarted;
      EXPECT_LT(o.replica, setup.replicas);
    }
  }
  EXPECT_GT(restarted, 0);
  {
    // Azure's 30 s notice: the requests of a few seconds finish before the VM goes.
    ServingSetup noticed = setup;
    noticed.spot.notice_s = 30.0;
    const ServingResult n = simulate_serving(noticed, requests);
    EXPECT_GT(n.evictions, 2);
    for (const RequestOutcome& o : n.requests) EXPECT_EQ(o.evictions, 0);
  }
  ASSERT_EQ(r.usage.size(), 4u);
  EXPECT_NEAR(r.usage[2].billed_s, r.makespan_s, 1e-9);  // on demand: the whole run
  EXPECT_LT(r.usage[0].billed_s, r.makespan_s);          // spot: not while evicted
  EXPECT_TRUE(r.usage[0].spot);
  EXPECT_FALSE(r.usage[3].spot);
  // The same seed gives the same run; another seed other evictions.
  EXPECT_EQ(simulate_serving(setup, requests).fingerprint, r.fingerprint);
  setup.spot.seed = 12;
  EXPECT_NE(simulate_serving(setup, requests).fingerprint, r.fingerprint);
  // Without evictions, spot replicas bill the whole run at the discount.
  setup.spot.eviction_rate_per_hour = 0.0;
  const ServingResult calm = simulate_serving(setup, requests);
  const ServingSummary s = summarize_serving(calm, {}, 4, 1, 8, 80.0, 0.7);
  EXPECT_EQ(calm.evictions, 0);
  EXPECT_NEAR(s.usd, calm.makespan_s / 3600.0 * 80.0 / 8.0 * (2 + 2 * 0.3), 1e-9);
  setup.spot.replicas = 5;
  EXPECT_THROW((void)simulate_serving(setup, requests), std::invalid_argument);
}

TEST(ServingSimulation, ALostZoneSendsItsRequestsToTheOthersAndComesBack) {
  ServingSetup setup;
  setup.model = h100_7b();
  setup.kv_cache_tokens = setup.model->kv_cache_tokens({0.9, false, 8192, 256, 16});
  setup.replicas = 4;
  setup.provisioning_s = 60.0;
  setup.sample_interval_s = 10.0;
  setup.zones = {2, 600.0, 300.0};  // zone 0 (replicas 0 and 2) lost from 600 s to 900 s
  const std::vector<ServingRequest> requests = step_load(20.0, 20.0);
  const ServingResult r = simulate_serving(setup, requests);
  for (const ServingSample& x : r.samples) {
    if (x.time_s > 600 && x.time_s < 900) {
      EXPECT_EQ(x.replicas, 2) << x.time_s;  // lost
    }
    if (x.time_s > 900 && x.time_s < 960) {
      EXPECT_EQ(x.provisioning, 2) << x.time_s;  // starting again
    }
    if (x.time_s > 970 && x.time_s < 1700) {
      EXPECT_EQ(x.replicas, 4) << x.time_s;  // back
    }
  }
  int64_t restarted = 0;
  for (const RequestOutcome& o : r.requests) {
    EXPECT_TRUE(std::isfinite(o.finish_s));
    if (o.evictions > 0) {
      ++restarted;
      EXPECT_EQ(o.replica % 2, 1);  // finished in zone 1
    }
  }
  EXPECT_GT(restarted, 0);  // no notice: the requests running in zone 0 started again
  // Zone 0's replicas bill 600 s less the outage and the start: makespan - 300 s.
  ASSERT_EQ(r.usage.size(), 4u);
  EXPECT_NEAR(r.usage[0].billed_s, r.makespan_s - 300.0, 1e-6);
  EXPECT_NEAR(r.usage[1].billed_s, r.makespan_s, 1e-9);
  setup.zones.zones = 5;  // more zones than replicas
  EXPECT_THROW((void)simulate_serving(setup, requests), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::sim
