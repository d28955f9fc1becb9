// The layers (docs/architecture.md, "Layers"): each source file of models/ and sim/ may include only its own
// layer and the layers its library links (sim/CMakeLists.txt). An upward include fails here, by file and line,
// before it becomes a link error or a hidden cycle.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot{CLUSTERSIM_SOURCE_DIR};

/// The layer of a source path relative to the root: "core" for the header-only utilities, "models" for the
/// rest of models/, "base" for sim/errors.hpp, sim/version.hpp, sim/format and sim/input_file, else sim/<layer>/.
std::string layer_of(const std::string& path) {
  if (path == "models/units.hpp" || path == "models/splitmix64.hpp") return "core";
  if (path.rfind("models/", 0) == 0) return "models";
  if (path == "sim/errors.hpp" || path == "sim/version.hpp" || path == "sim/version.cpp.in" ||
      path == "sim/format.hpp" || path == "sim/format.cpp" || path == "sim/input_file.hpp" ||
      path == "sim/input_file.cpp") {
    return "base";
  }
  if (path.rfind("sim/", 0) == 0) {
    const size_t slash = path.find('/', 4);
    return slash == std::string::npos ? "sim" : path.substr(4, slash - 4);
  }
  return "other";
}

/// What each layer may include besides itself: the libraries it links, transitively.
const std::map<std::string, std::set<std::string>> kAllowed{
    {"core", {}},
    {"models", {"core"}},
    {"base", {"core"}},
    {"engine", {"core"}},
    {"io", {"core", "base", "models"}},
    {"step", {"core", "base", "models", "engine", "io"}},
    {"job", {"core", "base", "models", "engine", "io", "step"}},
    {"serving", {"core", "base", "models", "engine"}},
    {"output", {"core", "base", "models", "engine", "io", "step", "job", "serving"}},
    {"run", {"core", "base", "models", "engine", "io", "step", "job", "serving", "output"}},
    {"sweep", {"core", "base", "models", "engine", "io", "step", "job", "serving", "output", "run"}},
    {"validation", {"core", "base", "models", "engine", "io", "step", "job", "serving", "output", "run"}},
    {"cli", {"core", "base", "models", "engine", "io", "step", "job", "serving", "output", "run", "sweep",
             "validation"}},
};

TEST(Layering, NoSourceIncludesALayerAboveIt) {
  const std::regex include(R"re(^\s*#\s*include\s*"((models|sim)/[^"]+)")re");
  int files = 0;
  for (const char* top : {"models", "sim"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".in")) continue;
      const std::string rel = fs::relative(entry.path(), kRoot).generic_string();
      const std::string from = layer_of(rel);
      const auto allowed = kAllowed.find(from);
      ASSERT_NE(allowed, kAllowed.end()) << rel << " is in no layer (" << from << "): add it to the table";
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string to = layer_of(m[1].str());
        EXPECT_TRUE(to == from || allowed->second.count(to))
            << rel << ":" << n << ": layer '" << from << "' includes " << m[1].str() << " of layer '" << to << "'";
      }
    }
  }
  EXPECT_GT(files, 80);
}

/// The CLI only parses, calls and prints: one place writes a run (sim/run/run_output.hpp, the sweep engine),
/// so no file of sim/cli includes the results file's writer.
TEST(Layering, TheCliWritesNoResultsFile) {
  const std::regex include(R"re(^\s*#\s*include\s*"sim/output/results_file.hpp")re");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kRoot / "sim" / "cli")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      EXPECT_FALSE(std::regex_search(line, include))
          << fs::relative(entry.path(), kRoot).generic_string() << ":" << n
          << ": the CLI includes sim/output/results_file.hpp: write through sim/run (write_run) or sim/sweep";
    }
  }
  EXPECT_GT(files, 5);
}

TEST(Layering, TheRulesThemselves) {
  EXPECT_EQ(layer_of("models/units.hpp"), "core");
  EXPECT_EQ(layer_of("models/network/topology.hpp"), "models");
  EXPECT_EQ(layer_of("sim/sweep/sidecar.hpp"), "sweep");
  EXPECT_EQ(layer_of("sim/errors.hpp"), "base");
  EXPECT_FALSE(kAllowed.at("engine").count("models"));  // the engine knows nothing of the domain
  EXPECT_FALSE(kAllowed.at("io").count("step"));
}

}  // namespace
