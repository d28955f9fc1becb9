// The IR of one training step: per pipeline stage, the order of its forward/backward passes and what each
// costs, the pipeline transfers between stages, and the tail (data-parallel gradient sync, optimizer).
//
// Built from the model shape, the parallelism plan and the compute and communication models; executed as
// events by sim/step/pipeline_executor. One representative rank per stage ("replica" fidelity): every
// tensor-parallel rank and data-parallel replica of a stage runs the same passes.
//
// Rank layout (Megatron-LM): tensor-parallel rank fastest, then data-parallel, then pipeline stage. With G GPUs
// per node, a tensor-parallel group has min(t, G) members per node; a data-parallel group has
// min(d, max(1, G/t)) members per node and G / that many groups share each node's NICs.
//
// Costs per pass of one microbatch through one stage (layers_per_stage = l / p):
//   forward  = embedding (first stage) + layers x forward ops + LM head and loss (last stage)
//   backward = layers x (recompute ops + backward ops) + the same extras' backward
// with 2 tensor-parallel all-reduces of b*s*h activations per layer per forward, backward and recompute.
// Pipeline transfers move one microbatch's b*s*h activation (or its gradient). Megatron's scatter/gather
// optimisation (SC'21 Sec. 4.1) sends 1/t of it per tensor rank across nodes and all-gathers it over NVLink.
// Gradient sync: ring all-reduce of the stage's parameters per tensor rank in the gradient dtype
// (fp32 for bf16/fp8/fp32/tf32, which Megatron requires via --accumulate-allreduce-grads-in-fp32; fp16 for
// fp16). Optimizer: Adam over the local parameters, memory-bound at kAdamBytesPerParameter.
#pragma once

#include <cstdint>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/network/communication_model.hpp"
#include "models/parallelism/plan.hpp"
#include "models/parallelism/schedule.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// HBM bytes per parameter of one mixed-precision Adam step with fp32 master weights (Megatron's fused
/// multi-tensor kernels): gradient unscale + norm reads the fp32 gradient (4); Adam reads the gradient (4),
/// reads and writes the fp32 master weight, m and v (24) and writes the 16-bit weight (2).
inline constexpr double kAdamBytesPerParameter = 34.0;

/// Everything that shapes one training step, besides hardware.
struct StepSetup {
  ModelConfig model;
  TrainingConfig training;
  ParallelismConfig parallelism;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  bool flash_attention = false;
  bool gated_mlp = false;
  int64_t gpus_per_node = 8;

  /// Microbatches per pipeline per step: m = global_batch / (micro_batch * data).
  [[nodiscard]] int64_t microbatches() const;
};

/// Cost of one pass of one microbatch through one stage on one GPU.
struct PassCost {
  units::Seconds compute;  ///< kernels on the compute stream
  units::Seconds tp_comm;  ///< tensor-parallel collectives, serialised with the compute (not overlapped)
  units::Flops flops;      ///< math executed (counts recomputation)
  [[nodiscard]] units::Seconds total() const { return compute + tp_comm; }
};

struct StageProgram {
  std::vector<ScheduledPass> order;  ///< the schedule's pass order on this stage
  PassCost forward;
  PassCost backward;                 ///< includes recomputation
  units::Seconds grad_sync;          ///< data-parallel gradient all-reduce after the last backward
  units::Seconds optimizer;          ///< optimizer step after the gradient sync
  double parameters = 0.0;           ///< parameters held by one GPU of this stage
};

struct StepProgram {
  int64_t microbatches = 0;
  std::vector<StageProgram> stages;  ///< p entries
  units::Seconds p2p_forward;        ///< activation transfer stage i -> i+1, per microbatch
  units::Seconds p2p_backward;       ///< gradient transfer stage i+1 -> i, per microbatch
};

/// Builds the step IR. Throws std::invalid_argument on an inconsistent setup (layers not divisible by
/// pipeline, batch not divisible by micro_batch * data, heads not divisible by tensor, ...).
StepProgram build_step_program(const StepSetup& setup, const ComputeModel& compute,
                               const CommunicationModel& network);

/// The communication groups of `setup` under Megatron's rank order (see the header comment).
CommGroup tensor_parallel_group(const StepSetup& setup);
CommGroup data_parallel_group(const StepSetup& setup);

}  // namespace clustersim::models
