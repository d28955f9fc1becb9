// [cluster] and [network]'s rules (cluster_rules.hpp).
#include "sim/io/cluster_rules.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/network/topology.hpp"
#include "sim/io/closest_names.hpp"
#include "sim/io/loader.hpp"

namespace clustersim::sim::detail {

const models::VmSize& vm_size_of(const Loader& l, const std::string& key, const models::Catalog& catalog) {
  const std::string vm_name = l.get_string(key);
  try {
    return catalog.vm_size(vm_name);
  } catch (const std::out_of_range&) {
    std::vector<std::string> names;
    for (const auto& [n, ignored] : catalog.vm_sizes()) names.push_back(n);
    l.fail_at(key, "unknown VM size '" + vm_name + "' (" + std::to_string(names.size()) +
                       " in the catalog; closest: " + closest_names(vm_name, names, 5) + ")");
  }
}

ClusterShape check_cluster(Loader& l, const models::Catalog& catalog) {
  const std::string vm_name = l.get_string("cluster.vm_size");
  const models::VmSize* vm = &vm_size_of(l, "cluster.vm_size", catalog);
  l.learned.catalog_price = vm->price_usd_per_hour;
  const int64_t nodes = l.get_int("cluster.nodes");
  if (l.has("cluster.zones")) {
    int64_t sum = 0;
    for (const toml::node& z : *l.resolved_node("cluster.zones")->as_array()) {
      sum += z.as_table()->get("nodes")->as_integer()->get();
    }
    if (sum != nodes) {
      l.fail_at("cluster.zones",
                "zone node counts sum to " + std::to_string(sum) + ", but cluster.nodes = " + std::to_string(nodes));
    }
  }
  if (const std::string why = models::fat_tree_radix_error(l.get_int("cluster.fat_tree_radix")); !why.empty()) {
    l.fail_at("cluster.fat_tree_radix", why);
  }
  // GB200 NVL72: the VMs must make whole NVLink domains (of the VMs per domain the job uses), none across zones.
  std::optional<int64_t> per_domain;
  if (l.has("cluster.vms_per_nvlink_domain")) {
    per_domain = l.get_int("cluster.vms_per_nvlink_domain");
    if (const std::string why = vm->domain_use_problem(*per_domain); !why.empty()) {
      l.fail_at("cluster.vms_per_nvlink_domain", why);
    }
  }
  {
    std::vector<int64_t> zone_nodes;
    if (l.has("cluster.zones")) {
      for (const toml::node& z : *l.resolved_node("cluster.zones")->as_array()) {
        zone_nodes.push_back(z.as_table()->get("nodes")->as_integer()->get());
      }
    }
    if (const std::string why = vm->domain_problem(nodes, per_domain, zone_nodes); !why.empty()) {
      l.fail_at(nodes % vm->domain_vms(nodes, per_domain) == 0 ? "cluster.zones" : "cluster.nodes", why);
    }
  }
  if (l.get_string("network.all_reduce_algorithm") == "nvls" &&
      (nodes != vm->domain_vms(nodes, per_domain) || !vm->nccl.nvls_efficiency)) {
    l.fail_at("network.all_reduce_algorithm",
              "nvls needs one node (one NVLink domain) of a VM size with NVLink SHARP (H100/H200 NVSwitch), got " +
                  std::to_string(nodes) + " × " + vm_name);
  }
  const int64_t per_vm = vm->devices_per_vm;
  const int64_t gpus = l.checked_mul(nodes, per_vm, "cluster.nodes");
  const std::string cluster_text = std::to_string(gpus) + " GPUs (" + std::to_string(nodes) + " VMs × " +
                                   std::to_string(per_vm) + " per " + vm_name + ")";
  return ClusterShape{vm, gpus, cluster_text};
}

}  // namespace clustersim::sim::detail
