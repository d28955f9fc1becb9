// Golden runs of every shipped scenario (STYLE: golden regression per scenario with an explicit update flag;
// OMNeT++ fingerprints, ns-3 reference traces). Each scenario under scenarios/ has one file,
// tests/regression/golden/<kind>/<path under scenarios/ without .toml>.golden, holding every /summary column that
// `clustersim run` writes for it (one line per column: name, type, [units], value) and the engine's determinism
// fingerprints. A model change that moves a prediction must regenerate them on purpose, with one command:
//   make golden
// (that is: CLUSTERSIM_UPDATE_GOLDEN=1 ctest --test-dir build -R '^Golden' -j2), and the commit's `git diff`
// names each moved column under its scenario's file. Without the flag a moved column fails its scenario's test
// with: scenario, column, golden value, new value, relative change.
//
// Numbers are written with %.17g (round-trips a double exactly, and stays readable in a diff) and compared with
// a relative tolerance of 1e-12: output is bit-identical on one machine and compiler (the byte-identical tests
// check that), so the tolerance only absorbs a last-bit difference of another libm or compiler in a figure no
// event depends on; the smallest model change worth noticing (1e-6 and up; a 1 % constant) is many orders above
// it. Integers, strings and fingerprints compare exactly; a fingerprint changes with any change to the order or
// time of the engine's events.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/run/run_output.hpp"
#include "tests/support/cli.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = fs::path(CLUSTERSIM_SOURCE_DIR);
const fs::path kGoldenDir = kSource / "tests/regression/golden";
/// Relative tolerance of a double column (see the header comment).
constexpr double kRelativeTolerance = 1e-12;

bool updating() {
  const char* update = std::getenv("CLUSTERSIM_UPDATE_GOLDEN");
  return update && std::string(update) == "1";
}

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// One pinned line: a /summary column or a fingerprint. `type` is f64, i64, str or hex (a 64-bit fingerprint);
/// `value` the text written (%.17g for f64).
struct Pinned {
  std::string name;
  std::string type;
  std::string units;
  std::string value;
};

std::string format_double(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string format_hex(uint64_t v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

/// The golden lines of `columns` (each of one row: a /summary has one row per run).
std::vector<Pinned> pin(const std::vector<sim::SummaryColumn>& columns) {
  std::vector<Pinned> pinned;
  for (const sim::SummaryColumn& c : columns) {
    const std::string units = "[" + c.units + "]";
    EXPECT_EQ(c.units.find_first_of("[]\n"), std::string::npos) << c.name << ": units with a bracket or newline";
    if (const auto* d = std::get_if<std::vector<double>>(&c.values)) {
      EXPECT_EQ(d->size(), 1u) << c.name;
      pinned.push_back({c.name, "f64", units, d->empty() ? "" : format_double(d->front())});
    } else if (const auto* i = std::get_if<std::vector<int64_t>>(&c.values)) {
      EXPECT_EQ(i->size(), 1u) << c.name;
      pinned.push_back({c.name, "i64", units, i->empty() ? "" : std::to_string(i->front())});
    } else {
      const auto& s = std::get<std::vector<std::string>>(c.values);
      EXPECT_EQ(s.size(), 1u) << c.name;
      EXPECT_TRUE(s.empty() || s.front().find('\n') == std::string::npos) << c.name << ": a newline";
      pinned.push_back({c.name, "str", units, s.empty() ? "" : s.front()});
    }
  }
  return pinned;
}

/// FNV-1a (64-bit) over every column of `columns`: its name, then each value's bytes (a double's or an int64's
/// 8 bytes, a string's characters and a NUL). A determinism fingerprint of a table no engine hash covers.
uint64_t fnv1a(const std::vector<sim::SummaryColumn>& columns) {
  uint64_t h = 14695981039346656037ull;
  const auto mix = [&h](const void* data, size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t k = 0; k < n; ++k) {
      h ^= bytes[k];
      h *= 1099511628211ull;
    }
  };
  for (const sim::SummaryColumn& c : columns) {
    mix(c.name.data(), c.name.size() + 1);
    std::visit(
        [&mix](const auto& values) {
          for (const auto& v : values) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
              mix(v.data(), v.size() + 1);
            } else {
              mix(&v, sizeof v);
            }
          }
        },
        c.values);
  }
  return h;
}

/// What a run of `scenario` (relative to the source directory) pins, and its kind.
struct GoldenRun {
  std::string kind;  ///< "training" or "serving"
  std::vector<Pinned> lines;
};

/// The golden lines of one `clustersim run` of `scenario` (sim::run_scenario_file, as the command runs it): every
/// /summary column, the engines' fingerprints and, for a table no engine hash covers (serving's /requests), its
/// FNV-1a.
GoldenRun run_golden(const fs::path& scenario) {
  const sim::RunOutput out = sim::run_scenario_file(kSource / scenario, {}, catalog(), {});
  GoldenRun g{out.kind, pin(out.summary)};
  for (const auto& [name, fingerprint] : out.fingerprints) {
    g.lines.push_back({"fingerprint_" + name, "hex", "[]", format_hex(fingerprint)});
  }
  for (const sim::ColumnGroup& group : out.groups) {
    if (group.path == "requests") {
      g.lines.push_back({"fingerprint_requests_fnv1a", "hex", "[]", format_hex(fnv1a(group.columns))});
    }
  }
  return g;
}

/// tests/regression/golden/<kind>/<scenario under scenarios/, without .toml>.golden
fs::path golden_file(const std::string& kind, const fs::path& scenario) {
  fs::path under = scenario.lexically_relative("scenarios");
  under.replace_extension(".golden");
  return kGoldenDir / kind / under;
}

void write_golden(const fs::path& file, const fs::path& scenario, const GoldenRun& g) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file);
  out << "# Golden run of " << scenario.generic_string() << " (" << g.kind
      << "): every /summary column of `clustersim run`, one a line\n"
      << "# (name type [units] value; f64 as %.17g), then the engine fingerprints. Regenerate: make golden\n"
      << "# (tests/regression/test_golden.cpp).\n";
  for (const Pinned& p : g.lines) {
    out << p.name << ' ' << p.type << ' ' << p.units << (p.value.empty() ? "" : " ") << p.value << '\n';
  }
  ASSERT_TRUE(out.good()) << "cannot write " << file;
}

std::vector<Pinned> read_golden(const fs::path& file) {
  std::vector<Pinned> lines;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // name type [units] value: the units may hold blanks (no bracket), the value (the rest of the line) too, or
    // be empty (no blank before it then).
    Pinned p;
    const size_t name_end = line.find(' ');
    const size_t type_end = name_end == std::string::npos ? name_end : line.find(" [", name_end + 1);
    const size_t units_end = type_end == std::string::npos ? type_end : line.find(']', type_end);
    if (units_end == std::string::npos) {
      ADD_FAILURE() << file << ": malformed line: " << line;
      continue;
    }
    p.name = line.substr(0, name_end);
    p.type = line.substr(name_end + 1, type_end - name_end - 1);
    p.units = line.substr(type_end + 1, units_end - type_end);
    p.value = units_end + 2 <= line.size() ? line.substr(units_end + 2) : "";
    lines.push_back(std::move(p));
  }
  return lines;
}

/// Whether golden and new values of one column agree; `change` is set to a description of the move.
bool same(const Pinned& golden, const Pinned& now, std::string& change) {
  if (golden.type != now.type || golden.units != now.units) {
    change = "type or units " + golden.type + " " + golden.units + " -> " + now.type + " " + now.units;
    return false;
  }
  if (golden.type != "f64") return golden.value == now.value;
  const double g = std::strtod(golden.value.c_str(), nullptr);
  const double n = std::strtod(now.value.c_str(), nullptr);
  if (std::isnan(g) || std::isnan(n)) return std::isnan(g) && std::isnan(n);
  if (g == n) return true;
  const double scale = std::max(std::fabs(g), std::fabs(n));
  if (std::isfinite(scale) && std::fabs(n - g) <= kRelativeTolerance * scale) return true;
  if (g != 0 && std::isfinite(g)) {
    char relative[32];
    std::snprintf(relative, sizeof relative, "%+.3g", (n - g) / std::fabs(g));
    change = std::string("relative change ") + relative;
  } else {
    change = "from zero or infinity";
  }
  return false;
}

/// A gtest name for a scenario path: scenarios/validation-serving/x-1.toml -> validation_serving_x_1.
std::string test_name(const fs::path& scenario) {
  fs::path under = scenario.lexically_relative("scenarios");
  under.replace_extension();
  std::string name = under.generic_string();
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

class Golden : public ::testing::TestWithParam<fs::path> {};

TEST_P(Golden, Scenario) {
  const fs::path& scenario = GetParam();
  const GoldenRun now = run_golden(scenario);
  if (now.kind == "training") {
    EXPECT_GE(now.lines.size(), 30u) << scenario << ": issue 27 pins at least 30 columns per training scenario";
  }
  const fs::path file = golden_file(now.kind, scenario);
  if (updating()) {
    write_golden(file, scenario, now);
    GTEST_SKIP() << "golden file rewritten: " << file;
  }
  ASSERT_TRUE(fs::exists(file)) << scenario.generic_string() << " has no golden file " << file
                                << "; regenerate with `make golden` (tests/regression/test_golden.cpp)";
  const std::vector<Pinned> golden = read_golden(file);
  std::map<std::string, const Pinned*> by_name;
  for (const Pinned& p : golden) by_name[p.name] = &p;
  std::set<std::string> seen;
  for (const Pinned& p : now.lines) {
    seen.insert(p.name);
    const auto it = by_name.find(p.name);
    if (it == by_name.end()) {
      ADD_FAILURE() << scenario.generic_string() << ": column " << p.name << " (" << p.value
                    << ") is new, not in " << file;
      continue;
    }
    std::string change;
    EXPECT_TRUE(same(*it->second, p, change))
        << scenario.generic_string() << ": column " << p.name << " moved: golden " << it->second->value << ", now "
        << p.value << (change.empty() ? "" : ", " + change);
  }
  for (const Pinned& p : golden) {
    EXPECT_TRUE(seen.count(p.name)) << scenario.generic_string() << ": column " << p.name
                                    << " is in the golden file but no longer written";
  }
  if (golden.size() == now.lines.size()) {
    for (size_t k = 0; k < golden.size(); ++k) {
      if (golden[k].name != now.lines[k].name) {
        ADD_FAILURE() << scenario.generic_string() << ": the columns' order changed at " << k << ": golden "
                      << golden[k].name << ", now " << now.lines[k].name;
        break;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(, Golden, ::testing::ValuesIn(testing::shipped_scenario_files()),
                         [](const ::testing::TestParamInfo<fs::path>& param) { return test_name(param.param); });

// Every golden file belongs to a shipped scenario of its kind: a scenario removed, renamed or turned into the
// other kind leaves none behind (with the update flag, such files are deleted).
TEST(GoldenFiles, EachHasAShippedScenario) {
  std::set<std::string> expected;
  for (const fs::path& scenario : testing::shipped_scenario_files()) {
    const std::string kind{sim::scenario_kind(kSource / scenario)};
    expected.insert(golden_file(kind, scenario).generic_string());
  }
  std::vector<fs::path> orphans;
  for (const auto& e : fs::recursive_directory_iterator(kGoldenDir)) {
    if (e.is_regular_file() && !expected.count(e.path().generic_string())) orphans.push_back(e.path());
  }
  if (updating()) {
    for (const fs::path& f : orphans) fs::remove(f);
    GTEST_SKIP() << orphans.size() << " golden files without a scenario removed";
  }
  for (const fs::path& f : orphans) ADD_FAILURE() << f << " has no shipped scenario (regenerate: make golden)";
}

}  // namespace
}  // namespace clustersim
