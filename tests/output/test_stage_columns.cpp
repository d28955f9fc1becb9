// The per-stage columns of `clustersim run` (/runs/0/stages): values from the stage breakdowns, and every
// column documented with its units in docs/hdf5-schema.md's per-stage section.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "sim/output/step_report.hpp"
#include "sim/step/step_simulation.hpp"

namespace clustersim {
namespace {

sim::StepReport two_stage_report() {
  sim::StepReport r;
  r.step_time = units::seconds(2.0);
  r.pipeline.step_time = r.step_time;
  r.pipeline.stages.resize(2);
  sim::StageBreakdown& a = r.pipeline.stages[0];
  a.compute = units::seconds(1.0);
  a.tp_comm = units::seconds(0.25);
  a.pp_exposed = units::seconds(0.125);
  a.bubble = units::seconds(0.375);
  a.grad_sync = units::seconds(0.2);
  a.optimizer = units::seconds(0.05);
  a.finish = units::seconds(2.0);
  a.flops = units::flops(300e12);
  sim::StageBreakdown& b = r.pipeline.stages[1];
  b.compute = units::seconds(1.1);
  b.finish = units::seconds(1.9);
  b.flops = units::flops(100e12);
  return r;
}

const std::vector<double>& doubles(const sim::SummaryColumn& c) { return std::get<std::vector<double>>(c.values); }

TEST(StageColumns, OneRowPerStageFromTheBreakdowns) {
  const auto cols = sim::stage_columns(two_stage_report());
  std::map<std::string, const sim::SummaryColumn*> by_name;
  for (const auto& c : cols) by_name[c.name] = &c;
  const std::vector<std::string> expected = {"bubble_time_s",     "compute_time_s",    "exposed_cp_comm_s",
                                             "exposed_dp_comm_s", "exposed_ep_comm_s", "exposed_host_s", "exposed_pp_comm_s",
                                             "exposed_tp_comm_s", "finish_time_s",     "optimizer_time_s",
                                             "stage",             "tflops"};
  std::vector<std::string> names;
  for (const auto& [name, c] : by_name) names.push_back(name);
  EXPECT_EQ(names, expected);
  EXPECT_EQ(std::get<std::vector<int64_t>>(by_name.at("stage")->values), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(doubles(*by_name.at("compute_time_s")), (std::vector<double>{1.0, 1.1}));
  EXPECT_EQ(doubles(*by_name.at("exposed_tp_comm_s")), (std::vector<double>{0.25, 0.0}));
  EXPECT_EQ(doubles(*by_name.at("exposed_pp_comm_s")), (std::vector<double>{0.125, 0.0}));
  EXPECT_EQ(doubles(*by_name.at("bubble_time_s")), (std::vector<double>{0.375, 0.0}));
  EXPECT_EQ(doubles(*by_name.at("exposed_dp_comm_s")), (std::vector<double>{0.2, 0.0}));
  EXPECT_EQ(doubles(*by_name.at("optimizer_time_s")), (std::vector<double>{0.05, 0.0}));
  EXPECT_EQ(doubles(*by_name.at("finish_time_s")), (std::vector<double>{2.0, 1.9}));
  // 300 TFLOP in 2 s is 150 TFLOP/s; 100 TFLOP is 50 TFLOP/s.
  const auto& tflops = doubles(*by_name.at("tflops"));
  ASSERT_EQ(tflops.size(), 2u);
  EXPECT_DOUBLE_EQ(tflops[0], 150.0);
  EXPECT_DOUBLE_EQ(tflops[1], 50.0);
  EXPECT_EQ(by_name.at("tflops")->units, "TFLOP/s");
  for (const auto& c : cols) {
    if (c.name != "stage" && c.name != "tflops") {
      EXPECT_EQ(c.units, "s") << c.name;
    }
    EXPECT_FALSE(c.description.empty()) << c.name;
  }
}

TEST(StageColumns, NoStagesGiveEmptyColumnsAndZeroStepTimeGivesNaN) {
  sim::StepReport empty;
  for (const auto& c : sim::stage_columns(empty)) {
    EXPECT_EQ(std::visit([](const auto& v) { return v.size(); }, c.values), 0u) << c.name;
  }
  sim::StepReport r = two_stage_report();
  r.step_time = units::seconds(0.0);
  for (const auto& c : sim::stage_columns(r)) {
    if (c.name == "tflops") {
      EXPECT_TRUE(std::isnan(doubles(c)[0]));
    }
  }
}

TEST(StageColumns, EveryColumnIsDocumentedWithItsUnits) {
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/hdf5-schema.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const auto begin = text.find("## Per-stage columns written by `clustersim run`");
  ASSERT_NE(begin, std::string::npos) << "no per-stage section in docs/hdf5-schema.md";
  const auto end = text.find("\n## ", begin + 1);
  const std::string section = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  for (const sim::SummaryColumn& c : sim::stage_columns(two_stage_report())) {
    const auto row = section.find("| `" + c.name + "` | ");
    ASSERT_NE(row, std::string::npos) << c.name << " is not in the per-stage table of docs/hdf5-schema.md";
    const std::string line = section.substr(row, section.find('\n', row) - row);
    EXPECT_NE(line.find("| " + c.units + " |"), std::string::npos) << c.name << ": " << line;
  }
}

}  // namespace
}  // namespace clustersim
