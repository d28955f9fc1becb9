// shared_transformer_layer keeps the last 64 layers of its thread: runs of calls over more distinct
// inputs than it keeps (models, training, every layer option; dense and MoE; forwards, backwards, repeated)
// must give, field by field and bit for bit, what transformer_layer computes, and throw where it throws.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "models/workload/transformer.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "tests/step/step_support.hpp"

namespace clustersim::models {
namespace {

uint64_t bits(double x) { return std::bit_cast<uint64_t>(x); }

/// Every field of `ops`, the doubles as their bits.
void describe(std::ostringstream& s, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    s << op.name << ' ' << static_cast<int>(op.op_class) << ' ' << op.gemm.m << ' ' << op.gemm.n << ' ' << op.gemm.k
      << ' ' << op.gemm.batch << ' ' << bits(op.bytes.value()) << ' ' << bits(op.flops.value()) << ' '
      << bits(op.executed_fraction) << ' ' << op.kernels << ' ' << static_cast<int>(op.role) << ' ' << op.fp8 << ' '
      << op.accumulates_fp32 << ' ' << static_cast<int>(op.attention_kernel) << ' ' << op.attention_head_dim << ' '
      << op.attention_key_length << ' ' << op.attention_causal << ' ' << op.attention_backward << '\n';
  }
  s << "|\n";
}
void describe(std::ostringstream& s, const TensorParallelTraffic& t) {
  s << t.count << ' ' << bits(t.bytes_each.value()) << ' ' << static_cast<int>(t.with_sequence_parallel) << '\n';
}
void describe(std::ostringstream& s, const ExpertTraffic& e) {
  s << static_cast<int>(e.dispatcher) << ' ' << bits(e.all_to_all_bytes.value()) << ' '
    << bits(e.all_gather_bytes.value()) << ' ' << bits(e.expert_tensor_bytes.value()) << ' '
    << bits(e.token_bytes.value()) << ' ' << e.experts << ' ' << e.topk << ' ' << bits(e.imbalance) << ':';
  for (const size_t i : e.shared_expert_ops) s << ' ' << i;
  s << '\n';
}
std::string describe(const LayerWork& w) {
  std::ostringstream s;
  describe(s, w.forward);
  describe(s, w.backward);
  describe(s, w.recompute);
  describe(s, w.tp_forward);
  describe(s, w.tp_backward);
  describe(s, w.tp_recompute);
  for (const auto& hidden : w.tp_backward_hidden_by) {
    for (const size_t i : hidden) s << i << ' ';
    s << ";";
  }
  s << '\n' << bits(w.context_kv_block.value()) << '\n';
  describe(s, w.expert_forward);
  describe(s, w.expert_backward);
  s << w.mlp_forward_begin << ' ' << w.mlp_backward_end << ' ' << w.moe_issue.moe << ' ' << w.moe_issue.dispatch << ' '
    << w.moe_issue.combine << ' ' << w.moe_issue.backward_combine << ' ' << w.moe_issue.backward_dispatch << ' '
    << w.moe_issue.host_waits << ' ' << w.moe_issue.host_wait << '\n';
  return s.str();
}

struct Case {
  ModelConfig model;
  TrainingConfig training;
  LayerOptions options;
};

/// transformer_layer's description, or "throws" (the reference).
std::string reference(const Case& c) {
  try {
    return describe(transformer_layer(c.model, c.training, c.options));
  } catch (const std::invalid_argument&) {
    return "throws";
  }
}
std::string shared(const Case& c) {
  try {
    return describe(*shared_transformer_layer(c.model, c.training, c.options));
  } catch (const std::invalid_argument&) {
    return "throws";
  }
}

TEST(SharedLayer, RunsOfCallsEqualTransformerLayer) {
  const Catalog& catalog = test::catalog();
  std::vector<Case> cases;
  for (const std::string scenario : {"scenarios/sweeps/gpt3-175b-1024-a100-layouts.toml",
                                     "scenarios/sweeps/deepseek-v3-like-2048-h100-32k-layouts.toml"}) {
    const sim::Scenario sc = sim::load_scenario(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / scenario, {}, catalog);
    const StepSetup base = sim::step_setup_of(sc, catalog);
    for (const ModelConfig& model : {base.model, test::llama3_8b()}) {
      for (const int64_t tensor : {1, 2, 8}) {
        for (const int64_t context : {1, 2}) {
          for (const bool moe : {false, true}) {
            for (const int64_t expert : {1, 8}) {
              for (const int64_t micro_batch : {1, 2}) {
                Case c{model, base.training, LayerOptions{}};
                c.options.tensor = tensor;
                c.options.sequence_parallel = tensor > 1;
                c.options.context = context;
                c.options.moe = moe;
                c.options.expert = expert;
                c.training.micro_batch_size = micro_batch;
                cases.push_back(c);
                c.options.expert_tensor = 2;  // another option, same model and training
                cases.push_back(c);
                c.training.activation_recompute = Recompute::selective;  // another training
                cases.push_back(c);
                c.model.dropout = 0.1;  // another model
                cases.push_back(c);
              }
            }
          }
        }
      }
    }
  }
  ASSERT_EQ(cases.size(), 2u * 2 * 3 * 2 * 2 * 2 * 2 * 4);
  std::vector<std::string> first(cases.size());
  size_t layers = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    first[i] = reference(cases[i]);
    layers += first[i] != "throws" ? 1 : 0;
  }
  EXPECT_GT(layers, cases.size() / 2);
  // Forwards, backwards, each case twice in a row, and short cycles that stay within the kept layers.
  for (int round = 0; round < 4; ++round) {
    for (size_t n = 0; n < cases.size(); ++n) {
      const size_t i = round == 1 ? cases.size() - 1 - n : (round == 3 ? (n / 24) * 8 + n % 8 : n);
      if (i >= cases.size()) continue;
      for (int again = 0; again < (round == 2 ? 2 : 1); ++again) {
        ASSERT_EQ(shared(cases[i]), first[i]) << "case " << i << " round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace clustersim::models
