// Scenario loading: parse, apply --set overrides, check every key against the parameter table
// (scenario_params.cpp), fill defaults, cross-check the parallelism layout against the catalog.
#include "sim/io/scenario.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/parallelism/layout.hpp"
#include "models/workload/transformer.hpp"
#include "sim/io/closest_names.hpp"
#include "sim/io/eviction_trace.hpp"
#include "sim/io/framework_profiles.hpp"
#include "sim/io/serving_rules.hpp"
#include "sim/io/workload_rules.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/io/toml_limits.hpp"
#include "sim/input_file.hpp"

namespace clustersim::sim {

namespace {

std::string format_what(const std::filesystem::path& file, int64_t line, int64_t column, const std::string& key,
                        const std::string& message) {
  std::ostringstream s;
  s << file.string() << ':' << line << ':' << column << ": key '" << key << "': " << message;
  return s.str();
}

}  // namespace

ScenarioError::ScenarioError(std::filesystem::path file, int64_t line, int64_t column, std::string key,
                             std::string message)
    : std::runtime_error(format_what(file, line, column, key, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      key_(std::move(key)) {}

namespace {

using detail::Need;
using detail::ParamSpec;
using detail::ParamType;

constexpr std::string_view kSetFile = "--set";

/// A position in the scenario file or in a --set option.
struct Loc {
  std::filesystem::path file;
  int64_t line = 1;
  int64_t column = 1;
};

std::string_view node_type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
  }
  return "?";
}

std::string_view expected_name(ParamType t) {
  switch (t) {
    case ParamType::integer: return "an integer";
    case ParamType::number: return "a number";
    case ParamType::string: return "a string";
    case ParamType::boolean: return "a boolean";
    case ParamType::zone_list: return "an array of tables";
    case ParamType::string_list: return "an array of strings";
  }
  return "?";
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

/// Keys of table `table` in the parameter table, in order, comma separated.
std::string known_keys_of(std::string_view table) {
  std::string out;
  for (const auto& p : detail::scenario_params()) {
    if (p.table() != table) continue;
    if (!out.empty()) out += ", ";
    out += p.leaf();
  }
  return out;
}

std::string known_tables() {
  std::string out;
  for (const auto& t : detail::scenario_tables()) {
    if (t.name.empty()) continue;
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

/// For a syntax error on `line` (1-based) of `text`: "table.key" when that line reads `key = ...` (table from
/// the last `[table]` header above it), else "". Best effort; the parser has given up, so this reads lines.
std::string nearest_key(const std::string& text, uint64_t line) {
  std::istringstream in(text);
  std::string current_table;
  std::string row;
  for (uint64_t n = 1; n <= line && std::getline(in, row); ++n) {
    const std::string t = trim(row);
    if (n < line) {
      if (t.size() > 2 && t.front() == '[' && t[1] != '[') {
        const auto close = t.find(']');
        if (close != std::string::npos) current_table = trim(std::string_view(t).substr(1, close - 1));
      }
      continue;
    }
    const auto eq = t.find('=');
    if (eq == std::string::npos || t.front() == '[' || t.front() == '#') return {};
    const std::string key = trim(std::string_view(t).substr(0, eq));
    if (key.empty() || key.find_first_of("\"' \t") != std::string::npos) return {};
    return current_table.empty() ? key : current_table + "." + key;
  }
  return {};
}

std::string join_key(std::string_view table, std::string_view leaf) {
  return table.empty() ? std::string(leaf) : std::string(table) + "." + std::string(leaf);
}

/// One load: the parsed document, where --set values came from, and the validated, canonical result.
class Loader {
 public:
  explicit Loader(std::filesystem::path path) : path_(std::move(path)) {}

  /// Reads and parses the file. Throws ScenarioError (unreadable: 0:0; syntax: the parser's position).
  void parse() {
    std::string text;
    try {
      text = read_input_file(path_, kMaxTextInputBytes);
    } catch (const InputFileError& e) {
      fail("", Loc{path_, 0, 0}, std::string("cannot open the scenario file: it ") + e.what());
    }
    if (const auto v = check_toml_limits(text)) fail("", Loc{path_, v->line, v->column}, v->message);
    try {
      doc_ = toml::parse(text, path_.string());
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      fail(nearest_key(text, b.line), Loc{path_, static_cast<int64_t>(b.line), static_cast<int64_t>(b.column)},
           "TOML syntax error: " + std::string(e.description()));
    }
  }

  /// Whether the document (with its overrides) has the top-level table `name`.
  [[nodiscard]] bool has_table(const std::string& name) const {
    const toml::node* n = doc_.get(name);
    return n != nullptr && n->is_table();
  }

  /// Starts from a document parsed before (a copy: overrides edit it).
  void use(const toml::table& parsed) { doc_ = parsed; }
  [[nodiscard]] toml::table take_document() { return std::move(doc_); }

  /// Applies "dotted.key=value" overrides in order (a later one wins). The i-th (1-based) option is reported
  /// as "--set:i:COL", COL 1 for its key and the value's column for its value.
  void apply_overrides(const std::vector<std::string>& overrides) {
    for (size_t i = 0; i < overrides.size(); ++i) {
      const std::string& text = overrides[i];
      const auto line = static_cast<int64_t>(i + 1);
      const Loc key_loc{std::filesystem::path(kSetFile), line, 1};
      const auto eq = text.find('=');
      const std::string key = trim(std::string_view(text).substr(0, eq));
      if (eq == std::string::npos || key.empty()) {
        fail(key, key_loc, "expected KEY=VALUE, got '" + text + "'");
      }
      const ParamSpec* spec = detail::find_param(key);
      if (spec == nullptr) fail(key, key_loc, "unknown key" + suggestion_for_override(key));

      const std::string_view raw_view = std::string_view(text).substr(eq + 1);
      const auto value_offset = raw_view.find_first_not_of(" \t");
      const std::string raw = trim(raw_view);
      const Loc value_loc{std::filesystem::path(kSetFile), line,
                          static_cast<int64_t>(eq + 2 + (value_offset == std::string_view::npos ? 0 : value_offset))};

      // The value as TOML ("4", "true", "\"x\"", "[1, 2]"); anything else, or a non-string for a string key,
      // is taken as the bare string. "v = " is 4 bytes before the value's column.
      if (const auto v = check_toml_limits("v = " + raw)) {
        fail(key, Loc{value_loc.file, line, value_loc.column + v->column - 5}, v->message);
      }
      toml::table parsed;
      bool as_toml = false;
      try {
        parsed = toml::parse("v = " + raw, std::string(kSetFile));
        as_toml = parsed.size() == 1 && parsed.contains("v");
      } catch (const toml::parse_error&) {
        as_toml = false;
      }
      if (as_toml && spec->type == ParamType::string && !parsed["v"].is_string()) as_toml = false;

      toml::table* target = &doc_;
      const std::string table{spec->table()};
      if (!table.empty()) {
        toml::node* node = doc_.get(table);
        if (node == nullptr) {
          doc_.insert(table, toml::table{});
          node = doc_.get(table);
          override_locs_.emplace(table, key_loc);
        }
        target = node->as_table();
        if (target == nullptr) {
          fail(table, node_loc(*node), "expected a table, got " + std::string(node_type_name(node->type())));
        }
      }
      const std::string leaf{spec->leaf()};
      if (as_toml) {
        parsed["v"].node()->visit([&](const auto& v) { target->insert_or_assign(leaf, v); });
      } else {
        target->insert_or_assign(leaf, raw);
      }
      override_locs_.insert_or_assign(key, value_loc);
    }
  }

  /// schema_version first: a file of another version is reported as such, not as a list of unknown keys.
  void check_schema_version() { check_param(*detail::find_param("schema_version")); }

  /// Every table and key of the document is in the parameter table; tables are tables; required tables exist.
  void check_structure() {
    serving_ = doc_.get("serving") != nullptr;
    for (const auto& [k, node] : doc_) {
      const std::string key{k.str()};
      if (const auto* t = detail::find_table(key); t != nullptr && !key.empty()) {
        const toml::table* tbl = node.as_table();
        if (tbl == nullptr) {
          fail(key, value_loc_of(key, node), "expected a table, got " + std::string(node_type_name(node.type())));
        }
        if (!applies(key)) {
          fail(key, key_loc_of(key, k),
               serving_ ? "a serving scenario ([serving]) has no [" + key + "]: it simulates a fleet, not a training run"
                        : "[" + key + "] belongs to a serving scenario, which has a [serving] table and no training "
                                      "tables");
        }
        if (key == "sweep") continue;  // read by sim/sweep (read_sweep), not part of one run
        for (const auto& entry : *tbl) {
          const std::string dotted = join_key(key, entry.first.str());
          if (detail::find_param(dotted) == nullptr) {
            fail(dotted, key_loc_of(dotted, entry.first),
                 "unknown key (keys of [" + key + "]: " + known_keys_of(key) + ")");
          }
          if (!key_applies(dotted)) {
            fail(dotted, key_loc_of(dotted, entry.first),
                 !serving_ ? "a serving scenario's key: a training run's [reference] gives tflops_per_gpu, "
                             "step_time_s, tokens_per_s_per_gpu or mfu"
                 : key == "simulation" ? "a training run's key: the variability of a synchronous training step"
                                       : "a training metric: a serving scenario's [reference] gives metric and value");
          }
        }
      } else if (detail::find_param(key) == nullptr) {
        fail(key, key_loc_of(key, k),
             std::string(node.is_table() ? "unknown table" : "unknown key") + " (top-level keys: " +
                 known_keys_of("") + "; tables: " + known_tables() + ")");
      }
    }
    for (const auto& t : detail::scenario_tables()) {
      const bool required =
          serving_ ? (t.name == "model" || t.name == "serving" || t.name == "workload") : t.required;
      if (!t.name.empty() && required && doc_.get(std::string(t.name)) == nullptr) {
        fail(std::string(t.name), Loc{path_, 1, 1}, "required table is missing");
      }
    }
  }

  /// Presence, type and allowed values of every key; fills `resolved_` with canonical values and defaults.
  void check_params() {
    for (const auto& p : detail::scenario_params()) {
      if (applies(p.table()) && key_applies(p.key)) check_param(p);
    }
  }

  /// Within a table both kinds share ([reference], [simulation]), whether the key belongs to this kind: metric
  /// and value to a serving scenario, the training metrics and the step's variability to a training run.
  [[nodiscard]] bool key_applies(std::string_view dotted) const {
    static constexpr std::string_view kServingOnly[] = {"reference.metric", "reference.value"};
    static constexpr std::string_view kTrainingOnly[] = {
        "reference.tflops_per_gpu",  "reference.step_time_s",      "reference.tokens_per_s_per_gpu",
        "reference.mfu",             "simulation.variability",     "simulation.gpu_compute_cv",
        "simulation.slow_vm_fraction", "simulation.slow_vm_factor"};
    const auto in = [dotted](const auto& list) { return std::find(std::begin(list), std::end(list), dotted) != std::end(list); };
    return serving_ ? !in(kTrainingOnly) : !in(kServingOnly);
  }

  /// Whether the table's keys belong to this kind of scenario: a serving scenario has no training tables, a
  /// training scenario no serving tables; the root, [model], [simulation] and [sweep] belong to both.
  [[nodiscard]] bool applies(std::string_view table) const {
    static constexpr std::string_view kTraining[] = {"training", "parallelism", "cluster",    "network",
                                                     "job",      "reliability", "cost"};
    static constexpr std::string_view kServing[] = {"serving", "workload", "slo"};
    const auto in = [table](const auto& list) { return std::find(std::begin(list), std::end(list), table) != std::end(list); };
    return serving_ ? !in(kTraining) : !in(kServing);
  }

  /// Stops a training load of a serving scenario, at its [serving] header.
  void require_training() const {
    if (serving_) {
      fail("serving", table_loc("serving"),
           "a serving scenario: `clustersim run` simulates it; this command takes training scenarios");
    }
  }

  /// [model]'s own defaults and consistency, for every kind of scenario: key/value heads, the MLP widths and the
  /// head width when omitted; the width divisible by the heads (unless kv_channels is given) and the heads by
  /// the key/value heads.
  void check_model_shape() {
    const int64_t heads = get_int("model.num_attention_heads");
    const int64_t hidden = get_int("model.hidden_size");
    if (!has("model.num_query_groups")) set("model.num_query_groups", heads);
    if (!has("model.ffn_hidden_size")) {
      set("model.ffn_hidden_size", checked_mul(4, hidden, "model.hidden_size"));
    }
    if (!has("model.moe_ffn_hidden_size")) set("model.moe_ffn_hidden_size", get_int("model.ffn_hidden_size"));
    const bool head_width_given = has("model.kv_channels");
    if (!head_width_given && hidden % heads == 0) set("model.kv_channels", hidden / heads);
    if (!head_width_given && hidden % heads != 0) {
      fail_at("model.hidden_size", "must be divisible by model.num_attention_heads (" + std::to_string(heads) +
                                       "), got " + std::to_string(hidden));
    }
    const int64_t groups = get_int("model.num_query_groups");
    if (heads % groups != 0) {
      fail_at("model.num_query_groups", "must divide model.num_attention_heads (" + std::to_string(heads) +
                                            "), got " + std::to_string(groups));
    }
    const int64_t experts = get_int("model.num_experts");
    if (experts > 0 && get_int("model.moe_router_topk") > experts) {
      fail_at("model.moe_router_topk", "must not exceed model.num_experts (" + std::to_string(experts) + "), got " +
                                           std::to_string(get_int("model.moe_router_topk")));
    }
  }

  /// Defaults computed from other keys of [model] and [training], and the model's training rules.
  void check_model() {
    if (!has("training.grad_reduce_dtype")) {
      // fp16 runs reduce in fp16 (Megatron's fp16 main gradients); DeepSpeed reduces in the model's 16-bit
      // type (engine.communication_data_type); the others in fp32 (Megatron --accumulate-allreduce-grads-in-fp32
      // with bf16, torchtitan mixed_precision_reduce = float32).
      const std::string precision = get_string("training.precision");
      std::string dtype = "fp32";
      if (precision == "fp16") {
        dtype = "fp16";
      } else if (get_string("training.framework") == "deepspeed" && (precision == "bf16" || precision == "fp8")) {
        dtype = "bf16";
      }
      set("training.grad_reduce_dtype", dtype);
    }
    // Given explicitly without sequence parallelism: an error. From a framework profile: it applies only where
    // sequence parallelism is on (the model ignores it otherwise).
    if (find_node("parallelism", "tp_comm_overlap") != nullptr && get_bool("parallelism.tp_comm_overlap") &&
        !get_bool("parallelism.sequence_parallel") && get_int("parallelism.tensor") > 1) {
      fail_at("parallelism.tp_comm_overlap", "overlaps the all-gathers and reduce-scatters of sequence "
                                             "parallelism: needs parallelism.sequence_parallel = true");
    }
    check_model_shape();
    const int64_t experts = get_int("model.num_experts");
    if (experts > 0) {
      const std::string framework = get_string("training.framework");
      if (framework != "megatron-core" && framework != "nemo") {
        fail_at("model.num_experts", "MoE is modelled as Megatron-Core runs it: needs training.framework "
                                     "megatron-core or nemo, got " + framework);
      }
      if (get_int("model.num_dense_layers_first") >= get_int("model.num_layers")) {
        fail_at("model.num_dense_layers_first", "must leave an MoE layer: fewer than model.num_layers (" +
                                                    std::to_string(get_int("model.num_layers")) + ")");
      }
    }
    if (get_int("model.mtp_num_layers") > 0) {
      const std::string framework = get_string("training.framework");
      if (framework != "megatron-core" && framework != "nemo") {
        fail_at("model.mtp_num_layers", "multi-token prediction is modelled as Megatron-Core runs it: needs "
                                        "training.framework megatron-core or nemo, got " + framework);
      }
    }
  }

  /// A serving scenario's cross-checks (load_serving_scenario).
  void check_serving(const models::Catalog& catalog) {
    check_model_shape();
    if (get_bool("model.multi_latent_attention")) {
      fail_at("model.multi_latent_attention", "multi-latent attention is not modelled for serving yet");
    }
    if (get_int("model.mtp_num_layers") > 0) {
      fail_at("model.mtp_num_layers", "multi-token prediction is not modelled for serving");
    }
    const models::VmSize& vm = vm_size_of("serving.vm_size", catalog);
    const models::DeviceSpec& device = catalog.device(vm.device);
    const int64_t t = get_int("serving.tensor");
    const int64_t heads = get_int("model.num_attention_heads"), groups = get_int("model.num_query_groups");
    if (heads % t != 0) {
      fail_at("serving.tensor", "must divide model.num_attention_heads (" + std::to_string(heads) + "), got " +
                                    std::to_string(t));
    }
    if (groups % t != 0 && t % groups != 0) {
      fail_at("serving.tensor", "must divide, or be a multiple of, model.num_query_groups (" +
                                    std::to_string(groups) + "), got " + std::to_string(t));
    }
    if (get_int("model.ffn_hidden_size") % t != 0) {
      fail_at("serving.tensor", "must divide model.ffn_hidden_size (" +
                                    std::to_string(get_int("model.ffn_hidden_size")) + "), got " + std::to_string(t));
    }
    if (get_int("model.num_experts") > 0) {
      // Tensor-parallel experts: each expert's MLP (and the shared expert's) is split t ways.
      for (const char* k : {"model.moe_ffn_hidden_size", "model.moe_shared_expert_intermediate_size"}) {
        if (get_int(k) % t != 0) {
          fail_at("serving.tensor", "must divide " + std::string(k) + " (" + std::to_string(get_int(k)) +
                                        "): a replica splits each expert over its tensor-parallel GPUs, got " +
                                        std::to_string(t));
        }
      }
    }
    const int64_t stages = get_int("serving.pipeline");
    if (stages > 1) {
      if (stages > get_int("model.num_layers")) {
        fail_at("serving.pipeline", "must not exceed model.num_layers (" + std::to_string(get_int("model.num_layers")) +
                                        "), got " + std::to_string(stages));
      }
      if (t * stages > vm.devices_per_vm && vm.devices_per_vm % t != 0) {
        fail_at("serving.pipeline", "the replica's " + std::to_string(t * stages) + " GPUs span VMs of " +
                                        std::to_string(vm.devices_per_vm) + " GPUs, and a tensor-parallel group of " +
                                        std::to_string(t) + " would straddle two: use a tensor that divides " +
                                        std::to_string(vm.devices_per_vm));
      }
      for (const char* k : {"serving.min_replicas", "serving.zone_outage_start_s"}) {
        if (has(k)) fail_at(k, "not modelled with serving.pipeline > 1 yet");
      }
      if (get_int("serving.spot_replicas") > 0) {
        fail_at("serving.spot_replicas", "not modelled with serving.pipeline > 1 yet");
      }
    }
    // At most a whole domain: a replica takes ceil(tensor / GPUs per VM) VMs of one rack, whatever the rest of
    // the rack runs (serving has no cluster.vms_per_nvlink_domain).
    const int64_t domain = vm.domain_gpus(vm.nvlink_domain_vms, std::nullopt);
    if (t > domain) {
      fail_at("serving.tensor", "a replica's tensor-parallel GPUs share one NVLink domain: at most " +
                                    std::to_string(domain) + " on " + vm.name + ", got " + std::to_string(t));
    }
    const std::string precision = get_string("serving.precision");
    const models::ServingNumerics numerics =
        models::serving_numerics(precision, get_string("serving.kv_cache_dtype") == "fp8");
    for (const models::Precision math : {numerics.math, numerics.activations()}) {
      const auto peak = device.peak.find(math);
      if (peak == device.peak.end() || !(peak->second.value() > 0.0)) {
        fail_at("serving.precision", "the " + vm.device + " of " + vm.name + " has no " +
                                         std::string(models::to_string(math)) + " math (serving.precision = \"" +
                                         precision + "\")");
      }
    }
    const bool trace = has("workload.trace");
    const std::string arrival = get_string("workload.arrival");
    const bool rated = arrival == "poisson" || arrival == "gamma";
    if (trace) {
      for (const char* k : {"workload.rate_per_s", "workload.requests", "workload.concurrency"}) {
        if (has(k)) fail_at(k, "a trace gives the requests: drop workload.trace or this key");
      }
    } else if (rated && !has("workload.rate_per_s")) {
      fail("workload.rate_per_s", table_loc("workload"),
           "give workload.trace, or a synthetic stream's rate_per_s (arrival = \"" + arrival + "\")");
    } else if (!rated) {
      if (has("workload.rate_per_s")) {
        fail_at("workload.rate_per_s", "arrival = \"" + arrival + "\" takes no rate: the requests are sent " +
                                           (arrival == "offline" ? "at once" : "as earlier ones finish"));
      }
      if (!has("workload.requests")) {
        fail("workload.requests", table_loc("workload"), "required with arrival = \"" + arrival + "\"");
      }
    }
    if (arrival == "closed_loop" && !has("workload.concurrency")) {
      fail("workload.concurrency", table_loc("workload"), "required with arrival = \"closed_loop\"");
    }
    if (arrival != "closed_loop" && has("workload.concurrency")) {
      fail_at("workload.concurrency", "only a closed loop (arrival = \"closed_loop\") has a concurrency");
    }
    if (const toml::table* ref = resolved_table("reference"); ref != nullptr) {
      if (!ref->contains("metric") || !ref->contains("value")) {
        fail(ref->contains("metric") ? "reference.value" : "reference.metric", table_loc("reference"),
             "a serving scenario's [reference] needs metric and value");
      }
    }
    // A trace is read now (its budgets, its longest prompt); it runs whole unless workload.duration_s is given.
    detail::TraceFacts facts;
    const bool windowed = find_node("workload", "duration_s") != nullptr;
    const auto report = [this](const std::optional<detail::KeyViolation>& v) {
      if (v && v->at_table) fail(v->key, table_loc(v->key.substr(0, v->key.find('.'))), v->message);
      if (v) fail_at(v->key, v->message);
    };
    if (trace) {
      report(detail::read_trace_facts(path_.parent_path() / get_string("workload.trace"),
                                      windowed ? get_optional_double("workload.duration_s") : std::nullopt,
                                      get_int("model.seq_length"), facts));
    }
    const double window_s = trace && !windowed ? facts.last_arrival_s : get_double("workload.duration_s");
    for (const std::string which : {"prompt", "output"}) report(detail::check_length_keys(which, length_keys(which)));
    report(detail::check_prompt_fits_batch(
        trace ? std::optional(facts.longest_prompt_tokens)
              : detail::longest_prompt_tokens(length_keys("prompt"), get_int("model.seq_length")),
        trace ? "in the trace" : "workload.prompt", get_int("serving.max_num_batched_tokens"),
        get_bool("serving.chunked_prefill")));
    // The weights must leave a KV cache (InferenceModel::kv_cache_tokens, vLLM's memory profile).
    {
      const auto free_comm = [](units::Bytes) { return units::Seconds(0.0); };
      const models::InferenceModel model(model_keys(), numerics, t, device, vm.device_share, free_comm, {},
                                         {stages, free_comm});
      if (model.kv_cache_tokens(models::kv_cache_budget(
              get_string("serving.engine"), get_double("serving.gpu_memory_utilization"),
              get_int("serving.max_num_batched_tokens"), get_int("serving.max_num_seqs"),
              get_int("serving.block_size"))) / stages < get_int("serving.block_size")) {
        fail_at("serving.tensor", "the weights (" + std::to_string(static_cast<int64_t>(
                                                        model.weight_bytes_per_gpu().value() / 1073741824.0 + 0.5)) +
                                      " GiB per GPU at tensor " + std::to_string(t) +
                                      (stages > 1 ? " x pipeline " + std::to_string(stages) : std::string()) +
                                      ") leave no KV cache on the " + vm.device +
                                      ": raise serving.tensor (or serving.pipeline) or gpu_memory_utilization, or "
                                      "choose a larger GPU");
      }
    }
    // The simulation's budget: at most 2 million requests and 200 million output tokens (each about 10 s of one
    // core: bench_serving simulates 360,518 requests of 264 output tokens on average in 2.5-3.8 s), and 1 million
    // samples of the time series over the workload's duration.
    if (!trace) {
      const double requests = has("workload.requests")
                                  ? static_cast<double>(get_int("workload.requests"))
                                  : get_double("workload.rate_per_s") * get_double("workload.duration_s");
      if (requests > 2e6) {
        fail_at("workload.rate_per_s", "rate x duration = " + std::to_string(static_cast<int64_t>(requests)) +
                                           " requests, above the simulation's budget of 2,000,000");
      }
      const std::string kind = get_string("workload.output");
      const double seq = static_cast<double>(get_int("model.seq_length"));
      double mean_output = static_cast<double>(get_int("workload.output_tokens"));
      if (kind == "uniform") mean_output = static_cast<double>(get_int("workload.output_max"));
      if (kind == "lognormal") {
        const double sigma = get_double("workload.output_sigma");
        mean_output *= std::exp(std::min(sigma * sigma / 2.0, 50.0));
        if (has("workload.output_max")) {
          mean_output = std::min(mean_output, static_cast<double>(get_int("workload.output_max")));
        }
      }
      if (requests * std::min(mean_output, seq) > 2e8) {
        fail_at("workload.rate_per_s", "about " + std::to_string(static_cast<int64_t>(requests * std::min(mean_output, seq))) +
                                           " output tokens, above the simulation's budget of 200,000,000");
      }
    }
    const double span_s = !trace && has("workload.requests") && rated
                              ? static_cast<double>(get_int("workload.requests")) / get_double("workload.rate_per_s")
                              : window_s;
    if (span_s / get_double("serving.sample_interval_s") > 1e6) {
      fail_at("serving.sample_interval_s", "more than 1,000,000 samples over the workload's duration");
    }
    // Autoscaling: min_replicas and max_replicas together, min <= replicas <= max; spot replicas of a fixed fleet.
    if (has("serving.min_replicas") != has("serving.max_replicas")) {
      const std::string missing = has("serving.min_replicas") ? "serving.max_replicas" : "serving.min_replicas";
      fail(missing, table_loc("serving"), "autoscaling needs both serving.min_replicas and serving.max_replicas");
    }
    if (has("serving.max_replicas")) {
      const int64_t lo = get_int("serving.min_replicas"), hi = get_int("serving.max_replicas");
      const int64_t r = get_int("serving.replicas");
      if (lo > hi) fail_at("serving.min_replicas", "must not exceed serving.max_replicas (" + std::to_string(hi) + ")");
      if (r < lo || r > hi) {
        fail_at("serving.replicas", "the replicas at time 0 must be within [min_replicas, max_replicas] = [" +
                                        std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(r));
      }
      if (get_int("serving.spot_replicas") > 0) {
        fail_at("serving.spot_replicas", "spot replicas with autoscaling are not modelled yet: give a fixed fleet");
      }
    }
    report(detail::check_fleet_budget(
        {has("serving.max_replicas") ? get_int("serving.max_replicas") : get_int("serving.replicas"),
         has("serving.max_replicas"), get_int("serving.pipeline"), window_s, get_double("serving.autoscale_interval_s"),
         get_int("serving.spot_replicas"), get_double("serving.spot_eviction_rate_per_hour")}));
    {
      // Zones: at most one per replica slot; an outage loses one of several.
      const int64_t slots = has("serving.max_replicas") ? get_int("serving.max_replicas") : get_int("serving.replicas");
      if (get_int("serving.zones") > slots) {
        fail_at("serving.zones", "more zones than replicas (" + std::to_string(slots) + ")");
      }
      if (has("serving.zone_outage_duration_s") && !has("serving.zone_outage_start_s")) {
        fail_at("serving.zone_outage_duration_s", "needs serving.zone_outage_start_s");
      }
      if (has("serving.zone_outage_start_s") && get_int("serving.zones") < 2) {
        fail_at("serving.zone_outage_start_s", "losing the only zone stops the whole fleet: give serving.zones >= 2");
      }
    }
    if (get_int("serving.spot_replicas") > get_int("serving.replicas")) {
      fail_at("serving.spot_replicas", "must not exceed serving.replicas (" +
                                           std::to_string(get_int("serving.replicas")) + ")");
    }
    serving_price_ = vm.price_usd_per_hour;
    const models::EngineProfile& engine = models::engine_profile(get_string("serving.engine"));
    set("serving.engine", std::string(engine.name));  // an alias resolves to the release it stands for
    if (get_int("serving.scheduler_steps") > 1 && !engine.multi_step) {
      fail_at("serving.scheduler_steps", "multi-step scheduling is vLLM v0.6-v0.7's (serving.engine = \"vllm-0.6\"); " +
                                             std::string(engine.name) + " schedules every iteration");
    }
    if (!has("serving.engine_overhead_ms")) {
      set("serving.engine_overhead_ms", engine.overhead.fixed.value() * 1e3);
    }
    if (!has("serving.engine_overhead_per_sequence_us")) {
      set("serving.engine_overhead_per_sequence_us", engine.overhead.per_sequence.value() * 1e6);
    }
    if (!has("serving.capacity_scheduler_policy")) {
      set("serving.capacity_scheduler_policy",
          std::string(models::kCapacityPolicyNames[static_cast<size_t>(engine.admission)]));
    }
  }

  /// The keys of workload.<which> (prompt | output) as resolved.
  [[nodiscard]] detail::LengthKeys length_keys(const std::string& which) const {
    const std::string key = "workload." + which;
    detail::LengthKeys k{get_string(key), get_int(key + "_tokens"), std::nullopt, std::nullopt,
                         get_double(key + "_sigma")};
    if (has(key + "_min")) k.min = get_int(key + "_min");
    if (has(key + "_max")) k.max = get_int(key + "_max");
    return k;
  }

  /// The serving scenario (after check_serving).
  [[nodiscard]] ServingScenario build_serving() const {
    ServingScenario s;
    s.schema_version = get_int("schema_version");
    s.name = get_string("name");
    if (has("description")) s.description = get_string("description");
    s.model = model_keys();
    ServingFleetConfig& f = s.serving;
    f.vm_size = get_string("serving.vm_size");
    f.replicas = get_int("serving.replicas");
    f.tensor = get_int("serving.tensor");
    f.pipeline = get_int("serving.pipeline");
    f.precision = get_string("serving.precision");
    f.kv_cache_fp8 = get_string("serving.kv_cache_dtype") == "fp8";
    f.max_num_seqs = get_int("serving.max_num_seqs");
    f.max_num_batched_tokens = get_int("serving.max_num_batched_tokens");
    f.chunked_prefill = get_bool("serving.chunked_prefill");
    f.block_size = get_int("serving.block_size");
    f.gpu_memory_utilization = get_double("serving.gpu_memory_utilization");
    f.routing = get_string("serving.routing");
    f.engine = get_string("serving.engine");
    f.scheduler_steps = get_int("serving.scheduler_steps");
    f.capacity_scheduler_policy = get_string("serving.capacity_scheduler_policy");
    f.engine_overhead_ms = get_double("serving.engine_overhead_ms");
    f.engine_overhead_per_sequence_us = get_double("serving.engine_overhead_per_sequence_us");
    f.sample_interval_s = get_double("serving.sample_interval_s");
    f.vm_price_usd_per_hour = serving_price_;
    if (has("serving.min_replicas")) f.min_replicas = get_int("serving.min_replicas");
    if (has("serving.max_replicas")) f.max_replicas = get_int("serving.max_replicas");
    f.target_outstanding_per_replica = get_double("serving.target_outstanding_per_replica");
    f.autoscale_interval_s = get_double("serving.autoscale_interval_s");
    f.scale_down_window_s = get_double("serving.scale_down_window_s");
    f.provisioning_s = get_double("serving.provisioning_s");
    f.spot_replicas = get_int("serving.spot_replicas");
    f.spot_eviction_rate_per_hour = get_double("serving.spot_eviction_rate_per_hour");
    f.spot_reprovision_mean_s = get_double("serving.spot_reprovision_mean_s");
    f.spot_notice_s = get_double("serving.spot_notice_s");
    f.spot_discount = get_double("serving.spot_discount");
    f.zones = get_int("serving.zones");
    f.zone_outage_start_s = get_optional_double("serving.zone_outage_start_s");
    f.zone_outage_duration_s = get_optional_double("serving.zone_outage_duration_s");
    WorkloadConfig& w = s.workload;
    if (has("workload.trace")) w.trace = path_.parent_path() / get_string("workload.trace");
    w.duration_s = get_double("workload.duration_s");
    w.duration_given = find_node("workload", "duration_s") != nullptr;
    w.arrival = get_string("workload.arrival");
    if (has("workload.rate_per_s")) w.rate_per_s = get_double("workload.rate_per_s");
    w.arrival_cv = get_double("workload.arrival_cv");
    if (has("workload.requests")) w.requests = get_int("workload.requests");
    if (has("workload.concurrency")) w.concurrency = get_int("workload.concurrency");
    for (auto [which, length] : {std::pair{std::string("prompt"), &w.prompt}, std::pair{std::string("output"), &w.output}}) {
      const detail::LengthKeys k = length_keys(which);
      *length = LengthConfig{k.kind, k.tokens, k.min, k.max, k.sigma};
    }
    s.slo.ttft_p99_ms = get_optional_double("slo.ttft_p99_ms");
    s.slo.tpot_p99_ms = get_optional_double("slo.tpot_p99_ms");
    if (resolved_table("reference") != nullptr) {
      ServingReference r;
      r.metric = get_string("reference.metric");
      r.value = get_double("reference.value");
      r.source = get_string("reference.source");
      if (has("reference.dataset")) r.dataset = get_string("reference.dataset");
      if (has("reference.exclude_reason")) r.exclude_reason = get_string("reference.exclude_reason");
      s.reference = r;
    }
    s.seed = static_cast<uint64_t>(get_int("simulation.seed"));
    s.source_path = path_;
    s.resolved_toml = resolved_text();
    return s;
  }

  /// [job]: exactly one of train_tokens and steps; at most one checkpoint interval; a price for the VM.
  void check_job(const models::Catalog& catalog) {
    if (resolved_table("job") == nullptr) {
      for (const char* t : {"reliability", "cost"}) {
        if (doc_.get(t) != nullptr) fail(t, table_loc(t), "needs a [job] table (train_tokens or steps)");
      }
      return;
    }
    const bool tokens = has("job.train_tokens"), steps = has("job.steps");
    if (tokens == steps) fail("job", table_loc("job"), "give exactly one of train_tokens and steps");
    if (has("reliability.checkpoint_interval_minutes") && has("reliability.checkpoint_interval_steps")) {
      fail_at("reliability.checkpoint_interval_steps", "give checkpoint_interval_minutes or _steps, not both");
    }
    if (!has("cost.vm_price_usd_per_hour")) {
      const auto& vm = catalog.vm_size(get_string("cluster.vm_size"));
      if (!vm.price_usd_per_hour) {
        fail("cost.vm_price_usd_per_hour", table_loc("cost"),
             "required: the catalog has no price for " + vm.name);
      }
      set("cost.vm_price_usd_per_hour", *vm.price_usd_per_hour);
    }
    if (has("reliability.spot_eviction_trace")) {
      if (!get_bool("reliability.spot")) fail_at("reliability.spot_eviction_trace", "needs reliability.spot = true");
      const std::filesystem::path trace = path_.parent_path() / get_string("reliability.spot_eviction_trace");
      try {
        eviction_trace_ = read_eviction_trace(trace, kMaxEvictionTraceEvents / get_int("job.replications"));
      } catch (const InputFileError& e) {
        fail_at("reliability.spot_eviction_trace", "cannot read the eviction trace '" + trace.string() + "': it " +
                                                       e.what());
      }
    }
  }

  void check_reference() {
    const toml::table* ref = resolved_table("reference");
    if (ref == nullptr) return;
    if (!ref->contains("tflops_per_gpu") && !ref->contains("step_time_s") && !ref->contains("mfu") &&
        !ref->contains("tokens_per_s_per_gpu")) {
      fail("reference", table_loc("reference"),
           "needs at least one of tflops_per_gpu, step_time_s, tokens_per_s_per_gpu, mfu");
    }
  }

  /// Parallelism checks that need no catalog: the schedule's, then the layout's (models::layout_problem).
  void check_parallelism_shape() {
    const int64_t v = get_int("parallelism.virtual_stages");
    if (v > 1 && get_string("parallelism.schedule") == "gpipe") {
      fail_at("parallelism.schedule", "gpipe has no interleaved form: virtual_stages must be 1, got " +
                                          std::to_string(v));
    }
    if (const auto problem = models::layout_problem(layout_keys(), model_keys())) {
      fail_at(problem->key, problem->message);
    }
  }

  /// [parallelism] as its keys give it so far (data 1 until check_cluster derives it): the layout rules' input
  /// and, complete, the scenario's.
  [[nodiscard]] models::ParallelismConfig layout_keys() const {
    models::ParallelismConfig p;
    p.tensor = get_int("parallelism.tensor");
    p.context = get_int("parallelism.context");
    p.context_comm = *models::parse_context_comm(get_string("parallelism.cp_comm_type"));
    p.pipeline = get_int("parallelism.pipeline");
    if (has("parallelism.data")) p.data = get_int("parallelism.data");
    p.virtual_stages = get_int("parallelism.virtual_stages");
    p.sequence_parallel = get_bool("parallelism.sequence_parallel");
    p.zero_stage = get_int("parallelism.zero_stage");
    p.overlap_grad_reduce = get_bool("parallelism.overlap_grad_reduce");
    p.overlap_param_gather = get_bool("parallelism.overlap_param_gather");
    p.overlap_p2p_comm = get_bool("parallelism.overlap_p2p_comm");
    p.async_tensor_parallel_allreduce = get_bool("parallelism.async_tensor_parallel_allreduce");
    p.tp_comm_overlap = get_bool("parallelism.tp_comm_overlap");
    p.expert = get_int("parallelism.expert");
    p.expert_tensor = get_int("parallelism.expert_tensor");
    p.first_stage_layers = get_int("parallelism.first_stage_layers");
    p.last_stage_layers = get_int("parallelism.last_stage_layers");
    return p;
  }

  /// [model] as its keys give it (the derived widths once check_model has set them): the layout rules' input
  /// and, complete, the scenario's.
  [[nodiscard]] models::ModelConfig model_keys() const {
    models::ModelConfig m;
    m.num_layers = get_int("model.num_layers");
    m.hidden_size = get_int("model.hidden_size");
    m.num_attention_heads = get_int("model.num_attention_heads");
    if (has("model.num_query_groups")) m.num_query_groups = get_int("model.num_query_groups");
    if (has("model.ffn_hidden_size")) m.ffn_hidden_size = get_int("model.ffn_hidden_size");
    m.vocab_size = get_int("model.vocab_size");
    m.seq_length = get_int("model.seq_length");
    m.gated_mlp = get_string("model.mlp") == "swiglu";
    m.rope = get_string("model.position_embedding") == "rope";
    m.dropout = get_double("model.dropout");
    m.tie_embeddings = get_bool("model.tie_embeddings");
    if (has("model.kv_channels")) m.kv_channels = get_int("model.kv_channels");
    m.multi_latent_attention = get_bool("model.multi_latent_attention");
    m.q_lora_rank = get_int("model.q_lora_rank");
    m.kv_lora_rank = get_int("model.kv_lora_rank");
    m.qk_head_dim = get_int("model.qk_head_dim");
    m.qk_pos_emb_head_dim = get_int("model.qk_pos_emb_head_dim");
    m.v_head_dim = get_int("model.v_head_dim");
    m.num_experts = get_int("model.num_experts");
    m.moe_router_topk = get_int("model.moe_router_topk");
    if (has("model.moe_ffn_hidden_size")) m.moe_ffn_hidden_size = get_int("model.moe_ffn_hidden_size");
    m.moe_shared_expert_intermediate_size = get_int("model.moe_shared_expert_intermediate_size");
    m.moe_layer_freq = get_int("model.moe_layer_freq");
    m.num_dense_layers_first = get_int("model.num_dense_layers_first");
    m.mtp_num_layers = get_int("model.mtp_num_layers");
    return m;
  }

  /// The VM size, the GPU count and the data-parallel degree (derived when omitted).
  /// The catalog's VM size named by `key`, or a located error listing the closest names.
  const models::VmSize& vm_size_of(const std::string& key, const models::Catalog& catalog) const {
    const std::string vm_name = get_string(key);
    try {
      return catalog.vm_size(vm_name);
    } catch (const std::out_of_range&) {
      std::vector<std::string> names;
      for (const auto& [n, ignored] : catalog.vm_sizes()) names.push_back(n);
      fail_at(key, "unknown VM size '" + vm_name + "' (" + std::to_string(names.size()) +
                       " in the catalog; closest: " + closest_names(vm_name, names, 5) + ")");
    }
  }

  void check_cluster(const models::Catalog& catalog) {
    const std::string vm_name = get_string("cluster.vm_size");
    const models::VmSize* vm = &vm_size_of("cluster.vm_size", catalog);
    catalog_price_ = vm->price_usd_per_hour;
    const int64_t nodes = get_int("cluster.nodes");
    if (has("cluster.zones")) {
      int64_t sum = 0;
      for (const toml::node& z : *resolved_node("cluster.zones")->as_array()) {
        sum += z.as_table()->get("nodes")->as_integer()->get();
      }
      if (sum != nodes) {
        fail_at("cluster.zones", "zone node counts sum to " + std::to_string(sum) + ", but cluster.nodes = " +
                                     std::to_string(nodes));
      }
    }
    if (const std::string why = models::fat_tree_radix_error(get_int("cluster.fat_tree_radix")); !why.empty()) {
      fail_at("cluster.fat_tree_radix", why);
    }
    // GB200 NVL72: the VMs must make whole NVLink domains (of the VMs per domain the job uses), none across zones.
    std::optional<int64_t> per_domain;
    if (has("cluster.vms_per_nvlink_domain")) {
      per_domain = get_int("cluster.vms_per_nvlink_domain");
      if (const std::string why = vm->domain_use_problem(*per_domain); !why.empty()) {
        fail_at("cluster.vms_per_nvlink_domain", why);
      }
    }
    {
      std::vector<int64_t> zone_nodes;
      if (has("cluster.zones")) {
        for (const toml::node& z : *resolved_node("cluster.zones")->as_array()) {
          zone_nodes.push_back(z.as_table()->get("nodes")->as_integer()->get());
        }
      }
      if (const std::string why = vm->domain_problem(nodes, per_domain, zone_nodes); !why.empty()) {
        fail_at(nodes % vm->domain_vms(nodes, per_domain) == 0 ? "cluster.zones" : "cluster.nodes", why);
      }
    }
    if (get_string("network.all_reduce_algorithm") == "nvls" &&
        (nodes != vm->domain_vms(nodes, per_domain) || !vm->nccl.nvls_efficiency)) {
      fail_at("network.all_reduce_algorithm",
              "nvls needs one node (one NVLink domain) of a VM size with NVLink SHARP (H100/H200 NVSwitch), got " +
                  std::to_string(nodes) + " × " + vm_name);
    }
    const int64_t per_vm = vm->devices_per_vm;
    const int64_t gpus = checked_mul(nodes, per_vm, "cluster.nodes");
    const std::string cluster_text = std::to_string(gpus) + " GPUs (" + std::to_string(nodes) + " VMs × " +
                                     std::to_string(per_vm) + " per " + vm_name + ")";
    // The sizes of the dimensions other than data, as written ("tensor × pipeline", "tensor × context ×
    // pipeline" when context parallelism is on), and their product.
    const int64_t t = get_int("parallelism.tensor");
    const int64_t c = get_int("parallelism.context");
    const int64_t p = get_int("parallelism.pipeline");
    const int64_t tc = checked_mul(t, c, "parallelism.context");
    const int64_t tp = checked_mul(tc, p, "parallelism.pipeline");
    const std::string names = c > 1 ? "tensor × context × pipeline" : "tensor × pipeline";
    const std::string sizes = std::to_string(t) + (c > 1 ? " × " + std::to_string(c) : "") + " × " + std::to_string(p);
    if (has("parallelism.data")) {
      const int64_t d = get_int("parallelism.data");
      const int64_t tpd = checked_mul(tp, d, "parallelism.data");
      if (tpd != gpus) {
        fail_at("parallelism.data", names + " × data = " + sizes + " × " + std::to_string(d) + " = " +
                                        std::to_string(tpd) + ", but the cluster has " + cluster_text);
      }
    } else {
      if (gpus % t != 0) {
        fail_at("parallelism.tensor",
                "tensor = " + std::to_string(t) + " does not divide the cluster's " + cluster_text);
      }
      if (gpus % tc != 0) {
        fail_at("parallelism.context", "tensor × context = " + std::to_string(t) + " × " + std::to_string(c) +
                                           " = " + std::to_string(tc) + " does not divide the cluster's " +
                                           cluster_text);
      }
      if (gpus % tp != 0) {
        fail_at("parallelism.pipeline", names + " = " + sizes + " = " + std::to_string(tp) +
                                            " does not divide the cluster's " + cluster_text);
      }
      set("parallelism.data", gpus / tp);
    }
    const int64_t d = get_int("parallelism.data");
    // The MoE layers' folded layout, now that data is known.
    if (const auto problem = models::expert_layout_problem(layout_keys(), model_keys())) {
      fail_at(problem->key, problem->message);
    }
    // A list other than the default only means something with selective recompute (the resolved file, which
    // writes the default, reloads).
    const toml::array& modules = *resolved_node("training.recompute_modules")->as_array();
    const bool default_modules = modules.size() == 1 && modules[0].as_string()->get() == "core_attn";
    if (!default_modules && get_string("training.activation_recompute") != "selective") {
      fail_at("training.recompute_modules", "applies to training.activation_recompute = \"selective\", got \"" +
                                                get_string("training.activation_recompute") + "\"");
    }
    if (get_bool("training.moe_a2a_overlap")) {
      // Megatron-Core's checks for --overlap-moe-expert-parallel-comm (TransformerConfig).
      const auto refuse = [&](const std::string& why) { fail_at("training.moe_a2a_overlap", why); };
      if (get_int("parallelism.expert") < 2) refuse("needs parallelism.expert > 1");
      if (get_string("training.moe_token_dispatcher") == "allgather") refuse("needs the alltoall or flex dispatcher");
      if (get_int("parallelism.pipeline") > 1 && get_int("parallelism.virtual_stages") < 2) {
        refuse("needs parallelism.virtual_stages > 1 with pipeline parallelism (Megatron-Core merges the passes "
               "of the interleaved schedule)");
      }
      if (get_string("training.activation_recompute") == "full") refuse("does not run with full recompute");
      if (get_bool("training.moe_shared_expert_overlap")) refuse("replaces training.moe_shared_expert_overlap");
    }
    if (get_string("training.moe_token_dispatcher") == "flex" && get_int("parallelism.expert_tensor") != 1) {
      fail_at("training.moe_token_dispatcher", "flex (DeepEP) dispatches over the expert-parallel group only: it "
                                               "needs parallelism.expert_tensor = 1, got " +
                                                   std::to_string(get_int("parallelism.expert_tensor")));
    }
    if (get_bool("training.moe_pad_expert_input_to_capacity") &&
        get_double("training.moe_expert_capacity_factor") <= 0.0) {
      fail_at("training.moe_pad_expert_input_to_capacity", "needs training.moe_expert_capacity_factor > 0 (padding "
                                                            "is to the experts' capacity)");
    }
    const int64_t b = get_int("training.global_batch_size");
    const int64_t mb = get_int("training.micro_batch_size");
    checked_mul(mb, d, "training.micro_batch_size");
    if (const std::string why = models::batch_split_error(b, mb, d); !why.empty()) {
      fail_at("training.global_batch_size", why);
    }
    const int64_t v = get_int("parallelism.virtual_stages");
    if (v > 1 && (b / (mb * d)) % p != 0) {
      fail_at("training.global_batch_size",
              "interleaved 1F1B (virtual_stages = " + std::to_string(v) + ") needs the microbatches of a pipeline, " +
                  "global_batch_size / (micro_batch_size × data) = " + std::to_string(b / (mb * d)) +
                  ", divisible by pipeline (" + std::to_string(p) + ")");
    }
    const models::DeviceSpec& device = catalog.device(vm->device);
    const std::string precision = get_string("training.precision");
    const auto mode = device.peak.find(*models::parse_precision(precision));
    if (mode == device.peak.end() || !(mode->second.value() > 0.0)) {
      std::string supported;
      for (const auto& [pr, rate] : device.peak) {
        if (rate.value() > 0.0) supported += (supported.empty() ? "" : ", ") + std::string(models::to_string(pr));
      }
      fail_at("training.precision", "the VM's " + vm->device + " has no " + precision + " mode (it has: " +
                                        supported + ")");
    }
    check_step_size(*vm, catalog, gpus);
  }

  /// The simulation's own limits on one step (docs/scenario-format.md, "Limits"), located at
  /// training.global_batch_size: (1) the step simulation keeps every pass of one pipeline, microbatches x
  /// pipeline x virtual_stages of them, each a few hundred bytes: at most kMaxPipelinePasses; (2) the engine's
  /// clock holds 2^63 ns (292 years): the step's model FLOPs (model_flops_per_iteration, a lower bound of the
  /// work) at the GPUs' dense peak must take at most kMaxStepAtPeak, which leaves a factor of 292 for
  /// efficiencies below peak.
  void check_step_size(const models::VmSize& vm, const models::Catalog& catalog, int64_t gpus) {
    constexpr double kMaxPipelinePasses = 1048576.0;  // 2^20: about 0.6 GB and seconds
    constexpr double kMaxStepAtPeakSeconds = 365.25 * 86400.0;       // one year
    const int64_t b = get_int("training.global_batch_size");
    const int64_t mb = get_int("training.micro_batch_size");
    const int64_t d = get_int("parallelism.data");
    const double microbatches = static_cast<double>(b / (mb * d));
    const double passes = microbatches * static_cast<double>(get_int("parallelism.pipeline")) *
                          static_cast<double>(get_int("parallelism.virtual_stages"));
    if (passes > kMaxPipelinePasses) {
      fail_at("training.global_batch_size",
              "microbatches × pipeline × virtual_stages = " + detail::format_number(passes) +
                  " passes of one pipeline, more than the step simulation keeps (bound: 2^20 = 1,048,576, about "
                  "0.6 GB); raise micro_batch_size or lower global_batch_size");
    }
    models::TrainingConfig tr;
    tr.global_batch_size = b;
    const double flops = models::model_flops_per_iteration(model_keys(), tr).value();
    const models::DeviceSpec& device = catalog.device(vm.device);
    double peak = 0.0;
    for (const auto& [precision, rate] : device.peak) peak = std::max(peak, rate.value());
    const double at_peak_s = flops / (static_cast<double>(gpus) * vm.device_share * peak);
    if (!(at_peak_s <= kMaxStepAtPeakSeconds)) {
      char text[160];
      std::snprintf(text, sizeof text, "one step is %.3g FLOP of model work: %.3g years at the %lld GPUs' peak",
                    flops, at_peak_s / kMaxStepAtPeakSeconds, static_cast<long long>(gpus));
      fail_at("training.global_batch_size",
              std::string(text) + " (bound: one year at peak, so that the simulated step stays within the "
                                  "engine's 292-year clock)");
    }
  }

  [[nodiscard]] Scenario build() const {
    Scenario s;
    s.schema_version = get_int("schema_version");
    s.name = get_string("name");
    s.description = get_string("description");
    s.model = model_keys();
    for (const char* key : {"training.global_batch_size", "network.all_reduce_algorithm", "job.replications"}) {
      const Loc at = loc_of(key);
      s.locations[key] = {at.file, at.line, at.column};
    }
    s.training.moe_token_dispatcher = *models::parse_moe_dispatcher(get_string("training.moe_token_dispatcher"));
    s.training.moe_router_load_balancing =
        *models::parse_moe_balance(get_string("training.moe_router_load_balancing"));
    s.training.moe_expert_capacity_factor = get_double("training.moe_expert_capacity_factor");
    s.training.moe_pad_expert_input_to_capacity = get_bool("training.moe_pad_expert_input_to_capacity");
    s.training.moe_router_fusion = get_bool("training.moe_router_fusion");
    s.training.moe_grouped_gemm = get_bool("training.moe_grouped_gemm");
    s.training.moe_shared_expert_overlap = get_bool("training.moe_shared_expert_overlap");
    s.training.moe_a2a_overlap = get_bool("training.moe_a2a_overlap");
    s.training.global_batch_size = get_int("training.global_batch_size");
    s.training.micro_batch_size = get_int("training.micro_batch_size");
    s.training.precision = *models::parse_precision(get_string("training.precision"));
    s.training.activation_recompute = *models::parse_recompute(get_string("training.activation_recompute"));
    s.training.flash_attention = get_bool("training.flash_attention");
    s.training.attention_kernel = *models::parse_attention_kernel(get_string("training.attention_kernel"));
    s.training.gradient_accumulation_fusion = get_bool("training.gradient_accumulation_fusion");
    s.training.kernel_fusion = *models::parse_kernel_fusion(get_string("training.kernel_fusion"));
    s.training.framework = *models::parse_framework(get_string("training.framework"));
    s.training.grad_reduce = *models::parse_precision(get_string("training.grad_reduce_dtype"));
    if (has("training.recompute_num_layers")) s.training.recompute_num_layers = get_int("training.recompute_num_layers");
    s.training.recompute_modules = 0;
    for (const toml::node& module : *resolved_node("training.recompute_modules")->as_array()) {
      s.training.recompute_modules |=
          static_cast<uint32_t>(*models::parse_recompute_module(module.as_string()->get()));
    }
    s.parallelism = layout_keys();
    s.schedule = *models::parse_pipeline_schedule(get_string("parallelism.schedule"));
    s.cluster.vm_size = get_string("cluster.vm_size");
    s.cluster.nodes = get_int("cluster.nodes");
    s.cluster.vm_price_usd_per_hour =
        has("cost.vm_price_usd_per_hour") ? get_optional_double("cost.vm_price_usd_per_hour") : catalog_price_;
    s.cluster.fabric = *models::parse_fabric_kind(get_string("cluster.fabric"));
    s.cluster.oversubscription = get_double("cluster.oversubscription");
    s.cluster.fat_tree_radix = get_int("cluster.fat_tree_radix");
    if (has("cluster.vms_per_nvlink_domain")) {
      s.cluster.vms_per_nvlink_domain = get_int("cluster.vms_per_nvlink_domain");
    }
    s.cluster.inter_zone_latency = units::milliseconds(get_double("cluster.inter_zone_latency_ms"));
    if (const auto gbps = get_optional_double("cluster.inter_zone_bandwidth_gbps")) {
      s.cluster.inter_zone_bandwidth_per_node = units::to_bytes_per_second(units::gigabits_per_second(*gbps));
    }
    if (has("cluster.zones")) {
      for (const toml::node& z : *resolved_node("cluster.zones")->as_array()) {
        const toml::table& zone = *z.as_table();
        s.cluster.zones.push_back({zone.get("name")->as_string()->get(), zone.get("nodes")->as_integer()->get()});
      }
    }
    if (const std::string algorithm = get_string("network.all_reduce_algorithm"); algorithm != "auto") {
      s.network.all_reduce_algorithm = models::parse_collective_algorithm(algorithm);
    }
    if (resolved_table("reference") != nullptr) {
      ReferenceConfig r;
      r.tflops_per_gpu = get_optional_double("reference.tflops_per_gpu");
      r.step_time_s = get_optional_double("reference.step_time_s");
      r.tokens_per_s_per_gpu = get_optional_double("reference.tokens_per_s_per_gpu");
      r.mfu = get_optional_double("reference.mfu");
      r.source = get_string("reference.source");
      if (has("reference.dataset")) r.dataset = get_string("reference.dataset");
      if (has("reference.exclude_reason")) r.exclude_reason = get_string("reference.exclude_reason");
      s.reference = r;
    }
    if (resolved_table("job") != nullptr) {
      JobConfig j;
      if (has("job.steps")) {
        j.steps = get_int("job.steps");
      } else {
        const double tokens_per_step = static_cast<double>(s.training.global_batch_size) *
                                       static_cast<double>(s.model.seq_length);
        j.steps = static_cast<int64_t>(std::ceil(get_double("job.train_tokens") / tokens_per_step));
      }
      j.replications = get_int("job.replications");
      j.spot = get_bool("reliability.spot");
      j.spot_eviction_rate_per_hour = get_double("reliability.spot_eviction_rate_per_hour");
      j.eviction_trace = eviction_trace_;
      j.failure_rate_per_gpu_day = get_double("reliability.failure_rate_per_gpu_day");
      if (const auto m = get_optional_double("reliability.checkpoint_interval_minutes")) {
        j.checkpoint_every = units::minutes(*m);
      }
      if (has("reliability.checkpoint_interval_steps")) {
        j.checkpoint_every_steps = get_int("reliability.checkpoint_interval_steps");
      }
      if (const auto gb = get_optional_double("reliability.checkpoint_size_gb")) j.checkpoint_size = units::gigabytes(*gb);
      const bool nvme = get_string("reliability.checkpoint_storage") == "local_nvme";
      const double vms = static_cast<double>(s.cluster.nodes);
      // local_nvme: 28 GB/s per VM (Azure ND H100 v5 NVMe, shared/validation/reliability.md); parallel_fs:
      // 273 GB/s write and about 1 TB/s read (Megatron SC'21, the same file).
      const double write_gbps = get_optional_double("reliability.checkpoint_write_gb_per_s")
                                    .value_or(nvme ? 28.0 * vms : 273.0);
      const double read_gbps = get_optional_double("reliability.checkpoint_read_gb_per_s")
                                   .value_or(nvme ? 28.0 * vms : 1000.0);
      j.checkpoint_write = units::gigabytes_per_second(write_gbps);
      j.checkpoint_read = units::gigabytes_per_second(read_gbps);
      j.checkpoint_async = get_bool("reliability.checkpoint_async");
      j.detection = units::seconds(get_double("reliability.detection_time_s"));
      j.reprovision = units::seconds(get_double("reliability.reprovision_time_s"));
      j.spot_reprovision_mean = units::seconds(get_double("reliability.spot_reprovision_mean_s"));
      j.restart = units::seconds(get_double("reliability.restart_time_s"));
      j.vm_price_usd_per_hour = get_double("cost.vm_price_usd_per_hour");
      j.spot_discount = get_double("cost.spot_discount");
      j.storage_usd_per_gb_month = get_double("cost.storage_usd_per_gb_month");
      j.egress_usd_per_gb = get_double("cost.egress_usd_per_gb");
      s.job = j;
    }
    s.simulation.seed = static_cast<uint64_t>(get_int("simulation.seed"));
    s.simulation.fidelity = get_string("simulation.fidelity") == "full" ? Fidelity::full : Fidelity::replica;
    s.simulation.variability = variability_spec();
    s.source_path = path_;
    s.resolved_toml = resolved_text();
    return s;
  }

  /// [simulation]'s variability numbers: with simulation.variability = "on" each one the file leaves out takes
  /// its sourced default (models/variability), written into the resolved scenario; with it off, one the file
  /// gives is an error at its key (it would change nothing).
  void check_variability() {
    const bool on = get_string("simulation.variability") == "on";
    const std::pair<std::string_view, double> numbers[] = {{"gpu_compute_cv", models::kGpuComputeCv},
                                                           {"slow_vm_fraction", models::kSlowVmFraction},
                                                           {"slow_vm_factor", models::kSlowVmFactor}};
    for (const auto& [leaf, fallback] : numbers) {
      const std::string key = "simulation." + std::string(leaf);
      if (find_node("simulation", leaf) != nullptr) {
        if (!on) fail_at(key, "has no effect unless simulation.variability = \"on\"");
      } else if (on) {
        set(key, fallback);
      }
    }
  }

  /// The variability spec check_variability left in the resolved scenario (nullopt with it off); a number the
  /// file gives is "set in the scenario", the others keep their published sources.
  [[nodiscard]] std::optional<models::VariabilitySpec> variability_spec() const {
    if (get_string("simulation.variability") != "on") return std::nullopt;
    const auto given = [this](std::string_view leaf) { return find_node("simulation", leaf) != nullptr; };
    models::VariabilitySpec v;
    v.gpu_compute_cv = get_double("simulation.gpu_compute_cv");
    v.slow_vm_fraction = get_double("simulation.slow_vm_fraction");
    v.slow_vm_factor = get_double("simulation.slow_vm_factor");
    if (given("gpu_compute_cv")) v.gpu_compute_cv_source = "set in the scenario";
    if (given("slow_vm_fraction") || given("slow_vm_factor")) v.slow_vm_source = "set in the scenario";
    return v;
  }

  /// The resolved scenario (overrides and defaults applied) as TOML text, ending in a newline.
  [[nodiscard]] std::string resolved_text() const {
    std::ostringstream text;
    text << toml::toml_formatter{resolved_, toml::format_flags::allow_unicode_strings |
                                                toml::format_flags::indentation};
    std::string out = text.str();
    if (out.empty() || out.back() != '\n') out += '\n';
    return out;
  }

 private:
  [[noreturn]] static void fail(std::string key, const Loc& loc, std::string message) {
    throw ScenarioError(loc.file, loc.line, loc.column, std::move(key), std::move(message));
  }

  [[noreturn]] void fail_at(const std::string& dotted, std::string message) const {
    fail(dotted, loc_of(dotted), std::move(message));
  }

  Loc node_loc(const toml::node& node) const {
    const auto& src = node.source();
    if (src.begin.line == 0) return Loc{path_, 1, 1};
    return Loc{path_, static_cast<int64_t>(src.begin.line), static_cast<int64_t>(src.begin.column)};
  }

  /// A value's position: its --set option, else its place in the file.
  Loc value_loc_of(const std::string& dotted, const toml::node& node) const {
    if (auto it = override_locs_.find(dotted); it != override_locs_.end()) return it->second;
    return node_loc(node);
  }

  /// A key's position (for unknown keys): the key itself in the file.
  Loc key_loc_of(const std::string& dotted, const toml::key& key) const {
    if (auto it = override_locs_.find(dotted); it != override_locs_.end()) return it->second;
    const auto& src = key.source();
    if (src.begin.line == 0) return Loc{path_, 1, 1};
    return Loc{path_, static_cast<int64_t>(src.begin.line), static_cast<int64_t>(src.begin.column)};
  }

  /// A table's position: its header (or first dotted key), the --set that created it, or 1:1.
  Loc table_loc(std::string_view table) const {
    if (table.empty()) return Loc{path_, 1, 1};
    const std::string name{table};
    if (auto it = override_locs_.find(name); it != override_locs_.end()) return it->second;
    if (const toml::node* n = doc_.get(name)) return node_loc(*n);
    return Loc{path_, 1, 1};
  }

  const toml::node* find_node(std::string_view table, std::string_view leaf) const {
    if (table.empty()) return doc_.get(leaf);
    const toml::node* t = doc_.get(table);
    if (t == nullptr || !t->is_table()) return nullptr;
    return t->as_table()->get(leaf);
  }

  /// The position of a key's value when it is in the file or a --set, else that of its table.
  Loc loc_of(const std::string& dotted) const {
    const auto dot = dotted.find('.');
    const std::string table = dot == std::string::npos ? std::string{} : dotted.substr(0, dot);
    const std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
    if (const toml::node* n = find_node(table, leaf)) return value_loc_of(dotted, *n);
    return table_loc(table);
  }

  void check_param(const ParamSpec& p) {
    const std::string key{p.key};
    const std::string table{p.table()};
    const std::string leaf{p.leaf()};
    if (!table.empty() && doc_.get(table) == nullptr) {
      // The whole optional table is absent: defaults still apply, required keys do not. The job tables have
      // no meaning without [job], so they take no defaults then either.
      const bool job_table = table == "job" || table == "reliability" || table == "cost";
      if (p.need == Need::defaulted && !(job_table && doc_.get("job") == nullptr)) set_default(p);
      return;
    }
    const toml::node* node = find_node(table, leaf);
    if (node == nullptr) {
      switch (p.need) {
        case Need::required: fail(key, table_loc(table), "required key is missing");
        case Need::defaulted: set_default(p); return;
        case Need::derived:
        case Need::optional: set_framework_default(p); return;
      }
      return;
    }
    const Loc loc = value_loc_of(key, *node);
    const auto got_type = [&] {
      std::string g = "got " + std::string(node_type_name(node->type()));
      if (node->is_integer()) g += " " + std::to_string(node->as_integer()->get());
      if (node->is_floating_point()) g += " " + detail::format_number(node->as_floating_point()->get());
      return g;
    };
    const auto wrong_type = [&] { fail(key, loc, "expected " + std::string(expected_name(p.type)) + ", " + got_type()); };
    const auto out_of_range = [&](const std::string& got) {
      std::string message = "must be " + detail::allowed_text(p) + ", got " + got;
      if (!p.bound_reason.empty()) message.append(" (bound: ").append(p.bound_reason).append(")");
      fail(key, loc, std::move(message));
    };
    switch (p.type) {
      case ParamType::integer: {
        const auto v = node->value_exact<int64_t>();
        if (!node->is_integer() || !v) wrong_type();
        if (*v < p.min_int || *v > p.max_int) out_of_range(std::to_string(*v));
        set(key, *v);
        break;
      }
      case ParamType::number: {
        if (!node->is_number()) wrong_type();
        const double v = node->is_integer() ? static_cast<double>(node->as_integer()->get())
                                            : node->as_floating_point()->get();
        if (!std::isfinite(v)) fail(key, loc, "must be a finite number, got " + detail::format_number(v));
        const bool lo_ok = p.lo_open ? v > p.lo : v >= p.lo;
        const bool hi_ok = p.hi_open ? v < p.hi : v <= p.hi;
        if (!lo_ok || !hi_ok) out_of_range(detail::format_number(v));
        set(key, v);
        break;
      }
      case ParamType::string: {
        if (!node->is_string()) wrong_type();
        const std::string v = node->as_string()->get();
        if (!p.choices.empty() && std::find(p.choices.begin(), p.choices.end(), v) == p.choices.end()) {
          out_of_range("'" + v + "'");
        }
        if (p.non_empty && v.empty()) out_of_range("an empty string");
        set(key, v);
        break;
      }
      case ParamType::boolean: {
        if (!node->is_boolean()) wrong_type();
        set(key, node->as_boolean()->get());
        break;
      }
      case ParamType::string_list: {
        const toml::array* items = node->as_array();
        if (items == nullptr) wrong_type();
        toml::array canonical;
        std::set<std::string> seen;
        for (const toml::node& item : *items) {
          if (!item.is_string()) {
            fail(key, loc, "expected strings, got " + std::string(node_type_name(item.type())));
          }
          const std::string v = item.as_string()->get();
          if (std::find(p.choices.begin(), p.choices.end(), v) == p.choices.end()) {
            fail(key, loc, "must be " + detail::allowed_text(p) + ", got '" + v + "'");
          }
          if (!seen.insert(v).second) fail(key, loc, "'" + v + "' is given twice");
          canonical.push_back(v);
        }
        set_node(key, canonical);
        break;
      }
      case ParamType::zone_list: {
        const toml::array* zones = node->as_array();
        if (zones == nullptr || zones->empty()) wrong_type();
        toml::array canonical;
        std::set<std::string> names;
        for (const toml::node& z : *zones) {
          const toml::table* zone = z.as_table();
          if (zone == nullptr) fail(key, node_loc(z), "expected a table {name, nodes}, got " +
                                                          std::string(node_type_name(z.type())));
          for (const auto& [k, v] : *zone) {
            if (k.str() != "name" && k.str() != "nodes") {
              fail(key + "." + std::string(k.str()), key_loc_of(key, k), "unknown key (keys of a zone: name, nodes)");
            }
          }
          const toml::node* name = zone->get("name");
          const toml::node* count = zone->get("nodes");
          if (name == nullptr) fail(key + ".name", node_loc(z), "required key is missing");
          if (count == nullptr) fail(key + ".nodes", node_loc(z), "required key is missing");
          if (!name->is_string() || name->as_string()->get().empty()) {
            fail(key + ".name", node_loc(*name), "expected a non-empty string");
          }
          const auto n = count->value_exact<int64_t>();
          if (!count->is_integer() || !n || *n < 1) fail(key + ".nodes", node_loc(*count), "expected an integer >= 1");
          if (!names.insert(name->as_string()->get()).second) {
            fail(key + ".name", node_loc(*name), "zone '" + name->as_string()->get() + "' is given twice");
          }
          canonical.push_back(toml::table{{"name", name->as_string()->get()}, {"nodes", *n}});
        }
        set_node(key, canonical);
        break;
      }
    }
  }

  /// The framework profile's default of `p`, when training.framework (checked before the keys it sets) has one.
  bool set_framework_default(const ParamSpec& p) {
    if (p.key == "training.framework") return false;
    const toml::node* f = resolved_node("training.framework");
    if (f == nullptr) return false;
    const auto* d = detail::find_framework_default(f->as_string()->get(), p.key);
    if (d == nullptr) return false;
    set_from_literal(std::string(p.key), d->value);
    return true;
  }

  void set_default(const ParamSpec& p) {
    if (set_framework_default(p)) return;
    // Every default parsed once per process (a sweep loads the scenario once per point).
    static const std::map<std::string_view, toml::table, std::less<>> defaults = [] {
      std::map<std::string_view, toml::table, std::less<>> m;
      for (const ParamSpec& q : detail::scenario_params()) {
        if (q.need == Need::defaulted) m.emplace(q.key, toml::parse("v = " + std::string(q.default_text)));
      }
      return m;
    }();
    defaults.find(p.key)->second["v"].node()->visit([&](const auto& v) { set_node(std::string(p.key), v); });
  }

  /// Sets `dotted` to the TOML literal `literal` (a framework profile's default).
  void set_from_literal(const std::string& dotted, std::string_view literal) {
    const toml::table parsed = toml::parse("v = " + std::string(literal));
    parsed["v"].node()->visit([&](const auto& v) { set_node(dotted, v); });
  }

  template <typename T>
  void set(const std::string& dotted, T value) {
    set_node(dotted, toml::value<T>(std::move(value)));
  }

  template <typename Node>
  void set_node(const std::string& dotted, const Node& value) {
    const auto dot = dotted.find('.');
    toml::table* target = &resolved_;
    std::string leaf = dotted;
    if (dot != std::string::npos) {
      const std::string table = dotted.substr(0, dot);
      leaf = dotted.substr(dot + 1);
      if (resolved_.get(table) == nullptr) resolved_.insert(table, toml::table{});
      target = resolved_.get(table)->as_table();
    }
    target->insert_or_assign(leaf, value);
  }

  const toml::node* resolved_node(const std::string& dotted) const {
    const auto dot = dotted.find('.');
    if (dot == std::string::npos) return resolved_.get(dotted);
    const toml::table* t = resolved_table(dotted.substr(0, dot));
    return t == nullptr ? nullptr : t->get(dotted.substr(dot + 1));
  }
  const toml::table* resolved_table(const std::string& table) const {
    const toml::node* n = resolved_.get(table);
    return n == nullptr ? nullptr : n->as_table();
  }
  bool has(const std::string& dotted) const { return resolved_node(dotted) != nullptr; }
  int64_t get_int(const std::string& dotted) const { return resolved_node(dotted)->as_integer()->get(); }
  bool get_bool(const std::string& dotted) const { return resolved_node(dotted)->as_boolean()->get(); }
  double get_double(const std::string& dotted) const { return *resolved_node(dotted)->value<double>(); }
  std::string get_string(const std::string& dotted) const { return resolved_node(dotted)->as_string()->get(); }
  std::optional<double> get_optional_double(const std::string& dotted) const {
    const toml::node* n = resolved_node(dotted);
    if (n == nullptr) return std::nullopt;
    return n->value<double>();
  }

  /// a * b, or a ScenarioError on `key` when it overflows.
  int64_t checked_mul(int64_t a, int64_t b, const std::string& key) const {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) {
      fail_at(key, "too large: " + std::to_string(a) + " × " + std::to_string(b) + " overflows a 64-bit integer");
    }
    return r;
  }

  std::string suggestion_for_override(const std::string& key) const {
    std::vector<std::string> names;
    for (const auto& p : detail::scenario_params()) names.emplace_back(p.key);
    return " (closest: " + closest_names(key, names, 3) + ")";
  }

  std::filesystem::path path_;
  toml::table doc_;
  toml::table resolved_;
  std::map<std::string, Loc, std::less<>> override_locs_;  ///< dotted key or table name -> its --set option
  std::vector<units::Seconds> eviction_trace_;
  std::optional<double> catalog_price_;  ///< the VM size's catalog price (check_cluster)
  std::optional<double> serving_price_;  ///< the serving VM size's catalog price (check_serving)
  bool serving_ = false;                 ///< the document has [serving] (check_structure)
};

}  // namespace

struct ScenarioDocument::Impl {
  std::filesystem::path path;
  toml::table table;
};

ScenarioDocument ScenarioDocument::read(const std::filesystem::path& path) {
  Loader loader(path);
  loader.parse();
  ScenarioDocument doc;
  doc.impl_ = std::make_shared<const Impl>(Impl{path, loader.take_document()});
  return doc;
}

const std::filesystem::path& ScenarioDocument::path() const {
  if (!impl_) throw std::logic_error("ScenarioDocument: not read");
  return impl_->path;
}

namespace {

Scenario load(Loader& loader, const std::vector<std::string>& overrides, const models::Catalog& catalog) {
  loader.apply_overrides(overrides);
  loader.check_schema_version();
  loader.check_structure();
  loader.require_training();
  loader.check_params();
  loader.check_model();
  loader.check_reference();
  loader.check_parallelism_shape();
  loader.check_cluster(catalog);
  loader.check_job(catalog);
  loader.check_variability();
  return loader.build();
}

}  // namespace

bool is_serving_scenario(const std::filesystem::path& path) {
  Loader loader(path);
  loader.parse();
  return loader.has_table("serving");
}

ServingScenario load_serving_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                                      const models::Catalog& catalog) {
  Loader loader(path);
  loader.parse();
  loader.apply_overrides(overrides);
  loader.check_schema_version();
  loader.check_structure();
  if (!loader.has_table("serving")) {
    throw ScenarioError(path, 1, 1, "serving", "required table is missing: not a serving scenario");
  }
  loader.check_params();
  loader.check_serving(catalog);
  return loader.build_serving();
}

Scenario load_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog) {
  Loader loader(path);
  loader.parse();
  return load(loader, overrides, catalog);
}

Scenario load_scenario(const ScenarioDocument& document, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog) {
  Loader loader(document.path());
  loader.use(document.impl_->table);
  return load(loader, overrides, catalog);
}

}  // namespace clustersim::sim
