#include "models/parallelism/host_queue.hpp"

#include <algorithm>

namespace clustersim::models {

units::Seconds host_exposed_time(const std::vector<IssuedWork>& sequence) {
  units::Seconds host(0.0), gpu(0.0), busy(0.0);
  for (const IssuedWork& w : sequence) {
    if (w.waits) host = std::max(host, gpu);
    host += w.host;
    gpu = std::max(gpu, host) + w.device;
    busy += w.device;
  }
  return gpu - busy;
}

units::Seconds host_bound_time(const std::vector<IssuedWork>& sequence) {
  units::Seconds host(0.0), gpu(0.0);
  for (const IssuedWork& w : sequence) {
    host += w.host;
    gpu += w.device;
  }
  return host > gpu ? host - gpu : units::Seconds(0.0);
}

units::Seconds host_cycle_time(const std::vector<IssuedWork>& cycle) {
  const auto first = std::find_if(cycle.begin(), cycle.end(), [](const IssuedWork& w) { return w.waits; });
  if (first == cycle.end()) return host_bound_time(cycle);
  std::vector<IssuedWork> rotated(first, cycle.end());
  rotated.insert(rotated.end(), cycle.begin(), first);
  return host_exposed_time(rotated);
}

}  // namespace clustersim::models
