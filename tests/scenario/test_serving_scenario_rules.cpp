// serving_scenario_rules: a serving scenario's rules called on a checked Loader (the tensor against the model,
// the workload's keys, the engine profile's defaults) and its builder.
#include <gtest/gtest.h>

#include "sim/io/serving_scenario_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

const auto kServingRules = [](detail::Loader& l) { detail::check_serving(l, catalog()); };

TEST(ServingScenarioRules, TensorMustDivideTheHeads) {
  EXPECT_EQ(rule_error(kServing, {}, kServingRules), "");
  EXPECT_EQ(rule_error(kServing, {"serving.tensor=3"}, kServingRules),
            "--set:1:16: key 'serving.tensor': must divide model.num_attention_heads (32), got 3");
}

TEST(ServingScenarioRules, ArrivalKeysMatchTheArrival) {
  EXPECT_EQ(rule_error(kServing, {"workload.arrival=closed_loop", "workload.requests=100"}, kServingRules),
            "FILE:20:14: key 'workload.rate_per_s': arrival = \"closed_loop\" takes no rate: the requests are sent as "
            "earlier ones finish");
}

TEST(ServingScenarioRules, EngineProfileFillsTheOverheadsAndTheBuilderReadsThem) {
  const TempScenario file(kServing);
  detail::Loader l = checked_loader(file.path());
  EXPECT_FALSE(l.has("serving.engine_overhead_ms"));
  detail::check_serving(l, catalog());
  EXPECT_TRUE(l.has("serving.engine_overhead_ms"));
  EXPECT_TRUE(l.has("serving.capacity_scheduler_policy"));
  const detail::LengthKeys prompt = detail::length_keys(l, "prompt");
  const ServingScenario s = detail::build_serving_scenario(l);
  EXPECT_EQ(s.workload.prompt.kind, prompt.kind);
  EXPECT_EQ(s.workload.prompt.tokens, prompt.tokens);
  EXPECT_DOUBLE_EQ(s.serving.engine_overhead_ms, l.get_double("serving.engine_overhead_ms"));
  EXPECT_EQ(s.serving.vm_price_usd_per_hour, catalog().vm_size("Standard_ND96isr_H100_v5").price_usd_per_hour);
  EXPECT_EQ(s.serving.replicas, 2);
}

}  // namespace
}  // namespace clustersim::sim
