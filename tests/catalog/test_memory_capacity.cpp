// One memory capacity per physical GPU (issue 28): every device of the shipped catalog states its capacity in
// MiB as nvidia-smi / rocm-smi reports it (or as the datasheet states it) with its source, GPUs naming the same
// memory part agree, and VM sizes of the same GPU read the same number because they name the same device entry.
// A catalog where two devices of one memory part disagree fails at the second one's memory_mib.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "tests/support/files.hpp"

namespace {

namespace fs = std::filesystem;
using clustersim::models::Catalog;
using clustersim::models::CatalogError;
using clustersim::models::DeviceKind;
using clustersim::models::DeviceSpec;
namespace units = clustersim::units;

const Catalog& shipped() {
  static const Catalog catalog =
      Catalog::load(fs::path(CLUSTERSIM_SOURCE_DIR) / "models" / "hardware" / "catalog");
  return catalog;
}

double mib(const DeviceSpec& d) { return d.memory_capacity.value() / (1024.0 * 1024.0); }

TEST(MemoryCapacity, EveryDeviceStatesItsCapacityInMibWithASource) {
  for (const auto& [name, d] : shipped().devices()) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(d.memory_source.empty());
    EXPECT_TRUE(d.memory_quoted_in_gib);                      // printed in GiB, as read (binary)
    EXPECT_EQ(mib(d), static_cast<double>(static_cast<long long>(mib(d))));  // a whole number of MiB
    if (d.kind == DeviceKind::gpu) {
      EXPECT_FALSE(d.memory_part.empty());
    }
  }
}

TEST(MemoryCapacity, GpusWithTheSameMemoryPartAgree) {
  std::map<std::string, std::vector<const DeviceSpec*>> by_part;
  for (const auto& [name, d] : shipped().devices()) {
    if (!d.memory_part.empty()) by_part[d.memory_part].push_back(&d);
  }
  for (const auto& [part, devices] : by_part) {
    for (const DeviceSpec* d : devices) {
      EXPECT_EQ(mib(*d), mib(*devices.front())) << part << ": " << d->name << " vs " << devices.front()->name;
    }
  }
  // The case of issue 28: the SXM4 board and the PCIe card carry the same 80 GiB of HBM2e; nvidia-smi reports
  // 81920 MiB for both (it was 80 GiB on one and 80e9 B = 74.5 GiB on the other).
  const DeviceSpec& sxm = shipped().device("A100-SXM4-80GB");
  const DeviceSpec& pcie = shipped().device("A100-PCIe-80GB");
  EXPECT_EQ(sxm.memory_part, pcie.memory_part);
  EXPECT_EQ(mib(sxm), 81920.0);
  EXPECT_EQ(mib(pcie), 81920.0);
}

TEST(MemoryCapacity, VmSizesOfOneGpuReadOneNumber) {
  // ND96amsr_A100_v4 (A100-SXM4-80GB) and NC96ads_A100_v4 (A100-PCIe-80GB): 80.0 GiB per GPU on both.
  const auto& nd = shipped().device(shipped().vm_size("Standard_ND96amsr_A100_v4").device);
  const auto& nc = shipped().device(shipped().vm_size("Standard_NC96ads_A100_v4").device);
  EXPECT_DOUBLE_EQ(units::in_gib(nd.memory_capacity), 80.0);
  EXPECT_DOUBLE_EQ(units::in_gib(nc.memory_capacity), 80.0);
  // Every VM size names a device entry: the capacity lives in one place per GPU.
  std::map<std::string, double> capacity_of_device;
  for (const auto& [name, vm] : shipped().vm_sizes()) {
    const double c = shipped().device(vm.device).memory_capacity.value();
    const auto [it, inserted] = capacity_of_device.emplace(vm.device, c);
    EXPECT_EQ(it->second, c) << name;
  }
}

TEST(MemoryCapacity, NvidiaSmiTotalsOfTheSources) {
  // Each number as its memory_source gives it (nvidia-smi / rocm-smi totals, MiB).
  const std::map<std::string, double> expected = {
      {"A100-SXM4-40GB", 40960}, {"A100-SXM4-80GB", 81920}, {"A100-PCIe-80GB", 81920}, {"H100-SXM5-80GB", 81559},
      {"H100-NVL-94GB", 95830},  {"H200-SXM-141GB", 143771}, {"GB200", 189471},        {"GB300", 284208},
      {"MI300X", 196592},        {"T4", 15360},              {"A10", 23028},           {"V100-SXM2-32GB", 32768},
  };
  for (const auto& [name, expected_mib] : expected) EXPECT_EQ(mib(shipped().device(name)), expected_mib) << name;
}

// ------------------------------------------------------------------------------------------------ errors

class MemoryCapacityErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "vm_sizes.toml") << "[VM]\ndevice = \"A\"\ndevices_per_vm = 1\nvcpus = 8\nram_gib = 64\n"
                                              "fabric = \"none\"\nethernet_gbps = 10\nsource = \"test\"\n";
  }

  /// One GPU entry named `name` with the given memory lines (11 fixed lines, the memory ones from line 12 on).
  static std::string device(const std::string& name, const std::string& memory_lines) {
    return "[" + name + "]\nkind = \"gpu\"\nsource = \"test\"\npeak_fp32_tflops = 10\npeak_bf16_tflops = 100\n"
           "achievable_matmul_bf16_tflops = 80\nmemory_bandwidth_tb_per_s = 2\n"
           "achievable_memory_bandwidth_tb_per_s = 1.5\nsm_count = 100\nfabric_gb_per_s_per_direction = 300\n"
           "tdp_watts = 400\n" + memory_lines;
  }
  /// The CatalogError message of loading `devices` ("" when it loads).
  std::string load(const std::string& devices) const {
    std::ofstream(dir_ / "devices.toml") << devices;
    try {
      (void)Catalog::load(dir_);
    } catch (const CatalogError& e) {
      return e.what();
    }
    return "";
  }
  [[nodiscard]] std::string at(int line) const { return (dir_ / "devices.toml").string() + ":" + std::to_string(line) + ":"; }

  clustersim::testing::TempDir tmp_{"clustersim_memory_"};  ///< removed with its files after the test
  const fs::path& dir_ = tmp_.path();
};

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

const std::string kMemory80 = "memory_mib = 81920\nmemory_part = \"P 80GB\"\nmemory_source = \"nvidia-smi\"\n";

TEST_F(MemoryCapacityErrors, TwoDevicesOfOnePartLoadWhenTheyAgree) {
  EXPECT_EQ(load(device("A", kMemory80) + device("B", kMemory80)), "");
}

TEST_F(MemoryCapacityErrors, TwoDevicesOfOnePartMustAgree) {
  // B is the second entry: lines 15-28, its memory_mib on line 26.
  const std::string msg = load(device("A", kMemory80) +
                               device("B", "memory_mib = 76294\nmemory_part = \"P 80GB\"\nmemory_source = \"x\"\n"));
  EXPECT_EQ(msg.rfind(at(26), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'B.memory_mib'");
  EXPECT_CONTAINS(msg, "memory_part 'P 80GB' is 81920 MiB on A");
}

TEST_F(MemoryCapacityErrors, AGpuNeedsItsSourceAndPart) {
  std::string msg = load(device("A", "memory_mib = 81920\nmemory_part = \"P 80GB\"\n"));
  EXPECT_EQ(msg.rfind(at(1), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'A.memory_source': required key is missing");
  msg = load(device("A", "memory_mib = 81920\nmemory_source = \"nvidia-smi\"\n"));
  EXPECT_CONTAINS(msg, "key 'A.memory_part': required key is missing");
}

TEST_F(MemoryCapacityErrors, DecimalGigabytesAreNoLongerAUnit) {
  // The mix-up of issue 28 (80e9 B read for an 80 GiB part) cannot be written any more.
  const std::string msg = load(device("A", "memory_gb = 80\nmemory_part = \"P 80GB\"\nmemory_source = \"x\"\n"));
  EXPECT_EQ(msg.rfind(at(12), 0), 0U) << msg;
  EXPECT_CONTAINS(msg, "key 'A.memory_gb': unknown key");
}

}  // namespace
