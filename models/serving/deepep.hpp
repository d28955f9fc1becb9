// DeepEP's measured all-to-all bandwidths (dispatch and combine of an MoE layer under expert parallelism), as
// its README published them for the V1 kernels: github.com/deepseek-ai/DeepEP, README.md "Performance" of the
// 2025-02-25 release, archived unchanged in docs/legacy.md at commit 0297fc801788b14b338a46554faca28d419e518a
// (read 2026-11-28). Measured on H800 (~160 GB/s NVLink) with one CX7 InfiniBand 400 Gb/s NIC per GPU
// (~50 GB/s), DeepSeek-V3 settings: hidden 7168, top-8 experts, FP8 dispatch, BF16 combine.
//   normal kernels (training, prefill; 4096 tokens per batch, NVLink+RDMA forwarding), bottleneck bandwidth:
//     intranode EP 8: dispatch 153 GB/s, combine 158 GB/s (NVLink);
//     internode EP 16 / 32 / 64: dispatch 43 / 58 / 51 GB/s, combine 43 / 57 / 50 GB/s (RDMA);
//   low-latency kernels (decode; 128 tokens per rank, pure RDMA), RDMA bandwidth (latency):
//     EP 8 / 16 / 32 / 64 / 128 / 256: dispatch 98 / 63 / 48 / 43 / 39 / 39 GB/s (77 / 118 / 155 / 173 / 192 /
//     194 us), combine 127 / 74 / 53 / 46 / 39 / 40 GB/s (114 / 195 / 273 / 314 / 369 / 360 us).
// The low-latency kernels send every (token, expert) copy on its own, so a rank's bytes are tokens x topk x
// the copy's bytes (FP8 dispatch: h + h / 128 x 4 scale bytes; BF16 combine: 2 h): 128 x 8 x 7392 B / 48 GB/s =
// 158 us at EP 32 against the table's 155 us. The normal kernels send a token once per distinct destination node
// over RDMA and fan it out over NVLink (flex_dispatch_copies), their bandwidth counted on the RDMA bytes.
#pragma once

#include <cstdint>

#include "models/hardware/catalog.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// Which DeepEP kernels move an iteration's tokens: normal (prefill: SGLang --deepep-mode auto runs them for
/// any batch with prompt tokens) or low_latency (decode-only batches, CUDA-graph compatible).
enum class DeepEpKernel { normal, low_latency };

/// The README's measured bandwidth, B/s, of one rank's dispatch (`dispatch` true) or combine at EP size `ranks`
/// over RDMA: the low-latency table (8..256) or the normal kernels' internode table (16..64), linear in
/// log2(ranks) between its rows and clamped to its first and last rows outside. Throws std::invalid_argument
/// when ranks < 2.
units::BytesPerSecond deepep_rdma_bandwidth(DeepEpKernel kernel, bool dispatch, int64_t ranks);

/// The normal kernels' intranode (NVLink) bandwidth at EP 8, B/s: dispatch 153 GB/s, combine 158 GB/s.
units::BytesPerSecond deepep_nvlink_bandwidth(bool dispatch);

/// The H800's NVLink, per direction, 200 GB/s (NVIDIA H800 datasheet: NVLink 400 GB/s bidirectional), and the
/// CX7 NIC's 400 Gb/s = 50 GB/s: the links the tables were measured on.
inline constexpr double kDeepEpNvlinkBytesPerS = 200e9;
inline constexpr double kDeepEpRdmaBytesPerS = 50e9;

/// Where one replica's EP group runs and how fast its links are, after scaling the README's hardware:
/// NVLink bandwidth x (the device's NVLink per direction / 200 GB/s); RDMA bandwidth x (the VM's InfiniBand per
/// GPU / 50 GB/s). `one_domain`: every EP rank in one NVLink domain (one VM, or an NVL72 rack's VMs), where both
/// kernels run over NVLink (DeepEP's NVLink path for low-latency kernels; SGLang on GB200 NVL72).
struct DeepEpLinks {
  int64_t ranks = 1;            ///< EP size
  int64_t ranks_per_node = 1;   ///< GPUs of one VM in the group
  bool one_domain = false;
  double nvlink_scale = 1.0;    ///< the device's NVLink over the H800's
  double rdma_scale = 1.0;      ///< the VM's InfiniBand per GPU over the CX7's 50 GB/s
};

/// The links of an EP group of `ranks` GPUs on the fewest VMs of `vm` (its GPUs `device`). Throws
/// std::invalid_argument when ranks < 2, or ranks spans VMs without InfiniBand.
DeepEpLinks deepep_links(const VmSize& vm, const DeviceSpec& device, int64_t ranks);

/// Bytes of one token copy: FP8 dispatch h + h / 128 x 4 (one fp32 scale per 128 values), BF16 combine 2 h.
double deepep_copy_bytes(int64_t hidden, bool dispatch);

/// The time of one MoE layer's dispatch plus combine on the busiest rank, which sends `tokens_per_rank` tokens
/// of top-k routing over `experts` experts (uniform routing, experts placed in order):
///   low_latency: topk x tokens copies each way at the table's bandwidth (NVLink-scaled in one domain);
///   normal, one domain: the (ranks - 1) / ranks x topk remote copies over NVLink at the intranode bandwidth;
///   normal, several VMs: max(network copies x bytes / RDMA bandwidth, NVLink copies x bytes / NVLink
///   bandwidth) each way, the copies from flex_dispatch_copies.
/// Zero for no tokens. Throws std::invalid_argument on negative tokens.
units::Seconds deepep_dispatch_combine_time(const DeepEpLinks& links, DeepEpKernel kernel, int64_t tokens_per_rank,
                                            int64_t hidden, int64_t experts, int64_t topk);

}  // namespace clustersim::models
