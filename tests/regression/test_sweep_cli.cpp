// End-to-end: `clustersim sweep`, `merge` and `list-runs` (docs/sweeps.md). The same sweep gives the same
// bytes with -j 1 and -j 2, split into shards and merged, and killed and resumed; invalid points are rows,
// not errors; a resumed sweep does not recompute the points its sidecar holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "sim/sweep/summary_file.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/results.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;

const std::string kLayouts = "scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml";

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-sweep-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// A small scenario (24 layers, 16 heads, on 2 x 8 A100) whose sweep has 6 points, 2 of them invalid
/// (tensor 3 divides neither the heads nor the GPUs).
fs::path small_sweep(const fs::path& dir) {
  const fs::path path = dir / "small.toml";
  std::ofstream(path) << "schema_version = 1\n"
                         "name = \"small-sweep\"\n"
                         "[model]\nnum_layers = 24\nhidden_size = 1024\nnum_attention_heads = 16\n"
                         "vocab_size = 51200\nseq_length = 1024\n"
                         "[training]\nglobal_batch_size = 64\n"
                         "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                         "[sweep]\n"
                         "\"parallelism.tensor\" = [1, 3, 8]\n"
                         "\"training.precision\" = [\"bf16\", \"fp16\"]\n";
  return path;
}

TEST(SweepCli, OneAndTwoThreadsGiveByteIdenticalFiles) {
  const fs::path dir = temp_dir("jobs");
  const auto a = run_cli("sweep " + kLayouts + " -o '" + (dir / "a.h5").string() + "' -j 1");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto b = run_cli("sweep " + kLayouts + " -o '" + (dir / "b.h5").string() + "' -j 2");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(read_file(dir / "a.h5"), read_file(dir / "b.h5"));
  EXPECT_FALSE(fs::exists(dir / "a.h5.partial"));
  // The layout search ranks the layouts and names the best one that fits: tensor parallel within a VM.
  EXPECT_NE(a.out.find("layouts ranked by step time"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("best layout that fits"), std::string::npos) << a.out;
  const auto status = clustersim::testing::summary_column<std::string>(dir / "a.h5", "status");
  const auto step = clustersim::testing::summary_column<double>(dir / "a.h5", "step_time_s");
  const auto tensor = clustersim::testing::summary_column<double>(dir / "a.h5", "parallelism_tensor");
  const auto index = clustersim::testing::summary_column<int64_t>(dir / "a.h5", "run_index");
  ASSERT_EQ(status.size(), step.size());
  ASSERT_FALSE(status.empty());
  size_t best = status.size();
  for (size_t i = 0; i < status.size(); ++i) {
    EXPECT_EQ(index[i], static_cast<int64_t>(i));
    if (status[i] == "ok" && (best == status.size() || step[i] < step[best])) best = i;
  }
  ASSERT_LT(best, status.size());
  EXPECT_LE(tensor[best], 8.0);
  EXPECT_NE(std::find(status.begin(), status.end(), "out_of_memory"), status.end());
  fs::remove_all(dir);
}

TEST(SweepCli, ShardsMergedEqualTheUnshardedSweep) {
  const fs::path dir = temp_dir("shards");
  const auto all = run_cli("sweep " + kLayouts + " -o '" + (dir / "all.h5").string() + "' -j 2");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (int i = 0; i < 3; ++i) {
    const auto r = run_cli("sweep " + kLayouts + " -o '" + (dir / ("s" + std::to_string(i) + ".h5")).string() +
                           "' --shard " + std::to_string(i) + "/3");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto m = run_cli("merge '" + (dir / "merged.h5").string() + "' '" + (dir / "s2.h5").string() + "' '" +
                         (dir / "s0.h5").string() + "' '" + (dir / "s1.h5").string() + "'");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(read_file(dir / "merged.h5"), read_file(dir / "all.h5"));
  // Shard 1/3 holds exactly the points with run_index % 3 == 1.
  for (const int64_t i : clustersim::testing::summary_column<int64_t>(dir / "s1.h5", "run_index")) EXPECT_EQ(i % 3, 1);
  // A shard twice is an error.
  const auto dup = run_cli("merge '" + (dir / "bad.h5").string() + "' '" + (dir / "s0.h5").string() + "' '" +
                           (dir / "s0.h5").string() + "'");
  EXPECT_EQ(dup.exit_code, 65);
  EXPECT_FALSE(fs::exists(dir / "bad.h5"));
  fs::remove_all(dir);
}

TEST(SweepCli, ShardAutoReadsSlurmArrayVariables) {
  const fs::path dir = temp_dir("slurm");
  const fs::path scenario = small_sweep(dir);
  ::setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "2", 1);
  const auto a = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "auto.h5").string() + "' --shard auto");
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  ::unsetenv("SLURM_ARRAY_TASK_COUNT");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto b = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "manual.h5").string() + "' --shard 1/2");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(read_file(dir / "auto.h5"), read_file(dir / "manual.h5"));
  EXPECT_EQ(clustersim::testing::summary_column<int64_t>(dir / "auto.h5", "run_index"), (std::vector<int64_t>{1, 3, 5}));
  const auto missing = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "x.h5").string() + "' --shard auto");
  EXPECT_EQ(missing.exit_code, 64);
  fs::remove_all(dir);
}

TEST(SweepCli, InvalidPointsAreRecordedNotFatal) {
  const fs::path dir = temp_dir("invalid");
  const fs::path scenario = small_sweep(dir);
  const fs::path out = dir / "small.h5";
  const auto r = run_cli("sweep '" + scenario.string() + "' -o '" + out.string() + "' -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("6 points: 4 ok, 0 out_of_memory, 2 invalid"), std::string::npos) << r.out;
  const auto status = clustersim::testing::summary_column<std::string>(out, "status");
  const auto reason = clustersim::testing::summary_column<std::string>(out, "reason");
  const auto step = clustersim::testing::summary_column<double>(out, "step_time_s");
  const auto tensor = clustersim::testing::summary_column<double>(out, "parallelism_tensor");
  const auto precision = clustersim::testing::summary_column<std::string>(out, "training_precision");
  ASSERT_EQ(status.size(), 6U);
  EXPECT_EQ(tensor, (std::vector<double>{1, 1, 3, 3, 8, 8}));
  EXPECT_EQ(precision, (std::vector<std::string>{"bf16", "fp16", "bf16", "fp16", "bf16", "fp16"}));
  for (size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE(i);
    if (tensor[i] == 3.0) {
      EXPECT_EQ(status[i], "invalid");
      EXPECT_NE(reason[i].find("parallelism.tensor"), std::string::npos) << reason[i];
      EXPECT_TRUE(std::isnan(step[i]));
    } else {
      EXPECT_EQ(status[i], "ok");
      EXPECT_EQ(reason[i], "");
      EXPECT_GT(step[i], 0.0);
    }
  }
  fs::remove_all(dir);
}

TEST(SweepCli, ResumeSkipsFinishedPointsAndGivesTheSameFile) {
  const fs::path dir = temp_dir("resume");
  const std::string base = "sweep " + kLayouts + " -j 2 -o '";
  const auto full = run_cli(base + (dir / "full.h5").string() + "'");
  ASSERT_EQ(full.exit_code, 0) << full.err;

  // A sweep stopped after 40 points (as if killed), with a torn last line as a kill mid-write leaves.
  const fs::path out = dir / "resumed.h5";
  const fs::path sidecar = out.string() + ".partial";
  const auto stopped = run_cli(base + out.string() + "' --stop-after 40");
  ASSERT_EQ(stopped.exit_code, 75) << stopped.err;
  EXPECT_FALSE(fs::exists(out));
  ASSERT_TRUE(fs::exists(sidecar));
  std::ofstream(sidecar, std::ios::app) << "R\t300\t12";
  const auto resumed = run_cli(base + out.string() + "' --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming: 40 of 395 points already done, computing 355"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(read_file(out), read_file(dir / "full.h5"));
  EXPECT_FALSE(fs::exists(sidecar));

  // Evidence that finished points are taken from the sidecar, not recomputed: a reason planted there ends up
  // in the file.
  const fs::path planted = dir / "planted.h5";
  const fs::path planted_sidecar = planted.string() + ".partial";
  ASSERT_EQ(run_cli(base + planted.string() + "' --stop-after 10").exit_code, 75);
  std::string text = read_file(planted_sidecar);
  const size_t row = text.find("\nR\t");
  ASSERT_NE(row, std::string::npos);
  // R <index> <seed> <status> <reason> ...: replace the (empty or not) reason field.
  size_t field = row + 1;
  for (int k = 0; k < 4; ++k) field = text.find('\t', field) + 1;
  const size_t end = text.find('\t', field);
  const int64_t index = std::stoll(text.substr(row + 3));
  text.replace(field, end - field, "planted in the sidecar");
  std::ofstream(planted_sidecar, std::ios::binary | std::ios::trunc) << text;
  ASSERT_EQ(run_cli(base + planted.string() + "' --resume").exit_code, 0);
  EXPECT_EQ(clustersim::testing::summary_column<std::string>(planted, "reason")[static_cast<size_t>(index)], "planted in the sidecar");

  // A sidecar of another sweep is refused.
  ASSERT_EQ(run_cli(base + planted.string() + "' --stop-after 5").exit_code, 75);
  const auto other = run_cli("sweep " + kLayouts + " --set training.precision=fp16 -o '" + planted.string() +
                             "' --resume");
  EXPECT_EQ(other.exit_code, 65);
  EXPECT_NE(other.err.find("another sweep"), std::string::npos) << other.err;
  fs::remove_all(dir);
}

/// Complete `R` lines (finished points) in a sidecar.
size_t finished_points(const fs::path& sidecar) {
  const std::string text = read_file(sidecar);
  size_t n = 0;
  for (size_t at = text.find("\nR\t"); at != std::string::npos; at = text.find("\nR\t", at + 1)) {
    if (text.find('\n', at + 1) != std::string::npos) ++n;
  }
  return n;
}

/// The layout search twice over (bf16, fp16) in `dir`: about 800 points, a few seconds on one thread; its
/// uninterrupted results file is written to dir/full.h5. Returns the scenario's path.
fs::path interruptible_sweep(const fs::path& dir) {
  const fs::path scenario = dir / "layouts.toml";
  std::ofstream(scenario) << read_file(fs::path(CLUSTERSIM_SOURCE_DIR) / kLayouts)
                          << "\"training.precision\" = [\"bf16\", \"fp16\"]\n";
  const auto full = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "full.h5").string() + "' -j 2");
  EXPECT_EQ(full.exit_code, 0) << full.err;
  return scenario;
}

/// Starts `clustersim sweep SCENARIO -o OUT -j 1` (stdout and stderr to /dev/null), sends it `signal` once 50
/// points are in OUT's sidecar, and returns its wait status.
int sweep_signalled_midway(const fs::path& scenario, const fs::path& out, int signal) {
  const fs::path sidecar = out.string() + ".partial";
  const pid_t child = ::fork();
  if (child == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(CLUSTERSIM_BINARY, CLUSTERSIM_BINARY, "sweep", scenario.c_str(), "-o", out.c_str(), "-j", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  EXPECT_GE(child, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(fs::exists(sidecar) && finished_points(sidecar) >= 50) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(child, signal);
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

/// The number of points of the sweep `scenario`, as `clustersim list-runs` prints them (one line each).
size_t sweep_points(const fs::path& scenario) {
  const auto listed = run_cli("list-runs '" + scenario.string() + "'");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  size_t n = 0;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])) != 0) ++n;
  }
  return n;
}

/// After an interrupted sweep: no results file, 50 or more points (not all of them) in the sidecar, and
/// --resume says so and gives the uninterrupted file.
void expect_resume_completes(const fs::path& dir, const fs::path& scenario, const fs::path& out) {
  EXPECT_FALSE(fs::exists(out));
  const size_t total = sweep_points(scenario);
  const size_t done = finished_points(out.string() + ".partial");
  ASSERT_GE(done, 50U);
  ASSERT_LT(done, total);
  const auto resumed = run_cli("sweep '" + scenario.string() + "' -o '" + out.string() + "' -j 2 --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming: " + std::to_string(done) + " of " + std::to_string(total) +
                             " points already done, computing " + std::to_string(total - done)),
            std::string::npos)
      << resumed.err;
  EXPECT_EQ(read_file(out), read_file(dir / "full.h5"));
}

TEST(SweepCli, SigkillMidwayThenResumeGivesTheSameFile) {
  const fs::path dir = temp_dir("sigkill");
  const fs::path scenario = interruptible_sweep(dir);
  const fs::path out = dir / "killed.h5";
  const int status = sweep_signalled_midway(scenario, out, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  expect_resume_completes(dir, scenario, out);
  fs::remove_all(dir);
}

// SIGINT (or SIGTERM) midway: the sweep stops between points with exit status 75, keeps the finished points in
// the sidecar, writes no results file, and --resume gives the uninterrupted file.
TEST(SweepCli, SigintMidwayStopsResumablyWithExit75) {
  const fs::path dir = temp_dir("sigint");
  const fs::path scenario = interruptible_sweep(dir);
  for (const int signal : {SIGINT, SIGTERM}) {
    const fs::path out = dir / (signal == SIGINT ? "int.h5" : "term.h5");
    const int status = sweep_signalled_midway(scenario, out, signal);
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << signal << " ended the sweep instead of stopping it";
    EXPECT_EQ(WEXITSTATUS(status), 75);
    expect_resume_completes(dir, scenario, out);
  }
  fs::remove_all(dir);
}

TEST(SweepCli, ListRunsPrintsThePoints) {
  const fs::path dir = temp_dir("list");
  const fs::path scenario = small_sweep(dir);
  const auto r = run_cli("list-runs '" + scenario.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\tparallelism.tensor=1 training.precision=\"bf16\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n5\t"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n6\t"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(SweepCli, BadSweepTableExits65WithFileLineAndKey) {
  const fs::path dir = temp_dir("bad");
  const fs::path path = dir / "bad.toml";
  const std::string layouts = read_file(fs::path(CLUSTERSIM_SOURCE_DIR) / kLayouts);
  std::ofstream(path) << layouts << "\"cluster.nodes\" = { start = 8, stop = 64, step = 0 }\n";
  const auto r = run_cli("sweep '" + path.string() + "' -o '" + (dir / "x.h5").string() + "'");
  EXPECT_EQ(r.exit_code, 65);
  // The appended line is the file's last: one after the layout scenario's lines.
  const auto line = std::count(layouts.begin(), layouts.end(), '\n') + 1;
  EXPECT_NE(r.err.find(path.string() + ":" + std::to_string(line) + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("key 'sweep.cluster.nodes'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "x.h5"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clustersim
