// A memo of GEMM times (ComputeModel::gemm_time) keyed by every input the time is a function of, so that the
// steps of a layout search, which cost the same GEMM shapes point after point, compute each time once.
//
// The key is what the time is computed from, not which model asked: the shape (m, n, k, batch), the element and
// output widths, the device's SM count, the matmul rate and operand bandwidth the roofline runs at (as computed
// by ComputeModel, bit for bit) and the measured correction table (by identity; the memo holds a reference to
// every table it has keyed, so an address cannot be reused by another table while the memo lives). Equal keys
// give equal times, so a memoised time is the computed one bit for bit, whichever device spec or what-if scale
// produced the rate (tests/step/test_gemm_time_memo.cpp).
//
// Not thread-safe: one memo per thread (a StepSimulator owns one). Bounded: cleared past kMaxEntries.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace clustersim::models {

class MeasuredGemmCorrection;

/// GEMM times by their exact inputs. See the header comment.
class GemmTimeMemo {
 public:
  /// Entries kept before the memo is cleared (a layout search costs a few thousand distinct GEMMs).
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
  /// Entries memoised now.
  [[nodiscard]] size_t size() const { return times_.size(); }

 private:
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  std::unordered_map<Key, double, KeyHash> times_;
  std::vector<std::shared_ptr<const MeasuredGemmCorrection>> tables_;  ///< pins each keyed table's address
};

}  // namespace clustersim::models
