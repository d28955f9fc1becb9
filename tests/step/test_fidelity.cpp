// Replica and full fidelity agree on symmetric scenarios (issue 4): every data-parallel replica's timeline
// simulated gives the step time of one representative per stage, within 1 %, up to 512 GPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"

namespace clustersim::sim {
namespace {

class FidelityAgreement : public ::testing::TestWithParam<const char*> {};

TEST_P(FidelityAgreement, FullMatchesReplicaWithinOnePercent) {
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  const std::filesystem::path file = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / GetParam();
  const Scenario replica = load_scenario(file, {"simulation.fidelity=replica"}, catalog);
  const Scenario full = load_scenario(file, {"simulation.fidelity=full"}, catalog);
  const StepReport a = simulate_scenario(replica, catalog);
  const StepReport b = simulate_scenario(full, catalog);
  EXPECT_EQ(a.pipeline.replicas, 1);
  EXPECT_EQ(b.pipeline.replicas, full.parallelism.data);
  EXPECT_LE(std::abs(b.step_time / a.step_time - 1.0), 0.01) << a.step_time.value() << " vs " << b.step_time.value();
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FidelityAgreement,
                         ::testing::Values("scenarios/megatron/sc21-table1-1p7b-32gpus.toml",
                                           "scenarios/megatron/sc21-table1-39p1b-512gpus.toml",
                                           "scenarios/azure/gpt3-175b-h100-one-zone.toml"));

}  // namespace
}  // namespace clustersim::sim
