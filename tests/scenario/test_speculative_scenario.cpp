// Speculative decoding and FP4 keys of a serving scenario (issue 30): what they load, and a located error for
// each bad value or combination.
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
const fs::path kRoot = fs::path(CLUSTERSIM_SOURCE_DIR);
const fs::path kBase = kRoot / "scenarios" / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";
const fs::path kEagle = kRoot / "scenarios" / "serving" / "llama3-70b-eagle-speculative-nd-h100.toml";
const fs::path kFp4 = kRoot / "scenarios" / "serving" / "llama31-405b-fp4-nd-gb200.toml";

using testing::catalog;

constexpr auto& error_of = testing::serving_scenario_error;

void expect_error(const fs::path& path, const std::vector<std::string>& overrides, const std::string& located) {
  const std::string e = error_of(path, overrides);
  EXPECT_NE(e.find(located), std::string::npos) << e;
  EXPECT_NE(e.find(": key '"), std::string::npos) << e;  // after file:line:column (the file's or a --set's)
}

TEST(SpeculativeScenario, LoadsTheProposerAndItsAcceptance) {
  const ServingScenario eagle = load_serving_scenario(kEagle, {}, catalog());
  ASSERT_TRUE(eagle.serving.speculative.has_value());
  EXPECT_EQ(eagle.serving.speculative->method, "eagle");
  EXPECT_EQ(eagle.serving.speculative->tokens, 3);
  EXPECT_DOUBLE_EQ(eagle.serving.speculative->acceptance, 0.8);
  EXPECT_EQ(eagle.serving.speculative->layers, 1);
  EXPECT_FALSE(load_serving_scenario(kBase, {}, catalog()).serving.speculative.has_value());
  const ServingScenario draft = load_serving_scenario(
      kBase,
      {"serving.speculative_method=\"draft\"", "serving.speculative_tokens=4", "serving.speculative_acceptance=0.7",
       "serving.draft_layers=16", "serving.draft_hidden_size=2048", "serving.draft_num_attention_heads=32",
       "serving.draft_num_query_groups=8", "serving.draft_ffn_hidden_size=8192"},
      catalog());
  EXPECT_EQ(draft.serving.speculative->hidden_size, 2048);
  EXPECT_EQ(draft.serving.speculative->num_query_groups, 8);
}

TEST(SpeculativeScenario, BadValuesAndCombinationsAreLocated) {
  expect_error(kBase, {"serving.speculative_method=\"medusa\""},
               "key 'serving.speculative_method': must be one of draft, eagle, mtp");
  expect_error(kEagle, {"serving.speculative_tokens=0"}, "key 'serving.speculative_tokens': must be in [1, 16]");
  expect_error(kEagle, {"serving.speculative_tokens=17"}, "key 'serving.speculative_tokens'");
  expect_error(kEagle, {"serving.speculative_acceptance=1.2"}, "key 'serving.speculative_acceptance': must be in");
  expect_error(kEagle, {"serving.speculative_acceptance=-0.1"}, "key 'serving.speculative_acceptance'");
  expect_error(kEagle, {"serving.draft_layers=0"}, "key 'serving.draft_layers'");
  expect_error(kBase, {"serving.speculative_tokens=3"},
               "key 'serving.speculative_tokens': needs serving.speculative_method");
  expect_error(kBase, {"serving.draft_hidden_size=2048"},
               "key 'serving.draft_hidden_size': needs serving.speculative_method");
  expect_error(kBase, {"serving.speculative_method=\"eagle\"", "serving.speculative_acceptance=0.8"},
               "key 'serving.speculative_tokens': required with serving.speculative_method");
  expect_error(kBase, {"serving.speculative_method=\"eagle\"", "serving.speculative_tokens=3"},
               "key 'serving.speculative_acceptance': required with serving.speculative_method");
  expect_error(kEagle, {"serving.draft_hidden_size=2048"},
               "key 'serving.draft_hidden_size': eagle heads take the model's width");
  expect_error(kEagle, {"serving.scheduler_steps=4"}, "key 'serving.scheduler_steps'");
  expect_error(kEagle, {"serving.pipeline=2"}, "key 'serving.speculative_method': speculative decoding is modelled");
  const std::vector<std::string> draft{"serving.speculative_method=\"draft\"", "serving.draft_layers=16",
                                       "serving.draft_hidden_size=2048", "serving.draft_num_attention_heads=32",
                                       "serving.draft_ffn_hidden_size=8192"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> o = draft;
    o.insert(o.end(), more.begin(), more.end());
    return o;
  };
  expect_error(kEagle, with({"serving.draft_num_attention_heads=30"}),
               "key 'serving.draft_num_attention_heads': serving.tensor (4) must divide it, got 30");
  expect_error(kEagle, with({"serving.draft_num_query_groups=3"}), "key 'serving.draft_num_query_groups'");
  expect_error(kEagle, with({"serving.draft_hidden_size=2050"}),
               "key 'serving.draft_hidden_size': must be a multiple of draft_num_attention_heads (32)");
  expect_error(kEagle, with({"serving.draft_ffn_hidden_size=8190"}),
               "key 'serving.draft_ffn_hidden_size': serving.tensor (4) must divide it");
  std::vector<std::string> no_width = draft;
  no_width.erase(no_width.begin() + 2);
  expect_error(kEagle, no_width, "key 'serving.draft_hidden_size': required with serving.speculative_method = \"draft\"");
}

TEST(SpeculativeScenario, AcceptanceByPositionGivesOneRatePerDraftedToken) {
  const ServingScenario s = load_serving_scenario(
      kBase, {"serving.speculative_method=\"eagle\"", "serving.speculative_tokens=3",
              "serving.speculative_acceptance_by_position=[0.9, 0.8, 0.7]"},
      catalog());
  EXPECT_EQ(s.serving.speculative->acceptance_by_position, (std::vector<double>{0.9, 0.8, 0.7}));
  expect_error(kEagle, {"serving.speculative_acceptance_by_position=[0.9, 0.8, 0.7]"},
               "key 'serving.speculative_acceptance_by_position': give one rate or the rates by position, not both");
  const std::vector<std::string> eagle{"serving.speculative_method=\"eagle\"", "serving.speculative_tokens=3"};
  auto with = [&](const std::string& more) {
    std::vector<std::string> o = eagle;
    o.push_back(more);
    return o;
  };
  expect_error(kBase, with("serving.speculative_acceptance_by_position=[0.9, 0.8]"),
               "key 'serving.speculative_acceptance_by_position': needs one rate per drafted position: "
               "serving.speculative_tokens = 3, got 2");
  expect_error(kBase, with("serving.speculative_acceptance_by_position=[0.9, 1.5, 0.7]"),
               "key 'serving.speculative_acceptance_by_position': must be each in [0, 1], got 1.5");
  expect_error(kBase, with("serving.speculative_acceptance_by_position=[]"),
               "key 'serving.speculative_acceptance_by_position': expected an array of numbers");
  expect_error(kBase, with("serving.speculative_acceptance_by_position=[0.9, \"high\", 0.7]"),
               "key 'serving.speculative_acceptance_by_position': expected numbers, got string");
  expect_error(kBase, {"serving.speculative_acceptance_by_position=[0.9]"},
               "key 'serving.speculative_acceptance_by_position': needs serving.speculative_method");
}

TEST(Fp4Scenario, NeedsFp4TensorCores) {
  const ServingScenario fp4 = load_serving_scenario(kFp4, {}, catalog());
  EXPECT_EQ(fp4.serving.precision, "fp4");
  expect_error(kBase, {"serving.precision=\"fp4\""},
               "key 'serving.precision': the H100-SXM5-80GB of Standard_ND96isr_H100_v5 has no FP4 tensor cores");
  expect_error(kBase, {"serving.vm_size=\"Standard_ND96isr_H200_v5\"", "serving.precision=\"fp4\""},
               "has no FP4 tensor cores");
  expect_error(kBase, {"serving.precision=\"fp2\""}, "key 'serving.precision': must be one of bf16, fp16, fp8, int8, fp4");
}

}  // namespace
}  // namespace clustersim::sim
