#include "sim/step/variability_draws.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "models/parallelism/layout.hpp"
#include "sim/engine/random_stream.hpp"

namespace clustersim::sim {

namespace {

/// RandomStream stream ids of the draws (the header's formulas).
enum VariabilityStream : uint64_t { kGpuSpeedStream = 1, kSlowVmStream = 2 };

}  // namespace

std::vector<double> drawn_compute_factors(const models::VariabilitySpec& spec, const models::ParallelismConfig& p,
                                          int64_t gpus_per_vm, uint64_t seed) {
  if (gpus_per_vm < 1) throw std::invalid_argument("drawn_compute_factors: gpus_per_vm must be >= 1");
  if (!(spec.gpu_compute_cv >= 0.0 && spec.gpu_compute_cv <= 0.1)) {
    throw std::invalid_argument("drawn_compute_factors: the GPU compute-time spread must be in [0, 0.1]");
  }
  if (!(spec.slow_vm_fraction >= 0.0 && spec.slow_vm_fraction <= 1.0) || !(spec.slow_vm_factor >= 1.0)) {
    throw std::invalid_argument("drawn_compute_factors: needs a slow-VM fraction in [0, 1] and a factor >= 1");
  }
  const int64_t gpus = p.gpus();
  std::vector<double> unit(static_cast<size_t>(p.pipeline * p.data), 0.0);
  int64_t vm = -1;
  double vm_factor = 1.0;
  for (int64_t g = 0; g < gpus; ++g) {
    if (g / gpus_per_vm != vm) {
      vm = g / gpus_per_vm;
      vm_factor = RandomStream(seed, vm, kSlowVmStream).uniform() < spec.slow_vm_fraction ? spec.slow_vm_factor : 1.0;
    }
    // The GPU's coordinates: the mixed-radix digits of its rank, tensor fastest (models::layout_rank).
    std::array<int64_t, 6> coord{};
    int64_t rest = g;
    for (const models::LayoutDimension& d : models::layout_dimensions()) {
      const int64_t size = p.*d.size;
      coord[static_cast<size_t>(d.dim)] = rest % size;
      rest /= size;
    }
    const double x = vm_factor * (1.0 + spec.gpu_compute_cv * RandomStream(seed, g, kGpuSpeedStream).normal());
    double& u = unit[static_cast<size_t>(coord[static_cast<size_t>(models::LayoutDim::pipeline)] * p.data +
                                         coord[static_cast<size_t>(models::LayoutDim::data)])];
    u = std::max(u, x);
  }
  return unit;
}

}  // namespace clustersim::sim
