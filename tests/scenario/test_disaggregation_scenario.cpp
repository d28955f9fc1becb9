// Split prefill and decode pools in a serving scenario (issue 30; serving.prefill_*): what loads, and a located
// error for each bad value.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "tests/support/catalog.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kSynthetic = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";

using testing::catalog;

std::string error_of(const std::vector<std::string>& overrides) {
  try {
    (void)load_serving_scenario(kSynthetic, overrides, catalog());
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ScenarioError";
  return {};
}

void expect_error(const std::vector<std::string>& overrides, const std::string& key, const std::string& message) {
  const std::string e = error_of(overrides);
  EXPECT_NE(e.find("key '" + key + "': " + message), std::string::npos) << e;
}

TEST(DisaggregationScenario, ThePrefillPoolTakesTheDecodePoolsValuesItDoesNotGive) {
  const ServingScenario s = load_serving_scenario(kSynthetic, {"serving.prefill_replicas=2"}, catalog());
  EXPECT_TRUE(s.serving.disaggregated());
  EXPECT_EQ(s.serving.prefill_replicas, 2);
  EXPECT_EQ(s.serving.prefill_vm_size, "Standard_ND96isr_H100_v5");
  EXPECT_EQ(s.serving.prefill_tensor, 4);
  EXPECT_EQ(s.serving.prefill_max_num_seqs, 256);
  EXPECT_EQ(s.serving.prefill_max_num_batched_tokens, 8192);
  ASSERT_TRUE(s.serving.prefill_vm_price_usd_per_hour);
  EXPECT_DOUBLE_EQ(*s.serving.prefill_vm_price_usd_per_hour, 98.32);
  EXPECT_EQ(s.serving.total_gpus(), 8 * 4 + 2 * 4);
  const ServingScenario t = load_serving_scenario(
      kSynthetic,
      {"serving.prefill_replicas=1", "serving.prefill_vm_size=\"Standard_ND96isr_H200_v5\"", "serving.prefill_tensor=8",
       "serving.prefill_max_num_seqs=64", "serving.prefill_max_num_batched_tokens=16384"},
      catalog());
  EXPECT_EQ(t.serving.prefill_vm_size, "Standard_ND96isr_H200_v5");
  EXPECT_EQ(t.serving.prefill_tensor, 8);
  EXPECT_EQ(t.serving.prefill_max_num_seqs, 64);
  EXPECT_EQ(t.serving.prefill_max_num_batched_tokens, 16384);
  // 0 is co-located (a sweep's switch): the other prefill keys are then unused.
  const ServingScenario c = load_serving_scenario(
      kSynthetic, {"serving.prefill_replicas=0", "serving.prefill_vm_size=\"Standard_ND96isr_H200_v5\""}, catalog());
  EXPECT_FALSE(c.serving.disaggregated());
  EXPECT_EQ(c.serving.total_gpus(), 32);
  // Absent: nothing of split pools in the resolved scenario.
  const ServingScenario plain = load_serving_scenario(kSynthetic, {}, catalog());
  EXPECT_EQ(plain.resolved_toml.find("prefill_"), std::string::npos);
}

TEST(DisaggregationScenario, PrefillKeysNeedPrefillReplicas) {
  for (const std::string k : {"serving.prefill_vm_size=\"Standard_ND96isr_H200_v5\"", "serving.prefill_tensor=8",
                              "serving.prefill_max_num_seqs=8", "serving.prefill_max_num_batched_tokens=4096"}) {
    expect_error({k}, k.substr(0, k.find('=')),
                 "describes the prefill pool of split pools: give serving.prefill_replicas >= 1");
  }
}

TEST(DisaggregationScenario, BadValuesAreLocated) {
  expect_error({"serving.prefill_replicas=-1"}, "serving.prefill_replicas", "must be");
  expect_error({"serving.prefill_replicas=100001"}, "serving.prefill_replicas", "must be");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_tensor=0"}, "serving.prefill_tensor", "must be");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_max_num_seqs=0"}, "serving.prefill_max_num_seqs",
               "must be");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_max_num_batched_tokens=0"},
               "serving.prefill_max_num_batched_tokens", "must be");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_vm_size=\"Standard_ND96isr_H900_v9\""},
               "serving.prefill_vm_size", "");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_vm_size=\"Standard_NC96ads_A100_v4\""},
               "serving.prefill_vm_size",
               "split pools move each request's KV cache over InfiniBand, and Standard_NC96ads_A100_v4 has none");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_tensor=3"}, "serving.prefill_tensor",
               "must divide model.num_attention_heads (64), got 3");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_tensor=16"}, "serving.prefill_tensor",
               "a prefill replica's tensor-parallel GPUs share one NVLink domain: at most 8");
  expect_error({"serving.prefill_replicas=1", "serving.prefill_tensor=1"}, "serving.prefill_tensor",
               "a prefill replica's weights at tensor 1 leave no KV cache");
  expect_error({"serving.prefill_replicas=1", "serving.chunked_prefill=false", "workload.prompt=\"fixed\"",
                "workload.prompt_tokens=4096", "serving.prefill_max_num_batched_tokens=2048"},
               "serving.prefill_max_num_batched_tokens", "the longest prompt (4096 tokens) exceeds a prefill engine's batch, and chunked prefill is off");
}

TEST(DisaggregationScenario, FeaturesNotModelledWithSplitPoolsAreLocated) {
  expect_error({"serving.prefill_replicas=1", "serving.pipeline=2"}, "serving.prefill_replicas",
               "split pools with serving.pipeline > 1 are not modelled");
  expect_error({"serving.prefill_replicas=1", "serving.min_replicas=1", "serving.max_replicas=8"},
               "serving.min_replicas", "not modelled with split pools (serving.prefill_replicas)");
  expect_error({"serving.prefill_replicas=1", "serving.spot_replicas=2"}, "serving.spot_replicas",
               "not modelled with split pools (serving.prefill_replicas)");
  expect_error({"serving.prefill_replicas=1", "serving.zones=2", "serving.zone_outage_start_s=10"},
               "serving.zone_outage_start_s", "not modelled with split pools (serving.prefill_replicas)");
}

}  // namespace
}  // namespace clustersim::sim
