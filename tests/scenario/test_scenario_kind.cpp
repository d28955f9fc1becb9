// scenario_kind: each kind is one declaration (its tables, required tables, foreign keys, messages, rules); the
// structure check, the required tables and the load of the wrong kind read it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim/io/scenario_params.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

TEST(ScenarioKind, EveryTableOfTheKeyTableBelongsToAKindAndTheDefaultKindIsLast) {
  for (const detail::TableSpec& t : detail::scenario_tables()) {
    const bool taken = std::any_of(detail::scenario_kinds().begin(), detail::scenario_kinds().end(),
                                   [&](const detail::ScenarioKind& k) { return k.takes_table(t.name); });
    EXPECT_TRUE(taken) << "[" << t.name << "]";
  }
  EXPECT_TRUE(detail::scenario_kinds().back().marker_table.empty());
  for (const detail::ScenarioKind& k : detail::scenario_kinds()) {
    EXPECT_NE(k.check, nullptr) << k.name;
    EXPECT_NE(k.foreign_table_message.find("{table}"), std::string_view::npos) << k.name;
    EXPECT_NE(k.foreign_set_message.find("{table}"), std::string_view::npos) << k.name;
    for (const std::string_view r : k.required_tables) EXPECT_TRUE(k.takes_table(r)) << k.name << " " << r;
    if (!k.marker_table.empty()) {
      EXPECT_TRUE(k.takes_table(k.marker_table)) << k.name;
    }
  }
}

TEST(ScenarioKind, TrainingRequiresTheTablesTheReferenceDocMarksRequired) {
  // docs/scenario-format.md is generated from TableSpec::required: it describes the training kind.
  std::set<std::string_view> marked;
  for (const detail::TableSpec& t : detail::scenario_tables()) {
    if (t.required && !t.name.empty()) marked.insert(t.name);
  }
  const detail::ScenarioKind& training = detail::scenario_kind_named("training");
  EXPECT_EQ(std::set<std::string_view>(training.required_tables.begin(), training.required_tables.end()), marked);
  EXPECT_THROW((void)detail::scenario_kind_named("toy"), std::out_of_range);
}

TEST(ScenarioKind, TheMarkerTableGivesTheKind) {
  const TempScenario training(kTraining);
  EXPECT_EQ(scenario_kind(training.path()), "training");
  EXPECT_FALSE(is_serving_scenario(training.path()));
  const TempScenario serving(kServing);
  EXPECT_EQ(scenario_kind(serving.path()), "serving");
  EXPECT_TRUE(is_serving_scenario(serving.path()));
  EXPECT_EQ(&detail::kind_of(checked_loader(serving.path())), &detail::scenario_kind_named("serving"));
}

TEST(ScenarioKind, TablesAndKeysOfTheOtherKindAreErrorsWithItsMessage) {
  // At the table's name in its header ([slo]: column 2), or at the --set that gave the key.
  EXPECT_EQ(error_of(kTraining + "\n[slo]\nttft_p99_ms = 100\n"),
            "FILE:18:2: key 'slo': [slo] belongs to a serving scenario, which has a [serving] table and no training "
            "tables");
  EXPECT_EQ(error_of(kServing + "\n[job]\nsteps = 1\n", {}, true),
            "FILE:23:2: key 'job': a serving scenario ([serving]) has no [job]: it simulates a fleet, not a training "
            "run");
  EXPECT_EQ(error_of(kServing, {"simulation.variability=on"}, true),
            "--set:1:24: key 'simulation.variability': a training run's key: the variability of a synchronous "
            "training step");
}

TEST(ScenarioKind, ASetOfAnotherKindsKeyNamesTheSetAndTheFilesKind) {
  // Issue 28: `--set serving.replicas=4` on a training scenario blamed the file's [cluster] (the --set made the
  // document a serving one). The file gives the kind; the error is at the option (--set:LINE:1), naming it.
  EXPECT_EQ(error_of(kTraining, {"simulation.seed=3", "serving.replicas=4"}),
            "--set:2:1: key 'serving': --set serving.replicas=4: [serving] belongs to serving scenarios; this file is "
            "a training scenario (it has no [serving] table)");
  EXPECT_EQ(error_of(kTraining, {"serving.replicas=4"}, true),
            "--set:1:1: key 'serving': --set serving.replicas=4: [serving] belongs to serving scenarios; this file is "
            "a training scenario (it has no [serving] table)");
  EXPECT_EQ(error_of(kTraining, {"workload.rate_per_s=2"}),
            "--set:1:1: key 'workload': --set workload.rate_per_s=2: [workload] belongs to serving scenarios; this "
            "file is a training scenario (it has no [serving] table)");
  // The reverse, from either load.
  EXPECT_EQ(error_of(kServing, {"training.global_batch_size = 8"}, true),
            "--set:1:1: key 'training': --set training.global_batch_size=8: [training] belongs to training "
            "scenarios; this file is a serving scenario (it has a [serving] table)");
  EXPECT_EQ(error_of(kServing, {"cluster.nodes=2"}),
            "--set:1:1: key 'cluster': --set cluster.nodes=2: [cluster] belongs to training scenarios; this file is "
            "a serving scenario (it has a [serving] table)");
  // A --set into a table the file has keeps the table's own kind rules (here: the serving load's marker).
  EXPECT_EQ(error_of(kTraining, {"cluster.nodes=2"}, true),
            "FILE:1:1: key 'serving': required table is missing: not a serving scenario");
}

TEST(ScenarioKind, LoadingTheWrongKindSaysWhich) {
  EXPECT_EQ(error_of(kServing),
            "FILE:13:1: key 'serving': a serving scenario: `clustersim run` simulates it; this command takes training "
            "scenarios");
  // A training document given to the serving load: its own structure holds, its marker table is missing.
  EXPECT_EQ(error_of(kTraining, {}, true),
            "FILE:1:1: key 'serving': required table is missing: not a serving scenario");
  EXPECT_EQ(error_of(kServing, {}, true), "");
}

}  // namespace
}  // namespace clustersim::sim
