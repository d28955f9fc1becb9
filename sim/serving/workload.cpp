#include "sim/serving/workload.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/special_functions/erf.hpp>

#include "models/serving/lognormal.hpp"
#include "sim/engine/random_stream.hpp"

namespace clustersim::sim {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("workload: " + what);
}

// Stream 4 is the fleet's spot evictions (sim/serving/fleet.hpp).
enum WorkloadStream : uint64_t { kArrivalStream = 1, kPromptStream = 2, kOutputStream = 3, kContentStream = 5 };

/// The standard score of length x under a lognormal of `median` and `sigma`.
double standard_score(double x, double median, double sigma) { return std::log(x / median) / sigma; }

/// A standard normal draw conditioned on [za, zb], by inversion of one uniform u: z = Phi^-1(Phi(za) + u (Phi(zb) -
/// Phi(za))) with Phi(z) = erfc(-z / sqrt 2) / 2 and Phi^-1(p) = -sqrt 2 erfc^-1(2 p). An interval above the mean is
/// inverted through the survival function Q(z) = erfc(z / sqrt 2) / 2 (z = sqrt 2 erfc^-1(2 q)), where Phi's values
/// crowd at 1.
double truncated_standard_normal(double za, double zb, RandomStream& rng) {
  const double u = rng.uniform();
  const double r2 = std::sqrt(2.0);
  if (za > 0.0) {
    const double qa = 0.5 * std::erfc(za / r2), qb = 0.5 * std::erfc(zb / r2);
    return r2 * boost::math::erfc_inv(2.0 * (qa - u * (qa - qb)));
  }
  const double pa = 0.5 * std::erfc(-za / r2), pb = 0.5 * std::erfc(-zb / r2);
  return -r2 * boost::math::erfc_inv(2.0 * (pa + u * (pb - pa)));
}

int64_t draw(const LengthDistribution& d, RandomStream& rng) {
  double x = d.value;
  switch (d.kind) {
    case LengthDistribution::Kind::fixed: break;
    case LengthDistribution::Kind::uniform:
      x = std::floor(d.low + rng.uniform() * (d.high - d.low + 1.0));
      break;
    case LengthDistribution::Kind::lognormal:
      if (d.truncated) {
        const double z = truncated_standard_normal(standard_score(d.low, d.median, d.sigma),
                                                   standard_score(d.high, d.median, d.sigma), rng);
        x = std::clamp(d.median * std::exp(d.sigma * z), d.low, d.high);  // the clamp only absorbs rounding
      } else {
        x = d.median * std::exp(d.sigma * rng.normal());
      }
      break;
  }
  const double clamped = std::clamp(std::round(x), 1.0, static_cast<double>(d.max_tokens));
  return static_cast<int64_t>(clamped);
}

void check(const LengthDistribution& d, const char* what) {
  const std::string w(what);
  require(d.max_tokens >= 1, w + ": max_tokens must be >= 1");
  switch (d.kind) {
    case LengthDistribution::Kind::fixed: require(d.value >= 1, w + ": the length must be >= 1"); break;
    case LengthDistribution::Kind::uniform:
      require(d.low >= 1 && d.low <= d.high, w + ": need 1 <= low <= high");
      break;
    case LengthDistribution::Kind::lognormal:
      require(d.median >= 1 && d.sigma > 0 && std::isfinite(d.sigma), w + ": need median >= 1 and sigma > 0");
      if (d.truncated) {
        require(d.low >= 1 && d.low <= d.high, w + ": need 1 <= low <= high");
        require(models::lognormal_mass(d.median, d.sigma, d.low, d.high) >= models::kMinLognormalMass,
                w + ": the lognormal puts almost no probability in [low, high]");
      }
      break;
  }
}

/// Appends session `session` starting at `t` (SharedPrefix, Sessions): its system prompt, then its turns, each
/// turn's prompt the conversation so far plus new tokens; stops at w.requests.
void add_session(const SyntheticWorkload& w, double t, int64_t session, RandomStream& prompts, RandomStream& outputs,
                 RandomStream& content, std::vector<ServingRequest>& out) {
  const SharedPrefix& sp = w.system_prompt;
  int64_t prefix_id = -1, prefix_tokens = 0;
  if (sp.tokens > 0 && (sp.share >= 1.0 || content.uniform() < sp.share)) {
    prefix_tokens = sp.tokens;
    prefix_id = sp.count > 1 ? std::min<int64_t>(sp.count - 1, static_cast<int64_t>(content.uniform() *
                                                                                    static_cast<double>(sp.count)))
                             : 0;
  }
  const bool multi = w.sessions.turns > 1;
  int64_t context = prefix_tokens, previous = -1;
  for (int64_t turn = 0; turn < w.sessions.turns && (!w.requests || static_cast<int64_t>(out.size()) < *w.requests);
       ++turn) {
    const int64_t fresh = draw(w.prompt, prompts), output = draw(w.output, outputs);
    const double think = turn > 0 && w.sessions.think_time_s > 0 ? content.exponential_mean(w.sessions.think_time_s)
                                                                 : 0.0;
    out.push_back({t, context + fresh, output, prefix_id, prefix_tokens, multi ? session : -1, previous, think});
    previous = static_cast<int64_t>(out.size()) - 1;
    context += fresh + output;
  }
}

}  // namespace

std::vector<ServingRequest> generate_workload(const SyntheticWorkload& w) {
  const bool at_once = w.arrivals.kind == ArrivalProcess::Kind::at_once;
  require(!at_once || w.requests.has_value(), "arrivals at once need a request count");
  require(!w.requests || *w.requests >= 1, "the request count must be >= 1");
  if (!at_once) {
    require(w.arrivals.rate_per_s > 0 && std::isfinite(w.arrivals.rate_per_s), "the arrival rate must be positive");
    require(w.arrivals.cv > 0 && std::isfinite(w.arrivals.cv), "the arrivals' cv must be positive");
    require(w.duration_s > 0 && std::isfinite(w.duration_s), "the duration must be positive");
  }
  check(w.prompt, "prompt");
  check(w.output, "output");
  const SharedPrefix& sp = w.system_prompt;
  require(sp.tokens >= 0 && sp.share >= 0 && sp.share <= 1 && sp.count >= 1,
          "the system prompt needs tokens >= 0, a share in [0, 1] and a count >= 1");
  require(w.sessions.turns >= 1 && w.sessions.think_time_s >= 0 && std::isfinite(w.sessions.think_time_s),
          "sessions need turns >= 1 and a think time >= 0");
  RandomStream gaps(w.seed, 0, kArrivalStream), prompts(w.seed, 0, kPromptStream), outputs(w.seed, 0, kOutputStream);
  RandomStream content(w.seed, 0, kContentStream);
  const double mean_gap = at_once ? 0.0 : 1.0 / w.arrivals.rate_per_s;
  const double shape = 1.0 / (w.arrivals.cv * w.arrivals.cv);
  std::vector<ServingRequest> out;
  if (w.requests) out.reserve(static_cast<size_t>(*w.requests));
  double t = 0.0;
  int64_t session = 0;
  while (!w.requests || static_cast<int64_t>(out.size()) < *w.requests) {
    if (w.arrivals.kind == ArrivalProcess::Kind::poisson) t += gaps.exponential_mean(mean_gap);
    if (w.arrivals.kind == ArrivalProcess::Kind::gamma) t += gaps.gamma(shape, mean_gap / shape);
    if (!w.requests && t >= w.duration_s) break;
    if (sp.tokens == 0 && w.sessions.turns == 1) {
      out.push_back({t, draw(w.prompt, prompts), draw(w.output, outputs)});
      continue;
    }
    add_session(w, t, session++, prompts, outputs, content, out);
  }
  return out;
}


}  // namespace clustersim::sim
