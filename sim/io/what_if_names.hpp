// The names of the training what-if perturbations (docs/what-if.md), declared once: the scenario key
// analysis.what_if accepts exactly these, and sim/run/what_if.cpp names its rows with them (a test holds the two
// equal). A light header: sim/io may not depend on sim/run.
#pragma once

#include <array>
#include <string_view>

namespace clustersim::sim {

/// The training what-if set, in the order the rows are computed.
inline constexpr std::array<std::string_view, 12> kTrainingWhatIfNames{
    "gpu_matmul_x1.5", "hbm_bandwidth_x1.5", "nvlink_x2",          "nic_x2",           "latency_x0.5", "no_pipeline_bubble",
    "no_variability",  "next_vm_size",       "overlap_grad_reduce", "overlap_p2p_comm", "tp_comm_overlap", "fp8"};

}  // namespace clustersim::sim
