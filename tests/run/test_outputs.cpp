// What clustersim's commands do with their outputs (issue 26): a path that would destroy a device, a directory or
// one of the run's inputs is refused before the run (74, with the reason); a full stdout, a file-size limit and a
// full disk are exit 74, never a signal or a truncated success; nothing ".tmp-*" is left behind.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/cli.hpp"

namespace fs = std::filesystem;
using clustersim::testing::read_file;
using clustersim::testing::run_cli;

namespace {

const std::string kTraining = "scenarios/megatron/sc21-table1-1p7b-32gpus.toml";
const std::string kSpot = "scenarios/azure/gpt3-175b-h100-spot-15pct.toml";
const std::string kServing = "scenarios/serving/llama3-70b-azure-code-trace.toml";

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-outputs-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

/// A copy of a shipped scenario in `dir` (so that a failed check can only destroy the copy).
fs::path copy_scenario(const std::string& rel, const fs::path& dir, const std::string& name) {
  const fs::path to = dir / name;
  fs::copy_file(fs::path(CLUSTERSIM_SOURCE_DIR) / rel, to);
  return to;
}

/// A serving scenario in `dir` that replays a three-request trace `trace.csv` beside it.
fs::path serving_with_trace(const fs::path& dir) {
  std::string text = read_file(fs::path(CLUSTERSIM_SOURCE_DIR) / kServing);
  const std::string from = "traces/AzureLLMInferenceTrace_code.csv";
  text.replace(text.find(from), from.size(), "trace.csv");
  std::ofstream(dir / "s.toml") << text;
  std::ofstream(dir / "trace.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                   << "2023-11-16 18:17:03.9799600,480,10\n"
                                   << "2023-11-16 18:17:04.0319600,318,8\n"
                                   << "2023-11-16 18:17:05.0319600,318,8\n";
  return dir / "s.toml";
}

bool has_temporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

/// Runs the CLI through `bash -c` with `prefix` (e.g. "ulimit -f 16;") and stdout to `stdout_to`; the exit
/// status, or 128 + the signal.
int run_raw(const std::string& prefix, const std::string& args, const std::string& stdout_to, const fs::path& err) {
  const std::string inner = prefix + " cd '" + CLUSTERSIM_SOURCE_DIR + "' && exec '" + CLUSTERSIM_BINARY + "' " +
                            args + " >" + stdout_to + " 2>'" + err.string() + "'";
  std::string quoted;
  for (const char c : inner) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  const int status = std::system(("bash -c '" + quoted + "'").c_str());
  if (!WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

// Defect 1: as root, -o /dev/null replaced the device with an HDF5 file and exited 0.
TEST(Outputs, ADeviceIsRefused) {
  const auto r = run_cli("run " + kTraining + " -o /dev/null");
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is a device"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  const auto c = run_cli("collective --vm-size Standard_ND96isr_H100_v5 -o /dev/null");
  EXPECT_EQ(c.exit_code, 74) << c.err;
  EXPECT_NE(c.err.find("is a device"), std::string::npos) << c.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// Defect 1: -o naming the scenario, however spelt, overwrote it.
TEST(Outputs, TheScenarioFileIsRefused) {
  const fs::path dir = fresh_dir("scenario");
  const fs::path s = copy_scenario(kTraining, dir, "s.toml");
  const std::string before = read_file(s);
  for (const fs::path& out : {s, dir / "." / "s.toml"}) {
    const auto r = run_cli("run " + q(s) + " -o " + q(out));
    EXPECT_EQ(r.exit_code, 74) << r.err;
    EXPECT_NE(r.err.find("is the scenario file"), std::string::npos) << r.err;
  }
  fs::create_symlink(s, dir / "link.h5");
  const auto r = run_cli("run " + q(s) + " --trace " + q(dir / "link.h5"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is the scenario file"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(s), before);
  EXPECT_FALSE(has_temporary(dir));
  fs::remove_all(dir);
}

// Defect 1: -o naming the request trace of a serving scenario, or a training job's eviction trace.
TEST(Outputs, TheTracesAreRefused) {
  const fs::path dir = fresh_dir("traces");
  const fs::path s = serving_with_trace(dir);
  const std::string trace = read_file(dir / "trace.csv");
  const auto r = run_cli("run " + q(s) + " -o " + q(dir / "trace.csv"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is the request trace"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir / "trace.csv"), trace);

  const fs::path spot = copy_scenario(kSpot, dir, "spot.toml");
  std::ofstream(dir / "evictions.csv") << "1.5\n";
  const auto e = run_cli("run " + q(spot) + " --set 'reliability.spot_eviction_trace=\"evictions.csv\"' -o " +
                         q(dir / "evictions.csv"));
  EXPECT_EQ(e.exit_code, 74) << e.err;
  EXPECT_NE(e.err.find("is the eviction trace"), std::string::npos) << e.err;
  EXPECT_EQ(read_file(dir / "evictions.csv"), "1.5\n");
  fs::remove_all(dir);
}

// The finding "output-path errors come after the whole simulation": a missing directory is named, before any
// simulation (nothing printed on stdout), and a directory is refused.
TEST(Outputs, AMissingDirectoryIsNamedBeforeTheRun) {
  const fs::path dir = fresh_dir("missing");
  const auto r = run_cli("run " + kTraining + " -o " + q(dir / "nope" / "x.h5"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("directory '" + (dir / "nope").string() + "' does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  const auto d = run_cli("run " + kTraining + " -o " + q(dir));
  EXPECT_EQ(d.exit_code, 74) << d.err;
  EXPECT_NE(d.err.find("is a directory"), std::string::npos) << d.err;
  fs::remove_all(dir);
}

// validate --write-uncertainty: its file is checked before the minutes of fitting (a device, a missing directory).
TEST(Outputs, ValidatesBandsFileIsCheckedBeforeTheFit) {
  const fs::path dir = fresh_dir("validate");
  auto r = run_cli("validate --leave-one-out --write-uncertainty /dev/null");
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is a device"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = run_cli("validate --leave-one-out --write-uncertainty " + q(dir / "nope" / "bands.toml"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// merge: the output may not be one of the shards it reads.
TEST(Outputs, MergeRefusesToOverwriteAShard) {
  const fs::path dir = fresh_dir("merge");
  std::ofstream(dir / "a.h5") << "shard";
  const auto r = run_cli("merge " + q(dir / "a.h5") + " " + q(dir / "a.h5"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is a merge input shard"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir / "a.h5"), "shard");
  fs::remove_all(dir);
}

// Defect 12: --format json to a full disk left truncated JSON and exited 0.
TEST(Outputs, AFullStdoutIsExit74) {
  const fs::path dir = fresh_dir("stdout");
  EXPECT_EQ(run_raw("", "run " + kTraining + " --format json", "/dev/full", dir / "err"), 74) << read_file(dir / "err");
  EXPECT_NE(read_file(dir / "err").find("cannot write standard output: No space left on device"), std::string::npos)
      << read_file(dir / "err");
  EXPECT_EQ(run_raw("", "run " + kTraining, "/dev/full", dir / "err"), 74) << read_file(dir / "err");
  EXPECT_EQ(run_raw("", "catalog", "/dev/full", dir / "err"), 74) << read_file(dir / "err");
  fs::remove_all(dir);
}

// Defect 4: a file-size limit (or a full disk) killed the writer (SIGXFSZ, or SIGSEGV in HDF5's close at exit)
// and left "<out>.tmp-PID"; now exit 74 with the cause, the old file intact.
TEST(Outputs, AFileSizeLimitIsExit74AndKeepsTheOldFile) {
  const fs::path dir = fresh_dir("fsize");
  std::ofstream(dir / "out.h5") << "old";
  const int code = run_raw("ulimit -f 8;", "run " + kTraining + " -o " + q(dir / "out.h5"), "/dev/null", dir / "err");
  EXPECT_EQ(code, 74) << read_file(dir / "err");
  EXPECT_NE(read_file(dir / "err").find("File too large"), std::string::npos) << read_file(dir / "err");
  EXPECT_EQ(read_file(dir / "out.h5"), "old");
  EXPECT_FALSE(has_temporary(dir));
  const int c = run_raw("ulimit -f 4;", "collective --vm-size Standard_ND96isr_H100_v5 -o " + q(dir / "out.h5"),
                        "/dev/null", dir / "err");
  EXPECT_EQ(c, 74) << read_file(dir / "err");
  EXPECT_EQ(read_file(dir / "out.h5"), "old");
  EXPECT_FALSE(has_temporary(dir));
  fs::remove_all(dir);
}
