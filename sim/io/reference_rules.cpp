// [reference]'s rules (reference_rules.hpp).
#include "sim/io/reference_rules.hpp"

#include "sim/io/loader.hpp"

namespace clustersim::sim::detail {

void check_training_reference(Loader& l) {
  const toml::table* ref = l.resolved_table("reference");
  if (ref == nullptr) return;
  if (!ref->contains("tflops_per_gpu") && !ref->contains("step_time_s") && !ref->contains("mfu") &&
      !ref->contains("tokens_per_s_per_gpu")) {
    l.fail("reference", l.table_loc("reference"),
           "needs at least one of tflops_per_gpu, step_time_s, tokens_per_s_per_gpu, mfu");
  }
}

void check_serving_reference(Loader& l) {
  if (const toml::table* ref = l.resolved_table("reference"); ref != nullptr) {
    if (!ref->contains("metric") || !ref->contains("value")) {
      l.fail(ref->contains("metric") ? "reference.value" : "reference.metric", l.table_loc("reference"),
             "a serving scenario's [reference] needs metric and value");
    }
  }
}

}  // namespace clustersim::sim::detail
