// The output checks before a run (sim/output/output_path.hpp), the removal of temporary files on signals
// (sim/output/atomic_file.hpp) and a results file under a file-size limit (issue 26, defects 1, 4 and 16).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/errors.hpp"
#include "sim/output/atomic_file.hpp"
#include "sim/output/output_path.hpp"
#include "sim/output/results_file.hpp"

namespace fs = std::filesystem;
using clustersim::sim::check_output_path;
using clustersim::sim::InputFile;
using clustersim::sim::IoError;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-output-path-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The IoError message of check_output_path, or "" when it accepts the path.
std::string refusal(const fs::path& path, const std::vector<InputFile>& inputs = {}) {
  try {
    check_output_path(path, inputs, "-o");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

bool has_temporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(OutputPath, AcceptsAnAbsentPathOrARegularFile) {
  const fs::path dir = fresh_dir("accept");
  EXPECT_EQ(refusal(dir / "new.h5"), "");
  write(dir / "old.h5", "old");
  EXPECT_EQ(refusal(dir / "old.h5"), "");
  fs::remove_all(dir);
}

TEST(OutputPath, RefusesDevicesDirectoriesAndFifos) {
  const fs::path dir = fresh_dir("kinds");
  EXPECT_NE(refusal("/dev/null").find("is a device"), std::string::npos) << refusal("/dev/null");
  EXPECT_NE(refusal(dir).find("is a directory"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_NE(refusal(dir / "fifo").find("is a FIFO"), std::string::npos);
  EXPECT_NE(refusal(dir / "..").find("has no file name"), std::string::npos);
  EXPECT_NE(refusal("").find("has no file name"), std::string::npos);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  fs::remove_all(dir);
}

TEST(OutputPath, RefusesAnInputByIdentityNotBySpelling) {
  const fs::path dir = fresh_dir("inputs");
  write(dir / "s.toml", "name = 'x'\n");
  write(dir / "trace.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n");
  const std::vector<InputFile> inputs{{dir / "s.toml", "the scenario file"}, {dir / "trace.csv", "the request trace"}};
  EXPECT_NE(refusal(dir / "s.toml", inputs).find("is the scenario file"), std::string::npos);
  EXPECT_NE(refusal(dir / "." / "s.toml", inputs).find("is the scenario file"), std::string::npos);
  EXPECT_NE(refusal(dir / "trace.csv", inputs).find("is the request trace"), std::string::npos);
  fs::create_symlink(dir / "s.toml", dir / "link.toml");
  EXPECT_NE(refusal(dir / "link.toml", inputs).find("is the scenario file"), std::string::npos);
  fs::create_hard_link(dir / "trace.csv", dir / "hard.csv");
  EXPECT_NE(refusal(dir / "hard.csv", inputs).find("is the request trace"), std::string::npos);
  EXPECT_EQ(refusal(dir / "other.h5", inputs), "");
  EXPECT_EQ(read(dir / "s.toml"), "name = 'x'\n");
  fs::remove_all(dir);
}

TEST(OutputPath, RefusesAMissingOrUnwritableDirectory) {
  const fs::path dir = fresh_dir("dirs");
  const std::string missing = refusal(dir / "nope" / "x.h5");
  EXPECT_NE(missing.find("directory '" + (dir / "nope").string() + "' does not exist"), std::string::npos) << missing;
  write(dir / "file", "");
  EXPECT_NE(refusal(dir / "file" / "x.h5").find("is not a directory"), std::string::npos);
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directories(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_NE(refusal(dir / "ro" / "x.h5").find("is not writable"), std::string::npos);
    fs::permissions(dir / "ro", fs::perms::owner_all);
  }
  fs::remove_all(dir);
}

// SIGTERM while the temporary file is being written: the process still ends by the signal, and neither the
// temporary file nor a changed target is left (defect 16).
TEST(AtomicFile, ASignalDuringTheWriteRemovesTheTemporaryFile) {
  const fs::path dir = fresh_dir("signal");
  write(dir / "out.h5", "old");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    clustersim::sim::replace_atomically(dir / "out.h5", "test", [](const fs::path& tmp) {
      std::ofstream(tmp) << "half";
      std::raise(SIGTERM);
    });
    ::_exit(3);  // not reached: the signal ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(has_temporary(dir));
  EXPECT_EQ(read(dir / "out.h5"), "old");
  fs::remove_all(dir);
}

// A results file that hits RLIMIT_FSIZE: an error naming the cause (EFBIG), not SIGXFSZ or HDF5's SIGSEGV at
// exit; the temporary file removed and the old file intact (defect 4).
TEST(ResultsFile, AFileSizeLimitIsAnErrorAndLeavesTheOldFile) {
  const fs::path dir = fresh_dir("fsize");
  write(dir / "out.h5", "old");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // as the CLI does at start
    const rlimit limit{64 * 1024, 64 * 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(4);
    clustersim::sim::SummaryColumn big{"x", "s", "a large column", std::vector<double>(1 << 16, 1.0)};
    int code = 5;
    try {
      clustersim::sim::write_results_file(dir / "out.h5", {}, {big});
      code = 6;  // a 512 KiB column cannot fit in 64 KiB
    } catch (const std::runtime_error& e) {
      code = std::string(e.what()).find("File too large") != std::string::npos ? 0 : 7;
    }
    std::exit(code);  // std::exit runs the atexit handlers, where HDF5 used to crash
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(has_temporary(dir));
  EXPECT_EQ(read(dir / "out.h5"), "old");
  fs::remove_all(dir);
}
