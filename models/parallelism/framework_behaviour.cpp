#include "models/parallelism/framework_behaviour.hpp"

namespace clustersim::models {

FrameworkBehaviour behaviour_of(Framework framework) {
  FrameworkBehaviour b;
  switch (framework) {
    case Framework::megatron_lm_2021:
    case Framework::megatron_lm_2022:
    case Framework::megatron_core:
    case Framework::nemo:
      // Megatron-LM schedules.py: "Non-interleaved pipeline parallelism does not support overlapping p2p
      // communication"; 1F1B uses batched isend/irecv (batch_p2p_comm = not overlap_p2p_comm). The distributed
      // optimizer reduce-scatters per bucket (megatron/core/distributed/param_and_grad_buffer.py
      // start_grad_sync) and, with --overlap-param-gather, all-gathers bucket by bucket from forward pre-hooks.
      b.p2p_overlap_needs_interleaving = true;
      b.grad_buffer_in_reduce_dtype = true;
      break;
    case Framework::fsdp:
      // PyTorch FSDP1 (torch/distributed/fsdp/_runtime_utils.py): _post_forward_reshard frees every unit but the
      // root (`free = not state._is_root ...`); limit_all_gathers (default True since PyTorch 2.1, #104900) keeps
      // at most 2 all-gathers in flight (_limiter_utils.py, "empirically chosen"); _reduce_grad divides the
      // padded unsharded gradient by the predivide factor before the reduce-scatter (_div_if_needed), after
      // casting it to reduce_dtype. FULL_SHARD / SHARD_GRAD_OP / HYBRID_SHARD: api.py ShardingStrategy.
      b.per_unit_stage2 = true;
      b.divides_unsharded_gradient = true;
      b.tp_comm_overlap_backward = false;  // PyTorch async TP: forward passes only (framework_behaviour.hpp)
      break;
    case Framework::fsdp2:
      // PyTorch FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, _fsdp_collectives.py):
      // foreach_all_gather_copy_out splits the gathered buffer into the parameters on the compute stream;
      // post_backward makes the compute stream wait for the previous reduce-scatter before issuing the next;
      // reductions average in NCCL (ReduceOp.AVG, no divide kernels, PR #120919). torchtitan apply_fsdp: every
      // block but the last reshards after forward, the root reshards when there is no pipelining.
      b.per_unit_stage2 = true;
      b.root_reshards = true;
      b.last_block_reshards = false;
      b.copies_out_gathered_parameters = true;
      b.one_reduce_scatter_in_flight = true;
      b.tp_comm_overlap_backward = false;  // PyTorch async TP: forward passes only (framework_behaviour.hpp)
      b.unsharded_under_pipelining = true;  // torchtitan + torch.distributed.pipelining (framework_behaviour.hpp)
      break;
    case Framework::deepspeed:
      // DeepSpeed (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py, engine.py; config.py defaults):
      // ZeRO-1/2 reduce each bucket with an all-reduce (allreduce_bucket; reduce_scatter=True means "reduce or
      // reduce scatter instead of allreduce" of the whole gradient, still an NCCL all-reduce per bucket) on the
      // compute stream (overlap_comm defaults to stage == 3); ZeRO-2 reduces on every micro-step
      // (engine.allreduce_gradients: "ZeRO stage >= 2 communicates during non gradient accumulation
      // boundaries as well"); the updated partitions are all-gathered synchronously after step(). ZeRO-3
      // releases every parameter above stage3_param_persistence_threshold (1e5) after use.
      b.root_reshards = true;
      b.zero12_all_reduce = true;
      b.zero2_reduces_every_microbatch = true;
      b.param_gather_can_overlap = false;
      break;
  }
  return b;
}

const char* framework_family(Framework framework) {
  switch (framework) {
    case Framework::megatron_lm_2021:
    case Framework::megatron_lm_2022:
    case Framework::megatron_core:
    case Framework::nemo: return "megatron";
    case Framework::fsdp:
    case Framework::fsdp2: return "fsdp";
    case Framework::deepspeed: return "deepspeed";
  }
  return "megatron";
}

const char* validation_workload(const ModelConfig& model, const ParallelismConfig& parallelism) {
  if (model.moe()) return "moe";
  if (parallelism.context > 1) return "context-parallel";
  return "dense";
}

}  // namespace clustersim::models
