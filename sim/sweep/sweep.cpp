// Sweeps: the [sweep] table read with TOML++, expanded into points (docs/sweeps.md).
#include "sim/sweep/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <tuple>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/layout.hpp"
#include "models/splitmix64.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_params.hpp"

namespace clustersim::sim {

namespace {

/// A key or value position in the scenario file.
struct Pos {
  int64_t line = 1;
  int64_t column = 1;
};

Pos pos_of(const toml::source_region& src) {
  if (src.begin.line == 0) return {};
  return {static_cast<int64_t>(src.begin.line), static_cast<int64_t>(src.begin.column)};
}

[[noreturn]] void fail(const std::filesystem::path& file, Pos pos, const std::string& key, const std::string& message) {
  throw ScenarioError(file, pos.line, pos.column, key, message);
}

/// A TOML float: the shortest round-trip form, always with a '.' or an exponent.
std::string toml_float(double v) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  std::string s(buffer, ec == std::errc() ? end : buffer);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

/// A TOML basic string.
std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// One scalar list element; nullopt for arrays, tables and dates.
std::optional<ScalarValue> scalar(const toml::node& n) {
  if (const auto* i = n.as_integer()) return ScalarValue{i->get()};
  if (const auto* f = n.as_floating_point()) return ScalarValue{f->get()};
  if (const auto* b = n.as_boolean()) return ScalarValue{b->get()};
  if (const auto* s = n.as_string()) return ScalarValue{s->get()};
  return std::nullopt;
}

/// A swept key and its values, with where it was written.
struct RawAxis {
  std::string key;
  Pos pos;
  std::vector<ScalarValue> values;
};

bool is_range(const toml::table& t) {
  if (t.empty()) return false;
  for (const auto& [k, v] : t) {
    const std::string_view name = k.str();
    if (name != "start" && name != "stop" && name != "step" && name != "factor") return false;
  }
  return true;
}

double number_of(const std::filesystem::path& file, const std::string& key, const toml::table& t,
                 std::string_view field) {
  const toml::node* n = t.get(field);
  if (n == nullptr) fail(file, pos_of(t.source()), key, "range needs '" + std::string(field) + "'");
  if (!n->is_number()) fail(file, pos_of(n->source()), key, "range '" + std::string(field) + "' must be a number");
  const double v = *n->value<double>();
  if (!std::isfinite(v)) fail(file, pos_of(n->source()), key, "range '" + std::string(field) + "' must be finite");
  return v;
}

/// The values of a {start, stop, step} or {start, stop, factor} range, stop included. Integers stay
/// integers when start and step (or factor) are integers.
std::vector<ScalarValue> range_values(const std::filesystem::path& file, const std::string& key,
                                      const toml::table& t) {
  constexpr int64_t kMaxPoints = 1'000'000;
  const bool linear = t.contains("step");
  const bool geometric = t.contains("factor");
  const Pos pos = pos_of(t.source());
  if (linear == geometric) fail(file, pos, key, "a range needs exactly one of 'step' (linear) and 'factor' (log)");
  const double start = number_of(file, key, t, "start");
  const double stop = number_of(file, key, t, "stop");
  const std::string_view by_name = linear ? "step" : "factor";
  const double by = number_of(file, key, t, by_name);
  const toml::node* by_node = t.get(by_name);
  const bool ints = t.get("start")->is_integer() && by_node->is_integer() && t.get("stop")->is_integer();
  if (stop < start) fail(file, pos_of(t.get("stop")->source()), key, "range stop must be >= start");
  std::vector<ScalarValue> out;
  if (linear) {
    if (!(by > 0.0)) fail(file, pos_of(by_node->source()), key, "range step must be > 0, got " + toml_float(by));
    if (ints) {
      const int64_t s = t.get("start")->as_integer()->get(), e = t.get("stop")->as_integer()->get();
      const int64_t d = by_node->as_integer()->get();
      if ((e - s) / d + 1 > kMaxPoints) fail(file, pos, key, "range has more than 1000000 values");
      for (int64_t v = s; v <= e; v += d) out.emplace_back(v);
    } else {
      const double count = std::floor((stop - start) / by * (1.0 + 1e-12) + 1e-9) + 1.0;
      if (count > static_cast<double>(kMaxPoints)) fail(file, pos, key, "range has more than 1000000 values");
      for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
        out.emplace_back(start + static_cast<double>(i) * by);
      }
    }
  } else {
    if (!(by > 1.0)) fail(file, pos_of(by_node->source()), key, "range factor must be > 1, got " + toml_float(by));
    if (!(start > 0.0)) fail(file, pos_of(t.get("start")->source()), key, "a log range needs start > 0");
    if (ints) {
      const int64_t e = t.get("stop")->as_integer()->get(), f = by_node->as_integer()->get();
      for (int64_t v = t.get("start")->as_integer()->get(); v <= e;) {
        out.emplace_back(v);
        if (v > e / f) break;
        v *= f;
      }
    } else {
      for (double v = start; v <= stop * (1.0 + 1e-12); v *= by) {
        out.emplace_back(v);
        if (static_cast<int64_t>(out.size()) > kMaxPoints) fail(file, pos, key, "range has more than 1000000 values");
      }
    }
  }
  return out;
}

/// The values of `node` for the swept `key`: a list or a range.
std::vector<ScalarValue> axis_values(const std::filesystem::path& file, const std::string& key,
                                     const toml::node& node) {
  if (const toml::array* a = node.as_array()) {
    if (a->empty()) fail(file, pos_of(node.source()), key, "a swept list must not be empty");
    std::vector<ScalarValue> out;
    for (const toml::node& e : *a) {
      const auto v = scalar(e);
      if (!v) fail(file, pos_of(e.source()), key, "list values must be numbers, strings or booleans");
      out.push_back(*v);
    }
    return out;
  }
  if (const toml::table* t = node.as_table()) return range_values(file, key, *t);
  fail(file, pos_of(node.source()), key,
       "expected a list of values or a range {start, stop, step} / {start, stop, factor}");
}

/// Collects the swept key `key` written at `pos` with value `node`, flattening dotted sub-tables
/// (`parallelism.tensor = [...]` written unquoted inside [sweep]).
void collect(const std::filesystem::path& file, const std::string& key, Pos pos, const toml::node& node,
             std::vector<RawAxis>& axes) {
  if (const toml::table* sub = node.as_table(); sub != nullptr && !is_range(*sub)) {
    for (const auto& [k, child] : *sub) {
      collect(file, key + "." + std::string(k.str()), pos_of(k.source()), child, axes);
    }
    return;
  }
  if (detail::find_param(key) == nullptr) {
    fail(file, pos, "sweep." + key,
         "unknown scenario key (sweep keys are dotted scenario keys, e.g. \"parallelism.tensor\")");
  }
  axes.push_back({key, pos, axis_values(file, "sweep." + key, node)});
}


}  // namespace

std::string toml_literal(const ScalarValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* f = std::get_if<double>(&v)) return toml_float(*f);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return toml_string(std::get<std::string>(v));
}

std::string label_of(const ScalarValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return toml_literal(v);
}

std::optional<double> number_of(const ScalarValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* f = std::get_if<double>(&v); f != nullptr && std::isfinite(*f)) return *f;
  return std::nullopt;
}

std::vector<std::string> SweepPoint::overrides() const {
  std::vector<std::string> out;
  out.reserve(values.size());
  for (const SweptValue& v : values) out.push_back(v.override_text());
  return out;
}

const SweptValue* SweepPoint::find(std::string_view key) const {
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    if (it->key == key) return &*it;
  }
  return nullptr;
}

uint64_t sweep_point_seed(uint64_t base_seed, int64_t index) {
  return splitmix64(base_seed ^ splitmix64(static_cast<uint64_t>(index))) >> 1;
}

int64_t SweepSpec::size() const {
  int64_t n = 1;
  for (const SweepAxis& a : axes) n *= static_cast<int64_t>(a.values.size());
  return n;
}

SweepSpec read_sweep(const std::filesystem::path& scenario) {
  std::ifstream in(scenario, std::ios::binary);
  if (!in) throw ScenarioError(scenario, 0, 0, "", "cannot open the scenario file");
  std::ostringstream text;
  text << in.rdbuf();
  toml::table doc;
  try {
    doc = toml::parse(text.str(), scenario.string());
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ScenarioError(scenario, static_cast<int64_t>(b.line), static_cast<int64_t>(b.column), "",
                        "TOML syntax error: " + std::string(e.description()));
  }
  SweepSpec spec;
  const toml::node* sweep_node = doc.get("sweep");
  if (sweep_node == nullptr) return spec;
  const toml::table* sweep = sweep_node->as_table();
  if (sweep == nullptr) fail(scenario, pos_of(sweep_node->source()), "sweep", "expected a table");

  std::vector<RawAxis> raw;
  const toml::array* zip = nullptr;
  Pos zip_pos;
  for (const auto& [k, node] : *sweep) {
    const std::string name{k.str()};
    if (name == "zip") {
      zip = node.as_array();
      zip_pos = pos_of(node.source());
      if (zip == nullptr) fail(scenario, zip_pos, "sweep.zip", "expected a list of lists of keys");
    } else if (name == "parallelism" && node.is_string()) {
      if (node.as_string()->get() != "auto") {
        fail(scenario, pos_of(node.source()), "sweep.parallelism",
             "the only value is \"auto\", got " + toml_string(node.as_string()->get()));
      }
      spec.auto_parallelism = true;
    } else {
      collect(scenario, name, pos_of(k.source()), node, raw);
    }
  }
  // The order written: by position in the file (toml::table is sorted by key).
  std::stable_sort(raw.begin(), raw.end(), [](const RawAxis& a, const RawAxis& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
  std::set<std::string> seen;
  for (const RawAxis& a : raw) {
    if (!seen.insert(a.key).second) fail(scenario, a.pos, "sweep." + a.key, "swept twice");
  }

  // Zipped groups: each becomes one axis at the place of its first member.
  std::map<std::string, size_t> group_of;  // key -> zip group
  std::vector<std::vector<std::string>> groups;
  if (zip != nullptr) {
    for (const toml::node& g : *zip) {
      const toml::array* keys = g.as_array();
      if (keys == nullptr || keys->size() < 2) {
        fail(scenario, pos_of(g.source()), "sweep.zip", "each zip group is a list of two or more swept keys");
      }
      std::vector<std::string> group;
      size_t length = 0;
      for (const toml::node& kn : *keys) {
        if (!kn.is_string()) fail(scenario, pos_of(kn.source()), "sweep.zip", "zip group members are key strings");
        const std::string key = kn.as_string()->get();
        const auto it = std::find_if(raw.begin(), raw.end(), [&](const RawAxis& a) { return a.key == key; });
        if (it == raw.end()) fail(scenario, pos_of(kn.source()), "sweep.zip", "'" + key + "' is not a swept key");
        if (group_of.count(key)) fail(scenario, pos_of(kn.source()), "sweep.zip", "'" + key + "' is zipped twice");
        if (!group.empty() && it->values.size() != length) {
          fail(scenario, pos_of(kn.source()), "sweep.zip",
               "zipped keys must have equal lengths: '" + group.front() + "' has " + std::to_string(length) +
                   " values, '" + key + "' has " + std::to_string(it->values.size()));
        }
        length = it->values.size();
        group_of[key] = groups.size();
        group.push_back(key);
      }
      groups.push_back(std::move(group));
    }
  }
  std::set<size_t> emitted;
  for (const RawAxis& a : raw) {
    const auto g = group_of.find(a.key);
    if (g == group_of.end()) {
      SweepAxis axis;
      axis.keys = {a.key};
      for (const auto& v : a.values) axis.values.push_back({v});
      spec.axes.push_back(std::move(axis));
      continue;
    }
    if (!emitted.insert(g->second).second) continue;
    SweepAxis axis;
    axis.keys = groups[g->second];
    std::vector<const RawAxis*> members;
    for (const auto& key : axis.keys) {
      members.push_back(&*std::find_if(raw.begin(), raw.end(), [&](const RawAxis& r) { return r.key == key; }));
    }
    for (size_t i = 0; i < a.values.size(); ++i) {
      std::vector<ScalarValue> row;
      for (const RawAxis* m : members) row.push_back(m->values[i]);
      axis.values.push_back(std::move(row));
    }
    spec.axes.push_back(std::move(axis));
  }
  return spec;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec, const std::filesystem::path& scenario,
                                     uint64_t base_seed, const models::Catalog& catalog) {
  const int64_t n = spec.size();
  std::vector<std::vector<SweptValue>> grid;
  grid.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    // Row-major: the last axis varies fastest.
    std::vector<size_t> digit(spec.axes.size());
    int64_t rest = i;
    for (size_t a = spec.axes.size(); a-- > 0;) {
      const auto len = static_cast<int64_t>(spec.axes[a].values.size());
      digit[a] = static_cast<size_t>(rest % len);
      rest /= len;
    }
    std::vector<SweptValue> values;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      const SweepAxis& axis = spec.axes[a];
      for (size_t k = 0; k < axis.keys.size(); ++k) values.push_back({axis.keys[k], axis.values[digit[a]][k]});
    }
    grid.push_back(std::move(values));
  }
  std::vector<SweepPoint> points;
  for (auto& values : grid) {
    if (!spec.auto_parallelism) {
      points.push_back({static_cast<int64_t>(points.size()), 0, std::move(values)});
      continue;
    }
    std::vector<std::string> overrides;
    for (const SweptValue& v : values) overrides.push_back(v.override_text());
    for (auto& layout : enumerate_layouts(scenario, overrides, catalog)) {
      std::vector<SweptValue> all = values;
      all.insert(all.end(), layout.begin(), layout.end());
      points.push_back({static_cast<int64_t>(points.size()), 0, std::move(all)});
    }
  }
  for (SweepPoint& p : points) p.seed = sweep_point_seed(base_seed, p.index);
  return points;
}

std::vector<std::vector<SweptValue>> enumerate_layouts(const std::filesystem::path& scenario,
                                                        const std::vector<std::string>& overrides,
                                                        const models::Catalog& catalog, int jobs) {
  // The model and the cluster: the scenario with the grid point's overrides, its own layout; when that
  // layout does not fit the point (other nodes, batch), with the simplest layout instead.
  const ScenarioDocument document = ScenarioDocument::read(scenario);  // parsed once for every candidate
  const Scenario s = [&] {
    try {
      return load_scenario(document, overrides, catalog);
    } catch (const ScenarioError&) {
      std::vector<std::string> base = overrides;
      for (const char* o : {"parallelism.tensor=1", "parallelism.pipeline=1", "parallelism.virtual_stages=1",
                            "training.micro_batch_size=1"}) {
        base.emplace_back(o);
      }
      try {
        return load_scenario(document, base, catalog);
      } catch (const ScenarioError&) {
      }
      throw;
    }
  }();
  models::LayoutSearch search;
  search.gpus_per_vm = static_cast<int64_t>(catalog.vm_size(s.cluster.vm_size).devices_per_vm);
  search.gpus = s.cluster.nodes * search.gpus_per_vm;
  search.heads = s.model.num_attention_heads;
  search.query_groups = s.model.num_query_groups;
  search.layers = s.model.num_layers;
  search.global_batch = s.training.global_batch_size;
  search.seq_length = s.model.seq_length;
  search.experts = s.model.num_experts;
  std::vector<std::vector<SweptValue>> out;
  const std::vector<models::LayoutCandidate> candidates = models::enumerate_layouts(search);
  // The dimensions the layouts set, as written; one that most layouts leave at 1 (context) only when a
  // candidate uses it, so a search without it gives the points it gave before that dimension existed.
  std::vector<const models::LayoutDimension*> dims;
  for (const models::LayoutDimension* d : models::layout_dimensions_as_written()) {
    const bool used = std::any_of(candidates.begin(), candidates.end(),
                                  [&](const models::LayoutCandidate& c) { return c.parallelism.*d->size != 1; });
    if (d->shown_when_one || used) dims.push_back(d);
  }
  // The layout of each candidate as scenario values: each dimension's size under its key (as written: tensor,
  // [context,] pipeline, data), then the micro batch and the virtual stages; kept when it loads. The loads
  // (most of the enumeration's time) run on `jobs` threads, each candidate's verdict in its own slot.
  // The optimizer's sharding: a scenario without it (zero_stage 0) also gets each data-parallel candidate with
  // the distributed optimizer (ZeRO-1: Megatron's --use-distributed-optimizer, DeepSpeed stage 1), which holds
  // 1/d of the fp32 optimizer state for the same gradient bytes on the wire (reduce-scatter + all-gather instead
  // of an all-reduce): the layouts that run out of memory only for their optimizer state then fit. A scenario
  // that already shards it keeps its stage. The loader judges each (e.g. frameworks without it).
  const bool try_zero1 = s.parallelism.zero_stage == 0;
  std::vector<std::pair<const models::LayoutCandidate*, int>> variants;  // candidate, zero stage (-1: as given)
  for (const models::LayoutCandidate& c : candidates) {
    variants.emplace_back(&c, -1);
    if (try_zero1 && c.parallelism.data > 1) variants.emplace_back(&c, 1);
  }
  std::vector<std::vector<SweptValue>> layouts(variants.size());
  std::vector<char> loads(variants.size(), 0);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto check = [&] {
    try {
      for (size_t k = next++; k < variants.size(); k = next++) {
        const models::LayoutCandidate& c = *variants[k].first;
        std::vector<SweptValue>& layout = layouts[k];
        for (const models::LayoutDimension* d : dims) layout.push_back({std::string(d->key), c.parallelism.*d->size});
        layout.push_back({"training.micro_batch_size", c.micro_batch});
        layout.push_back({"parallelism.virtual_stages", c.parallelism.virtual_stages});
        if (try_zero1) layout.push_back({"parallelism.zero_stage", variants[k].second < 0 ? 0 : variants[k].second});
        std::vector<std::string> all = overrides;
        for (const SweptValue& l : layout) all.push_back(l.override_text());
        try {
          (void)load_scenario(document, all, catalog);
          loads[k] = 1;
        } catch (const ScenarioError&) {
        }
      }
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = variants.size();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::min<int64_t>(jobs, static_cast<int64_t>(variants.size())); ++j) threads.emplace_back(check);
  check();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  for (size_t k = 0; k < variants.size(); ++k) {
    if (loads[k]) out.push_back(std::move(layouts[k]));
  }
  return out;
}

}  // namespace clustersim::sim
