// The host (CPU) and the GPU as a tandem queue: the host issues a stream's kernels one after another, each at
// a host cost; the GPU runs a kernel once it is issued and the kernel before it is done. Normally the host runs
// ahead of the GPU (a training step is GPU-bound) and its cost is hidden. A device-to-host synchronisation
// (the host reads a value the GPU computes, e.g. a dropless MoE layer's tokens per expert, Megatron-Core
// MoEAlltoAllTokenDispatcher "before_ep_alltoall") drains the queue: the host waits for the GPU to finish what
// was issued, and the kernels after it start no earlier than the host issues them. Where those kernels are
// shorter than their host cost the GPU idles (Megatron-LM docs/discussions/deepseek-v3-gb200-optimization:
// "the CPU kernel launch speed cannot keep up with the kernel execution speed on GPU ... CPU overhead or host
// boundedness").
//
// Recurrence over the work issued after a synchronisation (host clock H, GPU clock G, both 0 at the sync):
//   H_i = H_{i-1} + host_i,   G_i = max(G_{i-1}, H_i) + device_i,
// and the GPU's idle time is G_n - sum(device_i) (a host that waits again at a later item first lets the GPU
// drain: H = max(H, G)). Without a synchronisation the host can fall behind only when it issues more than the
// GPU runs: max(0, sum(host_i) - sum(device_i)) in the steady state.
#pragma once

#include <vector>

#include "models/units.hpp"

namespace clustersim::models {

/// Host time to issue one kernel from eager PyTorch, s: one ATen op with autograd recording, 6.8 us per op
/// (pytorch/pytorch#41383: 1e6 x `y = 2 * x` in 6.8 s, 5 us without autograd); the range of a CUDA kernel launch
/// seen from the CPU is 5-20 us (facebookresearch/HolisticTraceAnalysis, "CUDA kernel launch statistics"), and
/// a torch.nn.Linear forward (one GEMM) costs 13.5 us of CPU on a DGX H100's Xeon 8480C
/// (NVIDIA/TransformerEngine#2053). The measured single op is taken: 7 us.
inline constexpr units::Seconds kHostKernelLaunch = units::microseconds(7.0);
/// Host time to issue one NCCL collective from PyTorch, s: Vidur's measured-default CPU launch overhead of a
/// collective, 0.02 ms (microsoft/vidur vidur/config/config.py, nccl_cpu_launch_overhead_ms).
inline constexpr units::Seconds kHostCollectiveLaunch = units::microseconds(20.0);

/// Work the host issues to the GPU, in order: `device` its GPU time, `host` the CPU time to issue it; `waits`:
/// the host first waits until the GPU has finished everything issued before (a device-to-host synchronisation).
struct IssuedWork {
  units::Seconds device;
  units::Seconds host;
  bool waits = false;
};

/// GPU idle time while the host issues `sequence` starting from a drained queue (host and GPU both free at its
/// start): G_n - sum(device) of the recurrence in the header, with H = max(H, G) before every item that waits.
/// Hand check: three kernels of 2 us GPU and 7 us host each idle the GPU 7 + 5 + 5 = 17 us. Zero for an empty
/// sequence.
units::Seconds host_exposed_time(const std::vector<IssuedWork>& sequence);

/// The steady-state GPU idle time of work issued without a synchronisation: max(0, sum(host) - sum(device)).
units::Seconds host_bound_time(const std::vector<IssuedWork>& sequence);

/// The idle time of one repetition of `cycle` (a layer's work, repeated layer after layer): with a waiting item,
/// host_exposed_time of the cycle rotated to start at its first waiting item (the sync drains the queue once per
/// repetition; the work after it runs into the next repetition's work before its sync); without one,
/// host_bound_time.
units::Seconds host_cycle_time(const std::vector<IssuedWork>& cycle);

}  // namespace clustersim::models
