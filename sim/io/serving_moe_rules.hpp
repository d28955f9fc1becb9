// A serving scenario's expert-parallel keys (issue 30): serving.expert_parallel, serving.data_parallel_attention
// and serving.redundant_experts against the model and the VM size. Private to sim/io.
#pragma once

#include "models/hardware/catalog.hpp"
#include "models/serving/expert_parallel_serving.hpp"

namespace clustersim::sim::detail {

class Loader;

/// The rules, each a located ScenarioError: expert_parallel > 1 needs an MoE model, divides num_experts +
/// redundant_experts, has pipeline 1, fills whole VMs when it spans several (a multiple of the GPUs per VM, or
/// a divisor inside one), reaches over InfiniBand beyond one NVLink domain, and equals serving.tensor unless
/// data_parallel_attention; data_parallel_attention needs expert_parallel > 1 and tensor 1; redundant_experts
/// needs expert_parallel > 1.
void check_expert_parallel(Loader& l, const models::VmSize& vm);

/// The layout the keys give (no links: InferenceModel's memory check needs none).
models::ExpertParallelServing expert_parallel_keys(const Loader& l);

}  // namespace clustersim::sim::detail
