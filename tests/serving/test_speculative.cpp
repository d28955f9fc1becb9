// Speculative decoding, FP4 numerics and the SGLang engine profile (issue 30): tokens per step in closed form
// (Leviathan et al., ICML 2023), the draft and verify passes adding up to the iteration, the engine's steps with
// acceptance 1 and 0 counted by hand, NVFP4's bytes per weight and the SGLang release's structure.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "models/serving/speculative.hpp"
#include "sim/engine/random_stream.hpp"
#include "sim/serving/latency_attribution.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/speculation.hpp"
#include "tests/support/models.hpp"
#include "tests/support/catalog.hpp"

namespace clustersim::sim {
namespace {

using testing::catalog;

std::shared_ptr<const models::InferenceModel> model_on(const models::ModelConfig& m, const char* device,
                                                       models::ServingNumerics numerics = {},
                                                       models::EngineOverhead overhead = {}) {
  return std::make_shared<const models::InferenceModel>(m, numerics, 1, catalog().device(device), 1.0, nullptr,
                                                        overhead);
}

/// EAGLE-style heads: one layer of Llama 2 7B's shape, the main model's embedding and LM head.
std::shared_ptr<const models::SpeculativeDecoding> eagle_7b(double acceptance, int64_t k) {
  const models::ModelConfig head =
      models::head_proposer_config(models::SpeculativeMethod::eagle, testing::llama2_7b(), 1);
  return std::make_shared<const models::SpeculativeDecoding>(
      models::SpeculativeMethod::eagle,
      model_on(head, "H100-SXM5-80GB", {}, models::EngineOverhead{units::Seconds(0.0), units::Seconds(0.0)}),
      std::vector<double>(static_cast<size_t>(k), acceptance), true);
}

TEST(Speculative, ExpectedTokensPerStepInClosedForm) {
  // All accepted: k + 1 tokens a step; none: the one token the verify pass samples itself.
  EXPECT_DOUBLE_EQ(models::expected_tokens_per_step(std::vector<double>(4, 1.0)), 5.0);
  EXPECT_DOUBLE_EQ(models::expected_tokens_per_step(std::vector<double>(4, 0.0)), 1.0);
  // A constant a: the geometric sum (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1).
  const double a = 0.8;
  EXPECT_NEAR(models::expected_tokens_per_step(std::vector<double>(3, a)), (1 - std::pow(a, 4)) / (1 - a), 1e-12);
  // Per position: DeepSeek-V3's one MTP module at 85-90 % second-token acceptance: 1.85-1.9 tokens a step.
  EXPECT_DOUBLE_EQ(models::expected_tokens_per_step(std::vector<double>{0.875}), 1.875);
  // Conditional rates multiply: 1 + 0.9 + 0.9 x 0.5 + 0.9 x 0.5 x 0.2.
  EXPECT_NEAR(models::expected_tokens_per_step(std::vector<double>{0.9, 0.5, 0.2}), 1 + 0.9 + 0.45 + 0.09, 1e-12);
  EXPECT_THROW((void)models::expected_tokens_per_step(std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW((void)models::expected_tokens_per_step(std::vector<double>{1.5}), std::invalid_argument);
  EXPECT_EQ(models::speculative_method("mtp"), models::SpeculativeMethod::mtp);
  EXPECT_THROW((void)models::speculative_method("medusa"), std::invalid_argument);
}

TEST(Speculative, TheMeanOfTheDrawsIsTheFormulaWithinOnePercent) {
  const std::vector<double> acceptance{0.9, 0.8, 0.7, 0.6};
  RandomStream stream(7, 0, kSpeculationStream);
  const int64_t steps = 200000;
  double tokens = 0;
  for (int64_t i = 0; i < steps; ++i) {
    tokens += static_cast<double>(models::draw_tokens_per_step(acceptance, [&] { return stream.uniform(); }));
  }
  const double expected = models::expected_tokens_per_step(acceptance);
  EXPECT_NEAR(tokens / static_cast<double>(steps) / expected, 1.0, 0.01);
}

TEST(Speculative, DraftAndVerifyPassesAddUpToTheIteration) {
  const auto main = model_on(testing::llama2_7b(), "H100-SXM5-80GB");
  const IterationResources main_resources(*main);
  const auto eagle = eagle_7b(0.7, 3);
  const SpeculativeServing spec(eagle, 1);
  models::IterationBatch b;  // 8 sequences decoding over 1,000 cached tokens each, and a 256-token prompt chunk
  b.decode_sequences = 8;
  b.decode_kv_tokens = 8000;
  b.prefill_tokens = 256;
  b.prefill_attention_pairs = models::prefill_attention_pairs(0, 256);
  b.sampled_sequences = 9;
  const models::IterationBatch verify = eagle->verify_batch(b);
  EXPECT_EQ(verify.decode_queries, 4);                  // k + 1 queries per decoding sequence
  EXPECT_EQ(verify.sampled_sequences, 9 + 3 * 8);       // every position's logits
  EXPECT_EQ(eagle->draft_passes(b), 3);
  EXPECT_EQ(eagle->draft_batch(b, 0).prefill_tokens, 256);  // the proposer's KV of the prompt
  EXPECT_EQ(eagle->draft_batch(b, 2).prefill_tokens, 0);
  EXPECT_EQ(eagle->draft_batch(b, 2).decode_kv_tokens, 8000 + 2 * 8);  // the drafts before it
  double expected = main->iteration_time(verify).total().value();
  for (int64_t pass = 0; pass < 3; ++pass) {
    expected += eagle->proposer().iteration_time(eagle->draft_batch(b, pass)).total().value();
  }
  const IterationCost cost = spec.cost(*main, main_resources, b);
  EXPECT_NEAR(cost.duration.value(), expected, 1e-15);
  EXPECT_NEAR(cost.split.total_s(), cost.duration.value(), 1e-15);
  // The verify pass's GEMM rows are sequences x (k + 1): as many as a batch of 32 one-token decodes, but it
  // reads each sequence's keys once (the same attention as 8 decodes writing 4 tokens each).
  models::IterationBatch wide = b;
  wide.decode_sequences = 32;
  wide.sampled_sequences = 33;
  // the same keys and new tokens read: 8,000 + 32
  EXPECT_NEAR(main->iteration_time(verify).gemm.value(), main->iteration_time(wide).gemm.value(), 1e-15);
  EXPECT_NEAR(main->iteration_time(verify).attention.value(), main->iteration_time(wide).attention.value(), 1e-15);
  // Without decodes the proposer only runs the prompts; without speculation the cost is the model's iteration.
  models::IterationBatch prompt_only = b;
  prompt_only.decode_sequences = prompt_only.decode_kv_tokens = 0;
  prompt_only.sampled_sequences = 1;
  EXPECT_EQ(eagle->draft_passes(prompt_only), 1);
  EXPECT_DOUBLE_EQ(iteration_cost(*main, main_resources, nullptr, b).duration.value(),
                   main->iteration_time(b).total().value());
}

TEST(Speculative, AcceptanceOneTakesKPlusOneTokensAStepAndZeroOne) {
  // One request, 16 prompt tokens, 9 outputs: the prefill samples the first token, then 8 more. With every
  // draft accepted (k = 3) each step keeps 4: 2 decode steps; with none, 8.
  const auto run = [](double acceptance) {
    ServingSetup setup;
    setup.model = model_on(testing::llama2_7b(), "H100-SXM5-80GB");
    setup.kv_cache_tokens = 4096;
    setup.speculative = std::make_shared<const SpeculativeServing>(eagle_7b(acceptance, 3), 3);
    return simulate_serving(setup, {{0.0, 16, 9}});
  };
  const ServingResult all = run(1.0), none = run(0.0);
  EXPECT_EQ(all.iterations, 1 + 2);
  EXPECT_EQ(none.iterations, 1 + 8);
  EXPECT_LT(all.requests[0].tpot_s(), none.requests[0].tpot_s());
  // Capped by the output: 7 outputs take 2 steps (4 + 2), not past the last token.
  ServingSetup setup;
  setup.model = model_on(testing::llama2_7b(), "H100-SXM5-80GB");
  setup.kv_cache_tokens = 4096;
  setup.speculative = std::make_shared<const SpeculativeServing>(eagle_7b(1.0, 3), 3);
  const ServingResult capped = simulate_serving(setup, {{0.0, 16, 7}});
  EXPECT_EQ(capped.iterations, 1 + 2);
  EXPECT_EQ(capped.requests[0].output_tokens, 7);
  // The same seed gives the same run.
  setup.speculative = std::make_shared<const SpeculativeServing>(eagle_7b(0.6, 4), 11);
  const std::vector<ServingRequest> requests{{0.0, 100, 200}, {0.01, 50, 300}, {0.02, 80, 120}};
  EXPECT_EQ(simulate_serving(setup, requests).fingerprint, simulate_serving(setup, requests).fingerprint);
  // Not with multi-step scheduling (vLLM refuses the pair).
  setup.policy.scheduler_steps = 4;
  EXPECT_THROW((void)simulate_serving(setup, requests), std::invalid_argument);
}

TEST(Speculative, ProposerWeightsAndItsKvShareTheCache) {
  const auto main = model_on(testing::llama2_7b(), "H100-SXM5-80GB");
  const auto eagle = eagle_7b(0.7, 3);
  // One layer of 7B: QKV, output, gated MLP and two norms at 2 bytes; the embedding and LM head are the model's.
  const double h = 4096, f = 11008;
  EXPECT_DOUBLE_EQ(eagle->proposer_weight_bytes_per_gpu().value(), (4 * h * h + 3 * h * f + 2 * h) * 2.0);
  // Main KV per token 2 x 32 x 4096 x 2 B; the head's 2 x 1 x 4096 x 2 B.
  const double main_kv = 2.0 * 32 * 4096 * 2, head_kv = 2.0 * 1 * 4096 * 2;
  const int64_t tokens = 100000;
  const double free = static_cast<double>(tokens) * main_kv - eagle->proposer_weight_bytes_per_gpu().value();
  EXPECT_EQ(eagle->kv_cache_tokens(*main, tokens, 16),
            static_cast<int64_t>(std::floor(free / (main_kv + head_kv))) / 16 * 16);
}

TEST(Fp4, NvFp4WeightsAreNineSixteenthsOfAByteAndRunOnFp4TensorCores) {
  const models::ServingNumerics fp4 = models::serving_numerics("fp4", false);
  EXPECT_DOUBLE_EQ(fp4.weight_bytes, 0.5625);  // 4-bit E2M1 + one FP8 scale per 16 values
  EXPECT_TRUE(fp4.fp4);
  EXPECT_EQ(fp4.activations(), models::Precision::bf16);
  // Layer weights at 0.5625 B, the embedding and LM head at 2 B: against fp8 (1 B) the layers take 0.5625 as much.
  const auto on_gb200 = [](const models::ServingNumerics& n) { return model_on(testing::llama2_7b(), "GB200", n); };
  const auto fp8 = models::serving_numerics("fp8", false);
  const double tables = 2.0 * 32000.0 * 4096.0 * 2.0;  // untied embedding and LM head, 16 bits
  const double layers8 = on_gb200(fp8)->weight_bytes_per_gpu().value() - tables;
  EXPECT_NEAR((on_gb200(fp4)->weight_bytes_per_gpu().value() - tables) / layers8, 0.5625, 1e-12);
  // A compute-bound prefill runs faster at the FP4 rate (10 PFLOPS dense on GB200 against 5 for fp8).
  models::IterationBatch prefill;
  prefill.prefill_tokens = 8192;
  prefill.prefill_attention_pairs = models::prefill_attention_pairs(0, 8192);
  prefill.sampled_sequences = 1;
  EXPECT_LT(on_gb200(fp4)->iteration_time(prefill).gemm.value(),
            0.6 * on_gb200(fp8)->iteration_time(prefill).gemm.value());
  // No FP4 tensor cores on Hopper.
  EXPECT_THROW(model_on(testing::llama2_7b(), "H100-SXM5-80GB", fp4), std::out_of_range);
}

TEST(SglangProfile, OverlapsItsHostWorkWithTheGpu) {
  const models::EngineProfile& sglang = models::engine_profile("sglang");
  EXPECT_EQ(sglang.name, "sglang-0.4");
  EXPECT_EQ(sglang.family, "sglang");
  EXPECT_EQ(sglang.overhead.overlap, models::HostOverlap::overlapped);
  EXPECT_EQ(sglang.overhead.collective_launch.value(), 0.0);
  EXPECT_FALSE(sglang.kv_of_free_memory);
  // Overlapped: only the host work beyond the GPU's time is exposed.
  const models::EngineOverhead host{units::milliseconds(1.0), units::microseconds(0.0),
                                    models::HostOverlap::overlapped};
  const auto m = model_on(testing::llama2_7b(), "H100-SXM5-80GB", {}, host);
  models::IterationBatch one;
  one.decode_sequences = 1;
  one.decode_kv_tokens = 100;
  one.sampled_sequences = 1;
  const models::IterationTime t = m->iteration_time(one);
  EXPECT_NEAR(t.overhead.value(), std::max(0.0, 1e-3 - t.gpu().value()), 1e-15);
}

}  // namespace
}  // namespace clustersim::sim
