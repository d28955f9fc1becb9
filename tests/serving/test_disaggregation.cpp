// Disaggregated prefill and decode (issue 30; sim/serving/kv_transfer.hpp) against closed forms: a request's TTFT
// is its prefill, plus its KV cache's transfer (latency + bytes / bottleneck rate), plus its first decode; flows on
// one NIC share it max-min fairly; a decode pool without free KV blocks holds the transfer.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/workload.hpp"
#include "tests/support/models.hpp"
#include "tests/support/catalog.hpp"

namespace clustersim::sim {
namespace {

using testing::catalog;

std::shared_ptr<const models::InferenceModel> h100_7b() {
  return std::make_shared<const models::InferenceModel>(testing::llama2_7b(), models::ServingNumerics{}, 1,
                                                        catalog().device("H100-SXM5-80GB"), 1.0, nullptr,
                                                        models::EngineOverhead{});
}

constexpr double kNicBytesPerS = 50e9;  // one NDR 400 Gb/s port
constexpr double kLatencyS = 2e-6;

/// `prefill` prefill replicas and `decode` decode replicas of Llama 2 7B on one H100 each.
ServingSetup split(int64_t prefill, int64_t decode, int64_t decode_kv_tokens = 100000) {
  ServingSetup s;
  s.model = h100_7b();
  s.kv_cache_tokens = 100000;
  s.replicas = prefill;
  s.routing = Routing::least_outstanding;
  DecodePool d;
  d.model = s.model;
  d.kv_cache_tokens = decode_kv_tokens;
  d.replicas = decode;
  d.network.prefill_nic_bytes_per_s = kNicBytesPerS;
  d.network.decode_nic_bytes_per_s = kNicBytesPerS;
  d.network.infiniband_latency_s = kLatencyS;
  d.network.kv_bytes_per_token = s.model->kv_bytes_per_token_per_gpu().value();
  s.decode_pool = d;
  return s;
}

double prefill_s(const models::InferenceModel& m, const std::vector<int64_t>& prompts) {
  models::IterationBatch b;
  for (const int64_t p : prompts) {
    b.prefill_tokens += p;
    b.prefill_attention_pairs += models::prefill_attention_pairs(0, p);
    ++b.sampled_sequences;
  }
  return m.iteration_time(b).total().value();
}

double decode_s(const models::InferenceModel& m, int64_t kv_tokens) {
  models::IterationBatch b;
  b.decode_sequences = 1;
  b.decode_kv_tokens = kv_tokens;
  b.sampled_sequences = 1;
  return m.iteration_time(b).total().value();
}

// The engine's clock rounds each event up to its 1 ns tick.
constexpr double kTickS = 1e-8;

TEST(Disaggregation, OneRequestsTtftIsPrefillPlusTransferPlusFirstDecode) {
  const ServingSetup setup = split(1, 1);
  const int64_t prompt = 1000, output = 3;
  const ServingResult r = simulate_serving(setup, {{0.0, prompt, output}});
  const models::InferenceModel& m = *setup.model;
  const double bytes = static_cast<double>(prompt) * m.kv_bytes_per_token_per_gpu().value();
  // Llama 2 7B: 32 layers x 2 (K, V) x 4096 x 2 B = 512 KiB per token, 500 MiB for the prompt: 10.5 ms at 50 GB/s.
  EXPECT_DOUBLE_EQ(bytes, 1000.0 * 32 * 2 * 4096 * 2);
  const double transfer = kLatencyS + bytes / kNicBytesPerS;
  ASSERT_EQ(r.kv_transfer_s.size(), 1u);
  EXPECT_NEAR(r.kv_transfer_s[0], transfer, kTickS);
  const double ttft = prefill_s(m, {prompt}) + transfer + decode_s(m, prompt);
  EXPECT_NEAR(r.requests[0].ttft_s(), ttft, 3 * kTickS);
  // The other two tokens: decodes at contexts of prompt + 1 and prompt + 2.
  EXPECT_NEAR(r.requests[0].e2e_s(), ttft + decode_s(m, prompt + 1) + decode_s(m, prompt + 2), 5 * kTickS);
  EXPECT_EQ(r.requests[0].replica, 1);  // the decode replica (slots: prefill pool, then decode pool)
  EXPECT_EQ(r.iterations, 1 + output);  // one prefill-only iteration, then every token a decode
  EXPECT_NEAR(r.decode_busy_s, r.busy_s - prefill_s(m, {prompt}), 4 * kTickS);
  EXPECT_EQ(r.held_transfers, 0);
}

TEST(Disaggregation, TwoTransfersFromOneNicShareItMaxMinFairly) {
  // Both prompts complete in one prefill iteration; their caches leave through the prefill replica's NIC at once,
  // to two decode replicas (the router spreads them): each gets half the NIC until the smaller one lands, then
  // the larger one the whole NIC: t1 = L + 2 B1 / R, t2 = L + (B1 + B2) / R.
  const ServingSetup setup = split(1, 2);
  const ServingResult r = simulate_serving(setup, {{0.0, 1000, 2}, {0.0, 3000, 2}});
  const double per_token = setup.model->kv_bytes_per_token_per_gpu().value();
  const double b1 = 1000 * per_token, b2 = 3000 * per_token;
  EXPECT_NEAR(r.kv_transfer_s[0], kLatencyS + 2 * b1 / kNicBytesPerS, kTickS);
  EXPECT_NEAR(r.kv_transfer_s[1], kLatencyS + (b1 + b2) / kNicBytesPerS, 2 * kTickS);
  EXPECT_NE(r.requests[0].replica, r.requests[1].replica);
  // Equal prompts: each at half the rate, both land together.
  const ServingResult same = simulate_serving(setup, {{0.0, 2000, 2}, {0.0, 2000, 2}});
  EXPECT_NEAR(same.kv_transfer_s[0], kLatencyS + 2 * 2000 * per_token / kNicBytesPerS, kTickS);
  EXPECT_NEAR(same.kv_transfer_s[1], same.kv_transfer_s[0], kTickS);
}

TEST(Disaggregation, TransfersToDifferentReceiversFromDifferentSendersDoNotContend) {
  const ServingSetup setup = split(2, 2);
  const ServingResult r = simulate_serving(setup, {{0.0, 2000, 2}, {0.0, 2000, 2}});
  const double bytes = 2000 * setup.model->kv_bytes_per_token_per_gpu().value();
  for (const double t : r.kv_transfer_s) EXPECT_NEAR(t, kLatencyS + bytes / kNicBytesPerS, kTickS);
}

TEST(Disaggregation, ADecodePoolWithoutFreeBlocksHoldsTheTransfer) {
  // A decode replica of 70 blocks of 16 tokens (1,120 tokens). Request A (1,000 prompt + 50 output tokens) reserves
  // 63 blocks and grows to 66; B's prompt needs 63 blocks (1,001 tokens) and finds 4 free: its transfer waits until
  // A finishes, and then takes the closed-form time.
  const ServingSetup setup = split(1, 1, 70 * 16);
  const ServingResult r = simulate_serving(setup, {{0.0, 1000, 50}, {0.0, 1000, 5}});
  EXPECT_EQ(r.held_transfers, 1);
  const double transfer = kLatencyS + 1000 * setup.model->kv_bytes_per_token_per_gpu().value() / kNicBytesPerS;
  EXPECT_NEAR(r.kv_transfer_s[0], transfer, kTickS);
  EXPECT_NEAR(r.kv_transfer_s[1], transfer, kTickS);
  EXPECT_GE(r.requests[1].first_token_s, r.requests[0].finish_s + transfer);
  EXPECT_FALSE(std::isnan(r.requests[1].finish_s));
}

TEST(Disaggregation, ARequestLargerThanADecodeReplicaIsRejected) {
  const ServingSetup setup = split(1, 1, 70 * 16);
  const ServingResult r = simulate_serving(setup, {{0.0, 1000, 200}, {0.0, 100, 5}});
  EXPECT_TRUE(r.requests[0].rejected);
  EXPECT_FALSE(r.requests[1].rejected);
  EXPECT_TRUE(std::isnan(r.kv_transfer_s[0]));
}

TEST(Disaggregation, ABusyStreamCompletesAndRunsBitIdenticallyTwice) {
  SyntheticWorkload w;
  w.arrivals.kind = ArrivalProcess::Kind::poisson;
  w.arrivals.rate_per_s = 20.0;
  w.duration_s = 30.0;
  w.prompt.kind = LengthDistribution::Kind::lognormal;
  w.prompt.median = 1500;
  w.prompt.sigma = 0.8;
  w.prompt.max_tokens = 4096;
  w.output.kind = LengthDistribution::Kind::lognormal;
  w.output.median = 200;
  w.output.sigma = 0.8;
  w.output.max_tokens = 4096;
  w.seed = 7;
  const std::vector<ServingRequest> requests = generate_workload(w);
  const ServingSetup setup = split(1, 2, 40000);
  const ServingResult a = simulate_serving(setup, requests), b = simulate_serving(setup, requests);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  int64_t completed = 0;
  for (size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].finish_s, b.requests[i].finish_s);
    EXPECT_EQ(a.kv_transfer_s[i], b.kv_transfer_s[i]);
    if (!a.requests[i].rejected) {
      ++completed;
      EXPECT_GT(a.requests[i].ttft_s(), a.kv_transfer_s[i]);
      EXPECT_GE(a.requests[i].replica, 1);  // decoded in the decode pool
    }
  }
  EXPECT_GT(completed, 500);
  EXPECT_GT(a.decode_busy_s, 0.0);
  EXPECT_LT(a.decode_busy_s, a.busy_s);
}

TEST(Disaggregation, BadSetupsAreRefused) {
  const std::vector<ServingRequest> one{{0.0, 10, 2}};
  ServingSetup s = split(1, 1);
  s.decode_pool->replicas = 0;
  EXPECT_THROW(simulate_serving(s, one), std::invalid_argument);
  s = split(1, 1);
  s.decode_pool->policy.block_size = 32;
  EXPECT_THROW(simulate_serving(s, one), std::invalid_argument);
  s = split(1, 1);
  s.decode_pool->network.decode_nic_bytes_per_s = 0.0;
  EXPECT_THROW(simulate_serving(s, one), std::invalid_argument);
  s = split(2, 1);
  s.autoscaling = ServingAutoscaling{1, 2};
  EXPECT_THROW(simulate_serving(s, one), std::invalid_argument);
  s = split(1, 1);
  s.decode_pool->network.domain = {0};  // one per slot needed
  EXPECT_THROW(simulate_serving(s, one), std::invalid_argument);
}

TEST(Disaggregation, ReplicasOfOneNvlinkDomainMoveTheCacheOverNvlink) {
  ServingSetup setup = split(1, 2);
  KvTransferNetwork& n = setup.decode_pool->network;
  n.domain = {0, 0, 1};  // the prefill replica and the first decode replica share a domain
  n.prefill_nvlink_bytes_per_s = n.decode_nvlink_bytes_per_s = 900e9;
  n.nvlink_latency_s = 1e-6;
  const ServingResult r = simulate_serving(setup, {{0.0, 2000, 2}, {0.0, 2000, 2}});
  const double bytes = 2000 * setup.model->kv_bytes_per_token_per_gpu().value();
  // Slot 1 is first (fewest outstanding, lowest slot) over NVLink; slot 2 over InfiniBand, no contention between.
  EXPECT_EQ(r.requests[0].replica, 1);
  EXPECT_NEAR(r.kv_transfer_s[0], 1e-6 + bytes / 900e9, kTickS);
  EXPECT_NEAR(r.kv_transfer_s[1], kLatencyS + bytes / kNicBytesPerS, kTickS);
}

}  // namespace
}  // namespace clustersim::sim
