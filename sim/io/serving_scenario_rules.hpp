// A serving scenario's rules, [serving], [workload] and [slo] (docs/scenario-format.md, docs/serving.md), and
// its builder, on a Loader. The rules that need no Loader live in serving_rules.hpp and workload_rules.hpp.
// Private to sim/io.
#pragma once

#include <string>

#include "sim/io/scenario.hpp"
#include "sim/io/workload_rules.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim::detail {

class Loader;

/// The keys of workload.<which> (prompt | output) as resolved.
LengthKeys length_keys(const Loader& l, const std::string& which);

/// A serving scenario's rules, in order (the serving kind's check, scenario_kind.cpp): [model]'s shape and the
/// features serving does not model; the VM size; tensor divides the heads and MLP widths, divides or is a
/// multiple of the key/value heads; the pipeline's layers and VMs; one NVLink domain; the device's math for
/// serving.precision; the workload's arrival keys; [reference]; the trace read (its budgets, its longest prompt);
/// the length keys; the longest prompt against the batch; the weights leave a KV cache; the simulation's
/// budgets (requests, output tokens, samples, engines, autoscaler ticks); autoscaling, zones and spot replicas;
/// the engine profile's defaults (overheads, capacity policy; an alias resolved). Throws ScenarioError at the key.
void check_serving(Loader& l, const models::Catalog& catalog);

/// Prefix caching and the workload's prompt content (prefix_rules.cpp): the content keys not with a trace, the
/// system prompt's share and count with a system prompt, a think time with turns >= 2, sessions in an open loop
/// and within the request budget, prefix_aware routing with prefix caching. Throws ScenarioError at the key.
void check_prefix_caching(Loader& l);

/// The serving scenario, after check_serving.
ServingScenario build_serving_scenario(const Loader& l);

}  // namespace clustersim::sim::detail
