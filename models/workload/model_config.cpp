#include "models/workload/model_config.hpp"

namespace clustersim::models {

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::selective_op: return "selective_op";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full, Recompute::selective_op}) {
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view to_string(KernelFusion f) {
  switch (f) {
    case KernelFusion::fused: return "fused";
    case KernelFusion::compiled: return "compiled";
    case KernelFusion::eager: return "eager";
  }
  return "?";
}

std::optional<KernelFusion> parse_kernel_fusion(std::string_view name) {
  for (KernelFusion f : {KernelFusion::fused, KernelFusion::compiled, KernelFusion::eager}) {
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view to_string(AttentionKernel k) { return k == AttentionKernel::flash3 ? "flash3" : "flash2"; }

std::optional<AttentionKernel> parse_attention_kernel(std::string_view name) {
  for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3}) {
    if (to_string(k) == name) return k;
  }
  return std::nullopt;
}

std::string_view to_string(Framework f) {
  switch (f) {
    case Framework::megatron_lm_2021: return "megatron-lm-2021";
    case Framework::megatron_lm_2022: return "megatron-lm-2022";
    case Framework::megatron_core: return "megatron-core";
    case Framework::nemo: return "nemo";
    case Framework::fsdp: return "fsdp";
    case Framework::fsdp2: return "fsdp2";
    case Framework::deepspeed: return "deepspeed";
  }
  return "?";
}

std::optional<Framework> parse_framework(std::string_view name) {
  for (Framework f : {Framework::megatron_lm_2021, Framework::megatron_lm_2022, Framework::megatron_core,
                      Framework::nemo, Framework::fsdp, Framework::fsdp2, Framework::deepspeed}) {
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

double grad_reduce_bytes_per_element(const TrainingConfig& training) {
  return activation_bytes_per_element(training.grad_reduce);
}

std::string batch_split_error(int64_t global_batch, int64_t micro_batch, int64_t data) {
  if (micro_batch < 1 || data < 1) return "micro_batch_size and data must be at least 1";
  const std::string factors = std::to_string(micro_batch) + " × " + std::to_string(data);
  int64_t per_step = 0;
  if (__builtin_mul_overflow(micro_batch, data, &per_step)) {
    return "must be divisible by micro_batch_size × data = " + factors + ", got " + std::to_string(global_batch);
  }
  if (global_batch % per_step == 0) return {};
  return "must be divisible by micro_batch_size × data = " + factors + " = " + std::to_string(per_step) +
         ", got " + std::to_string(global_batch);
}

}  // namespace clustersim::models
