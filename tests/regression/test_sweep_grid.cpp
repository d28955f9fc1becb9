// End-to-end: the /sweep N-dimensional grids of a pure grid sweep (docs/hdf5-schema.md), read back with the
// HDF5 C API: shape by the axes, one dimension scale per axis, units; the same bytes with -j 1 and -j 2 and
// when split into shards and merged; zipped keys are one dimension; layout searches write no grid.
#include <gtest/gtest.h>

#include <hdf5.h>
#include <hdf5_hl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "sim/sweep/summary_file.hpp"
#include "tests/support/cli.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-grid-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// 2 precisions x 3 tensor sizes on 2 x 8 A100 (all valid).
fs::path grid_scenario(const fs::path& dir, const std::string& sweep) {
  const fs::path path = dir / "grid.toml";
  std::ofstream(path) << "schema_version = 1\n"
                         "name = \"grid-sweep\"\n"
                         "[model]\nnum_layers = 24\nhidden_size = 1024\nnum_attention_heads = 16\n"
                         "vocab_size = 51200\nseq_length = 1024\n"
                         "[training]\nglobal_batch_size = 64\n"
                         "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                         "[sweep]\n"
                      << sweep;
  return path;
}

const std::string k2x3 = "\"training.precision\" = [\"bf16\", \"fp16\"]\n\"parallelism.tensor\" = [1, 2, 8]\n";

struct File {
  hid_t id;
  explicit File(const fs::path& p) : id(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
  ~File() { H5Fclose(id); }
};

std::vector<hsize_t> shape_of(hid_t ds) {
  const hid_t space = H5Dget_space(ds);
  std::vector<hsize_t> dims(static_cast<size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  H5Sclose(space);
  return dims;
}

std::string string_attr(hid_t obj, const char* name) {
  const hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  char* v = nullptr;
  H5Aread(a, t, &v);
  std::string s = v == nullptr ? "" : v;
  H5free_memory(v);
  H5Tclose(t);
  H5Aclose(a);
  return s;
}

template <typename T>
std::vector<T> summary(const fs::path& file, const std::string& name) {
  for (auto& c : sim::read_results_columns(file, "summary")) {
    if (c.name == name) return std::get<std::vector<T>>(c.values);
  }
  ADD_FAILURE() << "no column " << name;
  return {};
}

TEST(SweepGrid, TwoByThreeGridHasShapeScalesAndUnits) {
  const fs::path dir = temp_dir("2x3");
  const fs::path scenario = grid_scenario(dir, k2x3);
  const auto r = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "a.h5").string() + "' -j 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const File f(dir / "a.h5");
  ASSERT_GE(f.id, 0);
  const hid_t step = H5Dopen2(f.id, "/sweep/step_time_s", H5P_DEFAULT);
  ASSERT_GE(step, 0);
  EXPECT_EQ(shape_of(step), (std::vector<hsize_t>{2, 3}));
  EXPECT_EQ(string_attr(step, "units"), "s");
  const hid_t precision = H5Dopen2(f.id, "/sweep/training_precision", H5P_DEFAULT);
  const hid_t tensor = H5Dopen2(f.id, "/sweep/parallelism_tensor", H5P_DEFAULT);
  ASSERT_GE(precision, 0);
  ASSERT_GE(tensor, 0);
  EXPECT_GT(H5DSis_scale(precision), 0);
  EXPECT_GT(H5DSis_scale(tensor), 0);
  EXPECT_GT(H5DSis_attached(step, precision, 0), 0);
  EXPECT_GT(H5DSis_attached(step, tensor, 1), 0);
  EXPECT_EQ(H5DSget_num_scales(step, 0), 1);
  EXPECT_EQ(H5DSget_num_scales(step, 1), 1);
  EXPECT_EQ(shape_of(tensor), (std::vector<hsize_t>{3}));
  double t[3] = {};
  ASSERT_GE(H5Dread(tensor, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, t), 0);
  EXPECT_EQ(t[0], 1.0);
  EXPECT_EQ(t[1], 2.0);
  EXPECT_EQ(t[2], 8.0);
  EXPECT_EQ(string_attr(tensor, "units"), "GPUs");
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, H5T_VARIABLE);
  H5Tset_cset(str, H5T_CSET_UTF8);
  char* p[2] = {nullptr, nullptr};
  ASSERT_GE(H5Dread(precision, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, p), 0);
  EXPECT_STREQ(p[0], "bf16");
  EXPECT_STREQ(p[1], "fp16");
  H5free_memory(p[0]);
  H5free_memory(p[1]);
  H5Tclose(str);
  // Row-major as the points: grid[i][j] is run_index 3 i + j.
  double grid[2][3] = {};
  ASSERT_GE(H5Dread(step, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, grid), 0);
  const auto step_col = summary<double>(dir / "a.h5", "step_time_s");
  const auto index = summary<int64_t>(dir / "a.h5", "run_index");
  ASSERT_EQ(step_col.size(), 6U);
  for (size_t r2 = 0; r2 < 6; ++r2) {
    const auto i = static_cast<size_t>(index[r2]);
    EXPECT_EQ(grid[i / 3][i % 3], step_col[r2]);
    EXPECT_GT(step_col[r2], 0.0);
  }
  // The other result columns are grids too.
  for (const char* name : {"/sweep/tflops_per_gpu", "/sweep/mfu", "/sweep/peak_memory_bytes"}) {
    const hid_t ds = H5Dopen2(f.id, name, H5P_DEFAULT);
    ASSERT_GE(ds, 0) << name;
    EXPECT_EQ(shape_of(ds), (std::vector<hsize_t>{2, 3})) << name;
    H5Dclose(ds);
  }
  H5Dclose(step);
  H5Dclose(precision);
  H5Dclose(tensor);
  fs::remove_all(dir);
}

TEST(SweepGrid, ThreadsAndShardsMergedGiveTheSameBytes) {
  const fs::path dir = temp_dir("merge");
  const std::string scenario = "'" + grid_scenario(dir, k2x3).string() + "'";
  ASSERT_EQ(run_cli("sweep " + scenario + " -o '" + (dir / "a.h5").string() + "' -j 1").exit_code, 0);
  ASSERT_EQ(run_cli("sweep " + scenario + " -o '" + (dir / "b.h5").string() + "' -j 2").exit_code, 0);
  EXPECT_EQ(read_file(dir / "a.h5"), read_file(dir / "b.h5"));
  for (int i = 0; i < 2; ++i) {
    const auto r = run_cli("sweep " + scenario + " -o '" + (dir / ("s" + std::to_string(i) + ".h5")).string() +
                           "' --shard " + std::to_string(i) + "/2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto m = run_cli("merge '" + (dir / "m.h5").string() + "' '" + (dir / "s1.h5").string() + "' '" +
                         (dir / "s0.h5").string() + "'");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(read_file(dir / "m.h5"), read_file(dir / "a.h5"));
  fs::remove_all(dir);
}

TEST(SweepGrid, ZippedKeysAreOneDimension) {
  const fs::path dir = temp_dir("zip");
  const fs::path scenario = grid_scenario(dir,
                                          "\"cluster.nodes\" = [1, 2]\n"
                                          "\"training.global_batch_size\" = [32, 64]\n"
                                          "\"parallelism.tensor\" = [1, 2, 8]\n"
                                          "zip = [[\"cluster.nodes\", \"training.global_batch_size\"]]\n");
  const auto r = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "z.h5").string() + "' -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const File f(dir / "z.h5");
  const hid_t step = H5Dopen2(f.id, "/sweep/step_time_s", H5P_DEFAULT);
  const hid_t nodes = H5Dopen2(f.id, "/sweep/cluster_nodes", H5P_DEFAULT);
  ASSERT_GE(step, 0);
  ASSERT_GE(nodes, 0);
  EXPECT_EQ(shape_of(step), (std::vector<hsize_t>{2, 3}));
  EXPECT_GT(H5DSis_attached(step, nodes, 0), 0);
  EXPECT_LE(H5Lexists(f.id, "/sweep/training_global_batch_size", H5P_DEFAULT), 0);
  H5Dclose(step);
  H5Dclose(nodes);
  fs::remove_all(dir);
}

TEST(SweepGrid, LayoutSearchWritesNoGrid) {
  const fs::path dir = temp_dir("auto");
  const fs::path scenario = grid_scenario(dir, "parallelism = \"auto\"\n");
  const auto r = run_cli("sweep '" + scenario.string() + "' -o '" + (dir / "l.h5").string() + "' -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const File f(dir / "l.h5");
  EXPECT_GT(H5Lexists(f.id, "/sweep/columns", H5P_DEFAULT), 0);
  EXPECT_LE(H5Lexists(f.id, "/sweep/step_time_s", H5P_DEFAULT), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clustersim
