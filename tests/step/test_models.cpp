// Compute, workload and alpha-beta network models against hand-checkable formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/workload/transformer.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

using test::catalog;
using test::LinearNetwork;
using test::llama3_8b;

ModelConfig gpt3_175b() {
  ModelConfig m;
  m.num_layers = 96;
  m.hidden_size = 12288;
  m.num_attention_heads = 96;
  m.vocab_size = 51200;
  m.seq_length = 2048;
  return m;
}

/// The A100 without its measured tables: the roofline alone (compute_model.hpp), as the hand calculations below
/// assume. (test_measured_kernels.cpp checks the tables.)
DeviceSpec roofline_a100() {
  DeviceSpec d = catalog().device("A100-SXM4-80GB");
  d.gemm_correction = nullptr;
  d.gemm_table.clear();
  return d;
}

TEST(ComputeModel, LargeGemmRunsAtTheMeasuredMatmulRate) {
  const DeviceSpec device = roofline_a100();
  const ComputeModel a100(device);
  // 128*108 x 256*10 tiles: exactly 10 full waves on 108 SMs, no padding; K large enough to be compute bound.
  // Rate: the measured MAMF times the device's training fraction.
  const GemmShape shape{128 * 108, 256 * 10, 8192, 1};
  const double expected = shape.flops().value() / (271.2e12 * device.training_matmul_fraction) + 4e-6;
  EXPECT_NEAR(a100.gemm_time(shape, Precision::bf16, 2.0).value(), expected, 1e-9);
}

TEST(ComputeModel, OneTileTooManyCostsAWave) {
  // The roofline alone at 271.2 TFLOP/s on 108 SMs, with memory out of the way (1e18 B/s).
  // 13824 x 256 (108 tiles of 128x256): one full wave, efficiency 1.
  // 13952 x 256 x 65536, the best candidate tile and split-K factor s (slices of K / s >= 256):
  //   128x256, s 1: 109 tiles, 2 waves: 109/216 = 0.505
  //   256x128, s 1: 55 x 2 = 110 tiles, 2 waves, padding 13952/14080: 0.504
  //   128x128, s 1: 109 x 2 = 218 tiles, 3 waves: 218/324 = 0.673
  //   128x256, s 16: 1744 tiles, 17 waves: 1744/1836 = 0.950
  //   128x128, s 16: 3488 tiles, 33 waves: 3488/3564 = 0.979      <- fastest
  //   128x64,  s 16: 6976 tiles, 65 waves, reuse 42.7/64: 0.662
  const units::FlopsPerSecond rate = units::tflops_per_second(271.2);
  const units::BytesPerSecond unlimited(1e18);
  const GemmShape full{128 * 108, 256, 65536, 1};
  const GemmShape one_more{128 * 109, 256, 65536, 1};
  const double rate_full =
      full.flops().value() / (ComputeModel::roofline_gemm_time(full, 108, rate, unlimited, 2.0).value() - 4e-6);
  const double rate_more =
      one_more.flops().value() /
      (ComputeModel::roofline_gemm_time(one_more, 108, rate, unlimited, 2.0).value() - 4e-6);
  EXPECT_NEAR(rate_full, 271.2e12, 1e6);
  EXPECT_NEAR(rate_more / rate_full, 3488.0 / 3564.0, 1e-9);
  // Without split-K (K below two slices of 256) the wave quantisation shows: 128x128 tiles, 218/324.
  const GemmShape short_k{128 * 109, 256, 384, 1};
  const GemmShape short_full{128 * 108, 256, 384, 1};
  const double ratio =
      (short_k.flops().value() / (ComputeModel::roofline_gemm_time(short_k, 108, rate, unlimited, 2.0).value() - 4e-6)) /
      (short_full.flops().value() /
       (ComputeModel::roofline_gemm_time(short_full, 108, rate, unlimited, 2.0).value() - 4e-6));
  EXPECT_NEAR(ratio, 218.0 / 324.0, 1e-9);
}

TEST(ComputeModel, SkinnyGemmIsMemoryBound) {
  const DeviceSpec device = roofline_a100();
  const ComputeModel a100(device);
  // 65536 x 256 x 256: 2 M N K = 8.6 GFLOP (32 us at 271.2 TFLOP/s) on 2 (M K + K N + M N) = 67 MB of traffic
  // (39 us at 1.70 TB/s): memory bound, at the triad bandwidth times the training memory fraction.
  const GemmShape skinny{65536, 256, 256, 1};
  const double bytes = 2.0 * (65536.0 * 256 + 256.0 * 256 + 65536.0 * 256);
  EXPECT_NEAR(a100.gemm_time(skinny, Precision::bf16, 2.0).value(),
              bytes / (1.70e12 * device.training_memory_fraction) + 4e-6, 1e-9);
}

TEST(ComputeModel, WeightGradientAccumulatingInFp32MovesItsOutputTwiceAtFourBytes) {
  // An expert's wgrad with few rows: 4096 x 3072 weights from 512 rows (2 M N K = 12.9 GFLOP, 48 us at 271.2
  // TFLOP/s). Written once in bf16 its traffic is 2 (M K + K N + M N) = 31 MB (18 us at 1.70 TB/s): math bound.
  // Accumulated into the fp32 main gradient (read and written: 8 bytes an element) it moves 2 (M K + K N) +
  // 8 M N = 106 MB (62 us): memory bound.
  const DeviceSpec device = roofline_a100();
  const ComputeModel a100(device);
  const GemmShape wgrad{4096, 3072, 512, 1};
  const double bandwidth = 1.70e12 * device.training_memory_fraction;
  const double fp32_bytes = 2.0 * (4096.0 * 512 + 512.0 * 3072) + 8.0 * 4096.0 * 3072;
  EXPECT_NEAR(a100.gemm_time(wgrad, Precision::bf16, 2.0, 8.0).value(), fp32_bytes / bandwidth + 4e-6, 1e-9);
  EXPECT_LT(a100.gemm_time(wgrad, Precision::bf16, 2.0).value(), fp32_bytes / bandwidth);
  // The layer marks exactly its weight-gradient GEMMs when gradient accumulation is fused (Megatron's default).
  TrainingConfig tr;
  tr.global_batch_size = 1;
  LayerWork w = transformer_layer(llama3_8b(), tr, LayerOptions{});
  int marked = 0;
  for (const Op& op : w.backward) {
    EXPECT_EQ(op.accumulates_fp32, op.op_class == OpClass::gemm && op.name.ends_with("_wgrad")) << op.name;
    marked += op.accumulates_fp32 ? 1 : 0;
  }
  EXPECT_EQ(marked, 4);  // qkv, out, fc1 (gate and up fused), fc2
  tr.gradient_accumulation_fusion = false;
  for (const Op& op : transformer_layer(llama3_8b(), tr, LayerOptions{}).backward) EXPECT_FALSE(op.accumulates_fp32);
}

TEST(ComputeModel, MeasuredRatesWinOverPeakRatioScaling) {
  const ComputeModel h100(catalog().device("H100-SXM5-80GB"));
  // H100 has an fp8 measurement (1402.6 TFLOP/s); tf32 has none and scales bf16's by the peak ratio.
  EXPECT_NEAR(h100.measured_matmul(Precision::fp8).value(), 1402.6e12, 1e3);
  EXPECT_NEAR(h100.achievable_matmul(Precision::fp8).value(),
              1402.6e12 * catalog().device("H100-SXM5-80GB").training_matmul_fraction, 1e3);
  EXPECT_NEAR(h100.achievable_matmul(Precision::tf32) / h100.achievable_matmul(Precision::bf16), 494.5 / 989.0,
              1e-9);
  const ComputeModel a100(catalog().device("A100-SXM4-80GB"));
  EXPECT_THROW((void)a100.achievable_matmul(Precision::fp8), std::out_of_range);
}

TEST(Workload, LayerForwardFlopsMatchMegatronsCount) {
  // Per layer forward on one TP rank: 24 b s h^2 / t (GEMMs) + 4 b s^2 h / t (attention).
  TrainingConfig tr;
  tr.micro_batch_size = 2;
  const ModelConfig m = gpt3_175b();
  LayerOptions o;
  o.tensor = 8;
  const LayerWork w = transformer_layer(m, tr, o);
  const double b = 2, s = 2048, h = 12288, t = 8;
  EXPECT_NEAR(total_flops(w.forward).value(), (24 * b * s * h * h + 4 * b * s * s * h) / t, 1.0);
  EXPECT_NEAR(total_flops(w.backward).value(), 2.0 * total_flops(w.forward).value(), 1.0);
  EXPECT_TRUE(w.recompute.empty());
  EXPECT_EQ(w.tp_forward.count, 2);
  EXPECT_EQ(w.tp_forward.bytes_each.value(), b * s * h * 2.0);
}

TEST(Workload, IterationFlopsAreMegatronsFormulas) {
  // Narayanan et al. SC'21: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recompute;
  // model FLOPs (no recompute): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  const ModelConfig m = gpt3_175b();
  TrainingConfig tr;
  tr.global_batch_size = 1536;
  tr.activation_recompute = Recompute::full;
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double megatron = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(hardware_flops_per_iteration(m, tr).value() / megatron, 1.0, 1e-12);
  EXPECT_NEAR(model_flops_per_iteration(m, tr).value() / model, 1.0, 1e-12);
  // 175B parameters: 12 l h^2 + V h within 1 %.
  EXPECT_NEAR(parameter_count(m) / 174.6e9, 1.0, 0.01);
}

double bytes_of(const std::vector<Op>& ops) {
  double sum = 0.0;
  for (const Op& op : ops) sum += op.bytes.value();
  return sum;
}

const Op& named(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  throw std::logic_error("no op " + name);
}

TEST(Workload, Llama3ParametersAreEightBillion) {
  // 8.03 B (Meta's model card): no position table (RoPE) and a separate 128256 x 4096 output layer.
  EXPECT_NEAR(parameter_count(llama3_8b()) / 8.03e9, 1.0, 0.005);
  ModelConfig tied = llama3_8b();
  tied.tie_embeddings = true;
  EXPECT_NEAR(parameter_count(llama3_8b()) - parameter_count(tied), 128256.0 * 4096.0, 1.0);
  // chunk_parameters sums to the total (p = 1: embedding and output layer on the one chunk).
  const auto chunks = chunk_parameters(llama3_8b(), ParallelismConfig{});
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_NEAR(chunks[0], parameter_count(llama3_8b()), 1.0);
}

TEST(Workload, CausalFlashAttentionExecutesHalfTheScoresPlusTheDiagonalBlocks) {
  // n = s / 128 query blocks, block i attends to i + 1 key blocks: n (n + 1) / 2 of n^2.
  EXPECT_DOUBLE_EQ(causal_attention_fraction(8192), 0.5 * (1.0 + 128.0 / 8192.0));
  EXPECT_DOUBLE_EQ(causal_attention_fraction(2048), 0.5 * (1.0 + 1.0 / 16.0));
  EXPECT_DOUBLE_EQ(causal_attention_fraction(128), 1.0);
  TrainingConfig tr;
  tr.micro_batch_size = 2;
  tr.flash_attention = true;
  const LayerWork w = transformer_layer(llama3_8b(), tr, LayerOptions{});
  const Op& fa = named(w.forward, "flash_attention");
  // Counted over the full s x s (the papers' convention), executed over the causal half.
  EXPECT_DOUBLE_EQ(fa.flops.value(), 4.0 * 2 * 32 * 8192.0 * 8192.0 * 128);
  EXPECT_DOUBLE_EQ(fa.executed_fraction, causal_attention_fraction(8192));
  EXPECT_DOUBLE_EQ(named(w.backward, "flash_attention_bwd").flops.value(), 2.5 * fa.flops.value());
}

TEST(Workload, EagerKernelsMoveTheirOwnBytes) {
  // Llama 3 8B layer, b = 1, s = 8192, no TP: T = 8192 tokens, h = 4096, q = 4096, k = 1024, f = 14336, e = 2.
  // Eager minus fused, forward, per the table in transformer.hpp:
  //   2 norms: (36 - 4) T h;  RoPE: (20 - 4) T (q + k);  repeat_kv: 2 T (k + q) e;  transpose: 2 T q e;
  //   SwiGLU: silu 2 T f e + mul 3 T f e - fused 3 T f e = 2 T f e.
  TrainingConfig tr;
  tr.flash_attention = true;
  const ModelConfig m = llama3_8b();
  const LayerWork fused = transformer_layer(m, tr, LayerOptions{});
  tr.kernel_fusion = KernelFusion::eager;
  const LayerWork eager = transformer_layer(m, tr, LayerOptions{});
  const double T = 8192, h = 4096, q = 4096, k = 1024, f = 14336, e = 2;
  const double extra = 2 * 32 * T * h + 16 * T * (q + k) + 2 * T * (k + q) * e + 2 * T * q * e + 2 * T * f * e;
  EXPECT_NEAR(bytes_of(eager.forward) - bytes_of(fused.forward), extra, 1.0);
  // Separate projections (the model's own nn.Linear modules): Q, K, V, gate and up instead of QKV and fc1,
  // with the same FLOPs.
  EXPECT_EQ(named(eager.forward, "k_proj").gemm.n, 1024);
  EXPECT_EQ(named(fused.forward, "qkv_proj").gemm.n, 4096 + 2 * 1024);
  EXPECT_DOUBLE_EQ(total_flops(eager.forward).value(), total_flops(fused.forward).value());
  int kernels = 0;
  for (const Op& op : eager.forward) kernels += op.kernels;
  EXPECT_GT(kernels, 30);  // 7 per RMSNorm, 6 for RoPE, ...
}

TEST(Workload, Fp8RunsOnlyTheLinearLayersAtTheFp8RateAndCastsTheirInputs) {
  TrainingConfig tr;
  tr.precision = Precision::fp8;
  tr.flash_attention = false;
  LayerOptions o;
  o.tensor = 2;
  const ModelConfig m = gpt3_175b();
  const LayerWork w = transformer_layer(m, tr, o);
  for (const auto* ops : {&w.forward, &w.backward}) {
    for (const Op& op : *ops) {
      if (op.op_class != OpClass::gemm) continue;
      EXPECT_EQ(op.fp8, op.role != GemmRole::attention_core) << op.name;
    }
  }
  // Forward casts the inputs of the output projection (T x q) and fc2 (T x f): e + 2 bytes per element;
  // backward the output gradient of each of the four linears.
  const double T = 2048, q = 12288 / 2, f = 4 * 12288 / 2, h = 12288;
  EXPECT_DOUBLE_EQ(named(w.forward, "out_proj_input_fp8_cast_transpose").bytes.value(), T * q * 4);
  EXPECT_DOUBLE_EQ(named(w.forward, "mlp_fc2_input_fp8_cast_transpose").bytes.value(), T * f * 4);
  EXPECT_DOUBLE_EQ(named(w.backward, "mlp_fc2_grad_fp8_cast_transpose").bytes.value(), T * h * 4);
  EXPECT_DOUBLE_EQ(named(w.backward, "qkv_proj_grad_fp8_cast_transpose").bytes.value(), T * 3 * q * 4);
  const LayerWork head = lm_head(m, tr, o);
  EXPECT_FALSE(named(head.forward, "lm_head").fp8);
}

TEST(Workload, SelectiveOpRecomputesEverySecondMatmulAndEveryMemoryBoundOp) {
  // torchtitan's op-level policy on its Llama layer (separate projections): matmuls Q K V out gate up down;
  // K, out and up (the 2nd, 4th and 6th) are recomputed, the others saved; every memory-bound op is re-run.
  TrainingConfig tr;
  tr.flash_attention = true;
  tr.kernel_fusion = KernelFusion::eager;
  tr.activation_recompute = Recompute::selective_op;
  tr.global_batch_size = 1;
  const ModelConfig m = llama3_8b();
  const LayerWork w = transformer_layer(m, tr, LayerOptions{});
  std::vector<std::string> gemms;
  for (const Op& op : w.recompute) {
    if (op.op_class == OpClass::gemm) gemms.push_back(op.name);
    EXPECT_NE(op.op_class, OpClass::fused_attention);
  }
  EXPECT_EQ(gemms, (std::vector<std::string>{"k_proj", "out_proj", "mlp_up"}));
  EXPECT_DOUBLE_EQ(bytes_of(w.recompute), bytes_of(w.forward));
  // The hardware FLOPs count them: 2 T (h k + h h + h f) per layer more than the model FLOPs.
  const double T = 8192, h = 4096, k = 1024, f = 14336;
  EXPECT_NEAR((hardware_flops_per_iteration(m, tr) - model_flops_per_iteration(m, tr)).value(),
              32 * 2 * T * (h * k + h * h + h * f), 1e3);
}

TEST(StepProgram, MegatronRankOrderPatterns) {
  // rank = stage * (t d) + data_rank * t + tensor_rank.
  const ParallelismConfig p{8, 8, 24, 1, false};
  EXPECT_EQ(megatron_rank(p, 3, 2, 1), 1 * 192 + 2 * 8 + 3);
  const CommPattern tp = tensor_parallel_pattern(p);
  ASSERT_EQ(tp.groups.size(), 8u * 24u);
  EXPECT_TRUE(std::ranges::equal(tp.groups[1], std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  const CommPattern dp = data_parallel_pattern(p);
  ASSERT_EQ(dp.groups.size(), 8u * 8u);
  EXPECT_EQ(dp.groups[0].size(), 24u);
  EXPECT_EQ(dp.groups[1][0], 1);
  EXPECT_EQ(dp.groups[1][1], 9);  // strided by t
  const CommPattern pp = pipeline_pattern(p);
  EXPECT_EQ(pp.groups.size(), 7u * 192u);
  EXPECT_TRUE(std::ranges::equal(pp.groups[0], std::vector<int64_t>{0, 192}));
}

StepSetup setup_22b(bool fusion, bool async_tp) {
  StepSetup s;
  s.model = gpt3_175b();
  s.model.num_layers = 48;
  s.model.hidden_size = 6144;
  s.model.num_attention_heads = 64;
  s.training.global_batch_size = 4;
  s.training.micro_batch_size = 4;
  s.training.precision = Precision::fp16;
  s.training.grad_reduce = Precision::fp16;  // Megatron's fp16 main gradients
  s.training.activation_recompute = Recompute::full;
  s.training.gradient_accumulation_fusion = fusion;
  s.parallelism.tensor = 8;
  s.parallelism.async_tensor_parallel_allreduce = async_tp;
  return s;
}

TEST(StepProgram, PartialRecomputeChargesOnlyTheRecomputedLayers) {
  // Full recompute of 12 of the 48 layers of a chunk (Megatron's block method): the backward costs 12 layers
  // with recompute and 36 without.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  StepSetup all = setup_22b(true, true);
  StepSetup none = all;
  none.training.activation_recompute = Recompute::none;
  StepSetup some = all;
  some.training.recompute_num_layers = 12;
  const double b_all = build_step_program(all, compute, network).stages[0].backward[0].total().value();
  const double b_none = build_step_program(none, compute, network).stages[0].backward[0].total().value();
  const double b_some = build_step_program(some, compute, network).stages[0].backward[0].total().value();
  EXPECT_NEAR(b_some, b_none + (b_all - b_none) * 12.0 / 48.0, 1e-12);
  EXPECT_NEAR((hardware_flops_per_iteration(some.model, some.training) -
               model_flops_per_iteration(some.model, some.training)).value() * 4.0,
              (hardware_flops_per_iteration(all.model, all.training) -
               model_flops_per_iteration(all.model, all.training)).value(),
              1e3);
}

TEST(StepProgram, UnfusedGradientAccumulationAddsOneMemoryPassOverTheChunkPerBackward) {
  // fp16 (Megatron 2021: 16-bit main gradients): read the wgrad's 2 bytes, read and write the 2-byte main
  // gradient: 6 bytes per parameter of the chunk, once per backward; the forward is unchanged.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  const StepSetup fused = setup_22b(true, true), unfused = setup_22b(false, true);
  const StepProgram a = build_step_program(fused, compute, network);
  const StepProgram b = build_step_program(unfused, compute, network);
  const double chunk_parameters = a.stages[0].parameters;  // one stage, one chunk: all of it
  const double extra = compute.memory_time(units::Bytes(chunk_parameters * 6.0)).value();
  EXPECT_NEAR(b.stages[0].backward[0].compute.value() - a.stages[0].backward[0].compute.value(), extra, 1e-12);
  EXPECT_EQ(b.stages[0].forward[0].compute.value(), a.stages[0].forward[0].compute.value());
}

TEST(StepProgram, AsyncTensorParallelAllReduceHidesUnderTheWeightGradientGemms) {
  // Per layer backward (full recompute): 2 input-gradient all-reduces + 2 recompute all-reduces of b s h fp16.
  // Serialised, all 4 are charged; async, the 2 backward ones hide under the QKV and fc1 wgrad GEMMs, which
  // are longer on this network, so only the recompute pair stays.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);  // 100.7 MB all-reduce: 0.1 ms; QKV wgrad of the 22B layer: ~1 ms
  const StepProgram serial = build_step_program(setup_22b(true, false), compute, network);
  const StepProgram async = build_step_program(setup_22b(true, true), compute, network);
  const double each = 4.0 * 2048 * 6144 * 2 * 1e-12;
  const double layers = 48;
  const double head_and_embedding = serial.stages[0].backward[0].tp_comm.value() - layers * 4 * each;
  EXPECT_NEAR(head_and_embedding, 0.0, 1e-12);  // no sequence parallelism: no LM-head gather
  EXPECT_NEAR(async.stages[0].backward[0].tp_comm.value(), layers * 2 * each, 1e-12);
  EXPECT_EQ(async.stages[0].forward[0].tp_comm.value(), serial.stages[0].forward[0].tp_comm.value());
}

TEST(StepProgram, TensorParallelOverlapHidesAllButOneChunkOfEachCollective) {
  // 22B layer, t = 8 with sequence parallelism: each of the 4 collective-GEMM pairs per pass moves c = k b s h e
  // = 1e-12 x 4 x 2048 x 6144 x 2 s = 0.1 ms, far less than its GEMM (~1 ms), so only the pipeline fill c/t of
  // each is exposed: 4 c / t per forward. Without overlap all 4 collectives are exposed (no async wgrad overlap
  // in forward). The GEMMs run as t chunks of M/t rows, which can only cost more.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  StepSetup plain = setup_22b(true, true);
  plain.parallelism.sequence_parallel = true;
  StepSetup overlapped = plain;
  overlapped.parallelism.tp_comm_overlap = true;
  const StepProgram a = build_step_program(plain, compute, network);
  const StepProgram b = build_step_program(overlapped, compute, network);
  const double c = 1e-12 * 4 * 2048 * 6144 * 2, t = 8, layers = 48;
  // Forward: 48 layers, plus the embedding's reduce-scatter and the LM head's all-gather, not overlapped (2 c).
  EXPECT_NEAR(a.stages[0].forward[0].tp_comm.value(), layers * 4 * c + 2 * c, 1e-12);
  EXPECT_NEAR(b.stages[0].forward[0].tp_comm.value(), layers * 4 * c / t + 2 * c, 1e-12);
  EXPECT_GE(b.stages[0].forward[0].compute.value(), a.stages[0].forward[0].compute.value());
  // Backward with full recompute: the backward's 4 pairs and the recompute's 4.
  // (plus the LM head's reduce-scatter and the embedding's all-gather of their gradients, 2 c).
  EXPECT_NEAR(b.stages[0].backward[0].tp_comm.value(), layers * 8 * c / t + 2 * c, 1e-12);
}

TEST(StepProgram, PyTorchAsyncTensorParallelOverlapsForwardPassesOnly) {
  // torchtitan's async TP (FSDP2 framework) micro-pipelines forward passes, the recomputed one included, but not
  // the backward's collectives (framework_behaviour.hpp): the forward is as with Transformer Engine's overlap;
  // the backward keeps its non-overlapped collectives and only the recompute's 4 per layer drop from c to c/t.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  StepSetup megatron = setup_22b(true, true);
  megatron.parallelism.sequence_parallel = true;
  megatron.parallelism.tp_comm_overlap = true;
  StepSetup torchtitan = megatron;
  torchtitan.training.framework = Framework::fsdp2;
  StepSetup torchtitan_plain = torchtitan;
  torchtitan_plain.parallelism.tp_comm_overlap = false;
  const StepProgram m = build_step_program(megatron, compute, network);
  const StepProgram t = build_step_program(torchtitan, compute, network);
  const StepProgram plain = build_step_program(torchtitan_plain, compute, network);
  const double c = 1e-12 * 4 * 2048 * 6144 * 2, tp = 8, layers = 48;
  EXPECT_NEAR(t.stages[0].forward[0].tp_comm.value(), m.stages[0].forward[0].tp_comm.value(), 1e-12);
  EXPECT_NEAR(t.stages[0].backward[0].tp_comm.value(),
              plain.stages[0].backward[0].tp_comm.value() - layers * 4 * c * (1.0 - 1.0 / tp), 1e-12);
  EXPECT_GT(t.stages[0].backward[0].tp_comm.value(), m.stages[0].backward[0].tp_comm.value());
}

TEST(StepProgram, OverlappedParameterGatherExposesOnlyItsExcessOverTheFirstForward) {
  // ZeRO-1 over 4 replicas: the all-gather of the updated parameters takes k x bytes on this network. Overlapped
  // (--overlap-param-gather), only what exceeds the stage's first forward pass stays; a slow network leaves
  // some, a fast one none; the part hidden under the forward slows it by kOverlapComputeSlowdown of its time.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  StepSetup s = setup_22b(true, true);
  s.parallelism.data = 4;
  s.training.global_batch_size = 16;
  s.parallelism.zero_stage = 1;
  for (const double k : {1e-9, 1e-13}) {
    const LinearNetwork network(k);
    const StepProgram plain = build_step_program(s, compute, network);
    StepSetup overlapped_setup = s;
    overlapped_setup.parallelism.overlap_param_gather = true;
    const StepProgram overlapped = build_step_program(overlapped_setup, compute, network);
    const double gather = plain.stages[0].param_gather.value();
    const double first_forward = plain.stages[0].forward[0].total().value();
    const double hidden = std::min(gather, first_forward);
    EXPECT_NEAR(overlapped.stages[0].param_gather.value(),
                gather - hidden + kOverlapComputeSlowdown * hidden, 1e-12);
  }
}

TEST(StepProgram, DeepSpeedZero2AllReducesEveryMicrobatchMegatronReducesOnce) {
  // ZeRO-2 over 4 replicas, 4 microbatches. DeepSpeed all-reduces the gradient buckets in every backward on the
  // compute stream (stage_1_and_2.py, overlap_comm off for stages 1-2): k x parameters x grad bytes per
  // backward, no tail reduction. Megatron's distributed optimizer reduce-scatters once after the last backward.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  StepSetup s = setup_22b(true, true);
  s.parallelism.data = 4;
  s.training.global_batch_size = 64;
  s.parallelism.zero_stage = 2;
  s.training.framework = Framework::deepspeed;
  const StepProgram ds = build_step_program(s, compute, network);
  const double params = ds.stages[0].parameters;
  EXPECT_NEAR(ds.stages[0].backward[0].dp_comm.value(), 1e-12 * params * 2.0, 1e-12);  // fp16 gradients
  EXPECT_EQ(ds.stages[0].grad_sync.value(), 0.0);
  s.training.framework = Framework::megatron_core;
  const StepProgram mc = build_step_program(s, compute, network);
  EXPECT_EQ(mc.stages[0].backward[0].dp_comm.value(), 0.0);
  EXPECT_NEAR(mc.stages[0].grad_sync.value(), 1e-12 * params * 2.0, 1e-12);
}

TEST(StepProgram, MegatronOverlapsPipelineSendsOnlyWhenInterleaved) {
  // Megatron-LM: "Non-interleaved pipeline parallelism does not support overlapping p2p communication".
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  StepSetup s = setup_22b(true, true);
  s.parallelism.pipeline = 4;
  s.parallelism.overlap_p2p_comm = true;
  s.training.global_batch_size = 16;
  EXPECT_TRUE(build_step_program(s, compute, network).p2p_blocking);
  s.parallelism.virtual_stages = 2;
  EXPECT_FALSE(build_step_program(s, compute, network).p2p_blocking);
  // PyTorch pipelining sends asynchronously with either schedule.
  s.parallelism.virtual_stages = 1;
  s.training.framework = Framework::fsdp2;
  EXPECT_FALSE(build_step_program(s, compute, network).p2p_blocking);
}

TEST(StepProgram, FullyShardedPassesExposeTheRootsGatherAndReduceScatter) {
  // FSDP over 8 GPUs, fast network (compute-bound): every block's gather runs under the previous block's
  // compute, so a forward exposes only the root's gather (embedding and output layer, 16-bit), and a backward
  // only the root's reduce-scatter at its end (FSDP1 keeps the root gathered; the last block's gather runs under
  // the LM head's backward).
  const ComputeModel compute(catalog().device("H100-SXM5-80GB"));
  const double k = 1e-13;
  const LinearNetwork network(k);
  StepSetup s;
  s.model = llama3_8b();
  s.training.global_batch_size = 8;
  s.training.micro_batch_size = 1;
  s.training.flash_attention = true;
  s.training.framework = Framework::fsdp;
  s.parallelism.data = 8;
  s.parallelism.zero_stage = 3;
  const StepProgram p = build_step_program(s, compute, network);
  const double root = p.stages[0].parameters - 32.0 * layer_parameter_count(s.model);
  EXPECT_NEAR(root, 2.0 * 128256.0 * 4096.0 + 2.0 * 4096.0, 1.0);  // embedding, output layer, final norm
  // The hidden collectives (every block's gather, and in backward its fp32 reduce-scatter) slow the compute
  // beside them by kOverlapComputeSlowdown of their time, which counts as exposed communication too.
  const double blocks = 32.0 * layer_parameter_count(s.model);
  const double kappa = kOverlapComputeSlowdown;
  EXPECT_NEAR(p.stages[0].forward[0].dp_comm.value(), k * root * 2.0 + kappa * k * blocks * 2.0, 1e-12);
  EXPECT_NEAR(p.stages[0].backward[0].dp_comm.value(), k * root * 4.0 + kappa * k * blocks * (2.0 + 4.0),
              1e-12);  // fp32 reduce
  EXPECT_EQ(p.stages[0].grad_sync.value(), 0.0);  // reduced inside the passes
  // FSDP2 (torchtitan) reshards the root after forward: its backward also waits for the root's gather.
  s.training.framework = Framework::fsdp2;
  const StepProgram q = build_step_program(s, compute, network);
  EXPECT_NEAR(q.stages[0].backward[0].dp_comm.value(),
              k * root * (2.0 + 4.0) + kappa * k * (blocks * 4.0 + (blocks - layer_parameter_count(s.model)) * 2.0),
              1e-12);  // FSDP2 keeps the last block gathered for the backward: 31 block gathers
}

TEST(StepProgram, UnevenLayersGoToTheMiddleChunksFirst) {
  // Llama 3 405B: 126 layers on 16 stages: 7 on the first and last, 8 on the 14 others (Dubey et al. 2024).
  std::vector<int64_t> llama(16, 8);
  llama.front() = llama.back() = 7;
  EXPECT_EQ(layers_per_virtual_stage(126, 16, 1), llama);
  // 14 layers over 5 chunks: 2 each, the 3 middle ones take one more, then the first.
  EXPECT_EQ(layers_per_virtual_stage(14, 5, 1), (std::vector<int64_t>{3, 3, 3, 3, 2}));
  // Even splits stay even; interleaved chunks are numbered chunk * pipeline + rank.
  EXPECT_EQ(layers_per_virtual_stage(96, 8, 3), std::vector<int64_t>(24, 4));
  EXPECT_EQ(layers_per_virtual_stage(2, 2, 1), (std::vector<int64_t>{1, 1}));
  EXPECT_THROW((void)layers_per_virtual_stage(3, 2, 2), std::invalid_argument);
  // Set first / last stages (Megatron --decoder-first/last-pipeline-num-layers): NeMo's DeepSeek-V3 recipe on
  // 8 stages, 64 // 8 - 1 = 7 first, 64 // 8 - 2 = 6 last, 8 each between; on 16 stages 3, 4 x 14, 2.
  ParallelismConfig p;
  p.pipeline = 8;
  p.first_stage_layers = 7;
  p.last_stage_layers = 6;
  EXPECT_EQ(layers_per_virtual_stage(61, p), (std::vector<int64_t>{7, 8, 8, 8, 8, 8, 8, 6}));
  p.pipeline = 16;
  p.first_stage_layers = 3;
  p.last_stage_layers = 2;
  std::vector<int64_t> sixteen(16, 4);
  sixteen.front() = 3;
  sixteen.back() = 2;
  EXPECT_EQ(layers_per_virtual_stage(61, p), sixteen);
  p.last_stage_layers = 0;  // only the first set: 58 over 15 does not split
  ASSERT_TRUE(pipeline_split_problem(61, p).has_value());
  EXPECT_EQ(pipeline_split_problem(61, p)->key, "parallelism.first_stage_layers");
  EXPECT_THROW((void)layers_per_virtual_stage(61, p), std::invalid_argument);
  p.virtual_stages = 2;
  p.first_stage_layers = 1;
  EXPECT_NE(pipeline_split_problem(61, p)->message.find("virtual_stages = 1"), std::string::npos);
  EXPECT_FALSE(pipeline_split_problem(61, ParallelismConfig{}).has_value());

  // The step program costs each chunk for its own layers: 30 layers on 4 stages = 7, 8, 8, 7.
  const ComputeModel compute(catalog().device("A100-SXM4-80GB"));
  const LinearNetwork network(1e-12);
  StepSetup s = setup_22b(true, true);
  s.model.num_layers = 30;
  s.parallelism.tensor = 2;
  s.parallelism.pipeline = 4;
  const StepProgram program = build_step_program(s, compute, network);
  const double stage1 = program.stages[1].forward[0].compute.value();
  EXPECT_NEAR(program.stages[2].forward[0].compute.value(), stage1, 1e-12);
  EXPECT_NEAR(program.stages[1].parameters / program.stages[2].parameters, 1.0, 1e-12);
  // Stage 3 has 7 layers and the LM head; its layers alone are 7/8 of stage 1's.
  EXPECT_GT(program.stages[3].forward[0].compute.value(), 7.0 / 8.0 * stage1);
  // Its parameters: 7 layers' worth plus the tied word-embedding copy, V h / t, and the final norm, 2 h.
  EXPECT_NEAR(program.stages[3].parameters,
              7.0 / 8.0 * program.stages[1].parameters + 51200.0 * 6144.0 / 2.0 + 2.0 * 6144.0, 1.0);
}

TEST(StepProgram, OptimizerBytesCountMegatronsKernels) {
  EXPECT_EQ(optimizer_bytes_per_parameter(Precision::fp16), 50.0);  // + unscale and inf check
  EXPECT_EQ(optimizer_bytes_per_parameter(Precision::bf16), 42.0);
  EXPECT_EQ(optimizer_bytes_per_parameter(Precision::fp8), 42.0);
  EXPECT_EQ(optimizer_bytes_per_parameter(Precision::fp32), 36.0);  // no 16-bit copy of the weights
}

}  // namespace
}  // namespace clustersim::models
