#include "models/network/rotation_symmetry.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace clustersim::models {

namespace {

/// Whether the claim's fabric conditions hold: one zone, rail NICs (one per GPU), and a single switch, a fat
/// tree of one leaf, or a two-tier fat tree whose leaves hold whole nodes (so gpus_per_node divides the spine
/// count, leaf_down_ports).
bool rotation_fabric(const FabricShape& shape, int64_t gpn) {
  if (shape.zones != 1 || !shape.rail_nics || shape.nics_per_node != gpn || gpn < 2) return false;
  if (shape.fabric == FabricKind::single_switch) return true;
  if (shape.fabric != FabricKind::fat_tree) return false;  // rail_optimized: rail_symmetry.hpp
  if (shape.tiers == 1) return true;
  return shape.tiers == 2 && shape.leaf_down_ports % gpn == 0;
}

/// What the rotation scan records: block 0's groups in pattern order (their first ranks), how many groups of each
/// local index it met, and the groups it met before their block-0 counterpart (a group's first rank and its
/// index in its block), compared once the pass ends.
struct RotationBlocks {
  std::vector<const int64_t*> first;
  std::vector<uint32_t> seen;
  std::vector<std::pair<const int64_t*, uint32_t>> deferred;
};

/// A rank's local index (r >= 0), by a mask when gpus_per_node is a power of two (8 on every shipped multi-GPU
/// VM: no division per rank).
template <bool kPowerOfTwo>
int64_t local_of(int64_t r, int64_t gpn) {
  return kPowerOfTwo ? r & (gpn - 1) : r % gpn;
}

/// Whether the `n` ranks at `moved` are those at `base` plus `shift`: branch-free over the group (the compiler
/// vectorises it, or unrolls it for a fixed size).
template <size_t kSize>
bool moved_equal(const int64_t* moved, const int64_t* base, size_t n, int64_t shift) {
  if constexpr (kSize != 0) n = kSize;
  uint64_t differ = 0;
  for (size_t j = 0; j < n; ++j) differ |= static_cast<uint64_t>(moved[j] ^ (base[j] + shift));
  return differ == 0;
}

/// The rotation scan of `count` groups of `n` ranks each, back to back from `ranks`: one pass in pattern order.
/// A group's local index t is its first rank's; it is group seen[t] of block t. A group of block 0 (t = t0)
/// must have all its ranks in [0, gpus) at local index t0 and is recorded in `first`; group i of another block
/// must be group i of block 0 with every rank moved by t - t0, compared as soon as block 0's group i is known,
/// else (a block running ahead of block 0 in pattern order) listed in `deferred`. False as soon as a condition
/// fails. kSize: `n` known at compile time (2, send/recv pairs: the group loops unroll), or 0 for any size.
/// Kept out of line, with locals only in the loop, so that its state stays in registers.
template <size_t kSize, bool kPowerOfTwo>
[[gnu::noinline]] bool scan_rotation(const int64_t* ranks, size_t count, size_t n, uint64_t gpus, int64_t gpn,
                                     int64_t t0, RotationBlocks& blocks) {
  if constexpr (kSize != 0) n = kSize;
  uint32_t* const seen = blocks.seen.data();
  size_t first_count = 0;  // blocks.first.size()
  const int64_t* const end = ranks + count * n;
  for (const int64_t* group = ranks; group != end; group += n) {
    const int64_t front = group[0];
    if (static_cast<uint64_t>(front) >= gpus) return false;  // as unsigned, a negative rank is above
    const int64_t t = local_of<kPowerOfTwo>(front, gpn);
    const uint32_t i = seen[t]++;
    if (t == t0) {
      bool outside = false;  // a rank outside the cluster or at another local index than t0
      for (size_t j = 0; j < n; ++j) {
        const int64_t r = group[j];
        outside |= (static_cast<uint64_t>(r) >= gpus) | (local_of<kPowerOfTwo>(r, gpn) != t0);
      }
      if (outside) return false;
      blocks.first.push_back(group);
      ++first_count;
    } else if (i < first_count) {
      if (!moved_equal<kSize>(group, blocks.first[i], n, t - t0)) return false;
    } else {
      blocks.deferred.emplace_back(group, i);
    }
  }
  return true;
}

/// The commonest layout, checked in a tighter pass: the groups in chunks of k >= 2 consecutive groups at local
/// indices t0, t0 + 1, ..., t0 + k - 1 (k: the groups before the first one back at t0; count a multiple of
/// k), chunk i being block 0's group i and that group moved by 1, ..., k - 1. True when the pattern has that
/// layout, block 0's groups (the chunks' first groups) then in `first`. It implies scan_rotation's conditions:
/// blocks t0 .. t0 + k - 1 of count / k groups each (one a chunk), none other, group i of block t0 + j being
/// block 0's group i moved by j; so the answer is block 0 then. False (`first` then unspecified) is no answer:
/// scan_rotation decides.
template <size_t kSize, bool kPowerOfTwo>
[[gnu::noinline]] bool scan_chunks(const int64_t* ranks, size_t count, size_t n, uint64_t gpus, int64_t gpn, int64_t t0,
                                   std::vector<const int64_t*>& first) {
  if constexpr (kSize != 0) n = kSize;
  size_t k = 1;
  while (k < count && static_cast<uint64_t>(ranks[k * n]) < gpus && local_of<kPowerOfTwo>(ranks[k * n], gpn) != t0) {
    ++k;
  }
  if (k < 2 || count % k != 0) return false;
  first.reserve(count / k);
  const int64_t* const end = ranks + count * n;
  for (const int64_t* base = ranks; base != end; base += k * n) {
    bool outside = false;  // a rank of block 0 outside the cluster or at another local index than t0
    for (size_t j = 0; j < n; ++j) {
      const int64_t r = base[j];
      outside |= (static_cast<uint64_t>(r) >= gpus) | (local_of<kPowerOfTwo>(r, gpn) != t0);
    }
    if (outside) return false;
    first.push_back(base);
    for (size_t j = 1; j < k; ++j) {
      const int64_t* group = base + j * n;
      // Equal to base moved by j, at local index t0 + j: on base's node, so in the cluster.
      if (!moved_equal<kSize>(group, base, n, static_cast<int64_t>(j))) return false;
      if (local_of<kPowerOfTwo>(group[0], gpn) != t0 + static_cast<int64_t>(j)) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<CommPattern> rotation_representative(const CommPattern& pattern, const Topology& topology) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2 || groups.front().empty()) return std::nullopt;
  const int64_t gpn = topology.gpus_per_node();
  if (!rotation_fabric(topology.fabric_shape(), gpn)) return std::nullopt;
  const size_t count = groups.size();
  const size_t size = groups.front().size();
  // Every group of `size` ranks: group g starts at g x size, one branch-free pass over the offsets (after the
  // total, which keeps every g x size below 2^32).
  const std::span<const int64_t> all = groups.all_ranks();
  if (all.size() != count * size) return std::nullopt;
  const std::span<const uint32_t> offsets = groups.offsets();
  uint32_t misplaced = 0, end = 0;
  const auto size32 = static_cast<uint32_t>(size);
  for (size_t g = 1; g <= count; ++g) {
    end += size32;  // g x size
    misplaced |= offsets[g] ^ end;
  }
  if (misplaced != 0) return std::nullopt;
  const auto gpus = static_cast<uint64_t>(topology.gpu_count());
  if (static_cast<uint64_t>(all[0]) >= gpus) return std::nullopt;
  const bool power_of_two = (gpn & (gpn - 1)) == 0;
  const auto local = [&](int64_t r) { return power_of_two ? local_of<true>(r, gpn) : local_of<false>(r, gpn); };
  const int64_t t0 = local(all[0]);
  RotationBlocks blocks;
  const int64_t* ranks = all.data();
  std::vector<const int64_t*>& first = blocks.first;
  const bool chunked = size == 2 ? (power_of_two ? scan_chunks<2, true>(ranks, count, size, gpus, gpn, t0, first)
                                                 : scan_chunks<2, false>(ranks, count, size, gpus, gpn, t0, first))
                                 : (power_of_two ? scan_chunks<0, true>(ranks, count, size, gpus, gpn, t0, first)
                                                 : scan_chunks<0, false>(ranks, count, size, gpus, gpn, t0, first));
  if (!chunked) {
    blocks.first.clear();
    blocks.seen.assign(static_cast<size_t>(gpn), 0);
    const bool scanned =
        size == 2 ? (power_of_two ? scan_rotation<2, true>(ranks, count, size, gpus, gpn, t0, blocks)
                                  : scan_rotation<2, false>(ranks, count, size, gpus, gpn, t0, blocks))
                  : (power_of_two ? scan_rotation<0, true>(ranks, count, size, gpus, gpn, t0, blocks)
                                  : scan_rotation<0, false>(ranks, count, size, gpus, gpn, t0, blocks));
    if (!scanned) return std::nullopt;
    // Every block the pass met must hold block 0's count of groups.
    size_t block_count = 0;
    for (const uint32_t n : blocks.seen) {
      if (n == 0) continue;
      if (n != blocks.first.size()) return std::nullopt;
      ++block_count;
    }
    if (block_count < 2) return std::nullopt;
    for (const auto& [group, i] : blocks.deferred) {  // i < first.size(): its block has first.size() groups
      if (!moved_equal<0>(group, blocks.first[i], size, local(group[0]) - t0)) return std::nullopt;
    }
  }
  CommPattern representative;
  representative.groups.append_uniform(blocks.first.size(), size, [&](size_t i, std::span<int64_t> out) {
    const int64_t* group = blocks.first[i];
    if (size == 2) {  // pairs: no call per group
      out[0] = group[0];
      out[1] = group[1];
    } else {
      std::copy_n(group, size, out.data());
    }
  });
  return representative;
}

}  // namespace clustersim::models
