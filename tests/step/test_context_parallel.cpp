// Context parallelism (issue 13) against hand computations: the ring-attention exchange's closed form, the
// work split over the context ranks, the K/V block, the gradient group, and the memory per GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/hardware/catalog.hpp"
#include "models/memory/memory_model.hpp"
#include "models/network/collective_model.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/workload/transformer.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

using test::catalog;
using test::LinearNetwork;
using Groups = std::vector<std::vector<int64_t>>;

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

TEST(MegatronPatternsLazy, ADenseStepLeavesTheContextAndExpertPatternsUnbuilt) {
  const ComputeModel compute(catalog().device("H100-SXM5-80GB"));
  const LinearNetwork network(1e-11);
  StepSetup dense = setup(1);
  dense.parallelism.pipeline = 2;
  dense.parallelism.data = 4;
  const MegatronPatterns patterns(dense.parallelism, dense.gpus_per_node);
  EXPECT_FALSE(patterns.tensor.built());
  const StepProgram program = build_step_program(dense, compute, network, &patterns);
  // The step is the same as with patterns built by build_step_program itself.
  const StepProgram own = build_step_program(dense, compute, network);
  EXPECT_EQ(program.stages[0].forward[0].total().value(), own.stages[0].forward[0].total().value());
  EXPECT_EQ(program.stages[1].grad_sync.value(), own.stages[1].grad_sync.value());
  EXPECT_TRUE(patterns.tensor.built());
  EXPECT_TRUE(patterns.data.built());
  EXPECT_TRUE(patterns.pipeline.built());
  for (const LazyPattern* unused : {&patterns.context, &patterns.expert, &patterns.expert_tensor, &patterns.expert_model,
                                    &patterns.expert_data, &patterns.expert_intra_node, &patterns.expert_inter_node}) {
    EXPECT_FALSE(unused->built());
  }
  // A context-parallel step builds its rings.
  const StepSetup cp = setup(4);
  const MegatronPatterns with_context(cp.parallelism, cp.gpus_per_node);
  (void)build_step_program(cp, compute, network, &with_context);
  EXPECT_TRUE(with_context.context.built());
  EXPECT_FALSE(with_context.expert.built());
}

TEST(MegatronPatternsLazy, LazilyBuiltPatternsEqualTheEagerOnes) {
  std::vector<ParallelismConfig> layouts;
  for (const int64_t t : {1, 2, 8}) {
    for (const int64_t c : {1, 2}) {
      for (const int64_t p : {1, 3}) {
        for (const int64_t e : {1, 2, 4}) {
          ParallelismConfig l;
          l.tensor = t;
          l.context = c;
          l.pipeline = p;
          l.data = 4;
          l.expert = e;
          l.expert_tensor = e == 4 && t >= 2 ? 2 : 1;
          layouts.push_back(l);
        }
      }
    }
  }
  for (const ParallelismConfig& l : layouts) {
    for (const int64_t gpus_per_node : {4, 8}) {
      const MegatronPatterns m(l, gpus_per_node);
      SCOPED_TRACE(layout_text(l) + ", " + std::to_string(gpus_per_node) + " GPUs a node");
      // The expert split first: it builds the expert groups it splits.
      const NodeSplit split = split_by_node(expert_parallel_pattern(l), gpus_per_node);
      EXPECT_EQ(m.expert_intra_node.get().groups, l.expert > 1 ? split.intra.groups : Groups{});
      EXPECT_EQ(m.expert_inter_node.get().groups, l.expert > 1 ? split.inter.groups : Groups{});
      EXPECT_EQ(m.tensor.get().groups, tensor_parallel_pattern(l).groups);
      EXPECT_EQ(m.data.get().groups, data_parallel_pattern(l).groups);
      EXPECT_EQ(m.pipeline.get().groups, pipeline_pattern(l).groups);
      EXPECT_EQ(m.context.get().groups, context_parallel_pattern(l).groups);
      EXPECT_EQ(m.expert.get().groups, expert_parallel_pattern(l).groups);
      EXPECT_EQ(m.expert_tensor.get().groups, expert_tensor_pattern(l).groups);
      EXPECT_EQ(m.expert_model.get().groups, expert_model_pattern(l).groups);
      EXPECT_EQ(m.expert_data.get().groups, expert_data_pattern(l).groups);
      EXPECT_EQ(m.tensor.get().hash(), tensor_parallel_pattern(l).hash());
    }
  }
}

TEST(MegatronPatternsLazy, ConcurrentFirstUsesBuildOnce) {
  ParallelismConfig l;
  l.tensor = 8;
  l.pipeline = 4;
  l.data = 32;
  const MegatronPatterns m(l, 8);
  std::vector<const CommPattern*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] { seen[i] = &m.data.get(); });
  }
  for (std::thread& th : threads) th.join();
  for (const CommPattern* s : seen) EXPECT_EQ(s, seen.front());
  EXPECT_EQ(seen.front()->groups, data_parallel_pattern(l).groups);
  // An empty pattern can be given its groups once, before it is used; a built one cannot.
  MegatronPatterns given;
  CommPattern two;
  two.groups = {{0, 1}};
  given.expert.set(two);
  EXPECT_EQ(given.expert.get().groups, two.groups);
  EXPECT_TRUE(given.tensor.get().groups.empty());
  EXPECT_THROW(given.tensor.set(two), std::logic_error);
}

}  // namespace
}  // namespace clustersim::models
