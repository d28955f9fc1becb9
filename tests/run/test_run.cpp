// run_scenario: the recipe of one run (step; one-zone reference for a cluster over zones; job and its on-demand
// counterpart for spot) and its /summary row, checked against the pieces it is made of.
#include <gtest/gtest.h>

#include <cmath>
#include <type_traits>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/reliability/job_model.hpp"
#include "sim/io/scenario.hpp"
#include "sim/job/job_setup.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/step_report.hpp"
#include "sim/errors.hpp"
#include "sim/run/collective_benchmark.hpp"
#include "sim/run/exit_status.hpp"
#include "sim/run/run_scenario.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "azure";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// The value of column `name` (first row), as double; NaN for a string column; fails when absent.
double column(const std::vector<SummaryColumn>& columns, const std::string& name) {
  for (const SummaryColumn& c : columns) {
    if (c.name != name) continue;
    return std::visit(
        [](const auto& v) -> double {
          using T = typename std::decay_t<decltype(v)>::value_type;
          if constexpr (std::is_arithmetic_v<T>) return v.empty() ? NAN : static_cast<double>(v.front());
          return NAN;
        },
        c.values);
  }
  ADD_FAILURE() << "no column " << name;
  return NAN;
}

TEST(RunScenario, OneZoneClusterRunsTheStepOnly) {
  const Scenario sc = load_scenario(kScenarios / "gpt3-175b-h100-one-zone.toml", {}, catalog());
  ASSERT_LE(sc.cluster.zones.size(), 1u);
  const RunResult run = run_scenario(sc, catalog());
  EXPECT_FALSE(run.one_zone);
  EXPECT_EQ(run.one_zone_report(), nullptr);
  EXPECT_EQ(run.job.has_value(), sc.job.has_value());
  EXPECT_EQ(run.step.step_time, simulate_scenario(sc, catalog()).step_time);
}

TEST(RunScenario, TwoZonesAlsoRunTheOneZoneReference) {
  const Scenario sc = load_scenario(kScenarios / "gpt3-175b-h100-two-zones.toml", {}, catalog());
  ASSERT_GE(sc.cluster.zones.size(), 2u);
  const RunResult run = run_scenario(sc, catalog());
  ASSERT_TRUE(run.one_zone);
  Scenario single = sc;
  single.cluster.zones.clear();
  EXPECT_EQ(run.one_zone->step_time, simulate_scenario(single, catalog()).step_time);
  EXPECT_EQ(run.step.step_time, simulate_scenario(sc, catalog()).step_time);
  // The row carries the penalty T / T_one_zone - 1.
  const auto columns = run_summary_columns(sc, run);
  EXPECT_NEAR(column(columns, "cross_zone_penalty"),
              run.step.step_time.value() / run.one_zone->step_time.value() - 1.0, 1e-12);
}

TEST(RunScenario, SpotJobIsComparedWithTheSameJobOnDemand) {
  const Scenario sc = load_scenario(kScenarios / "gpt3-175b-h100-spot-5pct.toml", {}, catalog());
  ASSERT_TRUE(sc.job && sc.job->spot);
  const RunResult run = run_scenario(sc, catalog());
  ASSERT_TRUE(run.job);
  ASSERT_TRUE(run.on_demand);
  // The counterpart: no evictions and the pay-as-you-go price; everything else equal.
  const models::JobSpec spot = job_spec_of(sc, run.step);
  const models::JobSpec od = on_demand_counterpart(spot);
  EXPECT_FALSE(od.interruptions.spot);
  EXPECT_TRUE(od.interruptions.eviction_trace.empty());
  EXPECT_EQ(od.cost.spot_discount, 0.0);
  EXPECT_EQ(od.steps, spot.steps);
  EXPECT_EQ(run.on_demand->mean_hours, simulate_job(od, sc.job->replications, sc.simulation.seed).mean_hours);
  // Spot is evicted, on demand is not; spot is billed at a discount.
  EXPECT_GT(run.job->mean_evictions, run.on_demand->mean_evictions);
  // The row is the step's columns followed by the job's.
  const auto columns = run_summary_columns(sc, run);
  const auto step = step_summary_columns(sc, run.step, run.one_zone_report());
  const auto job = job_summary_columns(sc, *run.job, run.on_demand_job());
  ASSERT_EQ(columns.size(), step.size() + job.size());
  for (size_t i = 0; i < step.size(); ++i) EXPECT_EQ(columns[i].name, step[i].name);
  for (size_t i = 0; i < job.size(); ++i) EXPECT_EQ(columns[step.size() + i].name, job[i].name);
}

TEST(RunScenario, ProgressCountsEveryReplicationOfBothJobsAndChangesNothing) {
  // A spot job and its on-demand counterpart, each with the "auto" checkpoint search: the callback is told
  // 1, 2, 3, ... with the same bound each time, ends within the bound, and the results equal a run without it.
  const Scenario sc = load_scenario(kScenarios / "gpt3-175b-h100-spot-5pct.toml", {"job.replications=20"}, catalog());
  std::vector<int64_t> seen;
  int64_t bound = -1;
  bool same_bound = true;
  const RunResult run = run_scenario(sc, catalog(), [&](int64_t done, int64_t planned) {
    seen.push_back(done);
    if (bound >= 0 && planned != bound) same_bound = false;
    bound = planned;
  });
  ASSERT_FALSE(seen.empty());
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i) + 1);
  EXPECT_TRUE(same_bound);
  const models::JobSpec spot = job_spec_of(sc, run.step);
  EXPECT_EQ(bound, planned_replications(spot, 20) + planned_replications(on_demand_counterpart(spot), 20));
  EXPECT_LE(seen.back(), bound);
  EXPECT_GE(seen.back(), 2 * 20);  // at least one interval of each job
  const RunResult quiet = run_scenario(sc, catalog());
  EXPECT_EQ(run.job->mean_hours, quiet.job->mean_hours);
  EXPECT_EQ(run.on_demand->mean_cost_usd, quiet.on_demand->mean_cost_usd);
}

TEST(RunScenario, SharedSimulatorGivesTheSameResultAsAPrivateOne) {
  const Scenario sc = load_scenario(kScenarios / "gpt3-175b-h100-two-zones.toml", {}, catalog());
  StepSimulator simulator;
  const RunResult first = run_scenario(sc, catalog(), simulator);
  const RunResult again = run_scenario(sc, catalog(), simulator);  // memoised flow solves
  const RunResult fresh = run_scenario(sc, catalog());
  EXPECT_EQ(first.step.step_time, again.step.step_time);
  EXPECT_EQ(first.step.step_time, fresh.step.step_time);
  EXPECT_EQ(first.one_zone->step_time, fresh.one_zone->step_time);
}

TEST(RunScenario, SharedSimulatorKeepsLayoutsThatDifferOnlyInExpertParallelismApart) {
  // The cache of communication groups is per layout: EP 8 and EP 64 with the same tensor, pipeline and data
  // sizes have other expert groups (a sweep once reused EP 64's for EP 8: 52.6 s instead of 79.1 s).
  const fs::path mixtral = kScenarios / "mixtral-8x7b-64-h100-ep8.toml";
  StepSimulator simulator;
  const Scenario ep8 = load_scenario(mixtral, {}, catalog());
  const Scenario ep2 = load_scenario(mixtral, {"parallelism.expert=2"}, catalog());
  ASSERT_EQ(ep8.parallelism.tensor, ep2.parallelism.tensor);
  ASSERT_EQ(ep8.parallelism.data, ep2.parallelism.data);
  const RunResult shared8 = run_scenario(ep8, catalog(), simulator);
  const RunResult shared2 = run_scenario(ep2, catalog(), simulator);
  EXPECT_EQ(shared2.step.step_time, run_scenario(ep2, catalog()).step.step_time);
  EXPECT_EQ(shared8.step.step_time, run_scenario(ep8, catalog()).step.step_time);
  EXPECT_NE(shared8.step.step_time, shared2.step.step_time);
}

TEST(CollectiveBenchmark, SizesDoubleAndBusBandwidthFollowsNcclTests) {
  CollectiveBenchmark b;
  b.vm_size = "Standard_ND96isr_H100_v5";
  b.nodes = 2;
  b.min_bytes = 1 << 10;
  b.max_bytes = 1 << 30;
  const auto rows = run_collective_benchmark(b, catalog());
  EXPECT_EQ(b.gpus, 16);                   // resolved: every GPU of the cluster
  EXPECT_GT(b.inter_zone_gbps, 0.0);       // resolved: the VM's Ethernet rate
  ASSERT_EQ(rows.size(), 21u);             // 1 KiB .. 1 GiB, doubling
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].bytes, int64_t{1024} << i);
    EXPECT_NEAR(rows[i].algbw, static_cast<double>(rows[i].bytes) / rows[i].time_s / 1e9, 1e-9 * rows[i].algbw);
    EXPECT_NEAR(rows[i].busbw, rows[i].algbw * 2.0 * 15.0 / 16.0, 1e-9 * rows[i].busbw);
    if (i > 0) {
      EXPECT_GE(rows[i].time_s, rows[i - 1].time_s);
    }
  }
  EXPECT_EQ(collective_summary_columns(b, rows).front().name, "bytes");
  EXPECT_NE(collective_parameters_toml(b).find("gpus = 16"), std::string::npos);
  CollectiveBenchmark too_many = b;
  too_many.gpus = 17;
  EXPECT_THROW(run_collective_benchmark(too_many, catalog()), DataError);
  CollectiveBenchmark unknown = b;
  unknown.vm_size = "Standard_NoSuchVm";
  EXPECT_THROW(run_collective_benchmark(unknown, catalog()), DataError);
}

template <typename E>
ErrorExit exit_of(const E& error) {
  return exit_for(std::make_exception_ptr(error), "run", "\n(hint)");
}

TEST(ExitStatus, OneTableForEveryCommand) {
  EXPECT_EQ(exit_of(UsageError("bad flag")).status, 64);
  EXPECT_EQ(exit_of(UsageError("bad flag")).message, "clustersim run: bad flag\n(hint)\n");
  EXPECT_EQ(exit_of(ScenarioError("a.toml", 3, 1, "model.num_layers", "must be >= 1")).status, 65);
  EXPECT_EQ(exit_of(DataError("sidecar malformed")).status, 65);
  EXPECT_EQ(exit_of(models::CatalogError("no such VM size")).status, 65);
  EXPECT_EQ(exit_of(models::CatalogError("x")).message, "clustersim: catalog error: x\n");
  // Values the models reject are bad user data, from every command (they were 70 from `sweep`).
  EXPECT_EQ(exit_of(std::invalid_argument("tensor does not divide heads")).status, 65);
  EXPECT_EQ(exit_of(std::out_of_range("no fp8 on this device")).status, 65);
  EXPECT_EQ(exit_of(IoError("cannot write out.h5")).status, 74);
  // Anything else is a failed invariant: a bug.
  EXPECT_EQ(exit_of(std::logic_error("invariant")).status, 70);
  EXPECT_EQ(exit_of(std::runtime_error("x")).message, "clustersim: internal error: x\n");
  EXPECT_EQ(exit_for(std::make_exception_ptr(42), "run").status, 70);
}

TEST(ExitStatus, ExitStatusOfRunsTheBodyAndMapsItsException) {
  EXPECT_EQ(exit_status_of("run", [] { return 0; }), 0);
  EXPECT_EQ(exit_status_of("run", []() -> int { throw IoError("disk full"); }), 74);
}

}  // namespace
}  // namespace clustersim::sim

namespace clustersim::sim {
namespace {

/// load_scenario + run_scenario of `file` under `overrides`; the ScenarioError's text, or "" when it ran.
std::string run_error(const std::string& file, const std::vector<std::string>& overrides, RunResult* out = nullptr) {
  try {
    const Scenario sc = load_scenario(kScenarios / file, overrides, catalog());
    RunResult run = run_scenario(sc, catalog());
    if (out != nullptr) *out = std::move(run);
    return "";
  } catch (const ScenarioError& e) {
    return e.what();
  }
}

// Issue 14's inputs that once ended in "internal error" (Time overflow, std::bad_alloc, an infeasible job) or ran
// unbounded (replications = 1e8): each is now a located error naming its bound, or a verdict.
TEST(RunLimits, OversizedInputsAreLocatedErrorsNamingTheirBound) {
  const std::string spot = "gpt3-175b-h100-spot-5pct.toml";
  struct Case {
    std::string set, key, words;
  };
  const std::vector<Case> cases{
      {"model.num_layers=1000000", "model.num_layers", "bound: 16,384 layers"},
      {"training.global_batch_size=1000000000000", "training.global_batch_size", "bound: 2^24 sequences"},
      {"training.global_batch_size=16777216", "training.global_batch_size", "bound: 2^20"},
      {"model.seq_length=100000000", "model.seq_length", "bound: 2^24 tokens"},
      {"model.vocab_size=1000000000000", "model.vocab_size", "bound: 2^24"},
      {"job.replications=100000000", "job.replications", "bound: 100,000"},
      {"job.train_tokens=1e30", "job.train_tokens", "bound: 1e18 tokens"},
      {"cluster.nodes=100000000", "cluster.nodes", "bound: 2^14 VMs"},
  };
  for (const Case& c : cases) {
    const std::string what = run_error(spot, {c.set});
    EXPECT_NE(what.find("--set:1:"), std::string::npos) << c.set << ": " << what;
    EXPECT_NE(what.find("key '" + c.key + "'"), std::string::npos) << c.set << ": " << what;
    EXPECT_NE(what.find(c.words), std::string::npos) << c.set << ": " << what;
  }
  // Within every key's bound but a step of more than a year at the GPUs' peak.
  const std::string what = run_error(spot, {"model.seq_length=16777216", "model.num_layers=4096",
                                            "training.global_batch_size=4096"});
  EXPECT_NE(what.find("key 'training.global_batch_size'"), std::string::npos) << what;
  EXPECT_NE(what.find("years at the"), std::string::npos) << what;
}

TEST(RunLimits, AJobThatCannotFinishIsAVerdictInTheSummary) {
  RunResult run;
  ASSERT_EQ(run_error("gpt3-175b-h100-spot-5pct.toml", {"model.num_layers=16384"}, &run), "");
  ASSERT_TRUE(run.job.has_value());
  EXPECT_FALSE(run.job->feasible);
  EXPECT_FALSE(run.job->infeasible_reason.empty());
  const Scenario sc = load_scenario(kScenarios / "gpt3-175b-h100-spot-5pct.toml", {"model.num_layers=16384"},
                                    catalog());
  const std::vector<SummaryColumn> columns = run_summary_columns(sc, run);
  EXPECT_EQ(column(columns, "job_feasible"), 0.0);
  EXPECT_TRUE(std::isnan(column(columns, "time_to_train_mean_h")));
  RunResult ok;
  ASSERT_EQ(run_error("gpt3-175b-h100-spot-5pct.toml", {}, &ok), "");
  EXPECT_EQ(column(run_summary_columns(load_scenario(kScenarios / "gpt3-175b-h100-spot-5pct.toml", {}, catalog()),
                                       ok),
                   "job_feasible"),
            1.0);
}

}  // namespace
}  // namespace clustersim::sim
