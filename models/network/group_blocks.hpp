// The blocks of a collective pattern's groups (issue 31): groups joined when they share whatever a symmetry
// reduction says they must not share (a leaf or pod in pattern_symmetry.cpp, a rank in rail_symmetry.cpp),
// listed block by block. Shared by the two reductions so that their block structure is one definition.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

namespace clustersim::models::detail {

/// Union-find over group indices 0 .. n-1 (path halving; the smaller root wins a join, so a block's root is its
/// first group). n < 2^32 - 1.
class GroupUnion {
 public:
  static constexpr uint32_t kNone = ~uint32_t{0};  ///< "no group": a free slot in the callers' owner tables

  explicit GroupUnion(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), uint32_t{0}); }
  /// The root of group `g`'s block.
  uint32_t root(uint32_t g) {
    while (parent_[g] != g) {
      parent_[g] = parent_[parent_[g]];
      g = parent_[g];
    }
    return g;
  }
  /// Puts groups `a` and `b` in one block.
  void join(uint32_t a, uint32_t b) {
    const uint32_t ra = root(a), rb = root(b);
    if (ra != rb) parent_[std::max(ra, rb)] = std::min(ra, rb);
  }
  /// Groups held.
  [[nodiscard]] size_t size() const { return parent_.size(); }

 private:
  std::vector<uint32_t> parent_;
};

/// The blocks of a GroupUnion in order of their first group, each block's groups in pattern order: block b is
/// members[offsets[b] .. offsets[b + 1]) (one flat array, not a vector per block).
struct GroupBlocks {
  std::vector<uint32_t> members;  ///< group indices, block by block
  std::vector<size_t> offsets;    ///< count() + 1 entries
  [[nodiscard]] size_t count() const { return offsets.size() - 1; }
  [[nodiscard]] std::span<const uint32_t> block(size_t b) const {
    return {members.data() + offsets[b], offsets[b + 1] - offsets[b]};
  }
};

/// The blocks of `u`'s groups (O(groups)).
inline GroupBlocks blocks_of(GroupUnion& u) {
  const size_t n = u.size();
  std::vector<uint32_t> block_of(n);
  std::vector<uint32_t> block_of_root(n, GroupUnion::kNone);
  uint32_t count = 0;
  for (uint32_t g = 0; g < n; ++g) {
    const uint32_t root = u.root(g);
    if (block_of_root[root] == GroupUnion::kNone) block_of_root[root] = count++;
    block_of[g] = block_of_root[root];
  }
  GroupBlocks blocks;
  blocks.offsets.assign(static_cast<size_t>(count) + 1, 0);
  for (uint32_t b : block_of) ++blocks.offsets[b + 1];
  for (size_t b = 0; b < count; ++b) blocks.offsets[b + 1] += blocks.offsets[b];
  blocks.members.resize(n);
  std::vector<size_t> fill(blocks.offsets.begin(), blocks.offsets.end() - 1);
  for (uint32_t g = 0; g < n; ++g) blocks.members[fill[block_of[g]]++] = g;
  return blocks;
}

}  // namespace clustersim::models::detail
