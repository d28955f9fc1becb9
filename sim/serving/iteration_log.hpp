// What the engine's iterations and tokens were like (issue 30, item 6; docs/serving.md, "Inside a serving run"):
// batch statistics from exact integer histograms and the gaps between successive tokens (TBT) in a log-bucket
// histogram, both O(1) per iteration or token and deterministic (integer buckets, sums in a fixed order), and the
// recorded iterations (iteration_record.hpp) when asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/serving/iteration_record.hpp"

namespace clustersim::sim {

/// An exact histogram of a non-negative integer (sequences per iteration): one counter per value, grown to the
/// largest value seen (at most max_num_seqs + 1 counters).
class CountHistogram {
 public:
  /// Counts `value` (negative values throw std::invalid_argument).
  void add(int64_t value);
  [[nodiscard]] int64_t count() const { return count_; }
  /// The mean; NaN when empty.
  [[nodiscard]] double mean() const;
  /// The nearest-rank p-th percentile (0 < p <= 100): the smallest value v with at least ceil(p / 100 * n) of
  /// the n values at or below it (an integer, exact; no interpolation). NaN when empty.
  [[nodiscard]] double percentile(double p) const;

 private:
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  double sum_ = 0.0;
};

/// A log-bucket histogram of time gaps (HDR-histogram buckets, Tene's HdrHistogram, hdrhistogram.org): a gap is
/// rounded to whole nanoseconds v; values below 2^kSubBucketBits ns have a bucket each, larger ones fall in
/// 2^kSubBucketBits buckets per power of two, each 2^-kSubBucketBits (0.39 %) of its lower bound wide. Each bucket
/// keeps its count and the sum of its values, so a percentile is the mean of the gaps in the nearest-rank bucket:
/// within 0.39 % of the nearest-rank gap, and exact when that bucket's gaps are equal. Memory: 16 B per bucket up
/// to the largest gap's (about 130 KiB for gaps up to 1,000 s).
class GapHistogram {
 public:
  static constexpr int kSubBucketBits = 8;
  /// Counts a gap of `seconds` (>= 0; a negative one throws std::invalid_argument).
  void add(double seconds) { add(seconds, 1); }
  /// Counts `times` (>= 1) gaps of `seconds`: bit-identical to `times` calls of add(seconds) (issue 31). The sums
  /// hold whole nanoseconds, so while a sum stays below 2^53 every addition is exact and one addition of
  /// times x ns equals the times additions; beyond it the gaps are added one by one, as add(seconds) does. O(1)
  /// below 2^53 ns (104 days of gaps in one bucket), O(times) above.
  void add(double seconds, int64_t times);
  [[nodiscard]] int64_t count() const { return count_; }
  /// The mean gap, s (exact to the nanosecond rounding); NaN when empty.
  [[nodiscard]] double mean_s() const;
  /// The nearest-rank p-th percentile (0 < p <= 100), s: the mean of the gaps in the bucket that holds the
  /// ceil(p / 100 * n)-th smallest. NaN when empty.
  [[nodiscard]] double percentile_s(double p) const;
  /// The bucket of `ns` nanoseconds (for tests: equal buckets mean equal within the resolution).
  [[nodiscard]] static std::size_t bucket_of(int64_t ns);

 private:
  struct Bucket {
    int64_t count = 0;
    double sum_ns = 0.0;  ///< of its gaps, in the order added (deterministic)
  };
  std::vector<Bucket> buckets_;  ///< one cache line for a gap's count and sum (a token's cost: about 2 ns)
  int64_t count_ = 0;
  double sum_ns_ = 0.0;
};

/// The engine's batches over a run: every iteration's sequences, prefill and decode tokens.
struct BatchStats {
  CountHistogram sequences;    ///< sequences per iteration
  int64_t prefill_tokens = 0;  ///< over all iterations
  int64_t decode_tokens = 0;   ///< over all iterations (a decoding sequence computes one token)
};

/// What the engine saw inside a run (ServingResult::inside): batch statistics and token gaps always, the
/// iteration records when ServingSetup::iteration_log asks.
struct InsideServing {
  BatchStats batches;
  /// Time between tokens (TBT, inter-token latency): the gap between successive output tokens of one request, over
  /// every token after a request's first (a preempted or evicted request's wait and recomputation show as one
  /// long gap). A token sampled inside a multi-step block after the request's last wanted token is not counted.
  GapHistogram tbt;
  std::vector<IterationRecord> records;  ///< the selected iterations, in the order they started
  int64_t records_dropped = 0;           ///< selected iterations beyond IterationSampling::max_records
};

/// Counts the iteration `r` (its index, engine, start, duration and batch) in `inside`: the batch statistics, and
/// its record when `sampling` selects it. O(1).
void observe_iteration(InsideServing& inside, const IterationSampling& sampling, const IterationRecord& r);

/// A request sampled its `generated`-th output token at `now_s` (of `wanted`); `last_token_s` is the time of its
/// previous token, updated to now_s. The gap goes to inside.tbt for tokens 2..wanted. O(1).
void observe_token(InsideServing& inside, int64_t generated, int64_t wanted, double& last_token_s, double now_s);

/// The tokens of one iteration, all sampled at `now_s`, observed as observe_token does, their gaps gathered in runs
/// of equal previous-token times (a batch's decodes mostly sampled their last token together, at the previous
/// iteration's end) and counted by run (GapHistogram::add(seconds, times)): the same histogram, bit for bit, as a
/// call of observe_token per token, at O(1) per token without the bucket's arithmetic (issue 31). Call flush()
/// once the iteration's tokens are observed (before inside.tbt is read).
class IterationTokens {
 public:
  IterationTokens(InsideServing& inside, double now_s) : inside_(inside), now_s_(now_s) {}
  IterationTokens(const IterationTokens&) = delete;
  IterationTokens& operator=(const IterationTokens&) = delete;
  /// observe_token(inside, generated, wanted, last_token_s, now_s), gathered.
  void observe(int64_t generated, int64_t wanted, double& last_token_s) {
    if (generated > 1 && generated <= wanted) {
      if (run_ > 0 && last_token_s != run_last_s_) flush();
      run_last_s_ = last_token_s;
      ++run_;
    }
    last_token_s = now_s_;
  }
  /// Counts the gathered run (GapHistogram::add's errors).
  void flush();

 private:
  InsideServing& inside_;
  double now_s_;
  double run_last_s_ = 0.0;  ///< the previous-token time of the run's tokens
  int64_t run_ = 0;          ///< tokens in the run
};

}  // namespace clustersim::sim
