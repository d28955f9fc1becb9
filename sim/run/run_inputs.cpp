#include "sim/run/run_inputs.hpp"

#include <toml++/toml.h>

#include <optional>
#include <string>

#include "sim/io/scenario.hpp"

namespace clustersim::sim {

namespace {

/// The string value of `dotted_key` in the resolved scenario text, if it is there.
std::optional<std::string> resolved_string(const std::string& resolved_toml, std::string_view dotted_key) {
#if TOML_EXCEPTIONS
  try {
    const toml::table table = toml::parse(resolved_toml);
    return table.at_path(dotted_key).value<std::string>();
  } catch (const toml::parse_error&) {
    return std::nullopt;  // the loader wrote this text: it parses; nothing to add if it ever does not
  }
#else
  const toml::parse_result result = toml::parse(resolved_toml);
  if (!result) return std::nullopt;
  return result.table().at_path(dotted_key).value<std::string>();
#endif
}

}  // namespace

std::vector<InputFile> run_inputs(const Scenario& scenario) {
  std::vector<InputFile> inputs{{scenario.source_path, "the scenario file"}};
  if (const auto trace = resolved_string(scenario.resolved_toml, "reliability.spot_eviction_trace")) {
    inputs.push_back({scenario.source_path.parent_path() / *trace, "the eviction trace"});
  }
  return inputs;
}

std::vector<InputFile> run_inputs(const ServingScenario& scenario) {
  std::vector<InputFile> inputs{{scenario.source_path, "the scenario file"}};
  if (scenario.workload.trace) inputs.push_back({*scenario.workload.trace, "the request trace"});
  return inputs;
}

}  // namespace clustersim::sim
