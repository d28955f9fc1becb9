// End-to-end: `mpirun -n N clustersim-mpi sweep` (docs/scale-out.md, "MPI"). Spread over MPI ranks, a sweep
// gives the same bytes as `clustersim sweep` on one process (as -j 1 and -j 2 do, test_sweep_cli.cpp): whole,
// per shard, stopped and resumed; errors exit once with the serial command's status. Built and registered only
// with -DCLUSTERSIM_WITH_MPI=ON; runs mpirun on this machine alone (no ssh, as root in CI).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "sim/sweep/summary_file.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/results.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::read_file;
using testing::run_cli;

const std::string kLayouts = "scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml";

/// Runs `mpirun -n RANKS clustersim-mpi ARGS` (ARGS in shell syntax) from the source directory; RANKS 0:
/// clustersim-mpi without mpirun (an MPI singleton).
CliResult run_mpi(int ranks, const std::string& args) {
  const auto dir = fs::temp_directory_path() /
                   ("clustersim-mpi-cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  fs::create_directories(dir);
  const std::string launcher =
      ranks > 0 ? std::string("'") + CLUSTERSIM_MPIEXEC + "' -n " + std::to_string(ranks) + " --oversubscribe " : "";
  const std::string command = std::string("cd '") + CLUSTERSIM_SOURCE_DIR + "' && " + launcher + "'" +
                              CLUSTERSIM_MPI_BINARY + "' " + args + " >'" + (dir / "out").string() + "' 2>'" +
                              (dir / "err").string() + "'";
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  fs::remove_all(dir);
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class SweepMpi : public ::testing::Test {
 protected:
  /// mpirun as root, without ssh (a single-node launch needs none, but Open MPI looks for it unless told not
  /// to), and without the cross-memory-attach copy that containers often forbid.
  static void SetUpTestSuite() {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::setenv("OMPI_MCA_plm_rsh_agent", "", 1);
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    dir_ = fs::temp_directory_path() / ("clustersim-sweep-mpi-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  /// The layout search run by `clustersim sweep -j 1` (on first use).
  static fs::path serial_file() {
    const fs::path file = dir_ / "serial.h5";
    if (!fs::exists(file)) {
      const auto serial = run_cli("sweep " + kLayouts + " -o '" + file.string() + "' -j 1");
      EXPECT_EQ(serial.exit_code, 0) << serial.err;
    }
    return file;
  }
  static fs::path path(const std::string& name) { return dir_ / name; }
  static std::string quoted(const std::string& name) { return "'" + path(name).string() + "'"; }

  static fs::path dir_;
};

fs::path SweepMpi::dir_;

TEST_F(SweepMpi, TwoRanksGiveTheSerialFile) {
  const auto r = run_mpi(2, "sweep " + kLayouts + " -o " + quoted("two.h5") + " -j 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(path("two.h5")), read_file(serial_file()));
  EXPECT_FALSE(fs::exists(path("two.h5.partial")));
  // Rank 0 alone reports.
  EXPECT_EQ(count(r.out, "395 points on 2 MPI ranks: 336 ok, 59 out_of_memory, 0 invalid"), 1U) << r.out;
  EXPECT_EQ(count(r.out, "best layout that fits"), 1U) << r.out;
  EXPECT_EQ(count(r.out, "wrote "), 1U) << r.out;
}

TEST_F(SweepMpi, MoreRanksThanCoresWithInvalidPointsGiveTheSerialFile) {
  // 6 points, 2 invalid (rows without result columns) over 3 ranks with 2 threads each.
  const fs::path scenario = path("small.toml");
  std::ofstream(scenario) << "schema_version = 1\n"
                             "name = \"small-sweep\"\n"
                             "[model]\nnum_layers = 24\nhidden_size = 1024\nnum_attention_heads = 16\n"
                             "vocab_size = 51200\nseq_length = 1024\n"
                             "[training]\nglobal_batch_size = 64\n"
                             "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                             "[sweep]\n"
                             "\"parallelism.tensor\" = [1, 3, 8]\n"
                             "\"training.precision\" = [\"bf16\", \"fp16\"]\n";
  const auto serial = run_cli("sweep '" + scenario.string() + "' -o " + quoted("small-serial.h5") + " -j 1");
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  const auto three = run_mpi(3, "sweep '" + scenario.string() + "' -o " + quoted("small-three.h5") + " -j 2");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_NE(three.out.find("6 points on 3 MPI ranks: 4 ok, 0 out_of_memory, 2 invalid"), std::string::npos)
      << three.out;
  EXPECT_EQ(read_file(path("small-three.h5")), read_file(path("small-serial.h5")));
  // Without mpirun, clustersim-mpi is one rank and runs the sweep like clustersim.
  const auto single = run_mpi(0, "sweep '" + scenario.string() + "' -o " + quoted("small-single.h5") + " -j 2");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(read_file(path("small-single.h5")), read_file(path("small-serial.h5")));
}

TEST_F(SweepMpi, ShardSpreadOverRanksEqualsTheSerialShard) {
  const auto serial = run_cli("sweep " + kLayouts + " -o " + quoted("shard-serial.h5") + " -j 1 --shard 1/3");
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  const auto two = run_mpi(2, "sweep " + kLayouts + " -o " + quoted("shard-two.h5") + " -j 1 --shard 1/3");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("132 points (shard 1/3 of 395) on 2 MPI ranks"), std::string::npos) << two.out;
  EXPECT_EQ(read_file(path("shard-two.h5")), read_file(path("shard-serial.h5")));
  for (const int64_t i : clustersim::testing::summary_column<int64_t>(path("shard-two.h5"), "run_index")) EXPECT_EQ(i % 3, 1);
}

TEST_F(SweepMpi, StoppedThenResumedUnderMpiGivesTheSerialFile) {
  const std::string base = "sweep " + kLayouts + " -j 1 -o ";
  const fs::path sidecar = path("resumed.h5.partial");
  const auto stopped = run_mpi(2, base + quoted("resumed.h5") + " --stop-after 40");
  ASSERT_EQ(stopped.exit_code, 75) << stopped.err;
  EXPECT_FALSE(fs::exists(path("resumed.h5")));
  ASSERT_TRUE(fs::exists(sidecar));
  EXPECT_EQ(count(read_file(sidecar), "\nR\t"), 40U);  // rank 0 wrote every row, from either rank, as it came
  const auto resumed = run_mpi(2, base + quoted("resumed.h5") + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(count(resumed.err, "resuming: 40 of 395 points already done, computing 355"), 1U) << resumed.err;
  EXPECT_EQ(read_file(path("resumed.h5")), read_file(serial_file()));
  EXPECT_FALSE(fs::exists(sidecar));

  // Finished points are taken from the sidecar, not recomputed by any rank: a reason planted there ends up in
  // the file.
  const fs::path planted_sidecar = path("planted.h5.partial");
  ASSERT_EQ(run_mpi(2, base + quoted("planted.h5") + " --stop-after 10").exit_code, 75);
  std::string text = read_file(planted_sidecar);
  const size_t row = text.find("\nR\t");
  ASSERT_NE(row, std::string::npos);
  size_t field = row + 1;  // R <index> <seed> <status> <reason> ...: replace the reason
  for (int k = 0; k < 4; ++k) field = text.find('\t', field) + 1;
  const int64_t index = std::stoll(text.substr(row + 3));
  text.replace(field, text.find('\t', field) - field, "planted in the sidecar");
  std::ofstream(planted_sidecar, std::ios::binary | std::ios::trunc) << text;
  ASSERT_EQ(run_mpi(2, base + quoted("planted.h5") + " --resume").exit_code, 0);
  EXPECT_EQ(clustersim::testing::summary_column<std::string>(path("planted.h5"), "reason")[static_cast<size_t>(index)], "planted in the sidecar");
}

TEST_F(SweepMpi, ErrorsEndEveryRankWithTheSerialStatusAndOneMessage) {
  // Every rank fails the same way: rank 0 alone says so.
  const auto missing = run_mpi(2, "sweep scenarios/no-such-file.toml -o " + quoted("x.h5"));
  EXPECT_EQ(missing.exit_code, 65);
  EXPECT_EQ(count(missing.err, "cannot open the scenario file"), 1U) << missing.err;
  const auto usage = run_mpi(2, "sweep " + kLayouts);
  EXPECT_EQ(usage.exit_code, 64);
  EXPECT_EQ(count(usage.err, "missing -o FILE.h5"), 1U) << usage.err;
  // Only rank 0 reads the sidecar: a sidecar of another sweep ends the other ranks too.
  ASSERT_EQ(run_mpi(2, "sweep " + kLayouts + " -j 1 -o " + quoted("other.h5") + " --stop-after 5").exit_code, 75);
  const auto other =
      run_mpi(2, "sweep " + kLayouts + " --set training.precision=fp16 -o " + quoted("other.h5") + " --resume");
  EXPECT_EQ(other.exit_code, 65);
  EXPECT_EQ(count(other.err, "belongs to another sweep"), 1U) << other.err;
  EXPECT_FALSE(fs::exists(path("x.h5")));
  EXPECT_FALSE(fs::exists(path("other.h5")));
}

}  // namespace
}  // namespace clustersim
