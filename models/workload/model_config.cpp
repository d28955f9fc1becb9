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

}  // namespace clustersim::models
