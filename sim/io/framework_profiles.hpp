// Framework profiles: the defaults of scenario keys that each training framework's published recipes really
// use (training.framework; docs/scenario-format.md, "Framework profiles"). A key given in the scenario or by
// --set always wins; a key a profile does not name keeps the parameter table's default.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace clustersim::sim::detail {

/// One default of one framework: `key` takes the TOML literal `value`; `source` says where the setting comes
/// from (the framework's code or recipe).
struct FrameworkDefault {
  std::string_view framework;
  std::string_view key;
  std::string_view value;
  std::string_view source;
};

/// The framework names training.framework accepts, in the order of the documentation.
std::span<const std::string_view> framework_names();
/// Every profile default, grouped by framework.
std::span<const FrameworkDefault> framework_defaults();
/// The default of `key` under `framework`, or nullptr.
const FrameworkDefault* find_framework_default(std::string_view framework, std::string_view key);
/// The profiles as a Markdown table (docs/scenario-format.md), generated from framework_defaults().
std::string framework_profiles_markdown();

}  // namespace clustersim::sim::detail
