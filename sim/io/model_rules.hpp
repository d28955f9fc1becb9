// [model]'s rules, for every kind of scenario (docs/scenario-format.md, "[model]"), on a Loader: the shape's
// defaults and consistency, the features a framework or the serving model does not take. Private to sim/io.
#pragma once

#include "models/workload/model_config.hpp"

namespace clustersim::sim::detail {

class Loader;

/// [model] as its keys give it (the derived widths once check_model_shape has set them): the layout rules'
/// input and, complete, the scenario's.
models::ModelConfig model_keys(const Loader& l);

/// [model]'s own defaults and consistency, for every kind of scenario: key/value heads (= the heads), the MLP
/// widths (ffn = 4 x hidden; the experts' = ffn) and the head width (hidden / heads) when omitted; the width
/// divisible by the heads (unless kv_channels is given), the heads by the key/value heads, moe_router_topk at
/// most num_experts. Throws ScenarioError at the key.
void check_model_shape(Loader& l);

/// A training run's model features that need Megatron-Core's implementation (training.framework megatron-core
/// or nemo): MoE (num_experts > 0, with at least one MoE layer after num_dense_layers_first) and multi-token
/// prediction. Throws ScenarioError at the model key.
void check_model_framework(Loader& l);

/// The model features serving does not model yet: multi-token prediction. Throws
/// ScenarioError at the model key.
void check_model_for_serving(Loader& l);

}  // namespace clustersim::sim::detail
