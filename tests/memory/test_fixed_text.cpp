// fixed_text (models/memory/memory_model.hpp), the numbers of the memory verdict, writes what
// snprintf(buffer, 32, "%.<d>f", value) wrote before the tenth round of issue 31, character for character: on
// exact decimal ties (k / 2^n, which glibc rounds to even), values just beside them, integers, powers of ten,
// random bit patterns of every magnitude, subnormals, signed zeros, infinities, NaNs, and numbers whose text is
// longer than the buffer (cut at 31 characters).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "models/memory/memory_model.hpp"

namespace clustersim {
namespace {

std::string printf_fixed(double value, int decimals) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::vector<double> values() {
  std::vector<double> v = {0.0,
                           -0.0,
                           0.05,
                           0.15,
                           0.25,
                           0.35,
                           0.45,
                           1.25,
                           2.5,
                           -2.5,
                           0.125,
                           0.375,
                           74.5,
                           79.99999999,
                           80.0,
                           1e15,
                           1e16 + 2.0,
                           1e22,
                           1e23,
                           1e28,
                           1e29,
                           1e30,
                           -1e29,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN()};
  // Exact ties at one, two and three decimals: k / 2^n for small n, and their neighbours one ulp away.
  for (int n = 1; n <= 12; ++n) {
    for (int k = -300; k <= 3000; k += 7) {
      const double t = std::ldexp(static_cast<double>(k), -n);
      v.push_back(t);
      v.push_back(std::nextafter(t, 1e300));
      v.push_back(std::nextafter(t, -1e300));
    }
  }
  // Decimal halves written in decimal (mostly not exact in binary) and GiB-sized numbers as the verdict has.
  for (int k = 0; k < 20000; ++k) {
    v.push_back(static_cast<double>(k) / 100.0 + 0.005);
    v.push_back(static_cast<double>(k) / 10.0 + 0.05);
    v.push_back(static_cast<double>(k) * 1.073741824 / 3.0);
  }
  // Random bit patterns (xorshift), all magnitudes.
  uint64_t x = 0x2545F4914F6CDD1DULL;
  for (int k = 0; k < 20000; ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v.push_back(std::bit_cast<double>(x));
    v.push_back(static_cast<double>(x >> 11) * 0x1p-40);  // 0 to 8.4e6 with a long fraction
  }
  return v;
}

TEST(FixedText, IsPrintfsFixedConversionIntoThirtyTwoBytes) {
  size_t checked = 0;
  size_t wrong = 0;
  for (const double value : values()) {
    for (const int decimals : {0, 1, 2, 3, 6, 17}) {
      const std::string want = printf_fixed(value, decimals);
      const std::string got = models::fixed_text(value, decimals);
      ++checked;
      if (got == want) continue;
      ADD_FAILURE() << "value " << std::hexfloat << value << " decimals " << decimals << ": " << got << " vs " << want;
      if (++wrong == 20) return;  // enough to see the pattern
    }
  }
  EXPECT_GT(checked, 700000U);
}

}  // namespace
}  // namespace clustersim
