#include "models/compute/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "models/compute/kernel_time_memo.hpp"
#include "models/compute/measured_gemm.hpp"

namespace clustersim::models {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ComputeModel::ComputeModel(const DeviceSpec& device, double device_share, KernelTimeMemo* memo)
    : device_(&device),
      share_(device_share),
      memo_(memo),
      memory_bandwidth_(device.achievable_memory_bandwidth * (device_share * device.training_memory_fraction)),
      gemm_table_estimated_(device.estimates.count("gemm_table") != 0),
      attention_table_estimated_(device.estimates.count("attention_table") != 0) {
  if (!(device_share > 0.0 && device_share <= 1.0)) {
    throw std::invalid_argument("ComputeModel: device_share must be in (0, 1], got " + std::to_string(device_share));
  }
}

units::FlopsPerSecond ComputeModel::peak(Precision p) const { return device_->peak_for(p) * share_; }

units::FlopsPerSecond ComputeModel::achievable_matmul(Precision p) const {
  return measured_matmul(p) * device_->training_matmul_fraction;
}

units::FlopsPerSecond ComputeModel::measured_matmul(Precision p) const {
  // A rate measured at this precision wins over scaling.
  if (p == Precision::fp8 && device_->achievable_matmul_fp8) return *device_->achievable_matmul_fp8 * share_;
  if (p == Precision::fp16 && device_->achievable_matmul_fp16) return *device_->achievable_matmul_fp16 * share_;
  // The measured maximum is a bf16 (or native 16-bit) figure; other precisions scale by their datasheet peak.
  // Devices without bf16 (V100, T4) are scaled from their fp16 peak instead.
  const auto& peaks = device_->peak;
  auto reference_peak = [&]() -> units::FlopsPerSecond {
    for (Precision ref : {Precision::bf16, Precision::fp16}) {
      auto it = peaks.find(ref);
      if (it != peaks.end() && it->second.value() > 0.0) return it->second;
    }
    return device_->peak_for(Precision::fp32);
  }();
  const double fraction = device_->achievable_matmul_bf16 / reference_peak;
  return device_->peak_for(p) * (fraction * share_);
}

units::Seconds ComputeModel::roofline_gemm_time(const GemmShape& s, int64_t sm_count, units::FlopsPerSecond rate,
                                                units::BytesPerSecond bandwidth, double element_bytes,
                                                double output_bytes) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) {
    throw std::invalid_argument("ComputeModel::gemm_time: GEMM dimensions must be >= 1");
  }
  if (!(rate.value() > 0.0) || !(bandwidth.value() > 0.0)) {
    throw std::invalid_argument("ComputeModel::roofline_gemm_time: rate and bandwidth must be positive");
  }
  const int64_t sms = std::max<int64_t>(1, sm_count);
  constexpr double kFullReuse = 128.0 * 128.0 / (128.0 + 128.0);
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k),
               batch = static_cast<double>(s.batch);
  const double out_bytes = output_bytes < 0.0 ? element_bytes : output_bytes;
  const double operand_bytes = batch * ((m * k + k * n) * element_bytes + m * n * out_bytes);
  units::Seconds best(std::numeric_limits<double>::infinity());
  for (const Tile& tile : kTiles) {
    const int64_t tiles_m = ceil_div(s.m, tile.rows);
    const int64_t tiles_n = ceil_div(s.n, tile.columns);
    const double tile_eff = (m * n) / (static_cast<double>(tiles_m * tile.rows) *
                                       static_cast<double>(tiles_n * tile.columns));
    const double reuse = static_cast<double>(tile.rows * tile.columns) / static_cast<double>(tile.rows + tile.columns);
    const double reuse_eff = std::min(1.0, reuse / kFullReuse);
    for (const int64_t split : kSplitK) {
      if (split > 1 && s.k / split < kMinSplitKSlice) break;
      const int64_t tiles = tiles_m * tiles_n * s.batch * split;
      const int64_t waves = ceil_div(tiles, sms);
      const double wave_eff = static_cast<double>(tiles) / static_cast<double>(waves * sms);
      const units::Seconds math = s.flops() / (rate * (wave_eff * tile_eff * reuse_eff));
      // Split-K writes s fp32 partial outputs and reads them back to sum them.
      const double partials = split > 1 ? 8.0 * static_cast<double>(split) * batch * m * n : 0.0;
      const units::Seconds memory = units::Bytes(operand_bytes + partials) / bandwidth;
      best = std::min(best, std::max(math, memory));
    }
  }
  return best + kKernelOverhead;
}

units::Seconds ComputeModel::gemm_time(const GemmShape& s, Precision p, double element_bytes,
                                       double output_bytes) const {
  // A measured table: the roofline at the measured rates, times the measured correction of the shape. The
  // operand traffic streams at the triad rate (the table's GEMMs say how close a GEMM gets to it). The table
  // measures 16-bit GEMMs: their rate is the measurement's, with no fitted fraction; another precision (fp8)
  // keeps the 16-bit shape correction on its own measured maximum and the device's training fraction, and so
  // does a device that carries a sibling's table as an estimate (other clocks: nothing measured it).
  const MeasuredGemmCorrection* correction = device_->gemm_correction.get();
  const bool measured_precision =
      correction != nullptr && (p == Precision::bf16 || p == Precision::fp16) && !gemm_table_estimated_;
  const units::FlopsPerSecond rate =
      (measured_precision ? measured_matmul(p) : achievable_matmul(p)) * device_->matmul_rate_scale;
  const units::BytesPerSecond bandwidth =
      correction != nullptr ? device_->achievable_memory_bandwidth * share_ : memory_bandwidth_;
  KernelTimeMemo::Key key;
  if (memo_ != nullptr) {
    key = KernelTimeMemo::Key{s.m, s.n, s.k, s.batch, device_->sm_count, rate.value(), bandwidth.value(),
                            element_bytes, output_bytes, correction};
    if (const double* t = memo_->find(key)) return units::Seconds(*t);
  }
  units::Seconds t = roofline_gemm_time(s, device_->sm_count, rate, bandwidth, element_bytes, output_bytes);
  if (correction != nullptr) t = t * correction->ratio(s.m, s.n, s.k);
  if (memo_ != nullptr) memo_->insert(key, t.value(), device_->gemm_correction);
  return t;
}

units::FlopsPerSecond ComputeModel::gemm_rate(const GemmShape& shape, Precision p, double element_bytes) const {
  return shape.flops() / gemm_time(shape, p, element_bytes);
}

units::Seconds ComputeModel::memory_time(units::Bytes bytes) const {
  return bytes / memory_bandwidth_ + kKernelOverhead;
}

units::Seconds ComputeModel::fused_compute_time(units::Flops flops, Precision p, double efficiency) const {
  if (!(efficiency > 0.0 && efficiency <= 1.0)) {
    throw std::invalid_argument("ComputeModel::fused_compute_time: efficiency must be in (0, 1]");
  }
  return flops / (achievable_matmul(p) * efficiency) + kKernelOverhead;
}

units::FlopsPerSecond ComputeModel::attention_rate(Precision p, AttentionKernel kernel) const {
  std::optional<units::FlopsPerSecond> measured = device_->flash_attention_2;
  if (kernel != AttentionKernel::flash2 && device_->flash_attention_3) measured = device_->flash_attention_3;
  if (!measured) return measured_matmul(p) * (kFlashAttentionEfficiency * device_->training_matmul_fraction);
  return *measured * (share_ * device_->training_matmul_fraction);
}

units::FlopsPerSecond ComputeModel::attention_rate(Precision p, const AttentionCall& call) const {
  if (device_->attention_table) {
    if (const auto rate = memo_ != nullptr ? memo_->attention_rate(device_->attention_table, call)
                                           : device_->attention_table->rate(call)) {
      // A table measured on this chip at these clocks is the rate; one carried from a sibling (an estimate) also
      // takes the device's training fraction, as its GEMMs do.
      const double fitted = attention_table_estimated_ ? device_->training_matmul_fraction : 1.0;
      return *rate * (device_->attention_table_clock_ratio * share_ * fitted);
    }
  }
  return attention_rate(p, call.kernel);
}

units::Seconds ComputeModel::attention_time(units::Flops flops, Precision p, AttentionKernel kernel) const {
  return flops / attention_rate(p, kernel) + kKernelOverhead;
}

units::Seconds ComputeModel::attention_time(units::Flops flops, Precision p, const AttentionCall& call) const {
  return flops / attention_rate(p, call) + kKernelOverhead;
}

}  // namespace clustersim::models
