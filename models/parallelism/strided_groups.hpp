// The regular groups of a Megatron layout, described by four numbers instead of a vector of ranks per group.
//
// Megatron's ranks are a mixed-radix number (layout.hpp: tensor fastest, then context, data, pipeline; a stage's
// folded MoE ranks: expert_tensor fastest, then expert, then expert data). The group along a run of consecutive
// digits (one dimension, or several adjacent ones) holds the ranks that differ only in those digits: an arithmetic
// progression of `size` ranks, `stride` apart, where stride is the product of the radices below the run and size
// the product of the run's radices. Ordered by the other digits, the slowest outermost, the groups' first ranks
// are ascending: `stride` consecutive ranks, then a jump to the next block of stride x size ranks. So a whole
// pattern is (count, size, stride, per_block, block_step), and a caller that only walks groups and ranks needs no
// vector per group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "models/network/collectives.hpp"

namespace clustersim::models {

/// `count` groups of `size` ranks each; member i of group g is rank(g, i) = start(g) + i x stride, and group g
/// starts at (g / per_block) x block_step + g mod per_block. All values >= 0; per_block >= 1.
struct StridedGroups {
  int64_t count = 0;       ///< groups
  int64_t size = 1;        ///< ranks per group
  int64_t stride = 1;      ///< rank distance between consecutive members of a group
  int64_t per_block = 1;   ///< groups whose first ranks are consecutive (start, start + 1, ...)
  int64_t block_step = 0;  ///< rank distance between the first groups of consecutive blocks

  /// The first rank of group g (0 <= g < count).
  [[nodiscard]] int64_t start(int64_t g) const { return (g / per_block) * block_step + g % per_block; }
  /// Member i (0 <= i < size) of group g.
  [[nodiscard]] int64_t rank(int64_t g, int64_t i) const { return start(g) + i * stride; }
  /// Every rank of every group, groups in order, members in order: f(group, member, rank).
  template <typename F>
  void for_each_rank(F&& f) const {
    for (int64_t g = 0; g < count; ++g) {
      const int64_t s = start(g);
      for (int64_t i = 0; i < size; ++i) f(g, i, s + i * stride);
    }
  }
  /// The first rank of every group, groups in order: f(start(g)) for g = 0 .. count - 1, block by block without
  /// a division (group b x per_block + j starts at b x block_step + j, the definition of start()).
  template <typename F>
  void for_each_start(F&& f) const {
    const int64_t n = count, per = per_block, step = block_step;  // locals: f's writes cannot alias them
    for (int64_t g = 0, first = 0; g < n; g += per, first += step) {
      const int64_t in_block = per < n - g ? per : n - g;
      for (int64_t j = 0; j < in_block; ++j) f(first + j);
    }
  }
  /// The groups written out: group g holds rank(g, 0 .. size - 1), stored flat (two allocations in all, written
  /// once: no zero fill).
  [[nodiscard]] CommPattern pattern() const {
    CommPattern p;
    const int64_t members = size, step = stride;
    p.groups.append_uniform_flat(static_cast<size_t>(count), static_cast<size_t>(size),
                                 [this, members, step](std::span<int64_t> out) {
                                   int64_t* o = out.data();
                                   for_each_start([&o, members, step](int64_t s) {
                                     for (int64_t i = 0; i < members; ++i, s += step) *o++ = s;
                                   });
                                 });
    return p;
  }
};

/// The groups along a run of consecutive mixed-radix digits: `below` the product of the radices faster than the
/// run (the members' stride), `size` the product of the run's radices, `above` the product of the slower ones.
/// below x above groups, ordered by the other digits with the slowest outermost (their first ranks ascending).
/// All three >= 1.
inline StridedGroups strided_groups(int64_t below, int64_t size, int64_t above) {
  StridedGroups s;
  s.count = below * above;
  s.size = size;
  s.stride = below;
  s.per_block = below;
  s.block_step = below * size;
  return s;
}

}  // namespace clustersim::models
