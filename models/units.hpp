// Strong physical quantities for the domain models.
//
// Every quantity is a double in SI base units wrapped in its own type, so a Bytes cannot be passed where
// Seconds are expected and bits/s cannot be mistaken for bytes/s. Construction is explicit; values are read
// with .value() in the base unit (seconds, bytes, FLOP, bytes/s, bits/s, FLOP/s). Decimal prefixes are SI
// (1 GB = 1e9 B, 1 TFLOP/s = 1e12 FLOP/s), binary ones IEC (1 GiB = 2^30 B), as in vendor datasheets and
// nccl-tests. Only physically meaningful cross-type operations are defined:
//   Bytes / BytesPerSecond -> Seconds,   Flops / FlopsPerSecond -> Seconds,
//   BytesPerSecond * Seconds -> Bytes,  FlopsPerSecond * Seconds -> Flops,
//   Bytes / Seconds -> BytesPerSecond,   Flops / Seconds -> FlopsPerSecond,
//   BitsPerSecond -> BytesPerSecond only through to_bytes_per_second() (divide by 8).
// The engine's integer Time (sim/engine/time.hpp) is separate; models speak Seconds.
#pragma once

#include <compare>

namespace clustersim::units {

/// A double-valued quantity whose dimension is the tag type. Same-dimension arithmetic only.
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double base_value) : value_(base_value) {}
  /// The value in the SI base unit of this dimension.
  [[nodiscard]] constexpr double value() const { return value_; }

  constexpr Quantity& operator+=(Quantity o) { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value_ -= o.value_; return *this; }
  constexpr Quantity& operator*=(double k) { value_ *= k; return *this; }
  constexpr Quantity& operator/=(double k) { value_ /= k; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator-(Quantity a) { return Quantity(-a.value_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value_ / k); }
  /// Dimensionless ratio of two quantities of the same dimension.
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  double value_ = 0.0;
};

struct SecondsTag {};
struct BytesTag {};
struct FlopsTag {};
struct BytesPerSecondTag {};
struct BitsPerSecondTag {};
struct FlopsPerSecondTag {};
struct UsdTag {};

using Seconds = Quantity<SecondsTag>;               ///< time span, s
using Bytes = Quantity<BytesTag>;                   ///< amount of data, B
using Flops = Quantity<FlopsTag>;                   ///< floating-point operations (a count), FLOP
using BytesPerSecond = Quantity<BytesPerSecondTag>; ///< data rate, B/s
using BitsPerSecond = Quantity<BitsPerSecondTag>;   ///< line rate as networks quote it, bit/s
using FlopsPerSecond = Quantity<FlopsPerSecondTag>; ///< compute rate, FLOP/s
using Usd = Quantity<UsdTag>;                       ///< money, US dollars

constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Bytes operator*(Seconds t, BytesPerSecond r) { return Bytes(r.value() * t.value()); }
constexpr Flops operator*(FlopsPerSecond r, Seconds t) { return Flops(r.value() * t.value()); }
constexpr Flops operator*(Seconds t, FlopsPerSecond r) { return Flops(r.value() * t.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }

/// 8 bits per byte: a 400 Gb/s NDR port carries 50 GB/s.
constexpr BytesPerSecond to_bytes_per_second(BitsPerSecond r) { return BytesPerSecond(r.value() / 8.0); }
constexpr BitsPerSecond to_bits_per_second(BytesPerSecond r) { return BitsPerSecond(r.value() * 8.0); }

// Factories with the unit in the name. Decimal (SI) prefixes unless the name says "gib".
constexpr Seconds seconds(double s) { return Seconds(s); }
constexpr Seconds milliseconds(double ms) { return Seconds(ms * 1e-3); }
constexpr Seconds microseconds(double us) { return Seconds(us * 1e-6); }
constexpr Seconds nanoseconds(double ns) { return Seconds(ns * 1e-9); }
constexpr Seconds minutes(double m) { return Seconds(m * 60.0); }
constexpr Seconds hours(double h) { return Seconds(h * 3600.0); }
constexpr Bytes bytes(double b) { return Bytes(b); }
constexpr Bytes kib(double k) { return Bytes(k * 1024.0); }
constexpr Bytes mib(double m) { return Bytes(m * 1024.0 * 1024.0); }
constexpr Bytes gib(double g) { return Bytes(g * 1024.0 * 1024.0 * 1024.0); }
constexpr Bytes gigabytes(double g) { return Bytes(g * 1e9); }
constexpr Flops flops(double f) { return Flops(f); }
constexpr FlopsPerSecond tflops_per_second(double t) { return FlopsPerSecond(t * 1e12); }
constexpr BytesPerSecond gigabytes_per_second(double g) { return BytesPerSecond(g * 1e9); }
constexpr BytesPerSecond terabytes_per_second(double t) { return BytesPerSecond(t * 1e12); }
constexpr BitsPerSecond gigabits_per_second(double g) { return BitsPerSecond(g * 1e9); }
constexpr BitsPerSecond megabits_per_second(double m) { return BitsPerSecond(m * 1e6); }
constexpr Usd usd(double d) { return Usd(d); }

// Readers in the common display units.
constexpr double in_milliseconds(Seconds s) { return s.value() * 1e3; }
constexpr double in_microseconds(Seconds s) { return s.value() * 1e6; }
constexpr double in_tflops_per_second(FlopsPerSecond r) { return r.value() * 1e-12; }
constexpr double in_gigabytes_per_second(BytesPerSecond r) { return r.value() * 1e-9; }
constexpr double in_gib(Bytes b) { return b.value() / (1024.0 * 1024.0 * 1024.0); }

}  // namespace clustersim::units
