// Closed forms of checkpointing under exponential interruptions: Young (1974), Daly (2006). See job_model.hpp.
#include "models/reliability/job_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace clustersim::models {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSecondsPerHour = 3600.0;
constexpr double kSecondsPerDay = 86400.0;

void require_non_negative(double v, const char* what) {
  if (!(v >= 0.0)) throw std::invalid_argument(std::string(what) + " must be >= 0 (got " + std::to_string(v) + ")");
}

/// M e^{R/M} (e^{L/M} - 1) or (M + R) (e^{L/M} - 1) for one segment of length L; the M -> infinity limit is L.
double segment_time(double segment, double restart, double mtbi, bool daly_restart) {
  if (std::isinf(mtbi)) return segment;
  if (mtbi == 0.0) return kInf;  // interruptions without pause: the segment never completes
  const double failures = std::expm1(segment / mtbi);  // expected interruptions before the segment completes
  return daly_restart ? mtbi * std::exp(restart / mtbi) * failures : (mtbi + restart) * failures;
}

double expected_time(units::Seconds work, units::Seconds interval, units::Seconds checkpoint_cost,
                     units::Seconds restart_cost, units::Seconds mtbi, bool daly_restart) {
  require_non_negative(work.value(), "work");
  require_non_negative(checkpoint_cost.value(), "checkpoint cost");
  require_non_negative(restart_cost.value(), "restart cost");
  require_non_negative(mtbi.value(), "mean time between interruptions");
  if (!(interval.value() > 0.0)) throw std::invalid_argument("checkpoint interval must be > 0");
  const double segments = work.value() / interval.value();
  return segments * segment_time(interval.value() + checkpoint_cost.value(), restart_cost.value(), mtbi.value(),
                                 daly_restart);
}

}  // namespace

units::Seconds young_interval(units::Seconds checkpoint_cost, units::Seconds mean_time_between_interruptions) {
  require_non_negative(checkpoint_cost.value(), "checkpoint cost");
  require_non_negative(mean_time_between_interruptions.value(), "mean time between interruptions");
  if (std::isinf(mean_time_between_interruptions.value())) return units::Seconds(kInf);
  return units::Seconds(std::sqrt(2.0 * checkpoint_cost.value() * mean_time_between_interruptions.value()));
}

units::Seconds daly_interval(units::Seconds checkpoint_cost, units::Seconds mean_time_between_interruptions) {
  const double c = checkpoint_cost.value();
  const double m = mean_time_between_interruptions.value();
  require_non_negative(c, "checkpoint cost");
  require_non_negative(m, "mean time between interruptions");
  if (std::isinf(m)) return units::Seconds(kInf);
  if (c >= 2.0 * m) return units::Seconds(m);
  const double ratio = c / (2.0 * m);  // Daly's delta / (2M)
  return units::Seconds(std::sqrt(2.0 * c * m) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) - c);
}

units::Seconds expected_time_exponential(units::Seconds work, units::Seconds interval, units::Seconds checkpoint_cost,
                                         units::Seconds restart_cost, units::Seconds mean_time_between_interruptions) {
  return units::Seconds(
      expected_time(work, interval, checkpoint_cost, restart_cost, mean_time_between_interruptions, true));
}

units::Seconds expected_time_uninterrupted_restart(units::Seconds work, units::Seconds interval,
                                                   units::Seconds checkpoint_cost, units::Seconds restart_cost,
                                                   units::Seconds mean_time_between_interruptions) {
  return units::Seconds(
      expected_time(work, interval, checkpoint_cost, restart_cost, mean_time_between_interruptions, false));
}

units::Seconds mean_time_between_interruptions(const InterruptionModel& m, int64_t vms) {
  if (vms < 1) throw std::invalid_argument("mean_time_between_interruptions: vms must be >= 1");
  if (m.gpus_per_vm < 1) throw std::invalid_argument("mean_time_between_interruptions: gpus_per_vm must be >= 1");
  require_non_negative(m.failure_rate_per_gpu_day, "failure rate per GPU-day");
  require_non_negative(m.spot_eviction_rate_per_hour, "spot eviction rate per hour");
  const double n = static_cast<double>(vms);
  double rate = n * static_cast<double>(m.gpus_per_vm) * m.failure_rate_per_gpu_day / kSecondsPerDay;  // per s
  if (m.spot) {
    if (m.eviction_trace.empty()) {
      rate += n * m.spot_eviction_rate_per_hour / kSecondsPerHour;
    } else {
      double last = 0.0;
      for (const units::Seconds t : m.eviction_trace) last = std::max(last, t.value());
      rate += last > 0.0 ? static_cast<double>(m.eviction_trace.size()) / last : kInf;
    }
  }
  return units::Seconds(rate > 0.0 ? 1.0 / rate : kInf);
}

units::Bytes checkpoint_bytes(double parameters, double bytes_per_parameter) {
  require_non_negative(parameters, "parameters");
  require_non_negative(bytes_per_parameter, "bytes per parameter");
  return units::Bytes(parameters * bytes_per_parameter);
}

double spot_eviction_rate_from_hourly_probability(double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw std::invalid_argument("hourly eviction probability must be in [0, 1) (got " + std::to_string(p) + ")");
  }
  return -std::log1p(-p);
}

}  // namespace clustersim::models
