// A sweep point's row takes its columns straight from write_run_summary_columns (SweepPointRunner::run, its
// RowColumns sink, sim/sweep/sweep_runner.cpp): it must be the row built as before the tenth round of issue 31,
// bit for bit. That row: run_summary_columns' SummaryColumns (and the what-if rows' of a point with
// analysis.what_if, a serving point's serving_summary_columns), each column's first value (an int64 converted to
// double, NaN or "" for none), and the list of names, units, descriptions and types built from the columns,
// shared with the runner's previous row when equal. Checked on every point of the GPT-3 175B layout search, a
// grid x layout search with a job and variability, the which-VM sweep (jobs, several VM sizes), a sweep with
// invalid and out-of-memory points, points with what-if columns, and a serving sweep; one runner per sweep, so
// rows whose list differs from the previous row's (the first, the serving rows, after an invalid point) are
// covered too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/run/run_scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/run/what_if.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// The row as the runner built it before: from the point's SummaryColumns.
struct OldRow {
  bool valid = true;
  std::string status = "ok";  ///< or out_of_memory
  std::string reason;         ///< the memory verdict of a point out of memory
  std::vector<sim::SweepValue> values;
  sim::SweepMetaList meta;
};

void from_columns(const std::vector<sim::SummaryColumn>& columns, OldRow& row);

OldRow old_row(const sim::LoadedSweep& sweep, const sim::SweepPoint& point, sim::StepSimulator& simulator) {
  std::vector<std::string> overrides = sweep.overrides;
  overrides.push_back("simulation.seed=" + std::to_string(point.seed));
  for (const sim::SweptValue& v : point.values) overrides.push_back(v.override_text());
  OldRow row;
  std::vector<sim::SummaryColumn> columns;
  try {
    if (sweep.serving) {
      const sim::ServingScenario sc = sim::load_serving_scenario(sweep.scenario, overrides, catalog());
      columns = sim::serving_summary_columns(sc, sim::run_serving_scenario(sc, catalog()));
    } else {
      const sim::Scenario sc = sim::load_scenario(sweep.document, overrides, catalog(), sim::ResolvedText::skip);
      const sim::RunResult run = sim::run_scenario(sc, catalog(), simulator);
      columns = sim::run_summary_columns(sc, run);
      if (!run.step.memory.fits) {
        row.status = "out_of_memory";
        row.reason = run.step.memory.verdict;
      }
      if (!sc.what_if.empty()) {  // the rows analysis.what_if names, as columns
        sim::WhatIfRequest named;
        named.only = sc.what_if;
        named.enabled = true;
        const auto plan = sim::plan_training_what_if(sc, catalog(), named);
        const sim::TrainingWhatIf ran = sim::run_training_what_if(*plan, run.step, simulator);
        const std::vector<sim::SummaryColumn> rows = sim::what_if_point_columns(sc.what_if, ran);
        columns.insert(columns.end(), rows.begin(), rows.end());
      }
    }
  } catch (const std::exception&) {  // ScenarioError, invalid_argument, out_of_range: an invalid row
    row.valid = false;
    return row;
  }
  from_columns(columns, row);
  return row;
}

/// The row's values and list from `columns`, as the runner built them before.
void from_columns(const std::vector<sim::SummaryColumn>& columns, OldRow& row) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const sim::SummaryColumn& c : columns) {
    if (const auto* t = std::get_if<std::vector<std::string>>(&c.values)) {
      row.values.emplace_back(t->empty() ? std::string() : t->front());
    } else if (const auto* d = std::get_if<std::vector<double>>(&c.values)) {
      row.values.emplace_back(d->empty() ? nan : d->front());
    } else {
      const auto& i = std::get<std::vector<int64_t>>(c.values);
      row.values.emplace_back(i.empty() ? nan : static_cast<double>(i.front()));
    }
    row.meta.push_back({c.name, c.units, c.description, std::holds_alternative<std::vector<std::string>>(c.values)});
  }
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same_values(const std::vector<sim::SweepValue>& values, const OldRow& want) {
  ASSERT_EQ(values.size(), want.values.size());
  for (size_t c = 0; c < values.size(); ++c) {
    const auto* got = std::get_if<double>(&values[c]);
    const auto* old = std::get_if<double>(&want.values[c]);
    if (got != nullptr && old != nullptr) {
      EXPECT_TRUE(same_bits(*got, *old)) << want.meta[c].name << ": " << *got << " vs " << *old;
    } else {
      EXPECT_EQ(values[c], want.values[c]) << want.meta[c].name;
    }
  }
}

/// Runs every point of the sweep at `path` (with `overrides`) with one runner and compares each row with
/// old_row; returns the number of valid rows. `shared`: rows whose list was the previous valid row's;
/// `out_of_memory`: rows of that status.
size_t expect_old_rows(const fs::path& path, const std::vector<std::string>& overrides, size_t* shared = nullptr,
                       size_t* out_of_memory = nullptr) {
  const sim::LoadedSweep sweep = sim::load_sweep(path, overrides, catalog(), 1);
  sim::SweepPointRunner runner(sweep, catalog());
  sim::StepSimulator simulator;
  simulator.set_record_spans(false);
  size_t valid = 0;
  std::shared_ptr<const sim::SweepMetaList> previous;
  for (const sim::SweepPoint& point : sweep.points) {
    SCOPED_TRACE(path.filename().string() + " point " + std::to_string(point.index));
    const sim::SweepRow row = runner.run(point);
    const OldRow want = old_row(sweep, point, simulator);
    if (!want.valid) {
      EXPECT_EQ(row.status, "invalid");
      EXPECT_FALSE(row.meta);
      EXPECT_TRUE(row.values.empty());
      continue;
    }
    ++valid;
    EXPECT_EQ(row.status, want.status);
    EXPECT_EQ(row.reason, want.reason);
    if (out_of_memory != nullptr && row.status == "out_of_memory") ++*out_of_memory;
    if (!row.meta) {
      ADD_FAILURE() << "no column list, status " << row.status << ": " << row.reason;
      continue;
    }
    EXPECT_EQ(*row.meta, want.meta);
    if (previous && *previous == *row.meta) {
      EXPECT_EQ(previous.get(), row.meta.get()) << "an equal list is shared";
      if (shared != nullptr) ++*shared;
    }
    previous = row.meta;
    if (row.values.size() != want.values.size()) {
      ADD_FAILURE() << row.values.size() << " values, not " << want.values.size();
      continue;
    }
    expect_same_values(row.values, want);
  }
  return valid;
}

fs::path sweeps() { return fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps"; }

TEST(RowColumns, Gpt3LayoutSearchRowsAreTheColumnsRows) {
  size_t shared = 0;
  EXPECT_EQ(expect_old_rows(sweeps() / "gpt3-175b-1024-a100-layouts.toml", {}, &shared), 395U);
  EXPECT_EQ(shared, 394U);
}

TEST(RowColumns, SweepsWithJobsServingAndVmSizesRowsAreTheColumnsRows) {
  EXPECT_GT(expect_old_rows(sweeps() / "llama2-7b-which-vm.toml", {"job.replications=5"}), 4U);
  EXPECT_GT(expect_old_rows(sweeps() / "llama2-7b-serving-which-vm.toml", {}), 1U);
}

TEST(RowColumns, GridSearchWithJobInvalidOutOfMemoryAndWhatIfRowsAreTheColumnsRows) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-row-columns-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path search = dir / "search.toml";
  std::ofstream(search) << "schema_version = 1\n"
                           "name = \"row-columns\"\n"
                           "[model]\nnum_layers = 24\nhidden_size = 2048\nnum_attention_heads = 16\n"
                           "vocab_size = 51200\nseq_length = 2048\n"
                           "[training]\nglobal_batch_size = 64\nactivation_recompute = \"selective\"\n"
                           "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                           "[simulation]\nvariability = \"on\"\n"
                           "[job]\ntrain_tokens = 2e9\nreplications = 5\n"
                           "[sweep]\n\"simulation.seed\" = [3, 7]\n\"training.precision\" = [\"bf16\", \"fp16\"]\n"
                           "parallelism = \"auto\"\n";
  EXPECT_GT(expect_old_rows(search, {"training.framework = megatron-core"}), 10U);
  // A grid whose points are invalid (tensor 5 divides no head count) or out of memory (no recompute: 4 of the 6
  // valid points), between valid ones; then the same grid with what-if columns.
  const fs::path grid = dir / "grid.toml";
  std::ofstream(grid) << "schema_version = 1\n"
                         "name = \"row-columns-grid\"\n"
                         "[model]\nnum_layers = 24\nhidden_size = 8192\nnum_attention_heads = 64\n"
                         "vocab_size = 51200\nseq_length = 4096\n"
                         "[training]\nglobal_batch_size = 128\nmicro_batch_size = 8\nactivation_recompute = \"none\"\n"
                         "[parallelism]\ntensor = 1\npipeline = 2\n"
                         "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                         "[sweep]\n\"parallelism.tensor\" = [1, 5, 2, 8]\n\"training.micro_batch_size\" = [1, 8]\n";
  size_t shared = 0;
  size_t out_of_memory = 0;
  const size_t valid = expect_old_rows(grid, {}, &shared, &out_of_memory);
  EXPECT_GE(valid, 4U);
  EXPECT_LT(valid, 8U);
  EXPECT_GT(shared, 0U);
  EXPECT_GT(out_of_memory, 0U);
  EXPECT_GE(expect_old_rows(grid, {"analysis.what_if=[\"nic_x2\", \"gpu_matmul_x1.5\"]"}), 4U);
  fs::remove_all(dir);
}

/// Feeds `columns` to `sink`: one-value columns by their type (as write_step_summary_columns does) when `typed`,
/// the rest, and every column otherwise, whole.
void feed(const std::vector<sim::SummaryColumn>& columns, sim::SummaryColumnSink& sink, bool typed) {
  for (const sim::SummaryColumn& c : columns) {
    const auto* reals = std::get_if<std::vector<double>>(&c.values);
    const auto* integers = std::get_if<std::vector<int64_t>>(&c.values);
    const auto* texts = std::get_if<std::vector<std::string>>(&c.values);
    if (typed && reals != nullptr && reals->size() == 1) {
      sink.real(c.name, c.units, c.description, reals->front());
    } else if (typed && integers != nullptr && integers->size() == 1) {
      sink.integer(c.name, c.units, c.description, integers->front());
    } else if (typed && texts != nullptr && texts->size() == 1) {
      sink.text(c.name, c.units, c.description, texts->front());
    } else {
      sink.column(c);
    }
  }
}

// Lists that differ from the previous row's at the start, in the middle (a description, units, a type), at the
// end (one column more or fewer), not at all; empty lists; columns with no value or several; extreme values.
TEST(RowColumns, AnyListAfterAnyOtherIsTheColumnsRow) {
  using C = sim::SummaryColumn;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<C> base = {
      {"scenario", "", "scenario name", std::vector<std::string>{"a"}},
      {"nodes", "1", "VMs", std::vector<int64_t>{int64_t{1} << 60}},
      {"step_time_s", "s", "time of one step", std::vector<double>{0.1 + 0.2}},
      {"band", "1", "NaN if none", std::vector<double>{nan}},
      {"neg", "1", "negative zero", std::vector<double>{-0.0}},
      {"bottleneck", "", "where", std::vector<std::string>{"compute on stage 3, 41 % of the step"}},
      {"big", "1", "the largest int64", std::vector<int64_t>{std::numeric_limits<int64_t>::max()}},
  };
  std::vector<std::vector<C>> lists;
  lists.push_back(base);
  lists.push_back(base);
  std::vector<C> l = base;
  l[3].description = "another description";
  lists.push_back(l);
  lists.push_back(l);
  l = base;
  l[2].units = "ms";
  lists.push_back(l);
  l = base;
  l[4].values = std::vector<std::string>{"text now"};
  lists.push_back(l);
  l = base;
  l.pop_back();
  lists.push_back(l);
  lists.push_back(base);
  l = base;
  l.push_back({"what_if_nic_x2_step_time_s", "s", "a what-if", std::vector<double>{1.5}});
  lists.push_back(l);
  lists.push_back(l);
  l = base;
  l[0].name = "name";
  lists.push_back(l);
  lists.push_back({});
  lists.push_back({});
  lists.push_back(base);
  l = base;
  l[1].values = std::vector<int64_t>{};
  l[2].values = std::vector<double>{3.0, 4.0};
  l[5].values = std::vector<std::string>{};
  lists.push_back(l);
  lists.push_back(base);
  for (const bool typed : {true, false}) {
    std::shared_ptr<const sim::SweepMetaList> last;
    for (size_t i = 0; i < lists.size(); ++i) {
      SCOPED_TRACE("list " + std::to_string(i) + (typed ? " typed" : " whole"));
      OldRow want;
      from_columns(lists[i], want);
      std::vector<sim::SweepValue> values;
      sim::SweepRowColumns sink(values, last);
      feed(lists[i], sink, typed);
      const std::shared_ptr<const sim::SweepMetaList> list = sink.list();
      ASSERT_TRUE(list);
      EXPECT_EQ(*list, want.meta);
      EXPECT_EQ(last && *last == want.meta, list == last) << "shared exactly when equal";
      expect_same_values(values, want);
      last = list;
    }
  }
}

}  // namespace
}  // namespace clustersim
