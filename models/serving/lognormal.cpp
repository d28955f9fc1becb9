#include "models/serving/lognormal.hpp"

#include <cmath>

namespace clustersim::models {

double lognormal_mass(double median, double sigma, double low, double high) {
  const double za = std::log(low / median) / sigma, zb = std::log(high / median) / sigma;
  const double r2 = std::sqrt(2.0);
  // Above the median, Q(za) - Q(zb) with Q(z) = erfc(z / sqrt 2) / 2; else Phi(zb) - Phi(za).
  return za > 0.0 ? 0.5 * (std::erfc(za / r2) - std::erfc(zb / r2))
                  : 0.5 * (std::erfc(-zb / r2) - std::erfc(-za / r2));
}

}  // namespace clustersim::models
