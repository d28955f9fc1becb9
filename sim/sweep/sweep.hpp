// Sweeps: a scenario's [sweep] table expanded into run points, each a set of key overrides with a stable
// index and seed (issue 6).
//
// Syntax (docs/sweeps.md):
//   [sweep]
//   "parallelism.tensor" = [1, 2, 4, 8]                      # a list of values
//   "cluster.nodes" = { start = 8, stop = 64, step = 8 }     # linear range, stop included
//   "training.global_batch_size" = { start = 256, stop = 4096, factor = 2 }   # geometric (log) range
//   zip = [["cluster.nodes", "training.global_batch_size"]]  # groups whose axes advance together
//   parallelism = "auto"                                     # every valid tensor/pipeline/data/micro-batch/
//                                                            # virtual-stage layout for the model and cluster
//   objective = "cost_per_token"                             # what the ranking minimises (SweepObjective)
// Axes combine as a cartesian product in the order written (the last varies fastest); a zipped group is one
// axis. Point i has seed = splitmix64(base_seed ^ splitmix64(i)) >> 1 (sweep_point_seed), so any split of the
// points gives identical results; `clustersim sweep` runs point i with simulation.seed = that seed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace clustersim::models {
class Catalog;
struct LayoutSearch;
}

namespace clustersim::sim {

struct Scenario;

/// A scalar value of a scenario key as a sweep sets it: the TOML type it was written with (an integer range
/// stays integer, a float range float).
using ScalarValue = std::variant<int64_t, double, bool, std::string>;

/// `v` as TOML literal text: integers in decimal, floats in their shortest round-trip form with a '.' or an
/// exponent, booleans as true/false, strings as basic strings with \, " and control characters escaped.
std::string toml_literal(const ScalarValue& v);
/// `v` as a label: a string without quotes, anything else as its TOML literal.
std::string label_of(const ScalarValue& v);
/// The value as a double when it is a finite number (integer or float); nullopt otherwise.
std::optional<double> number_of(const ScalarValue& v);

/// One swept key's value at a point.
struct SweptValue {
  std::string key;    ///< dotted scenario key, an entry of the scenario key table ("parallelism.tensor")
  ScalarValue value;  ///< as written in [sweep] (or as enumerated for parallelism = "auto")
  /// "key=literal", the form --set and load_scenario take.
  [[nodiscard]] std::string override_text() const { return key + "=" + toml_literal(value); }
  bool operator==(const SweptValue&) const = default;
};

/// One axis of the grid: one key, or several zipped keys, with their values.
struct SweepAxis {
  std::vector<std::string> keys;                 ///< dotted scenario keys ("parallelism.tensor")
  std::vector<std::vector<ScalarValue>> values;  ///< values[i][k]: i-th point's value of keys[k]
};

/// One point of a sweep: its index, its seed and the value of every swept key (grid axes in order, then the
/// layout of parallelism = "auto").
struct SweepPoint {
  int64_t index = 0;                ///< stable: row-major over the axes
  uint64_t seed = 0;                ///< sweep_point_seed(base seed, index)
  std::vector<SweptValue> values;   ///< the swept keys' values
  /// The values as "key=value" overrides, in order, as --set takes them.
  [[nodiscard]] std::vector<std::string> overrides() const;
  /// The value of `key` (the last one set), or null when the point does not set it.
  [[nodiscard]] const SweptValue* find(std::string_view key) const;
};

/// What a sweep's ranking minimises ([sweep] objective): the step time; the cost of a million training tokens
/// (the job's mean cost, spot prices and interruptions included, when the scenario has a [job]; else the VMs'
/// on-demand price over the step time); or the job's mean wall time to train (needs a [job]).
/// A serving scenario's sweep ranks by cost_per_mtoken_under_slo: the on-demand cost of a million output tokens,
/// the fleets that meet the scenario's [slo] (p99 TTFT and p99 TPOT at or below the targets) first.
enum class SweepObjective { step_time, cost_per_token, time_to_train, cost_per_mtoken_under_slo };
/// "step_time" | "cost_per_token" | "time_to_train" | "cost_per_mtoken_under_slo".
std::string_view to_string(SweepObjective o);
/// The /summary column `o` ranks by, lower first: step_time_s; cost_per_token: job_usd_per_million_tokens with a
/// [job] (`has_job`), else usd_per_million_tokens; time_to_train: time_to_train_mean_h;
/// cost_per_mtoken_under_slo: usd_per_million_output_tokens.
std::string_view objective_column(SweepObjective o, bool has_job);

struct SweepSpec {
  std::vector<SweepAxis> axes;          ///< empty: a single point
  bool auto_parallelism = false;        ///< parallelism = "auto": layouts are one more axis
  SweepObjective objective = SweepObjective::step_time;  ///< what the ranking minimises
  bool objective_given = false;         ///< [sweep] objective is written: a grid sweep is ranked too
  [[nodiscard]] int64_t size() const;   ///< number of points (before auto layouts)
};

/// The seed of point `index`: splitmix64(base_seed ^ splitmix64(index)) >> 1 (63 bits, so that it is a valid
/// TOML integer for simulation.seed and fits the int64 seed column), where splitmix64(x) is Steele et al.'s
/// SplitMix64 output function of the state x + 0x9e3779b97f4a7c15 (z ^= z >> 30; z *= 0xbf58476d1ce4e5b9;
/// z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31). Depends on nothing but (base_seed, index).
uint64_t sweep_point_seed(uint64_t base_seed, int64_t index);

/// The most points a sweep's grid may have (the product of its axes' lengths, before parallelism = "auto" adds
/// layouts): 10^6, the same bound as one range's values. A grid over it is refused before it is expanded.
inline constexpr int64_t kMaxSweepPoints = 1'000'000;

/// Reads the [sweep] table of `scenario` (absent: no axes). Errors are ScenarioError with file:line:col and
/// the key, like the loader's; a grid of more than kMaxSweepPoints points is one, at the [sweep] table, key
/// "sweep", naming each axis and its length.
SweepSpec read_sweep(const std::filesystem::path& scenario);

/// The points of `spec`, `base_seed` as the scenario's simulation.seed. With auto_parallelism, expands the
/// layouts of each grid point against the catalog and the scenario (see enumerate_layouts).
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec, const std::filesystem::path& scenario,
                                     uint64_t base_seed, const models::Catalog& catalog);

/// One point of a layout search (enumerate_layouts).
struct LayoutPoint {
  std::vector<SweptValue> values;             ///< the layout's keys, then the memory-saving settings' keys
  std::shared_ptr<const Scenario> scenario;   ///< as the screening loaded it (not null)
};

/// Every valid (tensor, pipeline, data, micro_batch_size, virtual_stages) for the scenario (with `overrides`
/// applied): the candidates of models::enumerate_layouts (models/parallelism/layout.hpp) for its model and
/// cluster, in that order, each skipped when load_scenario would throw ScenarioError (each is derived from the
/// scenario loaded with `overrides` by derive_layout, sim/io/layout_rules.hpp, which gives what the load gives,
/// and loaded where it cannot tell). The model and cluster are read by loading the scenario with `overrides`
/// (falling back to tensor = pipeline = virtual_stages = micro batch = 1 when its own layout does not fit them);
/// a scenario that still does not load throws its ScenarioError. Each layout is the 5 values parallelism.tensor = T,
/// parallelism.pipeline = P, parallelism.data = D, training.micro_batch_size = B, parallelism.virtual_stages = V.
/// `jobs` threads screen the candidates (the result does not depend on it).
std::vector<std::vector<SweptValue>> enumerate_layouts(const std::filesystem::path& scenario,
                                                        const std::vector<std::string>& overrides,
                                                        const models::Catalog& catalog, int jobs = 1);

/// The layout search of scenario `s` (models::enumerate_layouts' input): its VM size's GPUs per VM and per
/// NVLink domain (from `catalog`; throws as Catalog::vm_size for an unknown size), the cluster's GPUs, and the
/// model's heads, query groups, layers, sequence length and experts and the global batch, as loaded.
models::LayoutSearch layout_search_of(const Scenario& s, const models::Catalog& catalog);

/// enumerate_layouts with, beside each point's values, the scenario the screening loaded for it: what
/// load_scenario gives with `overrides` and the values (resolved_toml left empty; the scenario's own setting
/// is its layout's scenario with the setting's --set options added, see settings_of_layout): load_sweep keeps
/// them so that the runner does not load those points again (SweepPointRunner).
std::vector<LayoutPoint> enumerate_layout_points(const std::filesystem::path& scenario,
                                                 const std::vector<std::string>& overrides,
                                                 const models::Catalog& catalog, int jobs = 1);

}  // namespace clustersim::sim
