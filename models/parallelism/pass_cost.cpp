#include "models/parallelism/pass_cost.hpp"

#include <algorithm>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/network/collective_model.hpp"
#include "models/parallelism/framework_behaviour.hpp"
#include "models/parallelism/host_queue.hpp"

namespace clustersim::models::detail {

namespace {

/// The 16-bit precision of a run's non-FP8 math: FP8 runs keep bf16 for everything but the linear layers.
Precision math_precision(Precision p) { return p == Precision::fp8 ? Precision::bf16 : p; }

}  // namespace

units::Seconds op_time(const Op& op, const ComputeModel& compute, Precision p) {
  switch (op.op_class) {
    case OpClass::gemm:
    {
      const double output = op.accumulates_fp32 ? 8.0 : -1.0;
      if (op.fp8) return compute.gemm_time(op.gemm, Precision::fp8, 1.0, output);
      return compute.gemm_time(op.gemm, math_precision(p), activation_bytes_per_element(p), output);
    }
    case OpClass::memory_bound: return compute.memory_time(op.bytes);
    case OpClass::fused_attention:
      return compute.attention_time(op.flops * op.executed_fraction, math_precision(p),
                                    AttentionCall{op.attention_kernel, op.attention_backward, op.attention_head_dim,
                                                  op.attention_causal, op.attention_key_length});
  }
  return units::Seconds(0.0);
}

LayerOpTimes layer_op_times(const LayerWork& work, const ComputeModel& compute, Precision p) {
  const auto times = [&](const std::vector<Op>& ops) {
    std::vector<units::Seconds> t;
    t.reserve(ops.size());
    for (const Op& op : ops) t.push_back(op_time(op, compute, p));
    return t;
  };
  return LayerOpTimes{times(work.forward), times(work.recompute), times(work.backward)};
}

namespace {

double d(int64_t v) { return static_cast<double>(v); }

/// The ops of one pass of a layer (its forward, recompute or backward) with their kernel times: `given`
/// (layer_op_times' entries for these ops), or without it each op's op_time computed at its use.
struct TimedOps {
  const std::vector<Op>& ops;
  const std::vector<units::Seconds>* given;
  const ComputeModel& compute;
  Precision p;
  units::Seconds at(size_t i) const { return given != nullptr ? (*given)[i] : op_time(ops[i], compute, p); }
};

/// A layer's three op lists with their times (TimedOps), from `times` when given.
struct TimedLayer {
  TimedOps forward, recompute, backward;
  TimedLayer(const LayerWork& work, const LayerOpTimes* times, const ComputeModel& compute, Precision p)
      : forward{work.forward, times != nullptr ? &times->forward : nullptr, compute, p},
        recompute{work.recompute, times != nullptr ? &times->recompute : nullptr, compute, p},
        backward{work.backward, times != nullptr ? &times->backward : nullptr, compute, p} {}
};

/// Kernel time and FLOPs of `ops`.
PassCost cost_of(const TimedOps& timed) {
  PassCost c;
  for (size_t i = 0; i < timed.ops.size(); ++i) {
    const Op& op = timed.ops[i];
    const units::Seconds t = timed.at(i);
    c.compute += t;
    if (op.op_class == OpClass::fused_attention) c.attention += t;
    if (op.op_class == OpClass::memory_bound) c.memory_bound += t;
    c.flops += op.flops;
  }
  return c;
}

units::Seconds tp_time(const TensorParallelTraffic& traffic, const CommPattern& tp, const StepSetup& setup,
                       const CommunicationModel& network) {
  if (traffic.count == 0) return units::Seconds(0.0);
  // With sequence parallelism each all-reduce becomes an all-gather before the column-parallel GEMM and a
  // reduce-scatter after the row-parallel one: the same volume (Korthikanti et al. 2022, Sec. 4.2.2). The
  // backward's extra all-gather of the input for the weight gradient overlaps the input-gradient GEMM in
  // Megatron-LM and is not charged.
  if (setup.parallelism.sequence_parallel) {
    const units::Seconds rs = network.collective_time(CollectiveOp::reduce_scatter, tp, traffic.bytes_each).time;
    const units::Seconds ag = network.collective_time(CollectiveOp::all_gather, tp, traffic.bytes_each).time;
    switch (traffic.with_sequence_parallel) {
      case TensorParallelTraffic::Sequence::pair: return (rs + ag) * (1.0 * traffic.count);
      case TensorParallelTraffic::Sequence::all_gather: return ag * (1.0 * traffic.count);
      case TensorParallelTraffic::Sequence::reduce_scatter: return rs * (1.0 * traffic.count);
    }
  }
  return network.collective_time(CollectiveOp::all_reduce, tp, traffic.bytes_each).time * (1.0 * traffic.count);
}

/// Tensor-parallel communication overlapped with the GEMMs it feeds or drains (Megatron --tp-comm-overlap,
/// Transformer Engine userbuffers; Wang et al., "Overlap Communication with Dependent Computation via
/// Decomposition in Large Deep Learning Models", ASPLOS'23). With sequence parallelism each layer pass has four
/// collective-GEMM pairs: forward (and recompute) all-gather -> QKV, output projection -> reduce-scatter,
/// all-gather -> fc1, fc2 -> reduce-scatter; backward all-gather of the output gradient -> output-projection
/// dgrad, QKV dgrad -> reduce-scatter, all-gather -> fc2 dgrad, fc1 dgrad -> reduce-scatter. Each pair is split
/// into t chunks that pipeline: chunk i's GEMM runs while chunk i+1 moves, so a pair of communication c and GEMM
/// g takes max(c, g) + min(c, g) / t (the first chunk's transfer, or the last chunk's, is not hidden), and each
/// GEMM runs as t GEMMs of M/t rows (its wave and tile quantisation at that size). `ops` are the pass's ops;
/// returns the exposed communication and adds the chunking's extra GEMM time to `extra_compute`.
units::Seconds overlapped_tp(const TimedOps& timed, bool backward, const StepSetup& setup,
                             units::Seconds all_gather, units::Seconds reduce_scatter, units::Seconds& extra_compute) {
  const Precision p = setup.training.precision;
  const ComputeModel& compute = timed.compute;
  const double t = static_cast<double>(setup.parallelism.tensor);
  // Forward: (AG, attention_in) (attention_out, RS) (AG, mlp_in) (mlp_out, RS). Backward dgrads: (AG,
  // attention_out) (attention_in, RS) (AG, mlp_out) (mlp_in, RS).
  const GemmRole gathered[2] = {backward ? GemmRole::attention_out : GemmRole::attention_in,
                                backward ? GemmRole::mlp_out : GemmRole::mlp_in};
  const GemmRole scattered[2] = {backward ? GemmRole::attention_in : GemmRole::attention_out,
                                 backward ? GemmRole::mlp_in : GemmRole::mlp_out};
  units::Seconds exposed(0.0);
  auto pair = [&](GemmRole role, units::Seconds comm) {
    units::Seconds gemm(0.0), chunked(0.0);
    for (size_t i = 0; i < timed.ops.size(); ++i) {
      const Op& op = timed.ops[i];
      if (op.op_class != OpClass::gemm || op.role != role) continue;
      if (backward && !op.name.ends_with("_dgrad")) continue;
      const units::Seconds whole = timed.at(i);
      Op piece = op;
      piece.gemm.m = std::max<int64_t>(1, op.gemm.m / setup.parallelism.tensor);
      const units::Seconds split = op_time(piece, compute, p) * t;
      gemm += whole;
      chunked += split;
    }
    if (chunked > gemm) extra_compute += chunked - gemm;
    const units::Seconds longer = std::max(comm, chunked), shorter = std::min(comm, chunked);
    exposed += longer - chunked + shorter / t;
  };
  for (GemmRole role : gathered) pair(role, all_gather);
  for (GemmRole role : scattered) pair(role, reduce_scatter);
  return exposed;
}

/// Kernel time of the attention core of `ops` (the fused attention kernel, or the unfused scores and context
/// GEMMs).
units::Seconds attention_core_time(const TimedOps& timed) {
  units::Seconds t(0.0);
  for (size_t i = 0; i < timed.ops.size(); ++i) {
    const Op& op = timed.ops[i];
    const bool core = op.op_class == OpClass::fused_attention ||
                      (op.op_class == OpClass::gemm && op.role == GemmRole::attention_core);
    if (core) t += timed.at(i);
  }
  return t;
}

/// The exposed context-parallel exchange of a pass of `work` (context_exchange_time), with the recomputed
/// forward's when the recompute reruns the attention.
units::Seconds context_comm(const LayerWork& work, const TimedLayer& timed, PassKind kind, bool recompute,
                            const StepSetup& setup, const CommunicationModel& network, const LazyPattern& pattern) {
  const ParallelismConfig& par = setup.parallelism;
  if (par.context == 1 || work.context_kv_block.value() <= 0.0) return units::Seconds(0.0);
  const CommPattern& groups = pattern.get();
  const units::Seconds hop = network.collective_time(CollectiveOp::ring_shift, groups, work.context_kv_block).time;
  units::Seconds gather(0.0);
  if (par.context_comm == ContextComm::all_gather) {
    gather = network.collective_time(CollectiveOp::all_gather, groups, work.context_kv_block * d(par.context)).time;
  }
  auto exchange = [&](const TimedOps& ops, bool backward) {
    return context_exchange_time(par.context_comm, par.context, backward, attention_core_time(ops), hop, gather,
                                 kOverlapComputeSlowdown);
  };
  if (kind == PassKind::forward) return exchange(timed.forward, false);
  units::Seconds t = exchange(timed.backward, true);
  if (recompute && attention_core_time(timed.recompute).value() > 0.0) t += exchange(timed.recompute, false);
  return t;
}

/// Cost of `work` on one GPU, forward or backward (backward = recompute + backward; `recompute` false: the
/// backward of a layer that keeps its activations).
PassCost pass_cost_without_context(const LayerWork& work, const TimedLayer& timed, PassKind kind,
                                    const StepSetup& setup, const CommunicationModel& network,
                                    const CommPattern& tp_group, bool recompute) {
  const ParallelismConfig& par = setup.parallelism;
  const bool overlap = par.tp_comm_overlap && par.sequence_parallel && par.tensor > 1 && work.tp_forward.count == 2;
  units::Seconds all_gather(0.0), reduce_scatter(0.0);
  if (overlap) {
    all_gather = network.collective_time(CollectiveOp::all_gather, tp_group, work.tp_forward.bytes_each).time;
    reduce_scatter = network.collective_time(CollectiveOp::reduce_scatter, tp_group, work.tp_forward.bytes_each).time;
  }
  if (kind == PassKind::forward) {
    PassCost c = cost_of(timed.forward);
    if (overlap) {
      c.tp_comm = overlapped_tp(timed.forward, false, setup, all_gather, reduce_scatter, c.compute);
    } else {
      c.tp_comm = tp_time(work.tp_forward, tp_group, setup, network);
    }
    return c;
  }
  PassCost c = cost_of(timed.backward);
  if (recompute) {
    const PassCost r = cost_of(timed.recompute);
    c.compute += r.compute;
    c.attention += r.attention;
    c.memory_bound += r.memory_bound;
    c.flops += r.flops;
  }
  const bool overlap_backward = overlap && behaviour_of(setup.training.framework).tp_comm_overlap_backward;
  if (overlap_backward) {
    c.tp_comm = overlapped_tp(timed.backward, true, setup, all_gather, reduce_scatter, c.compute);
    if (recompute && work.tp_recompute.count > 0) {
      c.tp_comm += overlapped_tp(timed.recompute, false, setup, all_gather, reduce_scatter, c.compute);
    }
    return c;
  }
  units::Seconds backward_tp = tp_time(work.tp_backward, tp_group, setup, network);
  if (setup.parallelism.async_tensor_parallel_allreduce && work.tp_backward.count > 0) {
    // Megatron's async tensor-parallel all-reduce (LinearWithGradAccumulationAndAsyncCommunication): the
    // input-gradient collective of a column-parallel linear is launched before its weight-gradient GEMM(s) and
    // runs under them; only the part longer than those GEMMs is exposed.
    const CollectiveOp op =
        setup.parallelism.sequence_parallel ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
    const units::Seconds each = network.collective_time(op, tp_group, work.tp_backward.bytes_each).time;
    for (const std::vector<size_t>& wgrads : work.tp_backward_hidden_by) {
      units::Seconds hidden_under(0.0);
      for (size_t index : wgrads) hidden_under += timed.backward.at(index);
      backward_tp -= each;
      if (each > hidden_under) backward_tp += each - hidden_under;
    }
  }
  if (recompute && overlap && work.tp_recompute.count > 0) {
    // The recomputed forward is a forward pass: micro-pipelined like the first one.
    backward_tp += overlapped_tp(timed.recompute, false, setup, all_gather, reduce_scatter, c.compute);
  } else if (recompute) {
    backward_tp += tp_time(work.tp_recompute, tp_group, setup, network);
  }
  c.tp_comm = backward_tp;
  return c;
}

/// The exposed expert-parallel traffic of a pass of `work` (expert_comm_time), with the recomputed forward's
/// when the recompute reruns the MoE layer. The shared expert hides it with moe_shared_expert_overlap: its
/// forward GEMMs and activation, or in backward twice its forward GEMM time (dgrad and wgrad).
units::Seconds expert_comm(const LayerWork& work, const TimedLayer& timed, PassKind kind, bool recompute,
                           const StepSetup& setup, const CommunicationModel& network, const MegatronPatterns& patterns) {
  const ExpertTraffic& traffic = work.expert_forward;
  if (!traffic.any() && traffic.expert_tensor_bytes.value() <= 0.0) return units::Seconds(0.0);
  units::Seconds shared(0.0);
  if (setup.training.moe_shared_expert_overlap) {
    for (size_t i : traffic.shared_expert_ops) shared += timed.forward.at(i);
  }
  if (kind == PassKind::forward) return expert_comm_time(traffic, patterns, network, shared, kOverlapComputeSlowdown);
  units::Seconds t = expert_comm_time(work.expert_backward, patterns, network, shared * 2.0, kOverlapComputeSlowdown);
  bool reruns = false;
  for (const Op& op : work.recompute) reruns = reruns || op.role == GemmRole::expert;
  if (recompute && reruns) t += expert_comm_time(traffic, patterns, network, shared, kOverlapComputeSlowdown);
  return t;
}

}  // namespace

PassCost pass_cost(const LayerWork& work, const LayerOpTimes* times, PassKind kind, const StepSetup& setup,
                   const ComputeModel& compute, const CommunicationModel& network, const MegatronPatterns& patterns,
                   bool recompute) {
  const Precision p = setup.training.precision;
  const TimedLayer timed(work, times, compute, p);
  PassCost c = pass_cost_without_context(work, timed, kind, setup, network, patterns.tensor.get(), recompute);
  c.cp_comm = context_comm(work, timed, kind, recompute, setup, network, patterns.context);
  c.ep_comm = expert_comm(work, timed, kind, recompute, setup, network, patterns);
  // The host queue: the expert-parallel time of the forward (also run by a full recompute) and of the backward.
  std::vector<units::Seconds> own[3];  // the reference path's times of each op list
  const auto all = [&](const TimedOps& ops, std::vector<units::Seconds>& t) -> const std::vector<units::Seconds>& {
    if (ops.given != nullptr) return *ops.given;
    t.reserve(ops.ops.size());
    for (size_t i = 0; i < ops.ops.size(); ++i) t.push_back(ops.at(i));
    return t;
  };
  const units::Seconds ep_forward =
      kind == PassKind::forward ? c.ep_comm : expert_comm(work, timed, PassKind::forward, false, setup, network, patterns);
  const units::Seconds ep_backward =
      kind == PassKind::forward ? units::Seconds(0.0)
                                : expert_comm(work, timed, PassKind::backward, false, setup, network, patterns);
  c.host = pass_host_time(work, kind, recompute, all(timed.forward, own[0]), all(timed.recompute, own[1]),
                          all(timed.backward, own[2]), ep_forward, ep_backward, c.tp_comm + c.cp_comm);
  return c;
}

PassCost scaled(PassCost c, double k) {
  c.host *= k;
  c.compute *= k;
  c.attention *= k;
  c.memory_bound *= k;
  c.tp_comm *= k;
  c.dp_comm *= k;
  c.cp_comm *= k;
  c.ep_comm *= k;
  c.flops *= k;
  return c;
}

PassCost sum(PassCost a, const PassCost& b) {
  a.compute += b.compute;
  a.attention += b.attention;
  a.memory_bound += b.memory_bound;
  a.tp_comm += b.tp_comm;
  a.dp_comm += b.dp_comm;
  a.cp_comm += b.cp_comm;
  a.ep_comm += b.ep_comm;
  a.host += b.host;
  a.flops += b.flops;
  return a;
}

}  // namespace clustersim::models::detail
