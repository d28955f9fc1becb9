#include "sim/run/run_output.hpp"

#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/chrome_trace.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/serving_chrome_trace.hpp"
#include "sim/output/step_report.hpp"
#include "sim/run/run_inputs.hpp"
#include "sim/run/run_scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/run/what_if.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

struct StepTrace {
  RunResult run;         ///< run.step.pipeline holds the spans
  ChromeTraceInfo info;  ///< the scenario's layout and the metadata written into "otherData"
};

struct ServingIterationTrace {
  std::vector<IterationRecord> records;
  ServingTraceInfo info;
};

namespace {

constexpr const char* kWhatIfGroup =
    "one row per what-if perturbation, one change at a time, the baseline first (docs/what-if.md)";

RunMetadata metadata_of(const std::string& command_line, uint64_t seed, const std::string& resolved_toml) {
  RunMetadata meta;
  meta.software_version = software_version();
  meta.git_sha = git_sha();
  meta.command_line = command_line;
  meta.seed = seed;
  meta.scenario_toml = resolved_toml;
  return meta;
}

constexpr const char* kIterationsGroup =
    "one row per recorded engine iteration (--iterations): every --trace-every-th in [--trace-from, --trace-to), at "
    "most 2^20 (docs/hdf5-schema.md)";

/// The iterations a serving run records: with --trace or --iterations, those options.trace_every, trace_from_s and
/// trace_to_s select; none otherwise. UsageError on --iterations without -o, every < 1, a non-finite or negative
/// time, or from > to.
IterationSampling iteration_sampling(const RunOptions& options) {
  IterationSampling s;
  if (options.iterations && !options.output) throw UsageError("--iterations writes the -o file's /iterations: give -o");
  s.enabled = options.iterations || options.trace.has_value();
  if (options.trace_every < 1) {
    throw UsageError("--trace-every must be >= 1, got " + std::to_string(options.trace_every));
  }
  s.every = options.trace_every;
  if (options.trace_from_s) s.from_s = *options.trace_from_s;
  if (options.trace_to_s) s.to_s = *options.trace_to_s;
  if (!std::isfinite(s.from_s) || s.from_s < 0 || std::isnan(s.to_s) || s.to_s < 0 || s.to_s < s.from_s) {
    throw UsageError("--trace-from and --trace-to must be times in s with 0 <= from <= to, got " +
                     printf_string("%g and %g", s.from_s, s.to_s));
  }
  return s;
}

RunOutput run_serving_file(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                           const models::Catalog& catalog, const RunOptions& options) {
  const IterationSampling sampling = iteration_sampling(options);
  const ServingScenario scenario = load_serving_scenario(path, overrides, catalog);
  check_run_outputs(options.output, options.trace, run_inputs(scenario));
  ServingRun run = run_serving_scenario(scenario, catalog, sampling);
  RunOutput out;
  out.kind = "serving";
  out.scenario_name = scenario.name;
  out.summary = serving_summary_columns(scenario, run);
  out.groups = {{"requests", "one row per request, in arrival order", serving_request_columns(run)},
                {"timeseries", "the fleet sampled every serving.sample_interval_s", serving_sample_columns(run)}};
  if (options.iterations) {
    out.groups.push_back({"iterations", kIterationsGroup, serving_iteration_columns(scenario, run)});
  }
  out.metadata = metadata_of(options.command_line, scenario.seed, scenario.resolved_toml);
  out.report = format_serving_summary(scenario, run);
  out.fingerprints = {{"engine", run.result.fingerprint}};
  if (options.trace) {
    const ServingFleetConfig& f = scenario.serving;
    ServingTraceInfo info{scenario.name, f.replicas, f.tensor, f.pipeline, run.result.iterations, sampling,
                          run.result.inside.records_dropped,
                          {{"software_version", out.metadata.software_version},
                           {"git_sha", out.metadata.git_sha},
                           {"command_line", options.command_line}}};
    out.serving_trace = std::make_shared<const ServingIterationTrace>(
        ServingIterationTrace{std::move(run.result.inside.records), std::move(info)});
  }
  if (options.what_if.any()) {
    const ServingWhatIf what_if = serving_what_if(scenario, run, catalog, options.what_if);
    out.groups.push_back({"what_if", kWhatIfGroup, serving_what_if_columns(what_if)});
    out.report += format_serving_what_if(what_if);
  }
  return out;
}

RunOutput run_training_file(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                            const models::Catalog& catalog, const RunOptions& options) {
  if (options.iterations || options.trace_every != 1 || options.trace_from_s || options.trace_to_s) {
    throw UsageError("--iterations, --trace-every, --trace-from and --trace-to are a serving run's iterations; a "
                     "training scenario's --trace holds one step");
  }
  const Scenario scenario = load_scenario(path, overrides, catalog);
  check_run_outputs(options.output, options.trace, run_inputs(scenario));
  // --what-if asks for the whole standard set; without it the scenario's analysis.what_if names its rows.
  WhatIfRequest what_if = options.what_if;
  if (!what_if.enabled && !scenario.what_if.empty()) {
    what_if.enabled = true;
    what_if.only = scenario.what_if;
  }
  std::shared_ptr<const TrainingWhatIfPlan> what_if_plan;
  if (what_if.any()) what_if_plan = plan_training_what_if(scenario, catalog, what_if);
  StepSimulator simulator;  // the what-if rows reuse its clusters
  RunResult run = run_scenario(scenario, catalog, simulator, options.progress);
  RunOutput out;
  out.kind = "training";
  out.scenario_name = scenario.name;
  out.summary = run_summary_columns(scenario, run);
  out.groups = {{"runs/0/stages", "one row per pipeline stage of run 0", stage_columns(run.step)},
                {"runs/0/critical_path_waits",
                 "one row per stage the critical path of run 0's step waited on (its bubble), with what it was doing",
                 critical_path_wait_columns(run.step)}};
  if (run.job) {
    out.groups.push_back({"runs/0/replications", "one row per Monte Carlo replication of the job of run 0",
                          replication_columns(*run.job)});
  }
  out.metadata = metadata_of(options.command_line, scenario.simulation.seed, scenario.resolved_toml);
  out.report = format_step_summary(scenario, catalog, run.step, run.one_zone_report());
  if (options.stages) out.report += format_stage_table(run.step);
  if (run.job) out.report += format_job_summary(scenario, *run.job, run.on_demand_job());
  if (what_if_plan) {
    const TrainingWhatIf what_if = run_training_what_if(*what_if_plan, run.step, simulator);
    out.groups.push_back({"what_if", kWhatIfGroup, training_what_if_columns(what_if)});
    out.report += format_training_what_if(what_if);
  }
  out.fingerprints = {{"step", run.step.pipeline.fingerprint}};
  if (run.one_zone) out.fingerprints.emplace_back("one_zone_step", run.one_zone->pipeline.fingerprint);
  const ChromeTraceInfo info{scenario.name,
                             scenario.parallelism.tensor,
                             scenario.parallelism.data,
                             run.step.microbatches,
                             {{"software_version", out.metadata.software_version},
                              {"git_sha", out.metadata.git_sha},
                              {"command_line", options.command_line}},
                             scenario.parallelism.context,
                             scenario.simulation.fidelity == Fidelity::full};
  out.step_trace = std::make_shared<const StepTrace>(StepTrace{std::move(run), info});
  return out;
}

/// A scenario kind's runner: what run_scenario_file does for a document of that kind.
struct RunKind {
  std::string_view name;  ///< a kind sim/io declares (sim::scenario_kind)
  RunOutput (*run)(const std::filesystem::path&, const std::vector<std::string>&, const models::Catalog&,
                   const RunOptions&);
};

/// One entry per scenario kind (a new kind adds its runner here: docs/architecture.md, "Adding a scenario kind").
constexpr RunKind kRunKinds[] = {{"training", run_training_file}, {"serving", run_serving_file}};

}  // namespace

const ColumnGroup* what_if_group(const RunOutput& run) {
  for (const ColumnGroup& g : run.groups) {
    if (g.path == "what_if") return &g;
  }
  return nullptr;
}

void check_run_outputs(const std::optional<std::string>& output, const std::optional<std::string>& trace,
                       std::vector<InputFile> inputs) {
  if (output) {
    check_output_path(*output, inputs, "-o");
    inputs.push_back({*output, "the -o file"});
  }
  if (trace) check_output_path(*trace, inputs, "--trace");
  std::error_code ec1, ec2;
  if (output && trace &&
      std::filesystem::weakly_canonical(*output, ec1) == std::filesystem::weakly_canonical(*trace, ec2) && !ec1 &&
      !ec2) {
    throw IoError("cannot write --trace '" + *trace + "': is the -o file");
  }
}

RunOutput run_scenario_file(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                            const models::Catalog& catalog, const RunOptions& options) {
  const std::string_view kind = scenario_kind(path);
  for (const RunKind& k : kRunKinds) {
    if (k.name == kind) return k.run(path, overrides, catalog, options);
  }
  throw std::logic_error("run_scenario_file: no runner for the scenario kind '" + std::string(kind) + "'");
}

void write_run(const std::filesystem::path& out, const RunOutput& run) {
  try {
    write_results_file(out, run.metadata, run.summary, run.groups);
  } catch (const std::exception& e) {
    throw IoError(e.what());
  }
}

void write_run_trace(const std::filesystem::path& out, const RunOutput& run) {
  if (!run.step_trace && !run.serving_trace) {
    throw std::logic_error("write_run_trace: this " + run.kind + " run recorded no trace (run without --trace)");
  }
  try {
    if (run.serving_trace) {
      write_serving_chrome_trace(out, run.serving_trace->records, run.serving_trace->info);
    } else {
      write_chrome_trace(out, run.step_trace->run.step.pipeline, run.step_trace->info);
    }
  } catch (const std::runtime_error& e) {
    throw IoError(e.what());
  }
}

}  // namespace clustersim::sim
