// Serving sweeps (issue 15): a serving scenario's [sweep] runs each fleet with run_serving_scenario and ranks
// them by cost per million output tokens, the fleets that meet the [slo] first (cost_per_mtoken_under_slo).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/sweep/sweep_table.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kFleet = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "llama3-70b-serving-fleet.toml";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

double value_of(const SweepRow& r, const std::string& name) {
  for (size_t k = 0; k < r.meta->size(); ++k) {
    if ((*r.meta)[k].name == name) return std::get<double>(r.values[k]);
  }
  ADD_FAILURE() << "no column " << name;
  return std::nan("");
}

TEST(ServingSweep, RanksTheFleetsThatMeetTheSloFirstCheapestFirst) {
  // Two minutes of traffic keep the test short; the grid is the shipped one (3 TP sizes x 6 replica counts).
  const LoadedSweep sweep = load_sweep(kFleet, {"workload.duration_s=120"}, catalog());
  ASSERT_TRUE(sweep.serving);
  EXPECT_EQ(sweep.spec.objective, SweepObjective::cost_per_mtoken_under_slo);
  ASSERT_EQ(sweep.points.size(), 18u);
  std::vector<const SweepPoint*> points;
  for (const SweepPoint& p : sweep.points) points.push_back(&p);
  SweepRunOptions options;
  options.jobs = 2;
  const std::vector<SweepRow> rows = run_sweep(sweep, catalog(), points, options);
  std::vector<const SweepRow*> all;
  for (const SweepRow& r : rows) {
    EXPECT_EQ(r.status, "ok") << r.index << ": " << r.reason;
    all.push_back(&r);
  }
  const std::vector<const SweepRow*> ranked = rank_points(sweep, all);
  ASSERT_EQ(ranked.size(), 18u);
  // Fleets that meet the SLO come first, each group by its cost, lowest first.
  bool meeting = true;
  double last = 0.0;
  for (const SweepRow* r : ranked) {
    const bool meets = value_of(*r, "meets_slo") == 1.0;
    const double cost = value_of(*r, "usd_per_million_output_tokens");
    if (meeting && !meets) {
      meeting = false;
      last = 0.0;
    }
    EXPECT_FALSE(!meeting && meets) << "a fleet that meets the SLO ranked after one that does not";
    EXPECT_GE(cost, last) << r->index;
    last = cost;
    // meets_slo is what its p99s say against the targets.
    EXPECT_EQ(meets, value_of(*r, "ttft_p99_s") <= 2.0 && value_of(*r, "tpot_p99_s") <= 0.1) << r->index;
  }
  EXPECT_EQ(value_of(*ranked.front(), "meets_slo"), 1.0);
  // One replica of TP 2 cannot keep up with 20 requests/s of a 70B model.
  for (const SweepRow& r : rows) {
    const SweepPoint& p = sweep.points[static_cast<size_t>(r.index)];
    if (p.find("serving.tensor")->value == ScalarValue{int64_t{2}} &&
        p.find("serving.replicas")->value == ScalarValue{int64_t{1}}) {
      EXPECT_EQ(value_of(r, "meets_slo"), 0.0);
    }
  }
  const std::string text = format_ranking(sweep, all);
  EXPECT_NE(text.find("fleets ranked by cost per million output tokens, those that meet the SLO (p99 TTFT <= 2000 "
                      "ms, p99 TPOT <= 100 ms) first"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cheapest fleet that meets the SLO: run " + std::to_string(ranked.front()->index)),
            std::string::npos)
      << text;
}

TEST(ServingSweep, ObjectivesAndLayoutSearchKeepToTheirKind) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-test-serving-sweep-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream in(kFleet);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    const fs::path p = dir / "s.toml";
    std::ofstream(p) << t;
    return p;
  };
  const auto error_of = [](const fs::path& p) {
    try {
      (void)read_sweep(p);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error_of(with("objective = \"cost_per_mtoken_under_slo\"", "objective = \"step_time\""));
  EXPECT_NE(e.find("key 'sweep.objective': a serving scenario's sweep ranks by \"cost_per_mtoken_under_slo\""),
            std::string::npos)
      << e;
  e = error_of(with("objective = \"cost_per_mtoken_under_slo\"", "parallelism = \"auto\""));
  EXPECT_NE(e.find("key 'sweep.parallelism': a serving scenario has no training layout"), std::string::npos) << e;
  // A serving sweep without an objective ranks by its one objective.
  EXPECT_EQ(read_sweep(with("objective = \"cost_per_mtoken_under_slo\"", "")).objective,
            SweepObjective::cost_per_mtoken_under_slo);
  // And a training sweep may not take it.
  const fs::path training = dir / "t.toml";
  {
    std::ifstream t(fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "llama2-7b-which-vm.toml");
    std::string s((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
    const std::string from = "objective = \"cost_per_token\"";
    ASSERT_NE(s.find(from), std::string::npos);
    s.replace(s.find(from), from.size(), "objective = \"cost_per_mtoken_under_slo\"");
    std::ofstream(training) << s;
  }
  e = error_of(training);
  EXPECT_NE(e.find("cost_per_mtoken_under_slo ranks serving fleets: it needs a [serving] scenario"), std::string::npos)
      << e;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clustersim::sim
