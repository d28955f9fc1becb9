// reference_rules: what [reference] gives for each kind of scenario, and the keys of the other kind's reference.
#include <gtest/gtest.h>

#include "sim/io/reference_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

TEST(ReferenceRules, TrainingReferenceGivesAMeasurement) {
  const std::string source_only = kTraining + "\n[reference]\nsource = \"a paper\"\n";
  const auto reference = [](detail::Loader& l) { detail::check_training_reference(l); };
  EXPECT_EQ(rule_error(source_only, {}, reference),
            "FILE:18:1: key 'reference': needs at least one of tflops_per_gpu, step_time_s, tokens_per_s_per_gpu, mfu");
  EXPECT_EQ(rule_error(source_only, {"reference.mfu=0.4"}, reference), "");
  EXPECT_EQ(error_of(source_only), rule_error(source_only, {}, reference));  // the load reports the same
}

TEST(ReferenceRules, ServingReferenceGivesMetricAndValue) {
  const std::string metric_only =
      kServing + "\n[reference]\nsource = \"a benchmark\"\nmetric = \"output_tokens_per_s\"\n";
  const auto reference = [](detail::Loader& l) { detail::check_serving_reference(l); };
  EXPECT_EQ(rule_error(metric_only, {}, reference),
            "FILE:23:1: key 'reference.value': a serving scenario's [reference] needs metric and value");
  EXPECT_EQ(rule_error(metric_only, {"reference.value=1000"}, reference), "");
}

TEST(ReferenceRules, EachKindRefusesTheOthersMetrics) {
  EXPECT_EQ(error_of(kTraining + "\n[reference]\nsource = \"x\"\nmetric = \"ttft_p50_ms\"\n"),
            "FILE:20:1: key 'reference.metric': a serving scenario's key: a training run's [reference] gives "
            "tflops_per_gpu, step_time_s, tokens_per_s_per_gpu or mfu");
  EXPECT_EQ(error_of(kServing + "\n[reference]\nsource = \"x\"\nmfu = 0.5\n", {}, true),
            "FILE:25:1: key 'reference.mfu': a training metric: a serving scenario's [reference] gives metric and "
            "value");
}

}  // namespace
}  // namespace clustersim::sim
