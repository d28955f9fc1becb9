// The hardware catalog: the shipped data loads and holds the sourced numbers (each expected value is written out
// with where it comes from), and malformed catalog files fail with "FILE:LINE:COL: key 'entry.key': message".
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/output/catalog_table.hpp"
#include "tests/support/files.hpp"

namespace {

namespace fs = std::filesystem;
using clustersim::models::Catalog;
using clustersim::models::CatalogError;
using clustersim::models::DeviceKind;
using clustersim::models::DeviceSpec;
using clustersim::models::IntraNodeFabric;
using clustersim::models::Precision;
using clustersim::models::VmSize;
namespace units = clustersim::units;

fs::path shipped_dir() { return fs::path(CLUSTERSIM_SOURCE_DIR) / "models" / "hardware" / "catalog"; }

const Catalog& shipped() {
  static const Catalog catalog = Catalog::load(shipped_dir());
  return catalog;
}

// ---------------------------------------------------------------------------------------------- shipped data

TEST(ShippedCatalog, LoadsEveryDeviceAndVmSize) {
  const Catalog& c = shipped();
  for (const char* name : {"V100-SXM2-32GB", "T4", "A10", "A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB",
                           "H200-SXM-141GB", "MI300X", "Xeon-8370C-16vCPU", "H100-96GB-HBM2e-500W",
                           "V100-PCIe-16GB", "A100-PCIe-80GB", "H100-NVL-94GB", "GB200", "GB300"}) {
    EXPECT_NO_THROW((void)c.device(name)) << name;
  }
  EXPECT_EQ(c.devices().size(), 15U);
  // Every row of shared/validation/azure_vm_sizes.csv.
  for (const char* name :
       {"Standard_NC4as_T4_v3", "Standard_NC64as_T4_v3", "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4",
        "Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5", "Standard_ND96isr_MI300X_v5",
        "Standard_NV36ads_A10_v5", "Standard_NV6ads_A10_v5", "Standard_D16s_v5"}) {
    EXPECT_NO_THROW((void)c.vm_size(name)) << name;
  }
  // Sizes the seeds name beyond the CSV (issue 14): NC A100 v4, NC H100 v5, NCv3, NDv2, ND GB200 v6.
  for (const char* name :
       {"Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_NC96ads_A100_v4", "Standard_NC40ads_H100_v5",
        "Standard_NC80adis_H100_v5", "Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3",
        "Standard_NC24rs_v3", "Standard_ND40rs_v2", "Standard_ND128isr_NDR_GB200_v6", "Standard_ND128isr_GB300_v6"}) {
    EXPECT_NO_THROW((void)c.vm_size(name)) << name;
  }
  // Reference systems of published runs (not Azure sizes).
  EXPECT_NO_THROW((void)c.vm_size("Meta_GrandTeton_H100_96GB"));
  EXPECT_EQ(c.vm_sizes().size(), 23U);
  // Devices of one GPU generation and power class share a calibration group; others are their own, and may
  // name the nearest group as their fallback.
  EXPECT_EQ(c.device("H100-SXM5-80GB").calibration_group, "hopper");
  EXPECT_EQ(c.device("H100-96GB-HBM2e-500W").calibration_group, "hopper-500w");
  EXPECT_EQ(c.device("H100-96GB-HBM2e-500W").calibration_fallback, "hopper");
  EXPECT_EQ(c.device("H200-SXM-141GB").calibration_group, "hopper");
  EXPECT_EQ(c.device("A100-SXM4-40GB").calibration_group, "ampere");
  EXPECT_EQ(c.device("T4").calibration_group, "T4");
}

TEST(ShippedCatalog, Gb200NvlinkDomainIsARackOf18Vms) {
  const VmSize& vm = shipped().vm_size("Standard_ND128isr_NDR_GB200_v6");
  EXPECT_EQ(vm.nvlink_domain_vms, 18);
  EXPECT_EQ(vm.fabric, IntraNodeFabric::nvswitch);
  EXPECT_EQ(vm.domain_gpus(36, std::nullopt), 72);  // two racks: domains of 72 GPUs
  EXPECT_EQ(vm.domain_gpus(2, std::nullopt), 8);    // two VMs of one rack: one domain of 8
  EXPECT_EQ(vm.domain_problem(36, std::nullopt, {}), "");
  EXPECT_NE(vm.domain_problem(20, std::nullopt, {}).find("not whole domains"), std::string::npos);
  EXPECT_NE(vm.domain_problem(36, std::nullopt, {27, 9}).find("never spans zones"), std::string::npos);
  // Every other size is its own domain.
  EXPECT_EQ(shipped().vm_size("Standard_ND96isr_H100_v5").domain_gpus(64, std::nullopt), 8);
  // A job that takes 16 of each rack's 18 VMs: 64 VMs are 4 domains of 16 VMs = 64 GPUs each.
  EXPECT_EQ(vm.domain_vms(64, 16), 16);
  EXPECT_EQ(vm.domain_gpus(64, 16), 16 * 4);
  EXPECT_EQ(64 / vm.domain_vms(64, 16), 4);
  EXPECT_EQ(vm.domain_problem(64, 16, {}), "");
  EXPECT_EQ(vm.domain_problem(64, 16, {32, 32}), "");
  EXPECT_NE(vm.domain_problem(64, 16, {40, 24}).find("never spans zones"), std::string::npos);
  EXPECT_NE(vm.domain_problem(72, 16, {}).find("72 VMs are not whole domains of 16 VMs per NVLink domain of "
                                               "Standard_ND128isr_NDR_GB200_v6 (64 GPUs; 16 of each domain's 18 VMs)"),
            std::string::npos);
  EXPECT_NE(vm.domain_problem(8, 16, {}).find("not whole domains"), std::string::npos);  // given: no shrinking
  EXPECT_EQ(vm.domain_gpus(20, 1), 4);  // 1: every VM its own domain
  EXPECT_EQ(vm.domain_problem(20, 1, {}), "");
  // The VMs per domain a job can take: 1 to the rack's 18.
  EXPECT_EQ(vm.domain_use_problem(18), "");
  EXPECT_EQ(vm.domain_use_problem(1), "");
  EXPECT_NE(vm.domain_use_problem(19).find("must be from 1 to 18"), std::string::npos);
  EXPECT_NE(vm.domain_use_problem(0).find("must be from 1 to 18"), std::string::npos);
  EXPECT_NE(vm.domain_problem(64, 0, {}).find("must be from 1 to 18"), std::string::npos);
  const VmSize& h100 = shipped().vm_size("Standard_ND96isr_H100_v5");
  EXPECT_EQ(h100.domain_use_problem(1), "");
  EXPECT_NE(h100.domain_use_problem(2).find("must be 1: Standard_ND96isr_H100_v5 has no NVLink domain beyond one VM"),
            std::string::npos);
  // PCIe cards joined in pairs by NVLink bridges.
  EXPECT_EQ(shipped().vm_size("Standard_NC96ads_A100_v4").fabric, IntraNodeFabric::nvlink_bridge);
  EXPECT_EQ(shipped().vm_size("Standard_NC80adis_H100_v5").fabric, IntraNodeFabric::nvlink_bridge);
}

TEST(ShippedCatalog, Gb300IsBlackwellUltraOnNdGb300V6) {
  // NVIDIA GB300 NVL72 datasheet, rack figures for 72 GPUs with sparsity, halved for dense: FP8 720 PFLOPS ->
  // 5 PFLOPS per GPU; FP16/BF16 360 -> 2.5; TF32 180 -> 1.25. FP4 dense 1,080 PFLOPS / 72 = 15 PFLOPS.
  const DeviceSpec& gb300 = shipped().device("GB300");
  EXPECT_DOUBLE_EQ(gb300.peak_for(Precision::fp8).value(), 720e15 / 72.0 / 2.0);
  EXPECT_DOUBLE_EQ(gb300.peak_for(Precision::bf16).value(), 360e15 / 72.0 / 2.0);
  EXPECT_DOUBLE_EQ(gb300.peak_for(Precision::tf32).value(), 180e15 / 72.0 / 2.0);
  EXPECT_DOUBLE_EQ(gb300.peak_for(Precision::fp32).value(), 80e12);
  ASSERT_TRUE(gb300.peak_fp4.has_value());
  EXPECT_DOUBLE_EQ(gb300.peak_fp4->value(), 1080e15 / 72.0);
  // GB200: FP4 40 PFLOPS with sparsity per superchip (2 GPUs) -> 10 dense per GPU; Blackwell Ultra is 1.5x.
  ASSERT_TRUE(shipped().device("GB200").peak_fp4.has_value());
  EXPECT_DOUBLE_EQ(gb300.peak_fp4->value(), 1.5 * shipped().device("GB200").peak_fp4->value());
  EXPECT_DOUBLE_EQ(gb300.memory_capacity.value(), 284208.0 * 1024 * 1024);  // "288 GB" HBM3e: nvidia-smi 284208 MiB
  EXPECT_DOUBLE_EQ(gb300.memory_bandwidth.value(), 8e12);         // 8 TB/s
  EXPECT_DOUBLE_EQ(gb300.fabric_bandwidth_per_direction.value(), 1.8e12 / 2.0);  // NVLink 5, 1.8 TB/s bidir
  EXPECT_DOUBLE_EQ(gb300.tdp_watts, 1400.0);
  EXPECT_EQ(gb300.calibration_group, "blackwell-ultra");
  EXPECT_EQ(gb300.calibration_fallback, "blackwell");
  // No GB300 measurement: matmul, triad, SMs and training fractions are flagged estimates.
  for (const char* key : {"achievable_matmul_bf16_tflops", "achievable_matmul_fp8_tflops",
                          "achievable_memory_bandwidth_tb_per_s", "sm_count", "training_matmul_fraction"}) {
    EXPECT_EQ(gb300.estimates.count(key), 1U) << key;
  }
  EXPECT_EQ(gb300.estimates.count("peak_fp8_tflops"), 0U);
  // Azure nd-gb300-v6-series: 4 GPUs, 128 vCPUs, 864 GiB, 4 x 800 Gb/s InfiniBand (one per GPU), 160 Gb/s
  // Ethernet, 16 TiB NVMe, 18 VMs per NVL72 rack.
  const VmSize& vm = shipped().vm_size("Standard_ND128isr_GB300_v6");
  EXPECT_EQ(vm.device, "GB300");
  EXPECT_EQ(vm.devices_per_vm, 4);
  EXPECT_EQ(vm.vcpus, 128);
  EXPECT_DOUBLE_EQ(vm.ram.value(), 864.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(vm.infiniband_ports, 4);
  EXPECT_DOUBLE_EQ(vm.infiniband_port_rate.value(), 800e9);
  EXPECT_DOUBLE_EQ(vm.ethernet_bandwidth.value(), 160e9);
  EXPECT_DOUBLE_EQ(vm.local_nvme.value(), 16.0 * 1024 * 1024 * 1024 * 1024);
  EXPECT_EQ(vm.nvlink_domain_vms, 18);
  EXPECT_EQ(vm.domain_gpus(36, std::nullopt), 72);
  EXPECT_FALSE(vm.price_usd_per_hour.has_value());  // quote-only
  EXPECT_EQ(vm.estimates.count("nccl_ring_efficiency"), 1U);
}

TEST(ShippedCatalog, EstimatesAreFlaggedAndMeasurementsAreNot) {
  // Measured on the device: not estimates.
  EXPECT_EQ(shipped().device("H100-SXM5-80GB").estimates.count("achievable_matmul_bf16_tflops"), 0U);
  EXPECT_EQ(shipped().device("GB200").estimates.count("achievable_matmul_bf16_tflops"), 0U);
  EXPECT_EQ(shipped().device("A100-PCIe-80GB").estimates.count("achievable_matmul_bf16_tflops"), 0U);
  // No measurement: flagged.
  EXPECT_EQ(shipped().device("H100-NVL-94GB").estimates.count("achievable_matmul_bf16_tflops"), 1U);
  EXPECT_EQ(shipped().device("GB200").estimates.count("achievable_memory_bandwidth_tb_per_s"), 1U);
  EXPECT_EQ(shipped().device("V100-SXM2-32GB").estimates.count("training_matmul_fraction"), 1U);
  EXPECT_EQ(shipped().vm_size("Standard_NC6s_v3").estimates.count("ethernet_gbps"), 1U);
  // Every estimate names a number the entry has.
  for (const auto& [name, d] : shipped().devices()) {
    for (const std::string& key : d.estimates) EXPECT_NE(key, "source") << name;
  }
}

TEST(ShippedCatalog, EveryVmDeviceExists) {
  for (const auto& [name, vm] : shipped().vm_sizes()) {
    EXPECT_NO_THROW((void)shipped().device(vm.device)) << name << " names " << vm.device;
  }
}

TEST(ShippedCatalog, A100PeaksFromDatasheet) {
  const DeviceSpec& a100 = shipped().device("A100-SXM4-80GB");
  EXPECT_EQ(a100.kind, DeviceKind::gpu);
  EXPECT_DOUBLE_EQ(a100.peak_for(Precision::bf16).value(), 312e12);  // A100 datasheet, dense
  EXPECT_DOUBLE_EQ(a100.peak_for(Precision::tf32).value(), 156e12);
  EXPECT_DOUBLE_EQ(a100.peak_for(Precision::fp32).value(), 19.5e12);
  EXPECT_THROW((void)a100.peak_for(Precision::fp8), std::out_of_range);  // Ampere: no fp8
  EXPECT_DOUBLE_EQ(a100.achievable_matmul_bf16.value(), 271.2e12);     // hardware.csv MAMF
  EXPECT_DOUBLE_EQ(a100.achievable_memory_bandwidth.value(), 1.70e12); // hardware.csv triad
  EXPECT_DOUBLE_EQ(a100.memory_capacity.value(), 80.0 * 1024 * 1024 * 1024);  // 81920 MiB (nvidia-smi)
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_DOUBLE_EQ(a100.fabric_bandwidth_per_direction.value(), 300e9);  // 600 GB/s bidirectional / 2
}

TEST(ShippedCatalog, H100FabricIsHalfTheBidirectionalNvlink) {
  const DeviceSpec& h100 = shipped().device("H100-SXM5-80GB");
  EXPECT_DOUBLE_EQ(h100.fabric_bandwidth_per_direction.value(), 900e9 / 2.0);  // hardware.csv 900 GB/s bidir
  EXPECT_DOUBLE_EQ(h100.peak_for(Precision::bf16).value(), 989e12);
  EXPECT_DOUBLE_EQ(h100.peak_for(Precision::fp8).value(), 1979e12);
  EXPECT_DOUBLE_EQ(h100.achievable_matmul_bf16.value(), 794.5e12);
  ASSERT_TRUE(h100.achievable_matmul_fp8.has_value());
  EXPECT_DOUBLE_EQ(h100.achievable_matmul_fp8->value(), 1402.6e12);
  EXPECT_EQ(h100.sm_count, 132);
}

TEST(ShippedCatalog, VoltaAndTuringHaveNoBf16) {
  // V100/T4 tensor cores do fp16 only: bf16 must be unsupported, not silently the fp16 rate.
  const DeviceSpec& v100 = shipped().device("V100-SXM2-32GB");
  EXPECT_THROW((void)v100.peak_for(Precision::bf16), std::out_of_range);
  EXPECT_THROW((void)v100.peak_for(Precision::tf32), std::out_of_range);
  EXPECT_DOUBLE_EQ(v100.peak_for(Precision::fp16).value(), 125e12);
  EXPECT_DOUBLE_EQ(v100.fabric_bandwidth_per_direction.value(), 150e9);  // 300 GB/s bidir / 2
  const DeviceSpec& t4 = shipped().device("T4");
  EXPECT_THROW((void)t4.peak_for(Precision::bf16), std::out_of_range);
  EXPECT_DOUBLE_EQ(t4.peak_for(Precision::fp16).value(), 65e12);
  try {
    (void)t4.peak_for(Precision::bf16);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("T4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp16"), std::string::npos) << e.what();  // lists what it supports
  }
}

TEST(ShippedCatalog, CpuDeviceIsArithmeticOfCoresWidthAndClock) {
  const DeviceSpec& cpu = shipped().device("Xeon-8370C-16vCPU");
  EXPECT_EQ(cpu.kind, DeviceKind::cpu);
  // 8 physical cores x 32 fp32 FLOP/cycle (2 AVX-512 FMA x 16 lanes x 2) x 3.5 GHz.
  EXPECT_NEAR(cpu.peak_for(Precision::fp32).value(), 8 * 32 * 3.5e9, 1.0);
  // No AMX / AVX512_BF16 on Ice Lake: bf16 runs at the fp32 rate.
  EXPECT_DOUBLE_EQ(cpu.peak_for(Precision::bf16).value(), cpu.peak_for(Precision::fp32).value());
  EXPECT_EQ(cpu.sm_count, 8);
  EXPECT_DOUBLE_EQ(cpu.memory_capacity.value(), 64.0 * 1024 * 1024 * 1024);  // the VM's 64 GiB
  EXPECT_TRUE(cpu.memory_quoted_in_gib);
}

TEST(ShippedCatalog, H100VmHasEightNdrPorts) {
  const VmSize& vm = shipped().vm_size("Standard_ND96isr_H100_v5");
  EXPECT_EQ(vm.device, "H100-SXM5-80GB");
  EXPECT_EQ(vm.devices_per_vm, 8);
  EXPECT_EQ(vm.fabric, IntraNodeFabric::nvswitch);
  EXPECT_EQ(vm.infiniband_ports, 8);
  EXPECT_DOUBLE_EQ(vm.infiniband_port_rate.value(), 400e9);  // NDR, bit/s
  // 8 x 400 Gb/s = 3.2 Tb/s = 400 GB/s of InfiniBand per VM.
  EXPECT_DOUBLE_EQ(units::to_bytes_per_second(vm.infiniband_port_rate).value() * vm.infiniband_ports, 400e9);
  ASSERT_TRUE(vm.price_usd_per_hour.has_value());
  EXPECT_DOUBLE_EQ(*vm.price_usd_per_hour, 98.32);
  EXPECT_DOUBLE_EQ(vm.ethernet_bandwidth.value(), 80e9);  // 80000 Mbps
  EXPECT_DOUBLE_EQ(vm.local_nvme.value(), 28.0 * 1024 * 1024 * 1024 * 1024);  // 28 TiB
  EXPECT_EQ(vm.vcpus, 96);
  EXPECT_DOUBLE_EQ(vm.ram.value(), 1900.0 * 1024 * 1024 * 1024);
}

TEST(ShippedCatalog, VmRowsMatchAzureCsv) {
  // azure_vm_sizes.csv: gpus, gpu_memory_gb_total, ib ports x Gb/s, price (NaN: none given).
  struct Row {
    const char* name;
    double gpus;
    double gpu_memory_gb_total;
    int ib_ports;
    double ib_gbps;
    double price;
  };
  const std::vector<Row> rows = {
      {"Standard_NC4as_T4_v3", 1, 16, 0, 0, 0.53},
      {"Standard_NC64as_T4_v3", 4, 64, 0, 0, 4.25},
      {"Standard_ND96asr_v4", 8, 320, 8, 200, 27.20},
      {"Standard_ND96amsr_A100_v4", 8, 640, 8, 200, 32.77},  // price: not in the CSV (its price_source)
      {"Standard_ND96isr_H100_v5", 8, 640, 8, 400, 98.32},
      {"Standard_ND96isr_H200_v5", 8, 1128, 8, 400, 110.24},  // price: not in the CSV
      {"Standard_ND96isr_MI300X_v5", 8, 1535, 8, 400, 48.00},  // CSV rounds 8 x 192 = 1536 down; price: not in it
      {"Standard_NV36ads_A10_v5", 1, 24, 0, 0, 1.80},
      {"Standard_NV6ads_A10_v5", 1.0 / 6.0, 4, 0, 0, 0.45},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const VmSize& vm = shipped().vm_size(r.name);
    const DeviceSpec& d = shipped().device(vm.device);
    EXPECT_NEAR(vm.devices_per_vm * vm.device_share, r.gpus, 1e-12);
    // Azure quotes the vendor's marketing figure ("80 GB", "141 GB", "16 GB"); the catalog holds what nvidia-smi /
    // rocm-smi reports, in MiB. In GiB they agree within 7 %: H100 79.6 GiB (81559 MiB) x 8 against the quoted
    // 640, H200 140.4 x 8 against 1128, T4 15.0 (15360 MiB) against 16, A10 22.5 (23028 MiB) against 24.
    EXPECT_TRUE(d.memory_quoted_in_gib);
    EXPECT_NEAR(vm.devices_per_vm * vm.device_share * units::in_gib(d.memory_capacity), r.gpu_memory_gb_total,
                0.07 * r.gpu_memory_gb_total);
    EXPECT_EQ(vm.infiniband_ports, r.ib_ports);
    EXPECT_DOUBLE_EQ(vm.infiniband_port_rate.value(), r.ib_gbps * 1e9);
    if (std::isnan(r.price)) {
      EXPECT_FALSE(vm.price_usd_per_hour.has_value());
    } else {
      ASSERT_TRUE(vm.price_usd_per_hour.has_value());
      EXPECT_DOUBLE_EQ(*vm.price_usd_per_hour, r.price);
    }
  }
  const VmSize& cpu_vm = shipped().vm_size("Standard_D16s_v5");
  EXPECT_EQ(shipped().device(cpu_vm.device).kind, DeviceKind::cpu);
  EXPECT_EQ(cpu_vm.devices_per_vm, 1);
  EXPECT_EQ(cpu_vm.fabric, IntraNodeFabric::none);
  EXPECT_DOUBLE_EQ(cpu_vm.ethernet_bandwidth.value(), 12.5e9);
  EXPECT_DOUBLE_EQ(cpu_vm.local_nvme.value(), 0.0);
}

TEST(ShippedCatalog, AchievableNeverExceedsPeak) {
  for (const auto& [name, d] : shipped().devices()) {
    SCOPED_TRACE(name);
    double sixteen = 0.0;
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      auto it = d.peak.find(p);
      if (it != d.peak.end()) sixteen = std::max(sixteen, it->second.value());
    }
    EXPECT_GT(d.achievable_matmul_bf16.value(), 0.0);
    EXPECT_LE(d.achievable_matmul_bf16.value(), sixteen);
    EXPECT_GT(d.achievable_memory_bandwidth.value(), 0.0);
    EXPECT_LE(d.achievable_memory_bandwidth.value(), d.memory_bandwidth.value());
    EXPECT_FALSE(d.source.empty());
  }
}

TEST(ShippedCatalog, UnknownNamesListTheKnownOnes) {
  try {
    (void)shipped().device("B200");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("B200"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("H100-SXM5-80GB"), std::string::npos) << e.what();
  }
  try {
    (void)shipped().vm_size("Standard_ND96_nope");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("Standard_ND96isr_H100_v5"), std::string::npos) << e.what();
  }
}

TEST(ShippedCatalog, DefaultDirectoryIsTheSourceTreeUnlessOverridden) {
  const char* saved = std::getenv("CLUSTERSIM_CATALOG_DIR");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::unsetenv("CLUSTERSIM_CATALOG_DIR");
  EXPECT_EQ(fs::weakly_canonical(Catalog::default_directory()), fs::weakly_canonical(shipped_dir()));
  ::setenv("CLUSTERSIM_CATALOG_DIR", "/somewhere/else", 1);
  EXPECT_EQ(Catalog::default_directory(), fs::path("/somewhere/else"));
  if (saved != nullptr) {
    ::setenv("CLUSTERSIM_CATALOG_DIR", saved_value.c_str(), 1);
  } else {
    ::unsetenv("CLUSTERSIM_CATALOG_DIR");
  }
}

// The installed layout (README "Install"): CLUSTERSIM_CATALOG_DIR, then the installed directory when it holds a
// devices.toml, then the source tree.
TEST(ShippedCatalog, DefaultDirectoryPrefersAnInstalledCatalogToTheSourceTree) {
  const char* saved = std::getenv("CLUSTERSIM_CATALOG_DIR");
  const std::string saved_value = saved != nullptr ? saved : "";
  const fs::path installed =
      fs::temp_directory_path() / ("clustersim_installed_catalog_" + std::to_string(::getpid()));
  const fs::path empty = installed.string() + "_empty";
  fs::remove_all(installed);
  fs::remove_all(empty);
  fs::create_directories(installed);
  fs::create_directories(empty);
  std::ofstream(installed / "devices.toml") << "\n";

  ::unsetenv("CLUSTERSIM_CATALOG_DIR");
  EXPECT_EQ(Catalog::default_directory(installed), installed);
  EXPECT_EQ(fs::weakly_canonical(Catalog::default_directory(empty)), fs::weakly_canonical(shipped_dir()));
  EXPECT_EQ(fs::weakly_canonical(Catalog::default_directory(installed / "missing")),
            fs::weakly_canonical(shipped_dir()));
  ::setenv("CLUSTERSIM_CATALOG_DIR", "/somewhere/else", 1);
  EXPECT_EQ(Catalog::default_directory(installed), fs::path("/somewhere/else"));
  ::setenv("CLUSTERSIM_CATALOG_DIR", "", 1);  // empty: as if unset
  EXPECT_EQ(Catalog::default_directory(installed), installed);

  if (saved != nullptr) {
    ::setenv("CLUSTERSIM_CATALOG_DIR", saved_value.c_str(), 1);
  } else {
    ::unsetenv("CLUSTERSIM_CATALOG_DIR");
  }
  fs::remove_all(installed);
  fs::remove_all(empty);
}

TEST(ShippedCatalog, EnumNames) {
  EXPECT_EQ(clustersim::models::to_string(IntraNodeFabric::infinity_fabric), "infinity_fabric");
  EXPECT_EQ(clustersim::models::to_string(IntraNodeFabric::nvswitch), "nvswitch");
  EXPECT_EQ(clustersim::models::to_string(DeviceKind::cpu), "cpu");
}

// --------------------------------------------------------------------------------------------- error cases

// A minimal valid catalog, one line per element so the tests can name line numbers.
const std::vector<std::string> kDevicesLines = {
    "[X100]",                                     // 1
    "kind = \"gpu\"",                             // 2
    "source = \"test\"",                          // 3
    "peak_fp32_tflops = 10",                      // 4
    "peak_bf16_tflops = 100",                     // 5
    "achievable_matmul_bf16_tflops = 80",         // 6
    "memory_mib = 40960",                         // 7
    "memory_bandwidth_tb_per_s = 2",              // 8
    "achievable_memory_bandwidth_tb_per_s = 1.5", // 9
    "sm_count = 100",                             // 10
    "fabric_gb_per_s_per_direction = 300",        // 11
    "tdp_watts = 400",                            // 12
    "memory_source = \"test\"",                   // 13
    "memory_part = \"X 40GB\"",                   // 14
};
const std::vector<std::string> kVmLines = {
    "[Test_VM]",                   // 1
    "device = \"X100\"",           // 2
    "devices_per_vm = 8",          // 3
    "vcpus = 96",                  // 4
    "ram_gib = 900",               // 5
    "fabric = \"nvswitch\"",       // 6
    "infiniband_ports = 8",        // 7
    "infiniband_port_gbps = 200",  // 8
    "ethernet_gbps = 24",          // 9
    "source = \"test\"",           // 10
};

class CatalogErrors : public ::testing::Test {
 protected:

  void write(const char* file, const std::vector<std::string>& lines) const {
    std::ofstream out(dir_ / file);
    for (const auto& l : lines) out << l << '\n';
  }
  /// Writes both files and returns the CatalogError message of loading them ("" when it loads).
  std::string load(const std::vector<std::string>& devices, const std::vector<std::string>& vms) const {
    write("devices.toml", devices);
    write("vm_sizes.toml", vms);
    try {
      (void)Catalog::load(dir_);
    } catch (const CatalogError& e) {
      return e.what();
    }
    return "";
  }
  /// "DIR/FILE:LINE:" — the location prefix an error in FILE at LINE must start with.
  [[nodiscard]] std::string at(const char* file, int line) const {
    return (dir_ / file).string() + ":" + std::to_string(line) + ":";
  }
  static std::vector<std::string> with(std::vector<std::string> lines, size_t line, const std::string& text) {
    lines.at(line - 1) = text;
    return lines;
  }

  clustersim::testing::TempDir tmp_{"clustersim_catalog_"};  ///< removed with its files after the test
  const fs::path& dir_ = tmp_.path();
};

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST_F(CatalogErrors, MinimalCatalogLoads) {
  EXPECT_EQ(load(kDevicesLines, kVmLines), "");
  const Catalog c = Catalog::load(dir_);
  EXPECT_DOUBLE_EQ(c.device("X100").peak_for(Precision::bf16).value(), 100e12);
  EXPECT_DOUBLE_EQ(c.vm_size("Test_VM").infiniband_port_rate.value(), 200e9);
}

TEST_F(CatalogErrors, UnknownKey) {
  const std::string msg = load(with(kDevicesLines, 5, "peak_bf16_tflop = 100"), kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 5), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.peak_bf16_tflop'");
  EXPECT_CONTAINS(msg, "unknown key");
}

TEST_F(CatalogErrors, WrongTypeString) {
  const std::string msg = load(with(kDevicesLines, 7, "memory_mib = \"40960\""), kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 7), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.memory_mib'");
  EXPECT_CONTAINS(msg, "expected an integer");
}

TEST_F(CatalogErrors, CountMustBeAnInteger) {
  const std::string msg = load(with(kDevicesLines, 10, "sm_count = 100.0"), kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 10), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.sm_count'");
  EXPECT_CONTAINS(msg, "expected an integer");
}

TEST_F(CatalogErrors, NegativeRate) {
  const std::string msg = load(with(kDevicesLines, 8, "memory_bandwidth_tb_per_s = -2"), kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 8), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.memory_bandwidth_tb_per_s'");
  EXPECT_CONTAINS(msg, "must be positive");
}

TEST_F(CatalogErrors, AchievableAbovePeak) {
  const std::string msg = load(with(kDevicesLines, 6, "achievable_matmul_bf16_tflops = 120"), kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 6), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.achievable_matmul_bf16_tflops'");
}

TEST_F(CatalogErrors, MissingKeyPointsAtTheEntry) {
  std::vector<std::string> lines = kDevicesLines;
  lines.erase(lines.begin() + 11);  // line 12, tdp_watts
  const std::string msg = load(lines, kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 1), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.tdp_watts'");
  EXPECT_CONTAINS(msg, "required key is missing");
}

TEST_F(CatalogErrors, VmWithUnknownDevice) {
  const std::string msg = load(kDevicesLines, with(kVmLines, 2, "device = \"Y100\""));
  EXPECT_EQ(msg.rfind(at("vm_sizes.toml", 2), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'Test_VM.device'");
  EXPECT_CONTAINS(msg, "unknown device 'Y100'");
  EXPECT_CONTAINS(msg, "X100");  // lists the known devices
}

TEST_F(CatalogErrors, UnknownFabric) {
  const std::string msg = load(kDevicesLines, with(kVmLines, 6, "fabric = \"nvlink\""));
  EXPECT_EQ(msg.rfind(at("vm_sizes.toml", 6), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'Test_VM.fabric'");
  EXPECT_CONTAINS(msg, "nvswitch");  // lists the known fabrics
}

TEST_F(CatalogErrors, InfinibandPortsWithoutRate) {
  std::vector<std::string> lines = kVmLines;
  lines.at(7) = "# no rate";  // line 8
  const std::string msg = load(kDevicesLines, lines);
  EXPECT_EQ(msg.rfind(at("vm_sizes.toml", 1), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'Test_VM.infiniband_port_gbps'");
}

TEST_F(CatalogErrors, EstimatesMustNameTheEntrysNumbers) {
  std::vector<std::string> lines = kDevicesLines;
  lines.push_back("estimates = [\"tdp_watts\", \"sm_cout\"]");  // line 15
  const std::string msg = load(lines, kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 15), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.estimates'");
  EXPECT_CONTAINS(msg, "'sm_cout' is not a number of this entry");
  lines.back() = "estimates = [\"tdp_watts\"]";
  EXPECT_EQ(load(lines, kVmLines), "");
  EXPECT_EQ(Catalog::load(dir_).device("X100").estimates, std::set<std::string>{"tdp_watts"});
}

TEST_F(CatalogErrors, NvlinkDomainNeedsAnNvswitch) {
  std::vector<std::string> lines = with(kVmLines, 6, "fabric = \"pcie\"");
  lines.push_back("nvlink_domain_vms = 18");  // line 11
  const std::string msg = load(kDevicesLines, lines);
  EXPECT_EQ(msg.rfind(at("vm_sizes.toml", 11), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'Test_VM.nvlink_domain_vms'");
  EXPECT_CONTAINS(msg, "nvswitch");
}

TEST_F(CatalogErrors, Fp4PeakNeedsAnFp8Mode) {
  std::vector<std::string> lines = kDevicesLines;
  lines.push_back("peak_fp4_tflops = 400");  // line 15
  const std::string msg = load(lines, kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 15), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'X100.peak_fp4_tflops'");
  EXPECT_CONTAINS(msg, "no peak_fp8_tflops");
  lines.push_back("peak_fp8_tflops = 200");
  EXPECT_EQ(load(lines, kVmLines), "");
  EXPECT_DOUBLE_EQ(Catalog::load(dir_).device("X100").peak_fp4->value(), 400e12);
}

TEST_F(CatalogErrors, NvlinkBridgeJoinsPairs) {
  const std::string msg =
      load(kDevicesLines, with(with(kVmLines, 6, "fabric = \"nvlink_bridge\""), 3, "devices_per_vm = 3"));
  EXPECT_EQ(msg.rfind(at("vm_sizes.toml", 6), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "pairs of GPUs");
}

TEST_F(CatalogErrors, TomlSyntaxError) {
  const std::string msg = load(with(kDevicesLines, 12, "tdp_watts = = 400"), kVmLines);
  EXPECT_EQ(msg.rfind(at("devices.toml", 12), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "TOML parse error");
}

TEST_F(CatalogErrors, MissingFile) {
  write("devices.toml", kDevicesLines);
  try {
    (void)Catalog::load(dir_);
    FAIL() << "expected CatalogError";
  } catch (const CatalogError& e) {
    EXPECT_CONTAINS(e.what(), "vm_sizes.toml");
  }
}

// ------------------------------------------------------------------------------------------------- table

TEST(CatalogTable, RendersAlignedColumns) {
  DeviceSpec d;
  d.name = "X100";
  d.peak[Precision::fp32] = units::tflops_per_second(19.5);
  d.peak[Precision::bf16] = units::tflops_per_second(312);
  d.achievable_matmul_bf16 = units::tflops_per_second(271.2);
  d.memory_capacity = units::gigabytes(80);
  d.memory_bandwidth = units::terabytes_per_second(2.039);
  d.achievable_memory_bandwidth = units::terabytes_per_second(1.7);
  d.sm_count = 108;
  d.fabric_bandwidth_per_direction = units::gigabytes_per_second(300);
  d.tdp_watts = 400;
  VmSize v;
  v.name = "VM8";
  v.device = "X100";
  v.devices_per_vm = 8;
  v.vcpus = 96;
  v.ram = units::gib(1900);
  v.fabric = IntraNodeFabric::nvswitch;
  v.infiniband_ports = 8;
  v.infiniband_port_rate = units::gigabits_per_second(400);
  v.ethernet_bandwidth = units::gigabits_per_second(80);
  v.local_nvme = units::gib(28 * 1024);
  v.price_usd_per_hour = 98.32;
  VmSize small = v;
  small.name = "VM1";
  small.devices_per_vm = 1;
  small.device_share = 1.0 / 6.0;
  small.fabric = IntraNodeFabric::none;
  small.infiniband_ports = 0;
  small.local_nvme = units::gib(180);
  small.price_usd_per_hour.reset();
  d.source = "datasheet";
  d.estimates = {"achievable_memory_bandwidth_tb_per_s"};
  d.training_matmul_fraction = 0.9;
  v.source = "docs";
  v.price_source = "list, 2026-11-01";
  v.nvlink_domain_vms = 2;
  small.estimates = {"ethernet_gbps"};
  small.source = "docs";
  const Catalog c({{"X100", d}}, {{"VM8", v}, {"VM1", small}});

  const std::string expected =
      "Devices (dense peak TFLOP/s per precision, '-' = no such mode; matmul = achievable bf16 matmul TFLOP/s;\n"
      "mem = datasheet, triad = measured or estimated achievable memory bandwidth; training = the sustained-\n"
      "in-training fractions, fitted to published runs or estimated; kernels = the kernel classes timed from\n"
      "measured tables (catalog kernels/: 16-bit GEMMs, fused attention), the fractions scaling only the rest;\n"
      "'~' = an estimate, no measurement or datasheet gives it; every other number is a datasheet value or a\n"
      "measurement)\n"
      "device  kind  fp32  tf32  fp16  bf16  fp8  fp4  matmul  memory  mem TB/s  triad TB/s  SMs  fabric GB/s/dir  TDP W  training  kernels\n"
      "------  ----  ----  ----  ----  ----  ---  ---  ------  ------  --------  ----------  ---  ---------------  -----  --------  -------\n"
      "X100    gpu   19.5     -     -   312    -    -   271.2   80 GB     2.039        1.7~  108              300    400  fitted    -\n"
      "\n"
      "VM sizes (price: pay-as-you-go Linux East US, '-' = unknown; '~' = an estimate)\n"
      "VM size  devices                                   vCPUs       RAM  fabric    InfiniBand  Ethernet Gb/s  local disk    $/h\n"
      "-------  ----------------------------------------  -----  --------  --------  ----------  -------------  ----------  -----\n"
      "VM1      1/6 x X100                                   96  1900 GiB  none               -            80~     180 GiB      -\n"
      "VM8      8 x X100 (NVLink domain: 2 VMs, 16 GPUs)     96  1900 GiB  nvswitch  8x400 Gb/s             80      28 TiB  98.32\n"
      "\n"
      "Sources (docs/catalog.md; each number's own source is beside it in the catalog files)\n"
      "  X100: datasheet\n"
      "  VM1: docs\n"
      "  VM8: docs; price: list, 2026-11-01\n";
  EXPECT_EQ(clustersim::sim::format_catalog_table(c), expected);
}

TEST(CatalogTable, ShippedCatalogRendersEveryEntry) {
  const std::string text = clustersim::sim::format_catalog_table(shipped());
  for (const auto& [name, d] : shipped().devices()) EXPECT_CONTAINS(text, name);
  for (const auto& [name, v] : shipped().vm_sizes()) EXPECT_CONTAINS(text, name);
  EXPECT_CONTAINS(text, "8x400 Gb/s");
  EXPECT_CONTAINS(text, "1/6 x A10");
  // Which devices time which kernels from measured tables: the H100 SXM both, the 500 W H100 from its sibling's.
  EXPECT_CONTAINS(text, "gemm+attention\n");
  EXPECT_CONTAINS(text, "gemm~+attention~");
  EXPECT_CONTAINS(text, "98.32");
  if (std::getenv("CLUSTERSIM_PRINT_CATALOG") != nullptr) std::cout << text;
}

TEST(CatalogConstructor, RejectsVmWithUnknownDevice) {
  VmSize v;
  v.name = "VM";
  v.device = "nope";
  EXPECT_THROW(Catalog({}, {{"VM", v}}), CatalogError);
}

}  // namespace
