// Serving scenarios with MLA and expert parallelism (issue 30): serving.expert_parallel,
// serving.data_parallel_attention and serving.redundant_experts load, and each bad value is a located error.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "tests/support/catalog.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = fs::path(CLUSTERSIM_SOURCE_DIR);
const fs::path kEp32 = kRoot / "scenarios" / "serving" / "deepseek-v3-4x-nd-h100-ep32.toml";
const fs::path kLlama = kRoot / "scenarios" / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";

using testing::catalog;

constexpr auto& error_of = testing::serving_scenario_error;

TEST(ServingMoeScenario, LoadsDeepSeekV3WithExpertParallelism) {
  const ServingScenario s = load_serving_scenario(kEp32, {}, catalog());
  EXPECT_TRUE(s.model.multi_latent_attention);
  EXPECT_EQ(s.serving.expert_parallel, 32);
  EXPECT_TRUE(s.serving.data_parallel_attention);
  EXPECT_EQ(s.serving.redundant_experts, 32);
  EXPECT_EQ(s.serving.gpus_per_replica(), 32);  // the EP group, not tensor x pipeline
  // MLA with tensor parallelism and no expert parallelism: each rank holds the whole latent cache.
  const ServingScenario tp8 = load_serving_scenario(
      kEp32, {"serving.vm_size=\"Standard_ND96isr_H200_v5\"", "serving.tensor=8", "serving.expert_parallel=1",
              "serving.data_parallel_attention=false", "serving.redundant_experts=0"},
      catalog());
  EXPECT_EQ(tp8.serving.gpus_per_replica(), 8);
  // EP with tensor-parallel attention (vLLM --enable-expert-parallel): expert_parallel = tensor.
  const ServingScenario tpep = load_serving_scenario(
      kEp32, {"serving.vm_size=\"Standard_ND96isr_H200_v5\"", "serving.tensor=8", "serving.expert_parallel=8",
              "serving.data_parallel_attention=false", "serving.redundant_experts=0"},
      catalog());
  EXPECT_EQ(tpep.serving.gpus_per_replica(), 8);
  // Absent keys: today's tensor-parallel experts.
  const ServingScenario llama = load_serving_scenario(kLlama, {}, catalog());
  EXPECT_EQ(llama.serving.expert_parallel, 1);
  EXPECT_FALSE(llama.serving.data_parallel_attention);
}

TEST(ServingMoeScenario, BadExpertParallelValuesAreLocated) {
  std::string e = error_of(kEp32, {"serving.expert_parallel=20"});
  EXPECT_NE(e.find("--set:1:25: key 'serving.expert_parallel': must divide model.num_experts + "
                   "serving.redundant_experts (288), got 20"),
            std::string::npos)
      << e;
  e = error_of(kEp32, {"serving.expert_parallel=0"});
  EXPECT_NE(e.find("key 'serving.expert_parallel'"), std::string::npos) << e;
  e = error_of(kEp32, {"serving.expert_parallel=2048"});
  EXPECT_NE(e.find("key 'serving.expert_parallel'"), std::string::npos) << e;
  e = error_of(kEp32, {"serving.expert_parallel=12"});
  EXPECT_NE(e.find("key 'serving.expert_parallel': a replica fills whole Standard_ND96isr_H100_v5 VMs of 8 GPUs"),
            std::string::npos)
      << e;
  e = error_of(kEp32, {"serving.data_parallel_attention=false"});
  EXPECT_NE(e.find("key 'serving.expert_parallel': must equal serving.tensor (1) with tensor-parallel attention"),
            std::string::npos)
      << e;
  e = error_of(kEp32, {"serving.tensor=2"});
  EXPECT_NE(e.find("key 'serving.tensor': must be 1 with serving.data_parallel_attention"), std::string::npos) << e;
  e = error_of(kEp32, {"serving.pipeline=2"});
  EXPECT_NE(e.find("key 'serving.expert_parallel': not modelled with serving.pipeline > 1"), std::string::npos) << e;
  e = error_of(kEp32, {"serving.expert_parallel=1", "serving.redundant_experts=0"});
  EXPECT_NE(e.find("key 'serving.data_parallel_attention': needs serving.expert_parallel > 1"), std::string::npos)
      << e;
  e = error_of(kEp32, {"serving.expert_parallel=1", "serving.data_parallel_attention=false"});
  EXPECT_NE(e.find("key 'serving.redundant_experts': needs serving.expert_parallel > 1"), std::string::npos) << e;
  e = error_of(kEp32, {"serving.redundant_experts=-1"});
  EXPECT_NE(e.find("key 'serving.redundant_experts'"), std::string::npos) << e;
  e = error_of(kEp32, {"serving.data_parallel_attention=1"});
  EXPECT_NE(e.find("key 'serving.data_parallel_attention'"), std::string::npos) << e;
  e = error_of(kLlama, {"serving.expert_parallel=4"});
  EXPECT_NE(e.find("key 'serving.expert_parallel': needs an MoE model (model.num_experts > 0)"), std::string::npos)
      << e;
  // Too few GPUs for the weights: the located KV-cache error at EP 8 on H100 (84 GiB per GPU).
  e = error_of(kEp32, {"serving.expert_parallel=8"});
  EXPECT_NE(e.find("key 'serving.tensor': the weights"), std::string::npos) << e;
}

}  // namespace
}  // namespace clustersim::sim
