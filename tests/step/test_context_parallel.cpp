// Context parallelism (issue 13) against hand computations: the ring-attention exchange's closed form, the
// work split over the context ranks, the K/V block, the gradient group, and the memory per GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/hardware/catalog.hpp"
#include "models/memory/memory_model.hpp"
#include "models/network/collective_model.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/workload/transformer.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

using test::catalog;
using test::LinearNetwork;

/// Llama 3 8B at 64K tokens.
ModelConfig llama3_8b_64k() {
  ModelConfig m = test::llama3_8b();
  m.seq_length = 65536;
  return m;
}

StepSetup setup(int64_t context) {
  StepSetup s;
  s.model = llama3_8b_64k();
  s.training.global_batch_size = 8;
  s.training.micro_batch_size = 1;
  s.training.precision = Precision::bf16;
  s.training.flash_attention = true;
  s.training.kernel_fusion = KernelFusion::fused;
  s.parallelism.context = context;
  s.parallelism.data = 8 / context;
  s.parallelism.zero_stage = 1;
  return s;
}

TEST(ContextExchange, RingAttentionClosedForm) {
  const units::Seconds attention(8.0), hop(1.5), none(0.0);
  // p2p forward, c = 4: 3 hops of 1.5 s, each under a 2 s step: nothing exposed, 4.5 s hidden.
  EXPECT_DOUBLE_EQ(context_exchange_time(ContextComm::p2p, 4, false, attention, hop, none, 0.0).value(), 0.0);
  EXPECT_DOUBLE_EQ(context_exchange_time(ContextComm::p2p, 4, false, attention, hop, none, 0.1).value(), 0.45);
  // A 3 s hop: 3 x (3 - 2) = 3 s exposed, 3 x 2 s hidden.
  EXPECT_DOUBLE_EQ(
      context_exchange_time(ContextComm::p2p, 4, false, attention, units::Seconds(3.0), none, 0.1).value(),
      3.0 + 0.6);
  // p2p backward, c = 4, 2 s steps: steps 0 and 3 move one hop (1.5 s, hidden), steps 1 and 2 two (3 s: 1 s
  // exposed each), the last gradient home (1.5 s exposed): 2 + 1.5 = 3.5 s.
  EXPECT_DOUBLE_EQ(context_exchange_time(ContextComm::p2p, 4, true, attention, hop, none, 0.0).value(), 3.5);
  // c = 2: one hop under each step, then the gradient home.
  EXPECT_DOUBLE_EQ(context_exchange_time(ContextComm::p2p, 2, true, attention, hop, none, 0.0).value(), 1.5);
  // all_gather forward, c = 4: the 5 s gather under the 2 s local step: 3 s exposed.
  EXPECT_DOUBLE_EQ(
      context_exchange_time(ContextComm::all_gather, 4, false, attention, hop, units::Seconds(5.0), 0.0).value(),
      3.0);
  // backward: the gather again (3 s), 2 gradient hops hidden, the last home (1.5 s).
  EXPECT_DOUBLE_EQ(
      context_exchange_time(ContextComm::all_gather, 4, true, attention, hop, units::Seconds(5.0), 0.0).value(),
      4.5);
  EXPECT_DOUBLE_EQ(context_exchange_time(ContextComm::p2p, 1, true, attention, hop, none, 0.1).value(), 0.0);
}

TEST(ContextParallelWork, EachRankDoesItsShareOfEveryOp) {
  TrainingConfig tr;
  tr.micro_batch_size = 1;
  tr.precision = Precision::bf16;
  tr.flash_attention = true;
  tr.kernel_fusion = KernelFusion::fused;
  LayerOptions one, four;
  four.context = 4;
  const LayerWork a = transformer_layer(llama3_8b_64k(), tr, one);
  const LayerWork b = transformer_layer(llama3_8b_64k(), tr, four);
  // GEMMs at M = s/4, attention over s/4 queries and all s keys: a quarter of the FLOPs, exactly.
  EXPECT_DOUBLE_EQ(total_flops(b.forward).value() * 4.0, total_flops(a.forward).value());
  EXPECT_DOUBLE_EQ(total_flops(b.backward).value() * 4.0, total_flops(a.backward).value());
  for (const Op& op : b.forward) {
    if (op.op_class == OpClass::gemm) {
      EXPECT_EQ(op.gemm.m, 65536 / 4) << op.name;
    }
  }
  // The K/V block: b (s/c) x 2 x (8 groups x 128) x 2 bytes = 16,384 x 2 x 1,024 x 2 = 64 MiB.
  EXPECT_DOUBLE_EQ(b.context_kv_block.value(), 16384.0 * 2.0 * 1024.0 * 2.0);
  EXPECT_DOUBLE_EQ(a.context_kv_block.value(), 0.0);
  // A PyTorch model repeats K/V to all 32 heads before attention: 4x the block.
  tr.kernel_fusion = KernelFusion::compiled;
  EXPECT_DOUBLE_EQ(transformer_layer(llama3_8b_64k(), tr, four).context_kv_block.value(),
                   16384.0 * 2.0 * 4096.0 * 2.0);
  // The tensor-parallel traffic is the shard's: b (s/c) h e.
  LayerOptions tp2 = four;
  tp2.tensor = 2;
  tr.kernel_fusion = KernelFusion::fused;
  EXPECT_DOUBLE_EQ(transformer_layer(llama3_8b_64k(), tr, tp2).tp_forward.bytes_each.value(), 16384.0 * 4096.0 * 2.0);
}

TEST(ContextParallelStep, PassesExchangeKeysAndValuesAndGradientsSpanDataTimesContext) {
  const ComputeModel compute(catalog().device("H100-SXM5-80GB"));
  const double k = 1e-11;  // s per byte: a 64 MiB K/V hop takes 0.67 ms
  const LinearNetwork network(k);
  const StepProgram one = build_step_program(setup(1), compute, network);
  const StepProgram four = build_step_program(setup(4), compute, network);
  EXPECT_EQ(one.stages[0].forward[0].cp_comm.value(), 0.0);
  // The batch splits over data only: 8 sequences over data 8 are 1 microbatch, over data 2 (x context 4) 4.
  EXPECT_EQ(one.microbatches, 1);
  EXPECT_EQ(four.microbatches, 4);
  // Per layer forward: 3 hops of one K/V block, each under a quarter of the layer's attention.
  TrainingConfig tr = setup(4).training;
  LayerOptions o;
  o.context = 4;
  const LayerWork layer = transformer_layer(llama3_8b_64k(), tr, o);
  units::Seconds attention(0.0);
  for (const Op& op : layer.forward) {
    if (op.op_class == OpClass::fused_attention) {
      attention += compute.attention_time(op.flops * op.executed_fraction, Precision::bf16, op.attention_kernel);
    }
  }
  const units::Seconds hop(k * layer.context_kv_block.value());
  const double per_layer =
      context_exchange_time(ContextComm::p2p, 4, false, attention, hop, units::Seconds(0.0), kOverlapComputeSlowdown)
          .value();
  EXPECT_GT(per_layer, 0.0);
  EXPECT_NEAR(four.stages[0].forward[0].cp_comm.value(), 32.0 * per_layer, 1e-12);
  // The forward FLOPs of a microbatch on a rank: a quarter.
  EXPECT_NEAR(four.stages[0].forward[0].flops.value() * 4.0 / one.stages[0].forward[0].flops.value(), 1.0, 1e-12);
  // Gradients are reduced over data x context = 8 ranks in both layouts: the same ZeRO-1 optimizer shard.
  EXPECT_DOUBLE_EQ(four.stages[0].optimizer.value(), one.stages[0].optimizer.value());
  EXPECT_EQ(data_parallel_pattern(setup(4).parallelism).groups.size(), 1u);
  EXPECT_EQ(data_parallel_pattern(setup(4).parallelism).groups[0].size(), 8u);
}

TEST(ContextParallelMemory, ActivationsSplitOverTheShardsModelStatesOverDataTimesContext) {
  const DeviceSpec& h100 = catalog().device("H100-SXM5-80GB");
  const StepSetup s1 = setup(1), s4 = setup(4);
  // Stored activations of a layer: s/4 tokens, the flash log-sum-exp of s/4 queries: exactly a quarter.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s4.model, s4.training, s4.parallelism).value() * 4.0,
                   layer_activation_bytes(s1.model, s1.training, s1.parallelism).value());
  const MemoryReport a = estimate_memory(s1, h100), b = estimate_memory(s4, h100);
  // ZeRO-1 over data x context = 8 in both: the same model states.
  EXPECT_DOUBLE_EQ(b.stages[0].optimizer_states.value(), a.stages[0].optimizer_states.value());
  EXPECT_DOUBLE_EQ(b.stages[0].weights.value(), a.stages[0].weights.value());
  // One microbatch in flight: its activations a quarter of the CP-1 run's.
  EXPECT_NEAR(b.stages[0].activations.value() * 4.0, a.stages[0].activations.value(), 1.0);
  // The transient K/V blocks: 2 in flight and 2 gradient blocks of b (s/4) 2 (8 x 128) 2 bytes (64 MiB).
  EXPECT_NEAR(b.stages[0].transient.value() - a.stages[0].transient.value(), 4.0 * 64.0 * 1024.0 * 1024.0, 1.0);
}

}  // namespace
}  // namespace clustersim::models
