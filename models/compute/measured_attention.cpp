#include "models/compute/measured_attention.hpp"

#include "models/compute/kernel_table_csv.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace clustersim::models {

namespace {

/// Linear interpolation of y over x (x ascending), clamped to the end points.
double interpolate(const std::vector<std::pair<double, double>>& xy, double x) {
  if (x <= xy.front().first) return xy.front().second;
  if (x >= xy.back().first) return xy.back().second;
  const auto hi = std::upper_bound(xy.begin(), xy.end(), x, [](double v, const auto& p) { return v < p.first; });
  const auto lo = hi - 1;
  const double w = (x - lo->first) / (hi->first - lo->first);
  return (1.0 - w) * lo->second + w * hi->second;
}

}  // namespace

std::vector<AttentionMeasurement> read_attention_table(const std::string& path) {
  std::vector<AttentionMeasurement> rows;
  for (const detail::CsvRecord& r :
       detail::read_kernel_table(path, "kernel,pass,head_dim,causal,seqlen,tflops", 6, "measured attention table")) {
    const std::vector<std::string>& cells = r.cells;
    AttentionMeasurement m;
    const auto kernel = parse_attention_kernel(cells[0]);
    if (!kernel) detail::kernel_table_error(path, r.line, "unknown attention kernel '" + cells[0] + "'");
    m.kernel = *kernel;
    if (cells[1] != "fwd" && cells[1] != "bwd") {
      detail::kernel_table_error(path, r.line, "pass must be fwd or bwd, got '" + cells[1] + "'");
    }
    m.backward = cells[1] == "bwd";
    const double head_dim = detail::kernel_table_number(path, r.line, cells[2]);
    const double causal = detail::kernel_table_number(path, r.line, cells[3]);
    const double seq = detail::kernel_table_number(path, r.line, cells[4]);
    const double tflops = detail::kernel_table_number(path, r.line, cells[5]);
    if (!(head_dim >= 1 && seq >= 1 && tflops > 0.0) || (causal != 0.0 && causal != 1.0)) {
      detail::kernel_table_error(path, r.line, "head_dim and seqlen must be positive, causal 0 or 1, tflops positive");
    }
    m.head_dim = static_cast<int64_t>(head_dim);
    m.causal = causal == 1.0;
    m.seq_length = static_cast<int64_t>(seq);
    m.rate = units::tflops_per_second(tflops);
    rows.push_back(m);
  }
  return rows;
}

MeasuredAttention::MeasuredAttention(std::vector<AttentionMeasurement> rows, std::string source)
    : rows_(std::move(rows)), source_(std::move(source)) {
  if (rows_.empty()) throw std::invalid_argument("MeasuredAttention: empty table " + source_);
}

std::optional<double> MeasuredAttention::series(AttentionKernel kernel, bool backward, bool causal, double log_d,
                                                double log_s) const {
  // Rate over log2 s per measured head dimension.
  std::map<int64_t, std::vector<std::pair<double, double>>> curves;
  for (const AttentionMeasurement& m : rows_) {
    if (m.kernel != kernel || m.backward != backward || m.causal != causal) continue;
    curves[m.head_dim].emplace_back(std::log2(static_cast<double>(m.seq_length)), m.rate.value());
  }
  if (curves.empty()) return std::nullopt;
  std::vector<std::pair<double, double>> by_head_dim;
  for (auto& [d, curve] : curves) {
    std::sort(curve.begin(), curve.end());
    by_head_dim.emplace_back(std::log2(static_cast<double>(d)), interpolate(curve, log_s));
  }
  return interpolate(by_head_dim, log_d);
}

std::optional<units::FlopsPerSecond> MeasuredAttention::rate(const AttentionCall& call) const {
  const double log_d = std::log2(static_cast<double>(std::max<int64_t>(1, call.head_dim)));
  const double log_s = std::log2(static_cast<double>(std::max<int64_t>(1, call.key_length)));
  const auto forward = series(call.kernel, false, call.causal, log_d, log_s);
  if (!call.backward) {
    if (forward) return units::FlopsPerSecond(*forward);
    return std::nullopt;
  }
  if (const auto measured = series(call.kernel, true, call.causal, log_d, log_s)) {
    return units::FlopsPerSecond(*measured);
  }
  // A causal backward from the non-causal one, scaled by the forward pass's causal / non-causal ratio.
  const auto open_backward = series(call.kernel, true, false, log_d, log_s);
  const auto open_forward = series(call.kernel, false, false, log_d, log_s);
  if (call.causal && open_backward && open_forward && forward) {
    return units::FlopsPerSecond(*open_backward * (*forward / *open_forward));
  }
  return std::nullopt;
}

}  // namespace clustersim::models
