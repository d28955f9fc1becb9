// The serving validation group (issue 15): every published serving measurement under
// scenarios/validation-serving/ (analysis/validation/generate_serving_scenarios.py writes them from
// analysis/validation/serving_benchmarks.csv) run through `clustersim run`'s recipe (run_serving_scenario) and
// compared with its [reference] metric; the calibration of the engines' per-iteration CPU overhead on them; and
// its leave-one-source-out check (docs/serving.md, "Validation").
//
// Calibration. One physical parameter pair per inference engine family (models::EngineProfile::family: vllm,
// tensorrt-llm, lmdeploy): the fixed and the per-sampled-sequence CPU work of an iteration, shared by the family's
// releases (what a release changes, models/serving/engine_profile.cpp, is structure, not fitted). Each family's
// pair is fitted on the modelled rows of its releases by minimising the mean |error| over a grid (kFixedGridMs x
// kPerSequenceGridUs: deterministic, and the objective is flat enough that a finer search buys nothing).
// Leave-one-source-out: for each dataset S, every family S has rows of is refitted without S; a family only S
// calibrates takes the pair of the family with the most other rows, fitted without S. The device rates are the
// catalog's microbenchmarks, not fitted here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/serving/engine_profile.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// One published serving measurement and the model's prediction of it.
struct ServingValidationRow {
  std::filesystem::path file;
  std::string name;             ///< the scenario file's stem
  std::string dataset;          ///< reference.dataset
  std::string engine;           ///< serving.engine: the release
  std::string family;           ///< the release's family (models::EngineProfile::family): what the fit calibrates
  std::string device;           ///< the VM's device
  std::string metric;           ///< reference.metric
  std::string exclude_reason;   ///< non-empty: reported, left out of the summaries and fits
  double measured = 0.0;
  std::optional<double> predicted;
  std::string error;            ///< why there is no prediction
  [[nodiscard]] bool modelled() const { return exclude_reason.empty(); }
  /// predicted / measured - 1; NaN without a prediction.
  [[nodiscard]] double relative_error() const;
  /// Whether the metric is a throughput (tokens or requests per second) rather than a latency.
  [[nodiscard]] bool throughput() const;
};

/// Errors of the modelled rows of `rows` accepted by `keep` (all when empty): rows compared, rows failed,
/// mean, max and RMS |predicted / measured - 1|, rows within 15 %.
struct ServingErrorSummary {
  int rows = 0;
  int failed = 0;
  int within_15_percent = 0;
  double mean_abs = 0.0, max_abs = 0.0, rms = 0.0;
  /// "mean |error| ..., k of n within 15 %" (and the failed rows), or "no rows".
  [[nodiscard]] std::string text() const;
};
ServingErrorSummary summarize_serving_rows(const std::vector<ServingValidationRow>& rows,
                                           const std::function<bool(const ServingValidationRow&)>& keep = {});

/// Engine overheads by family, replacing the scenarios' for the releases of those families.
using EngineOverheads = std::map<std::string, models::EngineOverhead>;

/// One family's fitted overhead.
struct EngineFit {
  std::string family;
  models::EngineOverhead overhead;
  size_t grid_point = 0;  ///< the overhead's column in predict_grid's table
  ServingErrorSummary in_sample;
};

class ServingValidationSuite {
 public:
  /// Loads every *.toml under `directory` (sorted). A scenario that does not load, or has no [reference],
  /// becomes a row with its error. Throws std::runtime_error when the directory cannot be read.
  static ServingValidationSuite load(const std::filesystem::path& directory, const models::Catalog& catalog);

  [[nodiscard]] size_t size() const { return rows_.size(); }

  /// Predicts the rows `select` accepts (all when empty), with `overheads` replacing the families' overheads,
  /// on up to `threads` threads; the result, in file order, does not depend on the thread count.
  [[nodiscard]] std::vector<ServingValidationRow> evaluate(const models::Catalog& catalog, int threads = 1,
                                                           const EngineOverheads& overheads = {},
                                                           const std::function<bool(size_t)>& select = {}) const;

  /// Every modelled row predicted at every point of the overhead grid (kFixedGridMs x kPerSequenceGridUs), for
  /// the fits: a row's prediction does not depend on which rows a fit uses.
  [[nodiscard]] std::vector<std::vector<double>> predict_grid(const models::Catalog& catalog, int threads = 1) const;

  /// Fits `family`'s overhead on the modelled rows of its releases accepted by `use` (all when empty), from
  /// `grid` (predict_grid). Throws std::invalid_argument when no row qualifies.
  [[nodiscard]] EngineFit fit(const std::vector<std::vector<double>>& grid, const std::string& family,
                              const std::function<bool(const ServingValidationRow&)>& use = {}) const;

  [[nodiscard]] const std::vector<ServingValidationRow>& rows() const { return rows_; }

  static constexpr double kFixedGridMs[] = {0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0};
  static constexpr double kPerSequenceGridUs[] = {0.0, 1.0, 3.0, 10.0, 30.0};

 private:
  std::vector<std::optional<ServingScenario>> scenarios_;
  std::vector<ServingValidationRow> rows_;
};

/// One dataset held out: its rows predicted with the families refitted on the other datasets.
struct HeldOutServingDataset {
  std::string dataset;
  std::vector<EngineFit> fits;
  std::vector<ServingValidationRow> rows;
  ServingErrorSummary summary;
};

/// Leave-one-source-out over every dataset with modelled rows.
std::vector<HeldOutServingDataset> leave_one_serving_dataset_out(const ServingValidationSuite& suite,
                                                                 const std::vector<std::vector<double>>& grid);

/// The rows grouped by dataset with their errors, each group's summary, the summary by engine release and by kind
/// (throughput, latency) and overall.
std::string format_serving_validation(const std::vector<ServingValidationRow>& rows);
/// One line per held-out dataset (its refitted engines and errors), then the summary over every held-out row.
std::string format_serving_leave_one_out(const std::vector<HeldOutServingDataset>& held_out);

}  // namespace clustersim::sim
