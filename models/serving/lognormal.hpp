// The lognormal length model of serving workloads (issue 25): request lengths are skewed and spread over orders of
// magnitude (Azure's 2023 conversation trace, scenarios/serving/traces: median 1,020 prompt tokens, standard
// deviation of ln(length) 0.99), and a benchmark's sampler truncates them (vLLM's and SGLang's
// sample_sharegpt_requests drop prompts over 1,024 tokens and prompt + output over 2,048; every sampler caps at the
// model's context). Pure functions; the draws are sim/serving/workload's.
#pragma once

namespace clustersim::models {

/// The probability a lognormal of `median` (exp(mu), tokens) and `sigma` (the standard deviation of ln(length))
/// puts in [low, high] (tokens, 0 < low <= high; high may be +infinity): Phi(zb) - Phi(za) with z = (ln x -
/// ln median) / sigma (the lognormal's CDF), computed on the side of the median where neither tail is near 1.
/// Phi(z) = erfc(-z / sqrt 2) / 2.
double lognormal_mass(double median, double sigma, double low, double high);

/// The least probability a truncated lognormal's [low, high] may hold: below it the inversion that draws from it
/// loses its precision (and a benchmark that would drop nearly every request is not what the lengths describe).
inline constexpr double kMinLognormalMass = 1e-9;

}  // namespace clustersim::models
