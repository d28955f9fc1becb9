// A layer pass's cost with its ops' kernel times computed once per layer (detail::layer_op_times, what
// build_step_program passes) against the reference that computes each op's time at each use (the path before):
// every PassCost part bit for bit, forward and backward, with and without the recompute, on the dense, MoE,
// multi-token-prediction and embedding/head works of the shipped layout searches' models and a Llama, over
// tensor, context (both exchanges), sequence parallelism, tp_comm_overlap, the async all-reduce, FP8, micro
// batches, recompute modes, expert layouts and the shared expert's overlap.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/parallelism/pass_cost.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }

void expect_same(const PassCost& a, const PassCost& b, const std::string& where) {
  EXPECT_EQ(bits(a.compute.value()), bits(b.compute.value())) << where;
  EXPECT_EQ(bits(a.attention.value()), bits(b.attention.value())) << where;
  EXPECT_EQ(bits(a.memory_bound.value()), bits(b.memory_bound.value())) << where;
  EXPECT_EQ(bits(a.tp_comm.value()), bits(b.tp_comm.value())) << where;
  EXPECT_EQ(bits(a.dp_comm.value()), bits(b.dp_comm.value())) << where;
  EXPECT_EQ(bits(a.cp_comm.value()), bits(b.cp_comm.value())) << where;
  EXPECT_EQ(bits(a.ep_comm.value()), bits(b.ep_comm.value())) << where;
  EXPECT_EQ(bits(a.host.value()), bits(b.host.value())) << where;
  EXPECT_EQ(bits(a.flops.value()), bits(b.flops.value())) << where;
}

StepSetup setup_of(const std::string& scenario) {
  const Catalog& catalog = test::catalog();
  const sim::Scenario sc =
      sim::load_scenario(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / scenario, {}, catalog);
  return sim::step_setup_of(sc, catalog);
}

// Every work of a layer pass build_step_program prices, compared both ways; returns the passes compared.
int compare_layer_works(const StepSetup& setup, const ComputeModel& compute, const CommunicationModel& network,
                        const std::string& label) {
  const ParallelismConfig& par = setup.parallelism;
  LayerOptions options;
  options.tensor = par.tensor;
  options.sequence_parallel = par.sequence_parallel;
  options.context = par.context;
  options.context_comm = par.context_comm;
  std::vector<LayerWork> works{transformer_layer(setup.model, setup.training, options),
                               lm_head(setup.model, setup.training, options),
                               embedding(setup.model, setup.training, options)};
  if (setup.model.mtp_num_layers > 0) works.push_back(mtp_projection(setup.model, setup.training, options));
  if (setup.model.moe()) {
    LayerOptions moe = options;
    moe.moe = true;
    moe.expert = par.expert;
    moe.expert_tensor = par.expert_tensor;
    works.push_back(transformer_layer(setup.model, setup.training, moe));
  }
  const MegatronPatterns patterns(par, setup.gpus_per_node);
  int compared = 0;
  for (size_t w = 0; w < works.size(); ++w) {
    const detail::LayerOpTimes times = detail::layer_op_times(works[w], compute, setup.training.precision);
    for (const PassKind kind : {PassKind::forward, PassKind::backward}) {
      for (const bool recompute : {true, false}) {
        const std::string where = label + " work " + std::to_string(w) +
                                  (kind == PassKind::forward ? " forward" : " backward") +
                                  (recompute ? " recompute" : "");
        expect_same(detail::pass_cost(works[w], &times, kind, setup, compute, network, patterns, recompute),
                    detail::pass_cost(works[w], nullptr, kind, setup, compute, network, patterns, recompute), where);
        ++compared;
      }
    }
  }
  return compared;
}

TEST(PassCost, SharedOpTimesEqualEachUsesOwn) {
  const test::LinearNetwork network(1e-10);
  int compared = 0, setups = 0;
  for (const std::string scenario : {"scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml",
                                     "scenarios/sweeps/deepseek-v3-like-2048-h100-32k-layouts.toml"}) {
    const StepSetup base = setup_of(scenario);
    const bool moe = base.model.moe();
    // H100 (FP8 has a mode there): the kernel tables of both searches' GPUs are read the same way.
    const ComputeModel compute(test::catalog().device(test::catalog().vm_size("Standard_ND96isr_H100_v5").device));
    for (const int64_t tensor : {1, 2, 8}) {
      for (const int64_t context : {1, 2}) {
        for (int flags = 0; flags < 32; ++flags) {
          for (const int64_t micro_batch : {1, 2}) {
            StepSetup s = base;
            s.parallelism.tensor = tensor;
            s.parallelism.context = context;
            s.parallelism.sequence_parallel = (flags & 1) != 0;
            s.parallelism.tp_comm_overlap = (flags & 2) != 0;
            s.parallelism.async_tensor_parallel_allreduce = (flags & 4) != 0;
            s.parallelism.context_comm = (flags & 8) != 0 ? ContextComm::all_gather : ContextComm::p2p;
            s.training.precision = (flags & 16) != 0 ? Precision::fp8 : Precision::bf16;
            s.training.activation_recompute =
                micro_batch == 1 ? Recompute::full : (tensor == 2 ? Recompute::selective : Recompute::none);
            s.training.micro_batch_size = micro_batch;
            s.training.moe_shared_expert_overlap = (flags & 4) != 0;
            s.parallelism.expert = moe ? (tensor == 8 ? 8 : 64) : 1;
            s.parallelism.expert_tensor = moe && tensor == 2 ? 2 : 1;
            compared += compare_layer_works(s, compute, network,
                                            scenario + " t" + std::to_string(tensor) + " c" + std::to_string(context) +
                                                " flags " + std::to_string(flags) + " b" + std::to_string(micro_batch));
            ++setups;
          }
        }
      }
    }
  }
  EXPECT_EQ(setups, 2 * 3 * 2 * 32 * 2);
  EXPECT_GT(compared, setups * 12);
}

}  // namespace
}  // namespace clustersim::models
