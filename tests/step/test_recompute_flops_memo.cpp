// hardware_flops_per_iteration keeps the last model and training's per-layer recompute FLOPs on its thread: a
// run of calls that change one input at a time (model, precision, recompute mode and layer count, micro batch,
// kernel fusion, MoE routing, layouts) must give, bit for bit, what a first call on a fresh thread computes.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "models/workload/transformer.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

struct Case {
  ModelConfig model;
  TrainingConfig training;
  ParallelismConfig parallelism;
};

double on_fresh_thread(const Case& c) {
  double flops = 0.0;
  std::thread([&] { flops = hardware_flops_per_iteration(c.model, c.training, c.parallelism).value(); }).join();
  return flops;
}

TEST(RecomputeFlopsMemo, RunsOfCallsEqualFirstCalls) {
  const Catalog& catalog = test::catalog();
  std::vector<Case> cases;
  for (const std::string scenario : {"scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml",
                                     "scenarios/sweeps/deepseek-v3-like-2048-h100-32k-layouts.toml"}) {
    const sim::Scenario sc = sim::load_scenario(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / scenario, {}, catalog);
    const StepSetup base = sim::step_setup_of(sc, catalog);
    for (const ModelConfig& model : {base.model, test::llama3_8b()}) {
      for (const Recompute recompute : {Recompute::full, Recompute::selective, Recompute::none}) {
        for (const int64_t recompute_layers : {int64_t{-1}, int64_t{1}}) {
          for (const int64_t pipeline : {1, 4}) {
            for (const int64_t micro_batch : {1, 2}) {
              Case c{model, base.training, base.parallelism};
              c.training.activation_recompute = recompute;
              c.training.recompute_num_layers = recompute_layers;
              c.training.micro_batch_size = micro_batch;
              c.parallelism.pipeline = pipeline;
              c.parallelism.virtual_stages = 1;
              cases.push_back(c);
              c.training.kernel_fusion = KernelFusion::eager;  // another training, same model
              cases.push_back(c);
              c.model.dropout = 0.0;  // another model, same training
              cases.push_back(c);
              c.training.moe_router_load_balancing = MoeBalance::aux_loss;  // replaced by forced: the same
              c.training.precision = Precision::fp16;
              cases.push_back(c);
            }
          }
        }
      }
    }
  }
  ASSERT_EQ(cases.size(), 2u * 2 * 3 * 2 * 2 * 2 * 4);
  std::vector<double> first(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) first[i] = on_fresh_thread(cases[i]);
  // Forwards, backwards and each case twice in a row: every kept entry is met with equal and other inputs.
  for (int round = 0; round < 3; ++round) {
    for (size_t n = 0; n < cases.size(); ++n) {
      const size_t i = round == 1 ? cases.size() - 1 - n : n;
      for (int again = 0; again < (round == 2 ? 2 : 1); ++again) {
        const Case& c = cases[i];
        EXPECT_EQ(std::bit_cast<uint64_t>(hardware_flops_per_iteration(c.model, c.training, c.parallelism).value()),
                  std::bit_cast<uint64_t>(first[i]))
            << "case " << i << " round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace clustersim::models
