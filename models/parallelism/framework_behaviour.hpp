// How each training framework runs the parts of a step that are not scenario keys of their own: how a sharded
// model gathers and frees its parameters, which collective a ZeRO stage uses and when, whether pipeline sends
// overlap compute. One function, behaviour_of, holds these facts with their sources; the step program asks it.
// (The settings a framework's recipes choose, such as the overlaps or the kernel fusion, are scenario defaults:
// sim/io/framework_profiles.cpp.)
#pragma once

#include "models/parallelism/plan.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// The behaviours of one framework (see behaviour_of for the sources of each).
struct FrameworkBehaviour {
  // --- fully sharded passes (sharded_pass.hpp) ---
  bool root_reshards = false;       ///< the root unit frees its parameters after forward (gathered again)
  bool last_block_reshards = true;  ///< the last transformer block frees its parameters after forward
  int gathers_in_flight = 2;        ///< units gathered at once
  bool per_unit_stage2 = false;     ///< zero_stage 2 is FSDP's SHARD_GRAD_OP (per-unit gathers and scatters)
  /// FSDP1: the unsharded gradient is divided before the reduce-scatter (and cast to the reduce dtype): memory
  /// passes over every unit's unsharded gradient per backward.
  bool divides_unsharded_gradient = false;
  /// FSDP2: the all-gather output is copied out into the parameters on the compute stream (read + write of
  /// the unit's 16-bit weights per gather).
  bool copies_out_gathered_parameters = false;
  /// FSDP2: before issuing a unit's reduce-scatter the compute stream waits for the previous one.
  bool one_reduce_scatter_in_flight = false;
  /// Fully sharded with pipelining (zero_stage >= 2, pipeline > 1): the parameters stay gathered over the step's
  /// microbatches and the gradients accumulate unsharded, in the reduce dtype, until the last microbatch's
  /// backward reduce-scatters them. torchtitan apply_fsdp sets reshard_after_forward = False under pipelining
  /// ("to avoid per-microbatch all-gathers"); torch.distributed.pipelining's stage backward turns FSDP's
  /// gradient sync off (set_requires_gradient_sync(False)) for every microbatch but the last, and FSDP2 then
  /// accumulates the unsharded gradient in reduce_dtype (_fsdp_param.py, unsharded_accumulated_grad).
  bool unsharded_under_pipelining = false;
  // --- ZeRO 1-2 (and data parallelism without sharding) ---
  /// The gradient reduction of ZeRO 1-2 is an all-reduce per bucket (each rank keeps its partition), not a
  /// reduce-scatter.
  bool zero12_all_reduce = false;
  /// ZeRO-2 reduces on every microbatch's backward, on the compute stream, not only after the last.
  bool zero2_reduces_every_microbatch = false;
  /// The updated parameters' all-gather after the optimizer can overlap the next forward
  /// (Megatron --overlap-param-gather); false: always after the optimizer, exposed.
  bool param_gather_can_overlap = true;
  /// The main-gradient buffer of an unsharded (ZeRO 0-2) model is held in the reduce dtype
  /// (TrainingConfig::grad_reduce): Megatron's param_and_grad_buffer allocates it in fp32 only with
  /// --accumulate-allreduce-grads-in-fp32 (grad_reduce_in_fp32), else in the parameter dtype; NeMo's
  /// distributed_fused_adam keeps its gradient buckets in grad_sync_dtype. false: fp32 gradients for the
  /// fp32 master parameters (FSDP's sharded gradients take the sharded parameter's dtype; DeepSpeed's bf16
  /// optimizer accumulates fp32 gradient partitions).
  bool grad_buffer_in_reduce_dtype = false;
  // --- tensor parallelism ---
  /// With tp_comm_overlap, the backward pass's tensor-parallel collectives are overlapped with its GEMMs too
  /// (Transformer Engine userbuffers: ub_ag/ub_rs for dgrad, bulk dgrad/wgrad overlaps). false: only forward
  /// passes (and the recomputed forward) are micro-pipelined, as PyTorch's async TP (torchtitan, Inductor's
  /// micro_pipeline_tp pass) did in 2024: up to 20-29 % forward-pass speed-up but about 8 % end to end on
  /// Llama 3 7B/70B, which is the forward passes' share (PyTorch dev-discuss, "Introducing Async Tensor
  /// Parallelism in PyTorch", Aug 2024).
  bool tp_comm_overlap_backward = true;
  // --- pipelining ---
  /// Pipeline sends overlap compute only with the interleaved schedule; 1F1B's batched send/recv blocks.
  bool p2p_overlap_needs_interleaving = false;
};

/// The behaviours of `framework`.
FrameworkBehaviour behaviour_of(Framework framework);

/// The family `framework` belongs to for prediction bands (catalog prediction_uncertainty.toml): "megatron"
/// (Megatron-LM, Megatron-Core, NeMo), "fsdp" (FSDP1, FSDP2) or "deepspeed".
const char* framework_family(Framework framework);

/// The workload a run belongs to for prediction bands and the validation suite's groups: "moe" (model.num_experts
/// > 0, with or without context parallelism), "context-parallel" (parallelism.context > 1) or "dense". Each has
/// its own held-out errors (catalog prediction_uncertainty.toml): the model is weakest on MoE.
const char* validation_workload(const ModelConfig& model, const ParallelismConfig& parallelism);

}  // namespace clustersim::models
