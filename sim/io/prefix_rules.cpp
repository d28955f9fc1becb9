// [serving] prefix caching and [workload]'s prompt content (issue 30; serving_scenario_rules.hpp): a shared system
// prompt and multi-turn sessions.
#include <string>

#include "sim/io/loader.hpp"
#include "sim/io/serving_scenario_rules.hpp"

namespace clustersim::sim::detail {

void check_prefix_caching(Loader& l) {
  auto given = [&](const char* leaf) { return l.find_node("workload", leaf) != nullptr; };
  const char* content[] = {"system_prompt_tokens", "system_prompt_share", "system_prompts", "turns", "think_time_s"};
  if (l.has("workload.trace")) {
    for (const char* leaf : content) {
      if (given(leaf)) {
        l.fail_at(std::string("workload.") + leaf, "a trace gives lengths, not prompt content: drop workload.trace "
                                                   "or this key");
      }
    }
  }
  const bool system_prompt = l.get_int("workload.system_prompt_tokens") > 0;
  for (const char* leaf : {"system_prompt_share", "system_prompts"}) {
    if (given(leaf) && !system_prompt) {
      l.fail_at(std::string("workload.") + leaf, "needs a system prompt: give workload.system_prompt_tokens > 0");
    }
  }
  const int64_t turns = l.get_int("workload.turns");
  if (given("think_time_s") && turns < 2) {
    l.fail_at("workload.think_time_s", "a think time is between a session's turns: give workload.turns >= 2");
  }
  if (turns > 1 && l.get_string("workload.arrival") == "closed_loop") {
    l.fail_at("workload.turns", "a closed loop's clients send in list order: multi-turn sessions need an open loop "
                                "(arrival = \"poisson\", \"gamma\" or \"offline\")");
  }
  if (turns > 1 && !l.has("workload.requests") && l.has("workload.rate_per_s")) {
    // The sessions' turns count against the simulation's request budget (workload.requests' bound).
    const double requests = l.get_double("workload.rate_per_s") * l.get_double("workload.duration_s") *
                            static_cast<double>(turns);
    if (requests > 2e6) {
      l.fail_at("workload.turns", "rate x duration x turns = " + std::to_string(static_cast<int64_t>(requests)) +
                                      " requests, over the simulation's budget of 2,000,000");
    }
  }
  if (l.get_string("serving.routing") == "prefix_aware" && !l.get_bool("serving.prefix_caching")) {
    l.fail_at("serving.routing", "prefix_aware routing follows the replicas' prefix caches: give "
                                 "serving.prefix_caching = true");
  }
}

}  // namespace clustersim::sim::detail
