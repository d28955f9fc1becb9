// The scenario loader's mechanics, private to sim/io (only sim/io's .cpp files include this header: it brings in
// TOML++): the parsed document, the --set overrides, the lookups in the key table (scenario_params.hpp), the
// located errors (sim::ScenarioError, "FILE:LINE:COL: key 'KEY': message") and the resolved values with their
// defaults. The rules of each table live in their own units (model_rules, training_rules, cluster_rules,
// job_rules, reference_rules, serving_scenario_rules) and work on a Loader; a scenario kind (scenario_kind.hpp)
// says which tables and keys a document of that kind takes and which rules run, in order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <vector>

#include "models/units.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/scenario_params.hpp"

namespace clustersim::sim::detail {

struct ScenarioKind;

/// A position in the scenario file or in a --set option (FILE "--set", LINE the option's 1-based index).
struct Loc {
  std::filesystem::path file;
  int64_t line = 1;
  int64_t column = 1;
};

/// What the rules learn while checking that the resolved TOML does not hold, for the builders.
struct LoadFacts {
  std::vector<units::Seconds> eviction_trace;  ///< reliability.spot_eviction_trace, read (check_job)
  std::optional<double> catalog_price;         ///< cluster.vm_size's catalog price, USD/h (check_cluster)
  std::optional<double> serving_price;         ///< serving.vm_size's catalog price, USD/h (check_serving)
  std::optional<double> serving_prefill_price;  ///< split pools: the prefill VM size's price (check_disaggregation)
};

/// One load: the parsed document (edited by the overrides), where each --set value came from, and the
/// validated, canonical result (`resolved`: the values checked so far, defaults and derived values included).
/// Every error is a ScenarioError located at a key's value, a key, a table's header or the file's 1:1.
class Loader {
 public:
  explicit Loader(std::filesystem::path path) : path_(std::move(path)) {}

  /// Reads and parses the file. Throws ScenarioError (unreadable: 0:0; syntax: the parser's position).
  void parse();
  /// Starts from a document parsed before (a copy: overrides edit it).
  void use(const toml::table& parsed) { doc_ = parsed; }
  [[nodiscard]] toml::table take_document() { return std::move(doc_); }
  /// The scenario file (relative paths in it resolve against its directory).
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  /// Whether the document (with its overrides) has the top-level table `name`.
  [[nodiscard]] bool has_table(const std::string& name) const;
  /// Whether the document (with its overrides) has the top-level key or table `name`, of any type.
  [[nodiscard]] bool in_document(std::string_view name) const { return doc_.get(name) != nullptr; }
  /// Whether the file itself has the top-level key or table `name`: in the document and not created by a --set.
  [[nodiscard]] bool in_file(std::string_view name) const { return in_document(name) && set_option(name).empty(); }
  /// The --set option that gave `dotted` (a key), or created `dotted` (a table), as "KEY=VALUE" (both trimmed);
  /// "" when the file gave it (or nothing did).
  [[nodiscard]] std::string set_option(std::string_view dotted) const;
  /// Every --set option applied, in order, as "KEY=VALUE" (both trimmed).
  [[nodiscard]] const std::vector<std::string>& set_options() const { return set_options_; }

  /// Applies "dotted.key=value" overrides in order (a later one wins). The i-th (1-based) option is reported
  /// as "--set:i:COL", COL 1 for its key and the value's column for its value.
  void apply_overrides(const std::vector<std::string>& overrides);
  /// schema_version first: a file of another version is reported as such, not as a list of unknown keys.
  void check_schema_version();
  /// Every table and key of the document is in the key table and belongs to `kind` (else the kind's message;
  /// a table of another kind that a --set created: "--set KEY=VALUE: " and the kind's foreign_set_message, at
  /// the option); tables are tables; the kind's required tables exist.
  void check_structure(const ScenarioKind& kind);
  /// Presence, type and allowed values of every key `kind` takes; fills the resolved values and defaults.
  void check_params(const ScenarioKind& kind);

  /// Throws the ScenarioError of `key` at `loc`.
  [[noreturn]] static void fail(std::string key, const Loc& loc, std::string message);
  /// Throws the ScenarioError of `dotted` at its value (file or --set), else at its table's header.
  [[noreturn]] void fail_at(const std::string& dotted, std::string message) const;
  /// A table's position: its header (or first dotted key), the --set that created it, or 1:1.
  [[nodiscard]] Loc table_loc(std::string_view table) const;
  /// The position of a key's value when it is in the file or a --set, else that of its table.
  [[nodiscard]] Loc loc_of(const std::string& dotted) const;
  /// The key `table.leaf` as the document gives it (nullptr when absent: the file and --set did not give it).
  [[nodiscard]] const toml::node* find_node(std::string_view table, std::string_view leaf) const;

  /// The resolved value of `dotted` (nullptr when it has none: an optional key not given).
  [[nodiscard]] const toml::node* resolved_node(std::string_view dotted) const;
  [[nodiscard]] const toml::table* resolved_table(std::string_view table) const;
  [[nodiscard]] bool has(std::string_view dotted) const { return resolved_node(dotted) != nullptr; }
  /// The resolved value of `dotted`, of its key-table type; the key must have a value (has()).
  [[nodiscard]] int64_t get_int(std::string_view dotted) const { return resolved_node(dotted)->as_integer()->get(); }
  [[nodiscard]] bool get_bool(std::string_view dotted) const { return resolved_node(dotted)->as_boolean()->get(); }
  [[nodiscard]] double get_double(std::string_view dotted) const { return *resolved_node(dotted)->value<double>(); }
  [[nodiscard]] std::string get_string(std::string_view dotted) const {
    return resolved_node(dotted)->as_string()->get();
  }
  [[nodiscard]] std::optional<double> get_optional_double(std::string_view dotted) const;

  /// Sets the resolved value of `dotted` (a default or a derived value; it appears in the resolved TOML).
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

  /// a * b, or a ScenarioError on `key` when it overflows.
  int64_t checked_mul(int64_t a, int64_t b, const std::string& key) const;

  /// The resolved scenario (overrides and defaults applied) as TOML text, ending in a newline.
  [[nodiscard]] std::string resolved_text() const;

  LoadFacts learned;  ///< what the rules read for the builders

 private:
  Loc node_loc(const toml::node& node) const;
  Loc value_loc_of(const std::string& dotted, const toml::node& node) const;
  Loc key_loc_of(const std::string& dotted, const toml::key& key) const;
  /// One key's presence, type and range, and its default; `kind` (nullptr for schema_version, checked before
  /// the kind is known) says which absent tables take no defaults.
  void check_param(const ParamSpec& p, const ScenarioKind* kind);
  bool set_framework_default(const ParamSpec& p);
  void set_default(const ParamSpec& p);
  std::string suggestion_for_override(const std::string& key) const;

  std::filesystem::path path_;
  toml::table doc_;
  toml::table resolved_;
  /// A --set option: where it is, and its text ("KEY=VALUE", both trimmed).
  struct Override {
    Loc loc;
    std::string option;
  };
  std::map<std::string, Override, std::less<>> overrides_;  ///< dotted key or table name -> its --set option
  std::vector<std::string> set_options_;                    ///< every --set option, in order, "KEY=VALUE"
};

}  // namespace clustersim::sim::detail
