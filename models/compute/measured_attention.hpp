// Measured fused-attention kernel rates over sequence length and head dimension (issue 25, "attention forward and
// backward over sequence and head dimension").
//
// A device's table (models/hardware/catalog/kernels/attention_*.csv) holds the TFLOP/s of fused attention kernels
// as their authors benchmarked them: FlashAttention-2, FlashAttention-3 and cuDNN's fused attention on H100 SXM5,
// 16-bit, from the FlashAttention-3 paper's figures (Shah et al. 2024, arXiv 2407.08608 v1, Figs. 5-6: batch x
// sequence = 16,384 tokens, 2,048 / head_dim heads). FLOPs follow the benchmark's convention: 4 b s^2 a d forward,
// half of it with a causal mask, 2.5x forward for the backward; ComputeModel::attention_time divides the FLOPs an
// op executes (its causal share included) by the rate. A query is answered by interpolation:
//   - sequence length (the keys each query block iterates over): linear in log2 s between the measured lengths,
//     clamped to the measured range (512-16,384);
//   - head dimension: linear in log2 d between the measured head dimensions (64, 128, 256), clamped; MLA's
//     d_qk = 192 falls between 128 and 256;
//   - a causal backward (the paper shows backward passes without the mask): the non-causal backward rate times the
//     forward's causal / non-causal ratio at the same length and head dimension (an estimate: the same blocks are
//     skipped in both passes);
//   - a head dimension a pass was not measured at: the nearest measured one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// One call of a fused attention kernel, as a kernel table is keyed.
struct AttentionCall {
  AttentionKernel kernel = AttentionKernel::flash2;
  bool backward = false;
  int64_t head_dim = 128;     ///< query/key head dimension
  bool causal = true;
  int64_t key_length = 4096;  ///< keys each query attends over in one call (the sequence, or a CP block)
};

/// One measured rate.
struct AttentionMeasurement {
  AttentionKernel kernel = AttentionKernel::flash2;
  bool backward = false;
  int64_t head_dim = 128;
  bool causal = false;
  int64_t seq_length = 1;
  units::FlopsPerSecond rate;
};

/// Reads an attention table: CSV with the header `kernel,pass,head_dim,causal,seqlen,tflops[,...]` after `#`
/// comment lines; kernel one of the AttentionKernel names, pass fwd|bwd, causal 0|1. Throws std::runtime_error
/// naming the file and line on a missing file, a malformed line, an unknown kernel or a non-positive value.
std::vector<AttentionMeasurement> read_attention_table(const std::string& path);

/// A device's measured attention rates. Immutable, safe to share between threads.
class MeasuredAttention {
 public:
  /// Throws std::invalid_argument on an empty table.
  MeasuredAttention(std::vector<AttentionMeasurement> rows, std::string source);

  /// The interpolated rate of `call` (header), or nullopt when the table has no forward measurement of that kernel.
  [[nodiscard]] std::optional<units::FlopsPerSecond> rate(const AttentionCall& call) const;
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  /// The rate of one (kernel, pass, causal) series at head dimension d and length s; nullopt when not measured.
  [[nodiscard]] std::optional<double> series(AttentionKernel kernel, bool backward, bool causal, double log_d,
                                             double log_s) const;
  std::vector<AttentionMeasurement> rows_;
  std::string source_;
};

}  // namespace clustersim::models
