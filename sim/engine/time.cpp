#include "sim/engine/time.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

namespace detail {
void throw_time_overflow(const char* what) {
  throw std::overflow_error(std::string("clustersim::sim::Time overflow in ") + what);
}
}  // namespace detail

Time Time::from_seconds(units::Seconds s) {
  const double seconds = s.value();
  if (!std::isfinite(seconds) || seconds < 0.0) {
    throw std::invalid_argument("Time::from_seconds: expected a finite, non-negative duration, got " +
                                std::to_string(seconds) + " s");
  }
  const double x = seconds * 1e9;
  // 2^63 as a double; every double below it converts to int64 without overflow.
  constexpr double kLimit = 9223372036854775808.0;
  if (x >= kLimit) {
    throw std::overflow_error("Time::from_seconds: " + std::to_string(seconds) +
                              " s exceeds the int64 nanosecond range (about 9.22e9 s)");
  }
  // Snap representation noise of whole-ns decimal inputs (see header), else round up.
  const double nearest = std::round(x);
  constexpr double kTolerance = 4.0 * 2.220446049250313e-16;  // 4 * DBL_EPSILON, relative
  const double result =
      (nearest >= 1.0 && std::fabs(x - nearest) <= kTolerance * nearest) ? nearest : std::ceil(x);
  return Time::from_ns(static_cast<std::int64_t>(result));
}

units::Seconds Time::to_seconds() const { return units::Seconds(static_cast<double>(ns_) / 1e9); }

}  // namespace clustersim::sim
