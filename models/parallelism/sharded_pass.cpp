#include "models/parallelism/sharded_pass.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace clustersim::models {

namespace {

/// A stretch of the communication stream, [begin, end) seconds from the pass's start.
struct Busy {
  double begin = 0.0;
  double end = 0.0;
};

/// Seconds of [begin, end) during which the communication stream is busy.
double busy_within(const std::vector<Busy>& busy, double begin, double end) {
  double t = 0.0;
  for (const Busy& b : busy) t += std::max(0.0, std::min(end, b.end) - std::max(begin, b.begin));
  return t;
}

/// One schedule of a pass: its end, the compute windows and the communication stream's busy stretches.
struct Schedule {
  double end = 0.0;
  std::vector<Busy> compute;
  std::vector<Busy> comm;
};

/// The units' compute, each stretched by `contention` x the time the communication stream of `first` was
/// busy during the unit's window in `first` (one fixed-point step: the stretch hardly moves the windows).
std::vector<double> stretched(std::span<const ShardedUnit> units, const Schedule& first, double contention) {
  std::vector<double> c(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    c[i] = units[i].compute.value() +
           contention * busy_within(first.comm, first.compute[i].begin, first.compute[i].end);
  }
  return c;
}

Schedule forward_schedule(std::span<const ShardedUnit> units, const std::vector<double>& compute, size_t k) {
  Schedule s;
  const size_t n = units.size();
  double comm_free = 0.0, compute_free = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const ShardedUnit& u = units[i];
    double gathered = compute_free;  // no gather: ready when the stream reaches it
    if (u.gather.value() > 0.0) {
      const double freed = i >= k ? s.compute[i - k].end : 0.0;
      const double start = std::max(comm_free, freed);
      comm_free = start + u.gather.value();
      s.comm.push_back({start, comm_free});
      gathered = comm_free;
    }
    const double start = std::max(compute_free, gathered);
    compute_free = start + compute[i];
    s.compute.push_back({start, compute_free});
  }
  s.end = std::max(compute_free, comm_free);
  return s;
}

Schedule backward_schedule(std::span<const ShardedUnit> units, const std::vector<double>& compute,
                           bool one_reduce_in_flight) {
  Schedule s;
  const size_t n = units.size();
  double comm_free = 0.0, compute_free = 0.0;
  // The communication stream in issue order: a collective starts at max(issued, previous one ended).
  auto run_comm = [&](double issued, units::Seconds duration) {
    if (duration.value() <= 0.0) return issued;
    const double begin = std::max(comm_free, issued);
    comm_free = begin + duration.value();
    s.comm.push_back({begin, comm_free});
    return comm_free;
  };
  std::vector<double> gathered(n, 0.0);
  if (n > 0) gathered[0] = run_comm(0.0, units[0].gather);
  double previous_reduce_end = 0.0;
  for (size_t j = 0; j < n; ++j) {
    const ShardedUnit& u = units[j];
    const double start = std::max(compute_free, gathered[j]);
    if (j + 1 < n) gathered[j + 1] = run_comm(start, units[j + 1].gather);  // BACKWARD_PRE prefetch
    compute_free = start + compute[j];
    s.compute.push_back({start, compute_free});
    if (u.reduce.value() > 0.0) {
      if (one_reduce_in_flight) compute_free = std::max(compute_free, previous_reduce_end);
      previous_reduce_end = run_comm(compute_free, u.reduce);
    }
  }
  s.end = std::max(compute_free, comm_free);
  return s;
}

std::vector<double> plain(std::span<const ShardedUnit> units) {
  std::vector<double> c;
  c.reserve(units.size());
  for (const ShardedUnit& u : units) c.push_back(u.compute.value());
  return c;
}

ShardedPassTime result(std::span<const ShardedUnit> units, const Schedule& s) {
  ShardedPassTime r;
  for (const ShardedUnit& u : units) r.compute += u.compute;
  r.total = units::Seconds(s.end);
  return r;
}

}  // namespace

ShardedPassTime sharded_forward(std::span<const ShardedUnit> units, int max_gathers_in_flight,
                                double contention) {
  if (max_gathers_in_flight < 1) throw std::invalid_argument("sharded_forward: max_gathers_in_flight must be >= 1");
  if (contention < 0.0 || contention >= 1.0) throw std::invalid_argument("sharded_forward: contention must be in [0, 1)");
  const auto k = static_cast<size_t>(max_gathers_in_flight);
  const Schedule first = forward_schedule(units, plain(units), k);
  if (contention == 0.0) return result(units, first);
  return result(units, forward_schedule(units, stretched(units, first, contention), k));
}

ShardedPassTime sharded_backward(std::span<const ShardedUnit> units, bool one_reduce_in_flight, double contention) {
  if (contention < 0.0 || contention >= 1.0) throw std::invalid_argument("sharded_backward: contention must be in [0, 1)");
  const Schedule first = backward_schedule(units, plain(units), one_reduce_in_flight);
  if (contention == 0.0) return result(units, first);
  return result(units, backward_schedule(units, stretched(units, first, contention), one_reduce_in_flight));
}

}  // namespace clustersim::models
