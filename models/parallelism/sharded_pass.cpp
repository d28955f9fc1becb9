#include "models/parallelism/sharded_pass.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace clustersim::models {

ShardedPassTime sharded_forward(std::span<const ShardedUnit> units, int max_gathers_in_flight) {
  if (max_gathers_in_flight < 1) throw std::invalid_argument("sharded_forward: max_gathers_in_flight must be >= 1");
  ShardedPassTime r;
  const size_t n = units.size();
  std::vector<double> compute_end(n, 0.0);
  double comm_free = 0.0, compute_free = 0.0;
  const auto k = static_cast<size_t>(max_gathers_in_flight);
  for (size_t i = 0; i < n; ++i) {
    const ShardedUnit& u = units[i];
    double gathered = compute_free;  // no gather: ready when the stream reaches it
    if (u.gather.value() > 0.0) {
      const double freed = i >= k ? compute_end[i - k] : 0.0;
      const double start = std::max(comm_free, freed);
      comm_free = start + u.gather.value();
      gathered = comm_free;
    }
    const double start = std::max(compute_free, gathered);
    compute_free = start + u.compute.value();
    compute_end[i] = compute_free;
    r.compute += u.compute;
  }
  r.total = units::Seconds(std::max(compute_free, comm_free));
  return r;
}

ShardedPassTime sharded_backward(std::span<const ShardedUnit> units, bool one_reduce_in_flight) {
  ShardedPassTime r;
  const size_t n = units.size();
  double comm_free = 0.0, compute_free = 0.0;
  // The communication stream in issue order: a collective starts at max(issued, previous one ended).
  auto run_comm = [&](double issued, units::Seconds duration) {
    if (duration.value() <= 0.0) return issued;
    comm_free = std::max(comm_free, issued) + duration.value();
    return comm_free;
  };
  std::vector<double> gathered(n, 0.0);
  if (n > 0) gathered[0] = run_comm(0.0, units[0].gather);
  double previous_reduce_end = 0.0;
  for (size_t j = 0; j < n; ++j) {
    const ShardedUnit& u = units[j];
    const double start = std::max(compute_free, gathered[j]);
    if (j + 1 < n) gathered[j + 1] = run_comm(start, units[j + 1].gather);  // BACKWARD_PRE prefetch
    compute_free = start + u.compute.value();
    if (u.reduce.value() > 0.0) {
      if (one_reduce_in_flight) compute_free = std::max(compute_free, previous_reduce_end);
      previous_reduce_end = run_comm(compute_free, u.reduce);
    }
    r.compute += u.compute;
  }
  r.total = units::Seconds(std::max(compute_free, comm_free));
  return r;
}

}  // namespace clustersim::models
