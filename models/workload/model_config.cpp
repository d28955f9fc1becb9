#include "models/workload/model_config.hpp"

namespace clustersim::models {

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace clustersim::models
