// The files one run of a scenario reads, for the output checks (sim/output/output_path.hpp): an output must
// never be one of them.
#pragma once

#include <vector>

#include "sim/output/output_path.hpp"

namespace clustersim::sim {

struct Scenario;
struct ServingScenario;

/// A training scenario's inputs: its file ("the scenario file") and, when reliability.spot_eviction_trace is
/// set, the eviction trace ("the eviction trace", resolved against the scenario's directory as the loader
/// does). Read from the resolved scenario, so --set overrides count. Throws nothing for a scenario that loaded.
std::vector<InputFile> run_inputs(const Scenario& scenario);

/// A serving scenario's inputs: its file and, when workload.trace is set, the request trace ("the request
/// trace").
std::vector<InputFile> run_inputs(const ServingScenario& scenario);

}  // namespace clustersim::sim
