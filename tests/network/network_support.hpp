// Test support for the network tests: the shipped catalog and topologies built from it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "models/hardware/catalog.hpp"
#include "models/network/topology.hpp"

namespace clustersim::testing {

/// The shipped hardware catalog (models/hardware/catalog), loaded once.
inline const models::Catalog& shipped_catalog() {
  static const models::Catalog catalog =
      models::Catalog::load(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "models" / "hardware" / "catalog");
  return catalog;
}

/// The topology of `cfg.nodes` VMs of the catalog's `vm_name`. Throws as build_topology.
inline models::Topology build_shipped(const std::string& vm_name, const models::TopologyConfig& cfg) {
  const auto& vm = shipped_catalog().vm_size(vm_name);
  return models::build_topology(vm, shipped_catalog().device(vm.device), cfg);
}

/// A TopologyConfig of `nodes` VMs on `fabric`, other settings at their defaults.
inline models::TopologyConfig topology_config(std::int64_t nodes, models::FabricKind fabric) {
  models::TopologyConfig cfg;
  cfg.nodes = nodes;
  cfg.fabric = fabric;
  return cfg;
}

}  // namespace clustersim::testing
