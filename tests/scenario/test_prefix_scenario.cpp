// Prefix caching's keys (issue 30): serving.prefix_caching, serving.routing = "prefix_aware", and [workload]'s
// system prompt and multi-turn sessions, their defaults and their located errors.
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
const fs::path kChat = kRoot / "scenarios" / "serving" / "llama3-8b-chat-prefix.toml";
const fs::path kSynthetic = kRoot / "scenarios" / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";
const fs::path kTrace = kRoot / "scenarios" / "serving" / "llama2-70b-azure-conv-trace.toml";

using testing::catalog;

constexpr auto& error_of = testing::serving_scenario_error;

void expect_error(const fs::path& path, const std::vector<std::string>& overrides, const std::string& what) {
  const std::string e = error_of(path, overrides);
  EXPECT_NE(e.find(what), std::string::npos) << e;
}

TEST(PrefixScenario, LoadsTheChatScenarioAndDefaultsOff) {
  const ServingScenario s = load_serving_scenario(kChat, {}, catalog());
  EXPECT_TRUE(s.serving.prefix_caching);
  EXPECT_EQ(s.serving.routing, "prefix_aware");
  EXPECT_EQ(s.workload.system_prompt_tokens, 1024);
  EXPECT_DOUBLE_EQ(s.workload.system_prompt_share, 0.9);
  EXPECT_EQ(s.workload.system_prompts, 4);
  EXPECT_EQ(s.workload.turns, 4);
  EXPECT_DOUBLE_EQ(s.workload.think_time_s, 30.0);
  const ServingScenario plain = load_serving_scenario(kSynthetic, {}, catalog());
  EXPECT_FALSE(plain.serving.prefix_caching);
  EXPECT_EQ(plain.workload.system_prompt_tokens, 0);
  EXPECT_EQ(plain.workload.turns, 1);
}

TEST(PrefixScenario, BadValuesAreLocated) {
  expect_error(kChat, {"serving.prefix_caching=1"}, "key 'serving.prefix_caching'");
  expect_error(kChat, {"serving.routing=\"prefix\""}, "key 'serving.routing'");
  expect_error(kChat, {"workload.system_prompt_tokens=-1"}, "key 'workload.system_prompt_tokens'");
  expect_error(kChat, {"workload.system_prompt_share=1.5"}, "key 'workload.system_prompt_share'");
  expect_error(kChat, {"workload.system_prompt_share=-0.1"}, "key 'workload.system_prompt_share'");
  expect_error(kChat, {"workload.system_prompts=0"}, "key 'workload.system_prompts'");
  expect_error(kChat, {"workload.turns=0"}, "key 'workload.turns'");
  expect_error(kChat, {"workload.turns=1001"}, "key 'workload.turns'");
  expect_error(kChat, {"workload.think_time_s=-1"}, "key 'workload.think_time_s'");
}

TEST(PrefixScenario, InconsistentKeysAreLocated) {
  expect_error(kSynthetic, {"serving.routing=\"prefix_aware\""},
               "--set:1:17: key 'serving.routing': prefix_aware routing follows the replicas' prefix caches");
  expect_error(kSynthetic, {"workload.system_prompt_share=0.5"},
               "key 'workload.system_prompt_share': needs a system prompt");
  expect_error(kSynthetic, {"workload.system_prompts=3"}, "key 'workload.system_prompts': needs a system prompt");
  expect_error(kSynthetic, {"workload.think_time_s=10"}, "key 'workload.think_time_s': a think time is between");
  expect_error(kTrace, {"workload.turns=3"}, "key 'workload.turns': a trace gives lengths, not prompt content");
  expect_error(kTrace, {"workload.system_prompt_tokens=100"}, "key 'workload.system_prompt_tokens': a trace");
  expect_error(kSynthetic, {"workload.turns=1000"}, "key 'workload.turns': rate x duration x turns");
  const fs::path closed = kRoot / "scenarios" / "validation-serving" / "nim-llm-benchmarking-perf-66.toml";
  expect_error(closed, {"workload.turns=2"}, "key 'workload.turns': a closed loop's clients send in list order");
}

}  // namespace
}  // namespace clustersim::sim
