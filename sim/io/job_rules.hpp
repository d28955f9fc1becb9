// [job], [reliability], [cost] and [simulation]'s rules (docs/scenario-format.md), on a Loader. Private to sim/io.
#pragma once

#include <optional>

#include "models/variability/variability.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim::detail {

class Loader;

/// [job]: [reliability] and [cost] need it; exactly one of train_tokens and steps; at most one checkpoint
/// interval; a VM price (the catalog's when cost.vm_price_usd_per_hour is omitted, else an error at [cost]); an
/// eviction trace needs spot VMs and is read now (at most kMaxEvictionTraceEvents / job.replications events;
/// learned.eviction_trace). Throws ScenarioError.
void check_job(Loader& l, const models::Catalog& catalog);

/// [simulation]'s variability numbers: with simulation.variability = "on" each one the file leaves out takes
/// its sourced default (models/variability), written into the resolved scenario; with it off, one the file
/// gives is an error at its key (it would change nothing).
void check_variability(Loader& l);

/// The variability spec check_variability left in the resolved scenario (nullopt with it off); a number the
/// file gives is "set in the scenario", the others keep their published sources.
std::optional<models::VariabilitySpec> variability_spec(const Loader& l);

}  // namespace clustersim::sim::detail
