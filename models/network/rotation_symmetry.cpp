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

/// The rotation scan of a pattern of `count` groups of `size` ranks each, group g at ranks[g x size ..): one pass
/// in pattern order. A group's local index t is its first rank's; it is group seen[t] of block t. A group of
/// block 0 (t = t0) must have all its ranks in the cluster at local index t0 and is recorded in `first`; group i
/// of another block must be group i of block 0 with every rank moved by t - t0, compared as soon as block 0's
/// group i is known, else (a block running ahead of block 0 in pattern order) listed in `deferred` for the end.
/// False as soon as a condition fails. kSize: `size` known at compile time (2, send/recv pairs: the group loops
/// unroll), or 0 for any size.
struct RotationScan {
  const int64_t* ranks;
  size_t count;
  size_t size;
  uint64_t gpus;
  int64_t gpn;
  int64_t t0;
  std::vector<size_t> seen;                             // groups met so far of each local index
  std::vector<uint32_t> first;                          // block 0's groups, in pattern order
  std::vector<std::pair<uint32_t, uint32_t>> deferred;  // (group, its index in its block), compared at the end

  /// A rank's local index (r >= 0), by a mask when gpus_per_node is a power of two (8 on every shipped
  /// multi-GPU VM: no division per rank).
  template <bool kPowerOfTwo>
  [[nodiscard]] int64_t local_of(int64_t r) const {
    return kPowerOfTwo ? r & (gpn - 1) : r % gpn;
  }
  /// Whether group `moved` is group `base` with every rank plus `shift`: branch-free over the group (the compiler
  /// vectorises it, or unrolls it for a fixed size).
  template <size_t kSize>
  [[nodiscard]] bool moved_equal(size_t moved, size_t base, int64_t shift) const {
    const size_t n = kSize != 0 ? kSize : size;
    const int64_t* m = ranks + moved * n;
    const int64_t* b = ranks + base * n;
    uint64_t differ = 0;
    for (size_t j = 0; j < n; ++j) differ |= static_cast<uint64_t>(m[j] ^ (b[j] + shift));
    return differ == 0;
  }
  template <size_t kSize, bool kPowerOfTwo>
  [[nodiscard]] bool run() {
    const size_t n = kSize != 0 ? kSize : size;
    for (size_t g = 0; g < count; ++g) {
      const int64_t* group = ranks + g * n;
      if (static_cast<uint64_t>(group[0]) >= gpus) return false;  // as unsigned, a negative rank is above
      const int64_t t = local_of<kPowerOfTwo>(group[0]);
      const size_t i = seen[static_cast<size_t>(t)]++;
      if (t == t0) {
        bool outside = false;  // a rank outside the cluster or at another local index than t0
        for (size_t j = 0; j < n; ++j) {
          const int64_t r = group[j];
          outside |= (static_cast<uint64_t>(r) >= gpus) | (local_of<kPowerOfTwo>(r) != t0);
        }
        if (outside) return false;
        first.push_back(static_cast<uint32_t>(g));
      } else if (i < first.size()) {
        if (!moved_equal<kSize>(g, first[i], t - t0)) return false;
      } else {
        deferred.emplace_back(static_cast<uint32_t>(g), static_cast<uint32_t>(i));
      }
    }
    return true;
  }
};

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
  RotationScan scan{all.data(), count, size, static_cast<uint64_t>(topology.gpu_count()), gpn, 0, {}, {}, {}};
  if (static_cast<uint64_t>(all[0]) >= scan.gpus) return std::nullopt;
  const bool power_of_two = (gpn & (gpn - 1)) == 0;
  scan.t0 = power_of_two ? scan.local_of<true>(all[0]) : scan.local_of<false>(all[0]);
  scan.seen.assign(static_cast<size_t>(gpn), 0);
  const bool scanned = size == 2 ? (power_of_two ? scan.run<2, true>() : scan.run<2, false>())
                                 : (power_of_two ? scan.run<0, true>() : scan.run<0, false>());
  if (!scanned) return std::nullopt;
  // The blocks other than block 0 that the pass met must each hold block 0's count of groups.
  size_t block_count = 0;
  for (const size_t n : scan.seen) {
    if (n == 0) continue;
    if (n != scan.first.size()) return std::nullopt;
    ++block_count;
  }
  if (block_count < 2) return std::nullopt;
  for (const auto& [g, i] : scan.deferred) {  // i < first.size(): its block has first.size() groups
    const int64_t t = power_of_two ? scan.local_of<true>(all[g * size]) : scan.local_of<false>(all[g * size]);
    if (!scan.moved_equal<0>(g, scan.first[i], t - scan.t0)) return std::nullopt;
  }
  CommPattern representative;
  representative.groups.append_uniform(scan.first.size(), size, [&](size_t i, std::span<int64_t> out) {
    const int64_t* group = all.data() + static_cast<size_t>(scan.first[i]) * size;
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
