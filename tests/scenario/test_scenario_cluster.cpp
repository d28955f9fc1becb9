// Scenario keys of the cluster's network: fabric, zones ([[cluster.zones]]) and [network].
#include <gtest/gtest.h>

#include <filesystem>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim::sim {
namespace {

const std::filesystem::path kData = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "tests/scenario/data";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// what() of the ScenarioError `fixture` raises, or a failure.
std::string error_of(const std::string& fixture, const std::vector<std::string>& overrides = {}) {
  try {
    (void)load_scenario(kData / fixture, overrides, catalog());
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << fixture << ": expected a ScenarioError";
  return {};
}

TEST(ScenarioCluster, ZonesFabricAndAlgorithmLoad) {
  const Scenario s = load_scenario(kData / "valid_zones.toml", {}, catalog());
  ASSERT_EQ(s.cluster.zones.size(), 2u);
  EXPECT_EQ(s.cluster.zones[0].name, "a");
  EXPECT_EQ(s.cluster.zones[0].nodes, 3);
  EXPECT_EQ(s.cluster.zones[1].nodes, 1);
  EXPECT_EQ(s.cluster.fabric, models::FabricKind::rail_optimized);
  EXPECT_DOUBLE_EQ(s.cluster.inter_zone_latency.value(), 1.5e-3);
  ASSERT_TRUE(s.cluster.inter_zone_bandwidth_per_node.has_value());
  EXPECT_DOUBLE_EQ(s.cluster.inter_zone_bandwidth_per_node->value(), 40e9 / 8.0);  // 40 Gb/s = 5 GB/s
  EXPECT_EQ(s.network.all_reduce_algorithm, models::CollectiveAlgorithm::ring);
  // The resolved TOML keeps the zones and reloads to the same scenario.
  EXPECT_NE(s.resolved_toml.find("[[cluster.zones]]"), std::string::npos) << s.resolved_toml;
}

TEST(ScenarioCluster, DefaultsAreOneZoneFatTreeAndAutomaticAlgorithm) {
  const Scenario s = load_scenario(kData / "valid_minimal.toml", {}, catalog());
  EXPECT_TRUE(s.cluster.zones.empty());
  EXPECT_EQ(s.cluster.fabric, models::FabricKind::fat_tree);
  EXPECT_EQ(s.cluster.fat_tree_radix, 64);
  EXPECT_DOUBLE_EQ(s.cluster.oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(s.cluster.inter_zone_latency.value(), 1e-3);
  EXPECT_FALSE(s.network.all_reduce_algorithm.has_value());
}

TEST(ScenarioCluster, ZoneNodeCountsMustSumToNodes) {
  const std::string e = error_of("bad_zone_sum.toml");
  EXPECT_NE(e.find("bad_zone_sum.toml:21:"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'cluster.zones': zone node counts sum to 5, but cluster.nodes = 4"), std::string::npos) << e;
}

TEST(ScenarioCluster, DuplicateZoneName) {
  const std::string e = error_of("bad_zone_duplicate.toml");
  EXPECT_NE(e.find("bad_zone_duplicate.toml:26:"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'cluster.zones.name': zone 'a' is given twice"), std::string::npos) << e;
}

TEST(ScenarioCluster, UnknownKeyInAZone) {
  const std::string e = error_of("bad_zone_key.toml");
  EXPECT_NE(e.find("bad_zone_key.toml:24:1: key 'cluster.zones.rack': unknown key"), std::string::npos) << e;
}

TEST(ScenarioCluster, UnknownFabric) {
  const std::string e = error_of("bad_fabric.toml");
  EXPECT_NE(e.find("bad_fabric.toml:17:10: key 'cluster.fabric': must be one of single_switch, fat_tree, "
                   "rail_optimized, got 'torus'"),
            std::string::npos)
      << e;
}

TEST(ScenarioCluster, NvlsNeedsOneNodeOfAnNvlsCapableVm) {
  const std::string e = error_of("valid_minimal.toml", {"network.all_reduce_algorithm=nvls"});
  EXPECT_NE(e.find("--set:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'network.all_reduce_algorithm': nvls needs one node"), std::string::npos) << e;
  EXPECT_NO_THROW((void)load_scenario(kData / "valid_minimal.toml",
                                      {"network.all_reduce_algorithm=nvls", "cluster.nodes=1",
                                       "training.global_batch_size=64"},
                                      catalog()));
}

TEST(ScenarioCluster, Gb200VmsMakeWholeNvlinkDomains) {
  // ND GB200 v6: 18 VMs share one NVL72 NVLink domain. 20 VMs are not whole racks; two racks split 27 + 9 over
  // zones put a rack in two zones. Each is a located error; 36 VMs in two zones of 18 load.
  const std::filesystem::path path =
      std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "azure" / "llama3-70b-2x-nvl72-gb200.toml";
  std::string e;
  try {
    (void)load_scenario(path, {"cluster.nodes=20"}, catalog());
  } catch (const ScenarioError& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("--set:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'cluster.nodes': 20 VMs are not whole domains of 18 VMs per NVLink domain"), std::string::npos)
      << e;
  e.clear();
  try {
    (void)load_scenario(path, {"cluster.zones=[{name = \"a\", nodes = 27}, {name = \"b\", nodes = 9}]"}, catalog());
  } catch (const ScenarioError& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("key 'cluster.zones': a zone of 27 VMs is not whole domains"), std::string::npos) << e;
  EXPECT_NO_THROW((void)load_scenario(
      path, {"cluster.zones=[{name = \"a\", nodes = 18}, {name = \"b\", nodes = 18}]"}, catalog()));
}

TEST(ScenarioCluster, PartialNvlinkDomainsAreLocatedErrorsWhenTheyDoNotFit) {
  // 256 GB200 GPUs: 64 VMs on 4 racks of 16 of their 18 trays.
  const std::filesystem::path path = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "azure" /
                                     "llama31-405b-256-gb200-4-racks-of-16.toml";
  const Scenario s = load_scenario(path, {}, catalog());
  EXPECT_EQ(s.cluster.nodes, 64);
  ASSERT_TRUE(s.cluster.vms_per_nvlink_domain.has_value());
  EXPECT_EQ(*s.cluster.vms_per_nvlink_domain, 16);
  // The resolved scenario keeps the key (and reloads to the same cluster).
  EXPECT_NE(s.resolved_toml.find("vms_per_nvlink_domain = 16"), std::string::npos) << s.resolved_toml;
  auto error = [&](const std::vector<std::string>& overrides) {
    try {
      (void)load_scenario(path, overrides, catalog());
    } catch (const ScenarioError& x) {
      return std::string(x.what());
    }
    ADD_FAILURE() << "expected a ScenarioError";
    return std::string();
  };
  // More than a rack's 18, or below 1 (the parameter table's bound), at the key: in a file, its line and column.
  std::string e = error_of("bad_vms_per_nvlink_domain.toml");
  EXPECT_NE(e.find("bad_vms_per_nvlink_domain.toml:18:25: key 'cluster.vms_per_nvlink_domain': must be from 1 to 18"),
            std::string::npos)
      << e;
  e = error({"cluster.vms_per_nvlink_domain=19"});
  EXPECT_NE(e.find("--set:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'cluster.vms_per_nvlink_domain': must be from 1 to 18, the VMs of one NVLink domain of "
                   "Standard_ND128isr_NDR_GB200_v6 (72 GPUs), got 19"),
            std::string::npos)
      << e;
  e = error({"cluster.vms_per_nvlink_domain=0"});
  EXPECT_NE(e.find("key 'cluster.vms_per_nvlink_domain': must be >= 1, got 0"), std::string::npos) << e;
  // 64 VMs are not whole domains of 12 VMs: at cluster.nodes.
  e = error({"cluster.vms_per_nvlink_domain=12"});
  EXPECT_NE(e.find("key 'cluster.nodes': 64 VMs are not whole domains of 12 VMs per NVLink domain"), std::string::npos)
      << e;
  // Zones of 40 + 24 VMs split a domain of 16: at cluster.zones; 32 + 32 load.
  e = error({"cluster.zones=[{name = \"a\", nodes = 40}, {name = \"b\", nodes = 24}]"});
  EXPECT_NE(e.find("key 'cluster.zones': a zone of 40 VMs is not whole domains of 16 VMs"), std::string::npos) << e;
  EXPECT_NO_THROW((void)load_scenario(path, {"cluster.zones=[{name = \"a\", nodes = 32}, {name = \"b\", nodes = 32}]"},
                                      catalog()));
  // A VM size whose NVLink domain is one VM takes only 1.
  e = error({"cluster.vm_size=Standard_ND96isr_H100_v5", "cluster.nodes=32"});
  EXPECT_NE(e.find("key 'cluster.vms_per_nvlink_domain': must be 1: Standard_ND96isr_H100_v5 has no NVLink domain "
                   "beyond one VM, got 16"),
            std::string::npos)
      << e;
  // Without the key, 64 VMs are not whole racks of 18.
  const std::filesystem::path whole =
      std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "azure" / "llama3-70b-2x-nvl72-gb200.toml";
  e.clear();
  try {
    (void)load_scenario(whole, {"cluster.nodes=64"}, catalog());
  } catch (const ScenarioError& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("key 'cluster.nodes': 64 VMs are not whole domains of 18 VMs per NVLink domain"), std::string::npos)
      << e;
}

TEST(ScenarioCluster, ZonesBySet) {
  const Scenario s = load_scenario(kData / "valid_minimal.toml",
                                   {"cluster.zones=[{name = \"x\", nodes = 2}, {name = \"y\", nodes = 2}]"}, catalog());
  ASSERT_EQ(s.cluster.zones.size(), 2u);
  EXPECT_EQ(s.cluster.zones[1].name, "y");
}

}  // namespace
}  // namespace clustersim::sim
