// Time of one kernel on one device: GEMMs and memory-bound (element-wise, normalisation) ops.
//
// GEMMs: a roofline with wave, tile and split-K quantisation (the physical model of DESIGN.md "Compute model"),
// times the device's measured correction where the catalog has a measured GEMM table:
//
//   gemm_time = roofline(shape) * r(M, N, K)         (r = 1 without a table)
//   roofline  = min over tiles T and split-K factors s of
//                 max(FLOPs / (R_mm(precision) * wave_eff * tile_eff * reuse_eff),  bytes / BW) + t_launch
//   mem_time  = bytes / BW_ach + t_launch
//
// where
//   R_mm(p)   = achievable_matmul_bf16 * peak(p) / peak(bf16): the device's measured maximum matmul rate
//               (shared/validation/hardware.csv, stas00/ml-engineering "maximum achievable matmul FLOPS"),
//               scaled to other precisions by the ratio of datasheet peaks unless the catalog has a
//               measurement at that precision (fp16 on A100, fp8 on H100/H200), times the device's fitted
//               training_matmul_fraction except where the measured table covers the precision (16-bit GEMMs
//               of a device with its own gemm_table run at the measured rates, unfitted; a device carrying a
//               sibling's table as an estimate keeps its fraction); times DeviceSpec::matmul_rate_scale (1 but
//               in a what-if: sim/run/what_if.hpp);
//   wave_eff  = tiles / (ceil(tiles / SMs) * SMs): the last wave of thread blocks leaves SMs idle
//               (NVIDIA "Matrix Multiplication Background User's Guide", wave quantisation); with split-K the
//               K dimension is cut into s slices, each its own thread block (s x the output tiles), and the
//               s partial results are written and summed in fp32 (8 s M N more bytes): what cuBLAS and CUTLASS
//               do when the output tiles alone cannot fill the SMs (CUTLASS "split-K" / "stream-K" GEMMs), e.g.
//               the decode GEMMs of one token; s in {1, 2, 4, 8, 16} with slices of at least 256;
//   tile_eff  = (M * N) / (ceil(M/T_m) T_m * ceil(N/T_n) T_n): padding of partial output tiles
//               (same guide, tile quantisation). Like cuBLAS's heuristics, the fastest of the candidate
//               thread-block tiles kTiles is taken (128x256, 256x128, 128x128, 128x64, 64x128: CUTLASS's
//               default tensor-core tiles). Tiles smaller than 128x128 reuse each loaded element less
//               (T_m T_n / (T_m + T_n) times) and are taken to run at that reuse relative to 128x128's,
//               e.g. 0.67 for 128x64: a shared-memory-bandwidth bound, an assumption of this model;
//   bytes     = element_bytes * (M K + K N + M N) * batch: each operand read once, result written once;
//   BW        = the measured stream-triad bandwidth of the device (hardware.csv); for a device without a measured
//               GEMM table times its training_memory_fraction (with a table the measured GEMMs already say how
//               fast a GEMM streams its operands);
//   BW_ach    = the triad bandwidth times training_memory_fraction: what a training step's memory-bound kernels
//               sustain against the microbenchmark, calibrated once per device group on published training runs
//               (sim/validation, docs/model.md); R_mm likewise carries training_matmul_fraction;
//   r         = the device's measured GEMM times over this roofline, interpolated (measured_gemm.hpp:
//               Vidur's A100 and H100 operator profiles, 1-4,096 tokens, the GEMMs of 8 model shapes at TP 1-8);
//   t_launch  = kKernelOverhead, the fixed cost of one kernel (launch + ramp-up + tail), 4 us: CUDA kernel
//               launch latency is 2.5-5 us (NVIDIA CUDA C++ Best Practices Guide; Lustig & Martonosi), and
//               Megatron runs a layer as ~20 kernels, so it matters only for small layers.
// A fractional VM (device_share < 1, e.g. NV6ads_A10_v5) gets that share of every rate.
#pragma once

#include <cstdint>

#include "models/compute/measured_attention.hpp"
#include "models/hardware/catalog.hpp"
#include "models/precision.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

class KernelTimeMemo;

/// C[M,N] = A[M,K] * B[K,N], `batch` independent instances (batched GEMM). All dimensions >= 1.
struct GemmShape {
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  int64_t batch = 1;

  /// 2 * M * N * K * batch (one multiply and one add per term).
  [[nodiscard]] units::Flops flops() const {
    return units::Flops(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                        static_cast<double>(batch));
  }
};

/// Kernel timing on one device. Immutable, cheap to copy.
class ComputeModel {
 public:
  /// Fixed cost of one kernel (launch, ramp-up and tail), s. See the header comment for its source.
  static constexpr units::Seconds kKernelOverhead = units::microseconds(4.0);
  /// A candidate thread-block output tile.
  struct Tile {
    int64_t rows;
    int64_t columns;
  };
  static constexpr Tile kTiles[] = {{128, 256}, {256, 128}, {128, 128}, {128, 64}, {64, 128}};

  /// `device_share` in (0, 1]: the fraction of the device the VM owns. Throws std::invalid_argument if out of
  /// range. `memo`: where gemm_time and attention_rate look up and keep their times and measured rates
  /// (models/compute/kernel_time_memo.hpp: keyed by every input, so they are the computed ones bit for bit);
  /// null: none. The memo is not thread-safe and
  /// must outlive the model; copies of the model share it.
  explicit ComputeModel(const DeviceSpec& device, double device_share = 1.0, KernelTimeMemo* memo = nullptr);

  /// The roofline of one GEMM (header: wave, tile and split-K quantisation; no measured correction) on a device of
  /// `sm_count` SMs at matmul `rate` and operand `bandwidth`; `output_bytes` as gemm_time's (negative:
  /// element_bytes). Pure; the catalog builds the measured corrections on it. Throws std::invalid_argument on a
  /// zero dimension or a non-positive rate.
  static units::Seconds roofline_gemm_time(const GemmShape& shape, int64_t sm_count, units::FlopsPerSecond rate,
                                           units::BytesPerSecond bandwidth, double element_bytes,
                                           double output_bytes = -1.0);
  /// Split-K factors the roofline tries, and the shortest K slice it cuts.
  static constexpr int64_t kSplitK[] = {1, 2, 4, 8, 16};
  static constexpr int64_t kMinSplitKSlice = 256;

  /// Time of one GEMM whose inputs/outputs are `element_bytes` wide and whose math runs at precision `p`:
  /// the slower of the tiled math and the HBM traffic (inputs read once, the m x n output moved at
  /// `output_bytes` per element: element_bytes when written once, 8 when it accumulates into an fp32 buffer,
  /// read and written, as Megatron's fused weight-gradient accumulation does; negative: element_bytes).
  /// Throws std::out_of_range if the device has no such math mode, std::invalid_argument on a zero dimension.
  [[nodiscard]] units::Seconds gemm_time(const GemmShape& shape, Precision p, double element_bytes,
                                         double output_bytes = -1.0) const;
  /// Effective rate of that GEMM (FLOPs / time), for reports and tests.
  [[nodiscard]] units::FlopsPerSecond gemm_rate(const GemmShape& shape, Precision p, double element_bytes) const;
  /// Time of a memory-bound kernel moving `bytes` (reads + writes) through HBM.
  [[nodiscard]] units::Seconds memory_time(units::Bytes bytes) const;
  /// Time of a fused compute-bound kernel of `flops` at `efficiency` of the achievable matmul rate, plus the
  /// kernel overhead.
  [[nodiscard]] units::Seconds fused_compute_time(units::Flops flops, Precision p, double efficiency) const;
  /// Time of a fused attention kernel executing `flops` (forward or backward; the causal share already taken) at
  /// precision p (16-bit), plus the kernel overhead, at attention_rate(p, call).
  [[nodiscard]] units::Seconds attention_time(units::Flops flops, Precision p, const AttentionCall& call) const;
  /// The rate of one fused attention call, FLOP/s:
  ///   1. the device's measured table (catalog attention_table; measured_attention.hpp) for the call's kernel,
  ///      pass, head dimension, mask and length, scaled by this device's matmul maximum over that of the device
  ///      the table was measured on (a power-limited or other-memory part of the same chip: its clocks); a
  ///      measurement, so no training fraction, unless the device carries a sibling's table as an estimate
  ///      (catalog `estimates`: the 500 W H100, the H100 NVL), which then takes its training_matmul_fraction;
  ///   2. else the scalar measurement of the kernel's generation (flash_attention_3 for flash3 and cudnn, else
  ///      flash_attention_2: forward + backward at one length) times training_matmul_fraction (the same clocks
  ///      as the GEMMs);
  ///   3. else kFlashAttentionEfficiency of the achievable matmul rate.
  [[nodiscard]] units::FlopsPerSecond attention_rate(Precision p, const AttentionCall& call) const;
  /// attention_time and attention_rate of a forward call without a shape (the scalar measurements, steps 2-3).
  [[nodiscard]] units::Seconds attention_time(units::Flops flops, Precision p, AttentionKernel kernel) const;
  [[nodiscard]] units::FlopsPerSecond attention_rate(Precision p, AttentionKernel kernel) const;

  /// FlashAttention's fraction of the measured matmul maximum where a device has no attention measurement:
  /// FlashAttention-2 forward+backward 179.5 TFLOP/s on A100 (head dim 64) vs its 271.2 MAMF = 0.66
  /// (shared/validation/hardware.csv, Azure/AI-benchmarking-guide).
  static constexpr double kFlashAttentionEfficiency = 0.66;

  /// R_mm(p): dense matmul rate a training step's GEMMs sustain at precision p on this device share: the
  /// measured maximum (measured_matmul) times DeviceSpec::training_matmul_fraction.
  [[nodiscard]] units::FlopsPerSecond achievable_matmul(Precision p) const;
  /// The microbenchmark maximum at precision p on this device share (MAMF, hardware.csv), before the
  /// training fraction.
  [[nodiscard]] units::FlopsPerSecond measured_matmul(Precision p) const;
  [[nodiscard]] units::BytesPerSecond achievable_memory_bandwidth() const { return memory_bandwidth_; }
  [[nodiscard]] units::FlopsPerSecond peak(Precision p) const;
  [[nodiscard]] const DeviceSpec& device() const { return *device_; }

 private:
  const DeviceSpec* device_;
  double share_;
  KernelTimeMemo* memo_;  ///< gemm_time's and attention_rate's memo, or null
  units::BytesPerSecond memory_bandwidth_;
  bool gemm_table_estimated_;       ///< the device's GEMM table is a sibling's, carried over (catalog estimates)
  bool attention_table_estimated_;  ///< the same for its attention table
};

}  // namespace clustersim::models
