// The bottleneck line of a training step (issue 29): the part of the critical path (sim/step/critical_path.hpp)
// that dominates the step, named by the resource it uses and where (NVLink inside a VM, InfiniBand between VMs,
// which stages). StepSimulator::simulate sets StepReport::bottleneck with it; the report and /summary print it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clustersim::models {
struct VmSize;
struct ParallelismConfig;
struct TopologyConfig;
struct ZoneCrossings;
}  // namespace clustersim::models

namespace clustersim::sim {

struct PipelineResult;

/// The dominant part of a step's critical path.
struct Bottleneck {
  std::string part;   ///< "compute" | "tp_comm" | "cp_comm" | "ep_comm" | "host" | "pp_comm" | "dp_comm" |
                      ///< "optimizer" | "pipeline_wait": the largest CriticalPath part (the first on a tie)
  double share = 0.0; ///< of the step time, 0-1
  std::string text;   ///< e.g. "expert dispatch/combine (all-to-all) on InfiniBand between VMs (stages 1-15), 43 %
                      ///< of the step"
};

/// The bottleneck of the step `pipeline` of layout `par` on `topology` of VMs of size `vm` (`crossings`: what
/// crosses a zone boundary). The place of a communication part is
/// the smallest domain holding its group under the rank order of models/parallelism/layout.hpp (tensor,
/// context, data, pipeline; expert ranks folded over tensor x context x data with expert_tensor fastest): inside
/// one VM, inside one NVLink domain of several VMs, or between VMs on the scale-out network (InfiniBand when the
/// VM size has InfiniBand ports, otherwise Ethernet). The stages named are those whose own time of that kind
/// (runs/0/stages) is at least half the largest stage's.
Bottleneck bottleneck_of(const models::ParallelismConfig& par, const models::VmSize& vm,
                         const models::TopologyConfig& topology, const models::ZoneCrossings& crossings,
                         const PipelineResult& pipeline);

/// Stage indices as ranges, "1-15" or "0, 2-4" (sorted, distinct, non-negative).
std::string stage_ranges(const std::vector<int64_t>& stages);

}  // namespace clustersim::sim
