#include "models/compute/gemm_time_memo.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include "models/compute/measured_gemm.hpp"

namespace clustersim::models {

bool GemmTimeMemo::Key::operator==(const Key& o) const {
  const auto same = [](double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); };
  return m == o.m && n == o.n && k == o.k && batch == o.batch && sm_count == o.sm_count &&
         same(rate_flops_per_s, o.rate_flops_per_s) && same(bandwidth_bytes_per_s, o.bandwidth_bytes_per_s) &&
         same(element_bytes, o.element_bytes) && same(output_bytes, o.output_bytes) && correction == o.correction;
}

size_t GemmTimeMemo::KeyHash::operator()(const Key& key) const {
  // FNV-1a-like mixing of the fields' bits (doubles by their representation: equal keys, equal bits).
  uint64_t h = 1469598103934665603ULL;
  const auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  mix(static_cast<uint64_t>(key.m));
  mix(static_cast<uint64_t>(key.n));
  mix(static_cast<uint64_t>(key.k));
  mix(static_cast<uint64_t>(key.batch));
  mix(static_cast<uint64_t>(key.sm_count));
  mix(std::bit_cast<uint64_t>(key.rate_flops_per_s));
  mix(std::bit_cast<uint64_t>(key.bandwidth_bytes_per_s));
  mix(std::bit_cast<uint64_t>(key.element_bytes));
  mix(std::bit_cast<uint64_t>(key.output_bytes));
  mix(static_cast<uint64_t>(std::hash<const void*>{}(key.correction)));
  return static_cast<size_t>(h);
}

void GemmTimeMemo::insert(const Key& key, double seconds,
                          const std::shared_ptr<const MeasuredGemmCorrection>& correction) {
  if (times_.size() >= kMaxEntries) times_.clear();  // tables_ stays: a few pointers, and they pin addresses
  if (correction && std::find(tables_.begin(), tables_.end(), correction) == tables_.end()) {
    tables_.push_back(correction);
  }
  times_.emplace(key, seconds);
}

}  // namespace clustersim::models
