// Cluster topology: construction and routing. The contract, modelling choices and sources are in topology.hpp.
#include "models/network/topology.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

#include "models/network/network_adjacency.hpp"
#include "models/network/pattern_symmetry.hpp"
#include "models/network/route_cache.hpp"
#include "models/network/route_exits.hpp"
#include "models/network/route_fat_tree.hpp"
#include "models/network/route_rows.hpp"
#include "models/network/route_scan.hpp"
#include "models/network/topology_graph.hpp"

namespace clustersim::models {

namespace {

/// Whether the node's GPUs meet at one NVLink switch vertex. nvswitch: the NVSwitch. nvlink_mesh (the V100
/// hybrid cube mesh of DGX-1 / ND40rs_v2: six NVLink 2 links per GPU, no switch) is modelled the same way at
/// each GPU's total NVLink rate: NCCL's rings over the mesh use all six links of every GPU (NVIDIA DGX-1 with
/// Tesla V100 System Architecture, WP-08437-002, "NCCL" section), so a collective over the node's GPUs sees
/// that rate. A transfer between two GPUs without a direct link is optimistic in this model.
bool switched_nvlink(IntraNodeFabric f) { return f == IntraNodeFabric::nvswitch || f == IntraNodeFabric::nvlink_mesh; }

constexpr std::uint32_t kInf = std::numeric_limits<std::uint32_t>::max() / 4;
constexpr std::uint16_t kFar = std::numeric_limits<std::uint16_t>::max();

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("build_topology: " + what); }

}  // namespace

std::string_view to_string(LinkClass c) {
  switch (c) {
    case LinkClass::nvlink: return "nvlink";
    case LinkClass::pcie: return "pcie";
    case LinkClass::infinity_fabric: return "infinity_fabric";
    case LinkClass::infiniband: return "infiniband";
    case LinkClass::ethernet: return "ethernet";
    case LinkClass::inter_zone: return "inter_zone";
  }
  return "?";
}

std::string_view to_string(FabricKind f) {
  switch (f) {
    case FabricKind::single_switch: return "single_switch";
    case FabricKind::fat_tree: return "fat_tree";
    case FabricKind::rail_optimized: return "rail_optimized";
  }
  return "?";
}

std::optional<FabricKind> parse_fabric_kind(std::string_view name) {
  for (FabricKind f : {FabricKind::single_switch, FabricKind::fat_tree, FabricKind::rail_optimized}) {
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view to_string(VertexKind k) {
  switch (k) {
    case VertexKind::gpu: return "gpu";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::host: return "host";
    case VertexKind::nic: return "nic";
    case VertexKind::ethernet_nic: return "ethernet_nic";
    case VertexKind::network_switch: return "network_switch";
    case VertexKind::zone_gateway: return "zone_gateway";
  }
  return "?";
}

struct Topology::Impl {
  /// Unique per built topology (never reused, unlike an address): the key of route()'s per-thread cache.
  std::uint64_t instance = next_instance();
  detail::ClusterGraph g;
  std::int64_t nodes = 0;
  int gpn = 0;                  // GPUs per node
  VertexId gpus = 0;            // G: GPU vertices are 0..G-1
  int extras = 0;               // E: non-GPU vertices per node, at G + node * E + k
  IntraNodeFabric fabric = IntraNodeFabric::none;
  int off_nvswitch = -1;        // offsets k of the per-node extras
  int off_host = 0;
  int off_nic0 = 0;
  int nics = 0;
  int off_eth = -1;             // front-end Ethernet NIC (IB VMs with zones); -1 when absent
  std::vector<ZoneSpec> zones;
  FabricShape shape;
  VertexId first_network = 0;   // network switches and gateways are first_network..vertex_count-1
  std::size_t network_count = 0;
  std::vector<std::int32_t> target_row;  // per network vertex: its row in dist, -1 when not a target
  std::vector<VertexId> row_source;      // per row: its network vertex index
  // Per row: the first row of a twin switch (route_rows.hpp), or itself; worked out with the first row computed
  // (twins_once: a route between nodes of one zone's fat tree never needs a row, route_fat_tree.hpp, and 4,096
  // leaves' neighbour lists were 1 M instructions of a 131,072-GPU build).
  mutable std::once_flag twins_once;
  mutable std::vector<std::size_t> row_twin;
  // Per row: hops from its target to every network vertex w (== w to target), computed on the first route
  // that needs it (a route needs the rows of its destination's switches only; a 131,072-GPU two-tier tree has
  // 4,096 leaves, and all rows up front were 4,096 searches of the whole switch graph and 34 MB).
  mutable std::unique_ptr<std::once_flag[]> row_once;
  mutable std::vector<std::unique_ptr<std::uint16_t[]>> dist;
  /// Row `row` of the distances, computed once (thread-safe: std::call_once): searched, or its twin's swapped.
  [[nodiscard]] const std::uint16_t* dist_row(std::size_t row) const {
    std::call_once(row_once[row], [this, row] {
      std::call_once(twins_once, [this] { row_twin = detail::twin_rows(adjacency().begin, net.adj, row_source); });
      const std::size_t a = row_twin[row];
      dist[row] = a == row ? search_from(row_source[row])
                           : detail::swapped_row(dist_row(a), network_count, row_source[a], row_source[row]);
    });
    return dist[row].get();
  }
  /// Breadth-first search over network-to-network links from network vertex index `s`.
  [[nodiscard]] std::unique_ptr<std::uint16_t[]> search_from(std::size_t s) const {
    const std::size_t nn = network_count;
    auto row = std::make_unique_for_overwrite<std::uint16_t[]>(nn);  // every entry set just below
    std::fill(row.get(), row.get() + nn, kFar);
    std::vector<std::uint32_t> queue;
    queue.reserve(nn);
    row[s] = 0;
    queue.push_back(static_cast<std::uint32_t>(s));
    // A vertex's distance is final when labelled, so the search stops once all of s's component is: a leaf's
    // scans its spines and one spine's down-links (131,072 GPUs: 4,128 link scans instead of 262,144).
    const std::size_t reachable = net.component_size[s];
    std::size_t labelled = 1;
    for (std::size_t head = 0; head < queue.size() && labelled < reachable; ++head) {
      const std::uint32_t u = queue[head];
      for (std::size_t k = net.begin[u]; k < net.begin[u + 1]; ++k) {
        const std::size_t wi = net.adj[k].second - first_network;
        if (row[wi] != kFar) continue;
        row[wi] = static_cast<std::uint16_t>(row[u] + 1);
        queue.push_back(static_cast<std::uint32_t>(wi));
        if (++labelled == reachable) break;
      }
    }
    return row;
  }
  // Out-links of each network vertex to other network vertices, in link id order (CSR over network indices),
  // and the sizes of their components (network_adjacency.hpp): built by the first route search between two
  // nodes (adjacency(); the closed-form routes of route_fat_tree.hpp read the tiers off the graph instead, and
  // at 131,072 GPUs the lists are 2 MB and 1.5 M instructions).
  mutable std::once_flag net_once;
  mutable detail::NetworkAdjacency net;
  /// `net`, built once (thread-safe: std::call_once). Every reader of `net` calls it first, or runs after a
  /// call on its own thread (compute_route between nodes, then dist_row, search_from, append_links_between).
  const detail::NetworkAdjacency& adjacency() const {
    std::call_once(net_once, [this] { net = detail::build_network_adjacency(g); });
    return net;
  }

  [[nodiscard]] VertexId extra(std::int64_t node, int k) const {
    return gpus + static_cast<VertexId>(node * extras + k);
  }
  /// Index of a node-local vertex within its node: GPUs 0..gpn-1, extras gpn..gpn+E-1.
  [[nodiscard]] std::size_t local_index(VertexId v) const {
    if (v < gpus) return v % static_cast<VertexId>(gpn);
    return static_cast<std::size_t>(gpn) + (v - gpus) % static_cast<VertexId>(extras);
  }

  /// Appends (link, b) for every network-to-network link a -> b to `out`, scanning the shorter of a's and b's
  /// network adjacency (b's links b -> a are the partners of a -> b: ids 2k / 2k+1).
  void append_links_between(VertexId a, VertexId b, std::vector<std::pair<LinkId, VertexId>>& out) const {
    const std::size_t ai = a - first_network, bi = b - first_network;
    if (net.begin[ai + 1] - net.begin[ai] <= net.begin[bi + 1] - net.begin[bi]) {
      for (std::size_t k = net.begin[ai]; k < net.begin[ai + 1]; ++k) {
        if (net.adj[k].second == b) out.push_back(net.adj[k]);
      }
    } else {
      for (std::size_t k = net.begin[bi]; k < net.begin[bi + 1]; ++k) {
        if (net.adj[k].second == a) out.emplace_back(net.adj[k].first ^ 1U, b);
      }
    }
  }

  /// Whether node-local vertex v may carry a flow (besides its two end GPUs), for a flow inside one node or not.
  [[nodiscard]] bool transit(VertexId v, bool same_node) const {
    switch (g.kind_of(v)) {
      case VertexKind::gpu: return false;
      case VertexKind::nvswitch: return same_node;
      case VertexKind::host:
        return !same_node || fabric == IntraNodeFabric::pcie || fabric == IntraNodeFabric::none ||
               fabric == IntraNodeFabric::nvlink_bridge;
      case VertexKind::nic:
      case VertexKind::ethernet_nic: return !same_node;
      default: return false;
    }
  }
  /// Hops to dst_gpu from the vertices of its node (by local index; kInf where no path inside the node), by a
  /// breadth-first search from dst (links are symmetric). src_gpu: the flow's source when it is on dst's node
  /// (reached but never expanded: GPUs do not transit), else any GPU of another node.
  void node_distances(VertexId src_gpu, VertexId dst_gpu, std::vector<std::uint32_t>& dd,
                      std::vector<VertexId>& queue) const {
    const std::int64_t nd = g.node_of(dst_gpu);
    const bool same_node = g.node_of(src_gpu) == nd;
    dd.assign(static_cast<std::size_t>(gpn + extras), kInf);
    queue.clear();
    dd[local_index(dst_gpu)] = 0;
    queue.push_back(dst_gpu);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const VertexId u = queue[head];
      g.for_each_out(u, [&](LinkId, VertexId w) {
        if (g.node_of(w) != nd) return;
        std::uint32_t& d = dd[local_index(w)];
        if (d != kInf) return;
        if (w == src_gpu) { d = dd[local_index(u)] + 1; return; }
        if (!transit(w, same_node)) return;
        d = dd[local_index(u)] + 1;
        queue.push_back(w);
      });
    }
  }
  /// Routes are moved by whole periods of this many nodes (0: not at all) between nodes below symmetric_nodes
  /// (the nodes of whole units): TranslationSymmetry of one zone's fat tree or single switch.
  std::int64_t period_nodes = 0;
  std::int64_t symmetric_nodes = 0;
  /// node_distances from a GPU of another node to GPU l of a node, per l (set at build; nodes > 1).
  std::vector<std::vector<std::uint32_t>> remote_distances;
  /// The template's links into the network and hops to them (route_exits.hpp; set at build).
  detail::NodeExits exits;
  /// Routes between nodes of one zone's fat tree in closed form (route_fat_tree.hpp; set at build).
  detail::FatTreeRoutes fat_tree;

  /// The fewest-hops ECMP route (Topology::route without its cache), appended to `path`. `hash_used`, when
  /// given, is set true when some hop had more than one candidate (the hash chose), else left as it was.
  void compute_route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash, std::vector<LinkId>& path,
                     bool* hash_used = nullptr) const;
  /// Appends node 0's route between the local GPUs of src_gpu and dst_gpu (one node's), moved to their node,
  /// when it does not depend on the hash (route_cache.hpp's NodeRouteCache, which proves it); false otherwise
  /// (nothing appended).
  bool append_node_route(VertexId src_gpu, VertexId dst_gpu, std::vector<LinkId>& out) const;

 private:
  static std::uint64_t next_instance() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
  }
};

Topology::Topology(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::~Topology() = default;

std::int64_t Topology::node_count() const { return impl_->nodes; }
int Topology::gpus_per_node() const { return impl_->gpn; }
std::int64_t Topology::gpu_count() const { return impl_->gpus; }
VertexId Topology::gpu(std::int64_t node, int local) const {
  if (node < 0 || node >= impl_->nodes || local < 0 || local >= impl_->gpn) {
    throw std::out_of_range("Topology::gpu: no GPU " + std::to_string(local) + " on node " + std::to_string(node));
  }
  return static_cast<VertexId>(node * impl_->gpn + local);
}
std::size_t Topology::vertex_count() const { return impl_->g.vertex_count(); }
VertexInfo Topology::vertex(VertexId v) const {
  if (v >= vertex_count()) throw std::out_of_range("Topology::vertex: no vertex " + std::to_string(v));
  return impl_->g.info(v);
}
std::size_t Topology::link_count() const { return impl_->g.link_total; }
Link Topology::link(LinkId id) const {
  if (id >= impl_->g.link_total) throw std::out_of_range("Topology::link: no link " + std::to_string(id));
  return impl_->g.link(id);
}
bool Topology::is_inter_zone(LinkId id) const { return id >= impl_->g.pairs_first && id < impl_->g.link_total; }
std::vector<LinkId> Topology::out_links(VertexId v) const {
  if (v >= impl_->first_network) {
    throw std::invalid_argument("Topology::out_links: vertex " + std::to_string(v) + " is not a node's vertex");
  }
  std::vector<LinkId> out;
  impl_->g.for_each_out(v, [&out](LinkId id, VertexId) { out.push_back(id); });
  return out;
}
int Topology::zone_of_node(std::int64_t node) const {
  if (node < 0 || node >= impl_->nodes) throw std::out_of_range("Topology::zone_of_node: no node " + std::to_string(node));
  return impl_->g.node_zone[static_cast<std::size_t>(node)];
}
const std::vector<ZoneSpec>& Topology::zones() const { return impl_->zones; }
const FabricShape& Topology::fabric_shape() const { return impl_->shape; }
const detail::NetworkAdjacency& Topology::network_adjacency() const { return impl_->adjacency(); }

// ------------------------------------------------------------------------------------------------- building

std::string fat_tree_radix_error(int64_t radix) {
  if (radix >= 2 && radix % 2 == 0) return {};
  return "must be even and at least 2, got " + std::to_string(radix);
}

Topology build_topology(const VmSize& vm_size, const DeviceSpec& device, const TopologyConfig& config) {
  // An NVLink domain of several VMs (GB200 NVL72) is built as one node with the GPUs, NICs and Ethernet of its
  // VMs: the domain's GPUs meet at one NVSwitch, and everything past it is per GPU or per NIC as before.
  // A job may take only some VMs of each domain (config.vms_per_nvlink_domain): the domain is built of those.
  const std::int64_t domain = vm_size.domain_vms(config.nodes, config.vms_per_nvlink_domain);
  VmSize vm = vm_size;
  TopologyConfig cfg = config;
  {
    std::vector<std::int64_t> zone_nodes;
    for (const ZoneSpec& z : config.zones) zone_nodes.push_back(z.nodes);
    const std::string why = vm_size.domain_problem(config.nodes, config.vms_per_nvlink_domain, zone_nodes);
    if (!why.empty()) bad(why);
  }
  if (domain > 1) {
    vm.devices_per_vm = static_cast<int>(vm_size.devices_per_vm * domain);
    vm.infiniband_ports = static_cast<int>(vm_size.infiniband_ports * domain);
    vm.ethernet_bandwidth = vm_size.ethernet_bandwidth * static_cast<double>(domain);
    cfg.nodes = config.nodes / domain;
    for (ZoneSpec& z : cfg.zones) z.nodes /= domain;
    if (cfg.inter_zone_bandwidth_per_node) *cfg.inter_zone_bandwidth_per_node *= static_cast<double>(domain);
  }
  // ---- validation
  if (cfg.nodes < 1) bad("nodes must be >= 1, got " + std::to_string(cfg.nodes));
  if (vm.devices_per_vm < 1) bad("VM size '" + vm.name + "' has no devices");
  if (vm.device != device.name) bad("VM size '" + vm.name + "' holds '" + vm.device + "', not '" + device.name + "'");
  const bool needs_fabric_rate = vm.fabric != IntraNodeFabric::none;
  if (needs_fabric_rate && !(device.fabric_bandwidth_per_direction.value() > 0.0)) {
    bad("device '" + device.name + "' has no fabric_bandwidth_per_direction");
  }
  if (vm.infiniband_ports < 0) bad("negative infiniband_ports");
  if (vm.infiniband_ports > 0 && !(vm.infiniband_port_rate.value() > 0.0)) bad("infiniband_port_rate must be > 0");
  if (vm.infiniband_ports == 0 && !(vm.ethernet_bandwidth.value() > 0.0)) {
    bad("VM '" + vm.name + "' has neither InfiniBand nor an Ethernet rate");
  }
  if (cfg.fat_tree_tiers != 2 && cfg.fat_tree_tiers != 3) {
    bad("fat_tree_tiers must be 2 or 3, got " + std::to_string(cfg.fat_tree_tiers));
  }
  if (const std::string why = fat_tree_radix_error(cfg.fat_tree_radix); !why.empty()) bad("fat_tree_radix " + why);
  if (!std::isfinite(cfg.oversubscription) || cfg.oversubscription < 1.0) {
    bad("oversubscription must be >= 1, got " + std::to_string(cfg.oversubscription));
  }
  std::vector<ZoneSpec> zones = cfg.zones;
  if (zones.empty()) zones.push_back(ZoneSpec{"zone-0", cfg.nodes});
  {
    std::int64_t sum = 0;
    std::set<std::string> names;
    for (const auto& z : zones) {
      if (z.name.empty()) bad("a zone has an empty name");
      if (!names.insert(z.name).second) bad("zone '" + z.name + "' is named twice");
      if (z.nodes < 1) bad("zone '" + z.name + "' has " + std::to_string(z.nodes) + " nodes; must be >= 1");
      sum += z.nodes;
    }
    if (sum != cfg.nodes) {
      bad("zone node counts sum to " + std::to_string(sum) + " but nodes = " + std::to_string(cfg.nodes));
    }
  }
  const bool multi_zone = zones.size() > 1;
  if (multi_zone) {
    if (!(cfg.inter_zone_latency.value() >= 0.0)) bad("inter_zone_latency must be >= 0");
    if (!(vm.ethernet_bandwidth.value() > 0.0)) bad("zones need the VM's Ethernet NIC, but its rate is 0");
    if (cfg.inter_zone_bandwidth_per_node && !(cfg.inter_zone_bandwidth_per_node->value() > 0.0)) {
      bad("inter_zone_bandwidth_per_node must be > 0");
    }
  }

  auto impl = std::make_unique<Topology::Impl>();
  Topology::Impl& t = *impl;
  t.nodes = cfg.nodes;
  t.gpn = vm.devices_per_vm;
  t.fabric = vm.fabric;
  t.zones = zones;
  const bool infiniband = vm.infiniband_ports > 0;
  t.nics = infiniband ? vm.infiniband_ports : 1;
  const bool rail_nics = infiniband && vm.infiniband_ports == vm.devices_per_vm;
  int k = 0;
  if (switched_nvlink(vm.fabric)) t.off_nvswitch = k++;
  t.off_host = k++;
  t.off_nic0 = k;
  k += t.nics;
  if (infiniband && multi_zone) t.off_eth = k++;
  t.extras = k;

  // Sizes: per zone, the network switches of its fabric.
  const int half = cfg.fat_tree_radix / 2;
  struct ZoneFabric {
    std::int64_t first_node = 0;
    std::int64_t node_count = 0;
    VertexId first_switch = 0;
    std::int64_t tier0 = 0;   // single switch / leaves / rails
    std::int64_t tier1 = 0;   // spines (three-tier fat tree: aggregation switches, radix/2 per pod)
    std::int64_t tier2 = 0;   // three-tier fat tree: core switches
  };
  std::vector<ZoneFabric> zf(zones.size());
  const double vertices_before_network =
      static_cast<double>(cfg.nodes) * (static_cast<double>(t.gpn) + static_cast<double>(t.extras));
  if (vertices_before_network > 1e9) bad("cluster too large (" + std::to_string(cfg.nodes) + " nodes)");
  t.gpus = static_cast<VertexId>(cfg.nodes * t.gpn);
  t.first_network = static_cast<VertexId>(cfg.nodes * (t.gpn + t.extras));
  {
    std::int64_t node = 0;
    std::int64_t next = t.first_network;
    for (std::size_t z = 0; z < zones.size(); ++z) {
      ZoneFabric& f = zf[z];
      f.first_node = node;
      f.node_count = zones[z].nodes;
      node += f.node_count;
      f.first_switch = static_cast<VertexId>(next);
      const std::int64_t zone_nics = f.node_count * t.nics;
      switch (cfg.fabric) {
        case FabricKind::single_switch: f.tier0 = 1; break;
        case FabricKind::fat_tree:
          f.tier0 = (zone_nics + half - 1) / half;
          if (cfg.fat_tree_tiers == 3 && f.tier0 > half) {
            f.tier1 = (f.tier0 + half - 1) / half * half;
            f.tier2 = static_cast<std::int64_t>(half) * half;
          } else if (f.tier0 > 1) {
            f.tier1 = half;
          }
          break;
        case FabricKind::rail_optimized:
          f.tier0 = t.nics;
          f.tier1 = t.nics > 1 ? half : 0;
          break;
      }
      next += f.tier0 + f.tier1 + f.tier2;
    }
    const std::int64_t gateways = multi_zone ? static_cast<std::int64_t>(zones.size()) : 0;
    if (next + gateways >= std::int64_t{std::numeric_limits<VertexId>::max()}) {
      bad("cluster too large: more than 2^32 vertices");
    }
    t.network_count = static_cast<std::size_t>(next + gateways - t.first_network);
  }
  t.shape = FabricShape{cfg.fabric, static_cast<int>(zones.size()), t.nics, rail_nics, half,
                        zf[0].tier2 > 0 ? 3 : (zf[0].tier1 > 0 ? 2 : 1)};
  std::vector<int>& node_zone = t.g.node_zone;  // per node (one copy: the graph's)
  node_zone.resize(static_cast<std::size_t>(cfg.nodes));
  for (std::size_t z = 0; z < zones.size(); ++z) {
    for (std::int64_t n = 0; n < zf[z].node_count; ++n) {
      node_zone[static_cast<std::size_t>(zf[z].first_node + n)] = static_cast<int>(z);
    }
  }

  // ---- vertices: node-local ones are computed (detail::ClusterGraph::info), network ones stored
  detail::ClusterGraph& g = t.g;
  g.nodes = cfg.nodes;
  g.gpn = t.gpn;
  g.gpus = t.gpus;
  g.extras = t.extras;
  g.nics = t.nics;
  g.off_nic0 = t.off_nic0;
  g.fabric = cfg.fabric;
  g.half = half;
  g.first_network = t.first_network;
  g.extra_kind.resize(static_cast<std::size_t>(t.extras));
  for (int e = 0; e < t.extras; ++e) {
    VertexKind kind = VertexKind::nic;
    if (e == t.off_nvswitch) kind = VertexKind::nvswitch;
    else if (e == t.off_host) kind = VertexKind::host;
    else if (e == t.off_eth) kind = VertexKind::ethernet_nic;
    else if (!infiniband) kind = VertexKind::ethernet_nic;
    g.extra_kind[static_cast<std::size_t>(e)] = kind;
  }
  g.network_info.reserve(t.network_count);
  for (std::size_t z = 0; z < zones.size(); ++z) {
    for (std::int64_t s = 0; s < zf[z].tier0; ++s) {
      g.network_info.push_back(VertexInfo{VertexKind::network_switch, -1, static_cast<int>(z), 0});
    }
    for (std::int64_t s = 0; s < zf[z].tier1; ++s) {
      g.network_info.push_back(VertexInfo{VertexKind::network_switch, -1, static_cast<int>(z), 1});
    }
    for (std::int64_t s = 0; s < zf[z].tier2; ++s) {
      g.network_info.push_back(VertexInfo{VertexKind::network_switch, -1, static_cast<int>(z), 2});
    }
  }
  const VertexId first_gateway = t.first_network + static_cast<VertexId>(g.network_info.size());
  g.first_gateway = first_gateway;
  if (multi_zone) {
    for (std::size_t z = 0; z < zones.size(); ++z) {
      g.network_info.push_back(VertexInfo{VertexKind::zone_gateway, -1, static_cast<int>(z), 0});
    }
  }

  // ---- links: intra-node, node 0's block (every node's is the same, moved: ClusterGraph::link)
  const units::BytesPerSecond fabric_rate = device.fabric_bandwidth_per_direction;
  const units::BytesPerSecond port_rate = infiniband ? units::to_bytes_per_second(vm.infiniband_port_rate)
                                                     : units::to_bytes_per_second(vm.ethernet_bandwidth);
  const units::BytesPerSecond ethernet_rate = units::to_bytes_per_second(vm.ethernet_bandwidth);
  const LinkClass net_class = infiniband ? LinkClass::infiniband : LinkClass::ethernet;
  const units::Seconds net_latency = infiniband ? kInfinibandHopLatency : kEthernetHopLatency;
  const bool host_is_fabric = vm.fabric == IntraNodeFabric::pcie || vm.fabric == IntraNodeFabric::none;
  const units::BytesPerSecond host_rate =
      host_is_fabric && fabric_rate.value() > 0.0 ? fabric_rate : kHostPcieBandwidth;
  g.port_rate = port_rate;
  g.net_latency = net_latency;
  g.net_class = net_class;
  g.ethernet_rate = ethernet_rate;
  {
    std::vector<Link>& links = g.tmpl_links;
    const auto pair = [&links](VertexId a, VertexId b, units::BytesPerSecond cap, units::Seconds lat, LinkClass cls) {
      links.push_back(Link{a, b, cap, lat, cls});
      links.push_back(Link{b, a, cap, lat, cls});
    };
    const std::int64_t n = 0;
    const VertexId g0 = 0;
    if (switched_nvlink(vm.fabric)) {
      for (int l = 0; l < t.gpn; ++l) {
        pair(g0 + l, t.extra(n, t.off_nvswitch), fabric_rate, kNvlinkHopLatency, LinkClass::nvlink);
      }
    } else if (vm.fabric == IntraNodeFabric::nvlink_bridge) {
      for (int l = 0; l + 1 < t.gpn; l += 2) pair(g0 + l, g0 + l + 1, fabric_rate, kNvlinkHopLatency, LinkClass::nvlink);
    } else if (vm.fabric == IntraNodeFabric::infinity_fabric && t.gpn > 1) {
      const units::BytesPerSecond peer = fabric_rate / static_cast<double>(t.gpn - 1);
      for (int a = 0; a < t.gpn; ++a) {
        for (int b = a + 1; b < t.gpn; ++b) pair(g0 + a, g0 + b, peer, kInfinityFabricLatency, LinkClass::infinity_fabric);
      }
    }
    for (int l = 0; l < t.gpn; ++l) pair(g0 + l, t.extra(n, t.off_host), host_rate, kPcieHopLatency, LinkClass::pcie);
    for (int i = 0; i < t.nics; ++i) {
      const VertexId nic = t.extra(n, t.off_nic0 + i);
      if (rail_nics) pair(g0 + i, nic, port_rate, kPcieHopLatency, LinkClass::pcie);
      else pair(t.extra(n, t.off_host), nic, port_rate, kPcieHopLatency, LinkClass::pcie);
    }
    if (t.off_eth >= 0) {
      pair(t.extra(n, t.off_host), t.extra(n, t.off_eth), ethernet_rate, kPcieHopLatency, LinkClass::pcie);
    }
  }
  const std::uint64_t block = g.tmpl_links.size();
  {
    // Link ids must fit LinkId: the per-node blocks, NIC links and switch tiers (counted as the builder below
    // adds them), the gateway links.
    std::uint64_t total = static_cast<std::uint64_t>(cfg.nodes) * (block + 2 * static_cast<std::uint64_t>(t.nics));
    for (const ZoneFabric& f : zf) {
      total += 2 * static_cast<std::uint64_t>(f.tier0 * (f.tier2 > 0 ? half : f.tier1) + f.tier1 * (f.tier2 > 0 ? half : 0));
    }
    if (multi_zone) total += 2 * static_cast<std::uint64_t>(cfg.nodes) + zones.size() * zones.size();
    if (total >= std::numeric_limits<LinkId>::max()) bad("cluster too large: more than 2^32 links");
  }
  if (multi_zone) g.stored.reserve(zones.size() * (zones.size() - 1));  // the gateway pairs, the only links stored
  g.intra_end = static_cast<LinkId>(static_cast<std::uint64_t>(cfg.nodes) * block);
  LinkId next_id = g.intra_end;
  const auto store_pair = [&](VertexId a, VertexId b, units::BytesPerSecond cap, units::Seconds lat, LinkClass cls) {
    g.stored.push_back(Link{a, b, cap, lat, cls});
    g.stored.push_back(Link{b, a, cap, lat, cls});
    next_id += 2;
  };

  // ---- links: inter-node fabric, per zone: the NIC links, then the switch tiers (both computed:
  // ClusterGraph::link, tier_pair)
  for (std::size_t z = 0; z < zones.size(); ++z) {
    const ZoneFabric& f = zf[z];
    detail::ZoneSection section;
    section.first_node = f.first_node;
    section.node_count = f.node_count;
    section.first_switch = f.first_switch;
    section.tier0 = f.tier0;
    section.tier1 = f.tier1;
    section.tier2 = f.tier2;
    section.nic_first = next_id;
    next_id += static_cast<LinkId>(2 * f.node_count * t.nics);
    section.tier_first = next_id;
    if (f.tier2 > 0) {
      // Three tiers: leaf a of pod a / half <-> every aggregation switch of its pod; aggregation switch j of
      // every pod <-> core switches j * half .. j * half + half - 1 (tier_pair). Every up-link carries the leaf's
      // (half * port rate) / oversubscription / half; the upper tier is not oversubscribed.
      section.up = port_rate / cfg.oversubscription;
      next_id += static_cast<LinkId>(2 * (f.tier0 * half + f.tier1 * half));
    } else if (f.tier1 > 0) {
      // A leaf has `half` down ports (fat tree), or one per node of the zone (rail switch): its up-links carry
      // down ports x port rate / oversubscription in all. A rail "switch" of a few nodes is still a physical
      // leaf with `half` up-ports at the port rate (NVIDIA DGX SuperPOD reference architecture: 32 down, 32 up
      // per leaf), so a single cross-rail flow runs at the port rate, not at node_count / half of it; a rail
      // of more than `half` nodes stands for several leaves whose up-links add up.
      const double down_ports = cfg.fabric == FabricKind::fat_tree
                                    ? static_cast<double>(half)
                                    : static_cast<double>(std::max<std::int64_t>(f.node_count, half));
      // Every leaf (rail) <-> every spine (tier_pair).
      section.up = port_rate * down_ports / cfg.oversubscription / static_cast<double>(f.tier1);
      next_id += static_cast<LinkId>(2 * f.tier0 * f.tier1);
    }
    section.tier_end = next_id;
    g.zone_sections.push_back(section);
  }

  // ---- links: zones (each node's Ethernet NIC <-> its gateway computed, the gateway pairs stored)
  g.eth_first = next_id;
  if (multi_zone) {
    g.eth_offset = t.off_eth >= 0 ? t.off_eth : t.off_nic0;
    next_id += static_cast<LinkId>(2 * cfg.nodes);
  }
  g.pairs_first = next_id;
  if (multi_zone) {
    const units::BytesPerSecond per_node = cfg.inter_zone_bandwidth_per_node.value_or(ethernet_rate);
    for (std::size_t a = 0; a < zones.size(); ++a) {
      for (std::size_t b = a + 1; b < zones.size(); ++b) {
        const auto smaller = static_cast<double>(std::min(zones[a].nodes, zones[b].nodes));
        store_pair(first_gateway + static_cast<VertexId>(a), first_gateway + static_cast<VertexId>(b),
                   per_node * smaller, cfg.inter_zone_latency, LinkClass::inter_zone);
      }
    }
  }
  g.link_total = next_id;

  // ---- out-links of node 0's vertices (template), in id order: intra, NIC -> switch, Ethernet -> gateway
  {
    const std::size_t locals = static_cast<std::size_t>(t.gpn + t.extras);
    std::vector<std::vector<detail::TemplateEdge>> out(locals);
    for (LinkId id = 0; id < g.tmpl_links.size(); ++id) {
      const Link& l = g.tmpl_links[id];
      out[t.local_index(l.src)].push_back(detail::TemplateEdge{l.dst, id, 0, detail::TemplateEdge::Kind::intra});
    }
    for (int i = 0; i < t.nics; ++i) {
      out[static_cast<std::size_t>(t.gpn + t.off_nic0 + i)].push_back(
          detail::TemplateEdge{0, 0, i, detail::TemplateEdge::Kind::nic_switch});
    }
    if (g.eth_offset >= 0) {
      out[static_cast<std::size_t>(t.gpn + g.eth_offset)].push_back(
          detail::TemplateEdge{0, 0, 0, detail::TemplateEdge::Kind::ethernet_gateway});
    }
    g.tmpl_begin.assign(locals + 1, 0);
    for (std::size_t v = 0; v < locals; ++v) {
      g.tmpl_begin[v] = g.tmpl_edges.size();
      g.tmpl_edges.insert(g.tmpl_edges.end(), out[v].begin(), out[v].end());
    }
    g.tmpl_begin[locals] = g.tmpl_edges.size();
  }


  // ---- routing tables: hop distances from every NIC-facing switch and gateway to every network vertex,
  // over network-to-network links only (links are symmetric, so this is also the distance to it); each row is
  // searched on first use (Impl::dist_row).
  const std::size_t nn = t.network_count;
  t.target_row.assign(nn, -1);
  std::int32_t rows = 0;
  for (std::size_t w = 0; w < nn; ++w) {
    const VertexInfo info = g.info(t.first_network + static_cast<VertexId>(w));
    if (info.kind == VertexKind::zone_gateway || info.tier == 0) t.target_row[w] = rows++;
  }
  t.row_source.resize(static_cast<std::size_t>(rows));
  for (std::size_t w = 0; w < nn; ++w) {
    if (t.target_row[w] >= 0) t.row_source[static_cast<std::size_t>(t.target_row[w])] = static_cast<VertexId>(w);
  }
  if (cfg.nodes > 1) {
    std::vector<VertexId> queue;
    t.remote_distances.resize(static_cast<std::size_t>(t.gpn));
    for (int l = 0; l < t.gpn; ++l) {
      t.node_distances(static_cast<VertexId>(t.gpn + l), static_cast<VertexId>(l),
                       t.remote_distances[static_cast<std::size_t>(l)], queue);
    }
  }
  std::vector<bool> transit_extra(static_cast<std::size_t>(t.extras));
  for (int x = 0; x < t.extras; ++x) transit_extra[static_cast<std::size_t>(x)] = t.transit(t.extra(0, x), false);
  t.exits = detail::build_node_exits(g, transit_extra);
  t.fat_tree = detail::build_fat_tree_routes(g, t.exits, t.remote_distances, transit_extra);
  if (const std::optional<TranslationSymmetry> sym = translation_symmetry(t.shape, t.gpn)) {
    t.period_nodes = sym->period_nodes;
    t.symmetric_nodes = cfg.nodes / sym->unit_nodes * sym->unit_nodes;
  }
  t.row_once = std::make_unique<std::once_flag[]>(static_cast<std::size_t>(rows));
  t.dist.resize(static_cast<std::size_t>(rows));
  return Topology(std::move(impl));
}

// -------------------------------------------------------------------------------------------------- routing

std::vector<LinkId> Topology::route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash) const {
  std::vector<LinkId> path;
  append_route(src_gpu, dst_gpu, flow_hash, path);
  return path;
}

void Topology::append_route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash,
                            std::vector<LinkId>& out) const {
  const Impl& t = *impl_;
  if (src_gpu >= t.gpus || dst_gpu >= t.gpus) {
    throw std::invalid_argument("Topology::route: vertex " + std::to_string(std::max(src_gpu, dst_gpu)) +
                                " is not a GPU (GPUs are 0.." + std::to_string(t.gpus - 1) + ")");
  }
  if (src_gpu == dst_gpu) return;
  if (src_gpu / static_cast<VertexId>(t.gpn) == dst_gpu / static_cast<VertexId>(t.gpn) &&
      t.append_node_route(src_gpu, dst_gpu, out)) {
    return;
  }
  // Between nodes of one zone's fat tree: the generic walk's path read off the template (route_fat_tree.hpp).
  if (t.fat_tree.enabled &&
      t.fat_tree.append(t.g, src_gpu, dst_gpu, flow_hash, out)) {
    return;
  }
  // Translation by whole periods (models/network/pattern_symmetry.hpp, whose proof holds for one route): on one
  // zone's fat tree or single switch, moving both ends and the hash by D nodes' ranks, D a multiple of the
  // period, moves every vertex and link of the route by D nodes and keeps every ECMP digit. So the route is
  // that of the translate whose lower end is in the first period, moved back (Impl::g.move_link): a ring or
  // tree over thousands of nodes computes the routes of a few.
  std::int64_t moved_nodes = 0;
  if (t.period_nodes > 0) {
    const std::int64_t sn = src_gpu / static_cast<VertexId>(t.gpn), dn = dst_gpu / static_cast<VertexId>(t.gpn);
    if (sn < t.symmetric_nodes && dn < t.symmetric_nodes) {
      const std::int64_t k = std::min(sn, dn) / t.period_nodes * t.period_nodes;
      const auto ranks = static_cast<std::uint64_t>(k) * static_cast<std::uint64_t>(t.gpn);
      if (k > 0 && flow_hash >= ranks) {
        src_gpu -= static_cast<VertexId>(ranks);
        dst_gpu -= static_cast<VertexId>(ranks);
        flow_hash -= ranks;
        moved_nodes = k;
      }
    }
  }
  const auto emit = [&](std::vector<LinkId>::const_iterator first, std::vector<LinkId>::const_iterator last) {
    if (moved_nodes == 0) {
      out.insert(out.end(), first, last);
    } else {
      for (; first != last; ++first) out.push_back(t.g.move_link(*first, moved_nodes));
    }
  };
  // The per-thread route cache (route_cache.hpp), keyed to this topology.
  thread_local detail::RouteCache cache;
  if (cache.instance != t.instance || cache.size >= detail::RouteCache::kEntries) cache.reset(t.instance);
  std::size_t i = cache.home(src_gpu, dst_gpu, flow_hash);
  for (; cache.slots[i].src != detail::RouteCache::kNoVertex; i = (i + 1) & (cache.slots.size() - 1)) {
    const detail::RouteCache::Slot& e = cache.slots[i];
    if (e.src == src_gpu && e.dst == dst_gpu && e.hash == flow_hash) {
      emit(cache.links.begin() + e.offset, cache.links.begin() + e.offset + e.length);
      return;
    }
  }
  // Computed straight into the cache's link store (no vector per route), then copied out.
  const std::size_t offset = cache.links.size();
  try {
    t.compute_route(src_gpu, dst_gpu, flow_hash, cache.links);
  } catch (...) {
    cache.links.resize(offset);
    throw;
  }
  const std::size_t length = cache.links.size() - offset;
  cache.slots[i] = detail::RouteCache::Slot{src_gpu, dst_gpu, flow_hash, static_cast<std::uint32_t>(offset),
                        static_cast<std::uint32_t>(length)};
  if (2 * ++cache.size > cache.slots.size()) cache.grow();
  emit(cache.links.begin() + static_cast<std::ptrdiff_t>(offset), cache.links.end());
}

bool Topology::Impl::append_node_route(VertexId src_gpu, VertexId dst_gpu, std::vector<LinkId>& out) const {
  thread_local detail::NodeRouteCache cache;
  if (cache.instance != instance) cache.reset(instance, static_cast<std::size_t>(gpn));
  const auto node = static_cast<std::int64_t>(src_gpu / static_cast<VertexId>(gpn));
  const VertexId ls = src_gpu % static_cast<VertexId>(gpn), ld = dst_gpu % static_cast<VertexId>(gpn);
  const std::size_t k = static_cast<std::size_t>(ls) * cache.gpn + ld;
  if (cache.first[k] == detail::NodeRouteCache::kUnknown) {
    const std::size_t offset = cache.links.size();
    bool hashed = false;
    try {
      compute_route(ls, ld, 0, cache.links, &hashed);
    } catch (const std::logic_error&) {
      hashed = true;  // no path: the generic search throws, naming the flow's own GPUs
    }
    for (std::size_t i = offset; i < cache.links.size(); ++i) hashed = hashed || cache.links[i] >= g.intra_end;
    if (hashed || cache.links.size() > detail::NodeRouteCache::kHashed) {
      cache.links.resize(offset);
      cache.first[k] = detail::NodeRouteCache::kHashed;
    } else {
      cache.first[k] = static_cast<std::uint32_t>(offset);
      cache.length[k] = static_cast<std::uint32_t>(cache.links.size() - offset);
    }
  }
  if (cache.first[k] == detail::NodeRouteCache::kHashed) return false;
  const auto shift = static_cast<LinkId>(node * static_cast<std::int64_t>(g.tmpl_links.size()));
  const LinkId* path = cache.links.data() + cache.first[k];
  for (std::uint32_t i = 0; i < cache.length[k]; ++i) out.push_back(path[i] + shift);  // g.move_link, inside
  return true;
}

std::vector<LinkId> Topology::search_route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash) const {
  const Impl& t = *impl_;
  if (src_gpu >= t.gpus || dst_gpu >= t.gpus) throw std::invalid_argument("Topology::search_route: not a GPU");
  std::vector<LinkId> path;
  if (src_gpu != dst_gpu) t.compute_route(src_gpu, dst_gpu, flow_hash, path);
  return path;
}

bool Topology::closed_form_route(VertexId src_gpu, VertexId dst_gpu) const {
  const Impl& t = *impl_;
  return src_gpu < t.gpus && dst_gpu < t.gpus && t.fat_tree.applies(t.g, src_gpu, dst_gpu);
}

void Topology::Impl::compute_route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash,
                                   std::vector<LinkId>& path, bool* hash_used) const {
  const Impl& t = *this;
  const detail::ClusterGraph& graph = t.g;
  const std::int64_t ns = graph.node_of(src_gpu);
  const std::int64_t nd = graph.node_of(dst_gpu);
  const bool same_node = ns == nd;
  const bool same_zone = graph.node_zone[static_cast<std::size_t>(ns)] == graph.node_zone[static_cast<std::size_t>(nd)];
  if (!same_node) (void)t.adjacency();  // the network's lists, built by the first search between nodes
  const std::size_t local_count = static_cast<std::size_t>(t.gpn + t.extras);

  auto transit = [&](VertexId v) { return t.transit(v, same_node); };

  // Network vertices adjacent to dst's node, with the hops from each to dst.
  struct Ingress {
    const std::uint16_t* dist;  // distances from the network vertex f (Impl::dist_row)
    std::uint32_t hops;  // hops from f to dst
    VertexId f;
    LinkId down;         // link f -> u
    VertexId u;          // dst-node vertex below f
  };

  // Hops to dst from the vertices of dst's node: BFS from dst (links are symmetric).
  // Scratch buffers reused across calls on this thread: route() runs once per flow of every collective solve,
  // and their allocations were a tenth of a layout search's time.
  struct Scratch {
    std::vector<std::uint32_t> dd, ds, via;
    std::vector<VertexId> queue;
    std::vector<std::pair<LinkId, VertexId>> candidates;
    std::vector<Ingress> ingress;
    std::vector<std::pair<const std::uint16_t*, std::uint32_t>> rows;
  };
  thread_local Scratch scratch;
  // Hops to dst from its node's vertices, by local index: read in place from another node (the same for every
  // node, the node's links being one template: computed at build), searched for a flow inside the node.
  const std::uint32_t* dd = nullptr;
  if (same_node) {
    t.node_distances(src_gpu, dst_gpu, scratch.dd, scratch.queue);
    dd = scratch.dd.data();
  } else {
    dd = t.remote_distances[dst_gpu % static_cast<VertexId>(t.gpn)].data();
  }

  std::vector<Ingress>& ingress = scratch.ingress;
  ingress.clear();
  if (!same_node) {  // dst's node's exits (route_exits.hpp), in the order of its extras' out-links
    for (const detail::NodeExits::Exit& x : t.exits.exits) {
      const std::uint32_t du = dd[static_cast<std::size_t>(t.gpn + x.extra)];
      if (du == kInf) continue;
      const VertexId f = detail::NodeExits::target(graph, x, nd);
      if (same_zone && f >= graph.first_gateway) continue;  // gateways are the last network vertices
      const std::int32_t row = t.target_row[f - t.first_network];
      // Links come in pairs 2k / 2k+1, so the link f -> u is the partner of u -> f.
      if (row >= 0) {
        ingress.push_back({t.dist_row(static_cast<std::size_t>(row)), du + 1, f,
                           detail::NodeExits::link(graph, x, nd) ^ 1U, t.extra(nd, x.extra)});
      }
    }
  }
  // The distinct (row, hops) of `ingress`: the NICs of a node often share their switch (eight rails on one
  // leaf), and net_distance is a minimum over them, so duplicates change nothing.
  std::vector<std::pair<const std::uint16_t*, std::uint32_t>>& rows = scratch.rows;
  rows.clear();
  for (const Ingress& in : ingress) {
    const std::pair<const std::uint16_t*, std::uint32_t> r{in.dist, in.hops};
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
  }
  auto net_distance = [&](VertexId w) -> std::uint32_t {
    if (same_node) return kInf;
    if (same_zone && w >= graph.first_gateway) return kInf;
    const std::size_t wi = w - t.first_network;
    std::uint32_t best = kInf;
    for (const auto& [row_dist, row_hops] : rows) {
      const std::uint16_t d = row_dist[wi];
      if (d != kFar) best = std::min(best, d + row_hops);
    }
    return best;
  };

  // Hops to dst from the vertices of src's node (other node): the fixed point's least solution in closed form
  // (route_exits.hpp): a transit extra's distance is the best over the node's exits of (hops to the exit's
  // vertex + 1 + the exit target's network distance), computed when first asked (a route reads a few); the
  // source GPU, never a next hop, relaxes once over its own out-links. Other vertices of the node: kInf.
  std::vector<std::uint32_t>& ds = scratch.ds;
  std::vector<std::uint32_t>& via = scratch.via;  // per exit of src's node: 1 + its target's distance, or kInf
  const detail::NodeExits& ex = t.exits;
  constexpr std::uint32_t kUnset = kInf + 1;
  auto source_distance = [&](std::size_t li) -> std::uint32_t {
    if (ds[li] == kUnset) ds[li] = ex.extra_distance(li - static_cast<std::size_t>(t.gpn), via.data(), kInf);
    return ds[li];
  };
  auto distance = [&](VertexId w) -> std::uint32_t {
    if (w >= t.first_network) return net_distance(w);
    const std::int64_t n = graph.node_of(w);
    if (n == nd) return dd[t.local_index(w)];
    if (n == ns) return source_distance(t.local_index(w));
    return kInf;
  };
  if (!same_node) {
    ds.assign(local_count, kInf);
    for (const int k : ex.transit_extras) ds[static_cast<std::size_t>(t.gpn + k)] = kUnset;
    ex.fill_via(graph, ns, net_distance, kInf, via);
    std::uint32_t best = kInf;
    graph.for_each_out(src_gpu, [&](LinkId, VertexId w) {
      if (w < t.gpus) return;  // GPUs are never transit, and dst is on another node
      if (w < t.first_network && !transit(w)) return;
      const std::uint32_t d = distance(w);
      if (d != kInf && d + 1 < best) best = d + 1;
    });
    ds[t.local_index(src_gpu)] = best;
  }

  // Walk down the distance, taking candidate flow_hash % count among the shortest next hops.
  std::uint32_t remaining = same_node ? dd[t.local_index(src_gpu)] : ds[t.local_index(src_gpu)];
  if (remaining == kInf) {
    throw std::logic_error("Topology::route: no path from GPU " + std::to_string(src_gpu) + " to GPU " +
                           std::to_string(dst_gpu));
  }
  std::vector<std::pair<LinkId, VertexId>>& candidates = scratch.candidates;
  VertexId v = src_gpu;
  std::uint64_t hash_digits = flow_hash;
  while (v != dst_gpu) {
    candidates.clear();
    if (v >= t.first_network) {
      // A network switch: its network neighbours from the CSR, its links down into dst's node from `ingress`
      // (a rail switch has thousands of NIC neighbours; scanning them all would dominate the route).
      // A next hop w is on a shortest path when dist_i(w) + hops_i == remaining - 1 for some ingress i (and
      // never less: remaining is v's distance). When no ingress has hops_i < remaining - 1, that needs
      // dist_i(w) == 0, i.e. w is the ingress switch f_i itself: look up v's links to those switches instead of
      // scanning v's neighbours (a spine of a 131,072-GPU tree has 4,096 leaves). The same candidate set.
      const std::size_t vi = v - t.first_network;
      bool scan = false;
      for (const Ingress& in : ingress) scan = scan || in.hops + 1 < remaining;
      if (hash_used != nullptr) *hash_used = true;  // never inside a node; not proved hash-free here
      if (scan && rows.size() == 1) {
        // One row (a node's NICs on one leaf, or on one rail; then no link down is a candidate, its hops being
        // < remaining - 1): net_distance(w) + 1 == remaining is that row's entry being remaining - 1 - hops
        // (never kFar), a gateway excluded within one zone as net_distance does.
        const auto* pick = detail::pick_at_distance(
            t.net.adj.data() + t.net.begin[vi], t.net.adj.data() + t.net.begin[vi + 1], rows.front().first,
            t.first_network, remaining - 1 - rows.front().second,
            same_zone ? graph.first_gateway : std::numeric_limits<VertexId>::max(), hash_digits);
        if (pick == nullptr) throw std::logic_error("Topology::route: routing tables inconsistent");
        path.push_back(pick->first);
        v = pick->second;
        --remaining;
        continue;
      } else if (scan) {
        for (std::size_t k = t.net.begin[vi]; k < t.net.begin[vi + 1]; ++k) {
          if (net_distance(t.net.adj[k].second) + 1 == remaining) candidates.push_back(t.net.adj[k]);
        }
      } else {
        for (std::size_t i = 0; i < ingress.size(); ++i) {
          const Ingress& in = ingress[i];
          if (in.hops + 1 != remaining) continue;
          bool seen = false;  // several ingress entries may share a switch: take its links once
          for (std::size_t j = 0; j < i && !seen; ++j) seen = ingress[j].hops + 1 == remaining && ingress[j].f == in.f;
          if (!seen) t.append_links_between(v, in.f, candidates);
        }
      }
      for (const Ingress& in : ingress) {
        if (in.f == v && in.hops == remaining) candidates.emplace_back(in.down, in.u);
      }
    } else {
      graph.for_each_out(v, [&](LinkId id, VertexId w) {
        if (w != dst_gpu && w < t.first_network && !transit(w)) return;
        if (distance(w) + 1 == remaining) candidates.emplace_back(id, w);
      });
    }
    if (candidates.empty()) throw std::logic_error("Topology::route: routing tables inconsistent");
    if (hash_used != nullptr && candidates.size() > 1) *hash_used = true;
    // Candidates usually arrive in (link id) order already (the CSR and for_each_out list links by id): the
    // check costs one pass, the sort it skips a few dozen comparisons per hop. Same order either way.
    if (!std::is_sorted(candidates.begin(), candidates.end())) std::sort(candidates.begin(), candidates.end());
    const auto& pick = candidates[hash_digits % candidates.size()];
    hash_digits /= candidates.size();
    path.push_back(pick.first);
    v = pick.second;
    --remaining;
  }
}

}  // namespace clustersim::models
