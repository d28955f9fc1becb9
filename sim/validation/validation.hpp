// The validation suite: every published run under scenarios/validation/ predicted and compared with its
// measurement, grouped by published table (reference.dataset), GPU and framework; the calibration of the
// devices' training fractions on those runs; and the leave-one-source-out check of that calibration
// (docs/validation.md).
//
// Calibration. Two physical parameters per calibration group (one GPU generation, DeviceSpec::
// calibration_group), training_matmul_fraction and training_memory_fraction: the share of the measured matmul
// and memory (triad) rates a training step's kernels sustain. They are fitted to the modelled rows of the group
// by minimising the mean |error| with a Nelder-Mead simplex over [0.3, 1]^2 (deterministic: fixed start and
// steps). Leave-one-source-out: for each dataset S, every group that S has rows in is refitted without S and
// S is predicted with those fractions (a group that only S calibrates takes the fractions of the largest other
// group, fitted without S); the groups S has no rows in keep the catalog's values.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/output/step_report.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

class ClusterCache;

/// One published run and the model's prediction for it.
struct ValidationRow {
  std::filesystem::path file;
  std::string name;               ///< the scenario file's stem
  std::string dataset;            ///< reference.dataset
  std::string source;             ///< reference.source
  std::string device;             ///< the VM's device (catalog name)
  std::string calibration_group;  ///< the device's calibration group
  std::string framework;          ///< training.framework
  /// What kind of run, for the report's groups: "dense", "context-parallel" (parallelism.context > 1) or "moe"
  /// (model.num_experts > 0).
  std::string workload = "dense";
  int64_t gpus = 0;
  std::string exclude_reason;     ///< non-empty: reported, left out of bounds and fits
  std::optional<ReferenceComparison> comparison;
  std::string error;              ///< why there is no comparison (load or simulation failure)
  [[nodiscard]] bool modelled() const { return exclude_reason.empty(); }
  /// Whether the row calibrates the model (fits and prediction bands): modelled dense rows. Context-parallel
  /// and MoE rows add no fitted parameter; they check the model's prediction with the calibration of the dense
  /// rows.
  [[nodiscard]] bool calibrates() const { return modelled() && workload == "dense"; }
};

/// Errors of a set of rows: |predicted / measured - 1| over the rows that gave a comparison.
struct ErrorSummary {
  int rows = 0;    ///< rows with a comparison
  int failed = 0;  ///< rows without one
  double mean_abs = 0.0;
  double max_abs = 0.0;
  double rms = 0.0;
  /// Adds one row (a failed one when it has no comparison).
  void add(const ValidationRow& row);
  /// "mean |error| 2.1 %, max 6.3 %, RMS 2.8 % over 24 rows" (and the failed rows, if any).
  [[nodiscard]] std::string text() const;
};

/// Summary of the modelled rows of `rows` for which `keep` holds (all modelled rows when empty).
ErrorSummary summarize(const std::vector<ValidationRow>& rows,
                       const std::function<bool(const ValidationRow&)>& keep = {});

/// A device group's training fractions.
struct TrainingFractions {
  double matmul = 1.0;
  double memory = 1.0;
};

/// The result of fitting one calibration group.
struct CalibrationFit {
  std::string group;
  TrainingFractions fractions;
  ErrorSummary in_sample;  ///< the fitted rows with the fitted fractions
  int evaluations = 0;     ///< objective evaluations the simplex used
};

/// The suite's scenarios, loaded once. Thread-compatible; evaluate() runs rows on `threads` threads.
class ValidationSuite {
 public:
  /// Loads every *.toml under `directory` (sorted by name). A scenario that does not load becomes a row with
  /// its error. Throws std::runtime_error when the directory cannot be read.
  static ValidationSuite load(const std::filesystem::path& directory, const models::Catalog& catalog);

  /// Predicts every row whose index `select` accepts (all when empty) with `catalog`'s devices, on up to
  /// `threads` threads. Rows come back in file order; the result does not depend on the thread count.
  [[nodiscard]] std::vector<ValidationRow> evaluate(const models::Catalog& catalog, int threads = 1,
                                                    const std::function<bool(size_t)>& select = {}) const;

  [[nodiscard]] size_t size() const { return entries_.size(); }
  /// The rows as loaded, without predictions (their grouping keys and exclusion reasons).
  [[nodiscard]] const std::vector<ValidationRow>& rows() const { return rows_; }

  /// Fits the training fractions of calibration group `group` on the modelled rows of that group accepted by
  /// `use` (all of them when empty), starting from `catalog`'s values. Throws std::invalid_argument when no
  /// row qualifies.
  [[nodiscard]] CalibrationFit fit(const models::Catalog& catalog, const std::string& group, int threads = 1,
                                   const std::function<bool(const ValidationRow&)>& use = {}) const;

 private:
  struct Entry {
    std::optional<Scenario> scenario;
    std::string load_error;
  };
  std::vector<Entry> entries_;
  std::vector<ValidationRow> rows_;
  std::shared_ptr<ClusterCache> clusters_;
};

/// `catalog` with every device of calibration group `group` given `fractions`.
models::Catalog with_fractions(const models::Catalog& catalog, const std::string& group, TrainingFractions fractions);

/// One dataset held out: its rows predicted with the groups it has rows in refitted on the other datasets.
struct HeldOutDataset {
  std::string dataset;
  std::vector<CalibrationFit> fits;  ///< one per refitted group
  std::vector<ValidationRow> rows;   ///< the held-out dataset's rows, predicted
  ErrorSummary summary;              ///< over its modelled rows
};

/// Leave-one-source-out over every dataset with modelled rows.
std::vector<HeldOutDataset> leave_one_dataset_out(const ValidationSuite& suite, const models::Catalog& catalog,
                                                  int threads = 1);

}  // namespace clustersim::sim
