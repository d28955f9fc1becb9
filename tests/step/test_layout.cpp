// The layout (models/parallelism/layout.hpp): Megatron's rank order and the groups derived from the dimension
// table, written out by hand for TP 2 x PP 2 x DP 3 (12 GPUs).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "models/parallelism/layout.hpp"
#include "models/parallelism/step_program.hpp"

namespace clustersim::models {
namespace {

ParallelismConfig tp2_pp2_dp3() {
  ParallelismConfig p;
  p.tensor = 2;
  p.pipeline = 2;
  p.data = 3;
  return p;
}

using Groups = std::vector<std::vector<int64_t>>;

TEST(Layout, RankOrderIsTensorThenContextThenDataThenPipeline) {
  const ParallelismConfig p = tp2_pp2_dp3();
  // rank = stage x (t d) + data x t + tensor (coordinates: tensor, context, data, pipeline).
  EXPECT_EQ(layout_rank(p, std::array<int64_t, 4>{1, 0, 0, 0}), 1);
  EXPECT_EQ(layout_rank(p, std::array<int64_t, 4>{0, 0, 1, 0}), 2);
  EXPECT_EQ(layout_rank(p, std::array<int64_t, 4>{0, 0, 0, 1}), 6);
  EXPECT_EQ(layout_rank(p, std::array<int64_t, 4>{1, 0, 2, 1}), 11);
  ParallelismConfig cp = p;
  cp.context = 2;  // rank = stage x (t c d) + data x (t c) + context x t + tensor
  EXPECT_EQ(layout_rank(cp, std::array<int64_t, 4>{0, 1, 0, 0}), 2);
  EXPECT_EQ(layout_rank(cp, std::array<int64_t, 4>{0, 0, 1, 0}), 4);
  EXPECT_EQ(layout_rank(cp, std::array<int64_t, 4>{1, 1, 2, 1}), 12 + 8 + 2 + 1);
  std::set<int64_t> all;
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t d = 0; d < 3; ++d) {
      for (int64_t t = 0; t < 2; ++t) all.insert(megatron_rank(p, t, d, s));
    }
  }
  EXPECT_EQ(all.size(), 12u);  // a bijection onto 0..11
  EXPECT_EQ(*all.rbegin(), 11);
}

TEST(Layout, GroupsAndNeighboursWrittenOutByHand) {
  const ParallelismConfig p = tp2_pp2_dp3();
  EXPECT_EQ(layout_groups(p, LayoutDim::tensor).groups, (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}}));
  EXPECT_EQ(layout_groups(p, LayoutDim::data).groups, (Groups{{0, 2, 4}, {1, 3, 5}, {6, 8, 10}, {7, 9, 11}}));
  EXPECT_EQ(layout_groups(p, LayoutDim::pipeline).groups, (Groups{{0, 6}, {1, 7}, {2, 8}, {3, 9}, {4, 10}, {5, 11}}));
  EXPECT_EQ(layout_neighbours(p, LayoutDim::pipeline).groups,
            (Groups{{0, 6}, {1, 7}, {2, 8}, {3, 9}, {4, 10}, {5, 11}}));
  // The step program's patterns are these.
  EXPECT_EQ(tensor_parallel_pattern(p).groups, layout_groups(p, LayoutDim::tensor).groups);
  EXPECT_EQ(data_parallel_pattern(p).groups, layout_groups(p, LayoutDim::data).groups);
  EXPECT_EQ(pipeline_pattern(p).groups, layout_neighbours(p, LayoutDim::pipeline).groups);
  ParallelismConfig four_stages = p;
  four_stages.pipeline = 4;
  EXPECT_EQ(layout_neighbours(four_stages, LayoutDim::pipeline).groups.size(), 3u * 6u);
}

TEST(Layout, ContextGroupsRingsAndReplicasWrittenOutByHand) {
  // TP 2 x CP 2 x DP 2 (8 GPUs): rank = data x 4 + context x 2 + tensor.
  ParallelismConfig p;
  p.tensor = 2;
  p.context = 2;
  p.data = 2;
  EXPECT_EQ(p.gpus(), 8);
  EXPECT_EQ(p.replicas(), 4);
  EXPECT_EQ(layout_groups(p, LayoutDim::context).groups, (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(layout_groups(p, LayoutDim::data).groups, (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Gradients and ZeRO shards: the ranks with the same parameters (same tensor rank and stage).
  EXPECT_EQ(data_parallel_pattern(p).groups, (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  // The rings of ring attention: the context groups in coordinate order.
  EXPECT_EQ(context_parallel_pattern(p).groups, layout_groups(p, LayoutDim::context).groups);
  ParallelismConfig four = p;
  four.context = 4;
  four.data = 1;
  EXPECT_EQ(context_parallel_pattern(four).groups, (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  // Written only when used.
  EXPECT_EQ(layout_text(p), "TP 2 x CP 2 x PP 1 x DP 2");
}

TEST(Layout, ContextParallelismSplitsTheSequenceIntoTwiceAsManyChunks) {
  ModelConfig m;
  m.num_layers = 4;
  m.hidden_size = 1024;
  m.num_attention_heads = 16;
  m.seq_length = 8192;
  ParallelismConfig p;
  p.context = 4;
  EXPECT_FALSE(layout_problem(p, m));  // 8 chunks of 1,024
  m.seq_length = 8196;                 // 8196 / 8 is not whole
  ASSERT_TRUE(layout_problem(p, m));
  EXPECT_EQ(layout_problem(p, m)->key, "parallelism.context");
  m.seq_length = 8192;
  p.tensor = 8;
  p.sequence_parallel = true;  // shards of 2,048 tokens, divisible by tensor 8
  EXPECT_FALSE(layout_problem(p, m));
  m.seq_length = 104;  // 8 chunks of 13, shards of 26 tokens: not divisible by tensor 8
  ASSERT_TRUE(layout_problem(p, m));
  EXPECT_EQ(layout_problem(p, m)->key, "parallelism.sequence_parallel");
  EXPECT_EQ(layout_problem(p, m)->message, "needs each context shard (model.seq_length / context = 26) divisible "
                                           "by tensor (8)");
}

TEST(Layout, EnumerationTriesContextParallelismForLongSequences) {
  // 8 GPUs, 8 heads, 2 layers, 2 sequences of 16,384 tokens: context 1, 2 and 4 (8 would leave shards of
  // 2,048 < kMinContextShardTokens). With context 4: t c p d = 8 and d dividing 2 sequences gives (t, p, d) =
  // (1, 1, 2) with micro batch 1, (1, 2, 1) and (2, 1, 1) with micro batch 1 or 2: 5 candidates.
  LayoutSearch q;
  q.gpus = 8;
  q.gpus_per_vm = 8;
  q.heads = 8;
  q.query_groups = 8;
  q.layers = 2;
  q.global_batch = 2;
  q.seq_length = 16384;
  int64_t max_context = 0, with_four = 0;
  for (const LayoutCandidate& c : enumerate_layouts(q)) {
    max_context = std::max(max_context, c.parallelism.context);
    if (c.parallelism.context == 4) ++with_four;
    EXPECT_EQ(c.parallelism.gpus(), 8);
  }
  EXPECT_EQ(max_context, 4);
  EXPECT_EQ(with_four, 5);
}

TEST(Layout, EnumerationTriesTensorUpToTheNvlinkDomain) {
  // 256 GB200 GPUs, 4 per VM, 128 heads and query groups: tensor up to 4 x 8 = 32 with single-VM domains; with
  // domains of 16 VMs (64 GPUs) up to 64; whole racks of 72 GPUs stop at 64 too (the next power of two, 128,
  // exceeds the domain).
  LayoutSearch q;
  q.gpus = 256;
  q.gpus_per_vm = 4;
  q.heads = 128;
  q.query_groups = 128;
  q.layers = 2;
  q.global_batch = 256;
  q.seq_length = 2048;
  auto max_tensor = [&] {
    int64_t t = 0;
    for (const LayoutCandidate& c : enumerate_layouts(q)) t = std::max(t, c.parallelism.tensor);
    return t;
  };
  EXPECT_EQ(max_tensor(), 32);
  q.gpus_per_domain = 64;
  EXPECT_EQ(max_tensor(), 64);
  q.gpus_per_domain = 72;
  EXPECT_EQ(max_tensor(), 64);
  q.gpus_per_domain = 4;  // one VM per domain: the VMs' bound
  EXPECT_EQ(max_tensor(), 32);
}

TEST(Layout, TheTableDescribesEachDimensionOnce) {
  std::set<std::string_view> keys, columns;
  for (const LayoutDimension& d : layout_dimensions()) {
    EXPECT_TRUE(keys.insert(d.key).second);
    EXPECT_TRUE(columns.insert(d.column).second);
    EXPECT_EQ(&layout_dimension(d.dim), &d);
  }
  EXPECT_EQ(layout_text(tp2_pp2_dp3()), "TP 2 x PP 2 x DP 3");
  EXPECT_EQ(size_of(tp2_pp2_dp3(), LayoutDim::data), 3);
}

TEST(Layout, ProblemsNameTheKeyToBlame) {
  ModelConfig m;
  m.num_layers = 4;
  m.hidden_size = 1024;
  m.num_attention_heads = 16;
  m.num_query_groups = 4;
  m.seq_length = 1002;
  ParallelismConfig p;
  EXPECT_FALSE(layout_problem(p, m));
  p.tensor = 32;
  EXPECT_EQ(layout_problem(p, m)->message, "must divide model.num_attention_heads (16), got 32");
  p.tensor = 8;  // divides 16 heads, not 4 query groups
  EXPECT_EQ(layout_problem(p, m)->message, "must divide model.num_query_groups (4), got 8");
  p.tensor = 4;
  p.virtual_stages = 2;
  EXPECT_EQ(layout_problem(p, m)->key, "parallelism.virtual_stages");
  p.pipeline = 4;
  EXPECT_EQ(layout_problem(p, m)->key, "parallelism.pipeline");  // 4 x 2 chunks > 4 layers
  p.virtual_stages = 1;
  p.sequence_parallel = true;
  p.tensor = 8;
  m.num_query_groups = 8;
  ASSERT_TRUE(layout_problem(p, m));
  EXPECT_EQ(layout_problem(p, m)->key, "parallelism.sequence_parallel");  // 1002 % 8 != 0
}

TEST(Layout, EnumerationWrittenOutByHand) {
  // 4 GPUs (2 per VM), 2 heads, 2 layers, 4 sequences: tensor 1 or 2 (4 does not divide the heads), pipeline
  // dividing the layers, micro batch dividing B / d; no interleaving (2 layers cannot make p x v >= 4 chunks).
  LayoutSearch q;
  q.gpus = 4;
  q.gpus_per_vm = 2;
  q.heads = 2;
  q.query_groups = 2;
  q.layers = 2;
  q.global_batch = 4;
  q.seq_length = 2048;  // too short for context parallelism (kMinContextShardTokens)
  std::vector<std::array<int64_t, 5>> got;  // t, p, d, b, v
  for (const LayoutCandidate& c : enumerate_layouts(q)) {
    got.push_back({c.parallelism.tensor, c.parallelism.pipeline, c.parallelism.data, c.micro_batch,
                   c.parallelism.virtual_stages});
  }
  const std::vector<std::array<int64_t, 5>> want{{1, 1, 4, 1, 1}, {1, 2, 2, 1, 1}, {1, 2, 2, 2, 1},
                                                 {2, 1, 2, 1, 1}, {2, 1, 2, 2, 1}, {2, 2, 1, 1, 1},
                                                 {2, 2, 1, 2, 1}, {2, 2, 1, 4, 1}};
  EXPECT_EQ(got, want);
  // With 4 layers, pipeline 2 with 2 microbatches may interleave 2 chunks (4 layers / (2 x 2), 2 % 2 == 0), not 4.
  q.layers = 4;
  bool two = false, four = false;
  for (const LayoutCandidate& c : enumerate_layouts(q)) {
    if (c.parallelism.tensor == 1 && c.parallelism.pipeline == 2 && c.micro_batch == 1) {
      two = two || c.parallelism.virtual_stages == 2;
      four = four || c.parallelism.virtual_stages == 4;
    }
  }
  EXPECT_TRUE(two);
  EXPECT_FALSE(four);
}

}  // namespace
}  // namespace clustersim::models
