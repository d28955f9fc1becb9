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

// The lanes: wyhash's mixing step, as rapidhash's bulk loop uses it (Wang Yi, wyhash, 2019; Nicolas De Carli,
// rapidhash, 2024; both public domain / MIT; SMHasher-clean): a lane takes two 64-bit words per round,
// lane = mix(w0 ^ secret, w1 ^ lane), mix(a, b) the 128-bit product a x b folded to 64 bits (low ^ high). Four
// lanes, independent, so the multiplies overlap. Then xxHash64's merge and avalanche (Yann Collet, xxHash, 2012;
// BSD-2) fold the lanes and the lengths.
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ULL;
constexpr uint64_t kSecret[4] = {0x2D358DCCAA6C78A5ULL, 0x8BB84B93962EACC9ULL, 0x4B33A62ED433D4A3ULL,
                                 0x4D5A2DA51DE1AA47ULL};  // rapidhash's default secrets

__extension__ typedef unsigned __int128 Wide;

inline uint64_t mix(uint64_t a, uint64_t b) {
  const Wide product = static_cast<Wide>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}
inline uint64_t round(uint64_t acc, uint64_t word) { return std::rotl(acc + word * kP2, 31) * kP1; }
inline uint64_t merge(uint64_t h, uint64_t lane) { return (h ^ round(0, lane)) * kP1 + kP4; }

/// Feeds n words (word(i), i = 0 .. n - 1) to the four lanes, two per round: words 2p and 2p + 1 to lane p mod 4
/// (an odd n's last word with 0 beside it: the lengths, hashed apart, tell the two apart).
template <typename Word>
void feed(uint64_t (&lane)[4], size_t n, Word word) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lane[0] = mix(word(i) ^ kSecret[0], word(i + 1) ^ lane[0]);
    lane[1] = mix(word(i + 2) ^ kSecret[1], word(i + 3) ^ lane[1]);
    lane[2] = mix(word(i + 4) ^ kSecret[2], word(i + 5) ^ lane[2]);
    lane[3] = mix(word(i + 6) ^ kSecret[3], word(i + 7) ^ lane[3]);
  }
  for (size_t k = 0; i < n; i += 2, ++k) lane[k] = mix(word(i) ^ kSecret[k], (i + 1 < n ? word(i + 1) : 0) ^ lane[k]);
}

}  // namespace

uint64_t RankGroups::content_hash() const {
  uint64_t lane[4] = {kP1 + kP2, kP2, kP3, 0 - kP1};
  // The ranks, one word each (any int64: no truncation, so a rank outside the cluster never hashes as one in it).
  const int64_t* ranks = ranks_.data();
  feed(lane, ranks_.size(), [ranks](size_t i) { return static_cast<uint64_t>(ranks[i]); });
  // The offsets (hence the group sizes), two per word (offsets 2i and 2i + 1, as memory holds them); an odd
  // count's last word is the last offset alone.
  const uint32_t* offsets = offsets_.data();
  const size_t m = offsets_.size();
  feed(lane, (m + 1) / 2, [offsets, m](size_t i) {
    uint64_t w = offsets[2 * i];
    if (2 * i + 1 < m) std::memcpy(&w, offsets + 2 * i, sizeof w);
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
