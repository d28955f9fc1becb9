// The commands' orchestration in sim/sweep (sweep_job.hpp) past their command lines: the command line a sweep
// records, the merge of a sharded sweep's files (complete, partial, without a fingerprint) and the listing of
// a sweep's points.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/sweep/sweep_job.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/sweep/sweep_table.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;

/// A fresh directory under the system's temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("clustersim-test-sweep-job-" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

/// Four points over parallelism.tensor in {1, 2, 4, 8}, each with a step time.
LoadedSweep four_points() {
  LoadedSweep s;
  s.spec.axes = {{{"parallelism.tensor"}, {{int64_t{1}}, {int64_t{2}}, {int64_t{4}}, {int64_t{8}}}}};
  for (int64_t i = 0; i < 4; ++i) {
    s.points.push_back({i, static_cast<uint64_t>(100 + i), {{"parallelism.tensor", int64_t{1} << i}}});
  }
  return s;
}

std::vector<SweepRow> rows_of(const std::vector<int64_t>& indices) {
  static const auto meta = std::make_shared<const SweepMetaList>(SweepMetaList{{"step_time_s", "s", "step", false}});
  std::vector<SweepRow> rows;
  for (const int64_t i : indices) {
    SweepRow r;
    r.index = i;
    r.seed = static_cast<uint64_t>(100 + i);
    r.status = "ok";
    r.meta = meta;
    r.values = {1.0 + static_cast<double>(i)};
    rows.push_back(r);
  }
  return rows;
}

/// Writes the shard of `indices` to `path`; `identity` as the sweep's file carries it.
void write_shard(const fs::path& path, const std::vector<int64_t>& indices, const SweepIdentity& identity) {
  const LoadedSweep sweep = four_points();
  const std::vector<SweepRow> rows = rows_of(indices);
  std::vector<const SweepRow*> ordered;
  for (const SweepRow& r : rows) ordered.push_back(&r);
  RunMetadata meta;
  meta.command_line = "clustersim sweep four.toml";
  const SweepTable table = build_sweep_table(sweep, ordered);
  write_sweep_file(path, meta, table, sweep_grid_axes(sweep, table), identity);
}

TEST(SweepJob, TheRecordedCommandLineIsWhatDeterminesTheResults) {
  SweepRequest r;
  r.scenario = "s.toml";
  r.overrides = {"a=1", "b=2"};
  r.output = "x.h5";
  EXPECT_EQ(sweep_command_line(r), "clustersim sweep s.toml --set a=1 --set b=2");
  r.jobs = 7;  // how the points run does not count
  r.shard = {1, 3};
  r.resume = true;
  r.output = "y.h5";
  EXPECT_EQ(sweep_command_line(r), "clustersim sweep s.toml --set a=1 --set b=2");
  r.catalog_dir = "cat";
  EXPECT_EQ(sweep_command_line(r), "clustersim sweep s.toml --set a=1 --set b=2 --catalog cat");
}

TEST(SweepJob, MergeWritesTheShardsOrRefusesAnIncompleteSet) {
  const TempDir dir;
  const SweepIdentity identity{{{"scenario", "0123456789abcdef"}}, 4};
  const fs::path a = dir.path / "a.h5", b = dir.path / "b.h5", out = dir.path / "out.h5";
  write_shard(a, {0, 2}, identity);
  write_shard(b, {1, 3}, identity);
  std::ostringstream err;
  EXPECT_EQ(merge_sweep_shards(out, {a, b}, false, err),
            "merged 2 files, 4 points; wrote " + out.string() + "\n");
  EXPECT_EQ(err.str(), "");
  EXPECT_TRUE(fs::exists(out));

  const fs::path partial = dir.path / "partial.h5";
  EXPECT_THROW((void)merge_sweep_shards(partial, {a}, false, err), DataError);
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(merge_sweep_shards(partial, {a}, true, err),
            "merged 1 file, 2 points (partial: 2 of 4 points missing); wrote " + partial.string() + "\n");
  // The merged file must not be one of its shards.
  EXPECT_THROW((void)merge_sweep_shards(a, {a, b}, false, err), IoError);
}

TEST(SweepJob, ShardsWithoutAFingerprintAreMergedWithAWarning) {
  const TempDir dir;
  const fs::path a = dir.path / "a.h5", b = dir.path / "b.h5", out = dir.path / "out.h5";
  write_shard(a, {0, 2}, {});
  write_shard(b, {1, 3}, {});
  std::ostringstream err;
  EXPECT_EQ(merge_sweep_shards(out, {a, b}, false, err), "merged 2 files, 4 points; wrote " + out.string() + "\n");
  EXPECT_NE(err.str().find("merge: warning: the shards carry no fingerprint"), std::string::npos);
}

TEST(SweepJob, TheListingHasAHeaderThenOneLinePerPoint) {
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  const LoadedSweep sweep = load_sweep(fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" /
                                           "llama2-7b-which-vm.toml", {}, catalog);
  const std::string text = sweep_points_listing(sweep);
  std::istringstream in(text);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "# run_index\tseed\toverrides");
  for (const SweepPoint& p : sweep.points) {
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line.rfind(std::to_string(p.index) + "\t" + std::to_string(p.seed) + "\t", 0), 0u) << line;
  }
  EXPECT_FALSE(std::getline(in, line));
}

}  // namespace
}  // namespace clustersim::sim
