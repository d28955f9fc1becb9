#include "sim/sweep/sweep_table.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "models/parallelism/layout.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/sweep/sidecar.hpp"
#include "sim/sweep/summary_file.hpp"

namespace clustersim::sim {

namespace fs = std::filesystem;

namespace {

/// "parallelism.tensor" -> "parallelism_tensor" (dataset names are [a-z0-9_]+).
std::string column_name_of(const std::string& key) {
  std::string s;
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '_';
  }
  return s;
}

/// The swept keys of all points, in order of first appearance.
std::vector<std::string> swept_keys(const std::vector<SweepPoint>& points) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const SweepPoint& p : points) {
    for (const SweptValue& v : p.values) {
      if (seen.insert(v.key).second) keys.push_back(v.key);
    }
  }
  return keys;
}

/// The memory-saving knobs a layout of parallelism = "auto" sets, as the ranking prints them.
struct KnobColumn {
  std::string_view key;
  std::string_view header;
  std::string_view label;  ///< in the "best layout" line
};
constexpr std::array<KnobColumn, 3> kKnobColumns{{{"parallelism.zero_stage", "zero", "ZeRO"},
                                                  {"training.activation_recompute", "recompute", "recompute"},
                                                  {"parallelism.sequence_parallel", "sp", "sequence parallel"}}};

/// Whether `key` is set by a layout of parallelism = "auto": a layout dimension's size, the micro batch, the
/// virtual stages or a memory-saving knob.
bool is_layout_key(std::string_view key) {
  if (key == "training.micro_batch_size" || key == "parallelism.virtual_stages") return true;
  for (const KnobColumn& k : kKnobColumns) {
    if (k.key == key) return true;
  }
  for (const models::LayoutDimension* d : models::layout_dimensions_as_written()) {
    if (d->key == key) return true;
  }
  return false;
}


ColumnGroup columns_group(const SweepTable& t) {
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(c.name);
  return {kSweepColumnsGroup, "the /summary columns in order, with their role (index, parameter, result)",
          {{"name", "", "a /summary column", names}, {"kind", "", "index, parameter or result", t.kinds}}};
}


}  // namespace

SweepTable build_sweep_table(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows) {
  SweepTable t;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> index, seed;
  std::vector<std::string> status, reason;
  for (const SweepRow* r : rows) {
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
  std::vector<SweepColumnMeta> results;
  std::set<std::string> result_names;
  for (const SweepRow* r : rows) {
    if (!r->meta) continue;
    for (const SweepColumnMeta& m : *r->meta) {
      if (result_names.insert(m.name).second) results.push_back(m);
    }
  }
  // Parameters: numeric (float64) when every point's value is a finite number.
  for (const std::string& key : swept_keys(sweep.points)) {
    bool numeric = true;
    for (const SweepPoint& p : sweep.points) {
      const SweptValue* v = p.find(key);
      if (v != nullptr && !number_of(v->value)) numeric = false;
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
      for (const SweepRow* r : rows) {
        const SweptValue* value = sweep.points[static_cast<size_t>(r->index)].find(key);
        v.push_back(value != nullptr ? *number_of(value->value) : nan);
      }
      c.values = std::move(v);
    } else {
      std::vector<std::string> v;
      for (const SweepRow* r : rows) {
        const SweptValue* value = sweep.points[static_cast<size_t>(r->index)].find(key);
        v.push_back(value != nullptr ? label_of(value->value) : std::string());
      }
      c.values = std::move(v);
    }
    t.columns.push_back(std::move(c));
    t.kinds.emplace_back("parameter");
  }
  for (const SweepColumnMeta& m : results) {
    SummaryColumn c{m.name, m.units, m.description, {}};
    std::vector<double> d;
    std::vector<std::string> s;
    for (const SweepRow* r : rows) {
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


std::vector<SummaryColumn> sweep_grid_axes(const LoadedSweep& sweep, const SweepTable& t) {
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
      if (v.empty() || !number_of(v.front())) numeric = false;
    }
    SummaryColumn c{name->second, numeric ? (units.empty() ? "1" : units) : std::string(), description, {}};
    if (numeric) {
      std::vector<double> d;
      for (const auto& v : a.values) d.push_back(*number_of(v.front()));
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

std::vector<GridGroup> sweep_grids(const std::vector<SummaryColumn>& axes, const SweepTable& t) {
  if (axes.empty() || t.columns.empty()) return {};
  size_t cells = 1;
  std::set<std::string> names;
  for (const SummaryColumn& a : axes) {
    cells *= std::visit([](const auto& v) { return v.size(); }, a.values);
    names.insert(a.name);
  }
  const auto* index = std::get_if<std::vector<int64_t>>(&t.columns.front().values);
  if (index == nullptr || t.columns.front().name != "run_index") return {};
  GridGroup g{kSweepGridGroup, axes, {}};
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

void write_sweep_file(const fs::path& path, const RunMetadata& meta, const SweepTable& t,
                      const std::vector<SummaryColumn>& axes, const SweepIdentity& identity) {
  std::vector<ColumnGroup> groups{columns_group(t)};
  if (!identity.inputs.empty()) {
    std::vector<std::string> part, hash;
    for (const FingerprintPart& p : identity.inputs) {
      part.push_back(p.name);
      hash.push_back(p.hash);
    }
    part.emplace_back("point_count");
    hash.push_back(std::to_string(identity.points));
    groups.push_back({kSweepFingerprintGroup,
                      "the sweep's inputs by content (FNV-1a 64 of each) and, last, point_count: its number of points",
                      {{"part", "", "an input: scenario, set, sweep, a trace, catalog, engine, points", part},
                       {"hash", "", "FNV-1a 64 of the part's content, 16 hex digits", hash}}});
  }
  try {
    write_results_file(path, meta, t.columns, groups, sweep_grids(axes, t));
  } catch (const std::exception& e) {
    throw IoError(e.what());
  }
}


namespace {

/// The value of the result column `name` of `row`, NaN when the row lacks it or it is not a number.
double result_of(const SweepRow* row, std::string_view name) {
  if (!row->meta) return std::numeric_limits<double>::quiet_NaN();
  for (size_t k = 0; k < row->meta->size(); ++k) {
    if ((*row->meta)[k].name == name) {
      if (const auto* d = std::get_if<double>(&row->values[k])) return *d;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// An objective's value as the ranking prints it.
std::string objective_text(SweepObjective o, double v) {
  if (!std::isfinite(v)) return "-";
  switch (o) {
    case SweepObjective::step_time: return printf_string("%.3f s", v);
    case SweepObjective::cost_per_token: return printf_string("$%.4f/Mtok", v);
    case SweepObjective::time_to_train: return printf_string("%.1f h", v);
    case SweepObjective::cost_per_mtoken_under_slo: return printf_string("$%.3f/Mtok", v);
  }
  return "-";
}

/// A serving sweep's ranking: cost per million output tokens, the fleets that meet the SLO first, with their
/// p99 latencies and the share of requests within the targets.
std::string format_serving_ranking(const LoadedSweep& sweep, const std::vector<const SweepRow*>& ranked) {
  std::ostringstream out;
  const auto grid_of = [&](const SweepRow* r) {
    std::string grid;
    for (const SweptValue& v : sweep.points[static_cast<size_t>(r->index)].values) {
      grid += (grid.empty() ? "" : " ") + v.override_text();
    }
    return grid;
  };
  const auto slo = [&] {
    std::string t;
    if (sweep.serving->slo.ttft_p99_ms) t += printf_string("p99 TTFT <= %.0f ms", *sweep.serving->slo.ttft_p99_ms);
    if (sweep.serving->slo.tpot_p99_ms) {
      t += printf_string("%sp99 TPOT <= %.0f ms", t.empty() ? "" : ", ", *sweep.serving->slo.tpot_p99_ms);
    }
    return t.empty() ? std::string("no [slo] targets") : t;
  }();
  out << "fleets ranked by cost per million output tokens, those that meet the SLO (" << slo << ") first (best "
      << std::min<size_t>(10, ranked.size()) << " of " << ranked.size() << " simulated):\n";
  out << "rank  run        $/Mtok   p99 TTFT   p99 TPOT   within SLO   meets   grid point\n";
  for (size_t i = 0; i < std::min<size_t>(10, ranked.size()); ++i) {
    const SweepRow* r = ranked[i];
    out << printf_string("%4zu %4lld %13s %8.3f s %7.1f ms %10.1f %%   %-5s   %s\n", i + 1,
                         static_cast<long long>(r->index),
                         objective_text(SweepObjective::cost_per_mtoken_under_slo,
                                        result_of(r, "usd_per_million_output_tokens"))
                             .c_str(),
                         result_of(r, "ttft_p99_s"), result_of(r, "tpot_p99_s") * 1e3,
                         100.0 * result_of(r, "slo_attainment"), result_of(r, "meets_slo") == 1.0 ? "yes" : "no",
                         grid_of(r).c_str());
  }
  const auto best = std::find_if(ranked.begin(), ranked.end(),
                                 [](const SweepRow* r) { return result_of(r, "meets_slo") == 1.0; });
  if (best == ranked.end()) {
    out << "no fleet meets the SLO\n";
  } else {
    out << "cheapest fleet that meets the SLO: run " << (*best)->index << " (" << grid_of(*best) << "): "
        << objective_text(SweepObjective::cost_per_mtoken_under_slo,
                          result_of(*best, "usd_per_million_output_tokens"))
        << "\n";
  }
  return out.str();
}

}  // namespace

std::vector<const SweepRow*> rank_points(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows) {
  const std::string column(objective_column(sweep.spec.objective, sweep.base.job.has_value()));
  struct Ranked {
    bool fits;
    double value;
    const SweepRow* row;
  };
  std::vector<Ranked> ranked;
  for (const SweepRow* r : rows) {
    if (!r->meta) continue;  // invalid: nothing simulated
    // A serving fleet "fits" when it meets the SLO.
    const bool fits = r->status == "ok" && (!sweep.serving || result_of(r, "meets_slo") == 1.0);
    ranked.push_back({fits, result_of(r, column), r});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.fits != b.fits) return a.fits;
    const bool fa = std::isfinite(a.value), fb = std::isfinite(b.value);
    if (fa != fb) return fa;
    return fa && a.value < b.value;
  });
  std::vector<const SweepRow*> out;
  for (const Ranked& r : ranked) out.push_back(r.row);
  return out;
}

std::string format_ranking(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows) {
  std::ostringstream out;
  const SweepObjective objective = sweep.spec.objective;
  const std::string column(objective_column(objective, sweep.base.job.has_value()));
  const std::vector<const SweepRow*> ranked = rank_points(sweep, rows);
  if (sweep.serving) return format_serving_ranking(sweep, ranked);
  const auto value = [&](const SweepRow* r, std::string_view key) {
    const SweptValue* v = sweep.points[static_cast<size_t>(r->index)].find(key);
    return v != nullptr ? toml_literal(v->value) : std::string("-");
  };
  // The grid point's own values (not the layout's), for a grid swept together with "auto".
  const bool layouts = sweep.spec.auto_parallelism;
  const auto grid_of = [&](const SweepRow* r) {
    std::string grid;
    for (const SweptValue& v : sweep.points[static_cast<size_t>(r->index)].values) {
      if (layouts && is_layout_key(v.key)) continue;
      grid += (grid.empty() ? "" : " ") + v.override_text();
    }
    return grid;
  };
  const std::string by = objective == SweepObjective::step_time        ? "step time"
                         : objective == SweepObjective::cost_per_token ? "cost per million tokens"
                                                                        : "time to train";
  out << (layouts ? "layouts" : "points") << " ranked by " << by << ", those that fit first (best "
      << std::min<size_t>(10, ranked.size()) << " of " << ranked.size() << " simulated):\n";
  // The dimensions as written; one that layouts may leave out (context) only when some point sets it.
  std::vector<const models::LayoutDimension*> dims;
  std::vector<const KnobColumn*> knobs;
  if (layouts) {
    for (const models::LayoutDimension* d : models::layout_dimensions_as_written()) {
      const bool set = std::any_of(ranked.begin(), ranked.end(), [&](const SweepRow* r) { return value(r, d->key) != "-"; });
      if (d->shown_when_one || set) dims.push_back(d);
    }
    // The memory-saving knobs, those the search set.
    for (const KnobColumn& k : kKnobColumns) {
      if (std::any_of(ranked.begin(), ranked.end(), [&](const SweepRow* r) { return value(r, k.key) != "-"; })) {
        knobs.push_back(&k);
      }
    }
  }
  const auto knob_text = [&](const SweepRow* r, const KnobColumn& k) {
    const SweptValue* v = sweep.points[static_cast<size_t>(r->index)].find(k.key);
    std::string cell = v == nullptr ? std::string("-") : label_of(v->value);
    if (k.key == "parallelism.sequence_parallel") cell = cell == "true" ? "on" : cell == "false" ? "off" : cell;
    return cell;
  };
  const bool extra = objective != SweepObjective::step_time;  // the objective beside the step time
  out << "rank  run";
  for (const models::LayoutDimension* d : dims) out << printf_string(" %4s", std::string(d->abbreviation).c_str());
  if (layouts) out << "   mb   v";
  for (const KnobColumn* k : knobs) {
    out << printf_string(k->key == "training.activation_recompute" ? " %-9s" : " %4s", std::string(k->header).c_str());
  }
  out << "   step time";
  if (extra) out << printf_string(" %14s", objective == SweepObjective::cost_per_token ? "$/Mtok" : "to train");
  out << "   status" << (sweep.spec.axes.empty() ? "\n" : "         grid point\n");
  for (size_t i = 0; i < std::min<size_t>(10, ranked.size()); ++i) {
    const SweepRow* r = ranked[i];
    const std::string grid = grid_of(r);
    std::string text = printf_string("%4zu %4lld", i + 1, static_cast<long long>(r->index));
    for (const models::LayoutDimension* d : dims) text += printf_string(" %4s", value(r, d->key).c_str());
    if (layouts) {
      text += printf_string(" %4s %3s", value(r, "training.micro_batch_size").c_str(),
                            value(r, "parallelism.virtual_stages").c_str());
    }
    for (const KnobColumn* k : knobs) {
      text += printf_string(k->key == "training.activation_recompute" ? " %-9s" : " %4s", knob_text(r, *k).c_str());
    }
    text += printf_string(" %9.3f s", result_of(r, "step_time_s"));
    if (extra) text += printf_string(" %14s", objective_text(objective, result_of(r, column)).c_str());
    text += printf_string("   %-14s %s\n", r->status.c_str(), grid.c_str());
    // without the padding of an empty grid point
    text.pop_back();
    text.erase(text.find_last_not_of(' ') + 1);
    out << text << "\n";
  }
  for (const SweepRow* r : ranked) {
    if (r->status != "ok") continue;
    out << "best " << (layouts ? "layout" : "point") << " that fits: run " << r->index;
    if (layouts) {
      out << ", ";
      for (size_t k = 0; k < dims.size(); ++k) {
        out << (k ? " x " : "") << dims[k]->abbreviation << " " << value(r, dims[k]->key);
      }
      out << ", micro batch " << value(r, "training.micro_batch_size") << ", virtual stages "
          << value(r, "parallelism.virtual_stages");
      for (const KnobColumn* k : knobs) out << ", " << k->label << " " << knob_text(r, *k);
    }
    if (const std::string grid = grid_of(r); !grid.empty()) out << " (" << grid << ")";
    out << ": " << printf_string("%.3f s", result_of(r, "step_time_s"));
    if (extra) {
      out << ", " << objective_text(objective, result_of(r, column))
          << (objective == SweepObjective::time_to_train ? " to train" : "");
    }
    out << "\n";
    break;
  }
  return out.str();
}

namespace {
/// The /sweep_inputs of `path`; empty (points -1) when the file has none. Throws DataError when malformed.
SweepIdentity read_identity(const fs::path& path) {
  SweepIdentity id;
  std::vector<SummaryColumn> columns;
  try {
    columns = read_results_columns(path, kSweepFingerprintGroup);
  } catch (const std::runtime_error&) {
    return id;  // a file written before the fingerprint
  }
  const std::vector<std::string>* part = nullptr;
  const std::vector<std::string>* hash = nullptr;
  for (const SummaryColumn& c : columns) {
    if (c.name == "part") part = std::get_if<std::vector<std::string>>(&c.values);
    if (c.name == "hash") hash = std::get_if<std::vector<std::string>>(&c.values);
  }
  if (part == nullptr || hash == nullptr || part->size() != hash->size() || part->empty() ||
      part->back() != "point_count") {
    throw DataError(path.string() + ": /" + kSweepFingerprintGroup + " is malformed");
  }
  for (size_t i = 0; i + 1 < part->size(); ++i) id.inputs.push_back({(*part)[i], (*hash)[i]});
  const std::string& count = hash->back();
  const auto res = std::from_chars(count.data(), count.data() + count.size(), id.points);
  if (count.empty() || res.ec != std::errc() || res.ptr != count.data() + count.size() || id.points < 0) {
    throw DataError(path.string() + ": /" + kSweepFingerprintGroup + " point_count '" + count + "' is not a count");
  }
  return id;
}
}  // namespace

MergedSweep merge_sweep_files(const std::vector<fs::path>& files) {
  struct ShardFile {
    fs::path path;
    RunMetadata meta;
    std::map<std::string, SummaryColumn> columns;
    std::vector<std::string> order, kinds;
    std::vector<int64_t> index;
    SweepIdentity identity;
  };
  std::vector<ShardFile> shards;
  for (const fs::path& file : files) {
    ShardFile s;
    s.path = file;
    try {
      s.meta = read_results_metadata(s.path);
      for (auto& c : read_results_columns(s.path, "summary")) s.columns.emplace(c.name, std::move(c));
      for (auto& c : read_results_columns(s.path, kSweepColumnsGroup)) {
        if (c.name == "name") s.order = std::get<std::vector<std::string>>(c.values);
        if (c.name == "kind") s.kinds = std::get<std::vector<std::string>>(c.values);
      }
      s.identity = read_identity(s.path);
    } catch (const std::runtime_error& e) {
      throw DataError(std::string(e.what()) + " (not a clustersim sweep file?)");
    } catch (const std::bad_variant_access&) {
      throw DataError(s.path.string() + ": /" + kSweepColumnsGroup + " is malformed");
    }
    const auto it = s.columns.find("run_index");
    if (it == s.columns.end() || !std::holds_alternative<std::vector<int64_t>>(it->second.values) ||
        s.order.size() != s.kinds.size()) {
      throw DataError(s.path.string() + ": not a clustersim sweep file (no run_index or /" + kSweepColumnsGroup + ")");
    }
    s.index = std::get<std::vector<int64_t>>(it->second.values);
    const RunMetadata& first = shards.empty() ? s.meta : shards.front().meta;
    if (s.meta.command_line != first.command_line || s.meta.scenario_toml != first.scenario_toml ||
        s.meta.seed != first.seed || s.meta.schema_version != first.schema_version) {
      throw DataError(s.path.string() + ": is a shard of another sweep than " + shards.front().path.string() +
                      " (command line, scenario or seed differ)");
    }
    if (!shards.empty()) {
      const SweepIdentity& a = shards.front().identity;
      const std::string differs = describe_fingerprint_change(a.inputs, s.identity.inputs, "between " +
                                                              shards.front().path.string() + " and " + s.path.string());
      if (!differs.empty() || a.points != s.identity.points) {
        throw DataError(s.path.string() + ": is a shard of another sweep than " + shards.front().path.string() + ": " +
                        (differs.empty() ? "their point counts differ (" + std::to_string(a.points) + " and " +
                                               std::to_string(s.identity.points) + ")"
                                         : differs));
      }
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
  SweepTable t;
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
    axes = read_grid_axes(shards[by_first.front()].path, kSweepGridGroup);
  } catch (const std::runtime_error& e) {
    throw DataError(e.what());
  }
  MergedSweep merged{shards.front().meta, std::move(t), std::move(axes), shards.front().identity, shards.size(),
                     refs.size(), 0};
  if (merged.identity.points >= 0) merged.missing = merged.identity.points - static_cast<int64_t>(refs.size());
  return merged;
}

}  // namespace clustersim::sim
