// Engine releases (issue 25): what a release changes in an iteration (the host's NCCL calls, asynchronous output
// processing, grouped-query key/value reads, multi-step scheduling), each against a hand calculation; the
// release names and aliases; and truncated lognormal request lengths against their closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "models/serving/lognormal.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/workload.hpp"
#include "tests/support/models.hpp"

namespace clustersim::sim {
namespace {

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

const models::DeviceSpec& h100() { return catalog().device("H100-SXM5-80GB"); }

/// Llama 2 70B's shape (80 layers, 64 query heads in 8 groups), as the v0.6.1 TensorRT-LLM rows serve it.
models::ModelConfig llama2_70b() {
  models::ModelConfig m = testing::llama2_7b();
  m.num_layers = 80;
  m.hidden_size = 8192;
  m.num_attention_heads = 64;
  m.num_query_groups = 8;
  m.ffn_hidden_size = 28672;
  return m;
}

models::IterationBatch decode(int64_t sequences, int64_t cached_each) {
  models::IterationBatch b;
  b.decode_sequences = sequences;
  b.decode_kv_tokens = sequences * cached_each;
  b.sampled_sequences = sequences;
  return b;
}

/// A flat all-reduce time: the collective's kernel, the same for every size.
units::Seconds flat_all_reduce(units::Bytes) { return units::microseconds(10.0); }

TEST(EngineRelease, EachNcclCallCostsTheHostItsLaunch) {
  // TP 4 over 80 layers: two all-reduces per layer and the logits gather, 161 NCCL calls per iteration; at
  // Vidur's 20 us each the host adds 161 x 20 us = 3.22 ms, on top of the collectives' own time.
  models::EngineOverhead launched{units::Seconds(0.0), units::Seconds(0.0), models::HostOverlap::serial,
                                  models::kNcclCallHost};
  const models::InferenceModel eager(llama2_70b(), {}, 4, h100(), 1.0, flat_all_reduce, launched);
  const models::InferenceModel graphed(llama2_70b(), {}, 4, h100(), 1.0, flat_all_reduce,
                                       models::EngineOverhead{units::Seconds(0.0), units::Seconds(0.0)});
  const models::IterationTime a = eager.iteration_time(decode(1, 1000));
  const models::IterationTime b = graphed.iteration_time(decode(1, 1000));
  EXPECT_NEAR(a.collective_launch.value(), 161 * 20e-6, 1e-12);
  EXPECT_EQ(b.collective_launch.value(), 0.0);
  EXPECT_NEAR(a.total().value() - b.total().value(), 3.22e-3, 1e-12);
  EXPECT_EQ(a.communication.value(), b.communication.value());
  // One GPU: no collective, no call.
  const models::InferenceModel one(llama2_70b(), {}, 1, catalog().device("H200-SXM-141GB"), 1.0, nullptr, launched);
  EXPECT_EQ(one.iteration_time(decode(1, 1000)).collective_launch.value(), 0.0);
}

TEST(EngineRelease, AsynchronousOutputProcessingHidesBehindTheGpu) {
  // Host work fixed 2 ms + 50 us per sampled sequence. Serial: the GPU waits for all of it. Asynchronous output
  // processing: the per-sequence part runs during the next forward pass, so only what exceeds the GPU's time is
  // exposed: 8 sequences (0.4 ms) hide entirely; 2,000 sequences (100 ms) outlast the GPU by 100 ms - GPU time.
  const auto model = [](models::HostOverlap overlap) {
    return std::make_shared<const models::InferenceModel>(
        testing::llama2_7b(), models::ServingNumerics{}, 1, h100(), 1.0, nullptr,
        models::EngineOverhead{units::milliseconds(2.0), units::microseconds(50.0), overlap});
  };
  const auto serial = model(models::HostOverlap::serial), async = model(models::HostOverlap::async_output);
  const models::IterationTime s8 = serial->iteration_time(decode(8, 500));
  const models::IterationTime a8 = async->iteration_time(decode(8, 500));
  EXPECT_NEAR(s8.overhead.value(), 2e-3 + 8 * 50e-6, 1e-12);
  EXPECT_NEAR(a8.overhead.value(), 2e-3, 1e-12);
  EXPECT_EQ(s8.gpu().value(), a8.gpu().value());
  const models::IterationTime a2000 = async->iteration_time(decode(2000, 10));
  ASSERT_LT(a2000.gpu().value(), 0.1);
  EXPECT_NEAR(a2000.overhead.value(), 2e-3 + (2000 * 50e-6 - a2000.gpu().value()), 1e-12);
  // Inside a multi-step block the scheduler did not run: no fixed part.
  models::IterationBatch unscheduled = decode(8, 500);
  unscheduled.scheduled = false;
  EXPECT_NEAR(serial->iteration_time(unscheduled).overhead.value(), 8 * 50e-6, 1e-12);
}

TEST(EngineRelease, AKernelWithoutGroupedQueryReadsLoadsTheCacheOncePerQueryHead) {
  // Llama 2 70B at TP 1: 64 query heads share 8 key/value heads. One sequence with 1,000 cached tokens writes
  // one and reads 1,000: per layer 2 (K and V) x 1,001 x 8 x 128 x 2 bytes once per group, or 8 times as much
  // once per query head (TensorRT-LLM's MMHA before v0.7).
  const models::InferenceModel shared(llama2_70b(), {}, 1, catalog().device("H200-SXM-141GB"), 1.0, nullptr,
                                      models::EngineOverhead{units::Seconds(0.0), units::Seconds(0.0)});
  const models::InferenceModel per_head(llama2_70b(), {}, 1, catalog().device("H200-SXM-141GB"), 1.0, nullptr,
                                        models::EngineOverhead{units::Seconds(0.0), units::Seconds(0.0)}, {},
                                        models::EngineKernels{true});
  const double bytes = 2.0 * 1001 * 8 * 128 * 2.0;
  const double bandwidth = catalog().device("H200-SXM-141GB").achievable_memory_bandwidth.value();
  const double kernel = models::ComputeModel::kKernelOverhead.value();
  EXPECT_NEAR(shared.iteration_time(decode(1, 1000)).attention.value(), 80 * (bytes / bandwidth + kernel), 1e-9);
  EXPECT_NEAR(per_head.iteration_time(decode(1, 1000)).attention.value(), 80 * (8 * bytes / bandwidth + kernel),
              1e-9);
  // Without grouped-query attention (a = g) the two are the same.
  const models::InferenceModel mha(testing::llama2_7b(), {}, 1, h100(), 1.0, nullptr, {}, {},
                                   models::EngineKernels{true});
  const models::InferenceModel mha_shared(testing::llama2_7b(), {}, 1, h100(), 1.0, nullptr, {});
  EXPECT_EQ(mha.iteration_time(decode(4, 100)).attention.value(),
            mha_shared.iteration_time(decode(4, 100)).attention.value());
}

/// One replica without host work except a fixed 1 ms per scheduled iteration.
ServingSetup one_replica(int64_t scheduler_steps) {
  ServingSetup setup;
  setup.model = std::make_shared<const models::InferenceModel>(
      testing::llama2_7b(), models::ServingNumerics{}, 1, h100(), 1.0, nullptr,
      models::EngineOverhead{units::milliseconds(1.0), units::Seconds(0.0)});
  setup.kv_cache_tokens = 4096;
  setup.policy.scheduler_steps = scheduler_steps;
  return setup;
}

TEST(EngineRelease, MultiStepSchedulingAdmitsBetweenBlocks) {
  // A arrives at 0 (16 prompt tokens, 9 outputs): one prefill iteration, then decodes. B arrives half-way into
  // A's first decode. Scheduling every step, B's prompt joins the next iteration; with blocks of 4 decode steps,
  // B waits for the block's end: after A's 4th decode.
  const auto run = [](int64_t steps, double b_arrival) {
    return simulate_serving(one_replica(steps), {{0.0, 16, 9}, {b_arrival, 16, 2}});
  };
  const ServingSetup setup = one_replica(4);
  models::IterationBatch prefill;
  prefill.prefill_tokens = 16;
  prefill.prefill_attention_pairs = models::prefill_attention_pairs(0, 16);
  prefill.sampled_sequences = 1;
  const double p = setup.model->iteration_time(prefill).total().value();
  // A's decodes: the first of a block is scheduled (1 ms of host work), the next three are not.
  std::vector<double> d;
  for (int64_t k = 0; k < 4; ++k) {
    models::IterationBatch b = decode(1, 16 + k);
    b.scheduled = k == 0;
    d.push_back(setup.model->iteration_time(b).total().value());
  }
  EXPECT_NEAR(d[0] - d[1], 1e-3, 1e-6);  // the fixed host work, paid once per block
  const double b_arrival = p + 0.5 * d[0];
  const ServingResult every = run(1, b_arrival);
  const ServingResult blocks = run(4, b_arrival);
  // B's first token ends the iteration that starts right after the one it arrived in (every step), or after the
  // block of four (multi-step); that iteration is B's prefill beside A's decode. The engine rounds each
  // iteration up to a whole nanosecond: a nanosecond per iteration of tolerance.
  models::IterationBatch mixed = decode(1, 17);
  mixed.prefill_tokens = 16;
  mixed.prefill_attention_pairs = models::prefill_attention_pairs(0, 16);
  mixed.sampled_sequences = 2;
  const double first_decode_scheduled = setup.model->iteration_time(decode(1, 16)).total().value();
  EXPECT_NEAR(every.requests[1].first_token_s,
              p + first_decode_scheduled + setup.model->iteration_time(mixed).total().value(), 3e-9);
  models::IterationBatch mixed_after_block = decode(1, 20);
  mixed_after_block.prefill_tokens = 16;
  mixed_after_block.prefill_attention_pairs = models::prefill_attention_pairs(0, 16);
  mixed_after_block.sampled_sequences = 2;
  EXPECT_NEAR(blocks.requests[1].first_token_s,
              p + d[0] + d[1] + d[2] + d[3] + setup.model->iteration_time(mixed_after_block).total().value(), 6e-9);
  // A alone: 1 prefill + 8 decodes; in blocks of 4 the 8 decodes pay the host work twice instead of 8 times.
  const ServingResult alone_every = simulate_serving(one_replica(1), {{0.0, 16, 9}});
  const ServingResult alone_blocks = simulate_serving(one_replica(4), {{0.0, 16, 9}});
  EXPECT_EQ(alone_every.iterations, 9);
  EXPECT_EQ(alone_blocks.iterations, 9);
  EXPECT_NEAR(alone_every.requests[0].finish_s - alone_blocks.requests[0].finish_s, 6e-3, 2e-8);
  // A block's batch is fixed: with 7 outputs A samples its last token on the second block's 2nd step, decodes the
  // block's 2 remaining steps, and finishes at the block's end: the same 9 iterations and finish as 9 outputs.
  const ServingResult short_blocks = simulate_serving(one_replica(4), {{0.0, 16, 7}});
  EXPECT_EQ(short_blocks.iterations, 9);
  EXPECT_DOUBLE_EQ(short_blocks.requests[0].finish_s, alone_blocks.requests[0].finish_s);
  EXPECT_EQ(simulate_serving(one_replica(1), {{0.0, 16, 7}}).iterations, 7);
}

TEST(EngineRelease, ReleasesNameWhatTheyReproduceAndFamiliesAlias) {
  for (const models::EngineProfile& p : models::engine_profiles()) {
    EXPECT_FALSE(p.release.empty()) << p.name;
    EXPECT_FALSE(p.basis.empty()) << p.name;
    EXPECT_EQ(p.name.substr(0, p.family.size()), p.family) << p.name;  // family-version
  }
  EXPECT_EQ(models::engine_profile("vllm").name, "vllm-0.6");
  EXPECT_EQ(models::engine_profile("tensorrt-llm").name, "tensorrt-llm-0.17");
  EXPECT_EQ(models::engine_profile("lmdeploy").name, "lmdeploy-0.1");
  EXPECT_EQ(models::engine_profile("sglang").name, "sglang-0.4");
  EXPECT_THROW((void)models::engine_profile("tgi"), std::invalid_argument);
  // What the releases change: output processing from vLLM v0.6, NCCL calls and per-head KV reads before
  // TensorRT-LLM v0.7, multi-step only in vLLM's V0 engine from v0.6.
  EXPECT_EQ(models::engine_profile("vllm-0.5").overhead.overlap, models::HostOverlap::serial);
  EXPECT_EQ(models::engine_profile("vllm-0.6").overhead.overlap, models::HostOverlap::async_output);
  EXPECT_TRUE(models::engine_profile("vllm-0.6").multi_step);
  EXPECT_FALSE(models::engine_profile("vllm-v1").multi_step);
  EXPECT_EQ(models::engine_profile("tensorrt-llm-0.6").overhead.collective_launch, models::kNcclCallHost);
  EXPECT_TRUE(models::engine_profile("tensorrt-llm-0.6").kernels.kv_read_per_query_head);
  EXPECT_EQ(models::engine_profile("tensorrt-llm-0.17").overhead.collective_launch.value(), 0.0);
  EXPECT_FALSE(models::engine_profile("tensorrt-llm-0.17").kernels.kv_read_per_query_head);
  // A family's releases share its fitted host work.
  EXPECT_EQ(models::engine_profile("vllm-0.5").overhead.fixed, models::engine_profile("vllm-v1").overhead.fixed);
}

TEST(Workload, TruncatedLognormalLengthsStayInTheirBoundsWithTheConditionalMean) {
  // Median 100, sigma 1. The mass in [50, 200] is Phi(ln 2) - Phi(-ln 2) = 2 Phi(0.693147) - 1 = 2 x 0.755891 - 1
  // = 0.511783; in [100, inf) exactly one half.
  EXPECT_NEAR(models::lognormal_mass(100, 1.0, 50, 200), 0.511783, 1e-6);
  EXPECT_NEAR(models::lognormal_mass(100, 1.0, 100, std::numeric_limits<double>::infinity()), 0.5, 1e-15);
  EXPECT_NEAR(models::lognormal_mass(100, 1.0, 1, 1e9), 1.0 - 0.5 * std::erfc(std::log(100.0) / std::sqrt(2.0)) -
                                                              0.5 * std::erfc(std::log(1e7) / std::sqrt(2.0)),
              1e-12);
  // The conditional mean of a lognormal truncated to [a, b]: exp(mu + s^2 / 2) (Phi(zb - s) - Phi(za - s)) /
  // (Phi(zb) - Phi(za)), z = (ln x - mu) / s. For [50, 200]: 164.872 x (Phi(-0.306853) - Phi(-1.693147)) /
  // 0.511783 = 164.872 x (0.379478 - 0.045214) / 0.511783 = 107.684 tokens.
  const auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double mu = std::log(100.0), za = std::log(50.0 / 100.0), zb = std::log(200.0 / 100.0);
  const double mean = std::exp(mu + 0.5) * (phi(zb - 1.0) - phi(za - 1.0)) / (phi(zb) - phi(za));
  EXPECT_NEAR(mean, 107.684, 0.001);
  SyntheticWorkload w;
  w.arrivals.kind = ArrivalProcess::Kind::at_once;
  w.requests = 200000;
  w.prompt.kind = LengthDistribution::Kind::lognormal;
  w.prompt.median = 100;
  w.prompt.sigma = 1.0;
  w.prompt.truncated = true;
  w.prompt.low = 50;
  w.prompt.high = 200;
  const std::vector<ServingRequest> r = generate_workload(w);
  double sum = 0.0;
  std::vector<double> lengths;
  for (const ServingRequest& q : r) {
    ASSERT_GE(q.prompt_tokens, 50);
    ASSERT_LE(q.prompt_tokens, 200);
    sum += static_cast<double>(q.prompt_tokens);
    lengths.push_back(static_cast<double>(q.prompt_tokens));
  }
  // Rounding to whole tokens moves the mean by well under a token.
  EXPECT_NEAR(sum / static_cast<double>(r.size()), mean, 0.5);
  // The bounds are symmetric about the median in ln x: the conditional median is the median.
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<long>(lengths.size() / 2), lengths.end());
  EXPECT_NEAR(lengths[lengths.size() / 2], 100.0, 1.0);
  // Far in the upper tail (the survival-function branch): [400, 800] above a median of 100.
  w.prompt.low = 400;
  w.prompt.high = 800;
  for (const ServingRequest& q : generate_workload(w)) {
    ASSERT_GE(q.prompt_tokens, 400);
    ASSERT_LE(q.prompt_tokens, 800);
  }
  // An interval with almost no mass is refused.
  w.prompt.low = 1e6;
  w.prompt.high = 2e6;
  EXPECT_THROW((void)generate_workload(w), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::sim
