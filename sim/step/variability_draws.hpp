// Full fidelity's variability: every GPU's and every VM's seeded draw of the model in
// models/variability/variability.hpp, reduced to one compute factor per tensor-parallel group (the executor's
// unit: a pipeline stage of one data-parallel replica), the slowest of its GPUs, since the group runs in
// lockstep.
//
// Draws (fixed formulas: changing them changes results), with RandomStream (sim/engine/random_stream.hpp):
//   Z_g = RandomStream(seed, g, 1).normal()                for GPU g (global rank, Megatron's rank order)
//   VM v is slow  iff  RandomStream(seed, v, 2).uniform() < f,   v = g / gpus_per_vm (ranks fill VMs in order)
//   X_g = (s if VM v is slow else 1) x (1 + sigma Z_g)
// Each GPU and each VM has its own stream, so a draw does not depend on the layout's size or the order of the
// loop, and the same seed gives the same cluster for every layout of it.
#pragma once

#include <cstdint>
#include <vector>

#include "models/parallelism/plan.hpp"
#include "models/variability/variability.hpp"

namespace clustersim::sim {

/// Per (stage * data + replica), as ExecutionFidelity::compute_slowdown with every data-parallel replica: the
/// largest X_g over the group's GPUs (tensor x context of them). Throws std::invalid_argument for
/// gpus_per_vm < 1 or a spec with sigma outside [0, 0.1] (above it 1 + sigma Z could reach 0: Box-Muller's
/// |Z| <= 8.6 on the 2^-53 grid), f outside [0, 1] or s < 1.
std::vector<double> drawn_compute_factors(const models::VariabilitySpec& spec, const models::ParallelismConfig& p,
                                          int64_t gpus_per_vm, uint64_t seed);

}  // namespace clustersim::sim
