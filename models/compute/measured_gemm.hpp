// Measured GEMM kernel times as a correction surface over the roofline (issue 25, "compute from measured kernels
// where a measurement exists").
//
// A device's table holds measured times of single 16-bit GEMMs C[M,N] = A[M,K] B[K,N] (cuBLAS behind
// torch.nn.Linear on one GPU; models/hardware/catalog/kernels/, extracted from Microsoft Vidur's operator profiles
// by analysis/calibration/extract_vidur_tables.py). For each measured shape the table keeps the ratio
//
//   r(M, N, K) = t_measured / t_roofline(M, N, K)
//
// where t_roofline is ComputeModel's physical model on the measuring device at the measured rates (MAMF, stream
// triad; no training fraction): wave, tile and split-K quantisation, operand traffic and the fixed kernel cost.
// The ratio is what the roofline does not know: which kernel cuBLAS picks for the shape, L2 reuse, clocks under
// load. A query is answered by interpolation:
//   - in M (tokens): linearly in log2 M between the two measured token counts around it, clamped to the measured
//     range (1 to 4,096 tokens; beyond it the largest count's ratio holds: large GEMMs keep their efficiency);
//   - in (N, K): inverse-distance weighting (power 2) of log r over the kNeighbours nearest measured shapes in
//     (log2 N, log2 K), the query clamped into the measured box. An exact shape returns its measurement.
// Held-out check (docs/model.md, "Measured GEMMs"): predicting each Vidur model's GEMMs from the other models'
// shapes, the mean |error| is 5.6 % (A100) and 6.3 % (H100), against 11 % and 9 % for the roofline alone.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/units.hpp"

namespace clustersim::models {

/// One measured GEMM: dimensions (>= 1) and the kernel time, s.
struct GemmMeasurement {
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  units::Seconds time;
};

/// Reads a measured GEMM table: CSV with a header line `m,n,k,time_us[,...]` (extra columns ignored) after any
/// number of `#` comment lines; time in microseconds. Throws std::runtime_error naming the file and line on a
/// missing file, a malformed line, a non-positive dimension or time, or an empty table.
std::vector<GemmMeasurement> read_gemm_table(const std::string& path);

/// The interpolated ratio of measured to roofline GEMM time of one device. Immutable after construction, safe to
/// share between threads.
class MeasuredGemmCorrection {
 public:
  /// Neighbours of the inverse-distance weighting in (log2 N, log2 K).
  static constexpr int kNeighbours = 4;

  /// `measured`: the device's table (non-empty); `roofline`: the physical model's time of a shape on the
  /// measuring device (positive). `source` names the table for reports. Throws std::invalid_argument on an
  /// empty table or a non-positive time.
  MeasuredGemmCorrection(const std::vector<GemmMeasurement>& measured,
                         const std::function<units::Seconds(int64_t m, int64_t n, int64_t k)>& roofline,
                         std::string source);

  /// t_measured / t_roofline interpolated at (m, n, k) (each >= 1), as the header describes.
  [[nodiscard]] double ratio(int64_t m, int64_t n, int64_t k) const;
  /// Where the table comes from (the catalog's gemm_table file).
  [[nodiscard]] const std::string& source() const { return source_; }
  /// Measured shapes behind the surface.
  [[nodiscard]] size_t size() const { return size_; }

 private:
  struct Point {
    double log_n;
    double log_k;
    double log_ratio;
  };
  struct Row {
    double log_m;
    std::vector<Point> points;
  };
  [[nodiscard]] double interpolate(const Row& row, double log_n, double log_k) const;

  std::vector<Row> rows_;  ///< one per measured M, ascending
  double min_log_n_ = 0.0, max_log_n_ = 0.0, min_log_k_ = 0.0, max_log_k_ = 0.0;
  size_t size_ = 0;
  std::string source_;
};

}  // namespace clustersim::models
