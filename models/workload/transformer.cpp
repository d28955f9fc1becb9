#include "models/workload/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/parallelism/plan.hpp"

namespace clustersim::models {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

Op gemm_op(std::string name, GemmRole role, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  Op op;
  op.name = std::move(name);
  op.op_class = OpClass::gemm;
  op.role = role;
  op.gemm = GemmShape{m, n, k, batch};
  op.flops = op.gemm.flops();
  return op;
}

Op memory_op(std::string name, double bytes, int kernels = 1) {
  Op op;
  op.name = std::move(name);
  op.op_class = OpClass::memory_bound;
  op.bytes = units::Bytes(bytes);
  op.kernels = kernels;
  return op;
}

/// Backward of a forward op: GEMM -> input-gradient and weight-gradient GEMMs of equal FLOPs; memory-bound ->
/// The weight-gradient GEMMs of `backward` accumulate into the fp32 main gradient when the run fuses gradient
/// accumulation (Op::accumulates_fp32); without it they write a 16-bit gradient that a separate kernel adds
/// (step_program.cpp).
void mark_fused_accumulation(std::vector<Op>& backward, const TrainingConfig& tr) {
  if (!tr.gradient_accumulation_fusion) return;
  for (Op& op : backward) op.accumulates_fp32 = op.op_class == OpClass::gemm && op.name.ends_with("_wgrad");
}

/// 1.5x the bytes; fused attention -> 2.5x the FLOPs (FlashAttention backward recomputes S = QK^T:
/// Dao et al. 2022, Sec. 3.1: 5 matmuls backward vs 2 forward).
void append_backward(const Op& f, std::vector<Op>& out) {
  switch (f.op_class) {
    case OpClass::gemm: {
      const GemmShape& g = f.gemm;
      Op dgrad = gemm_op(f.name + "_dgrad", f.role, g.m, g.k, g.n, g.batch);
      dgrad.fp8 = f.fp8;
      dgrad.kernels = f.kernels;
      out.push_back(dgrad);
      // Both operands of the attention core's GEMMs are activations: the second operand's gradient; every other
      // GEMM has a weight.
      Op second = gemm_op(f.name + (f.role == GemmRole::attention_core ? "_dgrad2" : "_wgrad"), f.role, g.k, g.n,
                          g.m, g.batch);
      second.fp8 = f.fp8;
      second.kernels = f.kernels;
      out.push_back(second);
      return;
    }
    case OpClass::memory_bound: {
      Op b = memory_op(f.name + "_bwd", 1.5 * f.bytes.value(), f.kernels);
      out.push_back(b);
      return;
    }
    case OpClass::fused_attention: {
      Op b = f;
      b.name = f.name + "_bwd";
      b.flops = f.flops * 2.5;
      b.attention_backward = true;
      out.push_back(b);
      return;
    }
  }
}

void check_divisible(int64_t value, int64_t by, const char* what, const char* size = "tensor-parallel size") {
  if (by <= 0 || value % by != 0) {
    throw std::invalid_argument(std::string("transformer: ") + what + " (" + std::to_string(value) +
                                ") is not divisible by " + size + " " + std::to_string(by));
  }
}

/// Bytes per element of a norm over `elements`: fused 2e (read, write); eager ATen rms_norm composite 36.
Op norm_op(std::string name, double elements, double e, KernelFusion fusion) {
  if (fusion == KernelFusion::eager) return memory_op(std::move(name), 36.0 * elements, 7);
  return memory_op(std::move(name), 2.0 * e * elements);
}

/// Residual add after a sublayer (with the sublayer's dropout and bias when the model has dropout).
Op residual_op(std::string name, double elements, double e, const ModelConfig& m) {
  return memory_op(std::move(name), elements * (m.dropout > 0.0 ? 3.0 * e + 1.0 : 3.0 * e));
}

/// Kernels of an MoE router's forward (top-k, score function, auxiliary loss and its bookkeeping), counted on
/// DeepSeek-V3 in Megatron-Core: 72, and 31 with the router fusion of Transformer Engine PR 1883 (Megatron-LM
/// docs/discussions/deepseek-v3-gb200-optimization, "Router fusion").
constexpr int kRouterKernels = 72;
constexpr int kFusedRouterKernels = 31;

/// The MLP of an MoE layer on one rank (Megatron-Core MoELayer with the alltoall or allgather dispatcher and
/// TEGroupedMLP), appended to w.forward; sets w.expert_forward / expert_backward. `routed` tokens enter the
/// router on this rank (the sequence-parallel shard, b s / (c t)); `tokens` is the tensor-parallel group's
/// b s / c (the shared expert's input after its all-gather). With E experts over `expert` ranks (E_l local),
/// top-k routing and expert_tensor = etp, the busiest rank receives R = I x etp x routed x k token copies
/// (I = moe_rank_imbalance) and runs its E_l experts on R / E_l rows each:
///   router GEMM routed x E x h (16-bit; Megatron keeps the router out of FP8), softmax/top-k over the fp32
///   logits (read e + write 4 + read 4 per logit); permute: read routed x h, write routed x k x h; fc1 (gated:
///   2 f_e / etp columns) and fc2 as grouped GEMMs of E_l batches of R / E_l rows (one GEMM per expert without
///   grouped GEMM); the activation over R x f_e / etp; unpermute: read routed x k x h (and the probabilities),
///   write routed x h; the shared expert as a tensor-parallel MLP of width f_s on `tokens`.
void moe_mlp(LayerWork& w, const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o, double routed,
             double tokens, std::vector<size_t>& shared_ops) {
  std::vector<Op>& fw = w.forward;
  const double e = activation_bytes_per_element(tr.precision);
  const bool fp8 = tr.precision == Precision::fp8;
  const int64_t h = m.hidden_size, experts = m.num_experts, k = m.moe_router_topk;
  check_divisible(experts, o.expert, "num_experts", "expert-parallel size");
  check_divisible(m.expert_ffn(), o.expert_tensor, "moe_ffn_hidden_size", "expert-tensor-parallel size");
  const int64_t local = experts / o.expert, fe = m.expert_ffn() / o.expert_tensor;
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const double mean_received = d(o.expert_tensor) * routed * d(k);
  const double imbalance = moe_rank_load(tr, experts, local, o.expert, mean_received);
  const double received = imbalance * mean_received;
  const auto rows = static_cast<int64_t>(std::ceil(received / d(local)));
  // The experts' FP8 inputs are quantised expert by expert (TE GroupedLinear splits its input per GEMM and
  // allocates each split's FP8 data and transpose: NVIDIA/TransformerEngine#1499): `local` launches.
  auto cast_transpose = [&](const std::string& name, double elements) {
    if (fp8) fw.push_back(memory_op(name + "_fp8_cast_transpose", elements * (e + 2.0), static_cast<int>(local)));
  };
  // Sorting the received tokens from (source rank, expert) to (expert, source rank) order after the dispatch,
  // and back before the combine (Megatron-Core MoEAlltoAllTokenDispatcher: sort_chunks_by_idxs when a rank holds
  // several experts and the expert-parallel group has several ranks): read and write every received copy.
  const bool sorts = tr.moe_token_dispatcher == MoeDispatcher::alltoall && o.expert > 1 && local > 1;
  MoeIssue& issue = w.moe_issue;
  issue.moe = true;

  fw.push_back(gemm_op("router", GemmRole::router, static_cast<int64_t>(routed), experts, h));
  fw.push_back(memory_op("router_topk", routed * d(experts) * (e + 8.0),
                         tr.moe_router_fusion ? kFusedRouterKernels : kRouterKernels));
  const size_t permute_at = fw.size();
  fw.push_back(memory_op("moe_permute", routed * d(h) * e * (1.0 + d(k)), 2));
  issue.dispatch = fw.size();
  if (sorts) fw.push_back(memory_op("moe_sort_chunks", 2.0 * received * d(h) * e));
  cast_transpose("expert_fc1_input", received * d(h));
  auto expert_gemm = [&](const std::string& name, int64_t n, int64_t kk) {
    if (tr.moe_grouped_gemm) {
      // TE GroupedLinear runs one cuBLAS GEMM per local expert, over several streams
      // (nvte_multi_stream_cublas_gemm, NVIDIA/TransformerEngine#1499): `local` launches.
      Op op = gemm_op(name, GemmRole::expert, rows, n, kk, local);
      op.fp8 = fp8;
      op.kernels = static_cast<int>(local);
      fw.push_back(op);
      return;
    }
    for (int64_t x = 0; x < local; ++x) {
      Op op = gemm_op(name, GemmRole::expert, rows, n, kk);
      op.fp8 = fp8;
      fw.push_back(op);
    }
  };
  expert_gemm("expert_fc1", static_cast<int64_t>(gate) * fe, h);
  fw.push_back(memory_op(m.gated_mlp ? "expert_swiglu" : "expert_gelu", received * d(fe) * e * (gate + 1.0)));
  cast_transpose("expert_fc2_input", received * d(fe));
  expert_gemm("expert_fc2", h, fe);
  if (sorts) fw.push_back(memory_op("moe_unsort_chunks", 2.0 * received * d(h) * e));
  issue.combine = fw.size();
  fw.push_back(memory_op("moe_unpermute", routed * d(h) * e * (1.0 + d(k)) + routed * d(k) * 4.0, 2));
  switch (moe_host_wait(tr)) {
    case MoeHostWait::none: break;
    case MoeHostWait::before_permutation:
      issue.host_waits = true;
      issue.host_wait = permute_at;
      break;
    case MoeHostWait::before_dispatch:
      issue.host_waits = true;
      issue.host_wait = issue.dispatch;
      break;
  }

  if (m.moe_shared_expert_intermediate_size > 0) {
    check_divisible(m.moe_shared_expert_intermediate_size, o.tensor, "moe_shared_expert_intermediate_size");
    const int64_t fs = m.moe_shared_expert_intermediate_size / o.tensor;
    const auto tokens_i = static_cast<int64_t>(tokens);
    Op fc1 = gemm_op("shared_fc1", GemmRole::mlp_in, tokens_i, static_cast<int64_t>(gate) * fs, h);
    fc1.fp8 = fp8;
    shared_ops.push_back(fw.size());
    fw.push_back(fc1);
    shared_ops.push_back(fw.size());
    fw.push_back(memory_op("shared_swiglu", tokens * d(fs) * e * (gate + 1.0)));
    if (fp8) {
      shared_ops.push_back(fw.size());
      cast_transpose("shared_fc2_input", tokens * d(fs));
    }
    Op fc2 = gemm_op("shared_fc2", GemmRole::mlp_out, tokens_i, h, fs);
    fc2.fp8 = fp8;
    shared_ops.push_back(fw.size());
    fw.push_back(fc2);
  }

  // Traffic per pass: the busiest rank's copies, 16-bit (Megatron dispatches and combines in the activation
  // dtype; DeepSeek's FP8 dispatch is not modelled).
  ExpertTraffic traffic;
  traffic.dispatcher = tr.moe_token_dispatcher;
  traffic.imbalance = imbalance;
  if (tr.moe_token_dispatcher == MoeDispatcher::alltoall) {
    if (o.expert > 1) traffic.all_to_all_bytes = units::Bytes(imbalance * routed * d(k) * d(h) * e);
    if (o.expert_tensor > 1) traffic.expert_tensor_bytes = units::Bytes(received * d(h) * e);
  } else if (tr.moe_token_dispatcher == MoeDispatcher::flex) {
    if (o.expert_tensor != 1) {
      throw std::invalid_argument("the flex (DeepEP) dispatcher needs expert_tensor = 1, got " +
                                  std::to_string(o.expert_tensor));
    }
    if (o.expert > 1) traffic.token_bytes = units::Bytes(imbalance * routed * d(h) * e);
    traffic.experts = experts;
    traffic.topk = k;
  } else if (o.expert * o.expert_tensor > 1) {
    // Every rank gathers every token of the expert x expert-tensor group and keeps its experts' copies.
    traffic.all_gather_bytes = units::Bytes(d(o.expert * o.expert_tensor) * routed * d(h) * e);
  }
  w.expert_forward = traffic;
  w.expert_backward = traffic;
}

}  // namespace

MoeHostWait moe_host_wait(const TrainingConfig& tr) {
  if (tr.moe_expert_capacity_factor <= 0.0) return MoeHostWait::before_dispatch;
  return tr.moe_pad_expert_input_to_capacity ? MoeHostWait::none : MoeHostWait::before_permutation;
}

double causal_attention_fraction(int64_t seq_length) {
  constexpr int64_t kBlock = 128;  // FlashAttention-2/3 query/key block rows on A100/H100 (Dao 2023; Shah et al. 2024)
  if (seq_length <= kBlock) return 1.0;
  return 0.5 * (1.0 + static_cast<double>(kBlock) / static_cast<double>(seq_length));
}

LayerWork transformer_layer(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  const int64_t t = o.tensor;
  check_divisible(m.num_attention_heads, t, "num_attention_heads");
  check_divisible(m.kv_heads(), t, "num_query_groups");
  check_divisible(m.ffn(), t, "ffn_hidden_size");
  check_divisible(m.seq_length, o.context, "seq_length", "context-parallel size");
  // s_q: the queries (and tokens) of this rank's context shard; s: the keys each attends over.
  const int64_t b = tr.micro_batch_size, s = m.seq_length, s_q = s / o.context, h = m.hidden_size, hd = m.head_dim();
  const int64_t heads = m.num_attention_heads / t, kv = m.kv_heads() / t, f = m.ffn() / t;
  const double e = activation_bytes_per_element(tr.precision);
  const bool fp8 = tr.precision == Precision::fp8;
  const KernelFusion fusion = tr.kernel_fusion;
  const bool separate_projections = fusion != KernelFusion::fused;  // the model's own nn.Linear modules
  const double tokens = d(b) * d(s_q);
  const double q_width = d(heads) * d(hd), kv_width = d(kv) * d(hd);
  // Norm and dropout regions hold the full b*s*h tensor on every TP rank, or 1/t of it with sequence
  // parallelism.
  const double region = tokens * d(h) / (o.sequence_parallel ? d(t) : 1.0);
  // FP8 cast + transpose of a GEMM input of `elements` (read e, write fp8 and its transpose).
  auto cast_transpose = [&](std::vector<Op>& ops, const std::string& name, double elements) {
    if (fp8) ops.push_back(memory_op(name + "_fp8_cast_transpose", elements * (e + 2.0)));
  };
  auto linear = [&](std::vector<Op>& ops, const std::string& name, GemmRole role, int64_t n, int64_t k) {
    Op op = gemm_op(name, role, b * s_q, n, k);
    op.fp8 = fp8;
    ops.push_back(op);
  };

  LayerWork w;
  std::vector<Op>& fw = w.forward;
  fw.push_back(norm_op("norm_1", region, e, fusion));  // with FP8, TE's LayerNormLinear emits FP8 itself
  // Per-rank widths of a head's query/key and value (equal to hd without MLA).
  const int64_t dqk = m.query_key_dim(), dv = m.value_dim();
  const double v_width = d(heads) * d(dv);
  if (m.multi_latent_attention) {
    // MLA (DeepSeek-V2 Sec. 2.1; Megatron-Core MLASelfAttention): the down-projections to the latents are
    // replicated over the tensor-parallel ranks, the up-projections split by heads; RMSNorm on each latent; RoPE
    // on the queries' and the shared key's rotary parts.
    const int64_t rope_dim = m.qk_pos_emb_head_dim;
    if (m.q_lora_rank > 0) {
      linear(fw, "q_down_proj", GemmRole::attention_in, m.q_lora_rank, h);
      fw.push_back(norm_op("q_latent_norm", tokens * d(m.q_lora_rank), e, fusion));
      linear(fw, "q_up_proj", GemmRole::attention_in, heads * dqk, m.q_lora_rank);
    } else {
      linear(fw, "q_proj", GemmRole::attention_in, heads * dqk, h);
    }
    linear(fw, "kv_down_proj", GemmRole::attention_in, m.kv_lora_rank + rope_dim, h);
    fw.push_back(norm_op("kv_latent_norm", tokens * d(m.kv_lora_rank), e, fusion));
    linear(fw, "kv_up_proj", GemmRole::attention_in, heads * (m.qk_head_dim + dv), m.kv_lora_rank);
    fw.push_back(memory_op("rope", 2.0 * tokens * d(heads + 1) * d(rope_dim) * e));
  } else if (separate_projections) {
    linear(fw, "q_proj", GemmRole::attention_in, heads * hd, h);
    linear(fw, "k_proj", GemmRole::attention_in, kv * hd, h);
    linear(fw, "v_proj", GemmRole::attention_in, kv * hd, h);
  } else {
    linear(fw, "qkv_proj", GemmRole::attention_in, (heads + 2 * kv) * hd, h);
  }
  if (m.rope && !m.multi_latent_attention) {
    if (fusion == KernelFusion::eager) {
      fw.push_back(memory_op("rope", 20.0 * tokens * (q_width + kv_width), 6));
    } else {
      fw.push_back(memory_op("rope", 2.0 * tokens * (q_width + kv_width) * e));
    }
  }
  if (fusion == KernelFusion::eager && kv < heads && !m.multi_latent_attention) {
    fw.push_back(memory_op("repeat_kv", 2.0 * tokens * (kv_width + q_width) * e, 2));
  }
  const size_t attention_begin = fw.size();
  if (tr.flash_attention) {
    Op fa;
    fa.name = "flash_attention";
    fa.op_class = OpClass::fused_attention;
    // With context parallelism the causal work of the whole sequence is split evenly: each rank runs one causal
    // block of its own two chunks and c - 1 half blocks, (1 + 128/s)/2 of its s_q x s rectangle.
    fa.flops = m.multi_latent_attention ? units::Flops(2.0 * d(b) * d(heads) * d(s_q) * d(s) * d(dqk + dv))
                                        : units::Flops(4.0 * d(b) * d(heads) * d(s_q) * d(s) * d(hd));
    fa.executed_fraction = causal_attention_fraction(s);
    fa.attention_kernel = tr.attention_kernel;
    fa.attention_head_dim = m.multi_latent_attention ? dqk : hd;
    fa.attention_key_length = o.context > 1 && o.context_comm == ContextComm::p2p ? s / o.context : s;
    fw.push_back(fa);
  } else {
    // Scores S = Q K^T per head; fused scale-mask-softmax reads S and writes P; dropout reads P and writes
    // P' and a 1-byte mask; context O = P' V.
    const double scores = d(b) * d(heads) * d(s_q) * d(s);
    fw.push_back(gemm_op("attention_scores", GemmRole::attention_core, s_q, s, dqk, b * heads));
    fw.push_back(memory_op("scale_mask_softmax", 2.0 * scores * e));
    if (m.dropout > 0.0) fw.push_back(memory_op("attention_dropout", scores * (2.0 * e + 1.0)));
    fw.push_back(gemm_op("attention_context", GemmRole::attention_core, s_q, dv, s, b * heads));
  }
  const size_t attention_end = fw.size();
  if (fusion == KernelFusion::eager) fw.push_back(memory_op("attention_transpose", 2.0 * tokens * v_width * e));
  cast_transpose(fw, "out_proj_input", tokens * v_width);
  linear(fw, "out_proj", GemmRole::attention_out, h, heads * dv);
  if (fusion == KernelFusion::eager && m.dropout > 0.0) {
    fw.push_back(memory_op("dropout_1", region * (2.0 * e + 1.0)));
    fw.push_back(memory_op("residual_1", 3.0 * region * e));
  } else {
    fw.push_back(residual_op("residual_1", region, e, m));
  }
  w.mlp_forward_begin = fw.size();
  fw.push_back(norm_op("norm_2", region, e, fusion));
  std::vector<size_t> shared_ops;
  if (o.moe) {
    moe_mlp(w, m, tr, o, region / d(h), tokens, shared_ops);
  } else {
    if (separate_projections && m.gated_mlp) {
      linear(fw, "mlp_gate", GemmRole::mlp_in, f, h);
      linear(fw, "mlp_up", GemmRole::mlp_in, f, h);
    } else {
      linear(fw, "mlp_fc1", GemmRole::mlp_in, (m.gated_mlp ? 2 : 1) * f, h);
    }
    if (m.gated_mlp && fusion == KernelFusion::eager) {
      fw.push_back(memory_op("silu", 2.0 * tokens * d(f) * e));
      fw.push_back(memory_op("gate_mul", 3.0 * tokens * d(f) * e));
    } else {
      fw.push_back(memory_op(m.gated_mlp ? "swiglu" : "bias_gelu", tokens * d(f) * e * (m.gated_mlp ? 3.0 : 2.0)));
    }
    cast_transpose(fw, "mlp_fc2_input", tokens * d(f));
    linear(fw, "mlp_fc2", GemmRole::mlp_out, h, f);
  }
  if (fusion == KernelFusion::eager && m.dropout > 0.0) {
    fw.push_back(memory_op("dropout_2", region * (2.0 * e + 1.0)));
    fw.push_back(memory_op("residual_2", 3.0 * region * e));
  } else {
    fw.push_back(residual_op("residual_2", region, e, m));
  }

  for (size_t i = fw.size(); i-- > 0;) {
    const Op& op = fw[i];
    // FP8: the output gradient of each linear is cast and transposed before its dgrad and wgrad GEMMs.
    if (op.op_class == OpClass::gemm && op.fp8) {
      cast_transpose(w.backward, op.name + "_grad", d(op.gemm.m) * d(op.gemm.batch) * d(op.gemm.n));
      w.backward.back().kernels = op.kernels;  // expert by expert for the grouped experts
    }
    append_backward(op, w.backward);
    if (i == w.mlp_forward_begin) w.mlp_backward_end = w.backward.size();
    // The combine's gradient follows the unpermutation's backward, the dispatch's follows the backward of the
    // first op after the dispatch.
    if (o.moe && i == w.moe_issue.combine) w.moe_issue.backward_combine = w.backward.size();
    if (o.moe && i == w.moe_issue.dispatch) w.moe_issue.backward_dispatch = w.backward.size();
  }
  mark_fused_accumulation(w.backward, tr);

  const units::Bytes tp_bytes(tokens * d(h) * e);
  // Two collectives per pass (attention, MLP); an MoE layer's MLP has none but its shared expert's.
  const bool tp_mlp = !o.moe || m.moe_shared_expert_intermediate_size > 0;
  const int tp_count = t > 1 ? (tp_mlp ? 2 : 1) : 0;
  if (t > 1) {
    // The input gradients of the column-parallel linears (attention in, MLP in) can hide under their wgrads.
    for (GemmRole role : {GemmRole::attention_in, GemmRole::mlp_in}) {
      if (role == GemmRole::mlp_in && !tp_mlp) continue;
      std::vector<size_t> wgrads;
      for (size_t i = 0; i < w.backward.size(); ++i) {
        const Op& op = w.backward[i];
        if (op.op_class == OpClass::gemm && op.role == role && op.name.ends_with("_wgrad")) wgrads.push_back(i);
      }
      w.tp_backward_hidden_by.push_back(std::move(wgrads));
    }
  }
  w.tp_forward = {tp_count, tp_bytes};
  w.tp_backward = {tp_count, tp_bytes};
  w.expert_forward.shared_expert_ops = shared_ops;
  if (o.context > 1) {
    // The K/V the attention receives: the key/value heads with Transformer Engine (fused), or every query
    // head's copy in PyTorch models, which repeat K and V to all heads before scaled_dot_product_attention
    // (torchtitan models/llama/model.py Attention.forward: repeat_kv, then SDPA; context_parallel exchanges
    // SDPA's inputs).
    const double exchanged_width = fusion == KernelFusion::fused ? kv_width : q_width;
    w.context_kv_block = m.multi_latent_attention  // every head's key and value after the up-projection
                             ? units::Bytes(tokens * d(heads) * d(dqk + dv) * e)
                             : units::Bytes(tokens * 2.0 * exchanged_width * e);
  }
  switch (tr.activation_recompute) {
    case Recompute::none:
      break;
    case Recompute::selective:
      // Megatron-Core's recompute modules, in forward order. core_attn: Korthikanti et al. 2022 Sec. 5, the
      // attention core (scores, softmax, dropout, context); Megatron-Core checkpoints the core-attention module
      // itself (TransformerLayer's _checkpointed_attention_forward), so with a fused attention kernel its forward
      // runs again before its backward. mla_up_proj: the up-projections and RoPE; layernorm: the two pre-norms;
      // moe_act: the routed experts' activation; mlp: a dense layer's whole MLP.
      for (size_t i = 0; i < fw.size(); ++i) {
        const std::string& name = fw[i].name;
        const bool rerun =
            (tr.recomputes(RecomputeModule::core_attn) && i >= attention_begin && i < attention_end) ||
            (tr.recomputes(RecomputeModule::mla_up_proj) && m.multi_latent_attention &&
             (name.rfind("q_up_proj", 0) == 0 || name.rfind("kv_up_proj", 0) == 0 || name == "rope")) ||
            (tr.recomputes(RecomputeModule::layernorm) && (name == "norm_1" || name == "norm_2")) ||
            (tr.recomputes(RecomputeModule::moe_act) && o.moe && (name == "expert_swiglu" || name == "expert_gelu")) ||
            (tr.recomputes(RecomputeModule::mlp) && !o.moe && i > w.mlp_forward_begin &&
             name.rfind("residual", 0) != 0 && name.rfind("dropout", 0) != 0);
        if (rerun) w.recompute.push_back(fw[i]);
      }
      break;
    case Recompute::selective_op: {
      // torchtitan's op-level policy: matmul and attention outputs are saved except every second matmul (in
      // forward order, within the layer); all other ops are recomputed. The unfused attention core's ops are
      // matmuls and memory-bound ops like any other.
      int matmuls = 0;
      for (const Op& op : fw) {
        if (op.op_class == OpClass::fused_attention) continue;
        if (op.op_class == OpClass::gemm) {
          if (++matmuls % 2 == 0) w.recompute.push_back(op);
          continue;
        }
        w.recompute.push_back(op);
      }
      break;
    }
    case Recompute::full:
      w.recompute = fw;
      w.tp_recompute = w.tp_forward;
      break;
  }
  return w;
}

std::shared_ptr<const LayerWork> shared_transformer_layer(const ModelConfig& m, const TrainingConfig& tr,
                                                          const LayerOptions& o) {
  constexpr size_t kKeptLayers = 64;  // the header's count
  struct Kept {
    ModelConfig model;
    TrainingConfig training;
    LayerOptions options;
    std::shared_ptr<const LayerWork> layer;
  };
  struct Memo {
    std::vector<Kept> kept;  // at most kKeptLayers; the oldest replaced first
    size_t next = 0;
  };
  thread_local Memo memo;
  for (const Kept& k : memo.kept) {
    if (k.options == o && k.training == tr && k.model == m) return k.layer;
  }
  auto layer = std::make_shared<const LayerWork>(transformer_layer(m, tr, o));
  if (memo.kept.size() < kKeptLayers) {
    memo.kept.push_back(Kept{m, tr, o, layer});
  } else {
    memo.kept[memo.next] = Kept{m, tr, o, layer};
    memo.next = (memo.next + 1) % kKeptLayers;
  }
  return layer;
}

LayerWork lm_head(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  check_divisible(m.vocab_size, o.tensor, "vocab_size");
  check_divisible(m.seq_length, o.context, "seq_length", "context-parallel size");
  const int64_t b = tr.micro_batch_size, s = m.seq_length / o.context, h = m.hidden_size, v = m.vocab_size / o.tensor;
  const double e = activation_bytes_per_element(tr.precision);
  const double tokens = d(b) * d(s);
  const double region = tokens * d(h) / (o.sequence_parallel ? d(o.tensor) : 1.0);
  LayerWork w;
  w.forward.push_back(norm_op("final_norm", region, e, tr.kernel_fusion));
  w.forward.push_back(gemm_op("lm_head", GemmRole::lm_head, b * s, v, h));
  // Megatron's vocab-parallel cross-entropy (mpu/cross_entropy.py) on fp32 logits, kernel by kernel over the
  // b s V/t logits: cast to fp32 (read e, write 4), max (read 4), subtract the max in place (4 + 4), exp in
  // place (4 + 4), sum (read 4), divide into the softmax kept for backward (4 + 4): e + 36 bytes each.
  w.forward.push_back(memory_op("cross_entropy", tokens * d(v) * (e + 36.0), 6));
  for (size_t i = w.forward.size(); i-- > 0;) append_backward(w.forward[i], w.backward);
  // Its backward: softmax minus the one-hot target, times the loss gradient, in place (read 4, write 4), then
  // cast back to the logits' precision (read 4, write e): 12 + e bytes, not the generic 1.5x.
  for (Op& op : w.backward) {
    if (op.name == "cross_entropy_bwd") {
      op.bytes = units::Bytes(tokens * d(v) * (12.0 + e));
      op.kernels = 2;
    }
  }
  mark_fused_accumulation(w.backward, tr);
  // With sequence parallelism the final norm's output is all-gathered before the LM head.
  // Backward: the gradient is reduce-scattered back to the sequence-parallel shards.
  const int tp_count = (o.tensor > 1 && o.sequence_parallel) ? 1 : 0;
  w.tp_forward = {tp_count, units::Bytes(tokens * d(h) * e), TensorParallelTraffic::Sequence::all_gather};
  w.tp_backward = {tp_count, units::Bytes(tokens * d(h) * e), TensorParallelTraffic::Sequence::reduce_scatter};
  return w;
}

LayerWork embedding(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  const double e = activation_bytes_per_element(tr.precision);
  check_divisible(m.seq_length, o.context, "seq_length", "context-parallel size");
  const double tokens = d(tr.micro_batch_size) * d(m.seq_length / o.context);
  LayerWork w;
  // Lookup of the word embedding (read the row, write), plus the learned position's row and the add.
  w.forward.push_back(memory_op("embedding_lookup", (m.rope ? 2.0 : 3.0) * tokens * d(m.hidden_size) * e));
  if (m.dropout > 0.0) {
    w.forward.push_back(memory_op("embedding_dropout", tokens * d(m.hidden_size) * (2.0 * e + 1.0)));
  }
  for (size_t i = w.forward.size(); i-- > 0;) append_backward(w.forward[i], w.backward);
  // Vocab-parallel embedding: each rank looks up its vocabulary slice, then an all-reduce (Megatron), or a
  // reduce-scatter into the sequence-parallel shards.
  w.tp_forward = {o.tensor > 1 ? 1 : 0, units::Bytes(tokens * d(m.hidden_size) * e),
                  TensorParallelTraffic::Sequence::reduce_scatter};
  // Backward: an all-reduce's is the identity; a reduce-scatter's is an all-gather of the gradient.
  w.tp_backward = {(o.tensor > 1 && o.sequence_parallel) ? 1 : 0, units::Bytes(tokens * d(m.hidden_size) * e),
                   TensorParallelTraffic::Sequence::all_gather};
  return w;
}

LayerWork mtp_projection(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  check_divisible(m.hidden_size, o.tensor, "hidden_size");
  check_divisible(m.seq_length, o.context, "seq_length", "context-parallel size");
  const double e = activation_bytes_per_element(tr.precision);
  const int64_t tokens = tr.micro_batch_size * (m.seq_length / o.context), h = m.hidden_size;
  const double region = d(tokens) * d(h) / (o.sequence_parallel ? d(o.tensor) : 1.0);
  LayerWork w;
  w.forward.push_back(norm_op("mtp_hidden_norm", region, e, tr.kernel_fusion));
  w.forward.push_back(norm_op("mtp_embedding_norm", region, e, tr.kernel_fusion));
  w.forward.push_back(memory_op("mtp_concat", 2.0 * region * 2.0 * e));
  w.forward.push_back(gemm_op("mtp_eh_proj", GemmRole::mlp_in, tokens, h / o.tensor, 2 * h));
  for (size_t i = w.forward.size(); i-- > 0;) append_backward(w.forward[i], w.backward);
  mark_fused_accumulation(w.backward, tr);
  return w;
}

units::Flops total_flops(const std::vector<Op>& ops) {
  units::Flops sum;
  for (const Op& op : ops) sum += op.flops;
  return sum;
}

namespace {

/// Weights of one layer's four GEMMs (QKV, output projection, fc1, fc2).
/// GEMM weights of the attention block: Q (h x a d), K and V (h x g d each), output (a d x h); with MLA the
/// latent down- and up-projections (q: h x r_q + r_q x a d_qk, or h x a d_qk; kv: h x (r_kv + d_r) + r_kv x a
/// (d_nope + d_v)) and the output (a d_v x h).
double attention_gemm_weights(const ModelConfig& m) {
  if (m.multi_latent_attention) {
    const double h = d(m.hidden_size), a = d(m.num_attention_heads), rq = d(m.q_lora_rank);
    const double q = m.q_lora_rank > 0 ? h * rq + rq * a * d(m.query_key_dim()) : h * a * d(m.query_key_dim());
    const double kv = h * d(m.kv_lora_rank + m.qk_pos_emb_head_dim) +
                      d(m.kv_lora_rank) * a * d(m.qk_head_dim + m.v_head_dim);
    return q + kv + a * d(m.v_head_dim) * h;
  }
  const double h = d(m.hidden_size), q_width = d(m.num_attention_heads) * d(m.head_dim());
  const double kv_width = 2.0 * d(m.kv_heads()) * d(m.head_dim());
  return h * (q_width + kv_width) + q_width * h;
}

/// GEMM weights of an MLP of width f (gate and up for a gated MLP, then down).
double mlp_gemm_weights(const ModelConfig& m, double f) {
  const double h = d(m.hidden_size);
  return (m.gated_mlp ? 2.0 : 1.0) * h * f + f * h;
}

/// GEMM weights of a dense layer.
double layer_gemm_weights(const ModelConfig& m) { return attention_gemm_weights(m) + mlp_gemm_weights(m, d(m.ffn())); }

/// GEMM weights an MoE layer applies to each token: attention, the router (h x E), k routed experts and the
/// shared expert (the "active" weights of the papers' FLOP counts).
double moe_layer_active_weights(const ModelConfig& m) {
  return attention_gemm_weights(m) + d(m.hidden_size) * d(m.num_experts) +
         d(m.moe_router_topk) * mlp_gemm_weights(m, d(m.expert_ffn())) +
         mlp_gemm_weights(m, d(m.moe_shared_expert_intermediate_size));
}

/// Forward FLOPs per token of layer `layer`: 2 per weight it applies to the token plus attention 4 s a d (QK^T
/// and PV over s positions).
double layer_forward_flops_per_token(const ModelConfig& m, int64_t layer) {
  const double weights = m.is_moe_layer(layer) ? moe_layer_active_weights(m) : layer_gemm_weights(m);
  if (m.multi_latent_attention) {  // QK^T over d_qk and PV over d_v
    return 2.0 * weights +
           2.0 * d(m.seq_length) * d(m.num_attention_heads) * d(m.query_key_dim() + m.value_dim());
  }
  return 2.0 * weights + 4.0 * d(m.seq_length) * d(m.num_attention_heads) * d(m.head_dim());
}

/// The first decoder layer of each virtual stage (layers are laid out in virtual-stage order).
std::vector<int64_t> first_layers(const std::vector<int64_t>& layers) {
  std::vector<int64_t> first;
  int64_t next = 0;
  for (int64_t n : layers) {
    first.push_back(next);
    next += n;
  }
  return first;
}

}  // namespace

units::Flops model_flops_per_iteration(const ModelConfig& m, const TrainingConfig& tr) {
  const double tokens = d(tr.global_batch_size) * d(m.seq_length);
  const double h = d(m.hidden_size);
  double per_token = 2.0 * h * d(m.vocab_size);
  for (int64_t l = 0; l < m.num_layers; ++l) per_token += layer_forward_flops_per_token(m, l);
  // Each multi-token-prediction module: its block (the last layer's kind), the 2h -> h projection and the
  // output head again (Megatron-Core counts them in num_floating_point_operations).
  per_token += d(m.mtp_num_layers) *
               (layer_forward_flops_per_token(m, m.num_layers - 1) + 2.0 * 2.0 * h * h + 2.0 * h * d(m.vocab_size));
  return units::Flops(3.0 * tokens * per_token);
}

namespace {

/// The recompute FLOPs of one dense layer and of one MoE layer (0 for a dense model) of `m` under `whole`
/// (transformer_layer at tensor 1, its recompute ops' total_flops), the last ones asked for on this thread
/// kept with their inputs: consecutive points of a sweep ask again with the same model and training (the micro
/// batch is the global batch here). Equal inputs give transformer_layer the same arguments, so the kept values
/// are the ones it computes (the doubles compared by value: +0 and -0 take the same branches in the layer).
struct RecomputeFlops {
  double dense = 0.0, moe = 0.0;
};
const RecomputeFlops& layer_recompute_flops(const ModelConfig& m, const TrainingConfig& whole) {
  struct Kept {
    bool valid = false;
    ModelConfig model;
    TrainingConfig training;
    RecomputeFlops flops;
  };
  thread_local Kept kept;
  if (kept.valid && kept.model == m && kept.training == whole) return kept.flops;
  RecomputeFlops flops;  // kept only once both are computed (a throw leaves the last ones kept)
  flops.dense = total_flops(transformer_layer(m, whole, LayerOptions{}).recompute).value();
  LayerOptions moe;
  moe.moe = true;
  flops.moe = m.moe() ? total_flops(transformer_layer(m, whole, moe).recompute).value() : 0.0;
  kept.valid = false;
  kept.flops = flops;
  kept.model = m;
  kept.training = whole;
  kept.valid = true;
  return kept.flops;
}

}  // namespace

units::Flops hardware_flops_per_iteration(const ModelConfig& m, const TrainingConfig& tr, const ParallelismConfig& par) {
  // The recompute ops of one layer for the whole global batch (one microbatch of B sequences at t = 1: FLOPs
  // scale linearly in the batch), times the layers that recompute.
  TrainingConfig whole = tr;
  whole.micro_batch_size = tr.global_batch_size;
  // Balanced routing (one expert-parallel rank): the FLOPs the model asks for, not a busiest rank's.
  whole.moe_router_load_balancing = MoeBalance::forced;
  const RecomputeFlops& per_layer = layer_recompute_flops(m, whole);
  // Megatron's block method recomputes the first recompute_num_layers layers of each chunk.
  const std::vector<int64_t> layers = layers_per_virtual_stage(m.num_layers, par);
  const std::vector<int64_t> first = first_layers(layers);
  double dense_layers = 0.0, moe_layers = 0.0;
  for (size_t vs = 0; vs < layers.size(); ++vs) {
    const int64_t recomputing = recomputed_layers(tr, layers[vs]);
    const int64_t moe_count = m.moe_layers_in(first[vs], recomputing);
    moe_layers += d(moe_count);
    dense_layers += d(recomputing - moe_count);
  }
  return model_flops_per_iteration(m, tr) + units::Flops(per_layer.dense * dense_layers + per_layer.moe * moe_layers);
}

int64_t recomputed_layers(const TrainingConfig& tr, int64_t chunk_layers) {
  if (tr.activation_recompute != Recompute::full || tr.recompute_num_layers < 0) return chunk_layers;
  return std::min(chunk_layers, tr.recompute_num_layers);
}

double layer_parameter_count(const ModelConfig& m) {
  const double h = d(m.hidden_size);
  // Biases of QKV, projection, fc1, fc2 and two norms (gain + bias) per layer.
  const double biases = 2.0 * h + 2.0 * d(m.kv_heads()) * d(m.head_dim()) + h + d(m.ffn()) + h + 4.0 * h;
  return layer_gemm_weights(m) + biases;
}

double moe_layer_expert_parameters(const ModelConfig& m) {
  return m.moe() ? d(m.num_experts) * mlp_gemm_weights(m, d(m.expert_ffn())) : 0.0;
}

namespace {

/// An MoE layer's parameters other than the routed experts' on one tensor rank: attention, norms and the
/// shared expert split over t, the router (h x E) replicated on every rank (Megatron's TopKRouter).
double moe_layer_dense_parameters(const ModelConfig& m, int64_t tensor) {
  const double h = d(m.hidden_size);
  const double attention_and_norms =
      layer_parameter_count(m) - mlp_gemm_weights(m, d(m.ffn())) - d(m.ffn()) - h;  // less the MLP and its biases
  return (attention_and_norms + mlp_gemm_weights(m, d(m.moe_shared_expert_intermediate_size))) / d(tensor) +
         h * d(m.num_experts);
}

}  // namespace

double parameter_count(const ModelConfig& m) {
  const double h = d(m.hidden_size);
  const double output = m.tie_embeddings ? 0.0 : d(m.vocab_size) * h;
  double layers = 0.0;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    layers += m.is_moe_layer(l) ? moe_layer_dense_parameters(m, 1) + moe_layer_expert_parameters(m)
                                : layer_parameter_count(m);
  }
  return layers + d(m.vocab_size) * h + (m.rope ? 0.0 : d(m.seq_length) * h) + 2.0 * h + output;
}

std::vector<double> chunk_parameters(const ModelConfig& m, const ParallelismConfig& par) {
  const std::vector<int64_t> layers = layers_per_virtual_stage(m.num_layers, par);
  const double t = d(par.tensor), h = d(m.hidden_size);
  const double per_layer = layer_parameter_count(m) / t;
  const double per_moe_layer = m.moe() ? moe_layer_dense_parameters(m, par.tensor) : 0.0;
  const double vocabulary = d(m.vocab_size) * h / t;
  const std::vector<int64_t> first = first_layers(layers);
  std::vector<double> params;
  params.reserve(layers.size());
  for (size_t vs = 0; vs < layers.size(); ++vs) {
    const int64_t moe_layers = m.moe_layers_in(first[vs], layers[vs]);
    double p = d(layers[vs] - moe_layers) * per_layer + d(moe_layers) * per_moe_layer;
    if (vs == 0) p += vocabulary + (m.rope ? 0.0 : d(m.seq_length) * h);
    if (vs + 1 == layers.size()) {
      p += 2.0 * h;
      if (!m.tie_embeddings || layers.size() > 1) p += vocabulary;
      // Multi-token prediction: per module its block, the projection (2h x h over t) and three norms; the
      // word embedding it looks the next tokens up in is held here too unless it already is (one stage, or
      // the tied copy of a pipelined model).
      if (m.mtp_num_layers > 0) {
        const double block = m.mtp_is_moe() ? per_moe_layer : per_layer;
        p += d(m.mtp_num_layers) * (block + 2.0 * h * h / t + 3.0 * h);
        if (!m.tie_embeddings && layers.size() > 1) p += vocabulary;
      }
    }
    params.push_back(p);
  }
  return params;
}

std::vector<double> chunk_expert_parameters(const ModelConfig& m, const ParallelismConfig& par) {
  const std::vector<int64_t> layers = layers_per_virtual_stage(m.num_layers, par);
  const std::vector<int64_t> first = first_layers(layers);
  const double per_layer = moe_layer_expert_parameters(m) / d(par.expert * par.expert_tensor);
  std::vector<double> params;
  for (size_t vs = 0; vs < layers.size(); ++vs) params.push_back(d(m.moe_layers_in(first[vs], layers[vs])) * per_layer);
  if (m.mtp_is_moe()) params.back() += d(m.mtp_num_layers) * per_layer;  // the MTP blocks' experts
  return params;
}

}  // namespace clustersim::models
