// model_rules: [model]'s shape defaults and consistency, the features that need Megatron-Core, and those serving
// does not model, called on a checked Loader and through load_scenario.
#include <gtest/gtest.h>

#include "sim/io/model_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

TEST(ModelRules, ShapeDefaultsFollowTheHeadsAndTheWidth) {
  const TempScenario file(kTraining);
  detail::Loader l = checked_loader(file.path());
  detail::check_model_shape(l);
  EXPECT_EQ(l.get_int("model.num_query_groups"), 16);   // = the heads
  EXPECT_EQ(l.get_int("model.ffn_hidden_size"), 8192);  // 4 x 2048
  EXPECT_EQ(l.get_int("model.moe_ffn_hidden_size"), 8192);
  EXPECT_EQ(l.get_int("model.kv_channels"), 128);  // 2048 / 16
  const models::ModelConfig m = detail::model_keys(l);
  EXPECT_EQ(m.hidden_size, 2048);
  EXPECT_EQ(m.num_query_groups, 16);
}

TEST(ModelRules, WidthMustDivideByTheHeadsUnlessTheHeadWidthIsGiven) {
  const auto shape = [](detail::Loader& l) { detail::check_model_shape(l); };
  EXPECT_EQ(rule_error(kTraining, {"model.hidden_size=2056"}, shape),
            "--set:1:19: key 'model.hidden_size': must be divisible by model.num_attention_heads (16), got 2056");
  EXPECT_EQ(rule_error(kTraining, {"model.hidden_size=2056", "model.kv_channels=128"}, shape), "");
  EXPECT_EQ(rule_error(kTraining, {"model.num_query_groups=3"}, shape),
            "--set:1:24: key 'model.num_query_groups': must divide model.num_attention_heads (16), got 3");
}

TEST(ModelRules, MoeAndMultiTokenPredictionNeedMegatronCore) {
  const auto framework = [](detail::Loader& l) { detail::check_model_framework(l); };
  EXPECT_NE(rule_error(kTraining, {"model.num_experts=8", "training.framework=deepspeed"}, framework)
                .find("key 'model.num_experts': MoE is modelled as Megatron-Core runs it: needs training.framework "
                      "megatron-core or nemo, got deepspeed"),
            std::string::npos);
  EXPECT_EQ(rule_error(kTraining, {"model.num_experts=8", "training.framework=megatron-core"}, framework), "");
  // Through the whole load, at the same key.
  EXPECT_NE(error_of(kTraining, {"model.mtp_num_layers=1", "training.framework=deepspeed"})
                .find("key 'model.mtp_num_layers': multi-token prediction is modelled as Megatron-Core runs it"),
            std::string::npos);
}

TEST(ModelRules, ServingDoesNotModelMultiLatentAttentionYet) {
  const auto serving = [](detail::Loader& l) { detail::check_model_for_serving(l); };
  EXPECT_EQ(rule_error(kServing, {}, serving), "");
  EXPECT_NE(rule_error(kServing, {"model.mtp_num_layers=1"}, serving)
                .find("key 'model.mtp_num_layers': multi-token prediction is not modelled for serving"),
            std::string::npos);
}

}  // namespace
}  // namespace clustersim::sim
