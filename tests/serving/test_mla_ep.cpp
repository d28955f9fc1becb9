// MLA and wide expert parallelism for serving (issue 30): DeepSeek-V3's latent KV cache and absorbed decode in
// closed form, DeepEP's README tables at their points, an MoE layer's dispatch and combine, and the weights of a
// DeepSeek-V3 replica per GPU at EP 16 and 32.
#include <gtest/gtest.h>

#include <cmath>

#include "models/hardware/catalog.hpp"
#include "models/serving/deepep.hpp"
#include "models/serving/expert_parallel_serving.hpp"
#include "models/serving/inference_model.hpp"
#include "models/serving/mla.hpp"
#include "tests/support/catalog.hpp"
#include "tests/support/models.hpp"

namespace clustersim {
namespace {

using testing::catalog;

/// DeepSeek-V3 served at its 163,840-token context (tests/support/models.hpp).
models::ModelConfig deepseek_v3() { return testing::deepseek_v3(163840); }

const auto kFree = [](units::Bytes) { return units::Seconds(0.0); };

TEST(Mla, LatentKvCachePerTokenIsLayersTimesLatentPlusRope) {
  const models::ModelConfig m = deepseek_v3();
  // 61 x (512 + 64) x 2 B = 70,272 B in bf16 (DeepSeek-V2 Sec. 2.1.4: (d_c + d_h^R) l elements).
  EXPECT_DOUBLE_EQ(models::mla_kv_bytes_per_token(m, 61, 2.0).value(), 70272.0);
  EXPECT_EQ(models::mla_kv_elements_per_token_layer(m), 576);
  // Not split by tensor parallelism: each rank's heads read the whole latent.
  const models::DeviceSpec& h200 = catalog().device("H200-SXM-141GB");
  const models::InferenceModel tp8(m, models::serving_numerics("fp8", false), 8, h200, 1.0, kFree, {});
  EXPECT_DOUBLE_EQ(tp8.kv_bytes_per_token_per_gpu().value(), 70272.0);
  const models::InferenceModel fp8_kv(m, models::serving_numerics("fp8", true), 8, h200, 1.0, kFree, {});
  EXPECT_DOUBLE_EQ(fp8_kv.kv_bytes_per_token_per_gpu().value(), 35136.0);
}

TEST(Mla, AbsorbedDecodeReadsTheLatentOncePerSequence) {
  const models::ModelConfig m = deepseek_v3();
  // A sequence of 1023 cached tokens decoding one: (1023 + 1) x 576 x 2 B per layer, for all 128 heads at once.
  EXPECT_DOUBLE_EQ(models::mla_decode_attention_bytes(m, 1023, 1, 2.0).value(), 1024.0 * 576.0 * 2.0);
  // 2 x heads x (512 + 64) + 2 x heads x 512 FLOPs per key; prefill 2 x heads x (128 + 64) + 2 x heads x 128.
  EXPECT_DOUBLE_EQ(models::mla_decode_flops_per_key(m, 128), 2.0 * 128 * 576 + 2.0 * 128 * 512);
  EXPECT_DOUBLE_EQ(models::mla_prefill_flops_per_pair(m, 128), 2.0 * 128 * 192 + 2.0 * 128 * 128);
  // The attention weights: h q + q a (n + r) + h (c + r) + c a (n + v) + a v h at tensor 1; tensor 8 splits
  // only the head-wise up-projections and the output.
  EXPECT_DOUBLE_EQ(models::mla_attention_weight_elements(m, 1), 187105280.0);
  EXPECT_DOUBLE_EQ(models::mla_attention_weight_elements(m, 8),
                   7168.0 * 1536 + 7168.0 * 576 + (1536.0 * 128 * 192 + 512.0 * 128 * 256 + 128.0 * 128 * 7168) / 8);
}

TEST(Mla, DecodeAttentionTimeIsTheLatentReadOrItsFlops) {
  const models::ModelConfig m = deepseek_v3();
  const models::DeviceSpec& h100 = catalog().device("H100-SXM5-80GB");
  const models::ComputeModel compute(h100, 1.0);
  models::MlaBatch b;
  b.tokens = 64;
  b.decode_sequences = 64;
  b.decode_kv_tokens = 64 * 4095;
  const models::MlaLayerTime t =
      models::mla_layer_time(m, 1, compute, models::Precision::fp8, models::Precision::bf16, 1.0, 2.0,
                             models::AttentionKernel::flash3, b);
  const units::Seconds reads = compute.memory_time(units::Bytes(64.0 * 4096 * 576 * 2));
  const units::Seconds flops = compute.attention_time(units::Flops(64.0 * 4096 * models::mla_decode_flops_per_key(m, 128)),
                                                      models::Precision::bf16, models::AttentionKernel::flash3);
  EXPECT_DOUBLE_EQ(t.attention.value(), std::max(reads, flops).value());
  // A speculative verify pass of 4 queries per sequence: the same latent reads, 4 times the FLOPs per key.
  b.tokens = 4 * 64;
  b.decode_queries = 4;
  const models::MlaLayerTime verify =
      models::mla_layer_time(m, 1, compute, models::Precision::fp8, models::Precision::bf16, 1.0, 2.0,
                             models::AttentionKernel::flash3, b);
  const units::Seconds verify_flops = compute.attention_time(
      units::Flops(4.0 * 64 * 4096 * models::mla_decode_flops_per_key(m, 128)), models::Precision::bf16,
      models::AttentionKernel::flash3);
  EXPECT_DOUBLE_EQ(verify.attention.value(), std::max(reads, verify_flops).value());
  EXPECT_THROW((void)models::mla_layer_time(m, 1, compute, models::Precision::fp8, models::Precision::bf16, 1.0, 2.0,
                                            models::AttentionKernel::flash3, {-1, 0, 0, 0, 0}),
               std::invalid_argument);
}

TEST(DeepEp, TablesAtTheReadmePoints) {
  using models::DeepEpKernel;
  // Low-latency kernels (docs/legacy.md, commit 0297fc80): dispatch / combine RDMA bandwidth by EP size.
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, true, 8).value(), 98e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, true, 16).value(), 63e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, true, 32).value(), 48e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, false, 32).value(), 53e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, false, 256).value(), 40e9);
  // Normal kernels, internode: 16 / 32 / 64.
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::normal, true, 16).value(), 43e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::normal, true, 32).value(), 58e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::normal, false, 64).value(), 50e9);
  EXPECT_DOUBLE_EQ(models::deepep_nvlink_bandwidth(true).value(), 153e9);
  // Between rows: linear in log2(EP); 24 is 0.585 of the way from 16 to 32. Outside: the end rows.
  const double f = std::log2(24.0) - 4.0;
  EXPECT_NEAR(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, true, 24).value(), (63.0 + f * (48 - 63)) * 1e9,
              1.0);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::low_latency, true, 512).value(), 39e9);
  EXPECT_DOUBLE_EQ(models::deepep_rdma_bandwidth(DeepEpKernel::normal, true, 8).value(), 43e9);
  EXPECT_THROW((void)models::deepep_rdma_bandwidth(DeepEpKernel::normal, true, 1), std::invalid_argument);
  // The README's own check: 128 tokens x top-8 x (7168 + 224) B at 48 GB/s is 158 us against its 155 us.
  EXPECT_NEAR(128.0 * 8 * models::deepep_copy_bytes(7168, true) / 48e9 * 1e6, 155.0, 5.0);
  EXPECT_NEAR(128.0 * 8 * models::deepep_copy_bytes(7168, false) / 53e9 * 1e6, 273.0, 5.0);
}

TEST(DeepEp, DispatchPlusCombinePerLayer) {
  const models::VmSize& h100 = catalog().vm_size("Standard_ND96isr_H100_v5");
  const models::DeviceSpec& dev = catalog().device(h100.device);
  // 4 VMs of 8 H100 with one 400 Gb/s NIC per GPU: the README's hardware on the RDMA side (scale 1).
  const models::DeepEpLinks links = models::deepep_links(h100, dev, 32);
  EXPECT_FALSE(links.one_domain);
  EXPECT_EQ(links.ranks_per_node, 8);
  EXPECT_DOUBLE_EQ(links.rdma_scale, 1.0);
  EXPECT_DOUBLE_EQ(links.nvlink_scale, 450e9 / 200e9);
  // Decode, 128 tokens per rank: topk copies each way at the low-latency table's rates.
  const double ll = 128.0 * 8 * (7168 + 224) / 48e9 + 128.0 * 8 * 14336 / 53e9;
  EXPECT_NEAR(models::deepep_dispatch_combine_time(links, models::DeepEpKernel::low_latency, 128, 7168, 288, 8).value(),
              ll, 1e-12);
  // Prefill, 4096 tokens per rank: the slower of the RDMA and NVLink legs of flex_dispatch_copies.
  const models::FlexDispatchCopies c = models::flex_dispatch_copies(288, 8, 32, 8);
  double normal = 0.0;
  for (const bool dispatch : {true, false}) {
    const double copy = dispatch ? 7168.0 + 224.0 : 14336.0;
    const double rdma = (dispatch ? 58e9 : 57e9), nvl = (dispatch ? 153e9 : 158e9) * 450.0 / 200.0;
    normal += std::max(4096.0 * c.network * copy / rdma, 4096.0 * c.nvlink * copy / nvl);
  }
  EXPECT_NEAR(models::deepep_dispatch_combine_time(links, models::DeepEpKernel::normal, 4096, 7168, 288, 8).value(),
              normal, 1e-12);
  // A GB200 NVL72 rack: 72 ranks in one NVLink domain, NVLink 5 (900 GB/s per direction) for both kernels.
  const models::VmSize& gb = catalog().vm_size("Standard_ND128isr_NDR_GB200_v6");
  const models::DeepEpLinks rack = models::deepep_links(gb, catalog().device(gb.device), 72);
  EXPECT_TRUE(rack.one_domain);
  const double nvl5 = 900e9 / 200e9;
  EXPECT_DOUBLE_EQ(rack.nvlink_scale, nvl5);
  EXPECT_NEAR(models::deepep_dispatch_combine_time(rack, models::DeepEpKernel::low_latency, 64, 7168, 288, 8).value(),
              64.0 * 8 * (7168 + 224) / (153e9 * nvl5) + 64.0 * 8 * 14336 / (158e9 * nvl5), 1e-12);
  EXPECT_DOUBLE_EQ(models::deepep_dispatch_combine_time(links, models::DeepEpKernel::normal, 0, 7168, 288, 8).value(), 0.0);
}

TEST(ExpertParallel, DeepSeekV3WeightsPerGpuAtEp16And32) {
  const models::ModelConfig m = deepseek_v3();
  const models::DeviceSpec& h200 = catalog().device("H200-SXM-141GB");
  const auto weights = [&](int64_t ep, int64_t redundant) {
    const models::InferenceModel model(m, models::serving_numerics("fp8", false), 1, h200, 1.0, kFree, {}, {}, {},
                                       {ep, true, redundant, std::nullopt});
    return model.weight_bytes_per_gpu().value();
  };
  // fp8 layers (1 B): 61 MLA attentions (187,105,280 each, whole under DP attention) + 3 dense MLPs 3 h 18432 +
  // 58 MoE layers of (256 / ep) experts and the shared one, 3 h 2048 each, + 2 h norms per layer; the router
  // (58 x h x 256) and the untied embedding and LM head (2 x V x h) in 16 bits.
  const double h = 7168.0, mla = 187105280.0;
  const double fixed = 61.0 * (mla + 2 * h) + 3.0 * 3 * h * 18432 + 58.0 * h * 256 * 2 + 2.0 * 129280 * h * 2;
  const double ep32 = fixed + 58.0 * 3 * h * 2048 * (8 + 1);
  const double ep16 = fixed + 58.0 * 3 * h * 2048 * (16 + 1);
  EXPECT_DOUBLE_EQ(weights(32, 0), ep32);
  EXPECT_DOUBLE_EQ(weights(16, 0), ep16);
  EXPECT_DOUBLE_EQ(ep32, 39511939072.0);  // 36.8 GiB
  EXPECT_DOUBLE_EQ(ep16, 59946588160.0);  // 55.8 GiB
  // EPLB's 32 redundant experts over 32 GPUs: one more expert each.
  EXPECT_DOUBLE_EQ(weights(32, 32), ep32 + 58.0 * 3 * h * 2048);
}

TEST(ExpertParallel, TensorParallelAttentionHoldsWholeExpertsAndSplitsTheRest) {
  // vLLM --tensor-parallel-size 8 --enable-expert-parallel on one ND H200 v5: 32 whole experts per GPU; MLA's
  // up-projections, the dense MLPs, the shared expert and the embedding and LM head split 8 ways.
  const models::ModelConfig m = deepseek_v3();
  const models::DeviceSpec& h200 = catalog().device("H200-SXM-141GB");
  const auto comm = [](units::Bytes) { return units::Seconds(0.0); };
  const models::InferenceModel ep8(m, models::serving_numerics("fp8", false), 8, h200, 1.0, comm, {}, {}, {},
                                   {8, false, 0, std::nullopt});
  const double h = 7168.0, mla8 = models::mla_attention_weight_elements(m, 8);
  const double expected = 61.0 * (mla8 + 2 * h) + 3.0 * 3 * h * 18432 / 8 + 58.0 * 3 * h * (32.0 * 2048 + 2048.0 / 8) +
                          58.0 * h * 256 * 2 + 2.0 * 129280 * h / 8 * 2;
  EXPECT_DOUBLE_EQ(ep8.weight_bytes_per_gpu().value(), expected);
  // The tensor-parallel experts hold the same bytes (each expert split 8 ways instead of 32 whole ones).
  const models::InferenceModel tp8(m, models::serving_numerics("fp8", false), 8, h200, 1.0, comm, {});
  EXPECT_NEAR(tp8.weight_bytes_per_gpu().value(), expected, 1.0);
  // A decode-only step: no DeepEP (the layer's all-reduce combines), so no more communication than TP 8.
  models::IterationBatch decode;
  decode.decode_sequences = 64;
  decode.decode_kv_tokens = 64 * 1000;
  decode.sampled_sequences = 64;
  EXPECT_DOUBLE_EQ(ep8.iteration_time(decode).communication.value(), tp8.iteration_time(decode).communication.value());
}

TEST(ExpertParallel, DataParallelAttentionSplitsTheBatchAndTheCache) {
  models::IterationBatch b;
  b.prefill_tokens = 100;
  b.prefill_attention_pairs = 3200.0;
  b.decode_sequences = 33;
  b.decode_kv_tokens = 33000;
  b.sampled_sequences = 34;
  const models::IterationBatch r = models::dp_rank_share(b, 32);
  EXPECT_EQ(r.prefill_tokens, 4);
  EXPECT_DOUBLE_EQ(r.prefill_attention_pairs, 100.0);
  EXPECT_EQ(r.decode_sequences, 2);
  EXPECT_EQ(r.decode_kv_tokens, 1032);
  EXPECT_EQ(r.sampled_sequences, 2);

  const models::ModelConfig m = deepseek_v3();
  const models::VmSize& vm = catalog().vm_size("Standard_ND96isr_H100_v5");
  const models::DeviceSpec& dev = catalog().device(vm.device);
  const models::DeepEpLinks links = models::deepep_links(vm, dev, 32);
  const models::InferenceModel ep32(m, models::serving_numerics("fp8", false), 1, dev, 1.0, kFree, {}, {}, {},
                                    {32, true, 32, links});
  // Each rank holds its own sequences: the replica's cache is 32 x one GPU's whole blocks.
  models::KvCacheBudget budget;
  const int64_t tokens = ep32.kv_cache_tokens(budget);
  EXPECT_EQ(tokens % (32 * 16), 0);
  EXPECT_GT(tokens, 32 * 100000);
  // A decode-only batch of 32 x 64 sequences: the communication is 58 MoE layers' low-latency dispatch and
  // combine of each rank's 64 tokens (no tensor-parallel all-reduce at tensor 1).
  models::IterationBatch decode;
  decode.decode_sequences = 32 * 64;
  decode.decode_kv_tokens = 32 * 64 * 2000;
  decode.sampled_sequences = 32 * 64;
  const models::IterationTime t = ep32.iteration_time(decode);
  EXPECT_NEAR(t.communication.value(),
              58.0 * models::deepep_dispatch_combine_time(links, models::DeepEpKernel::low_latency, 64, 7168, 288, 8).value(),
              1e-12);
  // Expert parallelism is refused where it cannot apply.
  const models::ModelConfig dense = [] {
    models::ModelConfig d = deepseek_v3();
    d.num_experts = 0;
    return d;
  }();
  EXPECT_THROW(models::InferenceModel(dense, {}, 1, dev, 1.0, kFree, {}, {}, {}, {32, true, 0, std::nullopt}),
               std::invalid_argument);
  EXPECT_THROW(models::InferenceModel(m, {}, 1, dev, 1.0, kFree, {}, {}, {}, {24, true, 0, std::nullopt}),
               std::invalid_argument);
  EXPECT_THROW(models::InferenceModel(m, {}, 8, dev, 1.0, kFree, {}, {}, {}, {32, true, 0, std::nullopt}),
               std::invalid_argument);
  EXPECT_THROW(models::InferenceModel(m, {}, 1, dev, 1.0, kFree, {}, {}, {}, {1, true, 0, std::nullopt}),
               std::invalid_argument);
}

}  // namespace
}  // namespace clustersim
