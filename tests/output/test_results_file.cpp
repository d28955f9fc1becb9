// Tests of the HDF5 results file (sim/output/results_file.hpp, docs/hdf5-schema.md): files are written,
// then read back with the HDF5 C API (and with h5py when /usr/bin/python3 has it).
#include "sim/output/results_file.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim/output/hdf5_util.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/files.hpp"

namespace {

namespace fs = std::filesystem;
using clustersim::testing::entries;
using TempDir = clustersim::testing::TempDir;
using clustersim::sim::ColumnGroup;
using clustersim::sim::GridGroup;
using clustersim::sim::RunMetadata;
using clustersim::sim::SummaryColumn;
using clustersim::sim::write_results_file;
using clustersim::sim::hdf5::Hid;

RunMetadata sample_meta() {
  RunMetadata m;
  m.software_version = "0.1.0";
  m.git_sha = "abcdef012345";
  m.schema_version = 1;
  m.command_line = "clustersim run scenarios/gpt3.toml --seed 18446744073709551615";
  m.seed = std::numeric_limits<uint64_t>::max();
  m.scenario_toml = "[model]\nname = \"gpt3-175b\"  # µ-batch ✓\n";
  return m;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<SummaryColumn> sample_columns() {
  return {
      {"step_time_s", "s", "wall-clock time of one training step", std::vector<double>{1.5, 0.25, kNaN}},
      {"gpus", "1", "number of GPUs", std::vector<int64_t>{8, 1024, -1}},
      {"scenario", "", "scenario name", std::vector<std::string>{"gpt3", "llama-70b ✓", ""}},
  };
}

// ---- readers (HDF5 C API) --------------------------------------------------------------------------

Hid open_file(const fs::path& p) {
  return Hid(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
}

Hid vlen_utf8_type() {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

/// Checks the type is a variable-length UTF-8 string.
void expect_vlen_utf8(hid_t type, const std::string& what) {
  EXPECT_EQ(H5Tget_class(type), H5T_STRING) << what;
  EXPECT_GT(H5Tis_variable_str(type), 0) << what;
  EXPECT_EQ(H5Tget_cset(type), H5T_CSET_UTF8) << what;
}

std::string read_string_attr(hid_t obj, const char* name) {
  Hid a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) {
    ADD_FAILURE() << "no attribute " << name;
    return {};
  }
  Hid ft(H5Aget_type(a.get()), H5Tclose);
  expect_vlen_utf8(ft.get(), std::string("attribute ") + name);
  Hid mt = vlen_utf8_type();
  char* p = nullptr;
  EXPECT_GE(H5Aread(a.get(), mt.get(), &p), 0) << name;
  std::string s = p != nullptr ? p : "";
  H5free_memory(p);
  return s;
}

template <class T>
T read_scalar_attr(hid_t obj, const char* name, hid_t expected_file_type, hid_t mem_type) {
  Hid a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  T v{};
  if (!a.valid()) {
    ADD_FAILURE() << "no attribute " << name;
    return v;
  }
  Hid ft(H5Aget_type(a.get()), H5Tclose);
  EXPECT_GT(H5Tequal(ft.get(), expected_file_type), 0) << name;
  EXPECT_GE(H5Aread(a.get(), mem_type, &v), 0) << name;
  return v;
}

hsize_t rows(hid_t ds) {
  Hid space(H5Dget_space(ds), H5Sclose);
  EXPECT_EQ(H5Sget_simple_extent_ndims(space.get()), 1);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.get(), &n, nullptr);
  return n;
}

template <class T>
std::vector<T> read_numeric(hid_t file, const char* path, hid_t expected_file_type, hid_t mem_type) {
  Hid ds(H5Dopen2(file, path, H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) {
    ADD_FAILURE() << "no dataset " << path;
    return {};
  }
  Hid ft(H5Dget_type(ds.get()), H5Tclose);
  EXPECT_GT(H5Tequal(ft.get(), expected_file_type), 0) << path;
  std::vector<T> v(rows(ds.get()));
  if (!v.empty()) {
    EXPECT_GE(H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  }
  return v;
}

std::vector<std::string> read_strings(hid_t file, const char* path) {
  Hid ds(H5Dopen2(file, path, H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) {
    ADD_FAILURE() << "no dataset " << path;
    return {};
  }
  Hid ft(H5Dget_type(ds.get()), H5Tclose);
  expect_vlen_utf8(ft.get(), path);
  std::vector<char*> raw(rows(ds.get()), nullptr);
  Hid mt = vlen_utf8_type();
  if (!raw.empty()) {
    EXPECT_GE(H5Dread(ds.get(), mt.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
  }
  std::vector<std::string> out;
  for (char* p : raw) {
    out.emplace_back(p != nullptr ? p : "");
    H5free_memory(p);
  }
  return out;
}

std::pair<std::string, std::string> units_and_description(hid_t file, const char* path) {
  Hid ds(H5Dopen2(file, path, H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) return {"<missing>", "<missing>"};
  return {read_string_attr(ds.get(), "units"), read_string_attr(ds.get(), "description")};
}

struct ObjInfo {
  long long atime, mtime, ctime, btime;
  hsize_t num_attrs;
};

ObjInfo object_info(hid_t file, const char* path) {
  Hid obj(H5Oopen(file, path, H5P_DEFAULT), H5Oclose);
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info{};
  EXPECT_GE(H5Oget_info3(obj.get(), &info, H5O_INFO_TIME | H5O_INFO_NUM_ATTRS), 0) << path;
#else
  H5O_info_t info{};
  EXPECT_GE(H5Oget_info2(obj.get(), &info, H5O_INFO_TIME | H5O_INFO_NUM_ATTRS), 0) << path;
#endif
  return {static_cast<long long>(info.atime), static_cast<long long>(info.mtime),
          static_cast<long long>(info.ctime), static_cast<long long>(info.btime), info.num_attrs};
}

hsize_t link_count(hid_t file, const char* group) {
  Hid g(H5Gopen2(file, group, H5P_DEFAULT), H5Gclose);
  H5G_info_t info{};
  EXPECT_GE(H5Gget_info(g.get(), &info), 0);
  return info.nlinks;
}

/// Runs a shell command; returns (exit status, combined output).
std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// ---- tests -----------------------------------------------------------------------------------------

TEST(ResultsFile, RoundTripsColumnsUnitsDescriptionsAndRootAttributes) {
  TempDir dir;
  const fs::path path = dir.path() / "results.h5";
  write_results_file(path, sample_meta(), sample_columns());
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"results.h5"});  // no temp file left

  Hid file = open_file(path);
  ASSERT_TRUE(file.valid());
  Hid root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
  EXPECT_EQ(read_string_attr(root.get(), "software_version"), "0.1.0");
  EXPECT_EQ(read_string_attr(root.get(), "git_sha"), "abcdef012345");
  EXPECT_EQ(read_string_attr(root.get(), "command_line"), sample_meta().command_line);
  EXPECT_EQ(read_string_attr(root.get(), "scenario_toml"), sample_meta().scenario_toml);
  EXPECT_EQ(read_scalar_attr<int64_t>(root.get(), "schema_version", H5T_STD_I64LE, H5T_NATIVE_INT64), 1);
  EXPECT_EQ(read_scalar_attr<uint64_t>(root.get(), "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(object_info(file.get(), "/").num_attrs, 6u);  // exactly those six; no created_utc
  EXPECT_EQ(H5Aexists(root.get(), "created_utc"), 0);

  EXPECT_EQ(link_count(file.get(), "/"), 1u);
  EXPECT_EQ(link_count(file.get(), "/summary"), 3u);

  const auto t = read_numeric<double>(file.get(), "/summary/step_time_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], 1.5);
  EXPECT_EQ(t[1], 0.25);
  EXPECT_TRUE(std::isnan(t[2]));
  EXPECT_EQ(read_numeric<int64_t>(file.get(), "/summary/gpus", H5T_STD_I64LE, H5T_NATIVE_INT64),
            (std::vector<int64_t>{8, 1024, -1}));
  EXPECT_EQ(read_strings(file.get(), "/summary/scenario"),
            (std::vector<std::string>{"gpt3", "llama-70b ✓", ""}));

  using UD = std::pair<std::string, std::string>;
  EXPECT_EQ(units_and_description(file.get(), "/summary/step_time_s"),
            UD("s", "wall-clock time of one training step"));
  EXPECT_EQ(units_and_description(file.get(), "/summary/gpus"), UD("1", "number of GPUs"));
  EXPECT_EQ(units_and_description(file.get(), "/summary/scenario"), UD("", "scenario name"));
}

TEST(ResultsFile, WritesNoObjectTimestamps) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  write_results_file(path, sample_meta(), sample_columns());
  Hid file = open_file(path);
  ASSERT_TRUE(file.valid());
  for (const char* obj : {"/", "/summary", "/summary/step_time_s", "/summary/gpus", "/summary/scenario"}) {
    const ObjInfo i = object_info(file.get(), obj);
    EXPECT_EQ(i.atime, 0) << obj;
    EXPECT_EQ(i.mtime, 0) << obj;
    EXPECT_EQ(i.ctime, 0) << obj;
    EXPECT_EQ(i.btime, 0) << obj;
  }
}

TEST(ResultsFile, SameInputGivesByteIdenticalFiles) {
  TempDir dir;
  const fs::path a = dir.path() / "a.h5";
  const fs::path b = dir.path() / "sub" / "b.h5";
  fs::create_directory(dir.path() / "sub");
  write_results_file(a, sample_meta(), sample_columns());
  // Cross a second boundary so that any timestamp (1 s resolution in HDF5) would show.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  write_results_file(b, sample_meta(), sample_columns());
  const std::string bytes_a = clustersim::testing::read_file(a);
  ASSERT_FALSE(bytes_a.empty());
  EXPECT_TRUE(bytes_a == clustersim::testing::read_file(b)) << "files differ";

  write_results_file(a, sample_meta(), sample_columns());  // rewrite over itself
  EXPECT_TRUE(bytes_a == clustersim::testing::read_file(a)) << "rewrite differs";

  RunMetadata other = sample_meta();
  other.seed = 7;
  write_results_file(b, other, sample_columns());
  EXPECT_FALSE(bytes_a == clustersim::testing::read_file(b)) << "a different seed must change the file";
}

TEST(ResultsFile, ZeroRowsAndZeroColumnsAreAllowed) {
  TempDir dir;
  const fs::path path = dir.path() / "empty.h5";
  write_results_file(path, sample_meta(),
                     {{"x_s", "s", "d", std::vector<double>{}},
                      {"n", "1", "d", std::vector<int64_t>{}},
                      {"label", "", "d", std::vector<std::string>{}}});
  {
    Hid file = open_file(path);
    ASSERT_TRUE(file.valid());
    EXPECT_TRUE(read_numeric<double>(file.get(), "/summary/x_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE).empty());
    EXPECT_TRUE(read_numeric<int64_t>(file.get(), "/summary/n", H5T_STD_I64LE, H5T_NATIVE_INT64).empty());
    EXPECT_TRUE(read_strings(file.get(), "/summary/label").empty());
    EXPECT_EQ(units_and_description(file.get(), "/summary/x_s").first, "s");
  }
  write_results_file(path, sample_meta(), {});
  Hid file = open_file(path);
  ASSERT_TRUE(file.valid());
  EXPECT_EQ(link_count(file.get(), "/summary"), 0u);
}

TEST(ResultsFile, MismatchedColumnLengthsThrowAndLeaveNothing) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  std::vector<SummaryColumn> cols = sample_columns();
  std::get<std::vector<int64_t>>(cols[1].values).push_back(4);
  EXPECT_THROW(write_results_file(path, sample_meta(), cols), std::invalid_argument);
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(ResultsFile, BadNamesAndNulCharactersThrow) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  for (const std::string name : {"", "Step_time", "a-b", "a b", "a/b", "é"}) {
    EXPECT_THROW(write_results_file(path, sample_meta(), {{name, "s", "d", std::vector<double>{1.0}}}),
                 std::invalid_argument)
        << "name '" << name << "'";
  }
  EXPECT_THROW(write_results_file(path, sample_meta(),
                                  {{"a", "s", "d", std::vector<double>{1.0}},
                                   {"a", "s", "d", std::vector<double>{2.0}}}),
               std::invalid_argument);
  EXPECT_THROW(write_results_file(path, sample_meta(),
                                  {{"a", "", "d", std::vector<std::string>{std::string("x\0y", 3)}}}),
               std::invalid_argument);
  EXPECT_TRUE(entries(dir.path()).empty());
}

/// Checks a failed write throws std::runtime_error whose message names `path` and `call`.
void expect_runtime_error_naming(const fs::path& path, const std::string& call) {
  try {
    write_results_file(path, sample_meta(), sample_columns());
    ADD_FAILURE() << "no exception for " << path;
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(call), std::string::npos) << msg;
  }
}

TEST(ResultsFile, ReadOnlyDirectoryThrowsWithPathAndLeavesNothing) {
  TempDir dir;
  const fs::path ro = dir.path() / "ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(ro.c_str(), W_OK) == 0) GTEST_SKIP() << "running with privileges that ignore permissions";
  expect_runtime_error_naming(ro / "r.h5", "H5Fcreate");
  EXPECT_TRUE(entries(ro).empty());
}

TEST(ResultsFile, UnwritableLocationThrowsWithPathAndLeavesNothing) {
  // These fail even for root: a missing directory, and a "directory" that is a regular file.
  TempDir dir;
  expect_runtime_error_naming(dir.path() / "missing" / "r.h5", "H5Fcreate");
  std::ofstream(dir.path() / "plain") << "x";
  expect_runtime_error_naming(dir.path() / "plain" / "r.h5", "H5Fcreate");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"plain"});
}

TEST(ResultsFile, FailureAfterTheTempFileExistsRemovesIt) {
  // The target is a non-empty directory: HDF5 writes the temp file, then rename() fails.
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  fs::create_directory(path);
  std::ofstream(path / "keep") << "x";
  expect_runtime_error_naming(path, "rename");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"r.h5"});
  EXPECT_EQ(entries(path), std::vector<std::string>{"keep"});
}

TEST(ResultsFile, ReplacesAnExistingFileAtomically) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  std::ofstream(path) << "old contents";
  // A second name for the old inode: an in-place rewrite would change what it sees, a rename does not.
  fs::create_hard_link(path, dir.path() / "old_link");
  write_results_file(path, sample_meta(), sample_columns());
  EXPECT_EQ(clustersim::testing::read_file(dir.path() / "old_link"), "old contents");
  EXPECT_GT(H5Fis_hdf5(path.c_str()), 0);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"old_link", "r.h5"}));
  Hid file = open_file(path);
  ASSERT_TRUE(file.valid());
  EXPECT_EQ(read_strings(file.get(), "/summary/scenario").size(), 3u);
}

TEST(ResultsFile, FailedWriteLeavesAnExistingFileUntouched) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  std::ofstream(path) << "old contents";
  // Occupy the temp name with a directory so that H5Fcreate fails.
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  fs::create_directory(tmp);
  expect_runtime_error_naming(path, "H5Fcreate");
  EXPECT_EQ(clustersim::testing::read_file(path), "old contents");
  EXPECT_TRUE(fs::is_directory(tmp));  // not ours to delete
}

TEST(ResultsFile, ReadableFromPythonWithH5pyAndPandas) {
  const std::string python = "/usr/bin/python3";
  if (!fs::exists(python)) GTEST_SKIP() << python << " not found";
  if (run_command(python + " -c 'import h5py'").first != 0) GTEST_SKIP() << "h5py not importable";

  TempDir dir;
  const fs::path path = dir.path() / "results.h5";
  write_results_file(path, sample_meta(), sample_columns());
  // The pandas part is the snippet from docs/hdf5-schema.md; it is skipped when pandas is missing.
  const std::string script = R"PY(
import math, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    s = f["summary"]
    assert sorted(s.keys()) == ["gpus", "scenario", "step_time_s"], list(s.keys())
    assert s["step_time_s"].attrs["units"] == "s", s["step_time_s"].attrs["units"]
    assert s["gpus"].attrs["units"] == "1"
    assert s["scenario"].attrs["units"] == ""
    assert s["gpus"].attrs["description"] == "number of GPUs"
    t = s["step_time_s"][()]
    assert t.dtype == "float64" and t[0] == 1.5 and t[1] == 0.25 and math.isnan(t[2]), t
    assert s["gpus"][()].dtype == "int64" and list(s["gpus"][()]) == [8, 1024, -1]
    assert list(s["scenario"].asstr()[()]) == ["gpt3", "llama-70b \u2713", ""]
    assert f.attrs["schema_version"] == 1 and f.attrs["seed"] == 2**64 - 1
    assert f.attrs["git_sha"] == "abcdef012345"
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        df = pd.DataFrame({k: f["summary"][k][()] for k in f["summary"]})
        df = df.apply(lambda c: c.str.decode("utf-8") if c.dtype == object else c)
        assert list(df["scenario"]) == ["gpt3", "llama-70b \u2713", ""], df
        assert len(df) == 3 and df["gpus"].sum() == 1031
print("ok")
)PY";
  const auto [rc, out] = run_command(python + " -c '" + script + "' '" + path.string() + "'");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
}

// ---- groups outside /summary (ColumnGroup) -----------------------------------------------------------------

std::vector<ColumnGroup> sample_groups() {
  return {
      {"runs/0/stages",
       "one row per pipeline stage of run 0",
       {{"bubble_time_s", "s", "pipeline bubble", std::vector<double>{0.5, 0.25}},
        {"stage", "1", "pipeline rank", std::vector<int64_t>{0, 1}},
        {"label", "", "a label", std::vector<std::string>{"first ✓", ""}}}},
      {"runs/1/stages", "", {{"bubble_time_s", "s", "pipeline bubble", std::vector<double>{1.0, 2.0, 3.0}}}},
  };
}

TEST(ResultsFileGroups, RoundTripColumnsUnitsAndDescriptions) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  write_results_file(path, sample_meta(), sample_columns(), sample_groups());
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"r.h5"});
  Hid file = open_file(path);
  ASSERT_TRUE(file.valid());
  EXPECT_EQ(link_count(file.get(), "/"), 2u);  // summary, runs
  EXPECT_EQ(link_count(file.get(), "/summary"), 3u);
  EXPECT_EQ(link_count(file.get(), "/runs"), 2u);
  EXPECT_EQ(link_count(file.get(), "/runs/0"), 1u);
  EXPECT_EQ(link_count(file.get(), "/runs/0/stages"), 3u);
  EXPECT_EQ(link_count(file.get(), "/runs/1/stages"), 1u);
  // Each group has its own row count.
  EXPECT_EQ(read_numeric<double>(file.get(), "/runs/0/stages/bubble_time_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE),
            (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(read_numeric<int64_t>(file.get(), "/runs/0/stages/stage", H5T_STD_I64LE, H5T_NATIVE_INT64),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(read_strings(file.get(), "/runs/0/stages/label"), (std::vector<std::string>{"first ✓", ""}));
  EXPECT_EQ(read_numeric<double>(file.get(), "/runs/1/stages/bubble_time_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE),
            (std::vector<double>{1.0, 2.0, 3.0}));
  using UD = std::pair<std::string, std::string>;
  EXPECT_EQ(units_and_description(file.get(), "/runs/0/stages/bubble_time_s"), UD("s", "pipeline bubble"));
  EXPECT_EQ(units_and_description(file.get(), "/runs/0/stages/stage"), UD("1", "pipeline rank"));
  EXPECT_EQ(units_and_description(file.get(), "/runs/0/stages/label"), UD("", "a label"));
  // The declared groups carry a description; the intermediate ones nothing.
  Hid stages(H5Gopen2(file.get(), "/runs/0/stages", H5P_DEFAULT), H5Gclose);
  ASSERT_TRUE(stages.valid());
  EXPECT_EQ(read_string_attr(stages.get(), "description"), "one row per pipeline stage of run 0");
  Hid other(H5Gopen2(file.get(), "/runs/1/stages", H5P_DEFAULT), H5Gclose);
  ASSERT_TRUE(other.valid());
  EXPECT_EQ(read_string_attr(other.get(), "description"), "");
  EXPECT_EQ(object_info(file.get(), "/runs").num_attrs, 0u);
  EXPECT_EQ(object_info(file.get(), "/runs/0").num_attrs, 0u);
  EXPECT_EQ(object_info(file.get(), "/runs/0/stages").num_attrs, 1u);
  // The summary is unchanged by the groups.
  EXPECT_EQ(read_numeric<int64_t>(file.get(), "/summary/gpus", H5T_STD_I64LE, H5T_NATIVE_INT64),
            (std::vector<int64_t>{8, 1024, -1}));
}

TEST(ResultsFileGroups, AGroupDeclaredAfterItWasCreatedAsAnAncestorKeepsBoth) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  write_results_file(path, sample_meta(), {},
                     {{"runs/0/stages", "stages", {{"x", "1", "d", std::vector<int64_t>{1}}}},
                      {"runs/0", "run 0", {{"y", "1", "d", std::vector<int64_t>{2, 3}}}}});
  Hid file = open_file(path);
  ASSERT_TRUE(file.valid());
  EXPECT_EQ(link_count(file.get(), "/runs/0"), 2u);  // stages, y
  Hid run(H5Gopen2(file.get(), "/runs/0", H5P_DEFAULT), H5Gclose);
  EXPECT_EQ(read_string_attr(run.get(), "description"), "run 0");
  EXPECT_EQ(read_numeric<int64_t>(file.get(), "/runs/0/y", H5T_STD_I64LE, H5T_NATIVE_INT64),
            (std::vector<int64_t>{2, 3}));
}

TEST(ResultsFileGroups, NoTimestampsAndByteIdenticalFiles) {
  TempDir dir;
  const fs::path a = dir.path() / "a.h5";
  const fs::path b = dir.path() / "b.h5";
  write_results_file(a, sample_meta(), sample_columns(), sample_groups());
  {
    Hid file = open_file(a);
    ASSERT_TRUE(file.valid());
    for (const char* obj : {"/runs", "/runs/0", "/runs/0/stages", "/runs/0/stages/bubble_time_s", "/runs/1",
                            "/runs/1/stages/bubble_time_s"}) {
      const ObjInfo i = object_info(file.get(), obj);
      EXPECT_EQ(i.atime + i.mtime + i.ctime + i.btime, 0) << obj;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  write_results_file(b, sample_meta(), sample_columns(), sample_groups());
  EXPECT_TRUE(clustersim::testing::read_file(a) == clustersim::testing::read_file(b)) << "files differ";
  // The three-argument form is the four-argument one without groups.
  write_results_file(a, sample_meta(), sample_columns());
  write_results_file(b, sample_meta(), sample_columns(), {});
  EXPECT_TRUE(clustersim::testing::read_file(a) == clustersim::testing::read_file(b)) << "files differ";
}

TEST(ResultsFileGroups, InvalidGroupsThrowBeforeWritingAnything) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  const SummaryColumn x{"x", "1", "d", std::vector<int64_t>{1}};
  auto expect_invalid = [&](const std::vector<ColumnGroup>& groups, const std::string& why) {
    EXPECT_THROW(write_results_file(path, sample_meta(), sample_columns(), groups), std::invalid_argument) << why;
  };
  for (const std::string bad : {"", "/runs", "runs/", "runs//0", "Runs/0", "runs/0-1", "summary", "summary/x"}) {
    expect_invalid({{bad, "", {x}}}, "path '" + bad + "'");
  }
  expect_invalid({{"runs/0", "", {x}}, {"runs/0", "", {x}}}, "duplicate path");
  expect_invalid({{"runs/0", "", {x, x}}}, "duplicate column");
  expect_invalid({{"runs/0", "", {x, {"y", "1", "d", std::vector<int64_t>{1, 2}}}}}, "lengths differ");
  expect_invalid({{"runs/0", "", {{"Bad", "1", "d", std::vector<int64_t>{1}}}}}, "column name");
  expect_invalid({{"runs/0", std::string("a\0b", 3), {x}}}, "NUL in description");
  expect_invalid({{"runs/0", "", {{"x", "", "d", std::vector<std::string>{std::string("a\0b", 3)}}}}}, "NUL value");
  expect_invalid({{"runs", "", {{"0", "1", "d", std::vector<int64_t>{1}}}}, {"runs/0/stages", "", {x}}},
                 "dataset /runs/0 is also an ancestor of a group");
  expect_invalid({{"runs/0", "", {{"stages", "1", "d", std::vector<int64_t>{1}}}}, {"runs/0/stages", "", {x}}},
                 "dataset is also a group");
  EXPECT_TRUE(entries(dir.path()).empty());
  // "runs/0" does not contain "runs/01": both are fine.
  write_results_file(path, sample_meta(), sample_columns(),
                     {{"runs", "", {{"0", "1", "d", std::vector<int64_t>{1}}}}, {"runs/01", "", {x}}});
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"r.h5"});
}

TEST(ResultsFileGroups, ReadableFromPythonWithH5py) {
  const std::string python = "/usr/bin/python3";
  if (!fs::exists(python)) GTEST_SKIP() << python << " not found";
  if (run_command(python + " -c 'import h5py'").first != 0) GTEST_SKIP() << "h5py not importable";
  TempDir dir;
  const fs::path path = dir.path() / "results.h5";
  write_results_file(path, sample_meta(), sample_columns(), sample_groups());
  const std::string script = R"PY(
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    g = f["runs/0/stages"]
    assert g.attrs["description"] == "one row per pipeline stage of run 0"
    assert sorted(g.keys()) == ["bubble_time_s", "label", "stage"], list(g.keys())
    assert list(g["bubble_time_s"][()]) == [0.5, 0.25]
    assert g["bubble_time_s"].attrs["units"] == "s"
    assert list(g["label"].asstr()[()]) == ["first \u2713", ""]
    assert len(f["runs/1/stages/bubble_time_s"]) == 3
print("ok")
)PY";
  const auto [rc, out] = run_command(python + " -c '" + script + "' '" + path.string() + "'");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
}

TEST(ResultsFileGrids, InvalidGridsThrowBeforeWritingAnything) {
  TempDir dir;
  const fs::path path = dir.path() / "r.h5";
  const SummaryColumn axis{"a", "1", "d", std::vector<double>{1, 2}};
  const SummaryColumn labels{"b", "", "d", std::vector<std::string>{"x", "y", "z"}};
  const SummaryColumn cells{"v", "s", "d", std::vector<double>(6, 1.0)};
  const std::vector<ColumnGroup> none;
  auto expect_invalid = [&](const std::vector<GridGroup>& grids, const std::string& why) {
    EXPECT_THROW(write_results_file(path, sample_meta(), sample_columns(), none, grids), std::invalid_argument)
        << why;
    EXPECT_FALSE(fs::exists(path)) << why;
  };
  expect_invalid({{"sweep", {}, {cells}}}, "no axes");
  expect_invalid({{"sweep", {axis}, {cells}}}, "wrong size");
  expect_invalid({{"sweep", {axis, labels}, {{"v", "s", "d", std::vector<int64_t>(6, 1)}}}}, "int64 dataset");
  expect_invalid({{"sweep", {axis, {"b", "1", "d", std::vector<int64_t>{1, 2, 3}}}, {cells}}}, "int64 axis");
  expect_invalid({{"sweep", {axis, labels}, {{"a", "s", "d", std::vector<double>(6, 1.0)}}}}, "duplicate name");
  expect_invalid({{"summary", {axis, labels}, {cells}}}, "under /summary");
  // A grid next to a column group in the same parent group is fine.
  write_results_file(path, sample_meta(), sample_columns(),
                     {{"sweep/columns", "d", {{"name", "", "d", std::vector<std::string>{"x"}}}}},
                     {{"sweep", {axis, labels}, {cells}}});
  EXPECT_TRUE(fs::exists(path));
}

}  // namespace
