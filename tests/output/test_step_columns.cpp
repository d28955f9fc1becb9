// The /summary columns of `clustersim run` are all documented in docs/hdf5-schema.md, with their units.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/io/scenario.hpp"
#include "sim/output/step_report.hpp"
#include "sim/step/step_simulation.hpp"

namespace clustersim {
namespace {

TEST(StepColumns, EveryColumnIsDocumentedWithItsUnits) {
  sim::Scenario scenario;
  scenario.name = "x";
  sim::StepReport report;
  report.step_time = units::seconds(1.0);
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/hdf5-schema.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  for (const sim::SummaryColumn& c : sim::step_summary_columns(scenario, report)) {
    const auto row = text.find("| `" + c.name + "` | ");
    ASSERT_NE(row, std::string::npos) << c.name << " is not in docs/hdf5-schema.md";
    if (!c.units.empty()) {
      const std::string line = text.substr(row, text.find('\n', row) - row);
      EXPECT_NE(line.find("| " + c.units + " |"), std::string::npos) << c.name << ": " << line;
    }
  }
}

}  // namespace
}  // namespace clustersim
