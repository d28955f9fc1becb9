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
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/layout.hpp"
#include "models/splitmix64.hpp"
#include "sim/input_file.hpp"
#include "sim/io/layout_rules.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/io/toml_limits.hpp"
#include "sim/step/step_simulation.hpp"

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

/// One setting of the memory-saving knobs the layout search varies, with its place in each knob's step-time
/// cost order (0 the cheapest; see enumerate_layouts).
struct Knobs {
  int zero_stage = 0;
  models::Recompute recompute = models::Recompute::none;
  bool sequence_parallel = false;
  int zero_rank = 0;
  int recompute_rank = 0;
  int sequence_parallel_rank = 0;

  /// At most as costly as `o` in every knob.
  [[nodiscard]] bool undercuts(const Knobs& o) const {
    return zero_rank <= o.zero_rank && recompute_rank <= o.recompute_rank &&
           sequence_parallel_rank <= o.sequence_parallel_rank;
  }
  [[nodiscard]] bool same_setting(const Knobs& o) const {
    return zero_stage == o.zero_stage && recompute == o.recompute && sequence_parallel == o.sequence_parallel;
  }
  /// The scenario values of the setting, in the order the ranking prints them.
  [[nodiscard]] std::vector<SweptValue> values() const {
    return {{"parallelism.zero_stage", static_cast<int64_t>(zero_stage)},
            {"training.activation_recompute", std::string(models::to_string(recompute))},
            {"parallelism.sequence_parallel", sequence_parallel}};
  }
};

/// Every setting of the knobs the search tries for a scenario like `s`, the cheapest (by the sum of the ranks)
/// first: the ZeRO stages 0, 1 and 3 that s's framework implements (models::implemented_zero_stages);
/// recompute none, then the scenario's partial kind (selective, or torchtitan's selective_op) unless it
/// re-runs nothing (Megatron's core_attn alone under flash attention), then full; sequence parallelism on,
/// then off.
std::vector<Knobs> knob_settings(const Scenario& s) {
  std::vector<int> zero;
  for (int z : models::implemented_zero_stages(s.training.framework)) {
    if (z != 2) zero.push_back(z);
  }
  using models::Recompute;
  std::vector<Recompute> recompute{Recompute::none};
  const Recompute partial =
      s.training.activation_recompute == Recompute::selective_op ? Recompute::selective_op : Recompute::selective;
  const bool core_attention_only =
      s.training.recompute_modules == static_cast<uint32_t>(models::RecomputeModule::core_attn);
  if (!(partial == Recompute::selective && s.training.flash_attention && core_attention_only)) {
    recompute.push_back(partial);
  }
  recompute.push_back(Recompute::full);
  std::vector<Knobs> out;
  for (size_t z = 0; z < zero.size(); ++z) {
    for (size_t r = 0; r < recompute.size(); ++r) {
      for (const bool sp : {true, false}) {
        out.push_back({zero[z], recompute[r], sp, static_cast<int>(z), static_cast<int>(r), sp ? 0 : 1});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Knobs& a, const Knobs& b) {
    return a.zero_rank + a.recompute_rank + a.sequence_parallel_rank <
           b.zero_rank + b.recompute_rank + b.sequence_parallel_rank;
  });
  return out;
}

/// Whether the loader's rules that read the memory-saving knobs (sim/io/training_rules.cpp) might reject
/// `base` (a layout's scenario, loaded) with the setting `k`: an explicit tp_comm_overlap without sequence
/// parallelism (tensor > 1), a recompute_modules list other than ["core_attn"] without selective recompute
/// (the list has no duplicates, so the mask tells), moe_a2a_overlap with full recompute. Conservative (the
/// first asks only whether tp_comm_overlap is on): where it says false, loading the setting gives `base` with
/// the knobs set. The layout and expert-layout rules the screening applies itself; the keys' range checks
/// pass for every setting knob_settings makes.
bool knob_rules_may_reject(const Scenario& base, const Knobs& k) {
  const bool selective = k.recompute == models::Recompute::selective;
  return (base.parallelism.tp_comm_overlap && !k.sequence_parallel && base.parallelism.tensor > 1) ||
         (base.training.recompute_modules != static_cast<uint32_t>(models::RecomputeModule::core_attn) &&
          !selective) ||
         (base.training.moe_a2a_overlap && k.recompute == models::Recompute::full);
}

/// The points the search keeps for one layout (`layout`: its dimensions, micro batch and virtual stages, of
/// parallelism `p`): the cheapest settings of `settings` that fit in memory (each not undercut by a fitting
/// setting found before it), preceded by the scenario's own setting when no fitting setting undercuts it
/// (it is itself among the cheapest, or nothing fits and it shows the layout out of memory, or the search does
/// not rank it: a ZeRO stage or recompute kind outside `settings`). The
/// screening applies each setting to the layout's loaded scenario and asks the memory model; a kept setting's
/// scenario is that one with the knobs set (what loading it gives, see knob_rules_may_reject), or, where the
/// loader's rules might reject it or the layout's scenario was loaded with a setting, loaded like any point (a
/// setting the loader rejects is not kept). Every point sets the three knob keys. The layout's scenario is
/// derived from `root` (the scenario with `overrides` alone, loaded; nullptr when it does not load) by
/// derive_layout, which gives what loading the layout gives or says it refuses it; loaded where it cannot tell.
/// One point the search keeps: its layout and setting values, and the scenario the screening loaded for it
/// (for the scenario's own setting, the layout's scenario with the knob keys' --set options added: what a
/// load with those keys gives).
struct KeptPoint {
  std::vector<SweptValue> values;
  std::shared_ptr<const Scenario> scenario;
};

std::vector<KeptPoint> settings_of_layout(const ScenarioDocument& document,
                                          const std::vector<std::string>& overrides, const Scenario* root,
                                          const std::vector<SweptValue>& layout, const models::ParallelismConfig& p,
                                          const std::vector<Knobs>& settings, const models::Catalog& catalog) {
  const auto with = [&layout](const Knobs& k) {
    std::vector<SweptValue> values = layout;
    for (SweptValue& v : k.values()) values.push_back(std::move(v));
    return values;
  };
  const auto load = [&](const std::vector<SweptValue>& values) -> std::optional<Scenario> {
    std::vector<std::string> all = overrides;
    for (const SweptValue& v : values) all.push_back(v.override_text());
    try {
      return load_scenario(document, all, catalog, ResolvedText::skip);  // a point's run does not print it
    } catch (const ScenarioError&) {
      return std::nullopt;
    }
  };
  // The layout as the scenario sets it (derived from `root` where derive_layout can tell what the load gives);
  // when that does not load, as the first setting that does.
  const auto load_layout = [&]() -> std::optional<Scenario> {
    if (root != nullptr) {
      std::vector<LayoutSetting> keys;
      keys.reserve(layout.size());
      for (const SweptValue& v : layout) {
        const auto* i = std::get_if<int64_t>(&v.value);
        if (i == nullptr) return load(layout);
        keys.push_back({v.key, *i});
      }
      Scenario derived;
      switch (derive_layout(*root, keys, derived)) {
        case LayoutVerdict::loads: return derived;
        case LayoutVerdict::refused: return std::nullopt;
        case LayoutVerdict::load_to_know: break;
      }
    }
    return load(layout);
  };
  std::optional<Scenario> base = load_layout();
  std::optional<Knobs> own;
  if (base) {
    own = Knobs{static_cast<int>(base->parallelism.zero_stage), base->training.activation_recompute,
                base->parallelism.sequence_parallel};
  }
  for (size_t i = 0; !base && i < settings.size(); ++i) base = load(with(settings[i]));
  if (!base) return {};
  // Sequence parallelism does nothing without tensor parallelism: keep the scenario's value there.
  const bool sp_without_tensor = own ? own->sequence_parallel : false;

  std::vector<const Knobs*> fitting;
  std::vector<KeptPoint> cheapest;
  // step_setup_of copies the model, training, parallelism and schedule and reads the cluster: a trial's setup is
  // `base`'s with the three knobs set, so it is made once and the scenario copied only for a kept setting.
  const models::StepSetup base_setup = step_setup_of(*base, catalog);
  const models::DeviceSpec& device = catalog.device(catalog.vm_size(base->cluster.vm_size).device);
  for (const Knobs& k : settings) {
    if (k.zero_stage > 0 && p.data == 1) continue;
    if (p.tensor == 1 && k.sequence_parallel != sp_without_tensor) continue;
    if (std::any_of(fitting.begin(), fitting.end(), [&k](const Knobs* f) { return f->undercuts(k); })) continue;
    // The layout rules read the parallelism and the model only: checked before the scenario is copied.
    models::ParallelismConfig trial_parallelism = base->parallelism;
    trial_parallelism.zero_stage = k.zero_stage;
    trial_parallelism.sequence_parallel = k.sequence_parallel;
    if (models::layout_problem(trial_parallelism, base->model) ||
        models::expert_layout_problem(trial_parallelism, base->model)) {
      continue;
    }
    // memory_of(trial, catalog).fits, without the verdict's text (the screening reads only the bool).
    models::StepSetup trial_setup = base_setup;
    trial_setup.parallelism.zero_stage = k.zero_stage;
    trial_setup.training.activation_recompute = k.recompute;
    trial_setup.parallelism.sequence_parallel = k.sequence_parallel;
    if (!models::memory_fits(trial_setup, device)) continue;
    std::vector<SweptValue> values = with(k);
    std::shared_ptr<const Scenario> loaded;
    if (!(own && k.same_setting(*own))) {
      if (own && !knob_rules_may_reject(*base, k)) {
        // `base` was loaded with the layout's values only (`own` is set): a load with the setting's keys as
        // well gives `trial` (the knobs set; no other field of a load reads them), recording the keys' --set
        // options after the layout's; their tables exist before them, so no key's location moves.
        Scenario trial = *base;
        trial.parallelism.zero_stage = k.zero_stage;
        trial.training.activation_recompute = k.recompute;
        trial.parallelism.sequence_parallel = k.sequence_parallel;
        for (size_t i = layout.size(); i < values.size(); ++i) trial.overrides.push_back(values[i].override_text());
        loaded = std::make_shared<const Scenario>(std::move(trial));
      } else {
        std::optional<Scenario> sc = load(values);
        if (!sc) continue;
        loaded = std::make_shared<const Scenario>(std::move(*sc));
      }
    }
    fitting.push_back(&k);
    cheapest.push_back({std::move(values), std::move(loaded)});
  }
  std::vector<KeptPoint> kept;
  if (own) {
    const auto same = [&](const Knobs& k) { return k.same_setting(*own); };
    const bool cheapest_itself = std::any_of(fitting.begin(), fitting.end(), [&](const Knobs* f) { return same(*f); });
    const bool ranked = std::any_of(settings.begin(), settings.end(), same);  // not: e.g. ZeRO 2
    if (cheapest_itself || fitting.empty() || !ranked) {
      // Its scenario is `base`: a load with the setting's keys as well sets the values `base` already has
      // (each read back from it; activation_recompute's names round-trip exactly), so it differs only in the
      // --set options it records, the three keys' texts after the layout's. The [parallelism] and [training]
      // tables exist before them (the layout sets keys of both), so no key's location moves.
      std::vector<SweptValue> values = with(*own);
      for (size_t i = layout.size(); i < values.size(); ++i) base->overrides.push_back(values[i].override_text());
      kept.push_back({std::move(values), std::make_shared<const Scenario>(std::move(*base))});
    }
  }
  for (size_t i = 0; i < fitting.size(); ++i) {
    if (!(own && fitting[i]->same_setting(*own))) kept.push_back(std::move(cheapest[i]));
  }
  return kept;
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

std::string_view to_string(SweepObjective o) {
  switch (o) {
    case SweepObjective::step_time: return "step_time";
    case SweepObjective::cost_per_token: return "cost_per_token";
    case SweepObjective::time_to_train: return "time_to_train";
    case SweepObjective::cost_per_mtoken_under_slo: return "cost_per_mtoken_under_slo";
  }
  return "?";
}

std::string_view objective_column(SweepObjective o, bool has_job) {
  switch (o) {
    case SweepObjective::step_time: return "step_time_s";
    case SweepObjective::cost_per_token: return has_job ? "job_usd_per_million_tokens" : "usd_per_million_tokens";
    case SweepObjective::time_to_train: return "time_to_train_mean_h";
    case SweepObjective::cost_per_mtoken_under_slo: return "usd_per_million_output_tokens";
  }
  return "step_time_s";
}

int64_t SweepSpec::size() const {
  int64_t n = 1;
  for (const SweepAxis& a : axes) n *= static_cast<int64_t>(a.values.size());
  return n;
}

namespace {
/// Refuses a grid of more than kMaxSweepPoints points (the product of the axis lengths, overflow-checked) before
/// anything is expanded: a ScenarioError at the [sweep] table naming each axis and its length.
void check_grid_size(const std::filesystem::path& scenario, Pos pos, const SweepSpec& spec) {
  int64_t n = 1;
  bool over = false;
  std::string axes;
  for (const SweepAxis& a : spec.axes) {
    const auto len = static_cast<int64_t>(a.values.size());
    std::string keys;
    for (const std::string& k : a.keys) keys += (keys.empty() ? "" : "+") + k;
    axes += (axes.empty() ? "" : " x ") + keys + " (" + std::to_string(len) + ")";
    if (!over && (len != 0 && n > kMaxSweepPoints / len)) over = true;
    if (!over) n *= len;
  }
  if (over || n > kMaxSweepPoints) {
    fail(scenario, pos, "sweep",
         "the grid has more than " + std::to_string(kMaxSweepPoints) + " points: " + axes +
             "; split the sweep or shorten an axis");
  }
}
}  // namespace

SweepSpec read_sweep(const std::filesystem::path& scenario) {
  std::string text;
  try {
    text = read_input_file(scenario, kMaxTextInputBytes);
  } catch (const InputFileError& e) {
    throw ScenarioError(scenario, 0, 0, "", std::string("cannot open the scenario file: it ") + e.what());
  }
  if (const auto v = check_toml_limits(text)) throw ScenarioError(scenario, v->line, v->column, "", v->message);
  toml::table doc;
  try {
    doc = toml::parse(text, scenario.string());
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ScenarioError(scenario, static_cast<int64_t>(b.line), static_cast<int64_t>(b.column), "",
                        "TOML syntax error: " + std::string(e.description()));
  }
  SweepSpec spec;
  // A serving scenario has one objective, and it is its default.
  if (doc.get("serving") != nullptr) spec.objective = SweepObjective::cost_per_mtoken_under_slo;
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
    } else if (name == "objective") {
      const std::string value = node.is_string() ? node.as_string()->get() : std::string();
      bool known = false;
      for (const SweepObjective o : {SweepObjective::step_time, SweepObjective::cost_per_token,
                                     SweepObjective::time_to_train, SweepObjective::cost_per_mtoken_under_slo}) {
        if (to_string(o) == value) {
          spec.objective = o;
          known = true;
        }
      }
      const bool serving = doc.get("serving") != nullptr;
      if (!known) {
        fail(scenario, pos_of(node.source()), "sweep.objective",
             std::string(serving ? "expected \"cost_per_mtoken_under_slo\""
                                 : "expected \"step_time\", \"cost_per_token\" or \"time_to_train\"") +
                 (node.is_string() ? ", got " + toml_string(value) : std::string()));
      }
      if (serving != (spec.objective == SweepObjective::cost_per_mtoken_under_slo)) {
        fail(scenario, pos_of(node.source()), "sweep.objective",
             serving ? "a serving scenario's sweep ranks by \"cost_per_mtoken_under_slo\""
                     : "cost_per_mtoken_under_slo ranks serving fleets: it needs a [serving] scenario");
      }
      if (spec.objective == SweepObjective::time_to_train && doc.get("job") == nullptr) {
        fail(scenario, pos_of(node.source()), "sweep.objective",
             "time_to_train needs a [job] table (train_tokens or steps)");
      }
      spec.objective_given = true;
    } else if (name == "parallelism" && node.is_string()) {
      if (doc.get("serving") != nullptr) {
        fail(scenario, pos_of(node.source()), "sweep.parallelism",
             "a serving scenario has no training layout to search: sweep serving.tensor and serving.replicas");
      }
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
  check_grid_size(scenario, pos_of(sweep->source()), spec);
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
  std::vector<std::vector<SweptValue>> out;
  for (LayoutPoint& p : enumerate_layout_points(scenario, overrides, catalog, jobs)) out.push_back(std::move(p.values));
  return out;
}

models::LayoutSearch layout_search_of(const Scenario& s, const models::Catalog& catalog) {
  models::LayoutSearch search;
  const models::VmSize& vm = catalog.vm_size(s.cluster.vm_size);
  search.gpus_per_vm = static_cast<int64_t>(vm.devices_per_vm);
  search.gpus_per_domain = vm.domain_gpus(s.cluster.nodes, s.cluster.vms_per_nvlink_domain);
  search.gpus = s.cluster.nodes * search.gpus_per_vm;
  search.heads = s.model.num_attention_heads;
  search.query_groups = s.model.num_query_groups;
  search.layers = s.model.num_layers;
  search.global_batch = s.training.global_batch_size;
  search.seq_length = s.model.seq_length;
  search.experts = s.model.num_experts;
  return search;
}

std::vector<LayoutPoint> enumerate_layout_points(const std::filesystem::path& scenario,
                                                 const std::vector<std::string>& overrides,
                                                 const models::Catalog& catalog, int jobs) {
  // The model and the cluster: the scenario with the grid point's overrides, its own layout; when that
  // layout does not fit the point (other nodes, batch), with the simplest layout instead.
  const ScenarioDocument document = ScenarioDocument::read(scenario);  // parsed once for every candidate
  // `root`: the scenario with the overrides alone, when it loads: each candidate layout is derived from it
  // (derive_layout) instead of loaded.
  std::optional<Scenario> root;
  const Scenario s = [&] {
    try {
      root = load_scenario(document, overrides, catalog, ResolvedText::skip);
      return *root;
    } catch (const ScenarioError&) {
      std::vector<std::string> base = overrides;
      for (const char* o : {"parallelism.tensor=1", "parallelism.pipeline=1", "parallelism.virtual_stages=1",
                            "training.micro_batch_size=1"}) {
        base.emplace_back(o);
      }
      try {
        return load_scenario(document, base, catalog, ResolvedText::skip);
      } catch (const ScenarioError&) {
      }
      throw;
    }
  }();
  const models::LayoutSearch search = layout_search_of(s, catalog);
  std::vector<LayoutPoint> out;
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
  // The memory-saving settings beside each layout (docs/sweeps.md, "Layout search"): the ZeRO stage (those the
  // framework implements of 0, 1, 3; not 0 with data 1), activation recompute (none, the scenario's selective
  // kind unless flash attention makes it a no-op, full) and sequence parallelism (with tensor > 1). Each costs
  // step time as it saves memory, so the search keeps for each layout the scenario's own setting and the
  // cheapest settings that fit in memory: those no other fitting setting undercuts in every knob, with the
  // costs ordered recompute none < selective < full, ZeRO 0 < 1 < 3 (the same gradient bytes, then the
  // all-gather that may be exposed, then parameter gathers in every pass) and sequence parallelism on < off
  // (the same bytes on the wire as the all-reduce, 1/t of the LayerNorm and dropout work: Korthikanti et al.
  // 2022, section 4.2.2). The fit is the memory model's verdict (models::memory_fits), which costs no simulation.
  const std::vector<Knobs> settings = knob_settings(s);
  std::vector<std::vector<KeptPoint>> layouts(candidates.size());  // per candidate, kept points
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto check = [&] {
    try {
      for (size_t k = next++; k < candidates.size(); k = next++) {
        const models::LayoutCandidate& c = candidates[k];
        std::vector<SweptValue> layout;
        for (const models::LayoutDimension* d : dims) layout.push_back({std::string(d->key), c.parallelism.*d->size});
        layout.push_back({"training.micro_batch_size", c.micro_batch});
        layout.push_back({"parallelism.virtual_stages", c.parallelism.virtual_stages});
        layouts[k] = settings_of_layout(document, overrides, root ? &*root : nullptr, layout, c.parallelism,
                                        settings, catalog);
      }
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = candidates.size();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::min<int64_t>(jobs, static_cast<int64_t>(candidates.size())); ++j) {
    threads.emplace_back(check);
  }
  check();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  for (auto& kept : layouts) {
    for (auto& point : kept) out.push_back({std::move(point.values), std::move(point.scenario)});
  }
  return out;
}

}  // namespace clustersim::sim
