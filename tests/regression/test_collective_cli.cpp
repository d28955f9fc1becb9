// End-to-end: `clustersim collective` prints an nccl-tests-style sweep, writes its HDF5 file (read back here with
// the HDF5 C API, and checked against the column table in docs/hdf5-schema.md), and exits 64 on malformed
// options and 65 on options the catalog or the model rejects, writing nothing.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

constexpr const char* kH100 = "--vm-size Standard_ND96isr_H100_v5";

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-coll-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// The table's data rows (lines not starting with '#'), split on white space.
std::vector<std::vector<std::string>> table_rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Columns: size count type time algbw busbw algorithm/protocol [crosses-zones]
constexpr size_t kSize = 0, kCount = 1, kType = 2, kTime = 3, kAlgbw = 4, kBusbw = 5, kHow = 6, kCrosses = 7;

TEST(CollectiveCli, H100OneNodeSweepMatchesNcclTestsAt8G) {
  const auto r = run_cli(std::string("collective ") + kH100 +
                         " --nodes 1 --op all_reduce --min-bytes 1K --max-bytes 8G");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* word : {"Standard_ND96isr_H100_v5", "all_reduce", "nodes 1", "gpus 8", "fat_tree", "zones none"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  }
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 24U) << r.out;
  int64_t expected = 1024;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 7U) << r.out;
    EXPECT_EQ(std::stoll(row[kSize]), expected);
    EXPECT_EQ(std::stoll(row[kCount]), expected / 4);
    EXPECT_EQ(row[kType], "float");
    const double time_us = std::stod(row[kTime]);
    const double algbw = std::stod(row[kAlgbw]);
    EXPECT_GT(time_us, 0.0);
    EXPECT_NEAR(algbw, static_cast<double>(expected) / time_us / 1e3, 0.01 + 1e-3 * algbw);
    EXPECT_NEAR(std::stod(row[kBusbw]), algbw * 2.0 * 7.0 / 8.0, 0.01 + 1e-3 * algbw);
    EXPECT_NE(row[kHow].find('/'), std::string::npos);
    expected *= 2;
  }
  // nccl-tests all_reduce_perf on ND H100 v5, 8 GiB: busbw 478.87 GB/s (tests/validation/test_nccl_allreduce.cpp).
  const double busbw_8g = std::stod(rows.back()[kBusbw]);
  EXPECT_NEAR(busbw_8g, 478.87, 0.10 * 478.87) << r.out;
}

TEST(CollectiveCli, StepFactorAndPlainByteCounts) {
  const auto r = run_cli(std::string("collective ") + kH100 + " --min-bytes 1000 --max-bytes 1M --step-factor 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 4U) << r.out;  // 1000, 10000, 100000, 1000000 (<= 1048576)
  EXPECT_EQ(rows.back()[kSize], "1000000");
}

TEST(CollectiveCli, TwoZonesCrossAndAreMuchSlowerThanOneZone) {
  const auto zoned = run_cli(std::string("collective ") + kH100 + " --nodes 2 --zones a:1,b:1 --max-bytes 1G");
  const auto flat = run_cli(std::string("collective ") + kH100 + " --nodes 2 --max-bytes 1G");
  ASSERT_EQ(zoned.exit_code, 0) << zoned.err;
  ASSERT_EQ(flat.exit_code, 0) << flat.err;
  EXPECT_NE(zoned.out.find("a:1,b:1"), std::string::npos) << zoned.out;
  EXPECT_NE(zoned.out.find("crosses zones"), std::string::npos) << zoned.out;
  EXPECT_EQ(flat.out.find("crosses zones"), std::string::npos) << flat.out;
  const auto zoned_rows = table_rows(zoned.out);
  const auto flat_rows = table_rows(flat.out);
  ASSERT_EQ(zoned_rows.size(), flat_rows.size());
  ASSERT_FALSE(zoned_rows.empty());
  for (const auto& row : zoned_rows) {
    ASSERT_EQ(row.size(), 8U) << zoned.out;
    EXPECT_EQ(row[kCrosses], "yes");
  }
  for (const auto& row : flat_rows) ASSERT_EQ(row.size(), 7U) << flat.out;
  // The zones are joined by the 80 Gb/s front-end Ethernet, the nodes of one zone by 8 x 400 Gb/s InfiniBand.
  const double zoned_busbw = std::stod(zoned_rows.back()[kBusbw]);
  const double flat_busbw = std::stod(flat_rows.back()[kBusbw]);
  EXPECT_LT(zoned_busbw, 0.2 * flat_busbw) << zoned.out << flat.out;
  // Small messages pay the 1 ms one-way inter-zone latency.
  EXPECT_GT(std::stod(zoned_rows.front()[kTime]), 1000.0) << zoned.out;
}

TEST(CollectiveCli, PartialNvlinkDomainsAreTheVmsOfEachRackTheClusterUses) {
  // 32 ND GB200 v6 VMs taking 16 of each rack's 18: 2 domains of 64 GPUs, 128 ranks.
  const std::string gb200 = "collective --vm-size Standard_ND128isr_NDR_GB200_v6 --fabric rail_optimized";
  const auto r = run_cli(gb200 + " --nodes 32 --vms-per-nvlink-domain 16 --min-bytes 1G --max-bytes 1G");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"nodes 32", "gpus 128", "NVLink domains of 16 VMs"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  }
  ASSERT_EQ(table_rows(r.out).size(), 1U) << r.out;
  // 30 VMs are not whole domains of 16: the catalog's rule, exit 65, naming both options.
  const auto bad = run_cli(gb200 + " --nodes 30 --vms-per-nvlink-domain 16 --max-bytes 1M");
  EXPECT_EQ(bad.exit_code, 65) << bad.err;
  EXPECT_NE(bad.err.find("--nodes / --vms-per-nvlink-domain: 30 VMs are not whole domains of 16 VMs"),
            std::string::npos)
      << bad.err;
  // Above the rack's 18: 65; below 1: a malformed option, 64.
  EXPECT_EQ(run_cli(gb200 + " --nodes 19 --vms-per-nvlink-domain 19 --max-bytes 1M").exit_code, 65);
  EXPECT_EQ(run_cli(gb200 + " --nodes 32 --vms-per-nvlink-domain 0 --max-bytes 1M").exit_code, 64);
}

TEST(CollectiveCli, SendRecvIsBetweenTheFirstAndLastRank) {
  const auto r = run_cli(std::string("collective ") + kH100 + " --nodes 2 --op send_recv --max-bytes 1M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ranks 0 -> 15"), std::string::npos) << r.out;
  for (const auto& row : table_rows(r.out)) EXPECT_EQ(row[kAlgbw], row[kBusbw]);
}

// ---- the HDF5 file ------------------------------------------------------------------------------------

/// Owns an hid_t.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id >= 0) close(id);
  }
};

std::string read_string_attribute(hid_t object, const char* name) {
  Id attr(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (attr.id < 0) return "<missing>";
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id, H5T_VARIABLE);
  H5Tset_cset(type.id, H5T_CSET_UTF8);
  char* value = nullptr;
  if (H5Aread(attr.id, type.id, &value) < 0) return "<unreadable>";
  std::string s = value != nullptr ? value : "";
  H5free_memory(value);
  return s;
}

struct DatasetInfo {
  H5T_class_t type_class = H5T_NO_CLASS;
  hsize_t rows = 0;
  std::string units;
};

std::map<std::string, DatasetInfo> summary_datasets(hid_t file) {
  std::map<std::string, DatasetInfo> out;
  Id summary(H5Gopen2(file, "summary", H5P_DEFAULT), H5Gclose);
  if (summary.id < 0) return out;
  H5G_info_t info{};
  H5Gget_info(summary.id, &info);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256] = {};
    H5Lget_name_by_idx(summary.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
    Id ds(H5Dopen2(summary.id, name, H5P_DEFAULT), H5Dclose);
    Id type(H5Dget_type(ds.id), H5Tclose);
    Id space(H5Dget_space(ds.id), H5Sclose);
    DatasetInfo d;
    d.type_class = H5Tget_class(type.id);
    H5Sget_simple_extent_dims(space.id, &d.rows, nullptr);
    d.units = read_string_attribute(ds.id, "units");
    out[name] = d;
  }
  return out;
}

template <class T>
std::vector<T> read_column(hid_t file, const char* path, hid_t mem_type) {
  Id ds(H5Dopen2(file, path, H5P_DEFAULT), H5Dclose);
  Id space(H5Dget_space(ds.id), H5Sclose);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.id, &n, nullptr);
  std::vector<T> v(n);
  if (n > 0) H5Dread(ds.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  return v;
}

/// The `| name | units | meaning |` rows of the doc section on `clustersim collective`: name -> units.
std::map<std::string, std::string> documented_columns() {
  const std::string doc = testing::read_file(fs::path(CLUSTERSIM_SOURCE_DIR) / "docs" / "hdf5-schema.md");
  const size_t start = doc.find("## Columns written by `clustersim collective`");
  EXPECT_NE(start, std::string::npos) << "docs/hdf5-schema.md has no section on clustersim collective";
  std::map<std::string, std::string> columns;
  if (start == std::string::npos) return columns;
  const size_t end = doc.find("\n## ", start + 1);
  std::istringstream lines(doc.substr(start, end == std::string::npos ? std::string::npos : end - start));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      const size_t a = cell.find_first_not_of(' ');
      const size_t b = cell.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
    }
    if (cells.size() >= 2 && cells[0].size() > 2) columns[cells[0].substr(1, cells[0].size() - 2)] = cells[1];
  }
  return columns;
}

TEST(CollectiveCli, WritesTheSweepToHdf5AsDocumented) {
  const fs::path dir = temp_dir("h5");
  const fs::path file = dir / "sweep.h5";
  const auto r = run_cli(std::string("collective ") + kH100 + " --nodes 2 --zones a:1,b:1 --min-bytes 1K --max-bytes 1M" +
                         " -o '" + file.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(file));
  EXPECT_NE(r.out.find(file.string()), std::string::npos) << r.out;
  const auto printed = table_rows(r.out);

  Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  ASSERT_GE(f.id, 0);
  EXPECT_NE(read_string_attribute(f.id, "command_line").find("collective"), std::string::npos);
  const std::string toml = read_string_attribute(f.id, "scenario_toml");
  for (const char* line : {"vm_size = \"Standard_ND96isr_H100_v5\"", "nodes = 2", "gpus = 16", "op = \"all_reduce\"",
                           "min_bytes = 1024", "max_bytes = 1048576", "{ name = \"a\", nodes = 1 }"}) {
    EXPECT_NE(toml.find(line), std::string::npos) << line << "\n" << toml;
  }
  {
    Id seed_attr(H5Aopen(f.id, "seed", H5P_DEFAULT), H5Aclose);
    uint64_t seed = 99;
    H5Aread(seed_attr.id, H5T_NATIVE_UINT64, &seed);
    EXPECT_EQ(seed, 0U);
  }

  const auto datasets = summary_datasets(f.id);
  const auto documented = documented_columns();
  for (const char* name : {"bytes", "time_s", "algbw_gb_per_s", "busbw_gb_per_s", "algorithm", "protocol",
                           "crosses_zones", "vm_size", "nodes", "gpus", "op"}) {
    EXPECT_EQ(datasets.count(name), 1U) << name;
  }
  EXPECT_EQ(datasets.size(), documented.size()) << "the doc table and the file differ";
  for (const auto& [name, info] : datasets) {
    EXPECT_EQ(info.rows, printed.size()) << name;
    ASSERT_EQ(documented.count(name), 1U) << name << " is not in docs/hdf5-schema.md";
    EXPECT_EQ(documented.at(name), info.units) << name;
  }
  EXPECT_EQ(datasets.at("bytes").type_class, H5T_INTEGER);
  EXPECT_EQ(datasets.at("crosses_zones").type_class, H5T_INTEGER);
  EXPECT_EQ(datasets.at("busbw_gb_per_s").type_class, H5T_FLOAT);
  EXPECT_EQ(datasets.at("algorithm").type_class, H5T_STRING);

  const auto bytes = read_column<int64_t>(f.id, "/summary/bytes", H5T_NATIVE_INT64);
  const auto time = read_column<double>(f.id, "/summary/time_s", H5T_NATIVE_DOUBLE);
  const auto busbw = read_column<double>(f.id, "/summary/busbw_gb_per_s", H5T_NATIVE_DOUBLE);
  const auto crosses = read_column<int64_t>(f.id, "/summary/crosses_zones", H5T_NATIVE_INT64);
  ASSERT_EQ(bytes.size(), printed.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(bytes[i], std::stoll(printed[i][kSize]));
    EXPECT_NEAR(time[i] * 1e6, std::stod(printed[i][kTime]), 0.006);
    EXPECT_NEAR(busbw[i], std::stod(printed[i][kBusbw]), 0.006);
    EXPECT_EQ(crosses[i], 1);
  }
  fs::remove_all(dir);
}

TEST(CollectiveCli, SameInputGivesByteIdenticalFiles) {
  const fs::path dir = temp_dir("determinism");
  const std::string args = std::string("collective ") + kH100 + " --max-bytes 1M -o '" + (dir / "a.h5").string() + "'";
  ASSERT_EQ(run_cli(args).exit_code, 0);
  const std::string first = testing::read_file(dir / "a.h5");
  ASSERT_EQ(run_cli(args).exit_code, 0);
  EXPECT_EQ(testing::read_file(dir / "a.h5"), first);
  fs::remove_all(dir);
}

// ---- errors -------------------------------------------------------------------------------------------

struct BadOptions {
  const char* args;      ///< after "collective"
  int exit_code;         ///< 64 usage, 65 bad data
  const char* message;   ///< expected in stderr
};

class CollectiveCliBad : public ::testing::TestWithParam<BadOptions> {};

TEST_P(CollectiveCliBad, ExitsWithAMessageAndWritesNothing) {
  const BadOptions& bad = GetParam();
  const fs::path dir = temp_dir("bad");
  const auto r = run_cli(std::string("collective ") + bad.args + " -o '" + (dir / "never.h5").string() + "'");
  EXPECT_EQ(r.exit_code, bad.exit_code) << r.err;
  EXPECT_NE(r.err.find(bad.message), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(fs::is_empty(dir)) << "something was written";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    EachClass, CollectiveCliBad,
    ::testing::Values(
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --min-bytes 12Q", 64, "--min-bytes: '12Q' is not a size"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --min-bytes lots", 64, "--min-bytes: 'lots' is not a size"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --max-bytes 1T", 64, "--max-bytes: '1T' is not a size"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --min-bytes 2M --max-bytes 1M", 64, "--min-bytes"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --op all_reduse", 64, "all_reduse"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --algorithm fastest", 64, "fastest"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --fabric torus", 64, "torus"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --nodes 2 --zones a:1,b:2", 64, "--zones"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --nodes 2 --zones a-1,b-1", 64, "--zones"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --no-such-option", 64, "no-such-option"},
        BadOptions{"--nodes 2", 64, "--vm-size"},
        BadOptions{"--vm-size Standard_ND96isr_B200_v9", 65, "Standard_ND96isr_B200_v9"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --gpus 9", 65, "--gpus 9"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --nodes 2 --algorithm nvls", 65, "nvls"},
        BadOptions{"--vm-size Standard_ND96isr_H100_v5 --algorithm tree", 65, "tree"}));

TEST(CollectiveCli, UnwritableOutputExitsSeventyFour) {
  const auto r = run_cli(std::string("collective ") + kH100 + " --max-bytes 4K -o /no/such/dir/x.h5");
  EXPECT_EQ(r.exit_code, 74);
  EXPECT_NE(r.err.find("/no/such/dir/x.h5"), std::string::npos) << r.err;
}

TEST(CollectiveCli, HelpListsEveryOption) {
  const auto r = run_cli("collective --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* option : {"--vm-size", "--nodes", "--op", "--algorithm", "--min-bytes", "--max-bytes",
                             "--step-factor", "--gpus", "--fabric", "--oversubscription", "--fat-tree-radix",
                             "--zones", "--inter-zone-latency-ms", "--inter-zone-gbps", "--vms-per-nvlink-domain",
                             "--catalog", "--output"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
  EXPECT_NE(run_cli("--help").out.find("collective"), std::string::npos);
}

}  // namespace
}  // namespace clustersim
