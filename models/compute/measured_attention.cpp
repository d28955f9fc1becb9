#include "models/compute/measured_attention.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace clustersim::models {

namespace {

[[noreturn]] void bad_line(const std::string& path, int line, const std::string& why) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": " + why);
}

double number(const std::string& path, int line, const std::string& cell) {
  try {
    size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size()) return v;
  } catch (const std::logic_error&) {
  }
  bad_line(path, line, "not a number: '" + cell + "'");
}

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
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the measured attention table");
  std::vector<AttentionMeasurement> rows;
  std::string text;
  int line = 0;
  bool header = false;
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text[0] == '#') continue;
    if (!header) {
      if (!text.starts_with("kernel,pass,head_dim,causal,seqlen,tflops")) {
        bad_line(path, line, "expected the header kernel,pass,head_dim,causal,seqlen,tflops");
      }
      header = true;
      continue;
    }
    std::stringstream fields(text);
    std::vector<std::string> cells;
    for (std::string cell; cells.size() < 6 && std::getline(fields, cell, ',');) cells.push_back(cell);
    if (cells.size() < 6) bad_line(path, line, "expected kernel,pass,head_dim,causal,seqlen,tflops");
    AttentionMeasurement m;
    const auto kernel = parse_attention_kernel(cells[0]);
    if (!kernel) bad_line(path, line, "unknown attention kernel '" + cells[0] + "'");
    m.kernel = *kernel;
    if (cells[1] != "fwd" && cells[1] != "bwd") bad_line(path, line, "pass must be fwd or bwd, got '" + cells[1] + "'");
    m.backward = cells[1] == "bwd";
    const double head_dim = number(path, line, cells[2]), causal = number(path, line, cells[3]),
                 seq = number(path, line, cells[4]), tflops = number(path, line, cells[5]);
    if (!(head_dim >= 1 && seq >= 1 && tflops > 0.0) || (causal != 0.0 && causal != 1.0)) {
      bad_line(path, line, "head_dim and seqlen must be positive, causal 0 or 1, tflops positive");
    }
    m.head_dim = static_cast<int64_t>(head_dim);
    m.causal = causal == 1.0;
    m.seq_length = static_cast<int64_t>(seq);
    m.rate = units::tflops_per_second(tflops);
    rows.push_back(m);
  }
  if (rows.empty()) throw std::runtime_error(path + ": the measured attention table has no rows");
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
