// What `clustersim run` writes, in one place: run_scenario_file loads a scenario of any kind (training or
// serving: sim::scenario_kind, whose kinds sim/io declares; each kind's runner is one entry of run_output.cpp's
// table of kinds), checks the outputs it will be asked to write against the
// run's inputs, runs it (run_scenario / run_serving_scenario) and returns everything the command prints or
// writes: the /summary row, the further column groups, the root attributes and the text report. write_run
// writes the HDF5 results file (docs/hdf5-schema.md) and write_run_trace the training step's Chrome trace
// (sim/output/chrome_trace.hpp). The CLI only parses options, calls these and prints.
//
// A light header: no HDF5, TOML or simulation includes (the trace's data stays behind an opaque pointer).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/output/output_path.hpp"
#include "sim/output/results_file.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// Told during a run's job Monte Carlo: replications finished, and the most that may run (a progress display).
using RunProgress = std::function<void(int64_t replications_done, int64_t replications_planned)>;

/// What `clustersim run --what-if` asks for (docs/what-if.md; computed by sim/run/what_if.hpp).
struct WhatIfRequest {
  bool enabled = false;           ///< the standard set of perturbations (--what-if)
  std::vector<std::string> user;  ///< --what-if-set KEY=VALUE (the --set syntax): one more row each, in order
  /// With `enabled`: only these rows of the standard set (analysis.what_if's names); empty: all of them
  std::vector<std::string> only;
  /// Whether a what-if runs at all (the standard set, or only the user's rows).
  [[nodiscard]] bool any() const { return enabled || !user.empty(); }
};

/// How `clustersim run` runs a scenario file.
struct RunOptions {
  std::string command_line;           ///< the whole command line: the metadata's and the trace's command_line
  std::optional<std::string> output;  ///< -o: checked before the run (check_run_outputs); written by write_run
  std::optional<std::string> trace;   ///< --trace: checked likewise
  /// --iterations (serving only, with -o; else UsageError): the -o file also gets the /iterations group.
  bool iterations = false;
  /// Serving only (a training scenario refuses them: UsageError): which engine iterations --trace and the HDF5
  /// /iterations group hold: every trace_every-th (>= 1, else UsageError) that starts in [trace_from_s,
  /// trace_to_s) (s; from <= to, else UsageError), at most 2^20 (sim::kMaxIterationRecords).
  int64_t trace_every = 1;
  std::optional<double> trace_from_s;
  std::optional<double> trace_to_s;
  RunProgress progress;               ///< told after each job replication (training with a [job]); may be empty
  /// --what-if / --what-if-set: after the run, the what-if table (RunOutput: the "what_if" group, the report's
  /// table). A training what-if re-simulates the step only; a serving one re-runs the fleet.
  WhatIfRequest what_if;
  /// --stages: the training report also prints the per-stage table (format_stage_table) after the breakdown
  bool stages = false;
};

/// The training step's timeline and what the Chrome trace says about it (defined in run_output.cpp).
struct StepTrace;
/// A serving run's recorded engine iterations and what their Chrome trace says (defined in run_output.cpp).
struct ServingIterationTrace;

/// Everything one run writes or prints.
struct RunOutput {
  std::string kind;                    ///< "training" | "serving"
  std::string scenario_name;           ///< [scenario] name
  std::vector<SummaryColumn> summary;  ///< the /summary row: run_summary_columns / serving_summary_columns
  /// training: runs/0/stages, runs/0/critical_path_waits (and runs/0/replications with a [job]); serving:
  /// requests, timeseries; then, with
  /// RunOptions::what_if, the "what_if" group (what_if_group)
  std::vector<ColumnGroup> groups;
  RunMetadata metadata;                ///< version, git sha, the command line, the seed, the resolved TOML
  std::string report;                  ///< the text report `clustersim run` prints
  /// The engines' determinism fingerprints (FNV-1a over every event's time and kind; sim/engine): training
  /// "step" (and "one_zone_step" for a cluster over several zones), serving "engine". Not written; the golden
  /// files pin them (tests/regression/test_golden.cpp).
  std::vector<std::pair<std::string, uint64_t>> fingerprints;
  std::shared_ptr<const StepTrace> step_trace;  ///< training only: what write_run_trace writes; null for serving
  /// Serving with --trace only: the recorded iterations write_run_trace writes; null otherwise.
  std::shared_ptr<const ServingIterationTrace> serving_trace;
};

/// The run's "what_if" group (the what-if table: sim/run/what_if.hpp), null when it ran none.
const ColumnGroup* what_if_group(const RunOutput& run);

/// The -o and --trace paths of a run, checked against the run's `inputs` and each other before it simulates:
/// sim::check_output_path's IoError (74), or IoError "cannot write --trace 'P': is the -o file".
void check_run_outputs(const std::optional<std::string>& output, const std::optional<std::string>& trace,
                       std::vector<InputFile> inputs);

/// Loads the scenario at `path` (of the kind sim::scenario_kind says) with `overrides` (--set) against `catalog`,
/// checks options.output and
/// options.trace (check_run_outputs; before anything is simulated), runs it and returns what it writes. A
/// serving run with options.trace or options.iterations records its engine iterations (options.trace_every, ...):
/// RunOutput::serving_trace with --trace, the "iterations" group with --iterations; none otherwise (no memory). With options.what_if, the what-if analysis after the run (its
/// --what-if-set scenarios loaded before the run: their ScenarioError first). Errors: the loaders' ScenarioError / DataError / CatalogError (65), IoError
/// (74) from the output checks, and run_scenario's / run_serving_scenario's errors.
RunOutput run_scenario_file(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                            const models::Catalog& catalog, const RunOptions& options);

/// Writes `run` to the HDF5 results file `out` atomically (/summary, then the groups; root attributes from
/// run.metadata). Throws sim::IoError with the writer's message on any failure; nothing is left at `out` then.
void write_run(const std::filesystem::path& out, const RunOutput& run);

/// Writes the Chrome trace of `run` to `out` atomically: the training step's (chrome_trace.hpp) or the serving
/// run's engine iterations (serving_chrome_trace.hpp). Throws sim::IoError when the file cannot be written,
/// std::logic_error when `run` has no trace (not run with --trace), and what the writers throw.
void write_run_trace(const std::filesystem::path& out, const RunOutput& run);

}  // namespace clustersim::sim
