// SplitMix64's output function (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014): the state x advanced by the golden-ratio increment 0x9e3779b97f4a7c15, then Stafford's
// "Mix13" finaliser. A bijection on 64-bit integers whose outputs pass BigCrush when x counts up; used wherever
// clustersim needs a well-spread hash of an integer (engine fingerprints, route-cache and flow keys, the
// seeds of sweep points). Changing it changes fingerprints and sweep seeds: the tests pin known outputs.
#pragma once

#include <cstdint>

namespace clustersim {

/// splitmix64(0) = 0xe220a8397b1dcdaf (SplitMix64's first output from state 0). Unitless; never throws.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static_assert(splitmix64(0) == 0xe220a8397b1dcdafULL);

}  // namespace clustersim
