// Variability at scale: how much slower than its nominal time one synchronous training step runs because every
// synchronisation waits for the slowest GPU (docs/model.md, "Variability at scale").
//
// Model. Every GPU g of the job runs its kernels at a compute-time factor
//
//   X_g = S_v(g) * (1 + sigma Z_g),   Z_g ~ N(0, 1) iid,   S_v = s with probability f, else 1 (per VM v)
//
// for the whole step: sigma is the spread of one SKU's GPUs (silicon and power management), f the fraction of
// VMs that are slow ("fail-slow": a degraded host) and s their slowdown. A tensor-parallel group runs in
// lockstep (two collectives per layer), pipeline stages hand on every microbatch and the data-parallel
// reduction joins every pipeline once a step, so the step's compute runs at the pace of the slowest GPU of the
// job: the factor of the step is X = max_g X_g. Noise from kernel to kernel is not modelled: over the hundreds
// of kernels between two synchronisations it averages out (variances add), while a slow GPU or VM persists.
//
// For a job of M VMs of n GPUs each the maximum has the distribution function (the VMs are independent, and
// inside a VM the GPUs are independent given the VM's state)
//
//   F(x) = P(X <= x) = [ (1 - f) Phi((x - 1) / sigma)^n + f Phi((x / s - 1) / sigma)^n ]^M
//
// so its quantiles are closed form up to one monotone inversion, and its mean is the integral of 1 - F.
// Special cases a test checks by hand: f = 0 gives E[X] = 1 + sigma E[max of M n standard normals] and the
// q-quantile 1 + sigma Phi^-1(q^(1 / (M n))); sigma = 0 gives X = s with probability 1 - (1 - f)^M, else 1.
//
// Sources of the defaults (each a scenario key's default, docs/scenario-format.md):
//  - sigma = 0.015, estimate: Sinha et al., "Not All GPUs Are Created Equal: Characterizing Variability in
//    Large-Scale, Accelerator-Rich Systems", SC'22 (arXiv:2208.11035): over 90 % of the GPUs of five clusters
//    (V100, MI60; SGEMM, ResNet-50, BERT, LAMMPS, PageRank), an 8 % average performance variation (max 22 %)
//    between GPUs of one SKU, outliers up to 1.5x slower than the median. Read as the whisker-to-whisker range
//    of a normal (Q1 - 1.5 IQR to Q3 + 1.5 IQR = 4 IQR = 5.4 sigma), 8 % is sigma = 1.5 %.
//  - f = 0.005 and s = 1.10, measured: MegaScale (Jiang et al., NSDI'24) Sec. 5.1 and 6.3: about 0.5 % of the
//    machines of a 10,000-GPU job were "computational stragglers", a host taking about 10 % longer for the same
//    forward computation, consistently across runs.
// Cross-checks (not parameters): Lin et al., "Understanding Stragglers in Large Model Training Using What-if
// Analysis", OSDI'25 (ByteDance, 3,079 jobs of >= 128 GPUs): 42.5 % of jobs were slowed >= 10 %, but mostly by
// pipeline-stage imbalance, sequence-length imbalance and Python GC; a faulty worker dominated only 1.7 % of the
// slowed jobs (with an average slowdown of 3.04). Stage imbalance is what the step program computes already;
// the other two are not variability of the hardware.
#pragma once

#include <cstdint>
#include <string>

namespace clustersim::models {

/// Default sigma: see the file comment (Sinha et al., SC'22; estimate).
inline constexpr double kGpuComputeCv = 0.015;
/// Default f: see the file comment (MegaScale, NSDI'24, Sec. 5.1; measured).
inline constexpr double kSlowVmFraction = 0.005;
/// Default s: see the file comment (MegaScale, NSDI'24, Sec. 6.3; measured).
inline constexpr double kSlowVmFactor = 1.10;

/// Where the default sigma comes from, as reports print it.
inline constexpr const char* kGpuComputeCvSource =
    "estimate from Sinha et al., SC'22: 8 % average spread between GPUs of one SKU";
/// Where the default f and s come from, as reports print them.
inline constexpr const char* kSlowVmSource =
    "MegaScale, NSDI'24, Sec. 5.1/6.3: about 0.5 % of hosts about 10 % slower";

/// The variability of a cluster's GPUs (dimensionless factors on compute time), with where its numbers come
/// from.
struct VariabilitySpec {
  double gpu_compute_cv = kGpuComputeCv;       ///< sigma >= 0: std. deviation of a GPU's compute-time factor
  double slow_vm_fraction = kSlowVmFraction;   ///< f in [0, 1]: probability that a VM is slow
  double slow_vm_factor = kSlowVmFactor;       ///< s >= 1: compute-time factor of a slow VM's GPUs
  std::string gpu_compute_cv_source = kGpuComputeCvSource;  ///< of sigma
  std::string slow_vm_source = kSlowVmSource;                ///< of f and s
};

/// Phi(z), the standard normal distribution function (0.5 erfc(-z / sqrt 2)). Never throws.
double standard_normal_cdf(double z);
/// Phi^-1(p) for p in (0, 1): Wichura's algorithm AS 241 (PPND16, Applied Statistics 37(3), 1988), relative
/// error about 1e-16. Throws std::invalid_argument outside (0, 1).
double standard_normal_quantile(double p);
/// E[max of n iid standard normals] = integral of x n phi(x) Phi(x)^(n-1) dx, by quadrature (within 1e-9).
/// 0 for n = 1; 1 / sqrt(pi) for n = 2; 3 / (2 sqrt(pi)) for n = 3. Throws std::invalid_argument for n < 1.
double expected_max_standard_normal(int64_t n);

/// The distribution of a step's compute-time factor X (the file comment): the slowest of `vms` x
/// `gpus_per_vm` GPUs. Throws std::invalid_argument for vms or gpus_per_vm < 1, sigma < 0, f outside [0, 1],
/// s < 1, or a non-finite value.
class SlowestGpuFactor {
 public:
  SlowestGpuFactor(const VariabilitySpec& spec, int64_t vms, int64_t gpus_per_vm);

  /// F(x) = P(X <= x).
  [[nodiscard]] double cdf(double x) const;
  /// The q-quantile of X, q in (0, 1): F^-1(q) by bisection to 1e-13 of x (exact in the two closed-form
  /// cases). Throws std::invalid_argument outside (0, 1).
  [[nodiscard]] double quantile(double q) const;
  /// E[X] = integral of 1 - F over x >= 0 (quadrature; within 1e-9).
  [[nodiscard]] double mean() const;
  /// P(at least one of the VMs is slow) = 1 - (1 - f)^M.
  [[nodiscard]] double probability_any_slow_vm() const;

 private:
  /// P(X > x) = 1 - F(x), accurate where F is close to 1.
  [[nodiscard]] double exceedance(double x) const;
  VariabilitySpec spec_;
  int64_t vms_;
  int64_t gpus_per_vm_;
};

}  // namespace clustersim::models
