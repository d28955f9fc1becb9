// The rules of [workload]'s length keys (docs/scenario-format.md, "[workload]"), apart from the loader: each
// returns the key it locates and the message, and the loader (scenario.cpp) reports it at that key's place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace clustersim::sim::detail {

/// A broken rule: the dotted key to report and why. `at_table`: the key is missing, so the error points at the
/// [workload] header.
struct KeyViolation {
  std::string key;
  std::string message;
  bool at_table = false;
};

/// One length distribution's keys as the scenario gives them (workload.<which>, _tokens, _min, _max, _sigma).
struct LengthKeys {
  std::string kind;  ///< fixed | uniform | lognormal
  int64_t tokens = 1;
  std::optional<int64_t> min;
  std::optional<int64_t> max;
  double sigma = 1.0;
};

/// The rules of workload.<which> (prompt | output): uniform needs _min and _max with min <= max; lognormal may
/// take _min and/or _max as truncation bounds (min <= max), which must hold at least models::kMinLognormalMass of
/// its probability; fixed takes neither. nullopt when the keys are consistent.
std::optional<KeyViolation> check_length_keys(const std::string& which, const LengthKeys& keys);

}  // namespace clustersim::sim::detail
