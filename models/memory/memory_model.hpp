// Memory per GPU of a training step: weights, gradients and optimizer states (by precision and ZeRO stage),
// stored activations (by recompute mode, tensor/sequence parallelism and the pipeline schedule's
// microbatches in flight), transient working memory and a framework reserve; and the out-of-memory verdict.
// Derivations, sources and the validation against Korthikanti et al. 2022 Figures 1 and 7: docs/memory.md.
//
// Notation: l layers, h hidden, a heads, kv = (key/value groups) x (head dim) width of K and V, f MLP width,
// V vocabulary, s sequence, b micro batch, t tensor, p pipeline, v virtual stages (model chunks per rank),
// d data-parallel size, m microbatches per step, e bytes per activation element (2 for fp16/bf16/fp8,
// 4 for fp32/tf32; activation_bytes_per_element). All results are bytes on ONE GPU of a pipeline stage.
//
// 1. Parameters held by one GPU of stage i: the sum of its chunks' chunk_parameters (transformer.hpp), the
//    same split as build_step_program; summed over the stages at t = p = 1 they give parameter_count exactly:
//      layers:    (l / p) x W_layer / t, W_layer = layer_parameter_count: weights + biases + 2 norms
//                 (with interleaving the rank holds v chunks of l / (p v) layers: the same total);
//      stage 0:   + V h / t (vocab-parallel word embedding) + s h (learned positions, replicated over t; none
//                 with RoPE);
//      stage p-1: + V h / t when p > 1 or the output layer is untied (Megatron's tied copy of the embedding
//                 for the LM head, or the output weight) + 2 h (final norm).
//    The per-layer split by t treats the row-parallel biases and LayerNorms (6 h per layer, replicated in
//    Megatron) as split too, as build_step_program does; the error is below 0.01 % for h >= 1024.
//
// 2. Bytes per parameter, mixed-precision Adam (Rajbhandari et al. 2020, ZeRO, Sec. 3.1: 2 + 2 + K with
//    K = 12 for fp32 master weights, momentum and variance; Megatron-LM keeps fp32 main gradients for bf16,
//    --accumulate-allreduce-grads-in-fp32, so its count is 2 + 4 + 12 = 18, the 18 of Megatron-LM's
//    theoretical_memory_usage.py and of Korthikanti et al. 2022 Figure 1):
//      precision    weights  gradients  optimizer   total
//      bf16, fp8       2         4         12        18   (fp8: Transformer Engine keeps bf16 weights)
//      fp16            2         2         12        16   (ZeRO paper's 16-bit gradients, Megatron's fp16 grads)
//      fp32, tf32      4         4          8        16   (the fp32 weights are the master copy: m and v only)
//    ZeRO over the d data-parallel replicas (Rajbhandari et al. 2020, Sec. 5): stage 1 divides the optimizer
//    states by d (Megatron's distributed optimizer: 6 + 12/d for bf16), stage 2 also the gradients, stage 3
//    also the weights. With context parallelism the shards are over d x c ranks (every context rank holds the
//    same parameters: Megatron-Core's data-parallel group with CP, torchtitan's dp_shard_cp mesh).
//
// 3. Stored activations of one transformer layer for one microbatch (Korthikanti et al. 2022, Sec. 4.1-4.2,
//    Eq. 1-5, derived op by op for 16-bit activations with 1-byte dropout masks; generalised here to e, f,
//    SwiGLU and grouped-query attention by the same op-by-op count):
//      R = s b h (4 e + 2)      replicated over t unless sequence-parallel: the inputs of the two
//                               LayerNorms, of the QKV projection and of fc1 (e each), the two 1-byte masks
//                               of the attention-output and MLP-output dropouts
//      S = s b h e (2 + 2 kv/h + c f/h)   split over t: Q, K, V, the output projection's input, and the
//                               MLP's activation input and fc2 input (c = 2 for GeLU: f + f;
//                               c = 3 for SwiGLU: 2 f gate/up + f)
//      A = a s^2 b (2 e + 1)    split over t: softmax output (e), attention-dropout mask (1) and output (e);
//                               with FlashAttention (Dao et al. 2022) no s x s tensor is stored, only the
//                               fp32 log-sum-exp, A = 4 a s b
//      none:       R / (t if sequence-parallel else 1) + S / t + A / t
//      selective:  the same without A / t (the attention core is recomputed: Korthikanti Sec. 5)
//      full:       e s b h / (t if sequence-parallel else 1) (only the layer's input is kept); with
//                  recompute_num_layers N, only N layers of each chunk, the others keep everything (none)
//      selective_op (torchtitan's per-op policy): the outputs of every other matmul (Q, V, gate, down:
//                  s b (h + kv + f + h) e / t), the attention output s b h e / t and its fp32 log-sum-exp
//                  4 a s b / t, and the block's input e s b h / (t if sequence-parallel else 1)
//    For e = 2, f = 4h, kv = h (GPT) this is exactly the paper's s b h (10 + 24/t + 5 a s/(h t)) without and
//    s b h (34/t + 5 a s/(h t)) with sequence parallelism; selective + sequence parallelism s b h 34/t.
//    Multi-head latent attention: Q and K a d_qk wide, V and the output projection's input a d_v (over t)
//    in place of 2 h + 2 kv, plus the latents r_q + r_kv + d_r per token (replicated over t).
//    Context parallelism c: every s above is the rank's shard s/c, except the keys of A (a (s/c) s b: the
//    shard's queries against all keys). Extras (item 4) are per shard too.
//
// 4. Extras of the first and last stage per microbatch (Korthikanti Sec. 4.3 / Table 2 as implemented in
//    Megatron-LM's megatron/training/theoretical_memory_usage.py):
//      stage 0, chunk 0:     token ids 8 s b (int64) + embedding-dropout mask s b h / (t if SP else 1)
//      stage p-1, last chunk: final LayerNorm input and LM-head input 2 e s b h / (t if SP else 1)
//                            + fp32 softmax of the vocab-parallel cross entropy 4 s b V / t
//    (for e = 2 with sequence parallelism the output layer is the paper's 4 s b h (1 + V/h) / t).
//
// 5. Microbatches in flight. The stage's pass order (stage_order, the same order the executor runs) is
//    walked; each forward of chunk c adds that chunk's activations, each backward removes them, and the
//    peak over the order is kept. This gives GPipe m, 1F1B min(p - i, m) (SC'21 Sec. 2.2.1) and, for
//    interleaved 1F1B, min(2 (p - i - 1) + (v - 1) p + 1, m v) chunk passes of l / (p v) layers each; on
//    stage 0 that is p (1 + (p - 1)/(p v)) microbatches' worth of the stage's layers, the factor of
//    Korthikanti Sec. 4.2.3 (Narayanan et al. SC'21 Sec. 2.2.2), so the first stage stores
//    l (1 + (p - 1)/(p v)) layers of activations whatever p is.
//
// 6. Transient working memory (an assumption of this model, not in the paper's figures): with full
//    recompute, one layer's activations without recompute for one microbatch while it is recomputed in the
//    backward pass; with ZeRO-3, two layers' gathered 16-bit weights (the current and the prefetched one);
//    with context parallelism, the K/V blocks in flight (2 for the p2p ring, c all-gathered) and as many
//    K/V-gradient blocks, 2 b (s/c) (g/t) d e bytes each.
//
// 7. Framework reserve: kFrameworkReserve = 2 GiB per GPU, an assumption: CUDA context and kernels
//    (~0.5-1 GiB), NCCL communicator buffers (~0.3-1 GiB for TP, DP and PP communicators) and caching
//    allocator fragmentation.
//
// 8. Verdict: fits = max over stages of total() <= device.memory_capacity, the catalog's memory_mib: the
//    device's total as nvidia-smi / rocm-smi reports it (A100-80GB, SXM4 or PCIe: 81920 MiB = 80 GiB), with
//    no reserve taken off; the reserve is item 7's, added to the need (docs/catalog.md "Memory capacity").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/precision.hpp"
#include "models/units.hpp"

namespace clustersim::models {

/// Bytes per parameter of mixed-precision Adam training, before ZeRO sharding (table in the header comment).
struct ParameterBytes {
  double weights = 0.0;           ///< B per parameter: the weights the math uses
  double gradients = 0.0;         ///< B per parameter: the gradient buffer that is reduced
  double optimizer_states = 0.0;  ///< B per parameter: fp32 master (when separate), Adam m and v
  [[nodiscard]] double total() const { return weights + gradients + optimizer_states; }
};

/// bf16/fp8: 2 + 4 + 12; fp16: 2 + 2 + 12; fp32/tf32: 4 + 4 + 8.
ParameterBytes bytes_per_parameter(Precision precision);

/// Framework reserve per GPU (assumption, header item 7).
inline constexpr units::Bytes kFrameworkReserve = units::gib(2.0);

/// Stored activations of one transformer layer for one microbatch on one GPU, bytes (header item 3).
/// Throws std::invalid_argument when the heads or MLP width are not divisible by t.
units::Bytes layer_activation_bytes(const ModelConfig& model, const TrainingConfig& training,
                                    const ParallelismConfig& parallelism);

/// Stored activations of one MoE layer for one microbatch on the busiest expert-parallel rank, bytes: the
/// dense layer's (layer_activation_bytes) without its MLP's (activation input and fc2 input), plus the
/// routed experts' inputs, activation inputs and fc2 inputs over the R received token copies (R as the step
/// program has it: expert_tensor x routed tokens x top-k x moe_rank_imbalance; the expert MLP's widths split
/// over expert_tensor), the combine's input (routed x k x h), the router's fp32 probabilities (routed x E x 4)
/// and the shared expert's MLP tensors split over t. Full recompute keeps only the layer input, as a dense
/// layer. Equal to layer_activation_bytes for a dense model.
units::Bytes moe_layer_activation_bytes(const ModelConfig& model, const TrainingConfig& training,
                                        const ParallelismConfig& parallelism);

/// Memory of one GPU of one pipeline stage, bytes.
struct StageMemory {
  units::Bytes weights;           ///< parameters x weight bytes (/ d with ZeRO-3)
  units::Bytes gradients;         ///< parameters x gradient bytes (/ d with ZeRO-2 and 3)
  units::Bytes optimizer_states;  ///< parameters x optimizer bytes (/ d with ZeRO-1, 2 and 3)
  /// Stored activations at the stage's peak: every in-flight chunk pass's layers, plus the embedding
  /// (stage 0) and output-layer (last stage) extras of the passes in flight.
  units::Bytes activations;
  /// One microbatch's stored activations on this stage: all its layers (all v chunks) and its extras.
  units::Bytes activation_per_microbatch;
  /// Distinct microbatches with stored activations on this stage at the peak (GPipe m, 1F1B min(p-i, m);
  /// interleaved: microbatches with at least one chunk in flight, 16 on stage 0 for p = 8, v = 3).
  int64_t microbatches_in_flight = 0;
  /// Stored layer activations at the peak in units of one microbatch through all the stage's layers (equal
  /// to microbatches_in_flight without interleaving; p (1 + (p-1)/(p v)) on stage 0 with it).
  double microbatch_equivalents = 0.0;
  units::Bytes transient;          ///< working memory during a pass (header item 6)
  units::Bytes framework_reserve;  ///< CUDA context, NCCL buffers, allocator fragmentation (header item 7)
  double parameters = 0.0;         ///< parameters held by one GPU of the stage, before ZeRO sharding
  double layer_parameters = 0.0;   ///< of which in transformer layers (Korthikanti Figure 1 counts only these)

  [[nodiscard]] units::Bytes total() const {
    return weights + gradients + optimizer_states + activations + transient + framework_reserve;
  }
};

struct MemoryReport {
  std::vector<StageMemory> stages;  ///< p entries, one per pipeline stage
  units::Bytes capacity;            ///< the device's memory_capacity, compared against
  int64_t peak_stage = 0;           ///< stage with the largest total (the first of equals)
  units::Bytes peak;                ///< that stage's total
  bool fits = false;                ///< peak <= capacity
  /// One line: "fits: " or "out of memory: " then "stage 0 needs 92.3 GiB of 80.0 GB (74.5 GiB): weights 12.1,
  /// gradients 24.2, optimizer 36.4, activations 17.6 (4 microbatches in flight), reserve 2.0" (GiB).
  std::string verdict;
};

/// Memory of every pipeline stage of `setup` on `device`. Never throws for out-of-memory (fits = false);
/// throws std::invalid_argument on an inconsistent setup (non-positive sizes, layers not divisible by
/// p x v, heads or MLP width not divisible by t, h not divisible by a, ZeRO stage outside 0-3, batch not
/// divisible by micro batch x d, GPipe with v > 1, interleaving with m not divisible by p).
/// The activations' peak of each stage (item 5's walk of its pass order) is computed once per distinct
/// (schedule, stage, p, m, v, bytes of each chunk's pass) and kept in a bounded cache shared by all threads: the
/// same numbers, bit for bit, as walking the order again (the walk is a pure function of those inputs).
MemoryReport estimate_memory(const StepSetup& setup, const DeviceSpec& device);

/// estimate_memory(setup, device).fits, without formatting the verdict's text (a layout search screens many
/// settings and reads only the verdict's bool). Throws as estimate_memory.
bool memory_fits(const StepSetup& setup, const DeviceSpec& device);

/// `value` as printf's "%.<decimals>f" writes it into a 32-byte buffer: at most 31 characters (a longer text is
/// cut there, as snprintf cuts it); the numbers of MemoryReport::verdict. Written with std::to_chars in fixed
/// format with that precision, which the standard defines as printf's conversion in the "C" locale
/// ([charconv.to.chars]): the same characters, exactly rounded as glibc's printf rounds (ties of the exact
/// binary value to even), without stdio's set-up per call (a layout search formats about ten per point).
/// `decimals` in [0, 17].
std::string fixed_text(double value, int decimals);

/// Empties estimate_memory's cache of the stages' activation peaks (tests: a cold computation to compare with).
void clear_memory_walk_cache();

}  // namespace clustersim::models
