// The all-reduce time of a serving replica's tensor-parallel group, from the collective model of its VM size
// (models/network/collective_model.hpp: NCCL's algorithms and protocols on the VM's NVLink / NVSwitch / PCIe,
// calibrated per VM size against nccl-tests; docs/network.md).
#pragma once

#include <cstdint>
#include <functional>

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

/// The sends of a replica's pipeline: `stages` groups of `tensor` GPUs laid out in order over the fewest VMs of
/// `vm` (stage s on GPUs s t .. s t + t - 1), each boundary a send of the given bytes from every rank of one stage
/// to the same rank of the next (NVLink inside a VM, the VM's scale-out network between VMs; the collective
/// model's send_recv), the boundaries one after the other: their summed time, tabulated as the all-reduce above.
/// Throws std::invalid_argument when tensor < 1, stages < 2, or a tensor-parallel group would span two VMs.
std::function<units::Seconds(units::Bytes)> pipeline_stage_send(const models::VmSize& vm,
                                                                const models::DeviceSpec& device, int64_t tensor,
                                                                int64_t stages);

}  // namespace clustersim::sim
