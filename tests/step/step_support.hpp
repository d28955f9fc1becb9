// Helpers shared by the tests of tests/step: the shipped catalog and a network whose every collective takes a
// fixed time per byte, so that a step program's arithmetic can be checked by hand.
#pragma once

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/network/communication_model.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models::test {

/// The catalog under models/hardware/catalog, loaded once.
inline const Catalog& catalog() {
  static const Catalog c = Catalog::load(Catalog::default_directory());
  return c;
}

/// Llama 3 8B (Dubey et al. 2024, Table 3; torchtitan's llama3 "8B" args): 32 layers, h 4096, 32 heads, 8
/// key/value groups, SwiGLU 14336, vocabulary 128256, RoPE, no dropout, untied output layer; 8K tokens.
inline ModelConfig llama3_8b() {
  ModelConfig m;
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_query_groups = 8;
  m.ffn_hidden_size = 14336;
  m.vocab_size = 128256;
  m.seq_length = 8192;
  m.gated_mlp = true;
  m.rope = true;
  m.dropout = 0.0;
  m.tie_embeddings = false;
  return m;
}

/// Every collective takes `seconds_per_byte` x bytes, whatever its pattern and algorithm.
class LinearNetwork final : public CommunicationModel {
 public:
  explicit LinearNetwork(double seconds_per_byte) : k_(seconds_per_byte) {}
  CollectiveTiming collective_time(CollectiveOp, const CommPattern&, units::Bytes bytes) const override {
    CollectiveTiming t;
    t.time = units::Seconds(k_ * bytes.value());
    t.bandwidth_time = t.time;
    return t;
  }

 private:
  double k_;
};

}  // namespace clustersim::models::test
