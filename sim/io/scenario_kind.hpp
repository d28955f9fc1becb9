// A scenario kind (training, serving) is one declared list: the table that marks a document as that kind, the
// tables it takes and requires, the keys of shared tables it does not take, the messages for a table or key of
// another kind, and its rules in the order they run. The structure check (Loader::check_structure), the key
// checks (Loader::check_params), the required tables and "this command takes training scenarios"
// (check_loaded_as) all read the declaration. Private to sim/io.
//
// Adding a scenario kind: the files to touch.
//   1. sim/io/scenario_params.cpp: its tables and keys in the key table (which also generates
//      docs/scenario-format.md: regenerate it with `clustersim scenario-keys`).
//   2. sim/io/scenario_kind.cpp: one more ScenarioKind in scenario_kinds(): its marker table, the tables it takes
//      and requires, the keys of shared tables it refuses, the messages, its check function.
//   3. sim/io/<kind>_scenario.cpp (new): its rules, `void check_<kind>(Loader&, const models::Catalog&)`, reusing
//      the shared rules units (model_rules, reference_rules, ...), its builder and its load function: a parsed
//      Loader, check_as(loader, overrides, catalog, scenario_kind_named("<kind>")), the builder (as
//      load_serving_scenario in scenario.cpp). Larger kinds split the rules into <kind>_scenario_rules.cpp, as
//      serving does.
//   4. sim/io/scenario.hpp: its resolved struct and load function; sim/io/CMakeLists.txt: the new unit.
//   The other kinds' foreign_table_message and foreign_set_message name serving today ("[x] belongs to a serving
//   scenario"): reword the training kind's when a third kind's tables can appear in a training document.
//   Tests: tests/scenario/test_<kind>_scenario.cpp. The command that runs it (sim/run, sim/cli) dispatches on
//   scenario_kind(path).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim::detail {

class Loader;

/// Keys of a table several kinds share that one kind does not take, and the message at such a key.
struct ForeignKeys {
  std::vector<std::string_view> keys;  ///< dotted keys
  std::string_view message;
};

/// One kind of scenario, as the loader checks it.
struct ScenarioKind {
  std::string_view name;          ///< "training", "serving"
  std::string_view marker_table;  ///< the table that makes a document this kind; "" for the default kind
  /// The tables of the key table it takes ("" is the root); a document's other tables are errors at their
  /// header with foreign_table_message, "{table}" standing for the table's name.
  std::vector<std::string_view> tables;
  std::vector<std::string_view> required_tables;  ///< missing: "required table is missing" at 1:1
  std::string_view foreign_table_message;
  /// The message for such a table when a --set created it (the file is of this kind; the option cannot make it
  /// another): after "--set KEY=VALUE: ", at the option, "{table}" standing for the table's name.
  std::string_view foreign_set_message;
  std::vector<ForeignKeys> foreign_keys;  ///< keys of its tables it does not take, each an error at the key
  /// {table, parent}: when both are absent the table takes no defaults (it means nothing without its parent:
  /// a training run's [reliability] and [cost] without [job]; [job] itself).
  std::vector<std::pair<std::string_view, std::string_view>> defaults_need_table;
  /// A loader of another kind given this kind's document: the error at this kind's marker table (the default
  /// kind, which has none, reports the wanted kind's marker table as missing).
  std::string_view loaded_as_other_message;
  /// Its rules, in order, after the key table's checks: cross-checks, derived values, the catalog's.
  void (*check)(Loader&, const models::Catalog&) = nullptr;

  [[nodiscard]] bool takes_table(std::string_view table) const;
  /// The message for `dotted` (a key of one of its tables) when this kind does not take it, else "".
  [[nodiscard]] std::string_view foreign_key_message(std::string_view dotted) const;
  /// The table whose absence leaves `table` without defaults (defaults_need_table), or "".
  [[nodiscard]] std::string_view defaults_need(std::string_view table) const;
};

/// Every kind, the default kind (no marker table) last.
const std::vector<ScenarioKind>& scenario_kinds();
/// The kind named `name` ("training", "serving"). Throws std::out_of_range for another name.
const ScenarioKind& scenario_kind_named(std::string_view name);
/// The kind of the loader's document: the first kind whose marker table the file has (a key of that name of any
/// type counts; a table a --set created does not: overrides change values, not the kind), else the default kind.
const ScenarioKind& kind_of(const Loader& loader);
/// Stops a load as `wanted` of a document of kind `document` (kind_of), with document's message at its marker
/// table, or the wanted kind's marker table reported missing ("required table is missing: not a serving
/// scenario", at 1:1). Nothing when the kinds are the same.
void check_loaded_as(const Loader& loader, const ScenarioKind& document, const ScenarioKind& wanted);
/// A load as `wanted` up to its builder, on a parsed loader: the overrides, schema_version, the structure and the
/// keys of the document's kind, check_loaded_as, then the kind's rules. Throws ScenarioError.
void check_as(Loader& loader, const std::vector<std::string>& overrides, const models::Catalog& catalog,
              const ScenarioKind& wanted);

}  // namespace clustersim::sim::detail
