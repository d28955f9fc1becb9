// Strong quantities: the conversions that exist are right, the ones that would confuse units do not compile.
#include <gtest/gtest.h>

#include <type_traits>

#include "models/units.hpp"

namespace clustersim::units {
namespace {

// Names cannot be confused: no implicit conversion between dimensions or from raw doubles.
static_assert(!std::is_convertible_v<Seconds, Bytes>);
static_assert(!std::is_convertible_v<BitsPerSecond, BytesPerSecond>);
static_assert(!std::is_convertible_v<double, Seconds>);
static_assert(!std::is_convertible_v<Flops, FlopsPerSecond>);
static_assert(std::is_same_v<decltype(Bytes(1) / BytesPerSecond(1)), Seconds>);
static_assert(std::is_same_v<decltype(Flops(1) / FlopsPerSecond(1)), Seconds>);
static_assert(std::is_same_v<decltype(Bytes(1) / Bytes(1)), double>);

TEST(Units, NetworkLineRateIsEightBitsPerByte) {
  // One NDR port: 400 Gb/s = 50 GB/s.
  EXPECT_DOUBLE_EQ(to_bytes_per_second(gigabits_per_second(400)).value(), 50e9);
  EXPECT_DOUBLE_EQ(to_bits_per_second(gigabytes_per_second(50)).value(), 400e9);
}

TEST(Units, TransferAndComputeTimes) {
  // 1 GiB at 100 GB/s: 1073741824 / 1e11 s.
  EXPECT_DOUBLE_EQ((gib(1) / gigabytes_per_second(100)).value(), 1073741824.0 / 1e11);
  // 312 TFLOP at 312 TFLOP/s: one second.
  EXPECT_DOUBLE_EQ((flops(312e12) / tflops_per_second(312)).value(), 1.0);
  EXPECT_DOUBLE_EQ(in_milliseconds(microseconds(1500)), 1.5);
  EXPECT_DOUBLE_EQ((gigabytes_per_second(2) * seconds(3)).value(), 6e9);
}

TEST(Units, SameDimensionArithmeticAndOrder) {
  EXPECT_EQ(seconds(1) + milliseconds(500), seconds(1.5));
  EXPECT_LT(mib(1), kib(1025));
  EXPECT_DOUBLE_EQ(hours(1) / minutes(1), 60.0);
}

}  // namespace
}  // namespace clustersim::units
