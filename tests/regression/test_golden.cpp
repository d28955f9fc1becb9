// Golden step times of every shipped scenario (STYLE: golden regression with an explicit update flag).
// A model change that moves a prediction must update tests/regression/golden/step_times.csv on purpose:
//   CLUSTERSIM_UPDATE_GOLDEN=1 ./build/tests/regression/test_regression --gtest_filter='Golden.*'
// and the commit shows the moved numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/support/cli.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(CLUSTERSIM_SOURCE_DIR) / "tests/regression/golden/step_times.csv";

std::map<std::string, double> read_golden() {
  std::map<std::string, double> golden;
  std::ifstream in(kGolden);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("scenario,", 0) == 0) continue;
    const auto comma = line.find(',');
    golden[line.substr(0, comma)] = std::strtod(line.c_str() + comma + 1, nullptr);
  }
  return golden;
}

TEST(Golden, StepTimesOfShippedScenariosAreUnchanged) {
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  std::map<std::string, double> now;
  for (const fs::path& scenario : testing::shipped_scenarios()) {
    const sim::Scenario sc = sim::load_scenario(fs::path(CLUSTERSIM_SOURCE_DIR) / scenario, {}, catalog);
    now[scenario.generic_string()] = sim::simulate_scenario(sc, catalog).step_time.value();
  }
  if (const char* update = std::getenv("CLUSTERSIM_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream out(kGolden);
    out << "# Predicted step time (s) of every shipped scenario; see tests/regression/test_golden.cpp.\n"
        << "scenario,step_time_s\n";
    for (const auto& [name, t] : now) {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.9g", t);
      out << name << ',' << buffer << '\n';
    }
    GTEST_SKIP() << "golden file rewritten: " << kGolden;
  }
  const auto golden = read_golden();
  for (const auto& [name, t] : now) {
    const auto it = golden.find(name);
    if (it == golden.end()) {
      ADD_FAILURE() << name << " has no golden step time; rerun with CLUSTERSIM_UPDATE_GOLDEN=1";
      continue;
    }
    EXPECT_NEAR(t / it->second, 1.0, 1e-7) << name << ": predicted " << t << " s, golden " << it->second << " s";
  }
  for (const auto& [name, t] : golden) {
    EXPECT_TRUE(now.count(name)) << name << " is in the golden file but not shipped";
  }
}

}  // namespace
}  // namespace clustersim
