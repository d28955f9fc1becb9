// Prefix caching (issue 30): the cache's LRU order and reference counts, the hit rate of a shared-prefix stream in
// closed form, multi-turn sessions (their prompts and arrivals), prefix-aware routing and determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/serving/prefix_cache.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/workload.hpp"
#include "tests/support/models.hpp"

namespace clustersim::sim {
namespace {

using serving_engine::BlockName;
using serving_engine::PrefixCache;

const models::DeviceSpec& h100() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  static const models::DeviceSpec d = c.device("H100-SXM5-80GB");
  return d;
}

ServingSetup setup_of(int64_t kv_cache_tokens, bool caching) {
  ServingSetup setup;
  setup.model = std::make_shared<const models::InferenceModel>(testing::llama2_7b(), models::ServingNumerics{}, 1,
                                                               h100(), 1.0, nullptr, models::EngineOverhead{});
  setup.kv_cache_tokens = kv_cache_tokens;
  setup.policy.prefix_caching = caching;
  return setup;
}

/// N requests, one at a time (each arrives long after the one before finished), each a system prompt of S tokens
/// (prefix 0) and U tokens of its own.
std::vector<ServingRequest> sequential_stream(int64_t n, int64_t s, int64_t u) {
  std::vector<ServingRequest> out;
  for (int64_t i = 0; i < n; ++i) out.push_back({10.0 * static_cast<double>(i), s + u, 8, 0, s});
  return out;
}

TEST(PrefixCache, FreedBlocksAreEvictedLeastRecentlyUsedFirst) {
  PrefixCache cache;
  const BlockName a{0, -1, 0}, b{0, -1, 1}, c{0, 7, 2};
  EXPECT_EQ(cache.fill(a), 0);
  EXPECT_EQ(cache.fill(b), 0);
  EXPECT_EQ(cache.fill(c), 0);
  // A request's blocks are freed tail first: c, then b, then a (a the most recently used).
  EXPECT_TRUE(cache.release(c));
  EXPECT_TRUE(cache.release(b));
  EXPECT_TRUE(cache.release(a));
  EXPECT_EQ(cache.free_blocks(), 3);
  // One new block with no empty block evicts c, then b: the head a stays.
  cache.make_room(1, 0);
  auto chain = [&](int64_t i) { return i == 0 ? a : i == 1 ? b : c; };
  EXPECT_EQ(cache.match(chain, 3), 2);  // a and b still cached, c gone
  cache.make_room(1, 0);
  EXPECT_EQ(cache.match(chain, 3), 1);
  EXPECT_EQ(cache.evicted(), 2);
  // A hit on a free block takes it out of the free queue: it can no longer be evicted.
  EXPECT_TRUE(cache.acquire(a));
  EXPECT_EQ(cache.free_blocks(), 0);
  cache.make_room(1, 1);  // an empty block is there: nothing evicted
  EXPECT_EQ(cache.cached_blocks(), 1);
}

TEST(PrefixCache, UnnamedFreedBlocksKeepTheirPlaceInTheLruOrder) {
  // A finished request's own blocks (no other request can hit them) join the queue as an unnamed run, between the
  // named blocks freed before and after them: eviction takes the older named block, then the run, then the newer.
  PrefixCache cache;
  const BlockName old{1, -1, 0}, young{2, -1, 0};
  cache.fill(old);
  cache.fill(young);
  cache.release(old);
  cache.free_unnamed(3);
  cache.release(young);
  EXPECT_EQ(cache.free_blocks(), 5);
  cache.make_room(1, 0);
  EXPECT_EQ(cache.cached_blocks(), 1);  // the old one went first
  cache.make_room(3, 0);
  EXPECT_EQ(cache.cached_blocks(), 1);  // then the run of three
  EXPECT_EQ(cache.free_blocks(), 1);
  cache.make_room(1, 0);
  EXPECT_EQ(cache.cached_blocks(), 0);
  // A preempted request's own full block is named when freed: its re-admission can find it.
  cache.free_named({0, 5, 0});
  EXPECT_EQ(cache.match([](int64_t) { return BlockName{0, 5, 0}; }, 1), 1);
}

TEST(PrefixCache, SharedBlocksAreReferenceCountedAndFreedOnce) {
  PrefixCache cache;
  const BlockName a{3, -1, 0};
  EXPECT_EQ(cache.fill(a), 0);   // the first sequence registers it
  EXPECT_EQ(cache.fill(a), -1);  // a second that computed the same tokens shares it: its own block freed
  EXPECT_FALSE(cache.acquire(a));  // a third hits it while referenced: no free capacity used
  EXPECT_FALSE(cache.release(a));
  EXPECT_FALSE(cache.release(a));
  EXPECT_TRUE(cache.release(a));  // the last reference: into the free queue, once
  EXPECT_EQ(cache.free_blocks(), 1);
  EXPECT_TRUE(cache.acquire(a));  // free -> referenced again
  EXPECT_EQ(cache.free_blocks(), 0);
}

TEST(PrefixCache, BlockNamesSplitAtTheSystemPromptAndByStream) {
  const ServingRequest q{0.0, 100, 1, 2, 40};  // a 40-token system prompt, blocks of 16: blocks 0 and 1 are inside
  EXPECT_EQ(serving_engine::block_name(q, 5, 1, 16), (BlockName{2, -1, 1}));
  EXPECT_EQ(serving_engine::block_name(q, 5, 2, 16), (BlockName{2, 11, 2}));  // straddles: the request's own stream
  ServingRequest turn = q;
  turn.session = 4;
  EXPECT_EQ(serving_engine::block_name(turn, 9, 3, 16), (BlockName{2, 8, 3}));  // the session's stream
}

TEST(PrefixCaching, HitRateOfASequentialSharedPrefixStreamIsClosedForm) {
  // N requests one after another, each S = 512 tokens of system prompt (32 full blocks) and U = 100 of its own:
  // the first computes all; each later one finds the S tokens cached. hit = (N - 1) S / (N (S + U)).
  const int64_t n = 10, s = 512, u = 100;
  const ServingResult r = simulate_serving(setup_of(1 << 16, true), sequential_stream(n, s, u));
  const PrefixCacheStats stats = prefix_cache_stats(r);
  EXPECT_EQ(stats.cached_tokens, (n - 1) * s);
  EXPECT_EQ(stats.prompt_tokens, n * (s + u));
  EXPECT_DOUBLE_EQ(stats.hit_rate(), static_cast<double>((n - 1) * s) / static_cast<double>(n * (s + u)));
  EXPECT_EQ(r.requests[0].cached_tokens, 0);
  // A hit request computes U tokens (reading the S cached keys), not S + U: its TTFT is shorter.
  EXPECT_LT(r.requests[1].ttft_s(), r.requests[0].ttft_s());
  // Off: nothing hits, and the run is the run without content fields.
  const ServingResult off = simulate_serving(setup_of(1 << 16, false), sequential_stream(n, s, u));
  EXPECT_EQ(prefix_cache_stats(off).cached_tokens, 0);
  std::vector<ServingRequest> plain;
  for (const ServingRequest& q : sequential_stream(n, s, u)) {
    plain.push_back({q.arrival_s, q.prompt_tokens, q.output_tokens});
  }
  const ServingResult bare = simulate_serving(setup_of(1 << 16, false), plain);
  EXPECT_EQ(off.fingerprint, bare.fingerprint);
  EXPECT_DOUBLE_EQ(off.requests[1].ttft_s(), bare.requests[1].ttft_s());
  EXPECT_NEAR(off.requests[1].ttft_s(), off.requests[0].ttft_s(), 1e-9);
}

TEST(PrefixCaching, AWholePromptHitStillComputesItsLastToken) {
  // The same 160-token prompt (10 full blocks) twice: the second finds (160 - 1) / 16 = 9 blocks, 144 tokens.
  std::vector<ServingRequest> q{{0.0, 160, 4, -1, 0, 0}, {10.0, 160, 4, -1, 0, 0}};
  const ServingResult r = simulate_serving(setup_of(1 << 16, true), q);
  EXPECT_EQ(r.requests[1].cached_tokens, 144);
}

TEST(PrefixCaching, EvictionUnderPressureKeepsTheCountsConsistent) {
  // A KV cache of 64 blocks and 200 requests sharing a 256-token system prompt, arriving together: preemptions,
  // evictions of cached blocks and re-admissions; every request completes and the run repeats bit for bit.
  std::vector<ServingRequest> q;
  for (int i = 0; i < 200; ++i) q.push_back({0.01 * i, 256 + 40 + i % 50, 64 + i % 30, i % 2, 256});
  const ServingResult a = simulate_serving(setup_of(64 * 16, true), q);
  const ServingResult b = simulate_serving(setup_of(64 * 16, true), q);
  int64_t completed = 0, preemptions = 0;
  for (const RequestOutcome& o : a.requests) {
    completed += std::isnan(o.finish_s) ? 0 : 1;
    preemptions += o.preemptions;
  }
  EXPECT_EQ(completed, 200);
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(prefix_cache_stats(a).hit_rate(), 0.3);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_EQ(a.requests[i].finish_s, b.requests[i].finish_s);
    EXPECT_EQ(a.requests[i].cached_tokens, b.requests[i].cached_tokens);
  }
  // The last sample, after every request left, shows no block referenced.
  EXPECT_EQ(a.samples.back().kv_occupancy, 0.0);
}

TEST(Sessions, EachTurnsPromptIsTheConversationSoFarPlusNewTokens) {
  SyntheticWorkload w;
  w.arrivals.rate_per_s = 2.0;
  w.prompt.value = 100;
  w.output.value = 30;
  w.duration_s = 10.0;
  w.system_prompt = {200, 1.0, 1};
  w.sessions = {3, 5.0};
  const std::vector<ServingRequest> q = generate_workload(w);
  ASSERT_EQ(q.size() % 3, 0U);
  for (size_t i = 0; i < q.size(); i += 3) {
    EXPECT_EQ(q[i].prompt_tokens, 300);           // system prompt + 100
    EXPECT_EQ(q[i + 1].prompt_tokens, 300 + 30 + 100);  // + the first answer + 100 new
    EXPECT_EQ(q[i + 2].prompt_tokens, 430 + 30 + 100);
    EXPECT_EQ(q[i].previous, -1);
    EXPECT_EQ(q[i + 1].previous, static_cast<int64_t>(i));
    EXPECT_EQ(q[i + 2].previous, static_cast<int64_t>(i + 1));
    EXPECT_EQ(q[i + 2].session, q[i].session);
    EXPECT_EQ(q[i + 1].arrival_s, q[i].arrival_s);  // a placeholder: the session's start
    EXPECT_EQ(q[i].think_s, 0.0);
    EXPECT_GT(q[i + 1].think_s, 0.0);
    EXPECT_EQ(q[i + 1].prefix_tokens, 200);
  }
  // Without the content keys the stream is the one before them (the same draws).
  SyntheticWorkload plain = w;
  plain.system_prompt = {};
  plain.sessions = {};
  const std::vector<ServingRequest> p = generate_workload(plain);
  for (const ServingRequest& r : p) EXPECT_EQ(r.session, -1);
}

TEST(Sessions, ALaterTurnArrivesItsThinkTimeAfterThePreviousFinished) {
  std::vector<ServingRequest> q{{0.0, 300, 20, 0, 200, 0, -1, 0.0}, {0.0, 420, 20, 0, 200, 0, 0, 2.5}};
  const ServingResult r = simulate_serving(setup_of(1 << 16, true), q);
  EXPECT_DOUBLE_EQ(r.requests[1].arrival_s, r.requests[0].finish_s + 2.5);
  // The second turn finds the first turn's prompt and its output but the last token cached, in whole blocks:
  // (300 + 20 - 1) / 16 = 19 full blocks = 304 tokens.
  EXPECT_EQ(r.requests[1].cached_tokens, 304);
}

TEST(PrefixAwareRouting, SendsASessionsTurnsToItsReplica) {
  // 16 sessions of 4 turns on 4 replicas: with prefix-aware routing each session stays where it started (its
  // history is cached there); least-outstanding routing scatters them and finds less.
  SyntheticWorkload w;
  w.arrivals.kind = ArrivalProcess::Kind::at_once;  // the 16 sessions start together: they spread over the replicas
  w.prompt.value = 300;
  w.output.value = 50;
  w.requests = 64;
  w.system_prompt = {512, 1.0, 1};
  w.sessions = {4, 1.0};
  w.seed = 7;
  const std::vector<ServingRequest> q = generate_workload(w);
  ServingSetup setup = setup_of(1 << 16, true);
  setup.replicas = 4;
  setup.routing = Routing::prefix_aware;
  const ServingResult r = simulate_serving(setup, q);
  std::vector<int64_t> first_replica(64, -1);
  int64_t replicas_used = 0;
  std::vector<bool> used(4, false);
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].previous < 0) {
      first_replica[static_cast<size_t>(q[i].session)] = r.requests[i].replica;
    } else {
      EXPECT_EQ(r.requests[i].replica, first_replica[static_cast<size_t>(q[i].session)]) << "request " << i;
    }
    if (!used[static_cast<size_t>(r.requests[i].replica)]) ++replicas_used;
    used[static_cast<size_t>(r.requests[i].replica)] = true;
  }
  EXPECT_GT(replicas_used, 1);
  setup.routing = Routing::least_outstanding;
  const ServingResult scattered = simulate_serving(setup, q);
  EXPECT_GT(prefix_cache_stats(r).hit_rate(), prefix_cache_stats(scattered).hit_rate());
  // Deterministic.
  setup.routing = Routing::prefix_aware;
  EXPECT_EQ(simulate_serving(setup, q).fingerprint, r.fingerprint);
}

}  // namespace
}  // namespace clustersim::sim
