// StridedGroups (models/parallelism/strided_groups.hpp) against an explicit oracle written from layout.hpp's
// contract: every rank decomposed into its mixed-radix coordinates, grouped by the coordinates outside the
// group's dimensions, groups ordered by those (slowest outermost), members by rank. Over 720 layouts of tensor,
// context, data, pipeline, expert and expert-tensor sizes (some where the experts do not fold), the layout
// groups, neighbour pairs and folded MoE groups must be the oracle's, group for group and rank for rank.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/parallelism/layout.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/parallelism/strided_groups.hpp"

namespace clustersim::models {
namespace {

using Groups = std::vector<std::vector<int64_t>>;

/// The groups of `radices` (fastest first) over the digits in `selected`: ranks equal outside those digits,
/// groups by ascending rank with the selected digits zeroed, members ascending.
Groups oracle(const std::vector<int64_t>& radices, const std::vector<bool>& selected) {
  int64_t n = 1;
  for (const int64_t r : radices) n *= r;
  std::map<int64_t, std::vector<int64_t>> groups;
  for (int64_t rank = 0; rank < n; ++rank) {
    int64_t rest = rank, key = 0, place = 1;
    for (size_t k = 0; k < radices.size(); ++k) {
      const int64_t digit = rest % radices[k];
      rest /= radices[k];
      if (!selected[k]) key += digit * place;
      place *= radices[k];
    }
    groups[key].push_back(rank);
  }
  Groups out;
  for (auto& [key, g] : groups) out.push_back(g);
  return out;
}

/// Writes the groups out through for_each_rank (the walk a caller without vectors does).
Groups walked(const StridedGroups& s) {
  Groups out(static_cast<size_t>(s.count));
  s.for_each_rank([&](int64_t g, int64_t i, int64_t rank) {
    auto& group = out[static_cast<size_t>(g)];
    EXPECT_EQ(static_cast<int64_t>(group.size()), i);
    group.push_back(rank);
  });
  return out;
}

std::vector<ParallelismConfig> layouts() {
  std::vector<ParallelismConfig> out;
  for (const int64_t t : {1, 2, 3, 4, 8}) {
    for (const int64_t c : {1, 2, 3}) {
      for (const int64_t d : {1, 2, 4, 6}) {
        for (const int64_t p : {1, 2, 3, 4}) {
          for (const auto& [e, et] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {4, 2}}) {
            ParallelismConfig l;
            l.tensor = t;
            l.context = c;
            l.data = d;
            l.pipeline = p;
            l.expert = e;
            l.expert_tensor = et;
            out.push_back(l);
          }
        }
      }
    }
  }
  return out;
}

TEST(StridedGroups, LayoutGroupsAndNeighboursEqualTheOracleOnEveryLayout) {
  const std::vector<ParallelismConfig> all = layouts();
  ASSERT_EQ(all.size(), 720u);
  const LayoutDim dims[]{LayoutDim::tensor, LayoutDim::context, LayoutDim::data, LayoutDim::pipeline};
  for (const ParallelismConfig& l : all) {
    SCOPED_TRACE(layout_text(l));
    const std::vector<int64_t> radices{l.tensor, l.context, l.data, l.pipeline};
    for (size_t k = 0; k < 4; ++k) {
      std::vector<bool> selected(4, false);
      selected[k] = true;
      const Groups expected = oracle(radices, selected);
      const StridedGroups s = layout_strided_groups(l, dims[k]);
      EXPECT_EQ(s.pattern().groups, expected);
      EXPECT_EQ(walked(s), expected);
      EXPECT_EQ(layout_groups(l, dims[k]).groups, expected);
      // Neighbours: the pairs at coordinate c and c + 1 of each group, c outermost.
      Groups pairs;
      for (int64_t c = 0; c + 1 < radices[k]; ++c) {
        for (const auto& g : expected) pairs.push_back({g[static_cast<size_t>(c)], g[static_cast<size_t>(c + 1)]});
      }
      EXPECT_EQ(layout_neighbours(l, dims[k]).groups, pairs);
    }
    // Several dimensions together: adjacent runs are strided, the others are not (and still group correctly).
    const std::vector<std::vector<LayoutDim>> sets{{LayoutDim::context, LayoutDim::data},
                                                   {LayoutDim::tensor, LayoutDim::context},
                                                   {LayoutDim::data, LayoutDim::pipeline, LayoutDim::context},
                                                   {LayoutDim::tensor, LayoutDim::data},
                                                   {LayoutDim::context, LayoutDim::pipeline}};
    for (const auto& set : sets) {
      std::vector<bool> selected(4, false);
      for (const LayoutDim d : set) selected[static_cast<size_t>(d)] = true;
      const Groups expected = oracle(radices, selected);
      EXPECT_EQ(layout_groups(l, set).groups, expected);
      const std::optional<StridedGroups> s = layout_strided_groups(l, set);
      const bool adjacent = set.size() != 2 || (set != std::vector{LayoutDim::tensor, LayoutDim::data} &&
                                                set != std::vector{LayoutDim::context, LayoutDim::pipeline});
      ASSERT_EQ(s.has_value(), adjacent);
      if (s) {
        EXPECT_EQ(s->pattern().groups, expected);
      }
    }
    EXPECT_EQ(data_parallel_pattern(l).groups, oracle(radices, {false, true, true, false}));
  }
}

TEST(StridedGroups, FoldedExpertGroupsEqualTheOracleOnEveryLayout) {
  int folding = 0;
  for (const ParallelismConfig& l : layouts()) {
    SCOPED_TRACE(layout_text(l));
    const int64_t per_stage = l.tensor * l.context * l.data, folded = l.expert * l.expert_tensor;
    if (per_stage % folded != 0) {
      EXPECT_FALSE(expert_strided_groups(l, LayoutDim::expert).has_value());
      EXPECT_FALSE(expert_strided_groups(l, std::nullopt).has_value());
      continue;
    }
    ++folding;
    // A stage's ranks folded as expert_tensor fastest, then expert, then expert data; stages slowest.
    const std::vector<int64_t> radices{l.expert_tensor, l.expert, per_stage / folded, l.pipeline};
    const Groups et = oracle(radices, {true, false, false, false});
    const Groups ep = oracle(radices, {false, true, false, false});
    const Groups edp = oracle(radices, {false, false, true, false});
    const Groups model = oracle(radices, {true, true, false, false});
    EXPECT_EQ(expert_tensor_pattern(l).groups, et);
    EXPECT_EQ(expert_parallel_pattern(l).groups, ep);
    EXPECT_EQ(expert_data_pattern(l).groups, edp);
    EXPECT_EQ(expert_model_pattern(l).groups, model);
    EXPECT_EQ(walked(*expert_strided_groups(l, LayoutDim::expert_tensor)), et);
    EXPECT_EQ(walked(*expert_strided_groups(l, LayoutDim::expert)), ep);
    EXPECT_EQ(walked(*expert_strided_groups(l, LayoutDim::data)), edp);
    EXPECT_EQ(walked(*expert_strided_groups(l, std::nullopt)), model);
  }
  EXPECT_GT(folding, 400);
}

TEST(StridedGroups, MegatronOrderByHand) {
  // TP 2 x DP 3 x PP 2: data groups {0, 2, 4}, {1, 3, 5}, {6, 8, 10}, {7, 9, 11}.
  ParallelismConfig l;
  l.tensor = 2;
  l.data = 3;
  l.pipeline = 2;
  const StridedGroups data = layout_strided_groups(l, LayoutDim::data);
  EXPECT_EQ(data.count, 4);
  EXPECT_EQ(data.size, 3);
  EXPECT_EQ(data.stride, 2);
  EXPECT_EQ(data.start(2), 6);
  EXPECT_EQ(data.pattern().groups, (Groups{{0, 2, 4}, {1, 3, 5}, {6, 8, 10}, {7, 9, 11}}));
  EXPECT_EQ(layout_neighbours(l, LayoutDim::pipeline).groups,
            (Groups{{0, 6}, {1, 7}, {2, 8}, {3, 9}, {4, 10}, {5, 11}}));
  EXPECT_THROW((void)layout_strided_groups(l, LayoutDim::expert), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::models
