#include "sim/serving/iteration_log.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace clustersim::sim {
namespace {

/// The nearest rank of the p-th percentile among n values: ceil(p / 100 * n), in [1, n].
int64_t nearest_rank(double p, int64_t n) {
  const auto rank = static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  return std::clamp<int64_t>(rank, 1, n);
}

}  // namespace

void CountHistogram::add(int64_t value) {
  if (value < 0) throw std::invalid_argument("CountHistogram: negative value " + std::to_string(value));
  const auto at = static_cast<size_t>(value);
  if (at >= counts_.size()) counts_.resize(at + 1, 0);
  ++counts_[at];
  ++count_;
  sum_ += static_cast<double>(value);
}

double CountHistogram::mean() const {
  return count_ > 0 ? sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
}

double CountHistogram::percentile(double p) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const int64_t rank = nearest_rank(p, count_);
  int64_t below = 0;
  for (size_t v = 0; v < counts_.size(); ++v) {
    below += counts_[v];
    if (below >= rank) return static_cast<double>(v);
  }
  return static_cast<double>(counts_.size() - 1);
}

size_t GapHistogram::bucket_of(int64_t ns) {
  constexpr int64_t sub = int64_t{1} << kSubBucketBits;
  if (ns < sub) return static_cast<size_t>(ns);
  const int e = 63 - std::countl_zero(static_cast<uint64_t>(ns));  // floor(log2 ns) >= kSubBucketBits
  const int64_t top = ns >> (e - kSubBucketBits);                   // in [sub, 2 sub)
  return static_cast<size_t>((e - kSubBucketBits + 1) * sub + (top - sub));
}

namespace {

/// 2^53: below it every whole number is a double, and a sum of whole numbers below it is exact.
constexpr double kExactWhole = 9007199254740992.0;

/// `sum` += `value` (a whole number of ns), `times` times in a row: one exact addition of times x value while the
/// result stays below 2^53 (the sum then being a whole number, as every earlier addition was exact: a rounded
/// sum is >= 2^53 and stays so), else the additions one by one.
void add_whole(double& sum, double value, int64_t times) {
  const double all = value * static_cast<double>(times);  // exact when below 2^53
  if (all < kExactWhole && sum + all < kExactWhole) {
    sum += all;
    return;
  }
  for (int64_t i = 0; i < times; ++i) sum += value;
}

}  // namespace

void GapHistogram::add(double seconds, int64_t times) {
  // At most 2^62 ns (146 years): also refuses NaN and the infinities.
  if (!(seconds >= 0.0 && seconds < 4.6e9)) {
    throw std::invalid_argument("GapHistogram: a gap of " + std::to_string(seconds) + " s");
  }
  if (times < 1) throw std::invalid_argument("GapHistogram: " + std::to_string(times) + " gaps");
  const auto ns = static_cast<int64_t>(seconds * 1e9 + 0.5);  // rounded to the nearest ns (llround, for >= 0)
  const size_t b = bucket_of(ns);
  if (b >= buckets_.size()) buckets_.resize(b + 1);
  Bucket& k = buckets_[b];
  k.count += times;
  add_whole(k.sum_ns, static_cast<double>(ns), times);
  count_ += times;
  add_whole(sum_ns_, static_cast<double>(ns), times);
}

double GapHistogram::mean_s() const {
  return count_ > 0 ? sum_ns_ / static_cast<double>(count_) * 1e-9 : std::numeric_limits<double>::quiet_NaN();
}

double GapHistogram::percentile_s(double p) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const int64_t rank = nearest_rank(p, count_);
  int64_t below = 0;
  for (const Bucket& k : buckets_) {
    below += k.count;
    if (k.count > 0 && below >= rank) return k.sum_ns / static_cast<double>(k.count) * 1e-9;
  }
  return std::numeric_limits<double>::quiet_NaN();  // unreachable: the counts add up to count_
}

void observe_iteration(InsideServing& inside, const IterationSampling& sampling, const IterationRecord& r) {
  inside.batches.sequences.add(r.sequences);
  inside.batches.prefill_tokens += r.prefill_tokens;
  inside.batches.decode_tokens += r.decode_tokens;
  if (!sampling.selects(r.index, r.start_s)) return;
  if (static_cast<int64_t>(inside.records.size()) >= sampling.max_records) {
    ++inside.records_dropped;
    return;
  }
  inside.records.push_back(r);
}

void IterationTokens::flush() {
  if (run_ == 0) return;
  inside_.tbt.add(now_s_ - run_last_s_, run_);
  run_ = 0;
}

void observe_token(InsideServing& inside, int64_t generated, int64_t wanted, double& last_token_s, double now_s) {
  if (generated > 1 && generated <= wanted) inside.tbt.add(now_s - last_token_s);
  last_token_s = now_s;
}

}  // namespace clustersim::sim
