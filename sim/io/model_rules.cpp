// [model]'s rules (model_rules.hpp).
#include "sim/io/model_rules.hpp"

#include <cstdint>
#include <string>

#include "sim/io/loader.hpp"

namespace clustersim::sim::detail {

models::ModelConfig model_keys(const Loader& l) {
  models::ModelConfig m;
  m.num_layers = l.get_int("model.num_layers");
  m.hidden_size = l.get_int("model.hidden_size");
  m.num_attention_heads = l.get_int("model.num_attention_heads");
  if (l.has("model.num_query_groups")) m.num_query_groups = l.get_int("model.num_query_groups");
  if (l.has("model.ffn_hidden_size")) m.ffn_hidden_size = l.get_int("model.ffn_hidden_size");
  m.vocab_size = l.get_int("model.vocab_size");
  m.seq_length = l.get_int("model.seq_length");
  m.gated_mlp = l.get_string("model.mlp") == "swiglu";
  m.rope = l.get_string("model.position_embedding") == "rope";
  m.dropout = l.get_double("model.dropout");
  m.tie_embeddings = l.get_bool("model.tie_embeddings");
  if (l.has("model.kv_channels")) m.kv_channels = l.get_int("model.kv_channels");
  m.multi_latent_attention = l.get_bool("model.multi_latent_attention");
  m.q_lora_rank = l.get_int("model.q_lora_rank");
  m.kv_lora_rank = l.get_int("model.kv_lora_rank");
  m.qk_head_dim = l.get_int("model.qk_head_dim");
  m.qk_pos_emb_head_dim = l.get_int("model.qk_pos_emb_head_dim");
  m.v_head_dim = l.get_int("model.v_head_dim");
  m.num_experts = l.get_int("model.num_experts");
  m.moe_router_topk = l.get_int("model.moe_router_topk");
  if (l.has("model.moe_ffn_hidden_size")) m.moe_ffn_hidden_size = l.get_int("model.moe_ffn_hidden_size");
  m.moe_shared_expert_intermediate_size = l.get_int("model.moe_shared_expert_intermediate_size");
  m.moe_layer_freq = l.get_int("model.moe_layer_freq");
  m.num_dense_layers_first = l.get_int("model.num_dense_layers_first");
  m.mtp_num_layers = l.get_int("model.mtp_num_layers");
  return m;
}

void check_model_shape(Loader& l) {
  const int64_t heads = l.get_int("model.num_attention_heads");
  const int64_t hidden = l.get_int("model.hidden_size");
  if (!l.has("model.num_query_groups")) l.set("model.num_query_groups", heads);
  if (!l.has("model.ffn_hidden_size")) {
    l.set("model.ffn_hidden_size", l.checked_mul(4, hidden, "model.hidden_size"));
  }
  if (!l.has("model.moe_ffn_hidden_size")) l.set("model.moe_ffn_hidden_size", l.get_int("model.ffn_hidden_size"));
  const bool head_width_given = l.has("model.kv_channels");
  if (!head_width_given && hidden % heads == 0) l.set("model.kv_channels", hidden / heads);
  if (!head_width_given && hidden % heads != 0) {
    l.fail_at("model.hidden_size", "must be divisible by model.num_attention_heads (" + std::to_string(heads) +
                                       "), got " + std::to_string(hidden));
  }
  const int64_t groups = l.get_int("model.num_query_groups");
  if (heads % groups != 0) {
    l.fail_at("model.num_query_groups",
              "must divide model.num_attention_heads (" + std::to_string(heads) + "), got " + std::to_string(groups));
  }
  const int64_t experts = l.get_int("model.num_experts");
  if (experts > 0 && l.get_int("model.moe_router_topk") > experts) {
    l.fail_at("model.moe_router_topk", "must not exceed model.num_experts (" + std::to_string(experts) + "), got " +
                                           std::to_string(l.get_int("model.moe_router_topk")));
  }
}

void check_model_framework(Loader& l) {
  const int64_t experts = l.get_int("model.num_experts");
  if (experts > 0) {
    const std::string framework = l.get_string("training.framework");
    if (framework != "megatron-core" && framework != "nemo") {
      l.fail_at("model.num_experts",
                "MoE is modelled as Megatron-Core runs it: needs training.framework "
                "megatron-core or nemo, got " +
                    framework);
    }
    if (l.get_int("model.num_dense_layers_first") >= l.get_int("model.num_layers")) {
      l.fail_at("model.num_dense_layers_first", "must leave an MoE layer: fewer than model.num_layers (" +
                                                    std::to_string(l.get_int("model.num_layers")) + ")");
    }
  }
  if (l.get_int("model.mtp_num_layers") > 0) {
    const std::string framework = l.get_string("training.framework");
    if (framework != "megatron-core" && framework != "nemo") {
      l.fail_at("model.mtp_num_layers",
                "multi-token prediction is modelled as Megatron-Core runs it: needs "
                "training.framework megatron-core or nemo, got " +
                    framework);
    }
  }
}

void check_model_for_serving(Loader& l) {
  if (l.get_int("model.mtp_num_layers") > 0) {
    l.fail_at("model.mtp_num_layers", "multi-token prediction is not modelled for serving");
  }
}

}  // namespace clustersim::sim::detail
