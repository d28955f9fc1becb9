// Inside a serving run (issue 30, item 6): the engine iterations recorded for --trace and /iterations, the batch
// statistics and the gaps between tokens (TBT) against closed forms: one request alone runs one prefill iteration
// then N - 1 decode iterations, and its N - 1 gaps are those decode iterations; an offline batch that fits one
// iteration runs N iterations of B sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <memory>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/engine/time.hpp"
#include "sim/serving/iteration_log.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/serving_summary.hpp"
#include "tests/support/models.hpp"
#include "tests/support/catalog.hpp"

namespace clustersim::sim {
namespace {

using testing::catalog;

std::shared_ptr<const models::InferenceModel> llama2_7b_on_h100() {
  return std::make_shared<const models::InferenceModel>(testing::llama2_7b(), models::ServingNumerics{}, 1,
                                                        catalog().device("H100-SXM5-80GB"), 1.0, nullptr,
                                                        models::EngineOverhead{});
}

ServingSetup recording_setup() {
  ServingSetup setup;
  setup.model = llama2_7b_on_h100();
  setup.kv_cache_tokens = 1 << 20;
  setup.iteration_log.enabled = true;
  return setup;
}

/// An iteration's duration as the engine times it: the model's, rounded up to the engine's 1 ns tick.
double engine_seconds(const models::IterationTime& t) { return Time::from_seconds(t.total()).to_seconds().value(); }

// One request of P prompt tokens and N outputs: iteration 0 computes the prompt and samples the first token, then
// N - 1 decode iterations at contexts P, P + 1, ..., P + N - 2, back to back; each of the N - 1 gaps between its
// tokens is one of those decode iterations, so TBT's mean is TPOT and its percentiles those iterations'.
TEST(ServingTrace, OneRequestIsOnePrefillThenNMinusOneDecodesAndItsGapsAreTheDecodes) {
  constexpr int64_t P = 1000, N = 33;
  const ServingSetup setup = recording_setup();
  const ServingResult r = simulate_serving(setup, {{0.0, P, N}});
  ASSERT_EQ(r.iterations, N);
  const std::vector<IterationRecord>& it = r.inside.records;
  ASSERT_EQ(static_cast<int64_t>(it.size()), N);
  models::IterationBatch prefill;
  prefill.prefill_tokens = P;
  prefill.prefill_attention_pairs = models::prefill_attention_pairs(0, P);
  prefill.sampled_sequences = 1;
  EXPECT_EQ(it[0].prefill_tokens, P);
  EXPECT_EQ(it[0].decode_tokens, 0);
  EXPECT_EQ(it[0].sequences, 1);
  EXPECT_DOUBLE_EQ(it[0].start_s, 0.0);
  EXPECT_DOUBLE_EQ(it[0].duration_s, engine_seconds(setup.model->iteration_time(prefill)));
  EXPECT_EQ(it[0].kv_blocks_used, (P + 1 + 15) / 16);  // the prompt and its first token's slot, 16-token blocks
  std::vector<double> decodes;
  double sum = 0.0;
  for (int64_t k = 1; k < N; ++k) {
    const IterationRecord& x = it[static_cast<size_t>(k)];
    models::IterationBatch b;
    b.decode_sequences = 1;
    b.decode_kv_tokens = P + k - 1;
    b.sampled_sequences = 1;
    EXPECT_EQ(x.index, k);
    EXPECT_EQ(x.engine, 0);
    EXPECT_EQ(x.prefill_tokens, 0);
    EXPECT_EQ(x.decode_tokens, 1);
    EXPECT_EQ(x.sequences, 1);
    EXPECT_DOUBLE_EQ(x.duration_s, engine_seconds(setup.model->iteration_time(b))) << "decode " << k;
    EXPECT_NEAR(x.start_s, it[static_cast<size_t>(k - 1)].start_s + it[static_cast<size_t>(k - 1)].duration_s, 1e-9);
    decodes.push_back(x.duration_s);
    sum += x.duration_s;
  }
  const GapHistogram& tbt = r.inside.tbt;
  ASSERT_EQ(tbt.count(), N - 1);
  EXPECT_NEAR(tbt.mean_s(), sum / (N - 1), 1e-9);
  EXPECT_NEAR(tbt.mean_s(), r.requests[0].tpot_s(), 1e-9);
  // Nearest rank among the N - 1 = 32 gaps: p50 the 16th, p100 the 32nd; within the 2^-8 bucket width.
  std::sort(decodes.begin(), decodes.end());
  EXPECT_NEAR(tbt.percentile_s(50), decodes[15], decodes[15] / 256);
  EXPECT_NEAR(tbt.percentile_s(100), decodes[31], decodes[31] / 256);
  EXPECT_NEAR(tbt.percentile_s(1), decodes[0], decodes[0] / 256);

  const ServingSummary s = summarize_serving(r, {}, 1, 1, 8, std::nullopt);
  EXPECT_NEAR(s.tbt_mean_s, s.tpot_mean_s, 1e-9);
  EXPECT_NEAR(s.e2e_per_output_token_mean_s, r.requests[0].e2e_s() / N, 1e-12);
  EXPECT_DOUBLE_EQ(s.sequences_per_iteration_mean, 1.0);
  EXPECT_DOUBLE_EQ(s.prefill_tokens_per_iteration_mean, static_cast<double>(P) / N);
  EXPECT_DOUBLE_EQ(s.decode_tokens_per_iteration_mean, static_cast<double>(N - 1) / N);
  EXPECT_DOUBLE_EQ(s.prefill_token_share, static_cast<double>(P) / (P + N - 1));
}

// B requests of P prompt tokens and N outputs at once, their prompts inside one iteration's token budget: one
// iteration computes all B prompts, then N - 1 decode their B sequences. N iterations of B sequences: mean, p50 and
// p99 are B; prefill tokens B P / N and decode tokens B (N - 1) / N per iteration.
TEST(ServingTrace, AnOfflineBatchRunsNIterationsOfBSequences) {
  constexpr int64_t B = 8, P = 100, N = 10;
  ServingSetup setup = recording_setup();
  setup.iteration_log.enabled = false;  // the statistics need no records
  const ServingResult r = simulate_serving(setup, std::vector<ServingRequest>(B, {0.0, P, N}));
  EXPECT_EQ(r.iterations, N);
  EXPECT_TRUE(r.inside.records.empty());
  const ServingSummary s = summarize_serving(r, {}, 1, 1, 8, std::nullopt);
  EXPECT_DOUBLE_EQ(s.sequences_per_iteration_mean, B);
  EXPECT_DOUBLE_EQ(s.sequences_per_iteration_p50, B);
  EXPECT_DOUBLE_EQ(s.sequences_per_iteration_p99, B);
  EXPECT_DOUBLE_EQ(s.prefill_tokens_per_iteration_mean, static_cast<double>(B * P) / N);
  EXPECT_DOUBLE_EQ(s.decode_tokens_per_iteration_mean, static_cast<double>(B * (N - 1)) / N);
  EXPECT_DOUBLE_EQ(s.prefill_token_share, static_cast<double>(P) / (P + N - 1));
  EXPECT_EQ(r.inside.tbt.count(), B * (N - 1));
}

// A long prompt arriving while a request decodes is computed in one iteration with that decode (chunked prefill):
// the decode's gap is that whole mixed iteration, which TBT's top percentile shows and TPOT's mean dilutes.
TEST(ServingTrace, ACoScheduledPromptStallsOneGapAndTbtShowsIt) {
  ServingSetup setup = recording_setup();
  const ServingResult r = simulate_serving(setup, {{0.0, 100, 200}, {0.5, 8000, 1}});
  const IterationRecord* mixed = nullptr;
  for (const IterationRecord& x : r.inside.records) {
    if (x.prefill_tokens > 0 && x.decode_tokens > 0) mixed = &x;
  }
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->prefill_tokens, 8000);
  EXPECT_EQ(mixed->sequences, 2);
  const GapHistogram& tbt = r.inside.tbt;
  EXPECT_EQ(tbt.count(), 199);
  EXPECT_NEAR(tbt.percentile_s(100), mixed->duration_s, mixed->duration_s / 256);
  EXPECT_GT(tbt.percentile_s(100), 5 * tbt.percentile_s(50));
  EXPECT_LT(r.requests[0].tpot_s(), 2 * tbt.percentile_s(50));  // the mean over 199 gaps hides the stall
}

// Sampling: every Nth iteration of the run (by index), those starting inside [from, to), at most max_records (the
// rest counted as dropped); the statistics always cover every iteration.
TEST(ServingTrace, SamplingKeepsEveryNthInTheWindowUpToTheCap) {
  ServingSetup setup = recording_setup();
  setup.iteration_log.every = 3;
  const std::vector<ServingRequest> requests(4, {0.0, 200, 40});
  const ServingResult all = simulate_serving(recording_setup(), requests);
  const ServingResult r = simulate_serving(setup, requests);
  ASSERT_EQ(r.iterations, all.iterations);
  EXPECT_EQ(r.fingerprint, all.fingerprint);  // recording changes nothing of the run
  ASSERT_EQ(static_cast<int64_t>(r.inside.records.size()), (r.iterations + 2) / 3);
  for (size_t i = 0; i < r.inside.records.size(); ++i) {
    EXPECT_EQ(r.inside.records[i].index, static_cast<int64_t>(3 * i));
    EXPECT_DOUBLE_EQ(r.inside.records[i].start_s, all.inside.records[3 * i].start_s);
  }
  setup.iteration_log.every = 1;
  setup.iteration_log.from_s = all.inside.records[10].start_s;
  setup.iteration_log.to_s = all.inside.records[20].start_s;
  const ServingResult w = simulate_serving(setup, requests);
  ASSERT_EQ(w.inside.records.size(), 10u);
  EXPECT_EQ(w.inside.records.front().index, 10);
  EXPECT_EQ(w.inside.records.back().index, 19);
  setup.iteration_log = {};
  setup.iteration_log.enabled = true;
  setup.iteration_log.max_records = 5;
  const ServingResult capped = simulate_serving(setup, requests);
  EXPECT_EQ(capped.inside.records.size(), 5u);
  EXPECT_EQ(capped.inside.records_dropped, capped.iterations - 5);
  setup.iteration_log.every = 0;
  EXPECT_THROW((void)simulate_serving(setup, requests), std::invalid_argument);
}

// The histograms: nearest-rank percentiles of integers exactly; gaps below 256 ns in a bucket each, above within
// 2^-8 of their value, a bucket's percentile the mean of its gaps.
TEST(ServingTrace, HistogramsAreExactWhereTheyPromise) {
  CountHistogram c;
  EXPECT_TRUE(std::isnan(c.percentile(50)));
  for (int64_t v : {1, 2, 2, 3, 10}) c.add(v);
  EXPECT_DOUBLE_EQ(c.mean(), 18.0 / 5);
  EXPECT_DOUBLE_EQ(c.percentile(50), 2);   // rank ceil(2.5) = 3
  EXPECT_DOUBLE_EQ(c.percentile(80), 3);   // rank 4
  EXPECT_DOUBLE_EQ(c.percentile(99), 10);  // rank 5
  EXPECT_THROW(c.add(-1), std::invalid_argument);

  for (int64_t ns = 0; ns < 512; ++ns) EXPECT_EQ(GapHistogram::bucket_of(ns), static_cast<size_t>(ns));
  size_t last = GapHistogram::bucket_of(511);
  for (int64_t ns = 512; ns < 1 << 16; ++ns) {  // buckets ascend by at most one, each under 2^-8 of its values wide
    const size_t b = GapHistogram::bucket_of(ns);
    EXPECT_LE(b - last, 1u);
    last = b;
  }
  // From 2^20 ns (1.05 ms) buckets are 2^(20 - 8) = 4096 ns wide.
  EXPECT_EQ(GapHistogram::bucket_of(1 << 20), GapHistogram::bucket_of((1 << 20) + 4095));
  EXPECT_EQ(GapHistogram::bucket_of((1 << 20) + 4096), GapHistogram::bucket_of(1 << 20) + 1);
  GapHistogram g;
  EXPECT_TRUE(std::isnan(g.mean_s()));
  for (int k = 0; k < 99; ++k) g.add(0.020);
  g.add(0.500);
  EXPECT_DOUBLE_EQ(g.percentile_s(50), 0.020);
  EXPECT_DOUBLE_EQ(g.percentile_s(99), 0.020);
  EXPECT_DOUBLE_EQ(g.percentile_s(100), 0.500);
  EXPECT_NEAR(g.mean_s(), (99 * 0.020 + 0.5) / 100, 1e-15);
  EXPECT_THROW(g.add(-1e-3), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::sim
