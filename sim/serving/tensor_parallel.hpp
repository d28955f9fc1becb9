// The all-reduce time of a serving replica's tensor-parallel group, from the collective model of its VM size
// (models/network/collective_model.hpp: NCCL's algorithms and protocols on the VM's NVLink / NVSwitch / PCIe,
// calibrated per VM size against nccl-tests; docs/network.md).
#pragma once

#include <cstdint>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"

namespace clustersim::sim {

/// An all-reduce over GPUs 0..tensor-1 of one NVLink domain of `vm` (the first VMs of a cluster just large enough
/// to hold them): the collective model's time at 2^8 to 2^34 bytes (a power of 2 each), interpolated linearly in
/// log(bytes) x log(time) between them and extrapolated along the last segment above; the smallest size's time
/// below it (the latency floor). tensor 1: zero. Throws std::invalid_argument when `tensor` < 1 or exceeds one
/// NVLink domain of the VM size (a replica's tensor-parallel group stays on NVLink), models errors of the
/// topology and collective model otherwise.
models::AllReduceTime tensor_parallel_all_reduce(const models::VmSize& vm, const models::DeviceSpec& device,
                                                 int64_t tensor);

}  // namespace clustersim::sim
