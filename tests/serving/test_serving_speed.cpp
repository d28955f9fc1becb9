// The serving engine's fast paths (issue 31) against the exact paths they replace, bit for bit: the iteration-time
// memo (models::IterationMemo) against iteration_time without it, on a dense model, a dense model at tensor 8, an
// MoE model and an MLA + MoE model, over prefill, decode and mixed batches, each asked twice (computed, then from
// the memo); GapHistogram::add(seconds, times) against `times` calls of add(seconds), below and beyond 2^53 ns of
// sums; IterationTokens against observe_token per token; and arrivals scheduled one by one under reserved event
// sequences (Simulator::reserve_sequences) against all scheduled at once: the same order and fingerprint.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "models/serving/inference_model.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/serving/iteration_log.hpp"
#include "tests/support/catalog.hpp"
#include "tests/support/models.hpp"

namespace clustersim {
namespace {

using testing::catalog;

uint64_t bits(double x) { return std::bit_cast<uint64_t>(x); }

void expect_same(const models::IterationTime& a, const models::IterationTime& b) {
  EXPECT_EQ(bits(a.gemm.value()), bits(b.gemm.value()));
  EXPECT_EQ(bits(a.attention.value()), bits(b.attention.value()));
  EXPECT_EQ(bits(a.memory_bound.value()), bits(b.memory_bound.value()));
  EXPECT_EQ(bits(a.communication.value()), bits(b.communication.value()));
  EXPECT_EQ(bits(a.collective_launch.value()), bits(b.collective_launch.value()));
  EXPECT_EQ(bits(a.overhead.value()), bits(b.overhead.value()));
}

/// Prefill-only, decode-only and mixed batches of several sizes, some repeated with other keys read.
std::vector<models::IterationBatch> shapes() {
  std::vector<models::IterationBatch> out;
  for (const int64_t prefill : {0, 1, 17, 512, 2048, 8191}) {
    for (const int64_t decodes : {0, 1, 7, 64, 256}) {
      if (prefill + decodes == 0) continue;
      for (const int64_t keys_per_sequence : {1, 1000}) {
        models::IterationBatch b;
        b.prefill_tokens = prefill;
        b.prefill_attention_pairs = models::prefill_attention_pairs(100, prefill);
        b.decode_sequences = decodes;
        b.decode_kv_tokens = decodes * keys_per_sequence;
        b.sampled_sequences = decodes + (prefill > 0 ? 1 : 0);
        b.scheduled = keys_per_sequence == 1;
        out.push_back(b);
      }
    }
  }
  return out;
}

void expect_memo_exact(const models::InferenceModel& model) {
  models::IterationMemo memo;
  for (int pass = 0; pass < 2; ++pass) {  // the first pass fills the memo, the second reads it
    for (const models::IterationBatch& b : shapes()) {
      SCOPED_TRACE(::testing::Message() << "pass " << pass << ", prefill " << b.prefill_tokens << ", decodes "
                                        << b.decode_sequences << ", keys " << b.decode_kv_tokens);
      expect_same(model.iteration_time(b, memo), model.iteration_time(b));
    }
  }
}

const auto kAllReduce = [](units::Bytes bytes) { return units::Seconds(bytes.value() / 100e9 + 5e-6); };

TEST(IterationMemo, DenseModelIsBitIdentical) {
  const models::InferenceModel m(testing::llama2_7b(), {}, 1, catalog().device("H100-SXM5-80GB"), 1.0, nullptr, {});
  expect_memo_exact(m);
}

TEST(IterationMemo, TensorParallelModelIsBitIdentical) {
  models::EngineOverhead overhead;
  overhead.overlap = models::HostOverlap::async_output;
  overhead.collective_launch = models::kNcclCallHost;
  const models::InferenceModel m(testing::llama2_7b(), models::serving_numerics("fp8", true), 8,
                                 catalog().device("H100-SXM5-80GB"), 1.0, kAllReduce, overhead);
  expect_memo_exact(m);
}

TEST(IterationMemo, MixtureOfExpertsModelIsBitIdentical) {
  models::ModelConfig mixtral = testing::llama2_7b();
  mixtral.num_query_groups = 8;
  mixtral.ffn_hidden_size = 14336;
  mixtral.num_experts = 8;
  mixtral.moe_router_topk = 2;
  const models::InferenceModel m(mixtral, {}, 1, catalog().device("A100-SXM4-80GB"), 1.0, nullptr, {});
  expect_memo_exact(m);
}

TEST(IterationMemo, MultiLatentAttentionModelIsBitIdentical) {
  const models::InferenceModel m(testing::deepseek_v3(163840), models::serving_numerics("fp8", false), 8,
                                 catalog().device("H200-SXM-141GB"), 1.0, kAllReduce, {});
  expect_memo_exact(m);
}

TEST(IterationMemo, RefusesAnotherModelsMemo) {
  const models::DeviceSpec& h100 = catalog().device("H100-SXM5-80GB");
  const models::InferenceModel a(testing::llama2_7b(), {}, 1, h100, 1.0, nullptr, {});
  const models::InferenceModel b(testing::llama2_7b(), {}, 1, h100, 1.0, nullptr, {});
  models::IterationMemo memo;
  models::IterationBatch batch;
  batch.decode_sequences = batch.sampled_sequences = 1;
  (void)a.iteration_time(batch, memo);
  EXPECT_THROW((void)b.iteration_time(batch, memo), std::invalid_argument);
}

void expect_same(const sim::GapHistogram& a, const sim::GapHistogram& b) {
  EXPECT_EQ(a.count(), b.count());
  EXPECT_EQ(bits(a.mean_s()), bits(b.mean_s()));
  for (const double p : {1.0, 50.0, 90.0, 99.0, 100.0}) EXPECT_EQ(bits(a.percentile_s(p)), bits(b.percentile_s(p)));
}

TEST(GapHistogramRuns, ARunCountsAsItsGapsOneByOne) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> gap_s(0.0, 0.2);
  std::uniform_int_distribution<int64_t> times(1, 300);
  sim::GapHistogram runs, one_by_one;
  for (int i = 0; i < 2000; ++i) {
    const double g = gap_s(rng);
    const int64_t n = times(rng);
    runs.add(g, n);
    for (int64_t k = 0; k < n; ++k) one_by_one.add(g);
  }
  expect_same(runs, one_by_one);
}

TEST(GapHistogramRuns, SumsBeyondTwoToThe53NanosecondsStillMatch) {
  // 4e6 s = 4e15 ns: three of them pass 2^53 (9.007e15); the odd 1 ns gaps then round away one by one.
  sim::GapHistogram runs, one_by_one;
  const std::vector<std::pair<double, int64_t>> gaps = {{4e6, 2}, {3e-9, 5}, {4e6, 3}, {1e-9, 7}, {4.000001e6, 4}};
  for (const auto& [g, n] : gaps) {
    runs.add(g, n);
    for (int64_t k = 0; k < n; ++k) one_by_one.add(g);
  }
  expect_same(runs, one_by_one);
  EXPECT_THROW(runs.add(1.0, 0), std::invalid_argument);
  EXPECT_THROW(runs.add(-1.0, 2), std::invalid_argument);
}

TEST(IterationTokens, GathersAsObserveTokenCounts) {
  // Batches whose tokens' previous times repeat in runs, break them, and include first and surplus tokens.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> pick(0, 3);
  sim::InsideServing gathered, each;
  std::vector<double> last_a(64, 0.0), last_b(64, 0.0);
  std::vector<int64_t> generated(64, 0);
  double now = 0.0;
  for (int iteration = 0; iteration < 500; ++iteration) {
    now += 0.013 + 0.001 * pick(rng);
    sim::IterationTokens tokens(gathered, now);
    for (size_t s = 0; s < 64; ++s) {
      if (pick(rng) == 0) continue;  // not in this iteration
      ++generated[s];
      const int64_t wanted = 40 + static_cast<int64_t>(s);
      tokens.observe(generated[s], wanted, last_a[s]);
      sim::observe_token(each, generated[s], wanted, last_b[s], now);
      ASSERT_EQ(bits(last_a[s]), bits(last_b[s]));
    }
    tokens.flush();
  }
  EXPECT_GT(each.tbt.count(), 2000);
  expect_same(gathered.tbt, each.tbt);
}

TEST(ReservedSequences, ArrivalsScheduledOneByOneRunAsScheduledAtOnce) {
  // Arrivals (some at equal times) and other events at the same instants, scheduled at once or each arrival by the
  // one before under reserved sequences: the same order of execution and the same fingerprint.
  const std::vector<int64_t> arrivals_ns = {0, 5, 5, 10, 20, 20, 20, 35};
  auto run = [&](bool lazy) {
    sim::Simulator simulator;
    std::vector<int> order;
    std::function<void(size_t, uint64_t)> send = [&](size_t i, uint64_t sequence) {
      simulator.schedule_reserved(sim::Time::from_ns(arrivals_ns[i]), sequence, [&, i, sequence] {
        if (i + 1 < arrivals_ns.size()) send(i + 1, sequence + 1);
        order.push_back(static_cast<int>(i));
        simulator.schedule_in(sim::Time::from_ns(5), [&, i] { order.push_back(100 + static_cast<int>(i)); });
      });
    };
    if (lazy) {
      send(0, simulator.reserve_sequences(arrivals_ns.size()));
    } else {
      for (size_t i = 0; i < arrivals_ns.size(); ++i) {
        simulator.schedule(sim::Time::from_ns(arrivals_ns[i]), [&, i] {
          order.push_back(static_cast<int>(i));
          simulator.schedule_in(sim::Time::from_ns(5), [&, i] { order.push_back(100 + static_cast<int>(i)); });
        });
      }
    }
    simulator.schedule(sim::Time::from_ns(20), [&] { order.push_back(-1); });
    simulator.run();
    return std::make_pair(order, simulator.fingerprint());
  };
  const auto eager = run(false), lazy = run(true);
  EXPECT_EQ(lazy.first, eager.first);
  EXPECT_EQ(lazy.second, eager.second);
  sim::Simulator simulator;
  EXPECT_THROW(simulator.schedule_reserved(sim::Time::zero(), 0, [] {}), std::logic_error);  // none reserved
}

}  // namespace
}  // namespace clustersim
