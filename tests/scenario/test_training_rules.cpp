// training_rules: [training] and [parallelism]'s rules (the gradient reduction's type, tensor-parallel overlap,
// the schedule, the layout on the cluster, the step's size), called on a checked Loader and through load_scenario.
#include <gtest/gtest.h>

#include "sim/io/cluster_rules.hpp"
#include "sim/io/model_rules.hpp"
#include "sim/io/training_rules.hpp"
#include "tests/scenario/rules_test_support.hpp"

namespace clustersim::sim {
namespace {

using namespace rules_test;

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
            "GPUs (4 VMs × 8 per Standard_ND96isr_H100_v5)");
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
