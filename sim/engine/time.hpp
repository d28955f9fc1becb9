// Simulated time: a strong 64-bit signed count of nanoseconds.
//
// The engine keeps time as an integer so that event order never depends on floating-point rounding
// (ns-3 nstime.h, OMNeT++ simtime.h). One tick is 1 ns; int64 covers +-292 years. Domain models work in
// units::Seconds (double) and cross into engine time once, through Time::from_seconds, which rounds up.
//
// Contract
//   * Construction is explicit: Time::from_ns, Time::zero, Time::max, Time::from_seconds. The default
//     constructor gives zero. There is no implicit conversion to or from any arithmetic type.
//   * A Time may be negative (it is also used for differences); the Simulator refuses to schedule before
//     its current time.
//   * +, -, +=, -= are checked: a result outside [INT64_MIN, INT64_MAX] ns throws std::overflow_error.
//     Time::max() is therefore a usable "never" horizon but max() + from_ns(1) throws.
//   * Comparisons (<=>, ==) are those of the tick count: a total order.
//   * All operations are O(1); everything except from_seconds/to_seconds is constexpr.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

#include "models/units.hpp"

namespace clustersim::sim {

namespace detail {
/// Throws std::overflow_error naming `what`. Out of line so this header needs no <stdexcept>.
[[noreturn]] void throw_time_overflow(const char* what);
}  // namespace detail

class Time {
 public:
  /// Zero.
  constexpr Time() = default;

  /// `ns` nanoseconds (may be negative).
  [[nodiscard]] static constexpr Time from_ns(std::int64_t ns) { return Time(ns); }
  [[nodiscard]] static constexpr Time zero() { return Time(0); }
  /// The largest representable time, INT64_MAX ns (about 292 years): "never".
  [[nodiscard]] static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  /// Converts a duration in seconds to engine time, rounding UP to the next whole nanosecond (ceil), so a
  /// modelled delay is never shortened: 1.5e-9 s -> 2 ns, 1.0000001e-9 s -> 2 ns, 0 s -> 0 ns.
  ///
  /// Decimal inputs that are whole nanoseconds convert exactly even though the double holding them is not:
  /// when the product x = s * 1e9 lies within 4 ulp of a positive integer n (|x - n| <= 4 * 2^-52 * n,
  /// i.e. relative 8.9e-16), the result is n rather than ceil(x). So 1e-9 s -> 1 ns, 0.3 s -> 300000000 ns,
  /// 1e-3 s -> 1000000 ns. The tolerance only absorbs the binary representation error of the input and of
  /// the multiplication (each at most 0.5 ulp); it never rounds anything down to zero (a positive input
  /// below 1 ns gives 1 ns) and is irrelevant above 2^53 ns, where every double is a whole number.
  ///
  /// Errors: negative, NaN or infinite input -> std::invalid_argument (-0.0 is accepted as zero);
  /// a result above INT64_MAX ns (about 9.22e9 s) -> std::overflow_error.
  [[nodiscard]] static Time from_seconds(units::Seconds s);

  /// This time as seconds: ns() / 1e9, correctly rounded to double (the nearest double to the exact value
  /// as long as |ns| <= 2^53, about 104 days).
  [[nodiscard]] units::Seconds to_seconds() const;

  /// The raw count of nanoseconds.
  [[nodiscard]] constexpr std::int64_t ns() const { return ns_; }

  friend constexpr Time operator+(Time a, Time b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a.ns_, b.ns_, &r)) detail::throw_time_overflow("Time + Time");
    return Time(r);
  }
  friend constexpr Time operator-(Time a, Time b) {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a.ns_, b.ns_, &r)) detail::throw_time_overflow("Time - Time");
    return Time(r);
  }
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time& operator-=(Time o) { return *this = *this - o; }

  friend constexpr auto operator<=>(Time a, Time b) = default;
  friend constexpr bool operator==(Time a, Time b) = default;

 private:
  constexpr explicit Time(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

}  // namespace clustersim::sim
