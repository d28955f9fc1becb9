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

std::optional<LayoutProblem> pipeline_split_problem(int64_t num_layers, const ParallelismConfig& p) {
  const int64_t first = p.first_stage_layers, last = p.last_stage_layers;
  if (first == 0 && last == 0) return std::nullopt;
  const std::string key = first > 0 ? "parallelism.first_stage_layers" : "parallelism.last_stage_layers";
  if (first < 0 || last < 0) return LayoutProblem{key, "must be >= 0"};
  if (p.pipeline < 2) return LayoutProblem{key, "needs parallelism.pipeline > 1"};
  if (p.virtual_stages != 1) {
    return LayoutProblem{key, "needs parallelism.virtual_stages = 1, got " + std::to_string(p.virtual_stages)};
  }
  const int64_t set = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
  const int64_t others = p.pipeline - set, rest = num_layers - first - last;
  if (others < 1 || rest < others || rest % others != 0) {
    return LayoutProblem{key, "leaves " + std::to_string(rest) + " of model.num_layers (" +
                                         std::to_string(num_layers) + ") for the other " + std::to_string(others) +
                                         " stages; they must split evenly, at least one layer each"};
  }
  return std::nullopt;
}

std::vector<int64_t> layers_per_virtual_stage(int64_t num_layers, const ParallelismConfig& p) {
  if (p.first_stage_layers == 0 && p.last_stage_layers == 0) {
    return layers_per_virtual_stage(num_layers, p.pipeline, p.virtual_stages);
  }
  if (const auto problem = pipeline_split_problem(num_layers, p)) {
    throw std::invalid_argument("layers_per_virtual_stage: " + problem->key + " " + problem->message);
  }
  const int64_t set = (p.first_stage_layers > 0 ? 1 : 0) + (p.last_stage_layers > 0 ? 1 : 0);
  const int64_t each = (num_layers - p.first_stage_layers - p.last_stage_layers) / (p.pipeline - set);
  std::vector<int64_t> layers(static_cast<size_t>(p.pipeline), each);
  if (p.first_stage_layers > 0) layers.front() = p.first_stage_layers;
  if (p.last_stage_layers > 0) layers.back() = p.last_stage_layers;
  return layers;
}

}  // namespace clustersim::models
