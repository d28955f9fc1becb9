#include "models/workload/transformer.hpp"

#include <stdexcept>
#include <string>

namespace clustersim::models {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

Op gemm_op(std::string name, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  Op op;
  op.name = std::move(name);
  op.op_class = OpClass::gemm;
  op.gemm = GemmShape{m, n, k, batch};
  op.flops = op.gemm.flops();
  return op;
}

Op memory_op(std::string name, double bytes) {
  Op op;
  op.name = std::move(name);
  op.op_class = OpClass::memory_bound;
  op.bytes = units::Bytes(bytes);
  return op;
}

/// Backward of a forward op: GEMM -> input-gradient and weight-gradient GEMMs of equal FLOPs; memory-bound ->
/// 1.5x the bytes; fused attention -> 2.5x the FLOPs (FlashAttention backward recomputes S = QK^T:
/// Dao et al. 2022, Sec. 3.1: 5 matmuls backward vs 2 forward).
void append_backward(const Op& f, std::vector<Op>& out, bool has_weight) {
  switch (f.op_class) {
    case OpClass::gemm: {
      const GemmShape& g = f.gemm;
      out.push_back(gemm_op(f.name + "_dgrad", g.m, g.k, g.n, g.batch));
      if (has_weight) {
        out.push_back(gemm_op(f.name + "_wgrad", g.k, g.n, g.m, g.batch));
      } else {  // both operands are activations (attention): the second operand's gradient
        out.push_back(gemm_op(f.name + "_dgrad2", g.k, g.n, g.m, g.batch));
      }
      return;
    }
    case OpClass::memory_bound:
      out.push_back(memory_op(f.name + "_bwd", 1.5 * f.bytes.value()));
      return;
    case OpClass::fused_attention: {
      Op b = f;
      b.name = f.name + "_bwd";
      b.flops = f.flops * 2.5;
      out.push_back(b);
      return;
    }
  }
}

void check_divisible(int64_t value, int64_t by, const char* what) {
  if (by <= 0 || value % by != 0) {
    throw std::invalid_argument(std::string("transformer: ") + what + " (" + std::to_string(value) +
                                ") is not divisible by tensor-parallel size " + std::to_string(by));
  }
}

}  // namespace

LayerWork transformer_layer(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  const int64_t t = o.tensor;
  check_divisible(m.num_attention_heads, t, "num_attention_heads");
  check_divisible(m.kv_heads(), t, "num_query_groups");
  check_divisible(m.ffn(), t, "ffn_hidden_size");
  const int64_t b = tr.micro_batch_size, s = m.seq_length, h = m.hidden_size, hd = m.head_dim();
  const int64_t heads = m.num_attention_heads / t, kv = m.kv_heads() / t, f = m.ffn() / t;
  const double e = activation_bytes_per_element(tr.precision);
  const double tokens = d(b) * d(s);
  // LayerNorm and dropout regions hold the full b*s*h tensor on every TP rank, or 1/t of it with sequence
  // parallelism.
  const double region = tokens * d(h) / (o.sequence_parallel ? d(t) : 1.0);

  LayerWork w;
  std::vector<Op>& fw = w.forward;
  fw.push_back(memory_op("layernorm_1", 2.0 * region * e));
  fw.push_back(gemm_op("qkv_proj", b * s, (heads + 2 * kv) * hd, h));
  const size_t attention_begin = fw.size();
  if (o.flash_attention) {
    Op fa;
    fa.name = "flash_attention";
    fa.op_class = OpClass::fused_attention;
    fa.flops = units::Flops(4.0 * d(b) * d(heads) * d(s) * d(s) * d(hd));
    fw.push_back(fa);
  } else {
    // Scores S = Q K^T per head; fused scale-mask-softmax reads S and writes P; dropout reads P and writes
    // P' and a 1-byte mask; context O = P' V.
    const double scores = d(b) * d(heads) * d(s) * d(s);
    fw.push_back(gemm_op("attention_scores", s, s, hd, b * heads));
    fw.push_back(memory_op("scale_mask_softmax", 2.0 * scores * e));
    fw.push_back(memory_op("attention_dropout", scores * (2.0 * e + 1.0)));
    fw.push_back(gemm_op("attention_context", s, hd, s, b * heads));
  }
  const size_t attention_end = fw.size();
  fw.push_back(gemm_op("output_proj", b * s, h, heads * hd));
  fw.push_back(memory_op("bias_dropout_add_1", region * (3.0 * e + 1.0)));
  fw.push_back(memory_op("layernorm_2", 2.0 * region * e));
  fw.push_back(gemm_op("mlp_fc1", b * s, (o.gated_mlp ? 2 : 1) * f, h));
  fw.push_back(memory_op(o.gated_mlp ? "swiglu" : "bias_gelu", tokens * d(f) * e * (o.gated_mlp ? 3.0 : 2.0)));
  fw.push_back(gemm_op("mlp_fc2", b * s, h, f));
  fw.push_back(memory_op("bias_dropout_add_2", region * (3.0 * e + 1.0)));

  for (size_t i = fw.size(); i-- > 0;) {
    const bool in_attention_core = i >= attention_begin && i < attention_end;
    append_backward(fw[i], w.backward, /*has_weight=*/!in_attention_core);
  }

  const units::Bytes tp_bytes(tokens * d(h) * e);
  const int tp_count = t > 1 ? 2 : 0;
  if (t > 1) {
    for (size_t i = 0; i < w.backward.size(); ++i) {
      if (w.backward[i].name == "qkv_proj_wgrad" || w.backward[i].name == "mlp_fc1_wgrad") {
        w.tp_backward_hidden_by.push_back(i);
      }
    }
  }
  w.tp_forward = {tp_count, tp_bytes};
  w.tp_backward = {tp_count, tp_bytes};
  switch (tr.activation_recompute) {
    case Recompute::none:
      break;
    case Recompute::selective:
      // Korthikanti et al. 2022 Sec. 5: only the attention core (scores, softmax, dropout, context) is
      // recomputed; FlashAttention recomputes it inside its own backward already.
      if (!o.flash_attention) {
        w.recompute.assign(fw.begin() + static_cast<std::ptrdiff_t>(attention_begin),
                           fw.begin() + static_cast<std::ptrdiff_t>(attention_end));
      }
      break;
    case Recompute::full:
      w.recompute = fw;
      w.tp_recompute = w.tp_forward;
      break;
  }
  return w;
}

LayerWork lm_head(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  check_divisible(m.vocab_size, o.tensor, "vocab_size");
  const int64_t b = tr.micro_batch_size, s = m.seq_length, h = m.hidden_size, v = m.vocab_size / o.tensor;
  const double e = activation_bytes_per_element(tr.precision);
  const double tokens = d(b) * d(s);
  const double region = tokens * d(h) / (o.sequence_parallel ? d(o.tensor) : 1.0);
  LayerWork w;
  w.forward.push_back(memory_op("final_layernorm", 2.0 * region * e));
  w.forward.push_back(gemm_op("lm_head", b * s, v, h));
  // Megatron's vocab-parallel cross-entropy (mpu/cross_entropy.py) on fp32 logits, kernel by kernel over the
  // b s V/t logits: cast to fp32 (read e, write 4), max (read 4), subtract the max in place (4 + 4), exp in
  // place (4 + 4), sum (read 4), divide into the softmax kept for backward (4 + 4): e + 36 bytes each.
  w.forward.push_back(memory_op("cross_entropy", tokens * d(v) * (e + 36.0)));
  for (size_t i = w.forward.size(); i-- > 0;) append_backward(w.forward[i], w.backward, true);
  // Its backward: softmax minus the one-hot target, times the loss gradient, in place (read 4, write 4), then
  // cast back to the logits' precision (read 4, write e): 12 + e bytes, not the generic 1.5x.
  for (Op& op : w.backward) {
    if (op.name == "cross_entropy_bwd") op.bytes = units::Bytes(tokens * d(v) * (12.0 + e));
  }
  // With sequence parallelism the final LayerNorm output is all-gathered before the LM head.
  const int tp_count = (o.tensor > 1 && o.sequence_parallel) ? 1 : 0;
  w.tp_forward = {tp_count, units::Bytes(tokens * d(h) * e)};
  w.tp_backward = w.tp_forward;
  return w;
}

LayerWork embedding(const ModelConfig& m, const TrainingConfig& tr, const LayerOptions& o) {
  const double e = activation_bytes_per_element(tr.precision);
  const double tokens = d(tr.micro_batch_size) * d(m.seq_length);
  LayerWork w;
  // Lookup of word and position embeddings (reads two rows, adds, writes) and embedding dropout.
  w.forward.push_back(memory_op("embedding_lookup", 3.0 * tokens * d(m.hidden_size) * e));
  w.forward.push_back(memory_op("embedding_dropout", tokens * d(m.hidden_size) * (2.0 * e + 1.0)));
  for (size_t i = w.forward.size(); i-- > 0;) append_backward(w.forward[i], w.backward, true);
  // Vocab-parallel embedding: each rank looks up its vocabulary slice, then an all-reduce (Megatron).
  w.tp_forward = {o.tensor > 1 ? 1 : 0, units::Bytes(tokens * d(m.hidden_size) * e)};
  return w;
}

units::Flops total_flops(const std::vector<Op>& ops) {
  units::Flops sum;
  for (const Op& op : ops) sum += op.flops;
  return sum;
}

namespace {

/// Weights of one layer's four GEMMs (QKV, output projection, fc1, fc2).
double layer_gemm_weights(const ModelConfig& m, bool gated_mlp) {
  const double h = d(m.hidden_size), f = d(m.ffn());
  const double kv_width = 2.0 * d(m.kv_heads()) * d(m.head_dim());
  return h * (h + kv_width) + h * h + (gated_mlp ? 2.0 : 1.0) * h * f + f * h;
}

/// Forward FLOPs per token of one layer: 2 per weight plus attention 4 s h (QK^T and PV over s positions).
double layer_forward_flops_per_token(const ModelConfig& m, bool gated_mlp) {
  return 2.0 * layer_gemm_weights(m, gated_mlp) + 4.0 * d(m.seq_length) * d(m.hidden_size);
}

}  // namespace

units::Flops model_flops_per_iteration(const ModelConfig& m, const TrainingConfig& tr, bool gated_mlp) {
  const double tokens = d(tr.global_batch_size) * d(m.seq_length);
  const double per_token = d(m.num_layers) * layer_forward_flops_per_token(m, gated_mlp) +
                           2.0 * d(m.hidden_size) * d(m.vocab_size);
  return units::Flops(3.0 * tokens * per_token);
}

units::Flops hardware_flops_per_iteration(const ModelConfig& m, const TrainingConfig& tr, bool gated_mlp) {
  const double tokens = d(tr.global_batch_size) * d(m.seq_length);
  double recomputed_per_token = 0.0;
  switch (tr.activation_recompute) {
    case Recompute::none: break;
    case Recompute::selective:
      recomputed_per_token = d(m.num_layers) * 4.0 * d(m.seq_length) * d(m.hidden_size);
      break;
    case Recompute::full:
      recomputed_per_token = d(m.num_layers) * layer_forward_flops_per_token(m, gated_mlp);
      break;
  }
  return model_flops_per_iteration(m, tr, gated_mlp) + units::Flops(tokens * recomputed_per_token);
}

double parameter_count(const ModelConfig& m, bool gated_mlp) {
  const double h = d(m.hidden_size);
  // Biases of QKV, projection, fc1, fc2 and two LayerNorms (gain + bias) per layer.
  const double biases = 2.0 * h + 2.0 * d(m.kv_heads()) * d(m.head_dim()) + h + d(m.ffn()) + h + 4.0 * h;
  return d(m.num_layers) * (layer_gemm_weights(m, gated_mlp) + biases) + d(m.vocab_size) * h +
         d(m.seq_length) * h + 2.0 * h;
}

}  // namespace clustersim::models
