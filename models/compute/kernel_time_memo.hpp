// A memo of kernel times keyed by every input they are a function of, so that the steps of a layout search,
// which cost the same kernels point after point, compute each once: GEMM times (ComputeModel::gemm_time) and
// the interpolated rates of measured attention tables (MeasuredAttention::rate, which ComputeModel::
// attention_rate scales).
//
// The keys are what the values are computed from, not which model asked. A GEMM: the shape (m, n, k, batch),
// the element and output widths, the device's SM count, the matmul rate and operand bandwidth the roofline runs
// at (as computed by ComputeModel, bit for bit) and the measured correction table. An attention rate: the table
// and the call (kernel, pass, head dimension, mask, key length). Tables are keyed by identity; the memo holds a
// reference to every table it has keyed, so an address cannot be reused by another table while the memo lives.
// Equal keys give equal values, so a memoised time is the computed one bit for bit, whichever device spec or
// what-if scale produced the rate (tests/step/test_kernel_time_memo.cpp).
//
// Not thread-safe: one memo per thread (a StepSimulator owns one). Bounded: each map is cleared past kMaxEntries.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/compute/measured_attention.hpp"

namespace clustersim::models {

class MeasuredGemmCorrection;

/// GEMM times and measured attention rates by their exact inputs. See the header comment.
class KernelTimeMemo {
 public:
  /// Entries kept per map before it is cleared (a layout search costs a few thousand distinct kernels).
  static constexpr size_t kMaxEntries = size_t{1} << 16;

  /// Every input of one GEMM time (ComputeModel::gemm_time).
  struct Key {
    int64_t m = 0, n = 0, k = 0, batch = 0;
    int64_t sm_count = 0;
    double rate_flops_per_s = 0.0;        ///< the matmul rate the roofline runs at
    double bandwidth_bytes_per_s = 0.0;   ///< the operand bandwidth it streams at
    double element_bytes = 0.0;
    double output_bytes = 0.0;
    const MeasuredGemmCorrection* correction = nullptr;  ///< null: no measured correction
    /// Field by field, doubles by their bits (what the hash mixes; 0.0 and -0.0 are other keys).
    bool operator==(const Key& other) const;
  };

  /// The time memoised under `key`, s, or nullptr.
  [[nodiscard]] const double* find(const Key& key) const {
    const auto it = times_.find(key);
    return it == times_.end() ? nullptr : &it->second;
  }
  /// Memoises `seconds` under `key`; `correction` is the table key.correction names (kept alive by the memo).
  void insert(const Key& key, double seconds, const std::shared_ptr<const MeasuredGemmCorrection>& correction);
  /// GEMM times memoised now.
  [[nodiscard]] size_t size() const { return times_.size(); }

  /// `table`'s rate of `call` (MeasuredAttention::rate), computed on the first call with these inputs.
  [[nodiscard]] std::optional<units::FlopsPerSecond> attention_rate(
      const std::shared_ptr<const MeasuredAttention>& table, const AttentionCall& call);
  /// Attention rates memoised now.
  [[nodiscard]] size_t attention_size() const { return attention_rates_.size(); }

 private:
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  /// One attention rate's inputs: the table and the call.
  struct AttentionKey {
    const MeasuredAttention* table = nullptr;
    AttentionKernel kernel = AttentionKernel::flash2;
    bool backward = false;
    bool causal = false;
    int64_t head_dim = 0;
    int64_t key_length = 0;
    bool operator==(const AttentionKey&) const = default;
  };
  struct AttentionKeyHash {
    size_t operator()(const AttentionKey& key) const;
  };
  /// Keeps `table` alive while the memo keys by its address.
  void pin(const std::shared_ptr<const void>& table);
  std::unordered_map<Key, double, KeyHash> times_;
  std::unordered_map<AttentionKey, std::optional<units::FlopsPerSecond>, AttentionKeyHash> attention_rates_;
  std::vector<std::shared_ptr<const void>> tables_;  ///< pins each keyed table's address
};

}  // namespace clustersim::models
