// [training] and [parallelism]'s rules (docs/scenario-format.md), on a Loader. The layout rules themselves
// (what divides what) live in models/parallelism/layout and are called here. Private to sim/io.
#pragma once

#include <cstdint>

#include "models/parallelism/plan.hpp"

namespace clustersim::models {
class Catalog;
struct VmSize;
}  // namespace clustersim::models

namespace clustersim::sim::detail {

class Loader;
struct ClusterShape;

/// The most passes one pipeline's step may hold (microbatches x pipeline x virtual_stages; check_step_size):
/// 2^20, about 0.6 GB and seconds of simulation. derive_layout (layout_rules.cpp) checks the same bound.
inline constexpr double kMaxPipelinePasses = 1048576.0;

/// [parallelism] as its keys give it so far (data 1 until check_training_on_cluster derives it): the layout
/// rules' input and, complete, the scenario's.
models::ParallelismConfig layout_keys(const Loader& l);

/// training.grad_reduce_dtype when omitted: fp16 with fp16 (Megatron's fp16 main gradients), bf16 with DeepSpeed
/// and bf16 or fp8 (engine.communication_data_type), else fp32 (Megatron
/// --accumulate-allreduce-grads-in-fp32, torchtitan mixed_precision_reduce = float32).
void set_grad_reduce_default(Loader& l);

/// parallelism.tp_comm_overlap given explicitly with tensor > 1 needs sequence parallelism (one from a
/// framework profile applies only where it is on). Throws ScenarioError at the key.
void check_tp_comm_overlap(Loader& l);

/// Parallelism checks that need no catalog: gpipe has no interleaved form, then the layout's
/// (models::layout_problem). Throws ScenarioError at the key.
void check_parallelism_shape(Loader& l);

/// The layout fills the cluster: tensor x context x pipeline x data = the cluster's GPUs, data derived (set) when
/// omitted. Throws ScenarioError: at parallelism.data when the product differs, naming what to change (the data
/// size that fits, with its --set form, or the other dimensions, or cluster.nodes, with its --set form when whole
/// VMs hold the layout) and the --set options among the keys involved; at the first of tensor, tensor x context,
/// tensor x context x pipeline that does not divide the GPUs when data is omitted.
void check_gpu_count(Loader& l, const ClusterShape& cluster);

/// The training run on its cluster: check_gpu_count, the experts' folded layout (models::expert_layout_problem), recompute_modules only with selective
/// recompute, Megatron-Core's rules of moe_a2a_overlap, the flex dispatcher and capacity padding, the batch
/// split (models::batch_split_error) and the interleaved schedule's microbatches, the device's precision, then
/// check_step_size. Throws ScenarioError at the key.
void check_training_on_cluster(Loader& l, const ClusterShape& cluster, const models::Catalog& catalog);

/// The simulation's own limits on one step (docs/scenario-format.md, "Limits"), located at
/// training.global_batch_size: (1) the step simulation keeps every pass of one pipeline, microbatches x
/// pipeline x virtual_stages of them, each a few hundred bytes: at most 2^20; (2) the engine's clock holds 2^63 ns
/// (292 years): the step's model FLOPs (model_flops_per_iteration, a lower bound of the work) at the `gpus` GPUs'
/// dense peak must take at most one year, which leaves a factor of 292 for efficiencies below peak.
void check_step_size(Loader& l, const models::VmSize& vm, const models::Catalog& catalog, int64_t gpus);

}  // namespace clustersim::sim::detail
