// The sweep's results table (sim/sweep/sweep_table.hpp), from hand-made rows: column order and roles, numeric
// and label parameters, NaN for a missing result, the grid of a grid sweep, a merge of two shards equal to the
// whole, and the layout ranking.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <variant>
#include <vector>

#include "sim/errors.hpp"
#include "sim/sweep/summary_file.hpp"
#include "sim/sweep/sweep_table.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-test-sweep-table-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

/// A 2 x 2 grid sweep: parallelism.tensor in {1, 2} x training.precision in {"bf16", "fp16"}.
LoadedSweep grid_sweep() {
  LoadedSweep s;
  s.spec.axes = {{{"parallelism.tensor"}, {{int64_t{1}}, {int64_t{2}}}},
                 {{"training.precision"}, {{std::string("bf16")}, {std::string("fp16")}}}};
  int64_t i = 0;
  for (const int64_t t : {1, 2}) {
    for (const char* p : {"bf16", "fp16"}) {
      s.points.push_back(
          {i, static_cast<uint64_t>(100 + i), {{"parallelism.tensor", t}, {"training.precision", std::string(p)}}});
      ++i;
    }
  }
  return s;
}

const std::shared_ptr<const SweepMetaList>& results() {
  static const auto m = std::make_shared<const SweepMetaList>(
      SweepMetaList{{"step_time_s", "s", "step time", false}, {"memory_verdict", "", "verdict", true}});
  return m;
}

SweepRow row(int64_t index, double step_time) {
  SweepRow r;
  r.index = index;
  r.seed = static_cast<uint64_t>(100 + index);
  r.status = "ok";
  r.meta = results();
  r.values = {step_time, std::string("fits")};
  return r;
}

SweepRow invalid(int64_t index) {
  SweepRow r;
  r.index = index;
  r.seed = static_cast<uint64_t>(100 + index);
  r.status = "invalid";
  r.reason = "tensor does not divide the heads";
  return r;
}

const SummaryColumn& column(const SweepTable& t, const std::string& name) {
  for (const SummaryColumn& c : t.columns) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no column " + name);
}

TEST(SweepTable, IndexThenParametersThenResultsWithTheirRoles) {
  const LoadedSweep sweep = grid_sweep();
  const std::vector<SweepRow> rows{row(0, 1.5), invalid(1), row(2, 0.75), row(3, 0.5)};
  std::vector<const SweepRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  const SweepTable t = build_sweep_table(sweep, ptrs);
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"run_index", "seed", "status", "reason", "parallelism_tensor",
                                             "training_precision", "step_time_s", "memory_verdict"}));
  EXPECT_EQ(t.kinds, (std::vector<std::string>{"index", "index", "index", "index", "parameter", "parameter",
                                               "result", "result"}));
  // A numeric key is float64 with the key's unit; a string key is its labels without quotes.
  EXPECT_EQ(std::get<std::vector<double>>(column(t, "parallelism_tensor").values),
            (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(column(t, "parallelism_tensor").units, "GPUs");  // the key table's unit
  EXPECT_EQ(std::get<std::vector<std::string>>(column(t, "training_precision").values),
            (std::vector<std::string>{"bf16", "fp16", "bf16", "fp16"}));
  // The invalid point has no results: NaN and "".
  const auto& step = std::get<std::vector<double>>(column(t, "step_time_s").values);
  EXPECT_EQ(step[0], 1.5);
  EXPECT_TRUE(std::isnan(step[1]));
  EXPECT_EQ(std::get<std::vector<std::string>>(column(t, "memory_verdict").values)[1], "");
  EXPECT_EQ(std::get<std::vector<std::string>>(column(t, "reason").values)[1], "tensor does not divide the heads");
  EXPECT_EQ(t.param_names.at("training.precision"), "training_precision");
}

TEST(SweepTable, GridSweepReshapesResultsOverItsAxes) {
  const LoadedSweep sweep = grid_sweep();
  const std::vector<SweepRow> rows{row(0, 4.0), row(3, 1.0)};  // a shard's rows: cells 1 and 2 are NaN
  const SweepTable t = build_sweep_table(sweep, {&rows[0], &rows[1]});
  const auto axes = sweep_grid_axes(sweep, t);
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].name, "parallelism_tensor");
  EXPECT_EQ(std::get<std::vector<std::string>>(axes[1].values), (std::vector<std::string>{"bf16", "fp16"}));
  const auto grids = sweep_grids(axes, t);
  ASSERT_EQ(grids.size(), 1u);
  ASSERT_EQ(grids[0].datasets.size(), 1u);  // step_time_s; the string result has no grid
  const auto& cells = std::get<std::vector<double>>(grids[0].datasets[0].values);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0], 4.0);
  EXPECT_TRUE(std::isnan(cells[1]) && std::isnan(cells[2]));
  EXPECT_EQ(cells[3], 1.0);
  // A layout search is not a grid.
  LoadedSweep search = sweep;
  search.spec.auto_parallelism = true;
  EXPECT_TRUE(sweep_grid_axes(search, t).empty());
}

TEST(SweepTable, MergeOfTwoShardsEqualsTheWholeTable) {
  const LoadedSweep sweep = grid_sweep();
  const std::vector<SweepRow> rows{row(0, 1.5), invalid(1), row(2, 0.75), row(3, 0.5)};
  RunMetadata meta;
  meta.command_line = "clustersim sweep grid.toml";
  meta.scenario_toml = "name = 'grid'";
  const SweepTable whole = build_sweep_table(sweep, {&rows[0], &rows[1], &rows[2], &rows[3]});
  const SweepTable odd = build_sweep_table(sweep, {&rows[1], &rows[3]});   // no results in its first row
  const SweepTable even = build_sweep_table(sweep, {&rows[0], &rows[2]});
  const fs::path a = temp_file("odd.h5"), b = temp_file("even.h5");
  write_sweep_file(a, meta, odd, sweep_grid_axes(sweep, odd));
  write_sweep_file(b, meta, even, sweep_grid_axes(sweep, even));
  const MergedSweep merged = merge_sweep_files({a, b});
  EXPECT_EQ(merged.files, 2u);
  EXPECT_EQ(merged.points, 4u);
  EXPECT_EQ(merged.table.kinds, whole.kinds);
  ASSERT_EQ(merged.table.columns.size(), whole.columns.size());
  for (size_t k = 0; k < whole.columns.size(); ++k) {
    EXPECT_EQ(merged.table.columns[k].name, whole.columns[k].name);
    EXPECT_EQ(merged.table.columns[k].units, whole.columns[k].units);
    if (const auto* d = std::get_if<std::vector<double>>(&whole.columns[k].values)) {
      const auto& m = std::get<std::vector<double>>(merged.table.columns[k].values);
      ASSERT_EQ(m.size(), d->size());
      for (size_t i = 0; i < d->size(); ++i) {
        EXPECT_TRUE(m[i] == (*d)[i] || (std::isnan(m[i]) && std::isnan((*d)[i]))) << whole.columns[k].name;
      }
    } else {
      EXPECT_EQ(merged.table.columns[k].values, whole.columns[k].values) << whole.columns[k].name;
    }
  }
  EXPECT_EQ(merged.axes.size(), 2u);
  // The same shard twice holds its run_index twice; another sweep's shard is refused.
  EXPECT_THROW(merge_sweep_files({a, a}), DataError);
  RunMetadata other = meta;
  other.command_line += " --set model.num_layers=2";
  const fs::path c = temp_file("other.h5");
  write_sweep_file(c, other, even, {});
  EXPECT_THROW(merge_sweep_files({a, c}), DataError);
}

TEST(SweepTable, LayoutRankingListsTheFastestAndTheBestThatFits) {
  LoadedSweep search;
  search.spec.auto_parallelism = true;
  const int64_t layouts[3][3] = {{1, 8, 2}, {2, 4, 2}, {8, 1, 2}};
  for (int64_t i = 0; i < 3; ++i) {
    search.points.push_back({i,
                             0,
                             {{"parallelism.tensor", layouts[i][0]},
                              {"parallelism.pipeline", layouts[i][1]},
                              {"parallelism.data", layouts[i][2]}}});
  }
  std::vector<SweepRow> rows{row(0, 3.0), row(1, 1.0), row(2, 2.0)};
  rows[1].status = "out_of_memory";
  const std::string text = format_ranking(search, {&rows[0], &rows[1], &rows[2]});
  // Those that fit first, each group fastest first: run 2, run 0, then run 1 (fastest, but out of memory); the
  // best that fits is run 2.
  const size_t first = text.find("   1    2    8    1    2"), second = text.find("   2    0    1    8    2"),
               third = text.find("   3    1    2    4    2");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  ASSERT_NE(third, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_NE(text.find("best layout that fits: run 2, TP 8 x PP 1 x DP 2"), std::string::npos) << text;
}

TEST(SweepTable, CostObjectiveRanksAGridSweepByItsCostPerTokenWithoutAPriceLast) {
  // A grid over VM sizes ranked by cost per million tokens: the fastest point (run 1) is not the cheapest
  // (run 2); a point without a price (NaN, run 0) ranks after those with one; an invalid one is left out.
  LoadedSweep grid;
  grid.spec.objective = SweepObjective::cost_per_token;
  grid.spec.objective_given = true;
  grid.spec.axes.push_back({{"cluster.vm_size"}, {{std::string("A")}, {std::string("B")}, {std::string("C")},
                                                  {std::string("D")}}});
  for (int64_t i = 0; i < 4; ++i) {
    grid.points.push_back({i, 0, {{"cluster.vm_size", std::string(1, static_cast<char>('A' + i))}}});
  }
  static const auto meta = std::make_shared<const SweepMetaList>(
      SweepMetaList{{"step_time_s", "s", "step time", false}, {"usd_per_million_tokens", "USD/Mtoken", "cost", false}});
  const auto priced = [&](int64_t index, double step, double cost) {
    SweepRow r;
    r.index = index;
    r.status = "ok";
    r.meta = meta;
    r.values = {step, cost};
    return r;
  };
  std::vector<SweepRow> rows{priced(0, 1.5, std::nan("")), priced(1, 1.0, 2.0), priced(2, 3.0, 0.5), invalid(3)};
  const std::vector<const SweepRow*> all{&rows[0], &rows[1], &rows[2], &rows[3]};
  const std::vector<const SweepRow*> ranked = rank_points(grid, all);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0]->index, 2);
  EXPECT_EQ(ranked[1]->index, 1);
  EXPECT_EQ(ranked[2]->index, 0);
  const std::string text = format_ranking(grid, all);
  EXPECT_NE(text.find("points ranked by cost per million tokens, those that fit first (best 3 of 3 simulated)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("$0.5000/Mtok"), std::string::npos) << text;
  EXPECT_NE(text.find("best point that fits: run 2 (cluster.vm_size=\"C\"): 3.000 s, $0.5000/Mtok"),
            std::string::npos)
      << text;
  // The column each objective ranks by.
  EXPECT_EQ(objective_column(SweepObjective::cost_per_token, true), "job_usd_per_million_tokens");
  EXPECT_EQ(objective_column(SweepObjective::time_to_train, true), "time_to_train_mean_h");
}

}  // namespace
}  // namespace clustersim::sim
