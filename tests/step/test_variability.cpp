// Variability at scale (models/variability, sim/step/variability_draws): the distribution of the slowest GPU's
// compute factor against hand calculations, the seeded per-GPU draws of full fidelity, and the two fidelities
// against each other on a symmetric scenario.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/variability/variability.hpp"
#include "sim/engine/random_stream.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "sim/step/variability_draws.hpp"

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

TEST(VariabilityDraws, EachGroupTakesItsSlowestGpuFromItsOwnStream) {
  // TP 2 x PP 2 x DP 2 on VMs of 4 GPUs: rank = t + 2 (r + 2 k), so group (stage k, replica r) holds GPUs
  // 4k + 2r and 4k + 2r + 1, both on VM k.
  models::ParallelismConfig p;
  p.tensor = 2;
  p.pipeline = 2;
  p.data = 2;
  const VariabilitySpec v = spec(0.02, 0.5, 1.3);
  const uint64_t seed = 7;
  const std::vector<double> drawn = sim::drawn_compute_factors(v, p, 4, seed);
  ASSERT_EQ(drawn.size(), 4u);
  for (int64_t k = 0; k < 2; ++k) {
    const double vm = sim::RandomStream(seed, k, 2).uniform() < 0.5 ? 1.3 : 1.0;
    for (int64_t r = 0; r < 2; ++r) {
      double slowest = 0.0;
      for (int64_t g : {4 * k + 2 * r, 4 * k + 2 * r + 1}) {
        slowest = std::max(slowest, vm * (1.0 + 0.02 * sim::RandomStream(seed, g, 1).normal()));
      }
      EXPECT_EQ(drawn[static_cast<size_t>(k * 2 + r)], slowest) << k << " " << r;
    }
  }
  EXPECT_EQ(sim::drawn_compute_factors(v, p, 4, seed), drawn);
  EXPECT_NE(sim::drawn_compute_factors(v, p, 4, seed + 1), drawn);
  // No spread and no slow VM: every group at exactly 1.
  for (double f : sim::drawn_compute_factors(spec(0.0, 0.0, 1.1), p, 4, seed)) EXPECT_EQ(f, 1.0);
  EXPECT_THROW(sim::drawn_compute_factors(spec(0.2, 0.0, 1.1), p, 4, seed), std::invalid_argument);
}

TEST(VariabilityFidelity, SeededFullFidelityDrawsAverageToReplicaFidelity) {
  // A symmetric scenario with variability on. Replica fidelity runs every stage at E[X] and gives the step's
  // p50 and p99 at X's quantiles; full fidelity draws every GPU and VM from the seed. Over 200 seeds the mean
  // and the median of the drawn steps agree with replica's within 0.5 %: the difference is that a drawn slow
  // GPU slows its own pipeline stage, not every stage (the warm-up and drain of the others run at speed), and
  // the sampling error of 200 draws. 5 % slow VMs, so that a slow VM is in 19 % of the draws of 4 VMs.
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  const std::filesystem::path file =
      std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios/megatron/sc21-table1-1p7b-32gpus.toml";
  const std::vector<std::string> on{"simulation.variability=on", "simulation.slow_vm_fraction=0.05"};
  std::vector<std::string> replica_keys = on, full_keys = on;
  full_keys.push_back("simulation.fidelity=full");
  const sim::Scenario replica = sim::load_scenario(file, replica_keys, catalog);
  const sim::StepReport r = sim::simulate_scenario(replica, catalog);
  ASSERT_TRUE(r.variability);
  EXPECT_FALSE(r.variability->drawn);
  EXPECT_GT(r.step_time.value(), r.variability->nominal_step_time.value());
  EXPECT_GE(r.variability->step_time_p99.value(), r.variability->step_time_p50.value());

  sim::Scenario full = sim::load_scenario(file, full_keys, catalog);
  const models::VmSize& vm = catalog.vm_size(full.cluster.vm_size);
  sim::StepSimulator simulator;
  simulator.set_record_spans(false);
  std::vector<double> steps;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    full.simulation.seed = seed;
    const sim::StepReport d = simulator.simulate(sim::step_setup_of(full, catalog), vm, catalog.device(vm.device),
                                                 sim::network_setup_of(full));
    ASSERT_TRUE(d.variability && d.variability->drawn);
    steps.push_back(d.step_time.value());
  }
  double mean = 0.0;
  for (double s : steps) mean += s / static_cast<double>(steps.size());
  std::sort(steps.begin(), steps.end());
  const double median = 0.5 * (steps[99] + steps[100]);
  // Measured: mean 3.7133 s against 3.7164 s, median 3.6586 s against 3.6606 s (nominal 3.5456 s).
  EXPECT_NEAR(mean / r.step_time.value(), 1.0, 0.005);
  EXPECT_NEAR(median / r.variability->step_time_p50.value(), 1.0, 0.005);
}

TEST(VariabilityFidelity, OffLeavesTheStepAsBefore) {
  const models::Catalog catalog = models::Catalog::load(models::Catalog::default_directory());
  const std::filesystem::path file =
      std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios/megatron/sc21-table1-1p7b-32gpus.toml";
  const sim::StepReport off = sim::simulate_scenario(sim::load_scenario(file, {}, catalog), catalog);
  EXPECT_FALSE(off.variability);
  // On with no spread and no slow VM: the factor is exactly 1 and so is every step time.
  const sim::StepReport none = sim::simulate_scenario(
      sim::load_scenario(file,
                         {"simulation.variability=on", "simulation.gpu_compute_cv=0", "simulation.slow_vm_fraction=0"},
                         catalog),
      catalog);
  ASSERT_TRUE(none.variability);
  EXPECT_EQ(none.step_time.value(), off.step_time.value());
  EXPECT_EQ(none.pipeline.fingerprint, off.pipeline.fingerprint);
  EXPECT_EQ(none.variability->step_time_p99.value(), off.step_time.value());
}

}  // namespace
}  // namespace clustersim
