// A training scenario: its rules in the order they run (the training kind's check, scenario_kind.cpp) and its
// builder, on a Loader. Private to sim/io.
#pragma once

#include "sim/io/scenario.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim::detail {

class Loader;

/// The training kind's rules, in order: training.grad_reduce_dtype's default, tp_comm_overlap, [model]'s shape
/// and framework features (model_rules), [reference], the parallelism's shape, the cluster (cluster_rules) and
/// the run on it (training_rules), [job] and its tables, [simulation]'s variability (job_rules). Throws
/// ScenarioError at the first broken rule.
void check_training_scenario(Loader& l, const models::Catalog& catalog);

/// The training scenario, after check_training_scenario; with `resolved_text` false, Scenario::resolved_toml
/// left empty (printing it is a tenth of a load).
Scenario build_training_scenario(const Loader& l, bool resolved_text = true);

}  // namespace clustersim::sim::detail
