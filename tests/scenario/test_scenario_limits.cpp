// Issue 26, the loader's bounds: TOML shape limits before TOML++ (defect 6), eviction traces read as bounded
// regular files (defects 10, 11, 17), the workload trace refused when it is not a regular file, and the unknown
// --set key's suggestion (defect 18). Each case asserts the located error, never a crash or a hang.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/input_file.hpp"
#include "sim/io/closest_names.hpp"
#include "sim/io/eviction_trace.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/toml_limits.hpp"

namespace clustersim::sim {
namespace {

const std::filesystem::path kSourceDir{CLUSTERSIM_SOURCE_DIR};
const std::filesystem::path kMinimal = kSourceDir / "tests" / "scenario" / "data" / "valid_minimal.toml";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A fresh directory under the temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("clustersim-limits-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

/// Loads `file` expecting a ScenarioError at LINE:COL with `key`, its message containing `message`.
void expect_error(const std::filesystem::path& file, const std::vector<std::string>& overrides, int64_t line,
                  int64_t column, const std::string& key, const std::string& message) {
  try {
    (void)load_scenario(file, overrides, catalog());
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.line(), line) << what.substr(0, 300);
    EXPECT_EQ(e.column(), column) << what.substr(0, 300);
    EXPECT_EQ(e.key(), key) << what.substr(0, 300);
    EXPECT_NE(what.find(message), std::string::npos) << what.substr(0, 300);
  }
}

std::string dotted(int parts) {
  std::string key = "a";
  for (int i = 1; i < parts; ++i) key += ".a";
  return key;
}

// --- the TOML shape limits (defect 6) ---------------------------------------------------------------------------

TEST(TomlLimits, FortyThousandPartHeaderIsRefusedBeforeTheParser) {
  // Before: SIGSEGV inside TOML++ (a stack overflow on 40,000 nested tables).
  TempDir dir;
  const auto file = dir.write("deep.toml", read_text(kMinimal) + "\n[" + dotted(40000) + "]\nx = 1\n");
  expect_error(file, {}, 19, 2, "", "more than 32 dotted parts");
}

TEST(TomlLimits, KeyPartsAtTheLimitPassTheScanAndOneMoreIsRefused) {
  EXPECT_FALSE(check_toml_limits("[" + dotted(32) + "]\n" + dotted(32) + " = 1\n"));
  const auto header = check_toml_limits("x = 1\n[" + dotted(33) + "]\n");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->line, 2);
  EXPECT_EQ(header->column, 2);
  const auto key = check_toml_limits("[t]\n  " + dotted(33) + " = 1\n");
  ASSERT_TRUE(key);
  EXPECT_EQ(key->line, 2);
  EXPECT_EQ(key->column, 3);
  // Quoted parts and spaces around the dots count the same.
  std::string quoted = "\"q\"";
  for (int i = 1; i < 33; ++i) quoted += " . 'q'";
  EXPECT_TRUE(check_toml_limits(quoted + " = 1\n"));
}

TEST(TomlLimits, LongKeysAreRefusedLongStringsAreNot) {
  EXPECT_FALSE(check_toml_limits(std::string(kMaxTomlKeyBytes, 'k') + " = 1\n"));
  const auto bare = check_toml_limits("a = 1\n" + std::string(kMaxTomlKeyBytes + 1, 'k') + " = 1\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->line, 2);
  EXPECT_NE(bare->message.find("257 bytes"), std::string::npos) << bare->message;
  EXPECT_TRUE(check_toml_limits("[\"" + std::string(300, 'k') + "\"]\n"));
  EXPECT_TRUE(check_toml_limits("t = { " + std::string(300, 'k') + " = 1 }\n"));
  // A long string value, or a long string in an array, is no key.
  EXPECT_FALSE(check_toml_limits("description = \"" + std::string(100000, 'd') + "\"\n"));
  EXPECT_FALSE(check_toml_limits("list = [\"" + std::string(1000, 'd') + "\"]\n"));
}

TEST(TomlLimits, NestingOfArraysAndInlineTables) {
  EXPECT_FALSE(check_toml_limits("v = " + std::string(32, '[') + std::string(32, ']') + "\n"));
  const auto arrays = check_toml_limits("v = " + std::string(40000, '[') + std::string(40000, ']') + "\n");
  ASSERT_TRUE(arrays);
  EXPECT_EQ(arrays->column, 5 + 32);
  std::string tables = "v = ";
  for (int i = 0; i < 33; ++i) tables += "{ a = ";
  EXPECT_TRUE(check_toml_limits(tables + "1" + std::string(33, '}') + "\n"));
  // Arrays of tables and multi-line arrays are no deeper than they look.
  EXPECT_FALSE(check_toml_limits("[[cluster.zones]]\nname = \"a\"\n[[cluster.zones]]\nv = [\n  [1, 2],\n  [3],\n]\n"));
}

TEST(TomlLimits, StringsAndCommentsAreSkipped) {
  const std::string many_dots(200, '.');
  const std::string brackets(100, '[');
  EXPECT_FALSE(check_toml_limits("a = \"" + many_dots + brackets + "\" # " + brackets + many_dots + "\n"));
  EXPECT_FALSE(check_toml_limits("a = '" + brackets + "'\n"));
  EXPECT_FALSE(check_toml_limits("a = \"\"\"\n" + brackets + "\n\\\"\"\" " + brackets + "\n\"\"\"\n[b]\n"));
  EXPECT_FALSE(check_toml_limits("a = '''\n" + brackets + "\n'''\n"));
  EXPECT_FALSE(check_toml_limits("a = \"x\\\"" + brackets + "\"\n"));
  // The line count goes on through a multi-line string.
  const auto after = check_toml_limits("a = \"\"\"\n\n\n\"\"\"\n" + dotted(33) + " = 1\n");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->line, 5);
  // Numbers and dates in values stay far from the limits.
  EXPECT_FALSE(check_toml_limits("x = 1.5e-3\nd = 1979-05-27T07:32:00.999Z\nv = [1.0, 2.5, {a.b = 3.25}]\n"));
}

TEST(TomlLimits, ShippedScenariosKeepToTheLimits) {
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kSourceDir / "scenarios")) {
    if (!e.is_regular_file() || e.path().extension() != ".toml") continue;
    ++files;
    const auto v = check_toml_limits(read_text(e.path()));
    EXPECT_FALSE(v) << e.path() << ":" << v->line << ":" << v->column << ": " << v->message;
  }
  EXPECT_GT(files, 10);
}

TEST(TomlLimits, SetValuesAreCheckedWithTheirColumn) {
  // --set:1: "model.num_layers=" is 17 bytes: the value starts at column 18, the 33rd '[' is 32 bytes later.
  expect_error(kMinimal, {"model.num_layers=" + std::string(40000, '[')}, 1, 18 + 32, "model.num_layers",
               "nested more than 32 deep");
}

// --- unknown --set keys (defect 18) -----------------------------------------------------------------------------

TEST(TomlLimits, UnknownLongSetKeyIsReportedWithASuggestion) {
  // Before: 29 s for an 80 KB key (the distance was recomputed inside the sort's comparator, over the whole key).
  const std::string key = "model.num_layerz" + std::string(80000, 'x');
  expect_error(kMinimal, {key + "=1"}, 1, 1, key, "unknown key (closest: ");
  EXPECT_EQ(closest_names("model.num_layerz", {"cluster.nodes", "model.num_layers", "model.hidden_size"}, 2),
            "model.num_layers, model.hidden_size, ...");
  EXPECT_EQ(edit_distance("Kitten", "sitting"), 3U);
}

// --- eviction traces (defects 10, 11, 17) -----------------------------------------------------------------------

/// valid_minimal with a job on spot VMs replaying `trace` (relative to the scenario), `replications` replications.
std::filesystem::path spot_scenario(const TempDir& dir, const std::string& trace, int replications = 200) {
  return dir.write("spot.toml", read_text(kMinimal) + "\n[job]\nsteps = 100\nreplications = " +
                                    std::to_string(replications) + "\n\n[reliability]\nspot = true\n" +
                                    "spot_eviction_trace = \"" + trace + "\"\n");
}
constexpr int64_t kTraceLine = 25;  // spot_eviction_trace's line in spot_scenario
constexpr int64_t kTraceColumn = 23;  // its value (after "spot_eviction_trace = ")

TEST(EvictionTrace, ReadsSortedHoursWithComments) {
  TempDir dir;
  dir.write("ev.csv", "# hours\n3\n\n1.5 # a note\n  0\n");
  const Scenario s = load_scenario(spot_scenario(dir, "ev.csv"), {}, catalog());
  ASSERT_TRUE(s.job);
  ASSERT_EQ(s.job->eviction_trace.size(), 3U);
  EXPECT_EQ(s.job->eviction_trace[0].value(), 0.0);
  EXPECT_EQ(s.job->eviction_trace[1].value(), 1.5 * 3600.0);
  EXPECT_EQ(s.job->eviction_trace[2].value(), 3.0 * 3600.0);
}

TEST(EvictionTrace, WithoutSpotIsALocatedError) {
  // Found by the extended fuzzer: an unlocated 65 from the job simulation ("an eviction trace needs spot VMs").
  TempDir dir;
  dir.write("ev.csv", "1\n");
  expect_error(spot_scenario(dir, "ev.csv"), {"reliability.spot=false"}, kTraceLine, kTraceColumn,
               "reliability.spot_eviction_trace", "needs reliability.spot = true");
}

TEST(EvictionTrace, MissingOrDirectoryIsALocatedError) {
  // Before: a directory (or, as root, an unreadable file) was read as an empty trace: no evictions, exit 0.
  TempDir dir;
  const auto file = spot_scenario(dir, "missing.csv");
  expect_error(file, {}, kTraceLine, kTraceColumn, "reliability.spot_eviction_trace", "cannot read the eviction trace");
  std::filesystem::create_directories(dir.path() / "adir");
  expect_error(spot_scenario(dir, "adir"), {}, kTraceLine, kTraceColumn, "reliability.spot_eviction_trace",
               "directory");
  expect_error(spot_scenario(dir, "/dev/zero"), {}, kTraceLine, kTraceColumn, "reliability.spot_eviction_trace",
               "cannot read the eviction trace");
}

TEST(EvictionTrace, FifoIsRefusedNotBlockedByTheCli) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir.path() / "ev.fifo").c_str(), 0600), 0);
  const auto scenario = spot_scenario(dir, "ev.fifo");
  const std::string err = (dir.path() / "err").string();
  const std::string command = "timeout 60 '" + std::string(CLUSTERSIM_BINARY) + "' run '" + scenario.string() +
                              "' -o '" + (dir.path() / "out.h5").string() + "' >/dev/null 2>'" + err + "'";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 65) << "124 means the loader blocked on the FIFO";
  const std::string message = read_text(err);
  EXPECT_NE(message.find(scenario.string() + ":25:23: key 'reliability.spot_eviction_trace'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
}

TEST(EvictionTrace, BadEntryIsLocatedAndEchoesAtMost32Bytes) {
  TempDir dir;
  dir.write("ev.csv", "1\nroot:x:0:0:root:/root:/bin/bash-and-the-rest-of-the-line\n");
  expect_error(spot_scenario(dir, "ev.csv"), {}, 2, 1, "reliability.spot_eviction_trace",
               "got 'root:x:0:0:root:/root:/bin/bash-...'");
}

TEST(EvictionTrace, EntriesAreBoundedByTheEventBudgetAsTheyAreRead) {
  // Before: a 10^7-line trace ran about an hour (replayed evictions inside a downtime spent no budget).
  TempDir dir;
  const int64_t allowed = kMaxEvictionTraceEvents / 100000;  // 2,000 at the most replications
  std::string lines;
  for (int64_t i = 0; i <= allowed; ++i) lines += std::to_string(i) + "\n";
  dir.write("ev.csv", lines);
  expect_error(spot_scenario(dir, "ev.csv", 100000), {}, allowed + 1, 1, "reliability.spot_eviction_trace",
               "over the job simulation's event budget");
  EXPECT_EQ(read_eviction_trace(dir.path() / "ev.csv", allowed + 1).size(), static_cast<size_t>(allowed + 1));
  EXPECT_THROW(read_eviction_trace(dir.path() / "ev.csv", 3), ScenarioError);
  EXPECT_THROW(read_eviction_trace(dir.path() / "nothing.csv", 3), InputFileError);
}

// --- values at their key bounds (defect 14) ---------------------------------------------------------------------

TEST(KeyBounds, NodesAboveTheTopologysQuadraticBoundAreRefused) {
  // Before: cluster.nodes = 65536 ran 150 s and collective --nodes 32768 64 s (an O(nodes^2) routing table).
  expect_error(kMinimal, {"cluster.nodes=16385"}, 1, 15, "cluster.nodes", "bound: 2^14 VMs");
  TempDir dir;
  const std::string err = (dir.path() / "err").string();
  const int status = std::system(("timeout 60 '" + std::string(CLUSTERSIM_BINARY) +
                                  "' collective --vm-size Standard_ND96isr_H100_v5 --nodes 32768 >/dev/null 2>'" +
                                  err + "'").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 64);
  EXPECT_NE(read_text(err).find("--nodes must be at most 16384"), std::string::npos) << read_text(err);
}

}  // namespace
}  // namespace clustersim::sim
