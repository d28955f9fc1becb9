#include "sim/io/workload_rules.hpp"

#include <limits>

#include "models/serving/lognormal.hpp"

namespace clustersim::sim::detail {

std::optional<KeyViolation> check_length_keys(const std::string& which, const LengthKeys& k) {
  const std::string key = "workload." + which;
  if (k.kind == "fixed") {
    for (const auto& [bound, value] : {std::pair{"_min", k.min}, std::pair{"_max", k.max}}) {
      if (value) {
        return KeyViolation{key + bound, "a bound of a uniform or lognormal length; " + key +
                                             " = \"fixed\" takes none (" + key + "_tokens is the length)"};
      }
    }
    return std::nullopt;
  }
  if (k.kind == "uniform") {
    for (const auto& [bound, value] : {std::pair{"_min", k.min}, std::pair{"_max", k.max}}) {
      if (!value) return KeyViolation{key + bound, "required with " + key + " = \"uniform\"", true};
    }
  }
  if (k.min && k.max && *k.min > *k.max) return KeyViolation{key + "_min", "must not exceed " + key + "_max"};
  if (k.kind == "lognormal" && (k.min || k.max)) {
    const double low = k.min ? static_cast<double>(*k.min) : 1.0;
    const double high = k.max ? static_cast<double>(*k.max) : std::numeric_limits<double>::infinity();
    if (models::lognormal_mass(static_cast<double>(k.tokens), k.sigma, low, high) < models::kMinLognormalMass) {
      return KeyViolation{k.max ? key + "_max" : key + "_min",
                          "the lognormal of median " + std::to_string(k.tokens) + " (" + key +
                              "_tokens) puts almost no probability between the bounds: move them toward the median "
                              "or widen " + key + "_sigma"};
    }
  }
  return std::nullopt;
}

}  // namespace clustersim::sim::detail
