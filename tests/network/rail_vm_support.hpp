// Test support for the network tests: topologies of a shipped VM resized to another GPU count, for shapes no
// shipped VM has (6 GPUs a node: a local index or a node by division, not by mask or shift).
#pragma once

#include <string>

#include "models/network/topology.hpp"
#include "tests/network/network_support.hpp"

namespace clustersim::testing {

/// The topology of `cfg.nodes` VMs of the catalog's `vm_name` given `gpus` GPUs and as many InfiniBand ports
/// (rail NICs: NIC i hangs off GPU i). Throws as build_topology.
inline models::Topology build_resized(const std::string& vm_name, int gpus, const models::TopologyConfig& cfg) {
  models::VmSize vm = shipped_catalog().vm_size(vm_name);
  vm.devices_per_vm = gpus;
  vm.infiniband_ports = gpus;
  return models::build_topology(vm, shipped_catalog().device(vm.device), cfg);
}

}  // namespace clustersim::testing
