// [reference]'s rules (docs/scenario-format.md, "[reference]"), on a Loader: which measurement a reference gives
// for each kind of scenario. Private to sim/io.
#pragma once

namespace clustersim::sim::detail {

class Loader;

/// A training run's [reference] gives at least one of tflops_per_gpu, step_time_s, tokens_per_s_per_gpu, mfu.
/// Throws ScenarioError at [reference].
void check_training_reference(Loader& l);

/// A serving scenario's [reference] gives metric and value. Throws ScenarioError at [reference], naming the
/// missing key.
void check_serving_reference(Loader& l);

}  // namespace clustersim::sim::detail
