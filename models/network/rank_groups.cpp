#include "models/network/rank_groups.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>

namespace clustersim::models {

RankGroups::RankGroups(std::initializer_list<std::initializer_list<int64_t>> groups) {
  size_t total = 0;
  for (const auto& g : groups) total += g.size();
  reserve(groups.size(), total);
  for (const auto& g : groups) push_back(g);
}

RankGroups::RankGroups(const std::vector<std::vector<int64_t>>& groups) {
  size_t total = 0;
  for (const auto& g : groups) total += g.size();
  reserve(groups.size(), total);
  for (const auto& g : groups) push_back(g);
}

void RankGroups::reserve(size_t groups, size_t ranks) {
  offsets_.reserve(groups + 1);
  ranks_.reserve(ranks);
}

void RankGroups::check_total(size_t total) {
  if (total > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("RankGroups: " + std::to_string(total) + " ranks exceed the 32-bit offsets (at most " +
                            std::to_string(std::numeric_limits<uint32_t>::max()) + ")");
  }
}

bool operator==(const RankGroups& a, const std::vector<std::vector<int64_t>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t g = 0; g < b.size(); ++g) {
    const std::span<const int64_t> group = a[g];
    if (group.size() != b[g].size() || !std::equal(group.begin(), group.end(), b[g].begin())) return false;
  }
  return true;
}

namespace {

// xxHash64's constants, round and merge (Yann Collet, xxHash, 2012; BSD-2): four independent accumulators, each
// taking one 64-bit word per round (acc += word x P2, rotate left 31, x P1), merged and avalanched at the end.
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ULL;

inline uint64_t round(uint64_t acc, uint64_t word) { return std::rotl(acc + word * kP2, 31) * kP1; }
inline uint64_t merge(uint64_t h, uint64_t lane) { return (h ^ round(0, lane)) * kP1 + kP4; }

/// Feeds n words (word(i), i = 0 .. n - 1) to the four lanes: word i to lane i mod 4.
template <typename Word>
void feed(uint64_t (&lane)[4], size_t n, Word word) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    lane[0] = round(lane[0], word(i));
    lane[1] = round(lane[1], word(i + 1));
    lane[2] = round(lane[2], word(i + 2));
    lane[3] = round(lane[3], word(i + 3));
  }
  for (size_t k = 0; i < n; ++i, ++k) lane[k] = round(lane[k], word(i));
}

}  // namespace

uint64_t RankGroups::content_hash() const {
  uint64_t lane[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  // The ranks, one word each (any int64: no truncation, so a rank outside the cluster never hashes as one in it).
  const int64_t* ranks = ranks_.data();
  feed(lane, ranks_.size(), [ranks](size_t i) { return static_cast<uint64_t>(ranks[i]); });
  // The offsets (hence the group sizes), two per word; an odd count's last word has a zero high half.
  const uint32_t* offsets = offsets_.data();
  const size_t m = offsets_.size();
  feed(lane, (m + 1) / 2, [offsets, m](size_t i) {
    uint64_t w = offsets[2 * i];
    if (2 * i + 1 < m) w |= static_cast<uint64_t>(offsets[2 * i + 1]) << 32;
    return w;
  });
  uint64_t h = std::rotl(lane[0], 1) + std::rotl(lane[1], 7) + std::rotl(lane[2], 12) + std::rotl(lane[3], 18);
  for (uint64_t v : lane) h = merge(h, v);
  // The lengths, so that padding and the split between ranks and offsets are unambiguous.
  h ^= round(0, static_cast<uint64_t>(ranks_.size()));
  h = std::rotl(h, 27) * kP1 + kP4;
  h ^= round(0, static_cast<uint64_t>(size()) * kP5);
  h = std::rotl(h, 27) * kP1 + kP4;
  // xxHash64's avalanche.
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h == 0 ? 1 : h;
}

void PrintTo(const RankGroups& groups, std::ostream* os) {
  *os << '{';
  for (size_t g = 0; g < groups.size(); ++g) {
    *os << (g == 0 ? "{" : ", {");
    const std::span<const int64_t> group = groups[g];
    for (size_t i = 0; i < group.size(); ++i) *os << (i == 0 ? "" : ", ") << group[i];
    *os << '}';
  }
  *os << '}';
}

}  // namespace clustersim::models
