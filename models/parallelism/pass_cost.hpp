// The cost of one layer's forward or backward pass on one GPU (PassCost), for build_step_program: kernel times
// from the compute model, tensor- and context-parallel communication, MoE dispatch and combine, the host queue.
// Internal to models/parallelism (step_program.cpp and its tests).
#pragma once

#include <vector>

#include "models/parallelism/step_program.hpp"
#include "models/workload/transformer.hpp"

namespace clustersim::models {

class ComputeModel;
class CommunicationModel;

namespace detail {

/// Kernel time of one op on one GPU (ComputeModel: gemm_time for GEMMs, FP8 ones in FP8 with a 16-bit
/// remainder, memory_time for memory-bound ops, attention_time for fused attention). Seconds; pure in its
/// arguments (the compute model's kernel time memo returns what it computes).
units::Seconds op_time(const Op& op, const ComputeModel& compute, Precision p);

/// The kernel time of every op of a layer's forward, recompute and backward (op_time of each, in the ops'
/// order; one entry per op). A pass cost reads an op's time several times (its pass's sum, the host queue, the
/// overlapped GEMMs, the context exchange, the shared expert): computed once here instead of at each use.
/// Exact: op_time is pure, so each entry is the value every use computed.
struct LayerOpTimes {
  std::vector<units::Seconds> forward, recompute, backward;
};
LayerOpTimes layer_op_times(const LayerWork& work, const ComputeModel& compute, Precision p);

/// Cost of a pass of `work` on one GPU: forward, or backward (the recompute's forward, when `recompute`, then
/// the backward; `recompute` false: a layer that keeps its activations), with its tensor-parallel communication
/// (overlapped with the GEMMs under tp_comm_overlap), its context-parallel exchange, its MoE dispatch and
/// combine and its host-queue wait. `times`: layer_op_times(work, compute, setup.training.precision), or null
/// to compute each op's time at each use (the reference the tests hold the shared times against: the same
/// value bit for bit). Throws what the network model throws.
PassCost pass_cost(const LayerWork& work, const LayerOpTimes* times, PassKind kind, const StepSetup& setup,
                   const ComputeModel& compute, const CommunicationModel& network, const MegatronPatterns& patterns,
                   bool recompute = true);

/// Every part of `c` times `k` (a pass of k equal layers).
PassCost scaled(PassCost c, double k);
/// The parts of `a` and `b` added part by part.
PassCost sum(PassCost a, const PassCost& b);

}  // namespace detail
}  // namespace clustersim::models
