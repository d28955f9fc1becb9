// Test support: the shipped catalog (models/hardware/catalog/), loaded once per test binary, and the error of
// loading a serving scenario with overrides.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim::testing {

/// The catalog the CLI loads (models::Catalog::default_directory()); loaded on first use, then shared.
inline const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// what() of the sim::ScenarioError of loading `path` as a serving scenario with `overrides` (KEY=VALUE); a test
/// failure, and "", when it loads.
inline std::string serving_scenario_error(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  try {
    (void)sim::load_serving_scenario(path, overrides, catalog());
  } catch (const sim::ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ScenarioError";
  return {};
}

}  // namespace clustersim::testing
