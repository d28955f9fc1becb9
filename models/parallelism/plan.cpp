#include "models/parallelism/plan.hpp"

#include <stdexcept>
#include <string>

namespace clustersim::models {

std::string_view to_string(ContextComm c) { return c == ContextComm::p2p ? "p2p" : "all_gather"; }

std::optional<ContextComm> parse_context_comm(std::string_view name) {
  if (name == "p2p") return ContextComm::p2p;
  if (name == "all_gather") return ContextComm::all_gather;
  return std::nullopt;
}

std::vector<int64_t> layers_per_virtual_stage(int64_t num_layers, int64_t pipeline, int64_t virtual_stages) {
  if (pipeline < 1 || virtual_stages < 1 || num_layers < pipeline * virtual_stages) {
    throw std::invalid_argument("layers_per_virtual_stage: need num_layers (" + std::to_string(num_layers) +
                                ") >= pipeline x virtual_stages (" + std::to_string(pipeline) + " x " +
                                std::to_string(virtual_stages) + ") >= 1");
  }
  const int64_t chunks = pipeline * virtual_stages;
  std::vector<int64_t> layers(static_cast<size_t>(chunks), num_layers / chunks);
  int64_t extra = num_layers % chunks;
  for (int64_t vs = 1; vs + 1 < chunks && extra > 0; ++vs, --extra) ++layers[static_cast<size_t>(vs)];
  if (extra > 0) {  // every middle chunk has one more: the first (then the last) take the rest
    ++layers.front();
    --extra;
  }
  if (extra > 0) ++layers.back();
  return layers;
}

}  // namespace clustersim::models
