#include "models/compute/measured_gemm.hpp"

#include "models/compute/kernel_table_csv.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace clustersim::models {

std::vector<GemmMeasurement> read_gemm_table(const std::string& path) {
  std::vector<GemmMeasurement> rows;
  for (const detail::CsvRecord& r : detail::read_kernel_table(path, "m,n,k,time_us", 4, "measured GEMM table")) {
    double v[4];
    for (size_t i = 0; i < 4; ++i) v[i] = detail::kernel_table_number(path, r.line, r.cells[i]);
    if (!(v[0] >= 1 && v[1] >= 1 && v[2] >= 1 && v[3] > 0.0) || v[0] != std::floor(v[0]) ||
        v[1] != std::floor(v[1]) || v[2] != std::floor(v[2])) {
      detail::kernel_table_error(path, r.line, "dimensions must be positive integers and the time positive");
    }
    rows.push_back({static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                    units::microseconds(v[3])});
  }
  return rows;
}

MeasuredGemmCorrection::MeasuredGemmCorrection(
    const std::vector<GemmMeasurement>& measured,
    const std::function<units::Seconds(int64_t m, int64_t n, int64_t k)>& roofline, std::string source)
    : size_(measured.size()), source_(std::move(source)) {
  if (measured.empty()) throw std::invalid_argument("MeasuredGemmCorrection: empty table " + source_);
  std::map<int64_t, std::vector<Point>> by_m;
  bool first = true;
  for (const GemmMeasurement& g : measured) {
    const units::Seconds model = roofline(g.m, g.n, g.k);
    if (!(g.time.value() > 0.0) || !(model.value() > 0.0)) {
      throw std::invalid_argument("MeasuredGemmCorrection: non-positive time in " + source_);
    }
    const Point p{std::log2(static_cast<double>(g.n)), std::log2(static_cast<double>(g.k)),
                  std::log(g.time / model)};
    by_m[g.m].push_back(p);
    if (first) {
      min_log_n_ = max_log_n_ = p.log_n;
      min_log_k_ = max_log_k_ = p.log_k;
      first = false;
    }
    min_log_n_ = std::min(min_log_n_, p.log_n);
    max_log_n_ = std::max(max_log_n_, p.log_n);
    min_log_k_ = std::min(min_log_k_, p.log_k);
    max_log_k_ = std::max(max_log_k_, p.log_k);
  }
  for (auto& [m, points] : by_m) rows_.push_back({std::log2(static_cast<double>(m)), std::move(points)});
}

double MeasuredGemmCorrection::interpolate(const Row& row, double log_n, double log_k) const {
  // The kNeighbours nearest shapes by squared distance (ties keep table order: deterministic).
  std::array<std::pair<double, double>, kNeighbours> nearest;  // (squared distance, log ratio)
  nearest.fill({std::numeric_limits<double>::infinity(), 0.0});
  for (const Point& p : row.points) {
    const double dn = p.log_n - log_n, dk = p.log_k - log_k;
    const double d2 = dn * dn + dk * dk;
    if (d2 < 1e-18) return p.log_ratio;
    if (d2 >= nearest.back().first) continue;
    size_t i = nearest.size() - 1;
    while (i > 0 && nearest[i - 1].first > d2) {
      nearest[i] = nearest[i - 1];
      --i;
    }
    nearest[i] = {d2, p.log_ratio};
  }
  double weights = 0.0, sum = 0.0;
  for (const auto& [d2, value] : nearest) {
    if (!std::isfinite(d2)) break;
    weights += 1.0 / d2;  // power 2 on the distance
    sum += value / d2;
  }
  return sum / weights;
}

double MeasuredGemmCorrection::ratio(int64_t m, int64_t n, int64_t k) const {
  const double log_m = std::log2(static_cast<double>(std::max<int64_t>(1, m)));
  const double log_n = std::clamp(std::log2(static_cast<double>(std::max<int64_t>(1, n))), min_log_n_, max_log_n_);
  const double log_k = std::clamp(std::log2(static_cast<double>(std::max<int64_t>(1, k))), min_log_k_, max_log_k_);
  if (log_m <= rows_.front().log_m) return std::exp(interpolate(rows_.front(), log_n, log_k));
  if (log_m >= rows_.back().log_m) return std::exp(interpolate(rows_.back(), log_n, log_k));
  const auto upper = std::upper_bound(rows_.begin(), rows_.end(), log_m,
                                      [](double x, const Row& r) { return x < r.log_m; });
  const Row& hi = *upper;
  const Row& lo = *(upper - 1);
  const double w = (log_m - lo.log_m) / (hi.log_m - lo.log_m);
  return std::exp((1.0 - w) * interpolate(lo, log_n, log_k) + w * interpolate(hi, log_n, log_k));
}

}  // namespace clustersim::models
