// The hardware catalog: compute devices (GPUs and a CPU device) and cloud VM sizes, loaded from the TOML data
// files under models/hardware/catalog/ (devices.toml, vm_sizes.toml) and validated at start-up.
//
// Every number in those files carries its source next to it (vendor datasheet, measurement, Azure docs); see
// docs/catalog.md. The catalog is immutable once loaded and cheap to copy by shared pointer.
#pragma once

#include <filesystem>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/precision.hpp"
#include "models/units.hpp"

namespace clustersim::models {

enum class DeviceKind { gpu, cpu };

class MeasuredGemmCorrection;  // models/compute/measured_gemm.hpp
class MeasuredAttention;       // models/compute/measured_attention.hpp

/// Fabric joining the devices inside one VM.
enum class IntraNodeFabric {
  nvswitch,         ///< NVLink through NVSwitch: every GPU one hop from the switch at its NVLink rate
  nvlink_mesh,      ///< NVLink point to point (V100 hybrid cube mesh)
  nvlink_bridge,    ///< PCIe cards, GPUs 2k and 2k+1 joined by an NVLink bridge (A100 PCIe, H100 NVL)
  pcie,             ///< PCIe only (T4, A10)
  infinity_fabric,  ///< AMD Infinity Fabric mesh (MI300X)
  none              ///< single device or CPU only
};

/// How far to trust a step-time prediction: the spread of the validation suite's leave-one-source-out errors
/// over the published runs of one calibration group, framework family and workload (catalog
/// prediction_uncertainty.toml, written by `clustersim validate --leave-one-out --write-uncertainty`). Workloads:
/// "dense", "context-parallel", "moe" (a mixture-of-experts run, with or without context parallelism).
struct PredictionBand {
  double rms_relative_error = 0.0;  ///< RMS of predicted / measured - 1 over the held-out rows
  double max_relative_error = 0.0;  ///< the largest of them
  int rows = 0;                     ///< published runs behind it
  std::string scope;                ///< "ampere/megatron/dense", or "*/*/moe" for the suite's MoE runs
};

/// One compute device type: a GPU model or a CPU socket slice.
struct DeviceSpec {
  std::string name;                 ///< catalog key, e.g. "A100-SXM4-80GB"
  DeviceKind kind = DeviceKind::gpu;
  /// Dense peak math rate per precision (no sparsity), FLOP/s; 0 where the device has no such mode.
  std::map<Precision, units::FlopsPerSecond> peak;
  /// Dense FP4 (NVFP4 / MXFP4) tensor-core peak, FLOP/s, where the datasheet gives one (Blackwell). Shown by
  /// `clustersim catalog`; no training or serving precision runs FP4 math yet, so no model reads it.
  std::optional<units::FlopsPerSecond> peak_fp4;
  /// Highest measured matmul rate in bf16 (or the device's native 16-bit), FLOP/s. Bounds GEMM efficiency.
  units::FlopsPerSecond achievable_matmul_bf16;
  /// Highest measured matmul rate with fp8 inputs, FLOP/s, where a measurement exists (H100: 1402.6 TFLOP/s).
  std::optional<units::FlopsPerSecond> achievable_matmul_fp8;
  /// Highest measured matmul rate with fp16 inputs, FLOP/s, where it was measured apart from bf16 (A100 on
  /// ND A100 v4: 256.5 TFLOP/s, Azure/AI-benchmarking-guide).
  std::optional<units::FlopsPerSecond> achievable_matmul_fp16;
  /// Measured FlashAttention-2 forward + backward rate (FLOPs of the full s x s attention per second; head
  /// dimension 128, long sequences, no causal mask), where a measurement exists.
  std::optional<units::FlopsPerSecond> flash_attention_2;
  /// The same for the Hopper-generation fused attention kernels (FlashAttention-3, cuDNN's fused attention
  /// behind Transformer Engine), where the device has them and a measurement exists.
  std::optional<units::FlopsPerSecond> flash_attention_3;
  /// Measured GEMM kernel times of this chip as a correction surface over the roofline
  /// (models/compute/measured_gemm.hpp), where the catalog names a table (`gemm_table`); null otherwise. Shared
  /// by the devices whose table was measured on the same device (H100 SXM, H200 and the 500 W H100 share one).
  std::shared_ptr<const MeasuredGemmCorrection> gemm_correction;
  /// The catalog's gemm_table file (relative to the catalog directory) and the device it was measured on; ""
  /// when the device has no measured table.
  std::string gemm_table;
  std::string gemm_table_device;
  /// Measured fused-attention rates over sequence length and head dimension (models/compute/measured_attention.hpp),
  /// where the catalog names a table (`attention_table`, measured on `attention_table_device`); null otherwise.
  std::shared_ptr<const MeasuredAttention> attention_table;
  std::string attention_table_file;
  std::string attention_table_device;
  /// This device's bf16 matmul maximum over that of the device its attention table was measured on: the same
  /// chip at other clocks (the 500 W H100) runs the measured kernels at that ratio (1 without a table).
  double attention_table_clock_ratio = 1.0;
  /// Memory capacity (HBM for GPUs, DRAM for the CPU device), bytes: the catalog's memory_mib x 2^20, the
  /// device's total as nvidia-smi / rocm-smi reports it (the datasheet's where no output is published). No
  /// CUDA-context or framework reserve is taken off (the memory model adds its own: models/memory).
  units::Bytes memory_capacity;
  /// Display only: print the capacity in GiB rather than decimal GB. Every catalog entry (memory_mib) sets it;
  /// false only for a DeviceSpec built in code.
  bool memory_quoted_in_gib = false;
  /// Where the capacity comes from (memory_source): the tool output, with a public link, or the datasheet.
  std::string memory_source;
  /// GPUs: the memory configuration, e.g. "GA100 80GB HBM2e" (memory_part). Devices naming the same part state
  /// the same capacity (Catalog::load rejects a catalog where they differ); empty for the CPU device.
  std::string memory_part;
  /// Datasheet memory bandwidth, B/s.
  units::BytesPerSecond memory_bandwidth;
  /// Measured achievable memory bandwidth (stream triad), B/s. Used for memory-bound ops.
  units::BytesPerSecond achievable_memory_bandwidth;
  /// Streaming multiprocessors (AMD: compute units; CPU: cores). Drives GEMM wave quantisation.
  int sm_count = 1;
  /// Fraction of the achievable matmul rates a training step's GEMMs sustain, in (0, 1]: clocks under a
  /// training loop's power draw and the framework's kernels against a microbenchmark's best case. Calibrated
  /// on published training runs (analysis/calibration/fit_training.py); 1 where not calibrated.
  double training_matmul_fraction = 1.0;
  /// Fraction of the stream-triad bandwidth a training step's memory-bound kernels (softmax, dropout with its
  /// RNG, LayerNorm with its reductions, the optimizer) sustain, in (0, 1]. Calibrated as above; 1 if absent.
  double training_memory_fraction = 1.0;
  /// Devices whose training fractions are fitted together: one GPU generation and kind of part (e.g. "hopper"
  /// for the H100 SXM5, the 96 GB H100 and the H200: the same SMs and software, different clocks and memory).
  /// The device's own name when the catalog gives none.
  std::string calibration_group;
  /// The calibration group whose fit stands in for this device's group when no row calibrates it (the
  /// leave-one-source-out refit of a group with a single source): the nearest hardware, e.g. the 700 W H100's
  /// group for a power-capped H100. Empty: the largest other group.
  std::string calibration_fallback;
  /// Prediction bands of the device's calibration group keyed "FAMILY/WORKLOAD" (family "megatron", "fsdp",
  /// "deepspeed" or "*" for the group as a whole), and of the whole suite keyed "suite:FAMILY/WORKLOAD" (catalog
  /// prediction_uncertainty.toml; empty when the catalog has no such file).
  std::map<std::string, PredictionBand> prediction_bands;

  /// The band of a run of `framework_family` and `workload` ("dense", "context-parallel", "moe"): the group's for
  /// that family, else the group's over every family, else the suite's for the family, else the suite's over
  /// every family, each of the run's own workload: a mixture-of-experts run never borrows the dense runs' band.
  /// nullopt when the catalog has none of that workload (and for a CPU).
  [[nodiscard]] std::optional<PredictionBand> prediction_band(const std::string& framework_family,
                                                              const std::string& workload = "dense") const;
  /// What-if only (never read from the catalog; sim/run/what_if.hpp): the GEMM math rate R_mm of every GEMM
  /// (models/compute/compute_model.hpp, both the roofline and the measured-table path) times this factor, > 0.
  /// Nothing else reads it: attention, memory traffic and the kernel overhead keep their rates. 1 for every
  /// catalog entry.
  double matmul_rate_scale = 1.0;
  /// Device-to-fabric bandwidth per direction (NVLink: half the datasheet bidirectional figure), B/s.
  units::BytesPerSecond fabric_bandwidth_per_direction;
  double tdp_watts = 0.0;
  std::string source;  ///< where the numbers come from, one line
  /// Catalog keys of this entry whose values are estimates (no measurement or datasheet gives them; the
  /// catalog file's comment says how each was reached). Every other number is a datasheet value, a
  /// measurement or a fit to measurements.
  std::set<std::string> estimates;

  /// Peak for `p`; throws std::out_of_range when the device has no such mode (rate 0 or missing).
  [[nodiscard]] units::FlopsPerSecond peak_for(Precision p) const;
};

/// NCCL collective calibration of a VM size, fitted to nccl-tests on that VM (docs/network.md). Absent values
/// take the defaults of models/network/collective_model.hpp.
struct NcclCalibration {
  std::optional<units::Seconds> base_latency;        ///< launch + synchronisation of one collective
  std::optional<units::Seconds> intra_step_latency;  ///< per step inside a node, Simple protocol
  std::optional<double> ring_efficiency;             ///< ring busbw / link rate, large messages
  std::optional<double> nvls_efficiency;             ///< NVLS: link-rate fraction each GPU moves S at
  std::string source;
};

/// One cloud VM size.
struct VmSize {
  std::string name;           ///< e.g. "Standard_ND96amsr_A100_v4"
  std::string device;         ///< key into Catalog::devices
  int devices_per_vm = 0;     ///< GPUs per VM (1 for a CPU VM: the CPU is one device)
  double device_share = 1.0;  ///< fraction of each device the VM gets (1/6 for NV6ads_A10_v5)
  int vcpus = 0;
  units::Bytes ram;
  IntraNodeFabric fabric = IntraNodeFabric::none;
  int infiniband_ports = 0;                      ///< 0 when the VM has no InfiniBand
  units::BitsPerSecond infiniband_port_rate;     ///< per port, bit/s (HDR 200 Gb/s, NDR 400 Gb/s)
  units::BitsPerSecond ethernet_bandwidth;       ///< front-end (Accelerated Networking) NIC total, bit/s
  units::Bytes local_nvme;                       ///< local temporary/NVMe disk, bytes (0: none)
  std::optional<double> price_usd_per_hour;      ///< pay-as-you-go Linux East US, when known
  std::string price_source;                      ///< where the price comes from, with its date
  /// VMs whose GPUs share one NVLink domain through NVSwitches outside the VM: 18 for ND GB200 v6 (a GB200
  /// NVL72 rack, Azure nd-gb200-v6-series: "groups of 18 ND GB200 v6 VMs", 72 GPUs); 1 for every other size.
  int nvlink_domain_vms = 1;
  NcclCalibration nccl;                          ///< collective calibration, where measured
  /// What-if only (never read from the catalog; sim/run/what_if.hpp): every latency term of the collective
  /// model on VMs of this size (NCCL's base latency and per-step latencies, CollectiveConstants::for_vm)
  /// times this factor, > 0. 1 for every catalog entry.
  double collective_latency_scale = 1.0;
  /// The next VM size up (catalog key `next_size`, e.g. ND H100 v5 -> ND H200 v5): the upgrade the what-if
  /// analysis tries (`clustersim run --what-if`, docs/what-if.md). A known VM size other than this one; "" when
  /// the catalog names none.
  std::string next_size;
  std::string source;
  std::set<std::string> estimates;  ///< keys whose values are estimates, as DeviceSpec::estimates

  /// VMs of one NVLink domain a job of `nodes` VMs uses. `vms_per_domain`: the VMs of each domain the job
  /// takes (the scenario's cluster.vms_per_nvlink_domain, e.g. 16 of the 18 trays of a GB200 NVL72 rack),
  /// returned as given (domain_problem says whether it fits); nullopt: the whole domain, nvlink_domain_vms, or
  /// all `nodes` when the cluster is smaller than one (VMs of one rack). 1 means every VM is a domain of its
  /// own: GPUs of different VMs talk over the scale-out network only.
  [[nodiscard]] int64_t domain_vms(int64_t nodes, std::optional<int64_t> vms_per_domain) const;
  /// GPUs of one NVLink domain a job of `nodes` VMs uses (devices_per_vm x domain_vms): the "node" of the
  /// network and step models, whose GPUs talk over NVLink.
  [[nodiscard]] int64_t domain_gpus(int64_t nodes, std::optional<int64_t> vms_per_domain) const;
  /// Why a job cannot take `vms_per_domain` VMs of each NVLink domain of this size, "" when it can: from 1 to
  /// nvlink_domain_vms (a size whose domain is one VM takes only 1).
  [[nodiscard]] std::string domain_use_problem(int64_t vms_per_domain) const;
  /// Why `nodes` VMs (in zones of `zone_nodes` VMs each; empty: one zone) cannot be split into NVLink domains of
  /// domain_vms(nodes, vms_per_domain) VMs, "" when they can: domain_use_problem, then whole domains, none
  /// spanning zones (a rack sits in one datacenter).
  [[nodiscard]] std::string domain_problem(int64_t nodes, std::optional<int64_t> vms_per_domain,
                                           const std::vector<int64_t>& zone_nodes) const;
};

/// A loaded, validated catalog.
class Catalog {
 public:
  /// Loads devices.toml and vm_sizes.toml from `directory`. Throws CatalogError naming the file, line, column
  /// and key of the first bad entry (unknown key, missing key, wrong type, non-positive rate, measured rate above
  /// its peak, VM naming an unknown device or fabric) or of a TOML parse error. Schema: docs/catalog.md.
  static Catalog load(const std::filesystem::path& directory);
  /// The catalog directory to use when none is given (README "Install"), first match of: the environment
  /// variable CLUSTERSIM_CATALOG_DIR (when set and not empty); `installed_directory` when it is not empty and
  /// holds a devices.toml (the installed layout, found by the caller beside its executable:
  /// sim/cli/catalog_directory.hpp); the source tree's models/hardware/catalog compiled into the binary.
  /// Reads nothing but the existence of `installed_directory`/devices.toml; never throws.
  static std::filesystem::path default_directory(const std::filesystem::path& installed_directory = {});

  /// Builds a catalog from already-validated entries (tests, programmatic use). Throws CatalogError when a
  /// VM size names a device that is not in `devices`.
  Catalog(std::map<std::string, DeviceSpec> devices, std::map<std::string, VmSize> vm_sizes);
  Catalog() = default;

  /// Throws std::out_of_range listing the known names when `name` is unknown.
  [[nodiscard]] const DeviceSpec& device(const std::string& name) const;
  [[nodiscard]] const VmSize& vm_size(const std::string& name) const;
  [[nodiscard]] const std::map<std::string, DeviceSpec>& devices() const { return devices_; }
  [[nodiscard]] const std::map<std::string, VmSize>& vm_sizes() const { return vm_sizes_; }

 private:
  std::map<std::string, DeviceSpec> devices_;
  std::map<std::string, VmSize> vm_sizes_;
};

/// Error in a catalog data file: `what()` is "FILE:LINE:COL: key 'KEY': message".
class CatalogError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string_view to_string(IntraNodeFabric f);
std::string_view to_string(DeviceKind k);

}  // namespace clustersim::models
