// Variability at scale (models/variability): the distribution of the slowest GPU's compute factor against hand
// calculations.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "models/variability/variability.hpp"

namespace clustersim {
namespace {

using models::SlowestGpuFactor;
using models::VariabilitySpec;

VariabilitySpec spec(double sigma, double f, double s) { return VariabilitySpec{sigma, f, s, "", ""}; }

TEST(StandardNormal, QuantileMatchesTablesAndInvertsTheDistribution) {
  // Tabulated quantiles (Abramowitz and Stegun, Table 26.5): 1.959963985 (97.5 %), 2.326347874 (99 %).
  EXPECT_NEAR(models::standard_normal_quantile(0.975), 1.959963984540054, 1e-13);
  EXPECT_NEAR(models::standard_normal_quantile(0.99), 2.326347874040841, 1e-13);
  EXPECT_EQ(models::standard_normal_quantile(0.5), 0.0);
  EXPECT_NEAR(models::standard_normal_quantile(0.025), -1.959963984540054, 1e-13);
  for (double p : {1e-12, 1e-6, 0.01, 0.2, 0.45, 0.8, 0.999, 1.0 - 1e-9}) {
    EXPECT_NEAR(models::standard_normal_cdf(models::standard_normal_quantile(p)) / p, 1.0, 1e-12) << p;
  }
  EXPECT_THROW(models::standard_normal_quantile(0.0), std::invalid_argument);
  EXPECT_THROW(models::standard_normal_quantile(1.0), std::invalid_argument);
}

TEST(ExpectedMaximum, OfNStandardNormalsMatchesClosedForms) {
  const double pi = std::numbers::pi;
  EXPECT_NEAR(models::expected_max_standard_normal(1), 0.0, 1e-10);
  // max(Z1, Z2) = (Z1 + Z2 + |Z1 - Z2|) / 2 and Z1 - Z2 ~ N(0, 2): E = sqrt(2) sqrt(2 / pi) / 2 = 1 / sqrt(pi).
  EXPECT_NEAR(models::expected_max_standard_normal(2), 1.0 / std::sqrt(pi), 1e-9);
  // n = 3: 3 / (2 sqrt(pi)); n = 4: (3 / sqrt(pi)) (1/2 + arcsin(1/3) / pi) (David and Nagaraja, Order
  // Statistics, 3rd ed., Sec. 3.2).
  EXPECT_NEAR(models::expected_max_standard_normal(3), 3.0 / (2.0 * std::sqrt(pi)), 1e-9);
  EXPECT_NEAR(models::expected_max_standard_normal(4), 3.0 / std::sqrt(pi) * (0.5 + std::asin(1.0 / 3.0) / pi), 1e-9);
  // Large n: Blom's approximation Phi^-1((n - 0.375) / (n + 0.25)) is within 0.5 % at 16,384.
  const double blom = models::standard_normal_quantile((16384.0 - 0.375) / (16384.0 + 0.25));
  EXPECT_NEAR(models::expected_max_standard_normal(16384) / blom, 1.0, 0.005);
  EXPECT_THROW(models::expected_max_standard_normal(0), std::invalid_argument);
}

TEST(SlowestGpuFactor, ExpectedMaximumOfNJitteredRanks) {
  // No slow VM: X = 1 + sigma max of N normals. Two VMs of one GPU, sigma = 2 %: E[X] = 1 + 0.02 / sqrt(pi)
  // = 1.011284; the median solves Phi(z)^2 = 0.5: z = Phi^-1(sqrt(0.5)) = 0.544952, X = 1.010899.
  const SlowestGpuFactor two(spec(0.02, 0.0, 1.1), 2, 1);
  EXPECT_NEAR(two.mean(), 1.0 + 0.02 / std::sqrt(std::numbers::pi), 1e-9);
  EXPECT_NEAR(two.quantile(0.5), 1.0 + 0.02 * 0.5449521356, 1e-9);
  EXPECT_NEAR(two.cdf(two.quantile(0.5)), 0.5, 1e-12);
  // 16,384 GPUs (2,048 VMs of 8) at the default sigma: 1 + 0.015 E[max of 16,384] and the 99th percentile
  // 1 + sigma Phi^-1(0.99^(1/16384)).
  const SlowestGpuFactor many(spec(0.015, 0.0, 1.1), 2048, 8);
  EXPECT_NEAR(many.mean(), 1.0 + 0.015 * models::expected_max_standard_normal(16384), 1e-9);
  EXPECT_NEAR(many.quantile(0.99), 1.0 + 0.015 * models::standard_normal_quantile(std::pow(0.99, 1.0 / 16384.0)), 1e-9);
  // The slowest of more GPUs is slower.
  EXPECT_LT(SlowestGpuFactor(spec(0.015, 0.0, 1.1), 32, 8).mean(), many.mean());
}

TEST(SlowestGpuFactor, SlowVmsAloneGiveTheStepTheirSlowdownWithProbabilityOneMinusOneMinusFToTheM) {
  // sigma = 0: X = s if any of the M VMs is slow, else 1. f = 1 %, s = 1.2, M = 100: P(any) = 1 - 0.99^100 =
  // 0.633968, E[X] = 1 + 0.2 x 0.633968 = 1.126794; the 30th percentile is 1 (0.3 <= 0.99^100 = 0.366), the
  // median 1.2.
  const SlowestGpuFactor x(spec(0.0, 0.01, 1.2), 100, 8);
  EXPECT_NEAR(x.probability_any_slow_vm(), 0.633968, 1e-6);
  EXPECT_NEAR(x.mean(), 1.126794, 1e-6);
  EXPECT_EQ(x.quantile(0.3), 1.0);
  EXPECT_EQ(x.quantile(0.5), 1.2);
}

TEST(SlowestGpuFactor, OneGpuMixesANormalAndASlowVm) {
  // One VM of one GPU: E[X] = (1 - f) E[1 + sigma Z] + f E[s (1 + sigma Z)] = 1 + f (s - 1), and
  // F(x) = (1 - f) Phi((x - 1) / sigma) + f Phi((x / s - 1) / sigma).
  const SlowestGpuFactor x(spec(0.015, 0.3, 1.5), 1, 1);
  EXPECT_NEAR(x.mean(), 1.0 + 0.3 * 0.5, 1e-9);
  const double at = 1.02;
  EXPECT_NEAR(x.cdf(at), 0.7 * models::standard_normal_cdf(0.02 / 0.015) +
                             0.3 * models::standard_normal_cdf((at / 1.5 - 1.0) / 0.015), 1e-14);
  for (double q : {0.1, 0.5, 0.69, 0.75, 0.99}) EXPECT_NEAR(x.cdf(x.quantile(q)), q, 1e-10) << q;
  // Narrow GPU spread, the slow VMs far away: the mean is 1 + (s - 1) P(any slow VM) up to sigma's share.
  const SlowestGpuFactor apart(spec(1e-4, 0.2, 1.1), 3, 2);
  EXPECT_NEAR(apart.mean(), 1.0 + 0.1 * (1.0 - std::pow(0.8, 3)), 1e-3);
  EXPECT_THROW(SlowestGpuFactor(spec(0.01, 1.5, 1.1), 1, 1), std::invalid_argument);
  EXPECT_THROW(SlowestGpuFactor(spec(0.01, 0.1, 0.9), 1, 1), std::invalid_argument);
  EXPECT_THROW(SlowestGpuFactor(spec(0.01, 0.1, 1.1), 0, 1), std::invalid_argument);
  EXPECT_THROW((void)x.quantile(1.0), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim
