// What limits TTFT and TPOT (issue 29): the parts of each request's TTFT and TPOT against closed forms (one
// request alone is its prefill iteration's roofline terms), against the regimes where the answer is known
// (a saturated fleet queues; a big dense model decoding a small batch streams its weights), and their sum.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/io/scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/serving/latency_attribution.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/serving_summary.hpp"
#include "tests/support/models.hpp"

namespace clustersim::sim {
namespace {

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// The H100 at its roofline (no measured tables): the GEMM floor is then the weights over the stream bandwidth.
const models::DeviceSpec& roofline_h100() {
  static const models::DeviceSpec d = [] {
    models::DeviceSpec spec = catalog().device("H100-SXM5-80GB");
    spec.gemm_correction = nullptr;
    spec.attention_table = nullptr;
    return spec;
  }();
  return d;
}

/// Llama 2 70B (Touvron et al. 2023): 80 layers, width 8192, 64 heads in 8 key/value groups, SwiGLU 28672.
models::ModelConfig llama2_70b() {
  models::ModelConfig m = testing::llama2_7b();
  m.num_layers = 80;
  m.hidden_size = 8192;
  m.num_attention_heads = 64;
  m.num_query_groups = 8;
  m.ffn_hidden_size = 28672;
  return m;
}

std::shared_ptr<const models::InferenceModel> model_of(const models::ModelConfig& m) {
  return std::make_shared<const models::InferenceModel>(m, models::ServingNumerics{}, 1, roofline_h100(), 1.0,
                                                        nullptr, models::EngineOverhead{});
}

ServingSetup setup_of(std::shared_ptr<const models::InferenceModel> model, int64_t kv_cache_tokens) {
  ServingSetup setup;
  setup.model = std::move(model);
  setup.kv_cache_tokens = kv_cache_tokens;
  return setup;
}

/// Every completed request's TTFT and TPOT parts sum to them within 1e-9 relative, and none is negative.
void expect_parts_sum(const ServingResult& r) {
  ASSERT_EQ(r.parts.size(), r.requests.size());
  for (size_t i = 0; i < r.requests.size(); ++i) {
    const RequestOutcome& o = r.requests[i];
    if (o.rejected || !std::isfinite(o.finish_s)) continue;
    const TtftParts t = ttft_parts(o, r.parts[i]);
    EXPECT_NEAR(t.total_s(), o.ttft_s(), 1e-9 * o.ttft_s()) << "request " << i;
    for (double x : {t.queueing_s, t.kv_wait_s, t.compute_s, t.memory_s, t.communication_s, t.host_s,
                     t.co_scheduled_s, t.restart_s}) {
      EXPECT_GE(x, -1e-9 * o.ttft_s()) << "request " << i;
    }
    if (o.output_tokens < 2) continue;
    const TpotParts p = tpot_parts(o, r.parts[i]);
    EXPECT_NEAR(p.total_s(), o.tpot_s(), 1e-9 * o.tpot_s()) << "request " << i;
    for (double x : {p.compute_s, p.memory_s, p.communication_s, p.host_s, p.prefill_stall_s, p.preemption_s}) {
      EXPECT_GE(x, -1e-9 * o.tpot_s()) << "request " << i;
    }
  }
}

TEST(LatencyAttribution, ALoneRequestsTtftIsItsPrefillIterationsRooflineTerms) {
  // One 2,048-token prompt on an idle replica: no queueing, no one else in its iteration; its TTFT is the one
  // prefill iteration, whose GEMMs stream the weights once (the one-token iteration's GEMMs: HBM) and spend the
  // rest on the matmuls (compute), with FlashAttention compute and the element-wise kernels HBM.
  const auto model = model_of(testing::llama2_7b());
  const ServingResult r = simulate_serving(setup_of(model, 1 << 20), {{0.0, 2048, 1}});
  models::IterationBatch b;
  b.prefill_tokens = 2048;
  b.prefill_attention_pairs = models::prefill_attention_pairs(0, 2048);
  b.sampled_sequences = 1;
  const models::IterationTime it = model->iteration_time(b);
  models::IterationBatch one;
  one.decode_sequences = 1;
  one.sampled_sequences = 1;
  const double floor = model->iteration_time(one).gemm.value();
  ASSERT_LT(floor, it.gemm.value());  // a 2,048-token prefill is compute bound
  const double compute = it.gemm.value() - floor + it.attention.value();
  const double memory = floor + it.memory_bound.value();
  const double host = it.overhead.value() + it.collective_launch.value();
  const TtftParts t = ttft_parts(r.requests[0], r.parts[0]);
  const double ttft = r.requests[0].ttft_s();
  EXPECT_NEAR(ttft, it.total().value(), 1e-9 * ttft);
  EXPECT_NEAR(t.queueing_s, 0.0, 1e-9 * ttft);
  EXPECT_EQ(t.kv_wait_s, 0.0);
  EXPECT_EQ(t.co_scheduled_s, 0.0);
  EXPECT_EQ(t.restart_s, 0.0);
  EXPECT_NEAR(t.compute_s, compute, 1e-9 * ttft);
  EXPECT_NEAR(t.memory_s, memory, 1e-9 * ttft);
  EXPECT_EQ(t.communication_s, 0.0);  // tensor 1
  EXPECT_NEAR(t.host_s, host, 1e-9 * ttft);
  EXPECT_GT(t.compute_s, t.memory_s);
  const LatencyShares s = latency_shares(r);
  EXPECT_EQ(s.ttft_requests, 1);
  EXPECT_EQ(s.tpot_requests, 0);
  EXPECT_EQ(ttft_bottleneck(s.ttft).limit, LatencyLimit::compute);
}

TEST(LatencyAttribution, DecodeOfABigDenseModelAtSmallBatchIsHbmBound) {
  // Llama 2 70B at TP 1, four sequences decoding: every GEMM is [4, N, K] and streams 140 GB of weights per token,
  // far above the 4 x 2 x 70e9 flops' time at the H100's matmul rate; TPOT is HBM bandwidth.
  ServingSetup setup = setup_of(model_of(llama2_70b()), 1 << 20);
  std::vector<ServingRequest> requests(4, ServingRequest{0.0, 128, 256});
  const ServingResult r = simulate_serving(setup, requests);
  expect_parts_sum(r);
  const LatencyShares s = latency_shares(r);
  EXPECT_EQ(s.tpot_requests, 4);
  const LatencyBottleneck b = tpot_bottleneck(s.tpot);
  EXPECT_EQ(b.limit, LatencyLimit::memory);
  EXPECT_GT(b.share, 0.8);
  EXPECT_LT(s.tpot.compute_s, 0.05);
  EXPECT_NEAR(s.tpot.preemption_s, 0.0, 1e-9);
  // The one prefill iteration carried all four prompts: each owns a quarter, the others' three quarters.
  EXPECT_NEAR(s.ttft.co_scheduled_s, 0.75, 1e-9);
}

TEST(LatencyAttribution, ASaturatedFleetQueues) {
  // 2,000 requests at once on one replica of 256 sequences: most wait for earlier ones to finish.
  ServingSetup setup = setup_of(model_of(testing::llama2_7b()), 1 << 20);
  std::vector<ServingRequest> requests(2000, ServingRequest{0.0, 512, 64});
  const ServingResult r = simulate_serving(setup, requests);
  expect_parts_sum(r);
  const LatencyShares s = latency_shares(r);
  EXPECT_EQ(s.ttft_requests, 2000);
  const LatencyBottleneck b = ttft_bottleneck(s.ttft);
  EXPECT_EQ(b.limit, LatencyLimit::queueing);
  EXPECT_GT(b.share, 0.8);
  EXPECT_EQ(s.ttft.kv_wait_s, 0.0);  // a cache of a million tokens: the batch limits, not KV blocks, held them
  EXPECT_EQ(r.kv_limited_iterations, 0);
  const double ttft_sum = s.ttft.queueing_s + s.ttft.kv_wait_s + s.ttft.compute_s + s.ttft.memory_s +
                          s.ttft.communication_s + s.ttft.host_s + s.ttft.co_scheduled_s + s.ttft.restart_s;
  EXPECT_NEAR(ttft_sum, 1.0, 1e-9);
  const double tpot_sum = s.tpot.compute_s + s.tpot.memory_s + s.tpot.communication_s + s.tpot.host_s +
                          s.tpot.prefill_stall_s + s.tpot.preemption_s;
  EXPECT_NEAR(tpot_sum, 1.0, 1e-9);
}

TEST(LatencyAttribution, ASmallKvCacheShowsKvWaitsPreemptionsAndRestarts) {
  // A cache of 8,192 tokens for 300 requests of 1,000-token prompts and 200-token outputs arriving at 20 per
  // second: admissions stop for want of blocks, running sequences are preempted and recompute.
  ServingSetup setup = setup_of(model_of(testing::llama2_7b()), 8192);
  setup.policy.max_num_batched_tokens = 2048;
  std::vector<ServingRequest> requests;
  for (int i = 0; i < 300; ++i) requests.push_back({0.05 * i, 1000, 200});
  const ServingResult r = simulate_serving(setup, requests);
  expect_parts_sum(r);
  const ServingSummary s = summarize_serving(r, {}, 1, 1, 8, std::nullopt);
  EXPECT_GT(r.kv_limited_iterations, 0);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.latency.ttft.kv_wait_s, 0.0);
  EXPECT_GT(s.latency.tpot.preemption_s, 0.0);
  EXPECT_EQ(s.kv_limited_iterations, r.kv_limited_iterations);
}

TEST(LatencyAttribution, APromptPreemptedMidwayLosesItsWork) {
  // 5 blocks of 16 tokens, 4 tokens an iteration. A (20-token prompt) prefills in 5 iterations and then decodes one
  // token an iteration beside B's 3-token chunks; B (40 tokens) holds 3 blocks. When A's context reaches 32 tokens
  // it needs a third block: B, the newest, is preempted with 36 of its 40 prompt tokens computed. Its share of those
  // 12 iterations is lost work (restart); it waits for blocks and prefills again after A finishes.
  ServingSetup setup = setup_of(model_of(testing::llama2_7b()), 80);
  setup.policy.max_num_batched_tokens = 4;
  const ServingResult r = simulate_serving(setup, {{0.0, 20, 30}, {0.0, 40, 10}});
  expect_parts_sum(r);
  EXPECT_EQ(r.requests[1].preemptions, 1);
  EXPECT_EQ(r.requests[0].preemptions, 0);
  const TtftParts b = ttft_parts(r.requests[1], r.parts[1]);
  EXPECT_GT(b.restart_s, 0.0);
  // Back at the queue's head it needs 3 blocks while A holds 3 of the 5: it waits for KV blocks until A finishes.
  EXPECT_GT(b.kv_wait_s, 0.0);
  EXPECT_GT(r.kv_limited_iterations, 0);
  EXPECT_EQ(ttft_parts(r.requests[0], r.parts[0]).restart_s, 0.0);
}

TEST(LatencyAttribution, ATwoTokenBudgetStillSums) {
  // A budget of 2 tokens for 4 requests: prompts and decodes share each iteration's 2 tokens, the others wait.
  ServingSetup setup = setup_of(model_of(testing::llama2_7b()), 1 << 16);
  setup.policy.max_num_batched_tokens = 2;
  const ServingResult r = simulate_serving(setup, std::vector<ServingRequest>(4, ServingRequest{0.0, 4, 20}));
  expect_parts_sum(r);
}

TEST(LatencyAttribution, EvictedRequestsLoseTheirPromptWorkAndStillSum) {
  // Spot replicas evicted without notice: a request caught decoding starts again elsewhere, waits and recomputes
  // (TPOT's remainder); every part still sums.
  ServingSetup setup = setup_of(model_of(testing::llama2_7b()), 1 << 18);
  setup.replicas = 4;
  setup.provisioning_s = 60.0;
  setup.spot = {2, 1, 1, 60.0, 120.0, 0.0, 5};
  setup.policy.max_num_batched_tokens = 512;
  std::vector<ServingRequest> requests;
  for (int i = 0; i < 3000; ++i) requests.push_back({0.2 * i, 4000, 300});
  const ServingResult r = simulate_serving(setup, requests);
  EXPECT_GT(r.evictions, 0);
  expect_parts_sum(r);
  // The requests caught decoding: the wait for another replica and the recomputation are TPOT's remainder.
  int64_t evicted = 0;
  for (size_t i = 0; i < r.requests.size(); ++i) {
    if (r.requests[i].evictions == 0) continue;
    ++evicted;
    EXPECT_GT(tpot_parts(r.requests[i], r.parts[i]).preemption_s, 0.0);
  }
  EXPECT_GT(evicted, 0);
}

/// The /summary value of `name` in `columns` (a double column of one row).
double column(const std::vector<SummaryColumn>& columns, const std::string& name) {
  for (const SummaryColumn& c : columns) {
    if (c.name == name) return std::get<std::vector<double>>(c.values).at(0);
  }
  ADD_FAILURE() << name << " is not in /summary";
  return 0.0;
}

TEST(LatencyAttribution, TheReportAndSummaryShowThePartsAndTheKvCapacity) {
  // The shipped 20 requests/s fleet on two replicas for two minutes with half the memory for the KV cache: the
  // cache fills, stops admissions and preempts, and the bottleneck line says so; the shares sum to 1.
  const std::filesystem::path file =
      std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios/serving/llama3-70b-nd-h100-tp4-20rps.toml";
  const ServingScenario sc = load_serving_scenario(
      file, {"serving.replicas=2", "workload.duration_s=120", "serving.gpu_memory_utilization=0.5"}, catalog());
  const ServingRun run = run_serving_scenario(sc, catalog());
  const std::string report = format_serving_summary(sc, run);
  EXPECT_NE(report.find("\nTTFT parts  queueing "), std::string::npos) << report;
  EXPECT_NE(report.find("\nTPOT parts  decode "), std::string::npos) << report;
  EXPECT_NE(report.find("\nbottleneck  TPOT: "), std::string::npos) << report;
  EXPECT_NE(report.find("; the KV cache stopped admissions in "), std::string::npos) << report;
  EXPECT_GT(run.result.kv_limited_iterations, 0);
  const std::vector<SummaryColumn> c = serving_summary_columns(sc, run);
  double ttft = 0.0, tpot = 0.0;
  for (const char* name : {"ttft_queueing_share", "ttft_kv_wait_share", "ttft_prefill_compute_share",
                           "ttft_prefill_memory_share", "ttft_prefill_communication_share", "ttft_prefill_host_share",
                           "ttft_co_scheduled_share", "ttft_restart_share"}) {
    ttft += column(c, name);
  }
  for (const char* name : {"tpot_decode_compute_share", "tpot_decode_memory_share", "tpot_decode_communication_share",
                           "tpot_decode_host_share", "tpot_prefill_stall_share", "tpot_preemption_share"}) {
    tpot += column(c, name);
  }
  EXPECT_NEAR(ttft, 1.0, 1e-9);
  EXPECT_NEAR(tpot, 1.0, 1e-9);
  EXPECT_GT(column(c, "ttft_kv_wait_share"), 0.0);
  // The shipped fleet, with room to spare, says nothing of the KV cache.
  const ServingScenario roomy = load_serving_scenario(file, {"workload.duration_s=120"}, catalog());
  EXPECT_EQ(format_serving_summary(roomy, run_serving_scenario(roomy, catalog())).find("the KV cache stopped"),
            std::string::npos);
}

}  // namespace
}  // namespace clustersim::sim
