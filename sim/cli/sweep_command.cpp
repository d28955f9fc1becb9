#include "sim/cli/sweep_command.hpp"
#include "sim/cli/exit_status.hpp"

#include <boost/program_options.hpp>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/job/job_setup.hpp"
#include "sim/job/job_simulation.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/results_file.hpp"
#include "sim/output/step_report.hpp"
#include "sim/step/step_simulation.hpp"
#include "sim/sweep/summary_file.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

using namespace cli;
constexpr int kExitStopped = 75;  // --stop-after (testing): the sweep stopped early, the sidecar is kept

/// Runs `body`, mapping exceptions to exit statuses and messages on stderr.
template <typename F>
int guarded(const std::string& command, F&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "clustersim " << command << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const ScenarioError& e) {
    std::cerr << "clustersim: error: " << e.what() << "\n";
    return kExitDataError;
  } catch (const models::CatalogError& e) {
    std::cerr << "clustersim: catalog error: " << e.what() << "\n";
    return kExitDataError;
  } catch (const DataError& e) {
    std::cerr << "clustersim: error: " << e.what() << "\n";
    return kExitDataError;
  } catch (const IoError& e) {
    std::cerr << "clustersim: error: " << e.what() << "\n";
    return kExitIoError;
  } catch (const std::exception& e) {
    std::cerr << "clustersim: internal error: " << e.what() << "\n";
    return kExitSoftware;
  }
}

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& options,
                        const po::options_description& hidden, const po::positional_options_description& positional) {
  po::options_description all;
  all.add(options).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::ostringstream o;
    o << e.what() << "\n" << options;
    throw UsageError(o.str());
  }
  return vm;
}

models::Catalog load_catalog(const po::variables_map& vm) {
  const std::string dir = vm.count("catalog") ? vm["catalog"].as<std::string>()
                                               : models::Catalog::default_directory().string();
  return models::Catalog::load(dir);
}

std::vector<std::string> set_overrides(const po::variables_map& vm) {
  return vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

using Sweep = LoadedSweep;

// ---- rows -------------------------------------------------------------------------------------------------

using Value = SweepValue;
using ColumnMeta = SweepColumnMeta;
using MetaList = SweepMetaList;
using Row = SweepRow;

/// Shortest round-trip text of a double ("nan", "-nan", "inf", "-inf" for the special values; a NaN keeps its
/// sign so that a resumed row is written with the same bytes).
std::string number_text(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::optional<double> parse_number(std::string_view t) {
  if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (t == "-nan") return -std::numeric_limits<double>::quiet_NaN();
  if (t == "inf") return std::numeric_limits<double>::infinity();
  if (t == "-inf") return -std::numeric_limits<double>::infinity();
  double v = 0.0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

// ---- the sidecar (FILE.h5.partial) ---------------------------------------------------------------------------
//
// Text, one record a line, fields separated by tabs, with \\, \t, \n, \r escaped:
//   clustersim-sweep-partial <TAB> 1 <TAB> FINGERPRINT          first line; FINGERPRINT identifies the sweep
//   M <TAB> ID <TAB> then per column: NAME, TYPE (d|s), UNITS, DESCRIPTION     a list of result columns
//   R <TAB> INDEX <TAB> SEED <TAB> STATUS <TAB> REASON <TAB> META-ID (-1: none) <TAB> VALUE...   a finished point
// Appended and flushed after every point; a last line without its newline (a killed write) is ignored.

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char n = s[++i];
    out += n == 't' ? '\t' : n == 'n' ? '\n' : n == 'r' ? '\r' : n;
  }
  return out;
}

std::vector<std::string> split_tabs(std::string_view line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    out.push_back(unescape(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start)));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return out;
}

constexpr std::string_view kSidecarMagic = "clustersim-sweep-partial";

class Sidecar {
 public:
  /// Opens `path` for appending: fresh (truncated, header written) or, with `resume`, after reading its
  /// finished rows into `done` (by index). Throws DataError when it belongs to another sweep.
  Sidecar(fs::path path, const std::string& fingerprint, bool resume, std::map<int64_t, Row>& done)
      : path_(std::move(path)) {
    bool fresh = true;
    if (resume && fs::exists(path_)) {
      std::ifstream in(path_, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      std::string all = text.str();
      const size_t complete = all.rfind('\n');
      all.resize(complete == std::string::npos ? 0 : complete + 1);
      std::istringstream lines(all);
      std::string line;
      bool header = false;
      std::map<int64_t, std::shared_ptr<const MetaList>> metas;
      while (std::getline(lines, line)) {
        const auto f = split_tabs(line);
        if (!header) {
          if (f.size() != 3 || f[0] != kSidecarMagic || f[1] != "1") {
            throw DataError(path_.string() + ": not a sweep sidecar file");
          }
          if (f[2] != fingerprint) {
            throw DataError(path_.string() + ": belongs to another sweep (scenario, options or points differ); "
                                             "delete it or run without --resume");
          }
          header = true;
          continue;
        }
        if (f[0] == "M" && f.size() >= 2 && (f.size() - 2) % 4 == 0) {
          auto meta = std::make_shared<MetaList>();
          for (size_t i = 2; i + 3 < f.size(); i += 4) meta->push_back({f[i], f[i + 2], f[i + 3], f[i + 1] == "s"});
          const int64_t id = std::stoll(f[1]);
          metas[id] = meta;
          written_[meta.get()] = id;
          next_meta_ = std::max(next_meta_, id + 1);
        } else if (f[0] == "R" && f.size() >= 6) {
          Row r;
          r.index = std::stoll(f[1]);
          r.seed = std::stoull(f[2]);
          r.status = f[3];
          r.reason = f[4];
          const int64_t id = std::stoll(f[5]);
          if (id >= 0) {
            const auto it = metas.find(id);
            if (it == metas.end() || it->second->size() != f.size() - 6) {
              throw DataError(path_.string() + ": malformed row for point " + f[1]);
            }
            r.meta = it->second;
            for (size_t i = 0; i < r.meta->size(); ++i) {
              if ((*r.meta)[i].is_string) {
                r.values.emplace_back(f[6 + i]);
              } else {
                const auto v = parse_number(f[6 + i]);
                if (!v) throw DataError(path_.string() + ": malformed number in the row of point " + f[1]);
                r.values.emplace_back(*v);
              }
            }
          }
          done[r.index] = std::move(r);
        } else {
          throw DataError(path_.string() + ": malformed line");
        }
      }
      if (header) {
        fs::resize_file(path_, all.size());
        fresh = false;
      }
    }
    file_ = std::fopen(path_.c_str(), fresh ? "wb" : "ab");
    if (file_ == nullptr) throw IoError("cannot write " + path_.string());
    if (fresh) write(std::string(kSidecarMagic) + "\t1\t" + escape(fingerprint) + "\n");
  }
  ~Sidecar() {
    if (file_ != nullptr) std::fclose(file_);
  }
  Sidecar(const Sidecar&) = delete;
  Sidecar& operator=(const Sidecar&) = delete;

  void append(const Row& r) {
    std::lock_guard lock(mutex_);
    std::string text;
    int64_t id = -1;
    if (r.meta) {
      const auto it = written_.find(r.meta.get());
      if (it != written_.end()) {
        id = it->second;
      } else {
        id = next_meta_++;
        written_[r.meta.get()] = id;
        keep_.push_back(r.meta);
        text += "M\t" + std::to_string(id);
        for (const ColumnMeta& m : *r.meta) {
          text += "\t" + escape(m.name) + (m.is_string ? "\ts\t" : "\td\t") + escape(m.units) + "\t" +
                  escape(m.description);
        }
        text += "\n";
      }
    }
    text += "R\t" + std::to_string(r.index) + "\t" + std::to_string(r.seed) + "\t" + escape(r.status) + "\t" +
            escape(r.reason) + "\t" + std::to_string(id);
    for (const Value& v : r.values) {
      text += "\t";
      text += std::holds_alternative<std::string>(v) ? escape(std::get<std::string>(v))
                                                      : number_text(std::get<double>(v));
    }
    text += "\n";
    write(text);
  }

  /// Closes and deletes the sidecar (the results file is complete).
  void remove() {
    std::lock_guard lock(mutex_);
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    std::error_code ec;
    fs::remove(path_, ec);
  }

 private:
  void write(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
      throw IoError("cannot write " + path_.string());
    }
  }

  fs::path path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  std::map<const MetaList*, int64_t> written_;
  std::vector<std::shared_ptr<const MetaList>> keep_;
  int64_t next_meta_ = 0;
};

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// ---- the results file -------------------------------------------------------------------------------------

/// "parallelism.tensor" -> "parallelism_tensor" (dataset names are [a-z0-9_]+).
std::string column_name_of(const std::string& key) {
  std::string s;
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '_';
  }
  return s;
}

/// The value of `key` in `overrides` (the last one), as TOML text; nullopt when absent.
std::optional<std::string> override_value(const std::vector<std::string>& overrides, const std::string& key) {
  std::optional<std::string> v;
  for (const std::string& o : overrides) {
    if (o.size() > key.size() && o.compare(0, key.size(), key) == 0 && o[key.size()] == '=') {
      v = o.substr(key.size() + 1);
    }
  }
  return v;
}

/// TOML literal text as a label: strings without quotes, anything else as written.
std::string label_of(const std::string& text) {
  if (text.empty() || (text.front() != '"' && text.front() != '\'')) return text;
  try {
    const toml::table t = toml::parse("v = " + text);
    if (const auto* s = t["v"].as_string()) return s->get();
  } catch (const toml::parse_error&) {
  }
  return text;
}

/// The swept keys of all points, in order of first appearance.
std::vector<std::string> swept_keys(const std::vector<SweepPoint>& points) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const SweepPoint& p : points) {
    for (const std::string& o : p.overrides) {
      const std::string key = o.substr(0, o.find('='));
      if (seen.insert(key).second) keys.push_back(key);
    }
  }
  return keys;
}

/// The /summary columns (and the /sweep/columns table) of `rows` (sorted by index).
struct Table {
  std::vector<SummaryColumn> columns;
  std::vector<std::string> kinds;  ///< per column: index | parameter | result
  std::map<std::string, std::string> param_names;  ///< swept key -> its /summary column
};

Table build_table(const Sweep& sweep, const std::vector<const Row*>& rows) {
  Table t;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> index, seed;
  std::vector<std::string> status, reason;
  for (const Row* r : rows) {
    index.push_back(r->index);
    seed.push_back(static_cast<int64_t>(r->seed));
    status.push_back(r->status);
    reason.push_back(r->reason);
  }
  t.columns.push_back({"run_index", "1", "stable index of the sweep point (row-major over the axes)", index});
  t.columns.push_back({"seed", "1", "the point's seed: splitmix64(base seed ^ splitmix64(run_index)) >> 1", seed});
  t.columns.push_back({"status", "", "ok, out_of_memory (simulated; does not fit in GPU memory) or invalid", status});
  t.columns.push_back({"reason", "", "why a point is invalid or out of memory; empty when ok", reason});
  t.kinds = {"index", "index", "index", "index"};
  std::set<std::string> used{"run_index", "seed", "status", "reason"};

  // Result columns: in the order of the first row that has them.
  std::vector<ColumnMeta> results;
  std::set<std::string> result_names;
  for (const Row* r : rows) {
    if (!r->meta) continue;
    for (const ColumnMeta& m : *r->meta) {
      if (result_names.insert(m.name).second) results.push_back(m);
    }
  }
  // Parameters: numeric (float64) when every point's value is a number.
  for (const std::string& key : swept_keys(sweep.points)) {
    bool numeric = true;
    for (const SweepPoint& p : sweep.points) {
      const auto v = override_value(p.overrides, key);
      if (v && (!parse_number(*v) || !std::isfinite(*parse_number(*v)))) numeric = false;
    }
    std::string name = column_name_of(key);
    if (used.count(name) || result_names.count(name)) name = "param_" + name;
    used.insert(name);
    t.param_names[key] = name;
    const detail::ParamSpec* spec = detail::find_param(key);
    std::string units = spec != nullptr ? std::string(spec->unit) : std::string();
    if (numeric && units.empty()) units = "1";
    if (!numeric) units.clear();
    SummaryColumn c{name, units, "swept scenario key " + key, {}};
    if (numeric) {
      std::vector<double> v;
      for (const Row* r : rows) {
        const auto text = override_value(sweep.points[static_cast<size_t>(r->index)].overrides, key);
        v.push_back(text ? *parse_number(*text) : nan);
      }
      c.values = std::move(v);
    } else {
      std::vector<std::string> v;
      for (const Row* r : rows) {
        const auto text = override_value(sweep.points[static_cast<size_t>(r->index)].overrides, key);
        v.push_back(text ? label_of(*text) : std::string());
      }
      c.values = std::move(v);
    }
    t.columns.push_back(std::move(c));
    t.kinds.emplace_back("parameter");
  }
  for (const ColumnMeta& m : results) {
    SummaryColumn c{m.name, m.units, m.description, {}};
    std::vector<double> d;
    std::vector<std::string> s;
    for (const Row* r : rows) {
      size_t k = 0;
      if (r->meta) {
        while (k < r->meta->size() && (*r->meta)[k].name != m.name) ++k;
      }
      const bool has = r->meta && k < r->meta->size();
      if (m.is_string) {
        s.push_back(has && std::holds_alternative<std::string>(r->values[k]) ? std::get<std::string>(r->values[k])
                                                                            : std::string());
      } else {
        d.push_back(has && std::holds_alternative<double>(r->values[k]) ? std::get<double>(r->values[k]) : nan);
      }
    }
    if (m.is_string) {
      c.values = std::move(s);
    } else {
      c.values = std::move(d);
    }
    t.columns.push_back(std::move(c));
    t.kinds.emplace_back("result");
  }
  return t;
}

constexpr const char* kColumnsGroup = "sweep/columns";

ColumnGroup columns_group(const Table& t) {
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(c.name);
  return {kColumnsGroup, "the /summary columns in order, with their role (index, parameter, result)",
          {{"name", "", "a /summary column", names}, {"kind", "", "index, parameter or result", t.kinds}}};
}

constexpr const char* kGridGroup = "sweep";

/// The /sweep axes of a pure grid sweep (axes, no parallelism = "auto"): one per axis, named after the /summary
/// column of its first key, holding that key's values (float64 when all are finite numbers, else labels).
/// Empty for any other sweep.
std::vector<SummaryColumn> grid_axes(const Sweep& sweep, const Table& t) {
  if (sweep.spec.auto_parallelism || sweep.spec.axes.empty()) return {};
  std::vector<SummaryColumn> axes;
  size_t cells = 1;
  for (const SweepAxis& a : sweep.spec.axes) {
    if (a.keys.empty() || a.values.empty()) return {};
    const std::string& key = a.keys.front();
    const auto name = t.param_names.find(key);
    if (name == t.param_names.end()) return {};
    std::string units;
    for (const SummaryColumn& c : t.columns) {
      if (c.name == name->second) units = c.units;
    }
    std::string description = "sweep axis: values of the swept scenario key " + key;
    if (a.keys.size() > 1) {
      description += " (zipped with";
      for (size_t k = 1; k < a.keys.size(); ++k) description += " " + a.keys[k];
      description += ")";
    }
    bool numeric = true;
    for (const auto& v : a.values) {
      const auto x = v.empty() ? std::nullopt : parse_number(v.front());
      if (!x || !std::isfinite(*x)) numeric = false;
    }
    SummaryColumn c{name->second, numeric ? (units.empty() ? "1" : units) : std::string(), description, {}};
    if (numeric) {
      std::vector<double> d;
      for (const auto& v : a.values) d.push_back(*parse_number(v.front()));
      c.values = std::move(d);
    } else {
      std::vector<std::string> labels;
      for (const auto& v : a.values) labels.push_back(v.empty() ? std::string() : label_of(v.front()));
      c.values = std::move(labels);
    }
    cells *= a.values.size();
    axes.push_back(std::move(c));
  }
  if (cells != sweep.points.size()) return {};
  return axes;
}

/// The /sweep grids: every float64 result column of `t` reshaped by `axes` (run_index is the row-major
/// position; cells of points not in `t`, e.g. another shard's, are NaN).
std::vector<GridGroup> grids_of(const std::vector<SummaryColumn>& axes, const Table& t) {
  if (axes.empty() || t.columns.empty()) return {};
  size_t cells = 1;
  std::set<std::string> names;
  for (const SummaryColumn& a : axes) {
    cells *= std::visit([](const auto& v) { return v.size(); }, a.values);
    names.insert(a.name);
  }
  const auto* index = std::get_if<std::vector<int64_t>>(&t.columns.front().values);
  if (index == nullptr || t.columns.front().name != "run_index") return {};
  GridGroup g{kGridGroup, axes, {}};
  for (size_t k = 0; k < t.columns.size(); ++k) {
    const SummaryColumn& c = t.columns[k];
    const auto* values = std::get_if<std::vector<double>>(&c.values);
    if (t.kinds[k] != "result" || values == nullptr || c.name == "columns" || names.count(c.name)) continue;
    std::vector<double> grid(cells, std::numeric_limits<double>::quiet_NaN());
    for (size_t r = 0; r < index->size(); ++r) {
      const auto i = (*index)[r];
      if (i >= 0 && static_cast<size_t>(i) < cells) grid[static_cast<size_t>(i)] = (*values)[r];
    }
    g.datasets.push_back({c.name, c.units, c.description + " (grid over the sweep axes)", std::move(grid)});
  }
  return {std::move(g)};
}

void write_file(const fs::path& path, const RunMetadata& meta, const Table& t,
                const std::vector<SummaryColumn>& axes) {
  try {
    write_results_file(path, meta, t.columns, {columns_group(t)}, grids_of(axes, t));
  } catch (const std::exception& e) {
    throw IoError(e.what());
  }
}

/// The command line recorded in the file: what determines the results (scenario, --set, --catalog), not how
/// the points were run (-o, -j, --shard, --resume), so that every way of running a sweep gives the same file.
std::string canonical_command_line(const po::variables_map& vm) {
  std::string s = "clustersim sweep " + vm["scenario"].as<std::string>();
  for (const std::string& o : set_overrides(vm)) s += " --set " + o;
  if (vm.count("catalog")) s += " --catalog " + vm["catalog"].as<std::string>();
  return s;
}

std::string overrides_text(const std::vector<std::string>& overrides) {
  std::string s;
  for (const std::string& o : overrides) s += (s.empty() ? "" : " ") + o;
  return s;
}

std::string strf(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

/// Ranking of the layouts by step time (parallelism = "auto"): the 10 fastest that simulated, with status.
void print_ranking(const Sweep& sweep, const std::vector<const Row*>& rows) {
  std::vector<std::pair<double, const Row*>> ranked;
  for (const Row* r : rows) {
    if (!r->meta) continue;
    for (size_t k = 0; k < r->meta->size(); ++k) {
      if ((*r->meta)[k].name == "step_time_s") ranked.emplace_back(std::get<double>(r->values[k]), r);
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto value = [&](const Row* r, const char* key) {
    const auto v = override_value(sweep.points[static_cast<size_t>(r->index)].overrides, key);
    return v ? *v : std::string("-");
  };
  // The grid point's own overrides (not the layout's), for a grid swept together with "auto".
  const auto grid_of = [&](const Row* r) {
    std::string grid;
    for (const std::string& o : sweep.points[static_cast<size_t>(r->index)].overrides) {
      if (o.rfind("parallelism.tensor=", 0) == 0 || o.rfind("parallelism.pipeline=", 0) == 0 ||
          o.rfind("parallelism.data=", 0) == 0 || o.rfind("training.micro_batch_size=", 0) == 0 ||
          o.rfind("parallelism.virtual_stages=", 0) == 0) {
        continue;
      }
      grid += (grid.empty() ? "" : " ") + o;
    }
    return grid;
  };
  std::cout << "layouts ranked by step time (fastest 10 of " << ranked.size() << " simulated):\n";
  std::cout << "rank  run   TP   PP   DP   mb   v   step time   status"
            << (sweep.spec.axes.empty() ? "\n" : "         grid point\n");
  for (size_t i = 0; i < std::min<size_t>(10, ranked.size()); ++i) {
    const Row* r = ranked[i].second;
    const std::string grid = grid_of(r);
    char line[512];
    std::snprintf(line, sizeof line, "%4zu %4lld %4s %4s %4s %4s %3s %9.3f s   %-14s %s\n", i + 1,
                  static_cast<long long>(r->index), value(r, "parallelism.tensor").c_str(),
                  value(r, "parallelism.pipeline").c_str(), value(r, "parallelism.data").c_str(),
                  value(r, "training.micro_batch_size").c_str(), value(r, "parallelism.virtual_stages").c_str(),
                  ranked[i].first, r->status.c_str(), grid.c_str());
    std::string text = line;  // without the padding of an empty grid point
    text.pop_back();
    text.erase(text.find_last_not_of(' ') + 1);
    std::cout << text << "\n";
  }
  for (const auto& [t, r] : ranked) {
    if (r->status != "ok") continue;
    std::cout << "best layout that fits: run " << r->index << ", TP " << value(r, "parallelism.tensor") << " x PP "
              << value(r, "parallelism.pipeline") << " x DP " << value(r, "parallelism.data") << ", micro batch "
              << value(r, "training.micro_batch_size") << ", virtual stages "
              << value(r, "parallelism.virtual_stages");
    if (const std::string grid = grid_of(r); !grid.empty()) std::cout << " (" << grid << ")";
    std::cout << ": " << strf("%.3f s", t) << "\n";
    break;
  }
}

struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};

std::optional<int64_t> parse_int(std::string_view t) {
  int64_t v = 0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

Shard parse_shard(const std::string& text) {
  std::string spec = text;
  if (text == "auto") {
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (id == nullptr || count == nullptr) {
      throw UsageError("--shard auto needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (a Slurm job array, "
                       "--array=0-(N-1))");
    }
    spec = std::string(id) + "/" + count;
  }
  const auto slash = spec.find('/');
  const auto i = slash == std::string::npos ? std::nullopt : parse_int(std::string_view(spec).substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : parse_int(std::string_view(spec).substr(slash + 1));
  if (!i || !n || *n < 1 || *i < 0 || *i >= *n) {
    throw UsageError("--shard: '" + spec + "' is not I/N with 0 <= I < N");
  }
  return {*i, *n};
}

int sweep_main(const std::vector<std::string>& args) {
  po::options_description options("clustersim sweep SCENARIO -o FILE.h5 [options]");
  options.add_options()("help,h", "show this help")
      ("output,o", po::value<std::string>(), "write the results to this HDF5 file (atomically)")
      ("jobs,j", po::value<int>(), "worker threads (default: the number of CPUs)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario key for every point, e.g. --set training.precision=fp16 (repeatable)")
      ("shard", po::value<std::string>(), "run only points with run_index % N == I: I/N, or auto (Slurm array)")
      ("resume", "continue from FILE.h5.partial, skipping the points it holds")
      ("catalog", po::value<std::string>(), "hardware catalog directory");
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file")
      ("stop-after", po::value<int64_t>(), "testing: stop after this many new points, keeping the sidecar");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  const po::variables_map vm = parse(args, options, hidden, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("scenario")) {
    std::ostringstream o;
    o << "missing SCENARIO\n" << options;
    throw UsageError(o.str());
  }
  if (!vm.count("output")) {
    std::ostringstream o;
    o << "missing -o FILE.h5\n" << options;
    throw UsageError(o.str());
  }
  int jobs = vm.count("jobs") ? vm["jobs"].as<int>()
                              : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  if (jobs < 1) throw UsageError("-j must be at least 1");
  const Shard shard = vm.count("shard") ? parse_shard(vm["shard"].as<std::string>()) : Shard{};
  const fs::path output = vm["output"].as<std::string>();
  const fs::path sidecar_path = output.string() + ".partial";

  const models::Catalog catalog = load_catalog(vm);
  const Sweep sweep = load_sweep(vm["scenario"].as<std::string>(), set_overrides(vm), catalog);
  std::vector<const SweepPoint*> mine;
  for (const SweepPoint& p : sweep.points) {
    if (p.index % shard.count == shard.index) mine.push_back(&p);
  }
  RunMetadata meta;
  meta.software_version = software_version();
  meta.git_sha = git_sha();
  meta.command_line = canonical_command_line(vm);
  meta.seed = sweep.base.simulation.seed;
  meta.scenario_toml = sweep.base.resolved_toml;

  std::string fingerprint_text = meta.command_line + "\n" + std::to_string(shard.index) + "/" +
                                 std::to_string(shard.count) + "\n";
  for (const SweepPoint& p : sweep.points) fingerprint_text += overrides_text(p.overrides) + "\n";
  char fingerprint[32];
  std::snprintf(fingerprint, sizeof fingerprint, "%016llx", static_cast<unsigned long long>(fnv1a(fingerprint_text)));

  std::map<int64_t, Row> done;
  Sidecar sidecar(sidecar_path, fingerprint, vm.count("resume") > 0, done);
  std::vector<std::optional<Row>> rows(mine.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (auto it = done.find(mine[i]->index); it != done.end()) {
      rows[i] = std::move(it->second);
    } else {
      todo.push_back(i);
    }
  }
  const size_t resumed = mine.size() - todo.size();
  if (vm.count("resume")) {
    std::cerr << "sweep: resuming: " << resumed << " of " << mine.size() << " points already done, computing "
              << todo.size() << "\n";
  }
  const int64_t stop_after = vm.count("stop-after") ? vm["stop-after"].as<int64_t>() : -1;

  const auto start = std::chrono::steady_clock::now();
  const size_t target = stop_after >= 0 ? std::min(todo.size(), static_cast<size_t>(stop_after)) : todo.size();
  std::vector<const SweepPoint*> todo_points;
  for (const size_t i : todo) todo_points.push_back(mine[i]);
  // Progress on stderr: a bar redrawn in place on a terminal, else a line every 2 s.
  const bool tty = ::isatty(2) != 0;
  const auto seconds_since = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double last_report = 0.0;
  const auto report = [&](size_t d, bool final_line) {
    const double elapsed = seconds_since(start);
    const double rate = elapsed > 0 ? static_cast<double>(d) / elapsed : 0.0;
    const double eta = rate > 0 ? static_cast<double>(target - d) / rate : 0.0;
    char line[256];
    std::snprintf(line, sizeof line, "sweep: %zu/%zu points, %.1f points/s, ETA %.0f s", d + resumed,
                  mine.size(), rate, eta);
    if (tty) {
      const int width = 30;
      const int filled =
          target == 0 ? width : static_cast<int>(width * static_cast<double>(d) / static_cast<double>(target));
      std::cerr << "\r[" << std::string(static_cast<size_t>(filled), '#')
                << std::string(static_cast<size_t>(width - filled), ' ') << "] " << line
                << (final_line ? "\n" : "") << std::flush;
    } else {
      std::cerr << line << "\n";
    }
  };
  SweepRunOptions run_options;
  run_options.jobs = jobs;
  run_options.limit = stop_after;
  run_options.on_row = [&](const Row& row) { sidecar.append(row); };
  run_options.progress = [&](size_t d) {
    const double t = seconds_since(start);
    if (t - last_report >= (tty ? 0.2 : 2.0)) {
      report(d, false);
      last_report = t;
    }
  };
  std::vector<Row> computed = run_sweep(sweep, catalog, todo_points, run_options);
  for (size_t k = 0; k < target; ++k) rows[todo[k]] = std::move(computed[k]);
  if (tty || last_report > 0.0) report(target, true);
  if (stop_after >= 0 && target < todo.size()) {
    std::cerr << "sweep: stopped after " << target << " new points (--stop-after); rerun with --resume\n";
    return kExitStopped;
  }

  std::vector<const Row*> ordered;
  for (const auto& r : rows) ordered.push_back(&*r);
  const Table table = build_table(sweep, ordered);
  write_file(output, meta, table, grid_axes(sweep, table));
  sidecar.remove();

  size_t ok = 0, oom = 0, invalid = 0;
  for (const Row* r : ordered) {
    (r->status == "ok" ? ok : r->status == "out_of_memory" ? oom : invalid) += 1;
  }
  std::cout << "sweep " << sweep.scenario.string() << ": " << ordered.size()
            << (ordered.size() == 1 ? " point" : " points");
  if (shard.count > 1) {
    std::cout << " (shard " << shard.index << "/" << shard.count << " of " << sweep.points.size() << ")";
  }
  std::cout << ": " << ok << " ok, " << oom << " out_of_memory, " << invalid << " invalid";
  if (resumed > 0) std::cout << " (" << resumed << " resumed from " << sidecar_path.string() << ")";
  std::cout << "\n";
  if (sweep.spec.auto_parallelism) print_ranking(sweep, ordered);
  std::cout << "wrote " << output.string() << "\n";
  return 0;
}

int merge_main(const std::vector<std::string>& args) {
  po::options_description options("clustersim merge OUT.h5 SHARD.h5...");
  options.add_options()("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("files", po::value<std::vector<std::string>>(), "files");
  po::positional_options_description positional;
  positional.add("files", -1);
  const po::variables_map vm = parse(args, options, hidden, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  const auto files = vm.count("files") ? vm["files"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (files.size() < 2) throw UsageError("expected OUT.h5 and at least one SHARD.h5");
  const fs::path out = files.front();

  struct ShardFile {
    fs::path path;
    RunMetadata meta;
    std::map<std::string, SummaryColumn> columns;
    std::vector<std::string> order, kinds;
    std::vector<int64_t> index;
  };
  std::vector<ShardFile> shards;
  for (size_t i = 1; i < files.size(); ++i) {
    ShardFile s;
    s.path = files[i];
    try {
      s.meta = read_results_metadata(s.path);
      for (auto& c : read_results_columns(s.path, "summary")) s.columns.emplace(c.name, std::move(c));
      for (auto& c : read_results_columns(s.path, kColumnsGroup)) {
        if (c.name == "name") s.order = std::get<std::vector<std::string>>(c.values);
        if (c.name == "kind") s.kinds = std::get<std::vector<std::string>>(c.values);
      }
    } catch (const std::runtime_error& e) {
      throw DataError(std::string(e.what()) + " (not a clustersim sweep file?)");
    } catch (const std::bad_variant_access&) {
      throw DataError(s.path.string() + ": /" + kColumnsGroup + " is malformed");
    }
    const auto it = s.columns.find("run_index");
    if (it == s.columns.end() || !std::holds_alternative<std::vector<int64_t>>(it->second.values) ||
        s.order.size() != s.kinds.size()) {
      throw DataError(s.path.string() + ": not a clustersim sweep file (no run_index or /" + kColumnsGroup + ")");
    }
    s.index = std::get<std::vector<int64_t>>(it->second.values);
    const RunMetadata& first = shards.empty() ? s.meta : shards.front().meta;
    if (s.meta.command_line != first.command_line || s.meta.scenario_toml != first.scenario_toml ||
        s.meta.seed != first.seed || s.meta.schema_version != first.schema_version) {
      throw DataError(s.path.string() + ": is a shard of another sweep than " + shards.front().path.string() +
                      " (command line, scenario or seed differ)");
    }
    shards.push_back(std::move(s));
  }
  // Column order: that of the shard holding the lowest run_index, then any further columns of the others.
  std::vector<size_t> by_first(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) by_first[i] = i;
  std::stable_sort(by_first.begin(), by_first.end(), [&](size_t a, size_t b) {
    const auto first = [&](size_t s) {
      return shards[s].index.empty() ? std::numeric_limits<int64_t>::max()
                                     : *std::min_element(shards[s].index.begin(), shards[s].index.end());
    };
    return first(a) < first(b);
  });
  Table t;
  std::set<std::string> seen;
  std::vector<std::string> order;
  for (const size_t s : by_first) {
    for (size_t k = 0; k < shards[s].order.size(); ++k) {
      if (seen.insert(shards[s].order[k]).second) {
        order.push_back(shards[s].order[k]);
        t.kinds.push_back(shards[s].kinds[k]);
      }
    }
  }
  // Rows: all shards' rows sorted by run_index.
  struct Ref {
    int64_t index;
    size_t shard;
    size_t row;
  };
  std::vector<Ref> refs;
  for (size_t s = 0; s < shards.size(); ++s) {
    for (size_t r = 0; r < shards[s].index.size(); ++r) refs.push_back({shards[s].index[r], s, r});
  }
  std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.index < b.index; });
  for (size_t i = 1; i < refs.size(); ++i) {
    if (refs[i].index == refs[i - 1].index) {
      throw DataError("run_index " + std::to_string(refs[i].index) + " is in both " +
                      shards[refs[i - 1].shard].path.string() + " and " + shards[refs[i].shard].path.string());
    }
  }
  for (const std::string& name : order) {
    const SummaryColumn* proto = nullptr;
    for (const size_t s : by_first) {
      if (auto it = shards[s].columns.find(name); it != shards[s].columns.end()) {
        proto = &it->second;
        break;
      }
    }
    if (proto == nullptr) throw DataError("column " + name + " is listed but missing");
    SummaryColumn c{proto->name, proto->units, proto->description, {}};
    std::visit(
        [&](const auto& proto_values) {
          using V = std::decay_t<decltype(proto_values)>;
          V merged;
          for (const Ref& r : refs) {
            const auto it = shards[r.shard].columns.find(name);
            if (it != shards[r.shard].columns.end() && std::holds_alternative<V>(it->second.values)) {
              merged.push_back(std::get<V>(it->second.values)[r.row]);
            } else if constexpr (std::is_same_v<V, std::vector<double>>) {
              merged.push_back(std::numeric_limits<double>::quiet_NaN());
            } else {
              merged.push_back({});
            }
          }
          c.values = std::move(merged);
        },
        proto->values);
    t.columns.push_back(std::move(c));
  }
  // The /sweep grid axes: those of the shard with the lowest run_index (all shards of a sweep have the same).
  std::vector<SummaryColumn> axes;
  try {
    axes = read_grid_axes(shards[by_first.front()].path, kGridGroup);
  } catch (const std::runtime_error& e) {
    throw DataError(e.what());
  }
  write_file(out, shards.front().meta, t, axes);
  std::cout << "merged " << shards.size() << " files, " << refs.size() << " points; wrote " << out.string() << "\n";
  return 0;
}

int list_runs_main(const std::vector<std::string>& args) {
  po::options_description options("clustersim list-runs SCENARIO [options]");
  options.add_options()("help,h", "show this help")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario key (repeatable)")
      ("catalog", po::value<std::string>(), "hardware catalog directory");
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  const po::variables_map vm = parse(args, options, hidden, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("scenario")) throw UsageError("missing SCENARIO");
  const models::Catalog catalog = load_catalog(vm);
  const Sweep sweep = load_sweep(vm["scenario"].as<std::string>(), set_overrides(vm), catalog);
  std::cout << "# run_index\tseed\toverrides\n";
  for (const SweepPoint& p : sweep.points) {
    std::cout << p.index << "\t" << p.seed << "\t" << overrides_text(p.overrides) << "\n";
  }
  return 0;
}

}  // namespace

int run_sweep_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return guarded("sweep", [&] { return sweep_main(args); });
}

int run_merge_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return guarded("merge", [&] { return merge_main(args); });
}

int run_list_runs_command(const std::vector<std::string>& args, const std::string& /*command_line*/) {
  return guarded("list-runs", [&] { return list_runs_main(args); });
}

}  // namespace clustersim::sim
