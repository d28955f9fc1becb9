// The work of a GPT-style transformer decoder on one tensor-parallel rank: ops with FLOPs, bytes and GEMM
// shapes per layer and per microbatch, and the FLOP counts that papers report.
//
// Layer structure (Megatron-LM, Shoeybi et al. 2019, Fig. 3; Narayanan et al. SC'21 Sec. 2.3): pre-LayerNorm,
// QKV projection (column-parallel), attention core, output projection (row-parallel), bias-dropout-add,
// LayerNorm, MLP fc1 (column-parallel) with GeLU (or gated SwiGLU), fc2 (row-parallel), bias-dropout-add.
// With tensor parallelism t each rank holds a/t heads and f/t MLP columns; two all-reduces of b*s*h elements
// per layer per pass join the ranks (or, with sequence parallelism, reduce-scatter + all-gather of the same
// volume, and LayerNorm/dropout work divided by t: Korthikanti et al. 2022, Sec. 4.2.2).
//
// Notation: b micro batch, s sequence, h hidden, a heads, g key/value groups, d = h/a head dim, f MLP width,
// V vocabulary, t tensor-parallel size, e activation bytes per element.
//
// Backward of a GEMM Y = X W is two GEMMs of the same FLOPs (dX = dY W^T and dW = X^T dY); backward of a
// memory-bound op reads the output gradient and the saved input and writes the input gradient: 1.5x the
// forward's bytes (forward reads one tensor and writes one, backward moves three).
#pragma once

#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

enum class OpClass {
  gemm,             ///< timed by ComputeModel::gemm_time on `gemm`
  memory_bound,     ///< timed by ComputeModel::memory_time on `bytes`
  fused_attention,  ///< FlashAttention: `flops` at kFlashAttentionEfficiency of the matmul rate
};

/// One kernel of one microbatch on one tensor-parallel rank.
struct Op {
  std::string name;
  OpClass op_class = OpClass::gemm;
  GemmShape gemm;         ///< GEMM shape (op_class == gemm)
  units::Bytes bytes;     ///< HBM traffic of a memory-bound op
  units::Flops flops;     ///< math FLOPs (0 for memory-bound ops)
};

/// Tensor-parallel communication of one pass of one layer: `count` collectives of `bytes_each` (the full
/// b*s*h*e activation; all-reduce, or reduce-scatter + all-gather pairs with sequence parallelism).
struct TensorParallelTraffic {
  int count = 0;
  units::Bytes bytes_each;
};

/// The ops of one transformer layer for one microbatch on one TP rank.
struct LayerWork {
  std::vector<Op> forward;
  std::vector<Op> backward;   ///< gradient computation, without recompute
  std::vector<Op> recompute;  ///< forward ops re-run before backward: all of them (full), the attention
                              ///< core (selective), none
  TensorParallelTraffic tp_forward;    ///< per forward pass (2 all-reduces when t > 1)
  TensorParallelTraffic tp_backward;   ///< per backward pass
  TensorParallelTraffic tp_recompute;  ///< per recompute (full recompute repeats the forward's)
  /// Indices into `backward` of the weight-gradient GEMMs of the column-parallel linears (QKV, MLP fc1): the
  /// input-gradient all-reduce (reduce-scatter with sequence parallelism) of each can run under its wgrad
  /// GEMM (Megatron's async tensor-parallel all-reduce). One entry per overlappable tp_backward collective.
  std::vector<size_t> tp_backward_hidden_by;
};

/// Options of the layer that are not part of the model shape.
struct LayerOptions {
  int64_t tensor = 1;               ///< t
  bool sequence_parallel = false;   ///< Megatron sequence parallelism
  bool flash_attention = false;     ///< fused attention (Dao et al. 2022) instead of materialised scores
  bool gated_mlp = false;           ///< SwiGLU: fc1 produces 2 f/t columns
};

/// FlashAttention's sustained fraction of the achievable matmul rate: FlashAttention-2 forward+backward
/// measured 179.5 TFLOP/s on A100 (head dim 64) vs 271.2 achievable matmul = 0.66; H100 327.9 / 794.5 = 0.41
/// (shared/validation/hardware.csv, Azure/AI-benchmarking-guide). The A100 figure is used; Hopper
/// FlashAttention-3 closes the gap (Shah et al. 2024).
inline constexpr double kFlashAttentionEfficiency = 0.66;

/// Ops of one decoder layer. Throws std::invalid_argument if the shape is not divisible by `tensor`.
LayerWork transformer_layer(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// The last pipeline stage's extra work: final LayerNorm, LM head GEMM (vocabulary split over t) and the
/// vocab-parallel cross-entropy (logits upcast to fp32).
LayerWork lm_head(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// The first stage's extra work: vocab-parallel embedding lookup (one all-reduce of b*s*h when t > 1).
LayerWork embedding(const ModelConfig& model, const TrainingConfig& training, const LayerOptions& options);

/// Sum of op FLOPs.
units::Flops total_flops(const std::vector<Op>& ops);

/// Model FLOPs of one iteration, no recomputation (the MFU numerator; Korthikanti et al. 2022 Sec. 6,
/// Chowdhery et al. 2022 App. B): B s tokens x 3 (forward + backward) x [l (2 W_layer + 4 s h) + 2 h V],
/// W_layer = h (h + 2 g d) + h^2 + (1 or 2) h f + f h weights per layer; attention counted over the full
/// s x s score matrix as Megatron does. For multi-head attention and f = 4h this is exactly
/// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
units::Flops model_flops_per_iteration(const ModelConfig& model, const TrainingConfig& training, bool gated_mlp);

/// Hardware FLOPs of one iteration: model FLOPs plus recomputed forward work. For full recompute with
/// multi-head attention and f = 4h this is Megatron SC'21's 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), the
/// convention of its "TFLOP/s per GPU" (shared/validation/README.md).
units::Flops hardware_flops_per_iteration(const ModelConfig& model, const TrainingConfig& training, bool gated_mlp);

/// Parameters of the whole model: l (weights of attention and MLP + 2 LayerNorms) + V h (embedding, tied with
/// the LM head) + s h (learned positions).
double parameter_count(const ModelConfig& model, bool gated_mlp);

}  // namespace clustersim::models
