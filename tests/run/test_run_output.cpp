// run_scenario_file, write_run and write_run_trace (sim/run/run_output.hpp): the one call behind `clustersim
// run` for both kinds returns the same /summary row, groups and report as the recipes it is made of, and
// write_run writes exactly that.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/step_report.hpp"
#include "sim/run/run_output.hpp"
#include "sim/run/run_scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/sweep/summary_file.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios";
const fs::path kSpot = kScenarios / "azure" / "gpt3-175b-h100-spot-5pct.toml";
const fs::path kServing = kScenarios / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// A fresh directory under the system's temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("clustersim-run-output-" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

/// Equal values, NaN equal to NaN (a column without a value holds NaN).
bool same_values(const SummaryColumn& a, const SummaryColumn& b) {
  const auto* x = std::get_if<std::vector<double>>(&a.values);
  const auto* y = std::get_if<std::vector<double>>(&b.values);
  if (x == nullptr || y == nullptr) return a.values == b.values;
  return std::equal(x->begin(), x->end(), y->begin(), y->end(),
                    [](double p, double q) { return p == q || (std::isnan(p) && std::isnan(q)); });
}

void expect_same_columns(const std::vector<SummaryColumn>& got, const std::vector<SummaryColumn>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].units, want[i].units) << got[i].name;
    EXPECT_EQ(got[i].description, want[i].description) << got[i].name;
    EXPECT_TRUE(same_values(got[i], want[i])) << got[i].name;
  }
}

TEST(RunOutput, TrainingRunIsTheRecipesRowGroupsMetadataAndReport) {
  const std::vector<std::string> overrides{"job.replications=20"};
  RunOptions options;
  options.command_line = "clustersim run spot.toml";
  int64_t ticks = 0;
  options.progress = [&ticks](int64_t, int64_t) { ++ticks; };
  const RunOutput out = run_scenario_file(kSpot, overrides, catalog(), options);

  const Scenario sc = load_scenario(kSpot, overrides, catalog());
  const RunResult run = run_scenario(sc, catalog());
  EXPECT_EQ(out.kind, "training");
  EXPECT_EQ(out.scenario_name, sc.name);
  expect_same_columns(out.summary, run_summary_columns(sc, run));
  ASSERT_EQ(out.groups.size(), 3u);
  EXPECT_EQ(out.groups[0].path, "runs/0/stages");
  expect_same_columns(out.groups[0].columns, stage_columns(run.step));
  EXPECT_EQ(out.groups[1].path, "runs/0/critical_path_waits");
  expect_same_columns(out.groups[1].columns, critical_path_wait_columns(run.step));
  EXPECT_EQ(out.groups[2].path, "runs/0/replications");
  expect_same_columns(out.groups[2].columns, replication_columns(*run.job));
  EXPECT_EQ(out.metadata.command_line, "clustersim run spot.toml");
  EXPECT_EQ(out.metadata.seed, sc.simulation.seed);
  EXPECT_EQ(out.metadata.scenario_toml, sc.resolved_toml);
  EXPECT_EQ(out.metadata.software_version, software_version());
  EXPECT_EQ(out.report, format_step_summary(sc, catalog(), run.step, run.one_zone_report()) +
                            format_job_summary(sc, *run.job, run.on_demand_job()));
  EXPECT_NE(out.step_trace, nullptr);
  EXPECT_GE(ticks, 40);  // the progress callback saw both jobs' replications
}

TEST(RunOutput, ServingRunIsTheRecipesRowGroupsMetadataAndReport) {
  RunOptions options;
  options.command_line = "clustersim run serving.toml";
  const RunOutput out = run_scenario_file(kServing, {}, catalog(), options);

  const ServingScenario sc = load_serving_scenario(kServing, {}, catalog());
  const ServingRun run = run_serving_scenario(sc, catalog());
  EXPECT_EQ(out.kind, "serving");
  EXPECT_EQ(out.scenario_name, sc.name);
  expect_same_columns(out.summary, serving_summary_columns(sc, run));
  ASSERT_EQ(out.groups.size(), 2u);
  EXPECT_EQ(out.groups[0].path, "requests");
  expect_same_columns(out.groups[0].columns, serving_request_columns(run));
  EXPECT_EQ(out.groups[1].path, "timeseries");
  expect_same_columns(out.groups[1].columns, serving_sample_columns(run));
  EXPECT_EQ(out.metadata.seed, sc.seed);
  EXPECT_EQ(out.metadata.scenario_toml, sc.resolved_toml);
  EXPECT_EQ(out.report, format_serving_summary(sc, run));
  EXPECT_EQ(out.step_trace, nullptr);
  EXPECT_THROW(write_run_trace("unused.json", out), std::logic_error);
}

// The waits of the critical path: one row per stage other than the home stage, their times summing to the bubble
// of /summary; --stages adds the per-stage table to the report.
TEST(RunOutput, CriticalPathWaitsSumToTheBubbleAndStagesPrintsTheTable) {
  RunOptions options;
  options.stages = true;
  const RunOutput out = run_scenario_file(kSpot, {"job.replications=2"}, catalog(), options);
  const auto column = [](const std::vector<SummaryColumn>& cols, const std::string& name) -> const SummaryColumn& {
    for (const SummaryColumn& c : cols) {
      if (c.name == name) return c;
    }
    throw std::runtime_error("no column " + name);
  };
  const auto& waits = std::get<std::vector<double>>(column(out.groups.at(1).columns, "time_s").values);
  const auto& stages = std::get<std::vector<int64_t>>(column(out.groups.at(1).columns, "stage").values);
  const double bubble = std::get<std::vector<double>>(column(out.summary, "bubble_time_s").values).at(0);
  const int64_t home = std::get<std::vector<int64_t>>(column(out.summary, "critical_path_stage").values).at(0);
  double sum = 0.0;
  for (double w : waits) sum += w;
  EXPECT_NEAR(sum, bubble, 1e-12 + 1e-9 * bubble);
  EXPECT_EQ(stages.size(), 7u);  // PP 8: the fill and drain pass through every other stage
  EXPECT_EQ(std::count(stages.begin(), stages.end(), home), 0);
  EXPECT_NE(out.report.find("stages      each stage's own time"), std::string::npos);
  EXPECT_NE(out.report.find("(the critical path's pace)"), std::string::npos);
  options.stages = false;
  EXPECT_EQ(run_scenario_file(kSpot, {"job.replications=2"}, catalog(), options).report.find("each stage's own time"),
            std::string::npos);
}

TEST(RunOutput, WriteRunRoundTrips) {
  const TempDir dir;
  RunOptions options;
  options.command_line = "clustersim run serving.toml -o x.h5";
  const RunOutput out = run_scenario_file(kServing, {}, catalog(), options);
  const fs::path file = dir.path / "x.h5";
  write_run(file, out);
  const RunMetadata meta = read_results_metadata(file);
  EXPECT_EQ(meta.command_line, out.metadata.command_line);
  EXPECT_EQ(meta.seed, out.metadata.seed);
  EXPECT_EQ(meta.scenario_toml, out.metadata.scenario_toml);
  EXPECT_EQ(meta.git_sha, out.metadata.git_sha);
  // The reader returns columns in name order.
  for (const auto& [group, want] :
       {std::pair{std::string("summary"), out.summary}, std::pair{std::string("requests"), out.groups[0].columns}}) {
    std::vector<SummaryColumn> sorted = want;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    expect_same_columns(read_results_columns(file, group), sorted);
  }
}

TEST(RunOutput, OutputsAreCheckedBeforeTheRunAndFailuresAreIoErrors) {
  const TempDir dir;
  RunOptions options;
  options.output = (dir.path / "x.h5").string();
  options.trace = options.output;
  try {
    (void)run_scenario_file(kSpot, {}, catalog(), options);
    ADD_FAILURE() << "the trace on the -o file was accepted";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write --trace '" + *options.trace + "': is the -o file");
  }
  options.trace.reset();
  options.output = kServing.string();  // the scenario itself
  EXPECT_THROW((void)run_scenario_file(kServing, {}, catalog(), options), IoError);
  options.output.reset();
  options.trace = (dir.path / "t.json").string();
  options.trace_every = 0;  // a serving trace's sampling must keep every N >= 1 iterations
  EXPECT_THROW((void)run_scenario_file(kServing, {}, catalog(), options), UsageError);
  options.trace_every = 1;
  options.trace_from_s = 5.0;
  options.trace_to_s = 1.0;
  EXPECT_THROW((void)run_scenario_file(kServing, {}, catalog(), options), UsageError);
  options.trace_from_s.reset();
  options.trace_to_s.reset();
  options.trace_every = 2;  // a training scenario has no iterations to sample
  EXPECT_THROW((void)run_scenario_file(kSpot, {}, catalog(), options), UsageError);
  options.trace_every = 1;

  options.trace.reset();
  const RunOutput out = run_scenario_file(kServing, {}, catalog(), options);
  EXPECT_THROW(write_run(dir.path / "missing" / "x.h5", out), IoError);
  EXPECT_FALSE(fs::exists(dir.path / "missing"));
}

TEST(RunOutput, TheTraceIsWrittenForATrainingRun) {
  const TempDir dir;
  RunOptions options;
  options.command_line = "clustersim run cp8.toml --trace t.json";
  const RunOutput out =
      run_scenario_file(kScenarios / "azure" / "llama3-70b-128k-cp8-h100.toml", {}, catalog(), options);
  write_run_trace(dir.path / "t.json", out);
  std::ifstream in(dir.path / "t.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(text.str().find("clustersim run cp8.toml --trace t.json"), std::string::npos);
  EXPECT_THROW(write_run_trace(dir.path / "missing" / "t.json", out), IoError);
}

// simulation.fidelity = "full" through run_scenario_file reaches the trace (issue 28: it said "replica").
TEST(RunOutput, AFullFidelityTraceSaysFull) {
  const TempDir dir;
  const RunOutput out = run_scenario_file(kScenarios / "azure" / "llama3-70b-128k-cp8-h100.toml",
                                          {"simulation.fidelity=full"}, catalog(), RunOptions{});
  write_run_trace(dir.path / "t.json", out);
  std::ifstream in(dir.path / "t.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"fidelity\": \"full: "), std::string::npos);
  EXPECT_EQ(text.str().find("\"fidelity\": \"replica"), std::string::npos);
}

// Counted nouns and the report header (sim/format.hpp; issue 28: "1 replicas", a description that no longer
// described a run changed by --set).
TEST(ReportText, CountedIsSingularForOneOnly) {
  EXPECT_EQ(counted(1, "replica"), "1 replica");
  EXPECT_EQ(counted(0, "replica"), "0 replicas");
  EXPECT_EQ(counted(4, "replica"), "4 replicas");
  EXPECT_EQ(counted(1, "microbatch", "microbatches"), "1 microbatch");
  EXPECT_EQ(counted(48, "microbatch", "microbatches"), "48 microbatches");
}

TEST(ReportText, TheHeaderMarksTheFilesDescriptionUnderOverrides) {
  EXPECT_EQ(report_header("n", "d", {}), "n\n  d\n");
  EXPECT_EQ(report_header("n", "", {"a.b=1"}), "n\n");
  EXPECT_EQ(report_header("n", "d", {"cluster.nodes=4", "training.precision=\"bf16\""}),
            "n\n  d\n  (the file's description; this run is the file with --set cluster.nodes=4 --set "
            "training.precision=\"bf16\")\n");
  const RunOutput out = run_scenario_file(kScenarios / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml",
                                          {"serving.replicas=1"}, catalog(), RunOptions{});
  EXPECT_NE(out.report.find("fleet       1 replica x TP 4"), std::string::npos) << out.report;
  EXPECT_NE(out.report.find("(the file's description; this run is the file with --set serving.replicas=1)"),
            std::string::npos)
      << out.report;
}

}  // namespace
}  // namespace clustersim::sim

namespace clustersim::sim {
namespace {

/// The number of complete events ("ph": "X") in a Chrome trace's text.
int64_t complete_events(const std::string& json) {
  int64_t n = 0;
  for (size_t at = json.find("\"ph\": \"X\""); at != std::string::npos; at = json.find("\"ph\": \"X\"", at + 1)) ++n;
  return n;
}

int64_t summary_integer(const RunOutput& out, const std::string& name) {
  for (const SummaryColumn& c : out.summary) {
    if (c.name == name) return std::get<std::vector<int64_t>>(c.values).at(0);
  }
  throw std::runtime_error("no column " + name);
}

size_t rows(const ColumnGroup& g) { return std::get<std::vector<int64_t>>(g.columns.at(0).values).size(); }

// A serving run's --trace: one complete event per engine iteration (as many as /summary/iterations), the same
// iterations in the -o file's /iterations group; --trace-every N keeps iterations 0, N, 2N, ...
TEST(RunOutput, AServingTraceHasAnEventPerIterationAndSamplingKeepsEveryNth) {
  const TempDir dir;
  RunOptions options;
  options.command_line = "clustersim run serving.toml --trace t.json -o x.h5 --iterations";
  options.trace = (dir.path / "t.json").string();
  options.output = (dir.path / "x.h5").string();
  options.iterations = true;
  const std::vector<std::string> shorter = {"workload.duration_s=20"};
  const RunOutput out = run_scenario_file(kServing, shorter, catalog(), options);
  const int64_t iterations = summary_integer(out, "iterations");
  ASSERT_GT(iterations, 100);
  ASSERT_NE(out.serving_trace, nullptr);
  write_run_trace(*options.trace, out);
  std::ifstream in(*options.trace);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(complete_events(json), iterations);
  EXPECT_NE(json.find("\"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": \"replica 0\"}"),
            std::string::npos);
  ASSERT_EQ(out.groups.size(), 3u);
  EXPECT_EQ(out.groups[2].path, "iterations");
  EXPECT_EQ(static_cast<int64_t>(rows(out.groups[2])), iterations);
  // Recording changes nothing of the run.
  const RunOutput plain = run_scenario_file(kServing, shorter, catalog(), RunOptions{});
  EXPECT_EQ(plain.fingerprints, out.fingerprints);
  EXPECT_EQ(plain.report, out.report);
  EXPECT_EQ(plain.serving_trace, nullptr);
  EXPECT_EQ(plain.groups.size(), 2u);
  RunOptions no_iterations;  // -o alone records nothing: no /iterations
  no_iterations.output = options.output;
  EXPECT_EQ(run_scenario_file(kServing, shorter, catalog(), no_iterations).groups.size(), 2u);
  no_iterations.output.reset();
  no_iterations.iterations = true;  // --iterations needs -o
  EXPECT_THROW((void)run_scenario_file(kServing, shorter, catalog(), no_iterations), UsageError);

  options.trace_every = 7;
  const RunOutput sampled = run_scenario_file(kServing, shorter, catalog(), options);
  write_run_trace(*options.trace, sampled);
  std::ifstream again(*options.trace);
  const std::string every7((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(complete_events(every7), (iterations + 6) / 7);
  const auto& index = std::get<std::vector<int64_t>>(sampled.groups[2].columns.at(0).values);
  ASSERT_EQ(static_cast<int64_t>(index.size()), (iterations + 6) / 7);
  for (size_t i = 0; i < index.size(); ++i) EXPECT_EQ(index[i], static_cast<int64_t>(7 * i));
}

// The report says what "engines" measures (time in iterations, not saturation) beside the running count and the KV
// occupancy, gives the batches, and the two TPOT definitions and TBT.
TEST(RunOutput, TheServingReportSaysWhatEnginesBusyMeasures) {
  const RunOutput out = run_scenario_file(kServing, {"workload.duration_s=20"}, catalog(), RunOptions{});
  for (const char* part : {"engines     in an iteration ", "% of replica-time (not saturation); ",
                           " sequences running on average over the fleet, KV cache ", "batches     ",
                           " sequences each (p50 ",
                           "TPOT        p50 ", "per request: (finish - first token) / (N - 1); e2e / N ",
                           "TBT         p50 ", "between successive tokens, over every token", "queue       peak "}) {
    EXPECT_NE(out.report.find(part), std::string::npos) << part << "\n" << out.report;
  }
  EXPECT_EQ(out.report.find("% busy"), std::string::npos);
}

}  // namespace
}  // namespace clustersim::sim
