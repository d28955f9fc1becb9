// Golden steps of every shipped scenario (STYLE: golden regression with an explicit update flag): the step
// time, its breakdown and the engine fingerprint. A model change that moves a prediction must update
// tests/regression/golden/step_times.csv on purpose:
//   CLUSTERSIM_UPDATE_GOLDEN=1 ./build/tests/regression/test_regression --gtest_filter='Golden.*'
// and the commit shows the moved numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/support/cli.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(CLUSTERSIM_SOURCE_DIR) / "tests/regression/golden/step_times.csv";

/// What is pinned per scenario: the step time, its breakdown on the critical stage (so that time moved from
/// the bubble to exposed communication shows), and the engine's determinism fingerprint of the step.
struct Pinned {
  std::vector<double> seconds;  ///< kColumns, in order
  uint64_t fingerprint = 0;
};
const std::vector<std::string> kColumns{"step_time_s", "compute_s",  "tp_comm_s",   "pp_exposed_s",
                                        "bubble_s",    "grad_sync_s", "optimizer_s"};

Pinned pin(const sim::StepReport& r) {
  const sim::StageBreakdown& c = r.critical;
  return {{r.step_time.value(), c.compute.value(), c.tp_comm.value(), c.pp_exposed.value(), c.bubble.value(),
           c.grad_sync.value(), c.optimizer.value()},
          r.pipeline.fingerprint};
}

std::map<std::string, Pinned> read_golden() {
  std::map<std::string, Pinned> golden;
  std::ifstream in(kGolden);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("scenario,", 0) == 0) continue;
    std::istringstream fields(line);
    std::string name, field;
    std::getline(fields, name, ',');
    Pinned p;
    for (size_t k = 0; k < kColumns.size() && std::getline(fields, field, ','); ++k) {
      p.seconds.push_back(std::strtod(field.c_str(), nullptr));
    }
    if (std::getline(fields, field, ',')) p.fingerprint = std::strtoull(field.c_str(), nullptr, 16);
    golden[name] = std::move(p);
  }
  return golden;
}

TEST(Golden, StepTimesBreakdownsAndFingerprintsOfShippedScenariosAreUnchanged) {
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  std::map<std::string, Pinned> now;
  for (const fs::path& scenario : testing::shipped_scenarios()) {
    const sim::Scenario sc = sim::load_scenario(fs::path(CLUSTERSIM_SOURCE_DIR) / scenario, {}, catalog);
    now[scenario.generic_string()] = pin(sim::simulate_scenario(sc, catalog));
  }
  if (const char* update = std::getenv("CLUSTERSIM_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream out(kGolden);
    out << "# Every shipped scenario's step: time and breakdown of the critical stage (s), and the engine's\n"
        << "# determinism fingerprint (hex); see tests/regression/test_golden.cpp.\n"
        << "scenario";
    for (const auto& c : kColumns) out << ',' << c;
    out << ",fingerprint\n";
    for (const auto& [name, p] : now) {
      out << name;
      for (const double v : p.seconds) {
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%.9g", v);
        out << ',' << buffer;
      }
      char hex[32];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(p.fingerprint));
      out << ',' << hex << '\n';
    }
    GTEST_SKIP() << "golden file rewritten: " << kGolden;
  }
  const auto golden = read_golden();
  for (const auto& [name, p] : now) {
    const auto it = golden.find(name);
    if (it == golden.end()) {
      ADD_FAILURE() << name << " has no golden step; rerun with CLUSTERSIM_UPDATE_GOLDEN=1";
      continue;
    }
    ASSERT_EQ(it->second.seconds.size(), kColumns.size()) << name << ": malformed golden row";
    for (size_t k = 0; k < kColumns.size(); ++k) {
      // 9 significant digits are stored: equal to 1e-7 of the step (a component may be 0).
      EXPECT_NEAR(p.seconds[k], it->second.seconds[k], 1e-7 * it->second.seconds[0])
          << name << ": " << kColumns[k] << " predicted " << p.seconds[k] << " s, golden " << it->second.seconds[k];
    }
    // The same events in the same order: any change to the step's event sequence shows here, even one that
    // leaves the times equal.
    EXPECT_EQ(p.fingerprint, it->second.fingerprint) << name << ": the engine fingerprint changed";
  }
  for (const auto& [name, p] : golden) {
    EXPECT_TRUE(now.count(name)) << name << " is in the golden file but not shipped";
  }
}

}  // namespace
}  // namespace clustersim
