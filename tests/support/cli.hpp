// Test support: run the clustersim binary and capture its exit status and output.
#pragma once

#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <vector>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "sim/io/scenario.hpp"

namespace clustersim::testing {

/// Outcome of one command: exit status and the captured stdout and stderr.
struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `CLUSTERSIM_BINARY args` through the shell from the source directory; `args` is shell syntax.
inline CliResult run_cli(const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("clustersim-cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  std::filesystem::create_directories(dir);
  const std::string command = std::string("cd '") + CLUSTERSIM_SOURCE_DIR + "' && '" + CLUSTERSIM_BINARY + "' " +
                              args + " >'" + (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  std::filesystem::remove_all(dir);
  return r;
}

/// Every shipped scenario file (*.toml) under scenarios/, of both kinds, sorted, as paths relative to the source
/// directory. Only lists the directory (no file is parsed): cheap enough for a gtest parameter generator, which
/// runs in every process of the test binary.
inline std::vector<std::filesystem::path> shipped_scenario_files() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root = std::filesystem::path(CLUSTERSIM_SOURCE_DIR);
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / "scenarios")) {
    if (!e.is_regular_file() || e.path().extension() != ".toml") continue;
    files.push_back(e.path().lexically_relative(root));
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Every shipped scenario file under scenarios/, sorted, as paths relative to the source directory: the training
/// ones (`serving` false) or the serving ones (a [serving] table, sim::is_serving_scenario; `serving` true).
inline std::vector<std::filesystem::path> shipped_scenarios(bool serving = false) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root = std::filesystem::path(CLUSTERSIM_SOURCE_DIR);
  for (const std::filesystem::path& rel : shipped_scenario_files()) {
    if (sim::is_serving_scenario(root / rel) == serving) files.push_back(rel);
  }
  return files;
}

}  // namespace clustersim::testing
