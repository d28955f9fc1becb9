// Speculative decoding (issue 30): a cheap proposer drafts k tokens for every decoding sequence, one decode-shaped
// forward pass each, and the main model verifies them in one pass over k + 1 tokens per sequence; the sequence
// keeps the drafted tokens up to the first rejected one, plus one token of the main model's own (the correction
// or, with all k accepted, the bonus token). Leviathan, Kalman, Matias, "Fast Inference from Transformers via
// Speculative Decoding", ICML 2023; Chen et al., "Accelerating Large Language Model Decoding with Speculative
// Sampling", arXiv 2302.01318 (2023).
//
// Proposers (SpeculativeMethod):
//   draft  a small model of its own shape (its own layers, width, heads, MLP; the main model's vocabulary), with
//          its own KV cache (vLLM --speculative-model; Llama 3.2 1B for Llama 3 70B);
//   eagle  EAGLE heads: N decoder layers of the main model's width on its features, using the main model's
//          embedding and LM head (Li et al., EAGLE, ICML 2024; EAGLE-2, EMNLP 2024; EAGLE-3, 2025);
//   mtp    DeepSeek-V3's multi-token-prediction modules: N layers of the main model's width, sharing its embedding
//          and output head (DeepSeek-V3 technical report, arXiv 2412.19437, Sec. 2.2 and 5.4.3).
// Each proposer's forward passes are InferenceModel iterations of its own shape on the same device (the same
// roofline, GEMM tables and tensor parallelism as the main model); the verify pass is the main model's iteration
// with k + 1 queries per decoding sequence (IterationBatch::decode_queries).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "models/serving/inference_model.hpp"

namespace clustersim::models {

enum class SpeculativeMethod { draft, eagle, mtp };

/// serving.speculative_method's names, in SpeculativeMethod's order.
inline constexpr std::string_view kSpeculativeMethodNames[] = {"draft", "eagle", "mtp"};

/// The method named `name`. Throws std::invalid_argument for another name.
SpeculativeMethod speculative_method(std::string_view name);

/// Expected tokens one decoding sequence produces per verify step, given the conditional acceptance of each
/// drafted position (a_i: the probability that draft token i is accepted given that tokens 1..i-1 were):
/// 1 + sum_{i=1..k} prod_{j<=i} a_j (Leviathan et al. 2023, Sec. 3.1 with a constant a: (1 - a^(k+1)) / (1 - a)).
/// Throws std::invalid_argument for an empty vector or a rate outside [0, 1].
double expected_tokens_per_step(std::span<const double> acceptance);

/// Tokens produced in one step from uniform draws in [0, 1) taken one position at a time by `uniform`: draft
/// position i is accepted when its draw is below a_i, and the step stops at the first rejection; the result is
/// 1 + the accepted positions (1 to k + 1). Draws at most k uniforms, one per position examined.
template <class Uniform>
int64_t draw_tokens_per_step(std::span<const double> acceptance, Uniform&& uniform) {
  int64_t n = 1;
  for (const double a : acceptance) {
    if (!(uniform() < a)) break;
    ++n;
  }
  return n;
}

/// Host work that speculative decoding adds to an engine's iteration: a property of the engine release
/// (EngineProfile::speculative, models/serving/engine_profile.cpp, with each release's source), zero where none is
/// known.
struct SpeculativeHost {
  /// Host time to dispatch one proposer pass when the engine runs its proposer eagerly (PyTorch ops launched one at
  /// a time from Python, no CUDA graph): the GPU runs each kernel as it is launched, so a pass whose kernels take
  /// less than this waits for the launches. 0: the passes replay CUDA graphs and take their GPU time.
  units::Seconds eager_draft_pass{0.0};
  /// Serial host time of every iteration with decoding sequences: the rejection sampler's bookkeeping and the
  /// proposer's input preparation between the verify pass and the first draft pass (the accepted counts copied to
  /// the CPU, the proposer's token indices computed there and uploaded), the GPU idle meanwhile.
  units::Seconds step{0.0};
};

/// The time of one proposer pass whose kernels, collectives and NCCL calls take `pass_gpu`: max(pass_gpu,
/// host.eager_draft_pass), a launch-bound pass lasting as long as its launches (the GPU waits between kernels).
units::Seconds draft_pass_time(units::Seconds pass_gpu, const SpeculativeHost& host);

/// A speculative decoder: the proposer's model and the acceptance of its k positions.
class SpeculativeDecoding {
 public:
  /// `proposer`: the draft model or heads as an InferenceModel on the replica's device and tensor parallelism
  /// (its host work zero: the main iteration pays the engine's; its collective launches the engine's);
  /// `acceptance`: k conditional acceptance rates in [0, 1]. `shares_embeddings`: the proposer uses the main
  /// model's embedding and LM head (eagle, mtp), so they are not counted twice in its weights. Throws
  /// std::invalid_argument for a null proposer, k outside [1, kMaxSpeculativeTokens] or a rate outside [0, 1].
  SpeculativeDecoding(SpeculativeMethod method, std::shared_ptr<const InferenceModel> proposer,
                      std::vector<double> acceptance, bool shares_embeddings);

  /// The most drafted tokens per step: 16 (EAGLE-2's draft trees use up to 60 nodes, chains at most ~8 deep;
  /// vLLM's num_speculative_tokens is typically 1-7).
  static constexpr int64_t kMaxSpeculativeTokens = 16;

  [[nodiscard]] SpeculativeMethod method() const { return method_; }
  [[nodiscard]] int64_t tokens() const { return static_cast<int64_t>(acceptance_.size()); }  ///< k
  [[nodiscard]] std::span<const double> acceptance() const { return acceptance_; }
  [[nodiscard]] const InferenceModel& proposer() const { return *proposer_; }
  /// expected_tokens_per_step(acceptance()).
  [[nodiscard]] double expected_tokens_per_step() const;

  /// The main model's verify pass of `b` (an engine iteration's batch, one query per decoding sequence): each
  /// decoding sequence runs k + 1 queries (the last accepted token and the k drafts) over its cached keys, and
  /// every one of them is scored by the LM head (the logits of all k + 1 positions are sampled): decode_queries =
  /// k + 1, sampled_sequences += k x decode_sequences. The prompt chunks are unchanged.
  [[nodiscard]] IterationBatch verify_batch(const IterationBatch& b) const;
  /// The proposer's pass `pass` (0 to k - 1) over `b`: pass 0 also runs the prompt chunks (the proposer's KV
  /// cache of the prompt, as vLLM's draft workers and EAGLE's heads build it), every pass one token per decoding
  /// sequence over its cached keys plus the drafts before it (decode_kv_tokens + pass x decode_sequences), each
  /// sampled. A batch without decodes runs pass 0 only (its prompts); pass > 0 of it is empty (no tokens).
  [[nodiscard]] IterationBatch draft_batch(const IterationBatch& b, int64_t pass) const;
  /// The proposer's passes of `b`: 1 when it has no decodes (prompts only), else k.
  [[nodiscard]] int64_t draft_passes(const IterationBatch& b) const { return b.decode_sequences > 0 ? tokens() : 1; }

  /// The proposer's weights on one GPU, B: its layers (and, for a draft model, its own embedding and LM head).
  [[nodiscard]] units::Bytes proposer_weight_bytes_per_gpu() const;
  /// KV-cache tokens a replica holds with the proposer beside the main model: the bytes `main_tokens` tokens
  /// of the main model would take, less the proposer's weights, over the main model's and the proposer's KV
  /// bytes per token together (each sequence is cached by both); rounded down to `block_size`, 0 when none.
  [[nodiscard]] int64_t kv_cache_tokens(const InferenceModel& main, int64_t main_tokens, int64_t block_size) const;

 private:
  SpeculativeMethod method_;
  std::shared_ptr<const InferenceModel> proposer_;
  std::vector<double> acceptance_;
  bool shares_embeddings_;
};

/// The proposer's shape for eagle and mtp: `layers` decoder layers of the main model's width, heads and MLP.
/// eagle: dense layers (EAGLE's head is one dense decoder layer; EAGLE-1's fc layer, 2h x h, is left out); mtp:
/// layers like the main model's last (DeepSeek-V3's MTP module is a full MoE decoder block; its projection,
/// 2h x h, is left out). Throws std::invalid_argument for the draft method (a draft model's shape is its own) or
/// layers < 1.
ModelConfig head_proposer_config(SpeculativeMethod method, const ModelConfig& main, int64_t layers);

}  // namespace clustersim::models
