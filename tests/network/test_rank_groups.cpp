// RankGroups (models/network/rank_groups.hpp), the flat store of a CommPattern's groups, against a plain
// std::vector<std::vector<int64_t>> holding the same groups: on random group lists (no groups, one group, empty
// groups, groups of one to many ranks, negative and large ranks) every read (size, operator[], front, back,
// iteration forwards and backwards, all_ranks, offsets), equality both ways, copies, moves and the hash (equal for
// equal groups, different for other groupings of the same ranks). Then the layouts' patterns built flat
// (StridedGroups::pattern, neighbour_pairs) against the per-group loops they replaced, on many StridedGroups, and
// append_uniform_flat (unfilled storage written once) mixed with the other ways of building, hashes included.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <span>
#include <sstream>
#include <utility>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/network/rank_groups.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/strided_groups.hpp"

namespace clustersim::models {
namespace {

using Groups = std::vector<std::vector<int64_t>>;

/// A random list of groups: 0 .. 40 groups of 0 .. 12 ranks (one in eight empty, one in four of one rank), ranks
/// in [-3, 2^40) so that negative and beyond-32-bit values occur.
Groups random_groups(std::mt19937_64& rng) {
  Groups out(rng() % 41);
  for (auto& g : out) {
    const uint64_t kind = rng() % 8;
    const size_t n = kind == 0 ? 0 : kind < 3 ? 1 : rng() % 13;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t v = rng();
      g.push_back(v % 16 == 0 ? static_cast<int64_t>(v % (uint64_t{1} << 40)) : static_cast<int64_t>(v % 64) - 3);
    }
  }
  return out;
}

/// Every read of `flat` equals the reference's.
void expect_reads_equal(const RankGroups& flat, const Groups& ref) {
  ASSERT_EQ(flat.size(), ref.size());
  EXPECT_EQ(flat.empty(), ref.empty());
  std::vector<int64_t> all;
  std::vector<uint32_t> offsets;
  for (size_t g = 0; g < ref.size(); ++g) {
    const std::span<const int64_t> group = flat[g];
    ASSERT_EQ(group.size(), ref[g].size()) << "group " << g;
    EXPECT_TRUE(std::equal(group.begin(), group.end(), ref[g].begin())) << "group " << g;
    offsets.push_back(static_cast<uint32_t>(all.size()));
    all.insert(all.end(), ref[g].begin(), ref[g].end());
  }
  if (!ref.empty()) {
    offsets.push_back(static_cast<uint32_t>(all.size()));
    EXPECT_TRUE(std::ranges::equal(flat.front(), ref.front()));
    EXPECT_TRUE(std::ranges::equal(flat.back(), ref.back()));
  }
  EXPECT_TRUE(std::ranges::equal(flat.all_ranks(), all));
  EXPECT_TRUE(std::ranges::equal(flat.offsets(), offsets));
  // Iteration, forwards (range for), backwards, and random access through the iterator.
  size_t g = 0;
  for (const auto& group : flat) EXPECT_TRUE(std::ranges::equal(group, ref[g++]));
  EXPECT_EQ(g, ref.size());
  EXPECT_EQ(static_cast<size_t>(std::distance(flat.begin(), flat.end())), ref.size());
  for (auto it = flat.end(); it != flat.begin();) {
    --it;
    EXPECT_TRUE(std::ranges::equal(*it, ref[static_cast<size_t>(it - flat.begin())]));
  }
  for (size_t k = 0; k < ref.size(); ++k) EXPECT_TRUE(std::ranges::equal(flat.begin()[static_cast<ptrdiff_t>(k)], ref[k]));
  EXPECT_TRUE(flat == ref);
}

TEST(RankGroups, ReadsEqualAVectorOfVectorsOnRandomGroupLists) {
  std::mt19937_64 rng(20261129);
  for (int trial = 0; trial < 500; ++trial) {
    const Groups ref = random_groups(rng);
    // Built three ways: from the vector of vectors, by push_back, and by push_back after a reservation.
    const RankGroups converted(ref);
    RankGroups pushed;
    for (const auto& g : ref) pushed.push_back(g);
    RankGroups reserved;
    reserved.reserve(ref.size(), 1000);
    for (const auto& g : ref) reserved.push_back(std::span<const int64_t>(g));
    expect_reads_equal(converted, ref);
    expect_reads_equal(pushed, ref);
    expect_reads_equal(reserved, ref);
    EXPECT_TRUE(converted == pushed);
    EXPECT_TRUE(converted == reserved);
    EXPECT_EQ(converted.content_hash(), pushed.content_hash());
    EXPECT_EQ(converted.content_hash(), reserved.content_hash());
    EXPECT_NE(converted.content_hash(), 0u);
    // Copies and moves keep the groups; a moved-from and a cleared store have none.
    RankGroups copy = converted;
    expect_reads_equal(copy, ref);
    RankGroups moved = std::move(copy);
    expect_reads_equal(moved, ref);
    RankGroups assigned;
    assigned = moved;
    expect_reads_equal(assigned, ref);
    moved.clear();
    expect_reads_equal(moved, {});
    EXPECT_TRUE(moved == RankGroups{});
  }
}

TEST(RankGroups, EqualityAndHashSeparateOtherGroupings) {
  const RankGroups a{{0, 1}, {2}};
  const RankGroups b{{0}, {1, 2}};
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(std::ranges::equal(a.all_ranks(), b.all_ranks()));
  EXPECT_NE(a.content_hash(), b.content_hash());
  EXPECT_TRUE(a == (Groups{{0, 1}, {2}}));
  EXPECT_FALSE(a == (Groups{{0, 1}, {2}, {}}));
  EXPECT_FALSE(a == (Groups{{0, 1}}));
  EXPECT_FALSE(RankGroups{} == RankGroups{{}});  // no groups differ from one empty group
  EXPECT_NE(RankGroups{}.content_hash(), RankGroups{{}}.content_hash());
  EXPECT_NE((RankGroups{{}, {}}).content_hash(), RankGroups{{}}.content_hash());
  EXPECT_NE((RankGroups{{0, 1}}).content_hash(), (RankGroups{{1, 0}}).content_hash());
  // Regroupings of 0 .. 11 into every composition (2^11 of them) and both orders of each rank pair: all distinct
  // hashes, each equal to the hash of an equal store built apart.
  std::set<uint64_t> seen;
  for (uint32_t cuts = 0; cuts < (1u << 11); ++cuts) {
    Groups ref(1);
    for (int64_t r = 0; r < 12; ++r) {
      if (r > 0 && (cuts >> (r - 1) & 1) != 0) ref.emplace_back();
      ref.back().push_back(r);
    }
    const RankGroups flat(ref);
    EXPECT_EQ(flat.content_hash(), RankGroups(ref).content_hash());
    EXPECT_TRUE(seen.insert(flat.content_hash()).second) << "cuts " << cuts;
  }
  // CommPattern's cached hash is the store's, and a copy of a hashed pattern hashes the same.
  CommPattern p;
  p.groups = {{0, 1}, {2, 3}};
  EXPECT_EQ(p.hash(), p.groups.content_hash());
  const CommPattern copy = p;
  EXPECT_EQ(copy.hash(), p.hash());
  std::ostringstream os;
  PrintTo(p.groups, &os);
  EXPECT_EQ(os.str(), "{{0, 1}, {2, 3}}");
}

TEST(RankGroups, HashSeparatesEveryOneBitChangeAndEveryRegrouping) {
  // Stores of 0 .. 40 ranks (the lanes' full rounds and every tail length) in groups of random sizes: flipping any
  // one bit of any rank, or moving any one group boundary by one, gives a hash unlike the original's and unlike
  // every other such change's (about 90,000 distinct stores; a good 64-bit hash collides with odds ~ 2^-34).
  std::mt19937_64 rng(4747);
  std::set<uint64_t> seen;
  size_t stores = 0;
  for (size_t n = 0; n <= 40; ++n) {
    Groups ref;
    for (size_t i = 0; i < n; ++i) {
      if (ref.empty() || rng() % 3 == 0) ref.emplace_back();
      ref.back().push_back(static_cast<int64_t>(rng() % 4096));
    }
    const auto add = [&](const Groups& g) {
      ++stores;
      EXPECT_TRUE(seen.insert(RankGroups(g).content_hash()).second) << "n " << n << ": " << testing::PrintToString(g);
    };
    add(ref);
    for (size_t g = 0; g < ref.size(); ++g) {
      for (size_t i = 0; i < ref[g].size(); ++i) {
        for (int bit = 0; bit < 64; ++bit) {
          Groups changed = ref;
          changed[g][i] = static_cast<int64_t>(static_cast<uint64_t>(changed[g][i]) ^ (uint64_t{1} << bit));
          add(changed);
        }
      }
      if (g + 1 < ref.size() && !ref[g].empty()) {  // the boundary after group g one rank earlier
        Groups moved = ref;
        moved[g + 1].insert(moved[g + 1].begin(), moved[g].back());
        moved[g].pop_back();
        add(moved);
      }
    }
  }
  EXPECT_EQ(seen.size(), stores);
}

TEST(RankGroups, MutableGroupAndAppendUniformWriteInPlace) {
  RankGroups g{{5, 4, 3}, {9}};
  const std::span<int64_t> first = g.mutable_group(0);
  std::sort(first.begin(), first.end());
  EXPECT_TRUE(g == (Groups{{3, 4, 5}, {9}}));
  g.append_uniform(3, 2, [](size_t k, std::span<int64_t> out) {
    out[0] = static_cast<int64_t>(10 * k);
    out[1] = static_cast<int64_t>(10 * k + 1);
  });
  EXPECT_TRUE(g == (Groups{{3, 4, 5}, {9}, {0, 1}, {10, 11}, {20, 21}}));
  RankGroups empty_groups;
  empty_groups.append_uniform(2, 0, [](size_t, std::span<int64_t>) {});
  EXPECT_TRUE(empty_groups == (Groups{{}, {}}));
  empty_groups.append_uniform(0, 5, [](size_t, std::span<int64_t>) { ADD_FAILURE(); });
  EXPECT_EQ(empty_groups.size(), 2u);
}

/// The StridedGroups of many shapes: counts, sizes and strides small and odd, blocks of one to several groups.
std::vector<StridedGroups> strided_shapes() {
  std::vector<StridedGroups> out;
  for (int64_t count : {0, 1, 2, 3, 6, 16, 17}) {
    for (int64_t size : {0, 1, 2, 3, 8}) {
      for (int64_t stride : {1, 2, 5}) {
        for (int64_t per_block : {1, 2, 3, 5, 20}) {
          StridedGroups s;
          s.count = count;
          s.size = size;
          s.stride = stride;
          s.per_block = per_block;
          s.block_step = per_block * stride * size + count % 3;
          out.push_back(s);
        }
      }
    }
  }
  // The groups of every rank-order dimension and of the runs of adjacent ones, on layouts like the benches'.
  for (const auto& [tensor, context, data, pipeline] :
       std::vector<std::array<int64_t, 4>>{{8, 1, 16, 8}, {2, 3, 5, 4}, {1, 1, 7, 1}, {4, 2, 1, 3}}) {
    ParallelismConfig p;
    p.tensor = tensor;
    p.context = context;
    p.data = data;
    p.pipeline = pipeline;
    for (const LayoutDimension& d : layout_dimensions()) out.push_back(layout_strided_groups(p, d.dim));
    constexpr LayoutDim kReplicas[]{LayoutDim::context, LayoutDim::data};
    out.push_back(*layout_strided_groups(p, kReplicas));
  }
  return out;
}

TEST(RankGroups, AppendUniformFlatMixesWithTheOtherBuildsAndRollsBackOnThrow) {
  std::mt19937_64 rng(47);
  for (int trial = 0; trial < 300; ++trial) {
    // Random runs of uniform groups (appended flat, or group by group) between groups pushed one by one, with a
    // pop_back now and then: every read and the hash equal those of the same groups pushed into a plain store.
    Groups ref;
    RankGroups flat;
    RankGroups per_group;
    for (uint64_t step = rng() % 8; step-- > 0;) {
      const uint64_t kind = rng() % 4;
      if (kind == 0 && !ref.empty()) {
        ref.pop_back();
        flat.pop_back();
        per_group.pop_back();
      } else if (kind == 1) {
        const Groups more = random_groups(rng);
        for (const auto& g : more) {
          ref.push_back(g);
          flat.push_back(g);
          per_group.push_back(g);
        }
      } else {
        const size_t count = rng() % 6, size = rng() % 5;
        const auto base = static_cast<int64_t>(rng() % 1000) - 7;
        Groups run(count);
        for (size_t g = 0; g < count; ++g) {
          for (size_t i = 0; i < size; ++i) run[g].push_back(base + static_cast<int64_t>(g * 31 + i * i));
        }
        ref.insert(ref.end(), run.begin(), run.end());
        flat.append_uniform_flat(count, size, [&run, size](std::span<int64_t> out) {
          ASSERT_EQ(out.size(), run.size() * size);
          for (size_t k = 0; k < out.size(); ++k) out[k] = run[k / size][k % size];
        });
        per_group.append_uniform(count, size, [&run](size_t g, std::span<int64_t> out) {
          ASSERT_EQ(out.size(), run[g].size());
          std::copy(run[g].begin(), run[g].end(), out.begin());
        });
      }
    }
    expect_reads_equal(flat, ref);
    expect_reads_equal(per_group, ref);
    EXPECT_EQ(flat.content_hash(), RankGroups(ref).content_hash());
    EXPECT_EQ(per_group.content_hash(), RankGroups(ref).content_hash());
    // A write that throws leaves the groups as they were (and a later append as if it never happened).
    EXPECT_THROW(flat.append_uniform_flat(3, 2, [](std::span<int64_t> out) {
      out[0] = 1;
      throw std::runtime_error("write failed");
    }),
                 std::runtime_error);
    expect_reads_equal(flat, ref);
    flat.append_uniform_flat(1, 2, [](std::span<int64_t> out) { out[0] = out[1] = 4; });
    ref.push_back({4, 4});
    expect_reads_equal(flat, ref);
    EXPECT_EQ(flat.content_hash(), RankGroups(ref).content_hash());
  }
}

TEST(RankGroups, ForEachStartEqualsStart) {
  for (const StridedGroups& s : strided_shapes()) {
    std::vector<int64_t> starts;
    s.for_each_start([&starts](int64_t first) { starts.push_back(first); });
    ASSERT_EQ(starts.size(), static_cast<size_t>(s.count));
    for (int64_t g = 0; g < s.count; ++g) EXPECT_EQ(starts[static_cast<size_t>(g)], s.start(g)) << "group " << g;
  }
}

TEST(RankGroups, StridedPatternsAndNeighbourPairsEqualPerGroupLoops) {
  for (const StridedGroups& s : strided_shapes()) {
    // The loops the flat builders replaced: a vector per group, rank(g, i) member by member.
    Groups groups, pairs;
    for (int64_t g = 0; g < s.count; ++g) {
      auto& group = groups.emplace_back();
      for (int64_t i = 0; i < s.size; ++i) group.push_back(s.rank(g, i));
    }
    for (int64_t c = 0; c + 1 < s.size; ++c) {
      for (int64_t g = 0; g < s.count; ++g) pairs.push_back({s.rank(g, c), s.rank(g, c) + s.stride});
    }
    const CommPattern pattern = s.pattern();
    expect_reads_equal(pattern.groups, groups);
    const CommPattern neighbours = neighbour_pairs(s);
    expect_reads_equal(neighbours.groups, pairs);
    EXPECT_EQ(pattern.hash(), RankGroups(groups).content_hash());
    EXPECT_EQ(neighbours.hash(), RankGroups(pairs).content_hash());
  }
}

}  // namespace
}  // namespace clustersim::models
