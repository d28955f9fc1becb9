// Reproducible random streams: SplitMix64 (Steele, Lea, Flood, OOPSLA 2014) counting from a state derived from
// (seed, replication, stream), so that every replication and every kind of event has its own stream and a run
// does not depend on the order in which streams are drawn. The job simulation (docs/job.md, "Randomness") and the
// serving workloads (docs/serving.md) draw from it; the formulas are fixed: changing them changes results.
//
//   state_0 = mix(mix(mix(seed + G) ^ (replication G + 0x2545f4914f6cdd1d)) ^ (stream 0x9e6c63d0676a9a99 + 1))
//   next    = mix(state += G),  G = 0x9e3779b97f4a7c15, mix = SplitMix64's finaliser
//   uniform = next >> 11 on the 2^-53 grid, in [0, 1)
#pragma once

#include <cmath>
#include <cstdint>

namespace clustersim::sim {

class RandomStream {
 public:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

  /// SplitMix64's finaliser (Stafford's Mix13).
  static constexpr uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  RandomStream(uint64_t seed, int64_t replication, uint64_t stream) {
    uint64_t h = mix(seed + kGolden);
    h = mix(h ^ (static_cast<uint64_t>(replication) * kGolden + 0x2545f4914f6cdd1dULL));
    state_ = mix(h ^ (stream * 0x9e6c63d0676a9a99ULL + 1));
  }
  uint64_t next() {
    state_ += kGolden;
    return mix(state_);
  }
  /// Uniform in [0, 1) on the 2^-53 grid.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Exponential with the given mean: -mean ln(1 - u) (1 - u is exact on the 2^-53 grid, and in (0, 1]).
  double exponential_mean(double mean) { return -std::log(1.0 - uniform()) * mean; }
  /// Standard normal by the Box-Muller transform (one of the pair; two uniforms per draw).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Gamma with `shape` > 0 and mean shape x scale: Marsaglia and Tsang's method (ACM TOMS 26(3), 2000), with
  /// Gamma(a) = Gamma(a + 1) U^(1/a) for shape < 1.
  double gamma(double shape, double scale) {
    if (shape < 1.0) {
      const double u = 1.0 - uniform();
      return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
      double x = 0.0, v = 0.0;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = 1.0 - uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * scale;
    }
  }

 private:
  uint64_t state_ = 0;
};

}  // namespace clustersim::sim
