// [cluster] and [network]'s rules (docs/scenario-format.md, "[cluster]", "[network]"), on a Loader: the VM size,
// the zones, the fat tree, the NVLink domains, NVLS, the GPU count. Private to sim/io.
#pragma once

#include <cstdint>
#include <string>

namespace clustersim::models {
class Catalog;
struct VmSize;
}  // namespace clustersim::models

namespace clustersim::sim::detail {

class Loader;

/// The catalog's VM size named by the string key `key` (cluster.vm_size, serving.vm_size), or a ScenarioError
/// at the key listing the 5 closest names.
const models::VmSize& vm_size_of(const Loader& l, const std::string& key, const models::Catalog& catalog);

/// The cluster as check_cluster found it: its VM size and GPUs, and how the data rules describe it.
struct ClusterShape {
  const models::VmSize* vm = nullptr;
  int64_t gpus = 0;  ///< cluster.nodes x the VM size's GPUs
  std::string text;  ///< "32 GPUs (4 VMs × 8 per ND96isr_H100_v5)"
};

/// [cluster]'s rules: the VM size exists (its catalog price learned), the zones' nodes sum to cluster.nodes,
/// the fat tree's radix, whole NVLink domains of cluster.vms_per_nvlink_domain (none across zones), NVLS only on
/// one NVLink domain of a VM size that has it (network.all_reduce_algorithm), the GPU count fits 64 bits.
/// Throws ScenarioError at the key.
ClusterShape check_cluster(Loader& l, const models::Catalog& catalog);

}  // namespace clustersim::sim::detail
