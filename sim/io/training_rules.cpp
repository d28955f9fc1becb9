// [training] and [parallelism]'s rules (training_rules.hpp).
#include "sim/io/training_rules.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/layout.hpp"
#include "models/workload/transformer.hpp"
#include "sim/io/cluster_rules.hpp"
#include "sim/io/loader.hpp"
#include "sim/io/model_rules.hpp"

namespace clustersim::sim::detail {

models::ParallelismConfig layout_keys(const Loader& l) {
  models::ParallelismConfig p;
  p.tensor = l.get_int("parallelism.tensor");
  p.context = l.get_int("parallelism.context");
  p.context_comm = *models::parse_context_comm(l.get_string("parallelism.cp_comm_type"));
  p.pipeline = l.get_int("parallelism.pipeline");
  if (l.has("parallelism.data")) p.data = l.get_int("parallelism.data");
  p.virtual_stages = l.get_int("parallelism.virtual_stages");
  p.sequence_parallel = l.get_bool("parallelism.sequence_parallel");
  p.zero_stage = l.get_int("parallelism.zero_stage");
  p.overlap_grad_reduce = l.get_bool("parallelism.overlap_grad_reduce");
  p.overlap_param_gather = l.get_bool("parallelism.overlap_param_gather");
  p.overlap_p2p_comm = l.get_bool("parallelism.overlap_p2p_comm");
  p.async_tensor_parallel_allreduce = l.get_bool("parallelism.async_tensor_parallel_allreduce");
  p.tp_comm_overlap = l.get_bool("parallelism.tp_comm_overlap");
  p.expert = l.get_int("parallelism.expert");
  p.expert_tensor = l.get_int("parallelism.expert_tensor");
  p.first_stage_layers = l.get_int("parallelism.first_stage_layers");
  p.last_stage_layers = l.get_int("parallelism.last_stage_layers");
  return p;
}

void set_grad_reduce_default(Loader& l) {
  if (!l.has("training.grad_reduce_dtype")) {
    // fp16 runs reduce in fp16 (Megatron's fp16 main gradients); DeepSpeed reduces in the model's 16-bit
    // type (engine.communication_data_type); the others in fp32 (Megatron --accumulate-allreduce-grads-in-fp32
    // with bf16, torchtitan mixed_precision_reduce = float32).
    const std::string precision = l.get_string("training.precision");
    std::string dtype = "fp32";
    if (precision == "fp16") {
      dtype = "fp16";
    } else if (l.get_string("training.framework") == "deepspeed" && (precision == "bf16" || precision == "fp8")) {
      dtype = "bf16";
    }
    l.set("training.grad_reduce_dtype", dtype);
  }
}

void check_tp_comm_overlap(Loader& l) {
  // Given explicitly without sequence parallelism: an error. From a framework profile: it applies only where
  // sequence parallelism is on (the model ignores it otherwise).
  if (l.find_node("parallelism", "tp_comm_overlap") != nullptr && l.get_bool("parallelism.tp_comm_overlap") &&
      !l.get_bool("parallelism.sequence_parallel") && l.get_int("parallelism.tensor") > 1) {
    l.fail_at("parallelism.tp_comm_overlap",
              "overlaps the all-gathers and reduce-scatters of sequence "
              "parallelism: needs parallelism.sequence_parallel = true");
  }
}

void check_parallelism_shape(Loader& l) {
  const int64_t v = l.get_int("parallelism.virtual_stages");
  if (v > 1 && l.get_string("parallelism.schedule") == "gpipe") {
    l.fail_at("parallelism.schedule",
              "gpipe has no interleaved form: virtual_stages must be 1, got " + std::to_string(v));
  }
  if (const auto problem = models::layout_problem(layout_keys(l), model_keys(l))) {
    l.fail_at(problem->key, problem->message);
  }
}

void check_gpu_count(Loader& l, const ClusterShape& cluster) {
  const int64_t gpus = cluster.gpus;
  const std::string& cluster_text = cluster.text;
  // The sizes of the dimensions other than data, as written ("tensor × pipeline", "tensor × context ×
  // pipeline" when context parallelism is on), and their product.
  const int64_t t = l.get_int("parallelism.tensor");
  const int64_t c = l.get_int("parallelism.context");
  const int64_t p = l.get_int("parallelism.pipeline");
  const int64_t tc = l.checked_mul(t, c, "parallelism.context");
  const int64_t tp = l.checked_mul(tc, p, "parallelism.pipeline");
  const std::string names = c > 1 ? "tensor × context × pipeline" : "tensor × pipeline";
  const std::string sizes = std::to_string(t) + (c > 1 ? " × " + std::to_string(c) : "") + " × " + std::to_string(p);
  if (l.has("parallelism.data")) {
    const int64_t d = l.get_int("parallelism.data");
    const int64_t tpd = l.checked_mul(tp, d, "parallelism.data");
    if (tpd != gpus) {
      // What to change: the data size that fits (when one does), the other dimensions, or the nodes that hold
      // this layout (when whole VMs do; with zones, their nodes change too); then the --set options involved.
      std::string fix = gpus % tp == 0 ? "set parallelism.data = " + std::to_string(gpus / tp) +
                                             " (--set parallelism.data=" + std::to_string(gpus / tp) + ")"
                                       : "no data size fits (" + names + " = " + std::to_string(tp) +
                                             " does not divide " + std::to_string(gpus) + ")";
      fix += gpus % tp == 0 ? ", or change tensor, context or pipeline" : ": change tensor, context or pipeline";
      const int64_t per_vm = cluster.vm->devices_per_vm;
      if (l.has("cluster.zones")) {
        fix += ", or cluster.nodes and cluster.zones";
      } else if (tpd % per_vm == 0) {
        fix += ", or cluster.nodes (--set cluster.nodes=" + std::to_string(tpd / per_vm) + ")";
      } else {
        fix += ", or cluster.nodes";
      }
      std::string from_set;
      for (const char* key : {"parallelism.tensor", "parallelism.context", "parallelism.pipeline", "parallelism.data",
                              "cluster.nodes", "cluster.vm_size"}) {
        if (const std::string option = l.set_option(key); !option.empty()) {
          from_set += (from_set.empty() ? "; from --set: " : ", ") + option;
        }
      }
      l.fail_at("parallelism.data", names + " × data = " + sizes + " × " + std::to_string(d) + " = " +
                                        std::to_string(tpd) + ", but the cluster has " + cluster_text + ": " + fix +
                                        from_set);
    }
  } else {
    if (gpus % t != 0) {
      l.fail_at("parallelism.tensor",
                "tensor = " + std::to_string(t) + " does not divide the cluster's " + cluster_text);
    }
    if (gpus % tc != 0) {
      l.fail_at("parallelism.context", "tensor × context = " + std::to_string(t) + " × " + std::to_string(c) + " = " +
                                           std::to_string(tc) + " does not divide the cluster's " + cluster_text);
    }
    if (gpus % tp != 0) {
      l.fail_at("parallelism.pipeline",
                names + " = " + sizes + " = " + std::to_string(tp) + " does not divide the cluster's " + cluster_text);
    }
    l.set("parallelism.data", gpus / tp);
  }
}

void check_training_on_cluster(Loader& l, const ClusterShape& cluster, const models::Catalog& catalog) {
  const models::VmSize* vm = cluster.vm;
  const int64_t gpus = cluster.gpus;
  const int64_t p = l.get_int("parallelism.pipeline");
  check_gpu_count(l, cluster);
  const int64_t d = l.get_int("parallelism.data");
  // The MoE layers' folded layout, now that data is known.
  if (const auto problem = models::expert_layout_problem(layout_keys(l), model_keys(l))) {
    l.fail_at(problem->key, problem->message);
  }
  // A list other than the default only means something with selective recompute (the resolved file, which
  // writes the default, reloads).
  const toml::array& modules = *l.resolved_node("training.recompute_modules")->as_array();
  const bool default_modules = modules.size() == 1 && modules[0].as_string()->get() == "core_attn";
  if (!default_modules && l.get_string("training.activation_recompute") != "selective") {
    l.fail_at("training.recompute_modules", "applies to training.activation_recompute = \"selective\", got \"" +
                                                l.get_string("training.activation_recompute") + "\"");
  }
  if (l.get_bool("training.moe_a2a_overlap")) {
    // Megatron-Core's checks for --overlap-moe-expert-parallel-comm (TransformerConfig).
    const auto refuse = [&](const std::string& why) { l.fail_at("training.moe_a2a_overlap", why); };
    if (l.get_int("parallelism.expert") < 2) refuse("needs parallelism.expert > 1");
    if (l.get_string("training.moe_token_dispatcher") == "allgather") refuse("needs the alltoall or flex dispatcher");
    if (l.get_int("parallelism.pipeline") > 1 && l.get_int("parallelism.virtual_stages") < 2) {
      refuse(
          "needs parallelism.virtual_stages > 1 with pipeline parallelism (Megatron-Core merges the passes "
          "of the interleaved schedule)");
    }
    if (l.get_string("training.activation_recompute") == "full") refuse("does not run with full recompute");
    if (l.get_bool("training.moe_shared_expert_overlap")) refuse("replaces training.moe_shared_expert_overlap");
  }
  if (l.get_string("training.moe_token_dispatcher") == "flex" && l.get_int("parallelism.expert_tensor") != 1) {
    l.fail_at("training.moe_token_dispatcher",
              "flex (DeepEP) dispatches over the expert-parallel group only: it "
              "needs parallelism.expert_tensor = 1, got " +
                  std::to_string(l.get_int("parallelism.expert_tensor")));
  }
  if (l.get_bool("training.moe_pad_expert_input_to_capacity") &&
      l.get_double("training.moe_expert_capacity_factor") <= 0.0) {
    l.fail_at("training.moe_pad_expert_input_to_capacity",
              "needs training.moe_expert_capacity_factor > 0 (padding "
              "is to the experts' capacity)");
  }
  const int64_t b = l.get_int("training.global_batch_size");
  const int64_t mb = l.get_int("training.micro_batch_size");
  l.checked_mul(mb, d, "training.micro_batch_size");
  if (const std::string why = models::batch_split_error(b, mb, d); !why.empty()) {
    l.fail_at("training.global_batch_size", why);
  }
  const int64_t v = l.get_int("parallelism.virtual_stages");
  if (v > 1 && (b / (mb * d)) % p != 0) {
    l.fail_at("training.global_batch_size",
              "interleaved 1F1B (virtual_stages = " + std::to_string(v) + ") needs the microbatches of a pipeline, " +
                  "global_batch_size / (micro_batch_size × data) = " + std::to_string(b / (mb * d)) +
                  ", divisible by pipeline (" + std::to_string(p) + ")");
  }
  const models::DeviceSpec& device = catalog.device(vm->device);
  const std::string precision = l.get_string("training.precision");
  const auto mode = device.peak.find(*models::parse_precision(precision));
  if (mode == device.peak.end() || !(mode->second.value() > 0.0)) {
    std::string supported;
    for (const auto& [pr, rate] : device.peak) {
      if (rate.value() > 0.0) supported += (supported.empty() ? "" : ", ") + std::string(models::to_string(pr));
    }
    l.fail_at("training.precision",
              "the VM's " + vm->device + " has no " + precision + " mode (it has: " + supported + ")");
  }
  check_step_size(l, *vm, catalog, gpus);
}

void check_step_size(Loader& l, const models::VmSize& vm, const models::Catalog& catalog, int64_t gpus) {
  constexpr double kMaxStepAtPeakSeconds = 365.25 * 86400.0;  // one year
  const int64_t b = l.get_int("training.global_batch_size");
  const int64_t mb = l.get_int("training.micro_batch_size");
  const int64_t d = l.get_int("parallelism.data");
  const double microbatches = static_cast<double>(b / (mb * d));
  const double passes = microbatches * static_cast<double>(l.get_int("parallelism.pipeline")) *
                        static_cast<double>(l.get_int("parallelism.virtual_stages"));
  if (passes > kMaxPipelinePasses) {
    l.fail_at("training.global_batch_size",
              "microbatches × pipeline × virtual_stages = " + detail::format_number(passes) +
                  " passes of one pipeline, more than the step simulation keeps (bound: 2^20 = 1,048,576, about "
                  "0.6 GB); raise micro_batch_size or lower global_batch_size");
  }
  models::TrainingConfig tr;
  tr.global_batch_size = b;
  const double flops = models::model_flops_per_iteration(model_keys(l), tr).value();
  const models::DeviceSpec& device = catalog.device(vm.device);
  double peak = 0.0;
  for (const auto& [precision, rate] : device.peak) peak = std::max(peak, rate.value());
  const double at_peak_s = flops / (static_cast<double>(gpus) * vm.device_share * peak);
  if (!(at_peak_s <= kMaxStepAtPeakSeconds)) {
    char text[160];
    std::snprintf(text, sizeof text, "one step is %.3g FLOP of model work: %.3g years at the %lld GPUs' peak", flops,
                  at_peak_s / kMaxStepAtPeakSeconds, static_cast<long long>(gpus));
    l.fail_at("training.global_batch_size",
              std::string(text) +
                  " (bound: one year at peak, so that the simulated step stays within the "
                  "engine's 292-year clock)");
  }
}

}  // namespace clustersim::sim::detail
