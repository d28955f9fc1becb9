#include "models/compute/kernel_time_memo.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include "models/compute/measured_gemm.hpp"

namespace clustersim::models {

namespace {

/// Mixes `v` into the running hash `h` (boost::hash_combine's step on 64 bits).
void mix(uint64_t& h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

constexpr uint64_t kHashSeed = 1469598103934665603ULL;  // FNV-1a's offset basis

}  // namespace

bool KernelTimeMemo::Key::operator==(const Key& o) const {
  const auto same = [](double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); };
  return m == o.m && n == o.n && k == o.k && batch == o.batch && sm_count == o.sm_count &&
         same(rate_flops_per_s, o.rate_flops_per_s) && same(bandwidth_bytes_per_s, o.bandwidth_bytes_per_s) &&
         same(element_bytes, o.element_bytes) && same(output_bytes, o.output_bytes) && correction == o.correction;
}

size_t KernelTimeMemo::KeyHash::operator()(const Key& key) const {
  uint64_t h = kHashSeed;  // doubles by their representation: equal keys, equal bits
  mix(h, static_cast<uint64_t>(key.m));
  mix(h, static_cast<uint64_t>(key.n));
  mix(h, static_cast<uint64_t>(key.k));
  mix(h, static_cast<uint64_t>(key.batch));
  mix(h, static_cast<uint64_t>(key.sm_count));
  mix(h, std::bit_cast<uint64_t>(key.rate_flops_per_s));
  mix(h, std::bit_cast<uint64_t>(key.bandwidth_bytes_per_s));
  mix(h, std::bit_cast<uint64_t>(key.element_bytes));
  mix(h, std::bit_cast<uint64_t>(key.output_bytes));
  mix(h, static_cast<uint64_t>(std::hash<const void*>{}(key.correction)));
  return static_cast<size_t>(h);
}

size_t KernelTimeMemo::AttentionKeyHash::operator()(const AttentionKey& key) const {
  uint64_t h = kHashSeed;
  mix(h, static_cast<uint64_t>(std::hash<const void*>{}(key.table)));
  mix(h, static_cast<uint64_t>(key.kernel));
  mix(h, (key.backward ? 2U : 0U) | (key.causal ? 1U : 0U));
  mix(h, static_cast<uint64_t>(key.head_dim));
  mix(h, static_cast<uint64_t>(key.key_length));
  return static_cast<size_t>(h);
}

void KernelTimeMemo::pin(const std::shared_ptr<const void>& table) {
  // A few tables per catalog: a linear search. Never cleared with the maps: they pin addresses.
  if (table && std::find(tables_.begin(), tables_.end(), table) == tables_.end()) tables_.push_back(table);
}

void KernelTimeMemo::insert(const Key& key, double seconds,
                            const std::shared_ptr<const MeasuredGemmCorrection>& correction) {
  if (times_.size() >= kMaxEntries) times_.clear();
  pin(correction);
  times_.emplace(key, seconds);
}

std::optional<units::FlopsPerSecond> KernelTimeMemo::attention_rate(
    const std::shared_ptr<const MeasuredAttention>& table, const AttentionCall& call) {
  const AttentionKey key{table.get(), call.kernel, call.backward, call.causal, call.head_dim, call.key_length};
  if (const auto it = attention_rates_.find(key); it != attention_rates_.end()) return it->second;
  const std::optional<units::FlopsPerSecond> rate = table->rate(call);
  if (attention_rates_.size() >= kMaxEntries) attention_rates_.clear();
  pin(table);
  attention_rates_.emplace(key, rate);
  return rate;
}

}  // namespace clustersim::models
