// cluster_rules: the VM size, the GPU count and its description, zones and NVLS, called on a checked Loader and
// through load_scenario.
#include <gtest/gtest.h>

#include "sim/io/cluster_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

TEST(ClusterRules, ShapeGivesTheGpusAndTheCatalogPrice) {
  const TempScenario file(kTraining);
  detail::Loader l = checked_loader(file.path());
  const detail::ClusterShape c = detail::check_cluster(l, catalog());
  EXPECT_EQ(c.gpus, 32);  // 4 VMs x 8 H100
  EXPECT_EQ(c.text, "32 GPUs (4 VMs × 8 per Standard_ND96isr_H100_v5)");
  EXPECT_EQ(c.vm, &catalog().vm_size("Standard_ND96isr_H100_v5"));
  EXPECT_EQ(l.learned.catalog_price, catalog().vm_size("Standard_ND96isr_H100_v5").price_usd_per_hour);
}

TEST(ClusterRules, UnknownVmSizeListsTheClosestNames) {
  const auto cluster = [](detail::Loader& l) { (void)detail::check_cluster(l, catalog()); };
  const std::string e = rule_error(kTraining, {"cluster.vm_size=Standard_ND96isr_H100_v6"}, cluster);
  EXPECT_EQ(e.rfind("--set:1:17: key 'cluster.vm_size': unknown VM size 'Standard_ND96isr_H100_v6' (", 0), 0u) << e;
  EXPECT_NE(e.find("closest: "), std::string::npos) << e;
}

TEST(ClusterRules, ZonesMustSumToTheNodes) {
  const std::string zones = kTraining + "zones = [{name = \"a\", nodes = 3}, {name = \"b\", nodes = 2}]\n";
  EXPECT_EQ(error_of(zones), "FILE:17:9: key 'cluster.zones': zone node counts sum to 5, but cluster.nodes = 4");
}

TEST(ClusterRules, NvlsNeedsOneNvlinkDomain) {
  const std::string e = error_of(kTraining, {"network.all_reduce_algorithm=nvls"});
  EXPECT_NE(e.find("key 'network.all_reduce_algorithm': nvls needs one node (one NVLink domain) of a VM size with "
                   "NVLink SHARP (H100/H200 NVSwitch), got 4 × Standard_ND96isr_H100_v5"),
            std::string::npos)
      << e;
  EXPECT_EQ(error_of(kTraining, {"network.all_reduce_algorithm=nvls", "cluster.nodes=1"}), "");
}

}  // namespace
}  // namespace clustersim::sim
