// Helpers of the rules units' tests (test_*_rules.cpp): small scenarios written to a temporary file, loaded whole
// or through a Loader that has run the key table's checks, so that one rule can be called on its own.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/loader.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_kind.hpp"

namespace clustersim::sim::rules_test {

inline const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// The smallest valid training scenario: 4 ND H100 v5 VMs (32 GPUs), a 24-layer model, defaults elsewhere.
inline const std::string kTraining = R"(schema_version = 1
name = "rules"

[model]
num_layers = 24
hidden_size = 2048
num_attention_heads = 16
vocab_size = 51200
seq_length = 2048

[training]
global_batch_size = 512

[cluster]
vm_size = "Standard_ND96isr_H100_v5"
nodes = 4
)";

/// A small valid serving scenario: 2 replicas of a Llama-2-7B-like model at tensor 1 on ND H100 v5, 5 requests/s.
inline const std::string kServing = R"(schema_version = 1
name = "rules-serving"

[model]
num_layers = 32
hidden_size = 4096
num_attention_heads = 32
vocab_size = 32000
seq_length = 4096
mlp = "swiglu"
position_embedding = "rope"

[serving]
vm_size = "Standard_ND96isr_H100_v5"
replicas = 2
tensor = 1
precision = "bf16"

[workload]
rate_per_s = 5.0
duration_s = 60.0
)";

/// A scenario file under the temporary directory (unique to the process and the test), removed at the end.
class TempScenario {
 public:
  explicit TempScenario(const std::string& text, const std::string& side_name = {}, const std::string& side = {}) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("clustersim-rules-" + std::to_string(::getpid()) + "-" + std::string(info->test_suite_name()) + "-" +
            std::string(info->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "scenario.toml", std::ios::binary) << text;
    if (!side_name.empty()) std::ofstream(dir_ / side_name, std::ios::binary) << side;
  }
  ~TempScenario() { std::filesystem::remove_all(dir_); }
  TempScenario(const TempScenario&) = delete;
  TempScenario& operator=(const TempScenario&) = delete;
  [[nodiscard]] std::filesystem::path path() const { return dir_ / "scenario.toml"; }

 private:
  std::filesystem::path dir_;
};

/// what() of the ScenarioError of load_scenario (serving: load_serving_scenario) on `text` with `overrides`, the
/// file's path replaced by "FILE"; "" when it loads.
inline std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {},
                            bool serving = false) {
  const TempScenario file(text);
  try {
    if (serving) {
      (void)load_serving_scenario(file.path(), overrides, catalog());
    } else {
      (void)load_scenario(file.path(), overrides, catalog());
    }
  } catch (const ScenarioError& e) {
    std::string what = e.what();
    const std::string path = file.path().string();
    if (what.rfind(path, 0) == 0) what.replace(0, path.size(), "FILE");
    return what;
  }
  return {};
}

/// A Loader of `path` with `overrides` whose document has passed the key table's checks for its kind (structure,
/// types, ranges, defaults), ready for one rule.
inline detail::Loader checked_loader(const std::filesystem::path& path,
                                     const std::vector<std::string>& overrides = {}) {
  detail::Loader l(path);
  l.parse();
  l.apply_overrides(overrides);
  l.check_schema_version();
  const detail::ScenarioKind& kind = detail::kind_of(l);
  l.check_structure(kind);
  l.check_params(kind);
  return l;
}

/// Runs `rule` on a checked_loader and returns what() of its ScenarioError (the path replaced by "FILE"), or "".
template <typename Rule>
std::string rule_error(const std::string& text, const std::vector<std::string>& overrides, Rule rule) {
  const TempScenario file(text);
  detail::Loader l = checked_loader(file.path(), overrides);
  try {
    rule(l);
  } catch (const ScenarioError& e) {
    std::string what = e.what();
    const std::string path = file.path().string();
    if (what.rfind(path, 0) == 0) what.replace(0, path.size(), "FILE");
    return what;
  }
  return {};
}

}  // namespace clustersim::sim::rules_test
