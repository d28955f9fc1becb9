// A layout search's candidate scenarios derived from one loaded scenario (issue 31, sixth round): the scenario
// that loading the same document with the layout keys' --set options appended gives, without the load, with every
// loader rule that reads those keys (sim/io/training_rules.cpp, the key table's ranges) checked again here.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "sim/io/scenario.hpp"

namespace clustersim::sim {

/// One layout key a layout search sets and its value: parallelism.tensor, .context, .pipeline, .data, .expert,
/// .expert_tensor, .virtual_stages or training.micro_batch_size (an integer).
struct LayoutSetting {
  std::string_view key;
  int64_t value = 0;
};

/// What derive_layout found: the load gives `out` (loads), the load throws ScenarioError (refused), or only a
/// load can tell (load_to_know: the caller loads as before).
enum class LayoutVerdict { loads, refused, load_to_know };

/// `base`: a scenario loaded by load_scenario(document, overrides, catalog, ResolvedText::skip) (so its
/// resolved_toml is empty). Decides what load_scenario(document, overrides + ["KEY=VALUE" of each setting, in
/// order], catalog, ResolvedText::skip) does, and on `loads` sets `out` to the scenario it returns: `base` with
/// the settings' values (a later setting of a key wins) and their --set options appended to `overrides`.
///
/// Why it is exact: `base` passed every rule, and the rules that do not read the layout keys give the same
/// verdict with them changed (the model, cluster, job and reference rules read none; the defaults do not
/// depend on them; the --set options add keys to [parallelism] and [training], which exist or are created with
/// the same defaults, and move no recorded location: the locations are of keys the settings do not set, and a
/// --set's location is its index, unchanged by options after it). The rules that read them are re-checked
/// here, each as the loader states it: the key table's integer range of each key; an explicit
/// tp_comm_overlap without sequence parallelism (tensor > 1; load_to_know where `base` cannot tell whether it
/// was explicit: its tensor was 1); gpipe with virtual stages; models::layout_problem and
/// expert_layout_problem; tensor x context x pipeline x data equal to the cluster's GPUs (those of `base`'s
/// layout) without 64-bit overflow; moe_a2a_overlap's expert > 1 and virtual stages with pipeline; the flex
/// dispatcher's expert_tensor = 1; micro batch x data without overflow, models::batch_split_error, interleaving's
/// microbatches divisible by pipeline; the step's pass count bound (2^20). A setting of another key, or none
/// of parallelism.data (the loader then derives it), gives load_to_know. Does not throw; the reason of a
/// refusal is not reported (the screening discards it).
LayoutVerdict derive_layout(const Scenario& base, std::span<const LayoutSetting> settings, Scenario& out);

}  // namespace clustersim::sim
