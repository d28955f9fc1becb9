// Serving workloads (issue 15): synthetic request streams (Poisson or bursty gamma arrivals, prompt and output
// lengths from fixed, uniform or lognormal distributions). Request traces are read by sim/io/request_trace.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/serving/serving_simulation.hpp"

namespace clustersim::sim {

/// A token-length distribution; draws are rounded to whole tokens and clamped to [1, max_tokens].
///
/// A lognormal may be truncated to [low, high] (`truncated`): the draw is conditioned on the interval, as a
/// benchmark's sampler drops the requests outside it (vLLM's and SGLang's sample_sharegpt_requests prune prompts
/// over 1,024 tokens and prompt + output over 2,048; every sampler caps at the model's context). It is drawn by
/// inversion, x = exp(mu + sigma z) with z = Phi^-1(u), u uniform between Phi(a) and Phi(b), a and b the bounds'
/// standard scores (one uniform per draw; above the median through the survival function, for precision). An
/// untruncated lognormal keeps its Box-Muller draw, so the same seed gives the same lengths as before.
struct LengthDistribution {
  enum class Kind { fixed, uniform, lognormal };
  Kind kind = Kind::fixed;
  double value = 128;      ///< fixed: the length
  double low = 1;          ///< uniform, truncated lognormal: the smallest length (inclusive)
  double high = 1;         ///< uniform, truncated lognormal: the largest length (inclusive)
  double median = 128;     ///< lognormal: exp(mu), the median length
  double sigma = 1.0;      ///< lognormal: the standard deviation of ln(length)
  bool truncated = false;  ///< lognormal: conditioned on [low, high]
  int64_t max_tokens = 1 << 20;  ///< the clamp's upper end (a model's context)
};

/// Request arrivals at `rate_per_s` on average: Poisson (exponential gaps), or gamma gaps with coefficient of
/// variation `cv` (> 1 bursty, 1 Poisson, < 1 smoother: shape 1 / cv^2); or every request at time 0, `at_once`:
/// an offline benchmark that queues its whole dataset (trtllm-bench throughput, vLLM benchmark_throughput,
/// MLPerf Offline), or the request list of a closed loop (ServingSetup::concurrency), which sends them itself.
struct ArrivalProcess {
  enum class Kind { poisson, gamma, at_once };
  Kind kind = Kind::poisson;
  double rate_per_s = 1.0;
  double cv = 1.0;
};

/// A system prompt shared by a fraction of the sessions (issue 30, prefix caching): each session (a request, without
/// multi-turn sessions) has it with probability `share`, then one of `count` distinct system prompts, each equally
/// likely; its prompt is the system prompt's `tokens` followed by the tokens drawn from the prompt distribution.
/// tokens = 0: none (nothing is drawn for it).
struct SharedPrefix {
  int64_t tokens = 0;
  double share = 1.0;
  int64_t count = 1;
};

/// Multi-turn sessions (issue 30): each arrival of the arrival process starts a session of `turns` requests. Turn
/// k + 1's prompt is turn k's prompt, its output and new tokens drawn from the prompt distribution (a chat
/// client resends the conversation); it is sent an exponential think time of mean think_time_s after turn k
/// finishes (an assumption: the mean from the scenario, the shape the usual memoryless one). turns = 1: single
/// requests.
struct Sessions {
  int64_t turns = 1;
  double think_time_s = 0.0;
};

struct SyntheticWorkload {
  ArrivalProcess arrivals;
  LengthDistribution prompt;
  LengthDistribution output;
  double duration_s = 60.0;  ///< arrivals in [0, duration_s)
  /// When set, the stream is this many requests (and duration_s does not end it): a benchmark's request count.
  std::optional<int64_t> requests;
  uint64_t seed = 0;
  SharedPrefix system_prompt;  ///< the content's shared system prompt (no draws when absent)
  Sessions sessions;           ///< multi-turn sessions (no draws when turns = 1)
};

/// The requests of `w`, in arrival order. Arrival gaps, prompt and output lengths come from three independent
/// RandomStreams of `seed` (streams 1, 2, 3), so the same workload and seed give the same requests on every
/// platform. at_once arrivals need `requests` and take no rate. The system prompt's share and choice and the think
/// times come from stream 5 of `seed`, drawn only when those keys are given, so a workload without them is the
/// same as before. With sessions the arrival process gives the sessions' first turns; the later turns follow their
/// session in the list (ServingRequest::previous, arrival_s the session's start), the whole session inside the
/// stream when duration_s ends it, `requests` counting requests (the last session cut at it). Throws
/// std::invalid_argument on a non-positive rate, cv, duration, request count, sigma or median, low > high, a
/// truncated lognormal whose [low, high] holds less than models::kMinLognormalMass of its probability, at_once
/// without a request count, a negative system prompt length, a share outside [0, 1], a count or turns < 1, or a
/// negative think time.
std::vector<ServingRequest> generate_workload(const SyntheticWorkload& w);

}  // namespace clustersim::sim
