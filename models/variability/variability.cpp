#include "models/variability/variability.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace clustersim::models {

namespace {

/// Half-width of the window around 1 (and around s) outside which a GPU's factor lies with probability below
/// Phi(-13) = 6e-39: the quadrature and the bisection only look inside it.
constexpr double kWindowSigmas = 13.0;
/// Simpson intervals per window: a step of 26 sigma / 4096 = 0.006 sigma resolves the maximum's density, whose
/// width is about sigma / sqrt(2 ln N) >= 0.2 sigma up to N = 1e9 GPUs.
constexpr int kSimpsonIntervals = 4096;

/// 1 - Phi(z)^n: the probability that the largest of n iid standard normals exceeds z, accurate near 0 and 1.
double max_exceeds(double z, int64_t n) {
  const double upper = 0.5 * std::erfc(z / std::sqrt(2.0));  // 1 - Phi(z)
  return -std::expm1(static_cast<double>(n) * std::log1p(-upper));
}

/// Composite Simpson rule of f over [a, b] with kSimpsonIntervals intervals.
template <class F>
double simpson(const F& f, double a, double b) {
  const double h = (b - a) / kSimpsonIntervals;
  double sum = f(a) + f(b);
  for (int i = 1; i < kSimpsonIntervals; ++i) sum += (i % 2 == 1 ? 4.0 : 2.0) * f(a + h * i);
  return sum * h / 3.0;
}

}  // namespace

double standard_normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double standard_normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) {
    throw std::invalid_argument("standard_normal_quantile: p must be in (0, 1), got " + std::to_string(p));
  }
  // Wichura, AS 241 PPND16 (Applied Statistics 37(3):477-484, 1988).
  const double q = p - 0.5;
  if (std::abs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    const double num =
        (((((((2.5090809287301226727e+3 * r + 3.3430575583588128105e+4) * r + 6.7265770927008700853e+4) * r +
             4.5921953931549871457e+4) * r + 1.3731693765509461125e+4) * r + 1.9715909503065514427e+3) * r +
          1.3314166789178437745e+2) * r + 3.3871328727963666080e+0);
    const double den =
        (((((((5.2264952788528545610e+3 * r + 2.8729085735721942674e+4) * r + 3.9307895800092710610e+4) * r +
             2.1213794301586595867e+4) * r + 5.3941960214247511077e+3) * r + 6.8718700749205790830e+2) * r +
          4.2313330701600911252e+1) * r + 1.0);
    return q * num / den;
  }
  double r = std::sqrt(-std::log(q < 0.0 ? p : 1.0 - p));
  double value = 0.0;
  if (r <= 5.0) {
    r -= 1.6;
    value = (((((((7.74545014278341407640e-4 * r + 2.27238449892691845833e-2) * r + 2.41780725177450611770e-1) * r +
                1.27045825245236838258e+0) * r + 3.64784832476320460504e+0) * r + 5.76949722146069140550e+0) * r +
              4.63033784615654529590e+0) * r + 1.42343711074968357734e+0) /
            (((((((1.05075007164441684324e-9 * r + 5.47593808499534494600e-4) * r + 1.51986665636164571966e-2) * r +
                 1.48103976427480074590e-1) * r + 6.89767334985100004550e-1) * r + 1.67638483018380384940e+0) * r +
              2.05319162663775882187e+0) * r + 1.0);
  } else {
    r -= 5.0;
    value = (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 1.24266094738807843860e-3) * r +
                2.65321895265761230930e-2) * r + 2.96560571828504891230e-1) * r + 1.78482653991729133580e+0) * r +
              5.46378491116411436990e+0) * r + 6.65790464350110377720e+0) /
            (((((((2.04426310338993978564e-15 * r + 1.42151175831644588870e-7) * r + 1.84631831751005468180e-5) * r +
                 7.86869131145613259100e-4) * r + 1.48753612908506148525e-2) * r + 1.36929880922735805310e-1) * r +
              5.99832206555887937690e-1) * r + 1.0);
  }
  return q < 0.0 ? -value : value;
}

double expected_max_standard_normal(int64_t n) {
  if (n < 1) throw std::invalid_argument("expected_max_standard_normal: n must be >= 1");
  // The factor 1 + Z_max of n GPUs with sigma = 1 and no slow VM.
  return SlowestGpuFactor(VariabilitySpec{1.0, 0.0, 1.0, "", ""}, 1, n).mean() - 1.0;
}

SlowestGpuFactor::SlowestGpuFactor(const VariabilitySpec& spec, int64_t vms, int64_t gpus_per_vm)
    : spec_(spec), vms_(vms), gpus_per_vm_(gpus_per_vm) {
  if (vms < 1 || gpus_per_vm < 1) throw std::invalid_argument("SlowestGpuFactor: needs at least one VM and one GPU");
  if (!(spec.gpu_compute_cv >= 0.0) || !std::isfinite(spec.gpu_compute_cv)) {
    throw std::invalid_argument("SlowestGpuFactor: the GPU compute-time spread must be finite and >= 0");
  }
  if (!(spec.slow_vm_fraction >= 0.0 && spec.slow_vm_fraction <= 1.0)) {
    throw std::invalid_argument("SlowestGpuFactor: the slow-VM fraction must be in [0, 1]");
  }
  if (!(spec.slow_vm_factor >= 1.0) || !std::isfinite(spec.slow_vm_factor)) {
    throw std::invalid_argument("SlowestGpuFactor: the slow-VM factor must be finite and >= 1");
  }
}

double SlowestGpuFactor::probability_any_slow_vm() const {
  return -std::expm1(static_cast<double>(vms_) * std::log1p(-spec_.slow_vm_fraction));
}

double SlowestGpuFactor::exceedance(double x) const {
  const double sigma = spec_.gpu_compute_cv, f = spec_.slow_vm_fraction, s = spec_.slow_vm_factor;
  // P(the slowest GPU of one VM exceeds x), for a normal and for a slow VM.
  double normal = 0.0, slow = 0.0;
  if (sigma == 0.0) {
    normal = x < 1.0 ? 1.0 : 0.0;
    slow = x < s ? 1.0 : 0.0;
  } else {
    normal = max_exceeds((x - 1.0) / sigma, gpus_per_vm_);
    slow = max_exceeds((x / s - 1.0) / sigma, gpus_per_vm_);
  }
  const double vm = (1.0 - f) * normal + f * slow;
  return -std::expm1(static_cast<double>(vms_) * std::log1p(-vm));
}

double SlowestGpuFactor::cdf(double x) const { return 1.0 - exceedance(x); }

double SlowestGpuFactor::quantile(double q) const {
  if (!(q > 0.0 && q < 1.0)) {
    throw std::invalid_argument("SlowestGpuFactor::quantile: q must be in (0, 1), got " + std::to_string(q));
  }
  const double sigma = spec_.gpu_compute_cv, f = spec_.slow_vm_fraction, s = spec_.slow_vm_factor;
  if (sigma == 0.0) return q <= 1.0 - probability_any_slow_vm() ? 1.0 : s;
  if (f == 0.0 || s == 1.0) {
    // 1 + sigma Phi^-1(q^(1/N)), with 1 - q^(1/N) = -expm1(ln q / N) kept exact for large N.
    const double n = static_cast<double>(vms_) * static_cast<double>(gpus_per_vm_);
    return 1.0 - sigma * standard_normal_quantile(-std::expm1(std::log(q) / n));
  }
  // F is continuous and increasing: bisection on P(X > x) = 1 - q inside the windows' hull.
  double lo = 1.0 - kWindowSigmas * sigma, hi = s * (1.0 + kWindowSigmas * sigma);
  for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (exceedance(mid) > 1.0 - q ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double SlowestGpuFactor::mean() const {
  const double sigma = spec_.gpu_compute_cv, f = spec_.slow_vm_fraction, s = spec_.slow_vm_factor;
  if (sigma == 0.0) return 1.0 + (s - 1.0) * probability_any_slow_vm();
  // E[X] = lo + integral from lo of P(X > x) dx, lo below every GPU's factor (P(X < lo) < 1e-38). P(X > x) moves
  // only near 1 (normal VMs) and near s (slow VMs): Simpson over those windows; between them it is constant.
  const auto tail = [this](double x) { return exceedance(x); };
  const double w = kWindowSigmas * sigma;
  const double lo = 1.0 - w;
  if (f == 0.0 || f == 1.0 || s == 1.0) {
    const double centre = f == 1.0 ? s : 1.0;
    return centre * (1.0 - w) + simpson(tail, centre * (1.0 - w), centre * (1.0 + w));
  }
  const double normal_hi = 1.0 + w, slow_lo = s * (1.0 - w), slow_hi = s * (1.0 + w);
  if (normal_hi >= slow_lo) return lo + simpson(tail, lo, slow_hi);
  const double gap = slow_lo - normal_hi;
  return lo + simpson(tail, lo, normal_hi) + gap * exceedance(0.5 * (normal_hi + slow_lo)) +
         simpson(tail, slow_lo, slow_hi);
}

}  // namespace clustersim::models
