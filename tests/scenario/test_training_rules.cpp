// training_rules: [training] and [parallelism]'s rules (the gradient reduction's type, tensor-parallel overlap,
// the schedule, the layout on the cluster, the step's size), called on a checked Loader and through load_scenario.
#include <gtest/gtest.h>

#include "sim/io/cluster_rules.hpp"
#include "sim/io/model_rules.hpp"
#include "sim/io/training_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

#include <filesystem>

namespace clustersim::sim {
namespace {

using namespace rules_test;
namespace fs = std::filesystem;

TEST(TrainingRules, GradientReductionTypeFollowsThePrecisionAndTheFramework) {
  const auto reduce_dtype = [](const std::vector<std::string>& overrides) {
    const TempScenario file(kTraining);
    detail::Loader l = checked_loader(file.path(), overrides);
    detail::set_grad_reduce_default(l);
    return l.get_string("training.grad_reduce_dtype");
  };
  EXPECT_EQ(reduce_dtype({}), "fp32");                                   // Megatron, bf16
  EXPECT_EQ(reduce_dtype({"training.precision=fp16"}), "fp16");          // fp16 main gradients
  EXPECT_EQ(reduce_dtype({"training.framework=deepspeed"}), "bf16");     // communication_data_type
  EXPECT_EQ(reduce_dtype({"training.grad_reduce_dtype=fp16"}), "fp16");  // given: kept
}

TEST(TrainingRules, TensorParallelOverlapNeedsSequenceParallelism) {
  const auto overlap = [](detail::Loader& l) { detail::check_tp_comm_overlap(l); };
  EXPECT_NE(rule_error(kTraining, {"parallelism.tensor=2", "parallelism.tp_comm_overlap=true"}, overlap)
                .find("key 'parallelism.tp_comm_overlap': overlaps the all-gathers and reduce-scatters of sequence "
                      "parallelism: needs parallelism.sequence_parallel = true"),
            std::string::npos);
  EXPECT_EQ(
      rule_error(kTraining,
                 {"parallelism.tensor=2", "parallelism.tp_comm_overlap=true", "parallelism.sequence_parallel=true"},
                 overlap),
      "");
}

TEST(TrainingRules, GpipeHasNoInterleavedForm) {
  const auto shape = [](detail::Loader& l) {
    detail::check_model_shape(l);
    detail::check_parallelism_shape(l);
  };
  EXPECT_EQ(rule_error(kTraining,
                       {"parallelism.pipeline=2", "parallelism.virtual_stages=2", "parallelism.schedule=gpipe"}, shape),
            "--set:3:22: key 'parallelism.schedule': gpipe has no interleaved form: virtual_stages must be 1, got 2");
}

TEST(TrainingRules, DataIsDerivedFromTheClusterOrMustMatchIt) {
  const TempScenario file(kTraining);
  detail::Loader l = checked_loader(file.path(), {"parallelism.tensor=2"});
  detail::check_model_shape(l);
  detail::check_training_on_cluster(l, detail::check_cluster(l, catalog()), catalog());
  EXPECT_EQ(l.get_int("parallelism.data"), 16);  // 32 GPUs / tensor 2
  EXPECT_EQ(detail::layout_keys(l).data, 16);
  EXPECT_EQ(error_of(kTraining, {"parallelism.data=3"}),
            "--set:1:18: key 'parallelism.data': tensor × pipeline × data = 1 × 1 × 3 = 3, but the cluster has 32 "
            "GPUs (4 VMs × 8 per Standard_ND96isr_H100_v5): set parallelism.data = 32 (--set parallelism.data=32), "
            "or change tensor, context or pipeline, or cluster.nodes; from --set: parallelism.data=3");
}

TEST(TrainingRules, GpuCountErrorNamesWhatToChangeAndTheSetOptionsInvolved) {
  // Issue 28: `clustersim run <sc21 145.6B> --set parallelism.tensor=4` failed at the file's data line with no
  // hint. 4 x 8 x 24 = 768 of 1536 GPUs: data 48 fits, or 96 of the 8-GPU VMs hold the layout as written.
  const fs::path sc21 = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "megatron" / "sc21-table1-145p6b-1536gpus.toml";
  try {
    (void)load_scenario(sc21, {"parallelism.tensor=4"}, catalog());
    ADD_FAILURE() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              sc21.string() +
                  ":33:8: key 'parallelism.data': tensor × pipeline × data = 4 × 8 × 24 = 768, but the cluster has "
                  "1536 GPUs (192 VMs × 8 per Standard_ND96amsr_A100_v4): set parallelism.data = 48 (--set "
                  "parallelism.data=48), or change tensor, context or pipeline, or cluster.nodes (--set "
                  "cluster.nodes=96); from --set: parallelism.tensor=4");
  }
  // The file's data with a --set tensor: located at the file's data, the --set named.
  EXPECT_EQ(error_of(kTraining + "\n[parallelism]\ndata = 32\n", {"parallelism.tensor=2"}),
            "FILE:19:8: key 'parallelism.data': tensor × pipeline × data = 2 × 1 × 32 = 64, but the cluster has 32 "
            "GPUs (4 VMs × 8 per Standard_ND96isr_H100_v5): set parallelism.data = 16 (--set parallelism.data=16), "
            "or change tensor, context or pipeline, or cluster.nodes (--set cluster.nodes=8); from --set: "
            "parallelism.tensor=2");
  // No data size fits 3 pipeline stages on 32 GPUs: the other keys to change; 12 GPUs are not whole 8-GPU VMs.
  EXPECT_EQ(error_of(kTraining, {"parallelism.pipeline=3", "parallelism.data=4"}),
            "--set:2:18: key 'parallelism.data': tensor × pipeline × data = 1 × 3 × 4 = 12, but the cluster has 32 "
            "GPUs (4 VMs × 8 per Standard_ND96isr_H100_v5): no data size fits (tensor × pipeline = 3 does not "
            "divide 32): change tensor, context or pipeline, or cluster.nodes; from --set: parallelism.pipeline=3, "
            "parallelism.data=4");
  // With context parallelism its size is in the product; with zones, their nodes change with cluster.nodes.
  EXPECT_EQ(error_of(kTraining, {"parallelism.context=2", "parallelism.data=4",
                                 "cluster.zones=[{name = \"a\", nodes = 2}, {name = \"b\", nodes = 2}]"}),
            "--set:2:18: key 'parallelism.data': tensor × context × pipeline × data = 1 × 2 × 1 × 4 = 8, but the "
            "cluster has 32 GPUs (4 VMs × 8 per Standard_ND96isr_H100_v5): set parallelism.data = 16 (--set "
            "parallelism.data=16), or change tensor, context or pipeline, or cluster.nodes and cluster.zones; from "
            "--set: parallelism.context=2, parallelism.data=4");
}

TEST(TrainingRules, StepSizeIsBoundedByThePipelinePassesItKeeps) {
  // 2^24 sequences of one each on 8 data-parallel pipelines of 4 stages: 2^21 microbatches x 4 = 2^23 passes.
  const std::string e = error_of(kTraining, {"training.global_batch_size=16777216", "parallelism.pipeline=4"});
  EXPECT_NE(e.find("key 'training.global_batch_size': microbatches × pipeline × virtual_stages = "), std::string::npos)
      << e;
  EXPECT_NE(e.find("more than the step simulation keeps"), std::string::npos) << e;
  EXPECT_EQ(error_of(kTraining, {"training.global_batch_size=32768"}), "");
}

}  // namespace
}  // namespace clustersim::sim
