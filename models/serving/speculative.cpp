#include "models/serving/speculative.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace clustersim::models {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("speculative decoding: " + what);
}

void require_rates(std::span<const double> acceptance) {
  require(!acceptance.empty(), "at least one speculative token is needed");
  for (const double a : acceptance) {
    require(a >= 0.0 && a <= 1.0, "acceptance rates must be in [0, 1], got " + std::to_string(a));
  }
}

}  // namespace

SpeculativeMethod speculative_method(std::string_view name) {
  for (size_t i = 0; i < std::size(kSpeculativeMethodNames); ++i) {
    if (kSpeculativeMethodNames[i] == name) return static_cast<SpeculativeMethod>(i);
  }
  throw std::invalid_argument("unknown speculative decoding method '" + std::string(name) + "'");
}

double expected_tokens_per_step(std::span<const double> acceptance) {
  require_rates(acceptance);
  double tokens = 1.0, reach = 1.0;  // reach: the probability that position i is accepted, prod_{j<=i} a_j
  for (const double a : acceptance) {
    reach *= a;
    tokens += reach;
  }
  return tokens;
}

units::Seconds draft_pass_time(units::Seconds pass_gpu, const SpeculativeHost& host) {
  return pass_gpu.value() < host.eager_draft_pass.value() ? host.eager_draft_pass : pass_gpu;
}

SpeculativeDecoding::SpeculativeDecoding(SpeculativeMethod method, std::shared_ptr<const InferenceModel> proposer,
                                         std::vector<double> acceptance, bool shares_embeddings)
    : method_(method),
      proposer_(std::move(proposer)),
      acceptance_(std::move(acceptance)),
      shares_embeddings_(shares_embeddings) {
  require(proposer_ != nullptr, "a proposer model is needed");
  require(static_cast<int64_t>(acceptance_.size()) <= kMaxSpeculativeTokens,
          "at most " + std::to_string(kMaxSpeculativeTokens) + " speculative tokens");
  require_rates(acceptance_);
}

double SpeculativeDecoding::expected_tokens_per_step() const {
  return models::expected_tokens_per_step(acceptance_);
}

IterationBatch SpeculativeDecoding::verify_batch(const IterationBatch& b) const {
  IterationBatch v = b;
  if (b.decode_sequences == 0) return v;
  v.decode_queries = tokens() + 1;
  v.sampled_sequences += tokens() * b.decode_sequences;
  return v;
}

IterationBatch SpeculativeDecoding::draft_batch(const IterationBatch& b, int64_t pass) const {
  IterationBatch d;
  d.scheduled = false;  // the main iteration pays the engine's host work
  if (pass == 0) {
    d.prefill_tokens = b.prefill_tokens;
    d.prefill_attention_pairs = b.prefill_attention_pairs;
    d.sampled_sequences = b.sampled_sequences - b.decode_sequences;  // the prompts completed this iteration
  }
  d.decode_sequences = b.decode_sequences;
  d.decode_kv_tokens = b.decode_sequences > 0 ? b.decode_kv_tokens + pass * b.decode_sequences : 0;
  d.sampled_sequences += b.decode_sequences;
  return d;
}

units::Bytes SpeculativeDecoding::proposer_weight_bytes_per_gpu() const {
  const ModelConfig& m = proposer_->model();
  units::Bytes w = proposer_->weight_bytes_per_gpu();
  if (shares_embeddings_) {
    const double tables = m.tie_embeddings ? 1.0 : 2.0;
    w = w - units::Bytes(static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size) * tables /
                         static_cast<double>(proposer_->tensor()) * InferenceModel::kEmbeddingBytes);
  }
  return w;
}

int64_t SpeculativeDecoding::kv_cache_tokens(const InferenceModel& main, int64_t main_tokens,
                                             int64_t block_size) const {
  const double main_per_token = main.kv_bytes_per_token_per_gpu().value();
  const double free = static_cast<double>(main_tokens) * main_per_token - proposer_weight_bytes_per_gpu().value();
  if (!(free > 0)) return 0;
  const auto tokens =
      static_cast<int64_t>(std::floor(free / (main_per_token + proposer_->kv_bytes_per_token_per_gpu().value())));
  return tokens / block_size * block_size;
}

ModelConfig head_proposer_config(SpeculativeMethod method, const ModelConfig& main, int64_t layers) {
  require(method != SpeculativeMethod::draft, "a draft model's shape is its own");
  require(layers >= 1, "the proposer needs at least one layer, got " + std::to_string(layers));
  ModelConfig m = main;
  const bool moe = method == SpeculativeMethod::mtp && main.is_moe_layer(main.num_layers - 1);
  m.num_layers = layers;
  m.mtp_num_layers = 0;
  if (moe) {
    m.num_dense_layers_first = 0;
    m.moe_layer_freq = 1;
  } else {
    m.num_experts = 0;
  }
  return m;
}

}  // namespace clustersim::models
