// The declared scenario kinds (scenario_kind.hpp): training, the default, and serving.
#include "sim/io/scenario_kind.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/io/loader.hpp"
#include "sim/io/serving_scenario_rules.hpp"
#include "sim/io/training_scenario.hpp"

namespace clustersim::sim::detail {

bool ScenarioKind::takes_table(std::string_view table) const {
  return std::find(tables.begin(), tables.end(), table) != tables.end();
}

std::string_view ScenarioKind::foreign_key_message(std::string_view dotted) const {
  for (const ForeignKeys& f : foreign_keys) {
    if (std::find(f.keys.begin(), f.keys.end(), dotted) != f.keys.end()) return f.message;
  }
  return {};
}

std::string_view ScenarioKind::defaults_need(std::string_view table) const {
  for (const auto& [t, parent] : defaults_need_table) {
    if (t == table) return parent;
  }
  return {};
}

const std::vector<ScenarioKind>& scenario_kinds() {
  static const std::vector<ScenarioKind> kinds = {
      ScenarioKind{
          .name = "serving",
          .marker_table = "serving",
          .tables = {"", "model", "serving", "workload", "slo", "reference", "simulation", "sweep"},
          .required_tables = {"model", "serving", "workload"},
          .foreign_table_message =
              "a serving scenario ([serving]) has no [{table}]: it simulates a fleet, not a training run",
          .foreign_set_message =
              "[{table}] belongs to training scenarios; this file is a serving scenario (it has a [serving] table)",
          .foreign_keys = {{{"reference.tflops_per_gpu", "reference.step_time_s", "reference.tokens_per_s_per_gpu",
                             "reference.mfu"},
                            "a training metric: a serving scenario's [reference] gives metric and value"},
                           {{"simulation.variability", "simulation.gpu_compute_cv", "simulation.slow_vm_fraction",
                             "simulation.slow_vm_factor"},
                            "a training run's key: the variability of a synchronous training step"}},
          .defaults_need_table = {},
          .loaded_as_other_message =
              "a serving scenario: `clustersim run` simulates it; this command takes training scenarios",
          .check = check_serving,
      },
      ScenarioKind{
          .name = "training",
          .marker_table = "",
          .tables = {"", "model", "training", "parallelism", "cluster", "network", "reference", "job", "reliability",
                     "cost", "simulation", "analysis", "sweep"},
          .required_tables = {"model", "training", "cluster"},
          .foreign_table_message =
              "[{table}] belongs to a serving scenario, which has a [serving] table and no training tables",
          .foreign_set_message =
              "[{table}] belongs to serving scenarios; this file is a training scenario (it has no [serving] table)",
          .foreign_keys = {{{"reference.metric", "reference.value"},
                            "a serving scenario's key: a training run's [reference] gives tflops_per_gpu, "
                            "step_time_s, tokens_per_s_per_gpu or mfu"}},
          .defaults_need_table = {{"job", "job"}, {"reliability", "job"}, {"cost", "job"}},
          .loaded_as_other_message = "",
          .check = check_training_scenario,
      },
  };
  return kinds;
}

const ScenarioKind& scenario_kind_named(std::string_view name) {
  for (const ScenarioKind& k : scenario_kinds()) {
    if (k.name == name) return k;
  }
  throw std::out_of_range("no scenario kind '" + std::string(name) + "'");
}

const ScenarioKind& kind_of(const Loader& loader) {
  for (const ScenarioKind& k : scenario_kinds()) {
    if (k.marker_table.empty() || loader.in_file(k.marker_table)) return k;
  }
  return scenario_kinds().back();
}

void check_as(Loader& loader, const std::vector<std::string>& overrides, const models::Catalog& catalog,
              const ScenarioKind& wanted) {
  loader.apply_overrides(overrides);
  loader.check_schema_version();
  const ScenarioKind& kind = kind_of(loader);
  loader.check_structure(kind);
  check_loaded_as(loader, kind, wanted);
  loader.check_params(kind);
  kind.check(loader, catalog);
}

void check_loaded_as(const Loader& loader, const ScenarioKind& document, const ScenarioKind& wanted) {
  if (&document == &wanted) return;
  if (!document.marker_table.empty()) {
    Loader::fail(std::string(document.marker_table), loader.table_loc(document.marker_table),
                 std::string(document.loaded_as_other_message));
  }
  Loader::fail(std::string(wanted.marker_table), Loc{loader.path(), 1, 1},
               "required table is missing: not a " + std::string(wanted.name) + " scenario");
}

}  // namespace clustersim::sim::detail
