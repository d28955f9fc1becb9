#include "models/parallelism/step_program.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/workload/transformer.hpp"

namespace clustersim::models {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("step program: " + message);
}

/// Kernel time and FLOPs of `ops`.
PassCost cost_of(const std::vector<Op>& ops, const ComputeModel& compute, Precision p, double element_bytes) {
  PassCost c;
  for (const Op& op : ops) {
    switch (op.op_class) {
      case OpClass::gemm: c.compute += compute.gemm_time(op.gemm, p, element_bytes); break;
      case OpClass::memory_bound: c.compute += compute.memory_time(op.bytes); break;
      case OpClass::fused_attention:
        c.compute += compute.fused_compute_time(op.flops, p, kFlashAttentionEfficiency);
        break;
    }
    c.flops += op.flops;
  }
  return c;
}

units::Seconds tp_time(const TensorParallelTraffic& traffic, const CommGroup& group, const StepSetup& setup,
                       const CommunicationModel& network) {
  if (traffic.count == 0) return units::Seconds(0.0);
  const units::Seconds one =
      setup.parallelism.sequence_parallel
          ? network.collective_time(Collective::reduce_scatter, group, traffic.bytes_each) +
                network.collective_time(Collective::all_gather, group, traffic.bytes_each)
          : network.collective_time(Collective::all_reduce, group, traffic.bytes_each);
  // With sequence parallelism each of the `count` all-reduces becomes one reduce-scatter or one all-gather;
  // the pair above costs two of them, so halve.
  return one * (setup.parallelism.sequence_parallel ? 0.5 * traffic.count : 1.0 * traffic.count);
}

/// Cost of `work` on one GPU, forward or backward (backward = recompute + backward).
PassCost pass_cost(const LayerWork& work, PassKind kind, const StepSetup& setup, const ComputeModel& compute,
                   const CommunicationModel& network, const CommGroup& tp_group) {
  const Precision p = setup.training.precision;
  const double e = activation_bytes_per_element(p);
  if (kind == PassKind::forward) {
    PassCost c = cost_of(work.forward, compute, p, e);
    c.tp_comm = tp_time(work.tp_forward, tp_group, setup, network);
    return c;
  }
  PassCost c = cost_of(work.backward, compute, p, e);
  const PassCost r = cost_of(work.recompute, compute, p, e);
  c.compute += r.compute;
  c.flops += r.flops;
  c.tp_comm = tp_time(work.tp_backward, tp_group, setup, network) +
              tp_time(work.tp_recompute, tp_group, setup, network);
  return c;
}

PassCost scaled(PassCost c, double k) {
  c.compute *= k;
  c.tp_comm *= k;
  c.flops *= k;
  return c;
}

PassCost operator+(PassCost a, const PassCost& b) {
  a.compute += b.compute;
  a.tp_comm += b.tp_comm;
  a.flops += b.flops;
  return a;
}

}  // namespace

int64_t StepSetup::microbatches() const {
  const int64_t per_step = training.micro_batch_size * parallelism.data;
  require(per_step > 0 && training.global_batch_size % per_step == 0,
          "global_batch_size " + std::to_string(training.global_batch_size) +
              " is not divisible by micro_batch_size * data = " + std::to_string(per_step));
  return training.global_batch_size / per_step;
}

CommGroup tensor_parallel_group(const StepSetup& setup) {
  const int64_t t = setup.parallelism.tensor, g = setup.gpus_per_node;
  CommGroup group;
  group.size = t;
  group.ranks_per_node = std::min(t, g);
  group.groups_per_node = std::max<int64_t>(1, g / t);
  return group;
}

CommGroup data_parallel_group(const StepSetup& setup) {
  const int64_t t = setup.parallelism.tensor, dp = setup.parallelism.data, g = setup.gpus_per_node;
  CommGroup group;
  group.size = dp;
  group.ranks_per_node = std::min(dp, std::max<int64_t>(1, g / t));
  group.groups_per_node = std::max<int64_t>(1, g / group.ranks_per_node);
  return group;
}

StepProgram build_step_program(const StepSetup& setup, const ComputeModel& compute,
                               const CommunicationModel& network) {
  const ParallelismConfig& par = setup.parallelism;
  const ModelConfig& model = setup.model;
  require(par.tensor >= 1 && par.pipeline >= 1 && par.data >= 1, "parallel sizes must be >= 1");
  require(setup.gpus_per_node >= 1, "gpus_per_node must be >= 1");
  require(model.num_layers % par.pipeline == 0,
          "num_layers " + std::to_string(model.num_layers) + " is not divisible by pipeline " +
              std::to_string(par.pipeline));
  require(par.virtual_stages == 1, "interleaved schedules (virtual_stages > 1) are not supported yet");
  const int64_t m = setup.microbatches();
  const int64_t layers = model.num_layers / par.pipeline;

  LayerOptions options;
  options.tensor = par.tensor;
  options.sequence_parallel = par.sequence_parallel;
  options.flash_attention = setup.flash_attention;
  options.gated_mlp = setup.gated_mlp;
  const LayerWork layer = transformer_layer(model, setup.training, options);
  const LayerWork head = lm_head(model, setup.training, options);
  const LayerWork embed = embedding(model, setup.training, options);

  const CommGroup tp = tensor_parallel_group(setup);
  const CommGroup dp = data_parallel_group(setup);
  const PassCost layer_fwd = pass_cost(layer, PassKind::forward, setup, compute, network, tp);
  const PassCost layer_bwd = pass_cost(layer, PassKind::backward, setup, compute, network, tp);

  // Parameters on one GPU: the stage's layers split over t, plus the word embedding (V h / t) on the first
  // stage and its tied copy on the last (Megatron keeps both and all-reduces their gradients).
  const double layer_params = (parameter_count(model, setup.gated_mlp) - d(model.vocab_size + model.seq_length) *
                                   d(model.hidden_size) - 2.0 * d(model.hidden_size)) / d(model.num_layers);
  const double embedding_params = d(model.vocab_size) * d(model.hidden_size) / d(par.tensor);
  const double grad_bytes = setup.training.precision == Precision::fp16 ? 2.0 : 4.0;

  StepProgram program;
  program.microbatches = m;
  program.stages.resize(static_cast<size_t>(par.pipeline));
  for (int64_t i = 0; i < par.pipeline; ++i) {
    StageProgram& stage = program.stages[static_cast<size_t>(i)];
    stage.order = stage_order(setup.schedule, i, par.pipeline, m);
    stage.forward = scaled(layer_fwd, d(layers));
    stage.backward = scaled(layer_bwd, d(layers));
    stage.parameters = d(layers) * layer_params / d(par.tensor);
    if (i == 0) {
      stage.forward = stage.forward + pass_cost(embed, PassKind::forward, setup, compute, network, tp);
      stage.backward = stage.backward + pass_cost(embed, PassKind::backward, setup, compute, network, tp);
      stage.parameters += embedding_params + d(model.seq_length) * d(model.hidden_size);
    }
    if (i == par.pipeline - 1) {
      stage.forward = stage.forward + pass_cost(head, PassKind::forward, setup, compute, network, tp);
      stage.backward = stage.backward + pass_cost(head, PassKind::backward, setup, compute, network, tp);
      if (par.pipeline > 1) stage.parameters += embedding_params;
    }
    stage.grad_sync =
        network.collective_time(Collective::all_reduce, dp, units::Bytes(stage.parameters * grad_bytes));
    stage.optimizer = compute.memory_time(units::Bytes(stage.parameters * kAdamBytesPerParameter));
  }

  if (par.pipeline > 1) {
    const double e = activation_bytes_per_element(setup.training.precision);
    const units::Bytes activation(d(setup.training.micro_batch_size) * d(model.seq_length) *
                                  d(model.hidden_size) * e);
    // A stage boundary crosses nodes when one stage fills at least a node (t * d >= G).
    const bool cross_node = par.tensor * par.data >= setup.gpus_per_node;
    units::Seconds transfer;
    if (par.tensor > 1 && cross_node) {
      // Scatter/gather: each tensor rank sends 1/t; the receiver all-gathers inside its node (already split
      // with sequence parallelism, so no all-gather then).
      transfer = network.p2p_time(activation / d(par.tensor), true, setup.gpus_per_node);
      if (!par.sequence_parallel) transfer += network.collective_time(Collective::all_gather, tp, activation);
    } else {
      const int64_t concurrent = cross_node ? std::min(setup.gpus_per_node, par.tensor * par.data) : 1;
      transfer = network.p2p_time(par.sequence_parallel ? activation / d(par.tensor) : activation, cross_node,
                                  concurrent);
    }
    program.p2p_forward = transfer;
    program.p2p_backward = transfer;
  }
  return program;
}

}  // namespace clustersim::models
