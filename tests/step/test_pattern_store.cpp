// PatternStore (models/parallelism/step_program.hpp): the regular patterns of a MegatronPatterns taken from a
// store shared by many layouts must be the patterns built for each layout alone, group for group and rank for
// rank (and so hash the same), whatever order the layouts come in; the store must tell apart every one of the
// five numbers of a StridedGroups and groups from neighbour pairs, stay bounded, and share one copy between
// layouts with the same groups.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "models/parallelism/layout.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/parallelism/strided_groups.hpp"

namespace clustersim::models {
namespace {

/// Every layout of 64 GPUs (and some of 48) over tensor, context, pipeline, data, expert and expert tensor,
/// with the folded MoE groups strided or not.
std::vector<ParallelismConfig> layouts() {
  std::vector<ParallelismConfig> out;
  for (const int64_t gpus : {64, 48}) {
    for (const int64_t t : {1, 2, 4, 8}) {
      for (const int64_t c : {1, 2}) {
        for (const int64_t p : {1, 2, 3, 4, 8}) {
          if (gpus % (t * c * p) != 0) continue;
          for (const int64_t e : {1, 2, 4, 16}) {
            for (const int64_t et : {1, 2}) {
              ParallelismConfig l;
              l.tensor = t;
              l.context = c;
              l.pipeline = p;
              l.data = gpus / (t * c * p);
              l.expert = e;
              l.expert_tensor = et;
              out.push_back(l);
            }
          }
        }
      }
    }
  }
  return out;
}

/// The ten patterns of `m`, in member order.
std::vector<const LazyPattern*> members(const MegatronPatterns& m) {
  return {&m.tensor, &m.data, &m.pipeline, &m.context, &m.expert, &m.expert_tensor, &m.expert_model,
          &m.expert_data, &m.expert_intra_node, &m.expert_inter_node};
}

TEST(PatternStore, SharedPatternsEqualThoseBuiltPerLayout) {
  const std::vector<ParallelismConfig> all = layouts();
  ASSERT_GT(all.size(), 200u);
  // Forwards and backwards through one store: a pattern first built for another layout is reused.
  for (const bool backwards : {false, true}) {
    const auto store = std::make_shared<PatternStore>();
    std::vector<std::shared_ptr<const MegatronPatterns>> kept;  // keep the shared copies alive
    for (size_t n = 0; n < all.size(); ++n) {
      const ParallelismConfig& l = all[backwards ? all.size() - 1 - n : n];
      for (const int64_t gpus_per_node : {4, 8}) {
        SCOPED_TRACE(layout_text(l) + ", " + std::to_string(gpus_per_node) + " GPUs a node");
        auto shared = std::make_shared<const MegatronPatterns>(l, gpus_per_node, store);
        const MegatronPatterns alone(l, gpus_per_node);
        const std::vector<const LazyPattern*> a = members(*shared), b = members(alone);
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i]->get().groups, b[i]->get().groups) << "member " << i;
          EXPECT_EQ(a[i]->get().hash(), b[i]->get().hash()) << "member " << i;
        }
        // And the functions of layout.hpp / step_program.hpp themselves.
        EXPECT_EQ(shared->pipeline.get().groups, pipeline_pattern(l).groups);
        EXPECT_EQ(shared->data.get().groups, data_parallel_pattern(l).groups);
        EXPECT_EQ(shared->expert_data.get().groups, expert_data_pattern(l).groups);
        kept.push_back(std::move(shared));
      }
    }
    EXPECT_LE(store->size(), PatternStore::kMaxPatterns);
  }
}

TEST(PatternStore, LayoutsWithTheSameGroupsShareOneCopy) {
  const auto store = std::make_shared<PatternStore>();
  ParallelismConfig a, b;
  a.tensor = b.tensor = 4;
  a.pipeline = 2;
  a.data = 8;
  b.pipeline = 4;
  b.data = 4;
  const MegatronPatterns ma(a, 8, store), mb(b, 8, store);
  EXPECT_EQ(&ma.tensor.get(), &mb.tensor.get());      // 4 consecutive ranks, 16 groups, in both
  EXPECT_NE(&ma.pipeline.get(), &mb.pipeline.get());  // 2 stages against 4
  EXPECT_NE(ma.pipeline.get().groups, mb.pipeline.get().groups);
}

TEST(PatternStore, EveryNumberOfTheKeyAndTheKindCount) {
  PatternStore store;
  const StridedGroups base = strided_groups(2, 3, 4);  // count 8, size 3, stride 2, per_block 2, block_step 6
  std::vector<StridedGroups> variants(6, base);
  variants[1].count = 4;
  variants[2].size = 2;
  variants[3].stride = 1;
  variants[4].per_block = 1;
  variants[5].block_step = 7;
  for (int round = 0; round < 2; ++round) {  // the second round reads them back from the store
    for (size_t i = 0; i < variants.size(); ++i) {
      SCOPED_TRACE("variant " + std::to_string(i) + ", round " + std::to_string(round));
      EXPECT_EQ(store.groups(variants[i])->groups, variants[i].pattern().groups);
      EXPECT_EQ(store.neighbours(variants[i])->groups, neighbour_pairs(variants[i]).groups);
    }
  }
  EXPECT_EQ(store.size(), 2 * variants.size());
}

TEST(PatternStore, StaysBoundedAndRightWhenCleared) {
  PatternStore store;
  std::vector<std::shared_ptr<const CommPattern>> held;
  for (int64_t above = 1; above <= static_cast<int64_t>(PatternStore::kMaxPatterns) + 40; ++above) {
    const StridedGroups s = strided_groups(1, 2, above);
    held.push_back(store.groups(s));
    EXPECT_LE(store.size(), PatternStore::kMaxPatterns);
  }
  // Patterns handed out before a clear stay valid; asked again, they are rebuilt the same.
  for (int64_t above = 1; above <= static_cast<int64_t>(held.size()); ++above) {
    const StridedGroups s = strided_groups(1, 2, above);
    ASSERT_EQ(held[static_cast<size_t>(above - 1)]->groups, s.pattern().groups);
    EXPECT_EQ(store.groups(s)->groups, s.pattern().groups);
  }
  // One pattern past the rank bound alone still comes back right.
  const StridedGroups big = strided_groups(1, 8, PatternStore::kMaxRanks / 8 + 1);
  EXPECT_EQ(store.groups(big)->groups.size(), static_cast<size_t>(big.count));
  EXPECT_LE(store.size(), 1u);
}

TEST(PatternStore, CountsTheRanksOfGroupsAndPairsToTheBound) {
  // The store counts a pattern's ranks from its five numbers (count x size; 2 (size - 1) x count for pairs):
  // a filler of kMaxRanks - 1,024 ranks, then 1,024 more ranks stay (two patterns held), 1,026 clear it first.
  const StridedGroups filler = strided_groups(1, 1024, PatternStore::kMaxRanks / 1024 - 1);
  for (const int64_t size : {513, 514}) {
    SCOPED_TRACE("size " + std::to_string(size));
    PatternStore pairs;
    (void)pairs.groups(filler);
    const StridedGroups line = strided_groups(1, size, 1);  // size - 1 pairs: 1,024 or 1,026 ranks
    EXPECT_EQ(pairs.neighbours(line)->groups, neighbour_pairs(line).groups);
    EXPECT_EQ(pairs.size(), size == 513 ? 2u : 1u);
    PatternStore groups;
    (void)groups.groups(filler);
    const StridedGroups two = strided_groups(1, size - 1, 2);  // two groups: 1,024 or 1,026 ranks
    EXPECT_EQ(groups.groups(two)->groups, two.pattern().groups);
    EXPECT_EQ(groups.size(), size == 513 ? 2u : 1u);
  }
}

TEST(PatternStore, ConcurrentFirstUsesAgree) {
  const auto store = std::make_shared<PatternStore>();
  ParallelismConfig l;
  l.tensor = 8;
  l.pipeline = 4;
  l.data = 32;
  std::vector<std::shared_ptr<const MegatronPatterns>> patterns;
  for (int i = 0; i < 4; ++i) patterns.push_back(std::make_shared<const MegatronPatterns>(l, 8, store));
  std::vector<const CommPattern*> seen(patterns.size(), nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] { seen[i] = &patterns[i]->pipeline.get(); });
  }
  for (std::thread& th : threads) th.join();
  for (const CommPattern* s : seen) EXPECT_EQ(s->groups, pipeline_pattern(l).groups);
}

}  // namespace
}  // namespace clustersim::models
