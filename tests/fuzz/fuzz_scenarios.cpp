// fuzz_scenarios: a property-based fuzzer of the scenario loader and the whole `clustersim run` path (load,
// simulate the step and the job, format the report, build the /summary row, write the HDF5 file), in-process.
//
// Property: every input ends in success, a verdict (an infeasible job), or a data error (exit status 65 of the
// one exit-status table, sim/run/exit_status.hpp); never an internal error (70), a signal, or an input that runs
// longer than --input-limit seconds. Inputs are mutants of seed scenarios, drawn from a seeded generator, so a
// run is reproducible: input i of seed s is the same on every machine (SplitMix64 and integer arithmetic only).
//
// Mutations, 1 to 4 per input, on the parsed TOML (TOML++), each picked uniformly:
//   - a key of the file: an integer becomes an edge value (0, -1, 1, 2, 3, 7, 64, 1000, 2^20, 2^24, 2^31, 2^40,
//     INT64_MAX, INT64_MIN + 1) or the value x 2, / 2, + 1, - 1, x 1000; a float an edge value (0, -1, 1e-300,
//     1e300, inf, -inf, nan, 0.5, 1) or x 10, / 10; a string another of its key's choices or a made-up word;
//     a boolean flips; any value becomes another type; the key is deleted;
//   - a key of the format (scenario_params()) absent from the file is added with a value of its type;
//   - an unknown key is added;
//   - the text itself: a character deleted or a line duplicated (the TOML parser's errors).
// One input in four also gets a side file beside it, named by the scenario: a serving seed a request trace
// (workload.trace, TIMESTAMP,ContextTokens,GeneratedTokens rows with edge token counts and impossible or
// malformed dates), a training seed with a [job] an eviction trace (reliability.spot_eviction_trace on spot VMs,
// edge hours, non-numbers, comments).
// A mutant with a [sweep] table (the seeds from scenarios/sweeps: value lists, zips, "auto" layouts; their
// entries mutated like any key, and one mutant in four gets a swept key of the format with 1-3 edge values) goes
// through the sweep's set-up instead: load_sweep (grid bound, every point's overrides), its content fingerprint,
// and a sidecar of up to 3 finished rows, written, mutated as text (a character deleted, a line duplicated, a
// field replaced by an edge word) and read back as --resume reads it (the rows checked against the points).
// An internal error (with its message) or an over-long input is written to --failures DIR as input_<seed>_<i>.toml.
//
// Usage: fuzz_scenarios [--seconds S] [--max-inputs N] [--seed K] [--input-limit S] [--failures DIR]
//                       [--print INDEX] SEED.toml...     (--print: write input INDEX to stdout and stop)
// Exit status: 0 when every input held the property, 1 otherwise, 64 on a bad command line. With the environment
// variable FUZZ_SHOW_ERRORS set, each located data error is printed to stderr (to see what the mutants hit).
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <toml++/toml.h>
#include <unistd.h>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/splitmix64.hpp"
#include "sim/errors.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/job/job_simulation.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/results_file.hpp"
#include "sim/output/step_report.hpp"
#include "sim/run/exit_status.hpp"
#include "sim/run/run_scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/sweep/fingerprint.hpp"
#include "sim/sweep/sidecar.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace fs = std::filesystem;
using namespace clustersim;

namespace {

/// A generator of the harness's own: SplitMix64 over a counter (models/splitmix64.hpp), integer draws only.
class Draw {
 public:
  explicit Draw(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64(state_++); }
  /// Uniform in [0, n), n >= 1 (the modulo bias is irrelevant here).
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }

 private:
  uint64_t state_;
};

/// Every leaf value of `t` with its dotted key (array elements as KEY.N; tables inside arrays as KEY.N.FIELD).
void collect(toml::node& node, const std::string& prefix, std::vector<std::pair<std::string, toml::node*>>& out) {
  if (toml::table* t = node.as_table()) {
    for (auto&& [k, v] : *t) collect(v, prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str()), out);
  } else if (toml::array* a = node.as_array()) {
    out.emplace_back(prefix, &node);  // the array itself, to delete or retype
    for (size_t i = 0; i < a->size(); ++i) collect(*a->get(i), prefix + "." + std::to_string(i), out);
  } else {
    out.emplace_back(prefix, &node);
  }
}

/// The most negative integer the fuzzer writes: INT64_MIN + 1. TOML++ 3.3's formatter negates an integer to
/// count its digits (toml_formatter.inl, toml_formatter_count_inline_columns), undefined behaviour at INT64_MIN
/// that UBSan stops on while the harness prints a mutant; the loader's handling of huge negative counts is the
/// same one value up.
constexpr int64_t kMostNegative = std::numeric_limits<int64_t>::min() + 1;

int64_t edge_integer(Draw& g, int64_t v) {
  static constexpr int64_t kEdges[] = {0, -1, 1, 2, 3, 7, 64, 1000, int64_t{1} << 20, int64_t{1} << 24,
                                       int64_t{1} << 31, int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                                       kMostNegative};
  switch (g.below(3)) {
    case 0: return kEdges[g.below(std::size(kEdges))];
    case 1: {
      switch (g.below(5)) {
        case 0: return v > std::numeric_limits<int64_t>::max() / 2 || v < kMostNegative / 2 ? v : v * 2;
        case 1: return v / 2;
        case 2: return v == std::numeric_limits<int64_t>::max() ? v : v + 1;
        case 3: return v <= kMostNegative ? v : v - 1;
        default: return (v > 9'000'000'000'000'000 / 1000 || v < -9'000'000'000'000'000 / 1000) ? v : v * 1000;
      }
    }
    default: return static_cast<int64_t>(g.below(4097));
  }
}

double edge_float(Draw& g, double v) {
  static constexpr double kEdges[] = {0.0, -1.0, 1e-300, 1e300, std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN(), 0.5, 1.0, 1e-6, 1e6};
  if (g.chance(50)) return kEdges[g.below(std::size(kEdges))];
  return g.chance(50) ? v * 10.0 : v / 10.0;
}

std::string made_up_word(Draw& g) {
  static const char* kWords[] = {"", "x", "auto", "none", "fp12", "Standard_ND96isr_H100_v9", "ring", "full",
                                 "selective", "flex", "rail_optimized", "\xc3\xa9t\xc3\xa9", "a b", "0"};
  return kWords[g.below(std::size(kWords))];
}

/// A value of `p`'s type (a choice when it has choices), or of a random type.
void set_value(Draw& g, toml::table& table, const std::string& leaf, const clustersim::sim::detail::ParamSpec* p) {
  using clustersim::sim::detail::ParamType;
  const int kind = p == nullptr || g.chance(15) ? static_cast<int>(g.below(5)) : static_cast<int>(p->type);
  switch (kind) {
    case static_cast<int>(ParamType::integer): table.insert_or_assign(leaf, edge_integer(g, 8)); break;
    case static_cast<int>(ParamType::number): table.insert_or_assign(leaf, edge_float(g, 1.0)); break;
    case static_cast<int>(ParamType::string):
      if (p != nullptr && !p->choices.empty() && g.chance(80)) {
        table.insert_or_assign(leaf, std::string(p->choices[g.below(p->choices.size())]));
      } else {
        table.insert_or_assign(leaf, made_up_word(g));
      }
      break;
    case static_cast<int>(ParamType::boolean): table.insert_or_assign(leaf, g.chance(50)); break;
    case static_cast<int>(ParamType::string_list): {
      toml::array a;
      const size_t n = g.below(4);
      for (size_t i = 0; i < n; ++i) {
        a.push_back(p != nullptr && !p->choices.empty() ? std::string(p->choices[g.below(p->choices.size())])
                                                         : made_up_word(g));
      }
      table.insert_or_assign(leaf, std::move(a));
      break;
    }
    default: {  // zone_list, or an array of tables for a key that takes none
      toml::array a;
      const size_t n = g.below(4);
      for (size_t i = 0; i < n; ++i) {
        a.push_back(toml::table{{"name", "z" + std::to_string(g.below(3))}, {"nodes", edge_integer(g, 2)}});
      }
      table.insert_or_assign(leaf, std::move(a));
      break;
    }
  }
}

/// The table that holds dotted `key` in `root` (created when absent), and the key's leaf.
std::pair<toml::table*, std::string> parent_of(toml::table& root, const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) return {&root, key};
  const std::string table = key.substr(0, dot);
  if (!root.contains(table) || !root[table].is_table()) root.insert_or_assign(table, toml::table{});
  return {root[table].as_table(), key.substr(dot + 1)};
}

void mutate_tree(Draw& g, toml::table& root) {
  std::vector<std::pair<std::string, toml::node*>> leaves;
  collect(root, "", leaves);
  const size_t op = g.below(10);
  if (op <= 5 && !leaves.empty()) {  // a key of the file
    auto& [key, node] = leaves[g.below(leaves.size())];
    if (auto* i = node->as_integer()) {
      if (g.chance(85)) {
        *i = edge_integer(g, i->get());
        return;
      }
    } else if (auto* f = node->as_floating_point()) {
      if (g.chance(85)) {
        *f = edge_float(g, f->get());
        return;
      }
    } else if (auto* s = node->as_string()) {
      if (g.chance(85)) {
        const auto* p = clustersim::sim::detail::find_param(key);
        *s = p != nullptr && !p->choices.empty() && g.chance(70) ? std::string(p->choices[g.below(p->choices.size())])
                                                                   : made_up_word(g);
        return;
      }
    } else if (auto* b = node->as_boolean()) {
      if (g.chance(85)) {
        *b = !b->get();
        return;
      }
    }
    // Retype or delete a top-level-table key (keys inside arrays are left to the cases above).
    if (key.find('.') == key.rfind('.') || key.find('.') == std::string::npos) {
      auto [table, leaf] = parent_of(root, key);
      if (g.chance(50)) {
        table->erase(leaf);
      } else {
        set_value(g, *table, leaf, nullptr);
      }
    }
    return;
  }
  if (op <= 8) {  // a key of the format
    const auto params = clustersim::sim::detail::scenario_params();
    const auto& p = params[g.below(params.size())];
    auto [table, leaf] = parent_of(root, std::string(p.key));
    set_value(g, *table, leaf, &p);
    return;
  }
  // An unknown key, at the root or in a known table.
  static const char* kTables[] = {"", "model", "training", "parallelism", "cluster", "job", "simulation"};
  const std::string table = kTables[g.below(std::size(kTables))];
  auto [t, leaf] = parent_of(root, table.empty() ? std::string("bogus_key") : table + ".bogus_key");
  t->insert_or_assign(leaf, 1);
}

std::string mutate_text(Draw& g, std::string text) {
  if (text.empty()) return text;
  if (g.chance(50)) {
    text.erase(g.below(text.size()), 1);
  } else {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    const size_t i = g.below(lines.size());
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[i]);
    text.clear();
    for (const auto& l : lines) text += l + "\n";
  }
  return text;
}

/// One fuzz input: the scenario text and, when it names one, its side file (a trace beside it).
struct FuzzInput {
  std::string text;
  std::string side_name;  ///< "" when none; else a file name relative to the scenario
  std::string side_text;
  uint64_t sidecar_mutation = 0;  ///< a sweep's: draws the sidecar's text mutation
};

/// A swept key of the format (scenario_params()) in `sweep`, with 1-3 values of its type (edge values included).
void add_swept_key(Draw& g, toml::table& sweep) {
  const auto params = clustersim::sim::detail::scenario_params();
  const auto& p = params[g.below(params.size())];
  toml::table scratch;
  toml::array values;
  for (size_t i = 0, n = 1 + g.below(3); i < n; ++i) {
    set_value(g, scratch, "v", &p);
    if (const toml::node* v = scratch.get("v")) values.push_back(*v);
  }
  sweep.insert_or_assign(std::string(p.key), values);
}

/// A sidecar's text with one mutation: a character deleted, a line duplicated, or a tab-separated field replaced
/// by an edge word.
std::string mutate_sidecar(Draw& g, std::string text) {
  if (text.empty() || g.chance(20)) return text;
  if (g.chance(60)) return mutate_text(g, text);
  static const char* kWords[] = {"", "-1", "nan", "1e999", "18446744073709551616", "x y", "ok", "invalid", "d", "s",
                                 "M", "R", "9223372036854775807", "\\", "\\q"};
  std::vector<size_t> tabs;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\t') tabs.push_back(i);
  }
  if (tabs.empty()) return text;
  const size_t at = tabs[g.below(tabs.size())] + 1;
  const size_t end = text.find_first_of("\t\n", at);
  return text.substr(0, at) + kWords[g.below(std::size(kWords))] + (end == std::string::npos ? "" : text.substr(end));
}

/// A request trace's rows: the Azure 2023 layout, with edge token counts, impossible or malformed dates, rows out
/// of order, wrong column counts, a changed header.
std::string request_trace(Draw& g) {
  static const char* kTokens[] = {"0", "1", "-1", "374", "4808", "2048", "131072", "2147483648", "4611686018427387904",
                                  "9223372036854775807", "99999999999999999999", "x", "", "1.5", " 7"};
  static const char* kTimes[] = {"2023-11-16 18:15:46.6805900", "2023-11-16 18:15:46", "2023-02-31 00:00:00.0",
                                 "2023-11-16 25:61:61.0", "1970-01-01 00:00:00.0", "9999-12-31 23:59:59.9999999",
                                 "2023-11-16T18:15:46", "x", "", "2023-11-16 18:15:45.0"};
  std::string out = g.chance(95) ? "TIMESTAMP,ContextTokens,GeneratedTokens\n" : "TIMESTAMP,Context,Generated\n";
  const size_t rows = g.below(40);
  for (size_t i = 0; i < rows; ++i) {
    if (g.chance(70)) {  // a plausible row, one second after the previous
      out += "2023-11-16 18:" + std::to_string(10 + i / 60) + ":" + std::to_string(10 + i % 50) + ".5," +
             std::to_string(1 + g.below(4000)) + "," + std::to_string(1 + g.below(500));
    } else {
      out += std::string(kTimes[g.below(std::size(kTimes))]) + "," + kTokens[g.below(std::size(kTokens))] + "," +
             kTokens[g.below(std::size(kTokens))];
      if (g.chance(10)) out += ",3";
    }
    out += g.chance(5) ? "\r\n" : "\n";
  }
  return out;
}

/// An eviction trace: hours since the job's start, with edge values, non-numbers and comments.
std::string eviction_trace(Draw& g) {
  static const char* kHours[] = {"0", "1", "1.5", "-1", "nan", "inf", "1e300", "1e-300", "876600", "x", "",
                                 "# a comment", "2 # note", "1e6", "0x10", "1,2"};
  std::string out;
  const size_t rows = g.below(30);
  for (size_t i = 0; i < rows; ++i) {
    out += g.chance(60) ? std::to_string(g.below(2000)) + "." + std::to_string(g.below(10))
                        : std::string(kHours[g.below(std::size(kHours))]);
    out += "\n";
  }
  return out;
}

/// Names a side file in `root` when the seed can take one: a request trace for a serving scenario, an eviction
/// trace (on spot VMs) for a training one with a [job].
void add_side_file(Draw& g, toml::table& root, FuzzInput& input) {
  if (root.contains("serving") && root["serving"].is_table()) {
    auto [table, leaf] = parent_of(root, "workload.trace");
    table->insert_or_assign(leaf, "trace.csv");
    table->erase("arrival");
    table->erase("rate_per_s");
    table->erase("requests");
    table->erase("concurrency");
    input.side_name = "trace.csv";
    input.side_text = request_trace(g);
  } else if (root.contains("job") && root["job"].is_table()) {
    auto [table, leaf] = parent_of(root, "reliability.spot_eviction_trace");
    table->insert_or_assign(leaf, "evictions.csv");
    if (g.chance(90)) table->insert_or_assign("spot", true);
    input.side_name = "evictions.csv";
    input.side_text = eviction_trace(g);
  }
}

/// The mutant `index` of `seeds` under `seed`.
FuzzInput make_input(const std::vector<std::string>& seeds, uint64_t seed, uint64_t index) {
  Draw g(seed * 0x9e3779b97f4a7c15ULL + index);
  const std::string& base = seeds[g.below(seeds.size())];
  FuzzInput input;
  toml::table root;
  try {
    root = toml::parse(base);
  } catch (const toml::parse_error&) {
    input.text = mutate_text(g, base);
    return input;
  }
  const size_t n = 1 + g.below(4);
  for (size_t i = 0; i < n; ++i) mutate_tree(g, root);
  if (root.contains("sweep") && root["sweep"].is_table() && g.chance(25)) add_swept_key(g, *root["sweep"].as_table());
  input.sidecar_mutation = g.next();
  if (g.chance(25)) add_side_file(g, root, input);
  std::ostringstream out;
  out << root;
  input.text = out.str();
  if (g.chance(5)) input.text = mutate_text(g, input.text);
  return input;
}

// The failures directory and the run's seed and input index (for file names).
std::string g_failures;
uint64_t g_seed = 0, g_index = 0;

std::string failure_path(uint64_t index) {
  return (fs::path(g_failures) / ("input_" + std::to_string(g_seed) + "_" + std::to_string(index) + ".toml")).string();
}

void write_failure(const FuzzInput& input, const std::string& message) {
  if (g_failures.empty()) return;
  std::ofstream(failure_path(g_index)) << "# " << message << "\n" << input.text;
  if (!input.side_name.empty()) {
    std::ofstream(fs::path(g_failures) / ("input_" + std::to_string(g_seed) + "_" + std::to_string(g_index) + "_" +
                                          input.side_name))
        << input.side_text;
  }
}

// For the alarm handler, set before each input: the input file and where an over-long one goes. The handler uses
// async-signal-safe calls only (rename, write, _exit): the input is already on disk.
char g_input_path[4096] = {};
char g_slow_path[4096] = {};

extern "C" void on_alarm(int) {
  static const char kMessage[] = "fuzz_scenarios: an input ran over --input-limit (moved to --failures)\n";
  if (g_slow_path[0] != '\0') (void)::rename(g_input_path, g_slow_path);
  (void)!write(2, kMessage, sizeof kMessage - 1);
  _exit(1);
}

enum class Outcome { ok, verdict, data_error, unlocated_data_error, internal_error };

std::string testing_read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Whether the file parses as TOML with a top-level [sweep] table.
bool has_sweep_table(const fs::path& file) {
  try {
    const toml::table doc = toml::parse(testing_read(file), file.string());
    return doc.get("sweep") != nullptr && doc.get("sweep")->is_table();
  } catch (const toml::parse_error&) {
    return false;
  }
}

/// A serving scenario through the whole run path: load, run, report, /summary and its tables.
void run_serving(const fs::path& file, const models::Catalog& catalog, const fs::path& out) {
  const sim::ServingScenario sc = sim::load_serving_scenario(file, {}, catalog);
  const sim::ServingRun run = sim::run_serving_scenario(sc, catalog);
  (void)sim::format_serving_summary(sc, run);
  sim::RunMetadata meta;
  meta.software_version = "fuzz";
  meta.git_sha = "fuzz";
  meta.seed = sc.seed;
  meta.scenario_toml = sc.resolved_toml;
  sim::write_results_file(out.string(), meta, sim::serving_summary_columns(sc, run),
                          {{"requests", "requests", sim::serving_request_columns(run)},
                           {"timeseries", "samples", sim::serving_sample_columns(run)}});
}

/// A sweep's set-up as `clustersim sweep --resume` runs it, without running the points: load_sweep, the content
/// fingerprint, and a sidecar of up to 3 rows written, mutated by `mutation` and read back.
void run_sweep_setup(const fs::path& file, const models::Catalog& catalog, const fs::path& sidecar,
                     uint64_t mutation) {
  const sim::LoadedSweep sweep = sim::load_sweep(file, {}, catalog);
  const std::vector<sim::FingerprintPart> fingerprint =
      sim::sweep_fingerprint(sweep, models::Catalog::default_directory());
  {
    std::map<int64_t, sim::SweepRow> none;
    sim::Sidecar writer(sidecar, fingerprint, false, none);
    const auto meta = std::make_shared<const sim::SweepMetaList>(
        sim::SweepMetaList{{"step_time_s", "s", "the step", false}, {"vm_size", "", "the VM", true}});
    for (size_t i = 0; i < sweep.points.size() && i < 3; ++i) {
      const sim::SweepPoint& p = sweep.points[i];
      writer.append(i == 1 ? sim::SweepRow{p.index, p.seed, "invalid", "a reason\twith a tab", nullptr, {}}
                           : sim::SweepRow{p.index, p.seed, "ok", "", meta, {1.5 * static_cast<double>(i), "x"}});
    }
  }
  Draw g(mutation);
  const std::string text = mutate_sidecar(g, testing_read(sidecar));
  std::ofstream(sidecar, std::ios::binary | std::ios::trunc) << text;
  std::map<int64_t, sim::SweepRow> done;
  const auto check = [&sweep](const sim::SweepRow& r) -> std::string {
    if (r.index < 0 || r.index >= static_cast<int64_t>(sweep.points.size())) return "no such point";
    return sweep.points[static_cast<size_t>(r.index)].seed == r.seed ? "" : "another seed";
  };
  sim::Sidecar reader(sidecar, fingerprint, true, done, check);
}

Outcome run_one(const fs::path& file, const models::Catalog& catalog, const fs::path& out, std::string& message,
                uint64_t sidecar_mutation) {
  try {
    if (has_sweep_table(file)) {
      run_sweep_setup(file, catalog, out.string() + ".partial", sidecar_mutation);
      return Outcome::ok;
    }
    if (sim::is_serving_scenario(file)) {
      run_serving(file, catalog, out);
      return Outcome::ok;
    }
    const sim::Scenario sc = sim::load_scenario(file, {}, catalog);
    const sim::RunResult run = sim::run_scenario(sc, catalog);
    std::string text = sim::format_step_summary(sc, catalog, run.step, run.one_zone_report());
    if (run.job) text += sim::format_job_summary(sc, *run.job, run.on_demand_job());
    std::vector<sim::ColumnGroup> groups{{"runs/0/stages", "stages", sim::stage_columns(run.step)}};
    if (run.job) groups.push_back({"runs/0/replications", "replications", sim::replication_columns(*run.job)});
    sim::RunMetadata meta;
    meta.software_version = "fuzz";
    meta.git_sha = "fuzz";
    meta.seed = sc.simulation.seed;
    meta.scenario_toml = sc.resolved_toml;
    sim::write_results_file(out.string(), meta, sim::run_summary_columns(sc, run), groups);
    return run.job && !run.job->feasible ? Outcome::verdict : Outcome::ok;
  } catch (const sim::ScenarioError& e) {
    message = e.what();
    return Outcome::data_error;
  } catch (const sim::DataError& e) {
    // A sidecar's error: "PATH:LINE: reason" (a located one) or a point's value the models reject.
    message = e.what();
    return std::string_view(message).find(".partial:") != std::string_view::npos ? Outcome::data_error
                                                                                 : Outcome::unlocated_data_error;
  } catch (...) {
    // Not a ScenarioError: exit 65 without a file:line:column (a model rejecting a value the loader let
    // through), or an internal error.
    const sim::ErrorExit e = sim::exit_for(std::current_exception(), "run");
    message = e.message;
    return e.status == sim::kExitDataError ? Outcome::unlocated_data_error : Outcome::internal_error;
  }
}

int usage(const char* why) {
  std::cerr << "fuzz_scenarios: " << why
            << "\nusage: fuzz_scenarios [--seconds S] [--max-inputs N] [--seed K] [--input-limit S] [--failures DIR] "
               "SEED.toml...\n";
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10.0;
  uint64_t max_inputs = std::numeric_limits<uint64_t>::max();
  unsigned input_limit = 30;
  std::vector<std::string> seeds;
  int64_t print = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage(("missing value of " + a).c_str()));
      return argv[++i];
    };
    if (a == "--seconds") {
      seconds = std::stod(value());
    } else if (a == "--max-inputs") {
      max_inputs = std::stoull(value());
    } else if (a == "--seed") {
      g_seed = std::stoull(value());
    } else if (a == "--input-limit") {
      input_limit = static_cast<unsigned>(std::stoul(value()));
    } else if (a == "--print") {
      print = std::stoll(value());
    } else if (a == "--failures") {
      g_failures = value();
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else {
      std::ifstream in(a);
      if (!in) return usage(("cannot read " + a).c_str());
      std::ostringstream text;
      text << in.rdbuf();
      seeds.push_back(text.str());
    }
  }
  if (seeds.empty()) return usage("no seed scenarios");
  if (print >= 0) {
    const FuzzInput input = make_input(seeds, g_seed, static_cast<uint64_t>(print));
    std::cout << input.text;
    if (!input.side_name.empty()) std::cout << "\n# ---- " << input.side_name << "\n" << input.side_text;
    return 0;
  }

  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  const fs::path dir = fs::temp_directory_path() / ("clustersim-fuzz-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path input = dir / "input.toml", output = dir / "out.h5";
  std::snprintf(g_input_path, sizeof g_input_path, "%s", input.c_str());
  if (!g_failures.empty()) fs::create_directories(g_failures);
  std::signal(SIGALRM, on_alarm);

  std::map<Outcome, uint64_t> counts;
  std::map<std::string, uint64_t> internal, unlocated;
  double slowest_s = 0.0;
  uint64_t slowest = 0;
  const auto start = std::chrono::steady_clock::now();
  uint64_t tried = 0;
  for (g_index = 0; g_index < max_inputs; ++g_index) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= seconds) break;
    const FuzzInput made = make_input(seeds, g_seed, g_index);
    std::ofstream(input, std::ios::trunc) << made.text;
    for (const char* side : {"trace.csv", "evictions.csv"}) fs::remove(dir / side);
    if (!made.side_name.empty()) std::ofstream(dir / made.side_name, std::ios::binary) << made.side_text;
    if (!g_failures.empty()) {
      std::snprintf(g_slow_path, sizeof g_slow_path, "%s", failure_path(g_index).c_str());
    }
    alarm(input_limit);
    std::string message;
    const auto t0 = std::chrono::steady_clock::now();
    const Outcome o = run_one(input, catalog, output, message, made.sidecar_mutation);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    alarm(0);
    if (took > slowest_s) {
      slowest_s = took;
      slowest = g_index;
    }
    if (o == Outcome::data_error && std::getenv("FUZZ_SHOW_ERRORS") != nullptr) std::cerr << message << "\n";
    ++counts[o];
    ++tried;
    if (o == Outcome::unlocated_data_error && unlocated[message]++ == 0) {
      std::cerr << "fuzz_scenarios: input " << g_index << " (unlocated data error): " << message;
    }
    if (o == Outcome::internal_error) {
      if (internal[message]++ == 0) {
        std::cerr << "fuzz_scenarios: input " << g_index << ": " << message;
        write_failure(made, message.substr(0, message.find('\n')));
      }
    }
  }
  fs::remove_all(dir);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto n = [&](Outcome o) { return static_cast<unsigned long long>(counts[o]); };
  std::printf("| inputs | ran | infeasible job (verdict) | located data error (65) | other data error (65) | "
              "internal error (70) | seconds | inputs/s | slowest input |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %llu | %llu | %llu | %llu | %llu | %llu | %.1f | %.0f | %llu (%.2f s) |\n",
              static_cast<unsigned long long>(tried), n(Outcome::ok), n(Outcome::verdict), n(Outcome::data_error),
              n(Outcome::unlocated_data_error), n(Outcome::internal_error), elapsed,
              static_cast<double>(tried) / elapsed, static_cast<unsigned long long>(slowest), slowest_s);
  return counts[Outcome::internal_error] == 0 ? 0 : 1;
}
