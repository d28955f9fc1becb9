#include "models/compute/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace clustersim::models {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ComputeModel::ComputeModel(const DeviceSpec& device, double device_share)
    : device_(&device),
      share_(device_share),
      memory_bandwidth_(device.achievable_memory_bandwidth * (device_share * device.training_memory_fraction)) {
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

units::Seconds ComputeModel::gemm_time(const GemmShape& s, Precision p, double element_bytes,
                                       double output_bytes) const {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) {
    throw std::invalid_argument("ComputeModel::gemm_time: GEMM dimensions must be >= 1");
  }
  const int64_t sms = std::max<int64_t>(1, device_->sm_count);
  const units::FlopsPerSecond rate = achievable_matmul(p);
  constexpr double kFullReuse = 128.0 * 128.0 / (128.0 + 128.0);
  units::Seconds math(std::numeric_limits<double>::infinity());
  for (const Tile& tile : kTiles) {
    const int64_t tiles_m = ceil_div(s.m, tile.rows);
    const int64_t tiles_n = ceil_div(s.n, tile.columns);
    const int64_t tiles = tiles_m * tiles_n * s.batch;
    const int64_t waves = ceil_div(tiles, sms);
    const double wave_eff = static_cast<double>(tiles) / static_cast<double>(waves * sms);
    const double tile_eff = (static_cast<double>(s.m) * static_cast<double>(s.n)) /
                            (static_cast<double>(tiles_m * tile.rows) * static_cast<double>(tiles_n * tile.columns));
    const double reuse = static_cast<double>(tile.rows * tile.columns) / static_cast<double>(tile.rows + tile.columns);
    const double reuse_eff = std::min(1.0, reuse / kFullReuse);
    math = std::min(math, s.flops() / (rate * (wave_eff * tile_eff * reuse_eff)));
  }
  const double inputs = static_cast<double>(s.batch) * (static_cast<double>(s.m) * static_cast<double>(s.k) +
                                                       static_cast<double>(s.k) * static_cast<double>(s.n));
  const double outputs = static_cast<double>(s.batch) * static_cast<double>(s.m) * static_cast<double>(s.n);
  const double out_bytes = output_bytes < 0.0 ? element_bytes : output_bytes;
  const units::Seconds memory = units::Bytes(inputs * element_bytes + outputs * out_bytes) / memory_bandwidth_;
  return std::max(math, memory) + kKernelOverhead;
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
  if (kernel == AttentionKernel::flash3 && device_->flash_attention_3) measured = device_->flash_attention_3;
  if (!measured) return measured_matmul(p) * (kFlashAttentionEfficiency * device_->training_matmul_fraction);
  return *measured * (share_ * device_->training_matmul_fraction);
}

units::Seconds ComputeModel::attention_time(units::Flops flops, Precision p, AttentionKernel kernel) const {
  return flops / attention_rate(p, kernel) + kKernelOverhead;
}

}  // namespace clustersim::models
