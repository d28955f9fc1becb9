// Mixture of experts (issue 13) against hand computations: the folded expert layout, the load-imbalance model,
// the dispatch and combine bytes per rank, parameters and FLOPs, and the memory per GPU of an EP x ETP x PP x
// DP layout.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/hardware/catalog.hpp"
#include "models/memory/memory_model.hpp"
#include "models/network/collective_model.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/host_queue.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/workload/transformer.hpp"
#include "tests/step/step_support.hpp"
#include "tests/support/models.hpp"

namespace clustersim::models {
namespace {

using test::catalog;
using test::LinearNetwork;

/// Mixtral 8x7B (Jiang et al. 2024; Megatron-LM moe README): 32 layers, h 4096, 32 heads, 8 groups, 8 experts
/// of SwiGLU 14336, top-2, vocabulary 32000.
/// Llama 3 8B's shape but for the vocabulary, the sequence and the experts.
ModelConfig mixtral() {
  ModelConfig m = test::llama3_8b();
  m.vocab_size = 32000;
  m.seq_length = 4096;
  m.num_experts = 8;
  m.moe_router_topk = 2;
  return m;
}

using Groups = std::vector<std::vector<int64_t>>;

TEST(MoeLayout, FoldedGroupsWrittenOutByHand) {
  // TP 2 x DP 4 (8 ranks a stage), PP 2, folded as ETP 2 x EP 2 x expert-data 2: rank = stage x 8 + local,
  // local = edp x 4 + ep x 2 + etp.
  ParallelismConfig p;
  p.tensor = 2;
  p.data = 4;
  p.pipeline = 2;
  p.sequence_parallel = true;
  p.expert = 2;
  p.expert_tensor = 2;
  EXPECT_EQ(p.expert_replicas(), 2);
  EXPECT_EQ(expert_tensor_pattern(p).groups,
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(expert_parallel_pattern(p).groups,
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(expert_data_pattern(p).groups,
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(expert_model_pattern(p).groups, (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(layout_text(p), "TP 2 x PP 2 x DP 4 x EP 2 x ETP 2");
  // The rules, each at its key.
  const ModelConfig m = mixtral();
  EXPECT_FALSE(expert_layout_problem(p, m));
  p.expert = 16;  // does not divide 8 experts
  EXPECT_EQ(expert_layout_problem(p, m)->key, "parallelism.expert");
  p.expert = 8;  // 8 x 2 does not divide the 8 ranks of a stage
  EXPECT_EQ(expert_layout_problem(p, m)->message,
            "expert × expert_tensor = 8 × 2 must divide tensor × context × data = 8 (the ranks of a pipeline stage, "
            "folded again for the MoE layers)");
  p.expert = 2;
  p.sequence_parallel = false;
  EXPECT_EQ(expert_layout_problem(p, m)->key, "parallelism.sequence_parallel");
  ModelConfig dense = m;
  dense.num_experts = 0;
  p.sequence_parallel = true;
  EXPECT_EQ(expert_layout_problem(p, dense)->key, "parallelism.expert");
}

TEST(MoeImbalance, FromTheMeasuredMaximalViolation) {
  // Forced balance, or one rank: 1.
  EXPECT_EQ(moe_rank_imbalance(MoeBalance::forced, 64, 8, 8, 1e4, 0.0), 1.0);
  EXPECT_EQ(moe_rank_imbalance(MoeBalance::aux_loss, 64, 64, 1, 1e4, 0.0), 1.0);
  // Aux loss, 64 experts on 64 ranks, no sampling noise: the measured MaxVio (0.62) back.
  EXPECT_NEAR(moe_rank_imbalance(MoeBalance::aux_loss, 64, 1, 64, 0.0, 0.0), 1.62, 1e-12);
  EXPECT_NEAR(moe_rank_imbalance(MoeBalance::aux_free, 64, 1, 64, 0.0, 0.0), 1.04, 1e-12);
  // 8 local experts average 8 experts' deviations: CV / sqrt(8); over 8 ranks, sqrt(2 ln 8).
  const double sigma = 0.62 / std::sqrt(2.0 * std::log(64.0));
  EXPECT_NEAR(moe_rank_imbalance(MoeBalance::aux_loss, 64, 8, 8, 0.0, 0.0),
              1.0 + sigma / std::sqrt(8.0) * std::sqrt(2.0 * std::log(8.0)), 1e-12);
  // Sampling noise of 400 token copies per rank: CV^2 += 1/400.
  EXPECT_NEAR(moe_rank_imbalance(MoeBalance::aux_free, 64, 64, 2, 400.0, 0.0),
              1.0 + std::sqrt(std::pow(0.04 / std::sqrt(2.0 * std::log(64.0)), 2) / 64.0 + 1.0 / 400.0) *
                        std::sqrt(2.0 * std::log(2.0)),
              1e-12);
  // A capacity factor caps it.
  EXPECT_EQ(moe_rank_imbalance(MoeBalance::aux_loss, 64, 1, 64, 0.0, 1.25), 1.25);
}

TEST(MoeWork, DispatchAndCombineBytesPerRank) {
  TrainingConfig tr;
  tr.micro_batch_size = 1;
  tr.precision = Precision::bf16;
  tr.flash_attention = true;
  tr.moe_router_load_balancing = MoeBalance::forced;
  LayerOptions o;
  o.tensor = 2;
  o.sequence_parallel = true;
  o.moe = true;
  o.expert = 4;
  const LayerWork w = transformer_layer(mixtral(), tr, o);
  // Routed tokens per rank: the sequence-parallel shard, 4096 / 2 = 2048; top-2 copies of h = 4096 bf16 each:
  // 2048 x 2 x 4096 x 2 B = 32 MiB sent per all-to-all (dispatch, and the same back in the combine).
  EXPECT_DOUBLE_EQ(w.expert_forward.all_to_all_bytes.value(), 2048.0 * 2.0 * 4096.0 * 2.0);
  EXPECT_DOUBLE_EQ(w.expert_backward.all_to_all_bytes.value(), w.expert_forward.all_to_all_bytes.value());
  EXPECT_DOUBLE_EQ(w.expert_forward.expert_tensor_bytes.value(), 0.0);
  // The expert GEMMs: 2 local experts (8 / 4), each on 2048 x 2 / 2 = 2048 rows (balanced), fc1 2 x 14336 wide.
  bool fc1 = false;
  for (const Op& op : w.forward) {
    if (op.name != "expert_fc1") continue;
    fc1 = true;
    EXPECT_EQ(op.gemm.m, 2048);
    EXPECT_EQ(op.gemm.n, 2 * 14336);
    EXPECT_EQ(op.gemm.k, 4096);
    EXPECT_EQ(op.gemm.batch, 2);
  }
  EXPECT_TRUE(fc1);
  // The MLP has no tensor-parallel collective left: only the attention's pair.
  EXPECT_EQ(w.tp_forward.count, 1);
  EXPECT_EQ(w.tp_backward_hidden_by.size(), 1u);
  // With expert_tensor 2 the received copies are all-gathered over the pair: 2 x 2048 x 2 x 4096 x 2 B.
  o.expert_tensor = 2;
  const LayerWork etp = transformer_layer(mixtral(), tr, o);
  EXPECT_DOUBLE_EQ(etp.expert_forward.expert_tensor_bytes.value(), 2.0 * 2048.0 * 2.0 * 4096.0 * 2.0);
  // With imbalance the busiest rank's bytes grow by its factor.
  tr.moe_router_load_balancing = MoeBalance::aux_loss;
  o.expert_tensor = 1;
  const LayerWork skewed = transformer_layer(mixtral(), tr, o);
  EXPECT_GT(skewed.expert_forward.imbalance, 1.0);
  EXPECT_DOUBLE_EQ(skewed.expert_forward.all_to_all_bytes.value(),
                   skewed.expert_forward.imbalance * 2048.0 * 2.0 * 4096.0 * 2.0);
}

TEST(MoeWork, DispatchAndCombineTimeAndTheSharedExpertOverlap) {
  const LinearNetwork network(1e-9);  // 1 ns per byte
  MegatronPatterns patterns;
  ExpertTraffic traffic;
  traffic.all_to_all_bytes = units::Bytes(1e6);     // 1 ms each way
  traffic.expert_tensor_bytes = units::Bytes(2e6);  // 2 ms all-gather, 2 ms reduce-scatter
  // Dispatch + combine + the expert-tensor pair: 2 + 4 = 6 ms on the critical path.
  EXPECT_NEAR(expert_comm_time(traffic, patterns, network, units::Seconds(0.0), 0.2).value(), 6e-3, 1e-15);
  // 2.5 ms of shared expert beside it: 3.5 ms exposed, the shared expert 0.2 x 2.5 ms slower.
  EXPECT_NEAR(expert_comm_time(traffic, patterns, network, units::Seconds(2.5e-3), 0.2).value(), 3.5e-3 + 0.5e-3,
              1e-15);
  // The allgather dispatcher: an all-gather and a reduce-scatter of all_gather_bytes.
  ExpertTraffic gather;
  gather.dispatcher = MoeDispatcher::allgather;
  gather.all_gather_bytes = units::Bytes(4e6);
  EXPECT_NEAR(expert_comm_time(gather, patterns, network, units::Seconds(0.0), 0.2).value(), 8e-3, 1e-15);
}

TEST(MoeFlex, DispatchCopiesMatchAnEnumerationOfEveryRouting) {
  // 8 experts, top-2, on 4 ranks of 2 nodes (2 ranks a node, 2 experts a rank): every one of the C(8, 2) = 28
  // expert pairs is equally likely. A token of rank 0 (node 0, local 0) crosses the network once per other
  // node it needs, and NVLink once per destination GPU of each node other than local 0 (where it enters).
  const int64_t experts = 8, ranks = 4, per_node = 2, experts_per_rank = experts / ranks;
  double network = 0.0, nvlink = 0.0, routings = 0.0;
  for (int64_t a = 0; a < experts; ++a) {
    for (int64_t b = a + 1; b < experts; ++b) {
      std::vector<bool> gpu(static_cast<size_t>(ranks), false);
      gpu[static_cast<size_t>(a / experts_per_rank)] = gpu[static_cast<size_t>(b / experts_per_rank)] = true;
      for (int64_t node = 0; node < ranks / per_node; ++node) {
        const bool hit = gpu[static_cast<size_t>(node * per_node)] || gpu[static_cast<size_t>(node * per_node + 1)];
        if (node > 0 && hit) network += 1.0;
        if (gpu[static_cast<size_t>(node * per_node + 1)]) nvlink += 1.0;  // local 1: not the entry GPU
      }
      routings += 1.0;
    }
  }
  const FlexDispatchCopies c = flex_dispatch_copies(experts, 2, ranks, per_node);
  EXPECT_NEAR(c.network, network / routings, 1e-12);
  EXPECT_NEAR(c.nvlink, nvlink / routings, 1e-12);
  EXPECT_NEAR(c.network, 22.0 / 28.0, 1e-12);  // 1 - C(4, 2) / C(8, 2)
  EXPECT_NEAR(c.nvlink, 26.0 / 28.0, 1e-12);   // 2 (1 - C(6, 2) / C(8, 2))
  // DeepSeek-V3 on EP 64 over 8 nodes: 4.63 network copies a token where alltoall sends 7 of its 7.875.
  const FlexDispatchCopies v3 = flex_dispatch_copies(256, 8, 64, 8);
  EXPECT_NEAR(v3.network, 4.633, 0.001);
  EXPECT_THROW((void)flex_dispatch_copies(8, 2, 3, 1), std::invalid_argument);
  EXPECT_THROW((void)flex_dispatch_copies(8, 9, 4, 2), std::invalid_argument);
}

TEST(MoeFlex, GroupsSplitByNodeAndDispatchTime) {
  CommPattern two;
  two.groups = {{0, 1, 8, 9}, {2, 3, 10, 11}};
  const NodeSplit split = split_by_node(two, 8);
  EXPECT_EQ(split.intra.groups, (Groups{{0, 1}, {8, 9}, {2, 3}, {10, 11}}));
  EXPECT_EQ(split.inter.groups, (Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}}));
  CommPattern uneven;
  uneven.groups = {{0, 1, 8}};
  EXPECT_TRUE(split_by_node(uneven, 8).intra.groups.empty());  // 2 + 1: unequal
  // The enumeration's layout at 1 ns per byte: network 1 MB x 22/28 x 2/1, NVLink 1 MB x 26/28 x 2/1; the
  // dispatch and the combine each take the longer: 2 x 1.857 ms.
  const LinearNetwork network(1e-9);
  MegatronPatterns patterns;
  CommPattern group;
  group.groups = {{0, 1, 8, 9}};
  const NodeSplit s = split_by_node(group, 8);
  patterns.expert.set(group);
  patterns.expert_intra_node.set(s.intra);
  patterns.expert_inter_node.set(s.inter);
  ExpertTraffic flex;
  flex.dispatcher = MoeDispatcher::flex;
  flex.token_bytes = units::Bytes(1e6);
  flex.experts = 8;
  flex.topk = 2;
  EXPECT_NEAR(expert_comm_time(flex, patterns, network, units::Seconds(0.0), 0.2).value(),
              2.0 * 1e-3 * 26.0 / 28.0 * 2.0, 1e-15);
}

TEST(MoeWork, ParametersAndFlopsCountTheActiveExperts) {
  const ModelConfig m = mixtral();
  // Mixtral 8x7B: 46.7 B parameters, 12.9 B active (Jiang et al. 2024).
  EXPECT_NEAR(parameter_count(m) / 46.7e9, 1.0, 0.01);
  ModelConfig active = m;  // the dense model of one expert's width applies 2 of them
  active.num_experts = 0;
  TrainingConfig tr;
  tr.global_batch_size = 1;
  const double dense = model_flops_per_iteration(active, tr).value();
  const double moe = model_flops_per_iteration(m, tr).value();
  // One more expert MLP (3 x 4096 x 14336 weights) and the 4096 x 8 router per token and layer, x 6 FLOPs.
  const double extra = 6.0 * 4096.0 * 32.0 * (3.0 * 4096.0 * 14336.0 + 4096.0 * 8.0);
  EXPECT_NEAR(moe - dense, extra, 1e-6 * extra);
  // Every other layer MoE (moe_layer_freq 2) after 2 dense layers: layers 2, 4, ..., 30.
  ModelConfig sparse = m;
  sparse.moe_layer_freq = 2;
  sparse.num_dense_layers_first = 2;
  EXPECT_FALSE(sparse.is_moe_layer(0));
  EXPECT_FALSE(sparse.is_moe_layer(1));
  EXPECT_TRUE(sparse.is_moe_layer(2));
  EXPECT_FALSE(sparse.is_moe_layer(3));
  EXPECT_EQ(sparse.moe_layers_in(0, 32), 15);
}

using testing::deepseek_v3;

TEST(MoeWork, DeepSeekV3ShapesGiveItsParameterCounts) {
  // The report: 671 B parameters, 37 B activated per token (both without the 14 B multi-token-prediction
  // module).
  const ModelConfig m = deepseek_v3();
  EXPECT_NEAR(parameter_count(m) / 671e9, 1.0, 0.01);
  // Activated: the model FLOPs of one token without attention's s-dependent part, / 6.
  TrainingConfig tr;
  tr.global_batch_size = 1;
  ModelConfig short_seq = m;
  short_seq.seq_length = 1;
  const double active = model_flops_per_iteration(short_seq, tr).value() / 6.0;
  EXPECT_NEAR(active / 37e9, 1.0, 0.03);

  // Its multi-token-prediction module (mtp_num_layers = 1) on the last of 8 stages: DeepSeek publishes 14 B
  // for it, storing the embedding and the output head it shares with the main model (0.93 B each) as its
  // own. The last stage holds the MTP block (an MoE layer), the 2h x h projection, its norms and a copy of the
  // word embedding (the head is the stage's own): 14 B less one 0.93 B head.
  ModelConfig mtp = m;
  mtp.mtp_num_layers = 1;
  ParallelismConfig eight;
  eight.pipeline = 8;
  const double added = chunk_parameters(mtp, eight).back() - chunk_parameters(m, eight).back() +
                       chunk_expert_parameters(mtp, eight).back() - chunk_expert_parameters(m, eight).back();
  const double head = 129280.0 * 7168.0;
  EXPECT_NEAR((added + head) / 14e9, 1.0, 0.05);
  EXPECT_EQ(parameter_count(mtp), parameter_count(m));  // the 671 B leaves the module out
  // Model FLOPs add, per token and module, the block's forward, the projection (2 x 2h x h) and the head
  // (2 h V), three times (forward and backward).
  const double extra = model_flops_per_iteration(mtp, tr).value() - model_flops_per_iteration(m, tr).value();
  ModelConfig one_moe_layer = m;  // 4 layers: 3 dense, 1 MoE; minus 3 layers: the MoE layer's forward
  one_moe_layer.num_layers = 4;
  ModelConfig three_dense = m;
  three_dense.num_layers = 3;
  const double moe_layer_flops = (model_flops_per_iteration(one_moe_layer, tr) -
                                  model_flops_per_iteration(three_dense, tr)).value() / (3.0 * 4096.0);
  EXPECT_NEAR(extra / (3.0 * 4096.0), moe_layer_flops + 4.0 * 7168.0 * 7168.0 + 2.0 * 7168.0 * 129280.0,
              1e-6 * extra);
}

TEST(MoeStep, MultiTokenPredictionWeighsOnTheLastStageOnly) {
  // Mixtral on PP 2 x DP 4 with EP 4, 16 layers a stage; one MTP module on the last stage adds an MoE layer's
  // forward, the projection, the embedding lookup and the head again: more than one layer's forward compute,
  // less than two plus the head; the first stage does not change.
  const ComputeModel compute(catalog().device("H100-SXM5-80GB"));
  const LinearNetwork network(1e-11);
  StepSetup s;
  s.model = mixtral();
  s.training.global_batch_size = 16;
  s.training.flash_attention = true;
  s.parallelism.pipeline = 2;
  s.parallelism.data = 4;
  s.parallelism.expert = 4;
  s.parallelism.zero_stage = 1;
  const StepProgram plain = build_step_program(s, compute, network);
  s.model.mtp_num_layers = 1;
  const StepProgram mtp = build_step_program(s, compute, network);
  const auto forward = [](const StepProgram& p, size_t stage) { return p.stages[stage].forward[0].compute.value(); };
  EXPECT_EQ(forward(mtp, 0), forward(plain, 0));
  const double layer = forward(plain, 0) / 16.0;  // about one layer's (stage 0 also embeds: slightly over)
  const double added = forward(mtp, 1) - forward(plain, 1);
  EXPECT_GT(added, 0.9 * layer);
  EXPECT_LT(added, 2.0 * layer + (forward(plain, 1) - forward(plain, 0)));
}

TEST(MoeStep, AllToAllOverlapHidesUnderThePartnerPass) {
  // Mixtral on PP 2 x 2 virtual stages x DP 4, EP 4, with moe_a2a_overlap. Merged passes hide each half of a
  // pass's dispatch and combine beside one block of the partner pass. With a network far faster than the
  // blocks everything hides: the merged all-to-all costs only the slowdown of what it shares SMs with,
  // kOverlapComputeSlowdown x the unmerged one. With a slow network the blocks cover part of it.
  const ComputeModel compute(catalog().device("H100-SXM5-80GB"));
  StepSetup s;
  s.model = mixtral();
  s.training.global_batch_size = 16;
  s.training.flash_attention = true;
  s.training.moe_a2a_overlap = true;
  s.parallelism.pipeline = 2;
  s.parallelism.virtual_stages = 2;
  s.parallelism.data = 4;
  s.parallelism.expert = 4;
  s.parallelism.zero_stage = 1;
  const StepProgram fast = build_step_program(s, compute, LinearNetwork(1e-15));
  for (const StageProgram& stage : fast.stages) {
    ASSERT_EQ(stage.forward_paired.size(), 2u);
    for (size_t c = 0; c < 2; ++c) {
      EXPECT_GT(stage.forward[c].ep_comm.value(), 0.0);
      EXPECT_NEAR(stage.forward_paired[c].ep_comm.value(), kOverlapComputeSlowdown * stage.forward[c].ep_comm.value(),
                  1e-9 * stage.forward[c].ep_comm.value());
      EXPECT_NEAR(stage.backward_paired[c].ep_comm.value(),
                  kOverlapComputeSlowdown * stage.backward[c].ep_comm.value(), 1e-9 * stage.backward[c].ep_comm.value());
      EXPECT_EQ(stage.forward_paired[c].compute, stage.forward[c].compute);
    }
  }
  const StepProgram slow = build_step_program(s, compute, LinearNetwork(1e-8));
  const StageProgram& stage = slow.stages[0];
  EXPECT_LT(stage.forward_paired[0].ep_comm, stage.forward[0].ep_comm);
  EXPECT_GT(stage.forward_paired[0].ep_comm.value(), kOverlapComputeSlowdown * stage.forward[0].ep_comm.value());
  // Without the overlap there are no merged costs.
  s.training.moe_a2a_overlap = false;
  EXPECT_TRUE(build_step_program(s, compute, LinearNetwork(1e-8)).stages[0].forward_paired.empty());
}

TEST(MoeMemory, RecomputeModulesRerunTheirOpsAndDropTheirTensors) {
  // DeepSeek-V3 on TP 2 with sequence parallelism, EP 8, forced balance, bf16, 4096 tokens: Megatron-Core's
  // selective recompute modules, each against the tensors it stops storing.
  const ModelConfig m = deepseek_v3();
  TrainingConfig tr;
  tr.global_batch_size = 8;
  tr.flash_attention = true;
  tr.moe_router_load_balancing = MoeBalance::forced;
  tr.activation_recompute = Recompute::selective;
  ParallelismConfig par;
  par.tensor = 2;
  par.sequence_parallel = true;
  par.data = 8;
  par.expert = 8;
  LayerOptions o;
  o.tensor = 2;
  o.sequence_parallel = true;
  LayerOptions moe = o;
  moe.moe = true;
  moe.expert = 8;
  const auto names = [](const LayerWork& w) {
    std::vector<std::string> n;
    for (const Op& op : w.recompute) n.push_back(op.name);
    return n;
  };
  const auto with = [&](uint32_t modules) {
    TrainingConfig t = tr;
    t.recompute_modules = modules;
    return t;
  };
  const auto bit = [](RecomputeModule x) { return static_cast<uint32_t>(x); };
  // Default core_attn: the fused attention kernel only.
  EXPECT_EQ(names(transformer_layer(m, tr, o)), (std::vector<std::string>{"flash_attention"}));
  EXPECT_EQ(names(transformer_layer(m, with(bit(RecomputeModule::mla_up_proj)), o)),
            (std::vector<std::string>{"q_up_proj", "kv_up_proj", "rope"}));
  EXPECT_EQ(names(transformer_layer(m, with(bit(RecomputeModule::layernorm)), o)),
            (std::vector<std::string>{"norm_1", "norm_2"}));
  EXPECT_EQ(names(transformer_layer(m, with(bit(RecomputeModule::moe_act)), moe)),
            (std::vector<std::string>{"expert_swiglu"}));
  EXPECT_EQ(names(transformer_layer(m, with(bit(RecomputeModule::mlp)), o)),
            (std::vector<std::string>{"mlp_fc1", "swiglu", "mlp_fc2"}));
  // Memory per layer and microbatch, e = 2, s = 4096, t = 2, a = 128: core_attn alone stores everything but
  // the kernel's softmax statistics.
  const double base = layer_activation_bytes(m, tr, par).value();
  const double s = 4096.0, e = 2.0, h = 7168.0, a = 128.0;
  // mla_up_proj: Q and K (192 wide a head) and V (128) not stored: s e a (2 x 192 + 128) / t.
  EXPECT_NEAR(base - layer_activation_bytes(m, with(bit(RecomputeModule::core_attn) |
                                                    bit(RecomputeModule::mla_up_proj)), par).value(),
              s * e * a * (2.0 * 192.0 + 128.0) / 2.0, 1.0);
  // layernorm: the two pre-norms' outputs, 2 e s h / t with sequence parallelism.
  EXPECT_NEAR(base - layer_activation_bytes(m, with(bit(RecomputeModule::core_attn) |
                                                    bit(RecomputeModule::layernorm)), par).value(),
              2.0 * e * s * h / 2.0, 1.0);
  // moe_act: the routed copies' activation output, received x e x f_e: (s / t) x k tokens, f_e = 2048.
  EXPECT_NEAR(moe_layer_activation_bytes(m, tr, par).value() -
                  moe_layer_activation_bytes(m, with(bit(RecomputeModule::core_attn) | bit(RecomputeModule::moe_act)),
                                             par).value(),
              (s / 2.0) * 8.0 * e * 2048.0, 1.0);
  // Without core_attn the fused kernel's statistics (4 a s / t bytes of fp32) are stored.
  EXPECT_NEAR(layer_activation_bytes(m, with(bit(RecomputeModule::layernorm)), par).value() -
                  layer_activation_bytes(m, with(bit(RecomputeModule::core_attn) | bit(RecomputeModule::layernorm)),
                                         par).value(),
              4.0 * a * s / 2.0, 1.0);
}

TEST(MoeMemory, ExpertStatesShardOverEpTimesEtpAndTheExpertDataRanks) {
  // Mixtral on TP 2 x PP 2 x DP 4 (16 GPUs) with EP 2 x ETP 2: expert-data 2. Distributed optimizer (ZeRO-1).
  StepSetup s;
  s.model = mixtral();
  s.training.global_batch_size = 32;
  s.training.micro_batch_size = 1;
  s.training.precision = Precision::bf16;
  s.training.flash_attention = true;
  s.training.moe_router_load_balancing = MoeBalance::forced;
  s.parallelism.tensor = 2;
  s.parallelism.pipeline = 2;
  s.parallelism.data = 4;
  s.parallelism.sequence_parallel = true;
  s.parallelism.expert = 2;
  s.parallelism.expert_tensor = 2;
  s.parallelism.zero_stage = 1;
  const MemoryReport r = estimate_memory(s, catalog().device("H100-SXM5-80GB"));
  // By hand, stage 0 (16 layers, the embedding): experts 16 x 8 x 3 x 4096 x 14336 / (EP 2 x ETP 2) =
  // 5.637e9 parameters; the rest: 16 x (attention 4096 x (4096 + 2 x 1024) + 4096 x 4096, its biases and norms
  // as layer_parameter_count counts them, 2 x 4096 + 2 x 1024 + 4096 + 4 x 4096) / t 2 + 16 routers 4096 x 8 +
  // the embedding 32000 x 4096 / 2.
  const double experts = 16.0 * 8.0 * 3.0 * 4096.0 * 14336.0 / 4.0;
  const double attention =
      4096.0 * (4096.0 + 2048.0) + 4096.0 * 4096.0 + 2.0 * 4096.0 + 2048.0 + 4096.0 + 4.0 * 4096.0;
  const double rest = 16.0 * attention / 2.0 + 16.0 * 4096.0 * 8.0 + 32000.0 * 4096.0 / 2.0;
  const StageMemory& first = r.stages[0];
  EXPECT_NEAR(first.parameters, experts + rest, 1.0);
  // bf16 weights and fp32 main gradients on every rank; fp32 master + Adam (12 B) sharded: the dense part over
  // data 4, the experts over expert-data 2.
  EXPECT_NEAR(first.weights.value(), 2.0 * (experts + rest), 1.0);
  EXPECT_NEAR(first.gradients.value(), 4.0 * (experts + rest), 1.0);
  EXPECT_NEAR(first.optimizer_states.value(), 12.0 * rest / 4.0 + 12.0 * experts / 2.0, 1.0);
}

}  // namespace
}  // namespace clustersim::models

// --- Host (CPU) queue: issue 25 item 3 ---------------------------------------------------------------------

TEST(HostQueue, ExposedTimeOfShortKernelsAfterASync) {
  using clustersim::models::IssuedWork;
  const auto us = clustersim::units::microseconds;
  // Three kernels of 2 us GPU, 7 us host each, from a drained queue: the GPU starts each when the host has
  // issued it: H = 7, 14, 21; G = 9, 16, 23; idle = 23 - 6 = 17 us.
  const std::vector<IssuedWork> small{{us(2.0), us(7.0)}, {us(2.0), us(7.0)}, {us(2.0), us(7.0)}};
  EXPECT_NEAR(clustersim::units::in_microseconds(clustersim::models::host_exposed_time(small)), 17.0, 1e-9);
  // A long kernel first lets the host run ahead: H = 7, 14, 21; G = 107, 109, 111: idle 7 us (the first issue).
  const std::vector<IssuedWork> long_first{{us(100.0), us(7.0)}, {us(2.0), us(7.0)}, {us(2.0), us(7.0)}};
  EXPECT_NEAR(clustersim::units::in_microseconds(clustersim::models::host_exposed_time(long_first)), 7.0, 1e-9);
  // A wait before the third item drains the queue: H = 7, 14 -> max(14, 109) = 109 + 7 = 116; G = 107, 109, 118:
  // idle 118 - 104 = 14 us.
  std::vector<IssuedWork> waits = long_first;
  waits[2].waits = true;
  EXPECT_NEAR(clustersim::units::in_microseconds(clustersim::models::host_exposed_time(waits)), 14.0, 1e-9);
}

TEST(HostQueue, CycleRotatesToTheSyncAndSteadyStateWithout) {
  using clustersim::models::IssuedWork;
  const auto us = clustersim::units::microseconds;
  // Without a wait: the steady state, max(0, host - GPU): 3 x 7 - (100 + 2 + 2) < 0 -> 0; 3 x 7 - 3 x 2 = 15.
  const std::vector<IssuedWork> gpu_bound{{us(100.0), us(7.0)}, {us(2.0), us(7.0)}, {us(2.0), us(7.0)}};
  EXPECT_EQ(clustersim::models::host_cycle_time(gpu_bound).value(), 0.0);
  const std::vector<IssuedWork> host_bound{{us(2.0), us(7.0)}, {us(2.0), us(7.0)}, {us(2.0), us(7.0)}};
  EXPECT_NEAR(clustersim::units::in_microseconds(clustersim::models::host_cycle_time(host_bound)), 15.0, 1e-9);
  // A cycle [long, short, wait + short]: rotated to [wait + short, long, short]: H = 7, 14, 21; G = 9, 114, 116:
  // idle 116 - 104 = 12 us (the long kernel then lets the host catch up).
  std::vector<IssuedWork> cycle = gpu_bound;
  cycle[2].waits = true;
  EXPECT_NEAR(clustersim::units::in_microseconds(clustersim::models::host_cycle_time(cycle)), 12.0, 1e-9);
}

TEST(HostQueue, WhereTheMoeHostWaits) {
  using clustersim::models::MoeHostWait;
  clustersim::models::TrainingConfig tr;
  EXPECT_EQ(clustersim::models::moe_host_wait(tr), MoeHostWait::before_dispatch);  // dropless
  tr.moe_expert_capacity_factor = 1.0;
  EXPECT_EQ(clustersim::models::moe_host_wait(tr), MoeHostWait::before_permutation);  // token drop, no padding
  tr.moe_pad_expert_input_to_capacity = true;
  EXPECT_EQ(clustersim::models::moe_host_wait(tr), MoeHostWait::none);  // static shapes
  // Padding makes every rank run exactly its capacity: the load is the capacity factor, whatever the balance.
  tr.moe_expert_capacity_factor = 1.25;
  tr.moe_router_load_balancing = clustersim::models::MoeBalance::forced;
  EXPECT_EQ(clustersim::models::moe_rank_load(tr, 128, 16, 8, 65536.0), 1.25);
}

TEST(HostQueue, MoeLayerIssueOrderAndKernels) {
  using namespace clustersim::models;
  ModelConfig m;
  m.num_layers = 2;
  m.hidden_size = 2048;
  m.num_attention_heads = 32;
  m.num_query_groups = 4;
  m.kv_channels = 128;
  m.seq_length = 4096;
  m.vocab_size = 151936;
  m.gated_mlp = true;
  m.num_experts = 128;
  m.moe_router_topk = 8;
  m.moe_ffn_hidden_size = 768;
  TrainingConfig tr;
  tr.micro_batch_size = 1;
  tr.global_batch_size = 8;
  tr.precision = Precision::fp8;
  tr.flash_attention = true;
  tr.moe_router_load_balancing = MoeBalance::forced;
  LayerOptions o;
  o.moe = true;
  o.expert = 8;
  const LayerWork w = transformer_layer(m, tr, o);
  const MoeIssue& issue = w.moe_issue;
  ASSERT_TRUE(issue.moe);
  ASSERT_TRUE(issue.host_waits);
  // Dropless: the host waits right before the dispatch, after the permutation; 16 local experts over 8 ranks, so
  // the received tokens are sorted after the dispatch and unsorted before the combine.
  EXPECT_EQ(issue.host_wait, issue.dispatch);
  EXPECT_EQ(w.forward[issue.dispatch - 1].name, "moe_permute");
  EXPECT_EQ(w.forward[issue.dispatch].name, "moe_sort_chunks");
  EXPECT_EQ(w.forward[issue.combine - 1].name, "moe_unsort_chunks");
  EXPECT_EQ(w.forward[issue.combine].name, "moe_unpermute");
  // Sorting reads and writes every received copy: 4096 tokens x 8 copies x 2048 x 2 bytes, twice.
  EXPECT_DOUBLE_EQ(w.forward[issue.dispatch].bytes.value(), 2.0 * 4096.0 * 8.0 * 2048.0 * 2.0);
  for (const Op& op : w.forward) {
    if (op.name == "router_topk") {
      EXPECT_EQ(op.kernels, 72);  // without --moe-router-fusion
    }
    if (op.role == GemmRole::expert && op.op_class == OpClass::gemm) {
      EXPECT_EQ(op.kernels, 16);  // per expert
    }
    if (op.name == "expert_fc1_input_fp8_cast_transpose") {
      EXPECT_EQ(op.kernels, 16);
    }
  }
  for (const Op& op : w.backward) {
    if (op.role == GemmRole::expert && op.op_class == OpClass::gemm) {
      EXPECT_EQ(op.kernels, 16);
    }
  }
  EXPECT_EQ(w.backward[issue.backward_combine - 1].name, "moe_unpermute_bwd");
  EXPECT_EQ(w.backward[issue.backward_dispatch - 1].name, "moe_sort_chunks_bwd");
  tr.moe_router_fusion = true;
  for (const Op& op : transformer_layer(m, tr, o).forward) {
    if (op.name == "router_topk") {
      EXPECT_EQ(op.kernels, 31);
    }
  }
}

TEST(HostQueue, PassHostTimeByHand) {
  using namespace clustersim::models;
  const auto us = clustersim::units::microseconds;
  // A two-op "MoE layer": op a (10 us GPU, 1 kernel), the host's wait and the dispatch, op b (1 us GPU, 3
  // kernels), the combine at the end (index 2 = the op count).
  LayerWork w;
  Op a;
  a.name = "a";
  a.kernels = 1;
  Op b;
  b.name = "b";
  b.kernels = 3;
  w.forward = {a, b};
  w.moe_issue.moe = true;
  w.moe_issue.dispatch = 1;
  w.moe_issue.combine = 2;
  w.moe_issue.host_waits = true;
  w.moe_issue.host_wait = 1;
  // Cycle: a (10 GPU, 7 host), wait (0, 7), dispatch (20 GPU = half of 40, 20 host), b (1 GPU, 21 host),
  // combine (20 GPU, 20 host). Rotated at the wait: H = 7, 27, 48, 68, 75; G = 7, 47, 49, 88, 98;
  // busy 10 + 20 + 1 + 20 = 51 us: idle 98 - 51 = 47 us.
  const std::vector<clustersim::units::Seconds> times{us(10.0), us(1.0)};
  const clustersim::units::Seconds idle =
      pass_host_time(w, PassKind::forward, false, times, {}, {}, us(40.0), us(0.0), us(0.0));
  EXPECT_NEAR(clustersim::units::in_microseconds(idle), 47.0, 1e-9);
}
