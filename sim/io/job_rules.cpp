// [job], [reliability], [cost] and [simulation]'s rules (job_rules.hpp).
#include "sim/io/job_rules.hpp"

#include <string>
#include <utility>

#include "models/hardware/catalog.hpp"
#include "sim/input_file.hpp"
#include "sim/io/eviction_trace.hpp"
#include "sim/io/loader.hpp"

namespace clustersim::sim::detail {

void check_job(Loader& l, const models::Catalog& catalog) {
  if (l.resolved_table("job") == nullptr) {
    for (const char* t : {"reliability", "cost"}) {
      if (l.in_document(t)) l.fail(t, l.table_loc(t), "needs a [job] table (train_tokens or steps)");
    }
    return;
  }
  const bool tokens = l.has("job.train_tokens"), steps = l.has("job.steps");
  if (tokens == steps) l.fail("job", l.table_loc("job"), "give exactly one of train_tokens and steps");
  if (l.has("reliability.checkpoint_interval_minutes") && l.has("reliability.checkpoint_interval_steps")) {
    l.fail_at("reliability.checkpoint_interval_steps", "give checkpoint_interval_minutes or _steps, not both");
  }
  if (!l.has("cost.vm_price_usd_per_hour")) {
    const auto& vm = catalog.vm_size(l.get_string("cluster.vm_size"));
    if (!vm.price_usd_per_hour) {
      l.fail("cost.vm_price_usd_per_hour", l.table_loc("cost"), "required: the catalog has no price for " + vm.name);
    }
    l.set("cost.vm_price_usd_per_hour", *vm.price_usd_per_hour);
  }
  if (l.has("reliability.spot_eviction_trace")) {
    if (!l.get_bool("reliability.spot")) l.fail_at("reliability.spot_eviction_trace", "needs reliability.spot = true");
    const std::filesystem::path trace = l.path().parent_path() / l.get_string("reliability.spot_eviction_trace");
    try {
      l.learned.eviction_trace = read_eviction_trace(trace, kMaxEvictionTraceEvents / l.get_int("job.replications"));
    } catch (const InputFileError& e) {
      l.fail_at("reliability.spot_eviction_trace",
                "cannot read the eviction trace '" + trace.string() + "': it " + e.what());
    }
  }
}

void check_variability(Loader& l) {
  const bool on = l.get_string("simulation.variability") == "on";
  const std::pair<std::string_view, double> numbers[] = {{"gpu_compute_cv", models::kGpuComputeCv},
                                                         {"slow_vm_fraction", models::kSlowVmFraction},
                                                         {"slow_vm_factor", models::kSlowVmFactor}};
  for (const auto& [leaf, fallback] : numbers) {
    const std::string key = "simulation." + std::string(leaf);
    if (l.find_node("simulation", leaf) != nullptr) {
      if (!on) l.fail_at(key, "has no effect unless simulation.variability = \"on\"");
    } else if (on) {
      l.set(key, fallback);
    }
  }
}

std::optional<models::VariabilitySpec> variability_spec(const Loader& l) {
  if (l.get_string("simulation.variability") != "on") return std::nullopt;
  const auto given = [&l](std::string_view leaf) { return l.find_node("simulation", leaf) != nullptr; };
  models::VariabilitySpec v;
  v.gpu_compute_cv = l.get_double("simulation.gpu_compute_cv");
  v.slow_vm_fraction = l.get_double("simulation.slow_vm_fraction");
  v.slow_vm_factor = l.get_double("simulation.slow_vm_factor");
  if (given("gpu_compute_cv")) v.gpu_compute_cv_source = "set in the scenario";
  if (given("slow_vm_fraction") || given("slow_vm_factor")) v.slow_vm_source = "set in the scenario";
  return v;
}

}  // namespace clustersim::sim::detail
