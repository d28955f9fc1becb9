// job_rules: [job], [reliability] and [cost] (one length, one checkpoint interval, a price, the eviction trace)
// and [simulation]'s variability, through load_scenario and on a checked Loader.
#include <gtest/gtest.h>

#include "sim/io/job_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

TEST(JobRules, ReliabilityAndCostNeedAJob) {
  EXPECT_EQ(error_of(kTraining + "\n[reliability]\nspot = true\n"),
            "FILE:18:1: key 'reliability': needs a [job] table (train_tokens or steps)");
  EXPECT_EQ(error_of(kTraining + "\n[job]\nsteps = 10\ntrain_tokens = 1e9\n"),
            "FILE:18:1: key 'job': give exactly one of train_tokens and steps");
  EXPECT_EQ(error_of(kTraining + "\n[job]\nsteps = 10\n"), "");
}

TEST(JobRules, TheJobTablesTakeTheirDefaultsOnlyWithAJob) {
  // The training kind's defaults_need_table: [job], [reliability] and [cost] mean nothing without [job].
  const TempScenario bare(kTraining);
  const detail::Loader without = checked_loader(bare.path());
  EXPECT_FALSE(without.has("job.replications"));
  EXPECT_FALSE(without.has("reliability.spot"));
  EXPECT_FALSE(without.has("cost.spot_discount"));
  const TempScenario job(kTraining + "\n[job]\nsteps = 10\n");
  const detail::Loader with = checked_loader(job.path());
  EXPECT_EQ(with.get_int("job.replications"), 200);
  EXPECT_FALSE(with.get_bool("reliability.spot"));
  EXPECT_TRUE(with.has("cost.spot_discount"));
  EXPECT_EQ(detail::scenario_kind_named("training").defaults_need("cost"), "job");
  EXPECT_EQ(detail::scenario_kind_named("training").defaults_need("cluster"), "");
}

TEST(JobRules, PriceComesFromTheCatalogWhenOmitted) {
  const TempScenario file(kTraining + "\n[job]\nsteps = 10\n");
  detail::Loader l = checked_loader(file.path());
  detail::check_job(l, catalog());
  EXPECT_EQ(l.get_optional_double("cost.vm_price_usd_per_hour"),
            catalog().vm_size("Standard_ND96isr_H100_v5").price_usd_per_hour);
  EXPECT_TRUE(l.learned.eviction_trace.empty());
}

TEST(JobRules, AnEvictionTraceNeedsSpotVmsAndIsReadNow) {
  const std::string text =
      kTraining + "\n[job]\nsteps = 10\n\n[reliability]\nspot_eviction_trace = \"evictions.csv\"\n";
  const TempScenario file(text, "evictions.csv", "# hours\n1.5\n3\n");
  const auto job = [](detail::Loader& l) { detail::check_job(l, catalog()); };
  {
    detail::Loader l = checked_loader(file.path());
    try {
      job(l);
      ADD_FAILURE() << "expected a ScenarioError";
    } catch (const ScenarioError& e) {
      EXPECT_EQ(e.key(), "reliability.spot_eviction_trace");
      EXPECT_NE(std::string(e.what()).find("needs reliability.spot = true"), std::string::npos) << e.what();
    }
  }
  detail::Loader l = checked_loader(file.path(), {"reliability.spot=true"});
  job(l);
  EXPECT_EQ(l.learned.eviction_trace.size(), 2u);
}

TEST(JobRules, VariabilityNumbersTakeTheirSourcedDefaultsOnlyWhenOn) {
  EXPECT_NE(error_of(kTraining, {"simulation.gpu_compute_cv=0.02"})
                .find("key 'simulation.gpu_compute_cv': has no effect unless simulation.variability = \"on\""),
            std::string::npos);
  const TempScenario file(kTraining);
  detail::Loader l = checked_loader(file.path(), {"simulation.variability=on", "simulation.slow_vm_factor=1.5"});
  detail::check_variability(l);
  const auto v = detail::variability_spec(l);
  ASSERT_TRUE(v.has_value());
  EXPECT_DOUBLE_EQ(v->gpu_compute_cv, models::kGpuComputeCv);
  EXPECT_DOUBLE_EQ(v->slow_vm_factor, 1.5);
  EXPECT_EQ(v->slow_vm_source, "set in the scenario");
}

}  // namespace
}  // namespace clustersim::sim
