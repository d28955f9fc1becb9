// The physical network of a cluster (issue 3, part 1): GPUs, intra-node fabric, NICs, network switches and
// availability-zone gateways as a directed graph of links, with shortest-path ECMP routing between GPUs.
//
// The graph is held behind a pimpl: the links and vertices of every node are computed from one node's
// template when asked for (link(), vertex(), routing), and only the switch tiers and zone gateways are stored
// (issue 31: a 131,072-GPU cluster's 1.3 million links are 40 MB stored). A fair-share solver works over link
// ids 0..link_count()-1.
//
// ## Vertices
//   * GPUs first, in global rank order (node-major): vertex id == rank == node * gpus_per_node + local.
//   * Per node, after all GPUs: the intra-node fabric switch (NVSwitch for fabric "nvswitch"), the host
//     PCIe switch / root complex ("host": the PCIe switch of fabric "pcie" and of single-GPU VMs), the NICs
//     (one per InfiniBand port; one Ethernet NIC of ethernet_bandwidth for VMs without InfiniBand), and, only
//     when the cluster has more than one zone and the VM has InfiniBand, a front-end Ethernet NIC.
//   * Network switches per zone (single switch; fat-tree leaves and spines; rails and rail spines), then one
//     gateway per zone (only with more than one zone).
//
// ## Links (every physical link is two directed links with the same capacity and latency: ids 2k and 2k+1,
//    so link(id ^ 1) is the reverse of link(id))
//   * nvswitch: GPU <-> NVSwitch, class nvlink, capacity DeviceSpec::fabric_bandwidth_per_direction
//     (H100: 450 GB/s), latency kNvlinkHopLatency. GPU -> GPU inside a node is 2 hops. nvlink_mesh (V100
//     hybrid cube mesh) is built the same way at the GPU's total NVLink rate (topology.cpp, switched_nvlink).
//   * nvlink_bridge (A100 PCIe, H100 NVL): GPU 2k <-> GPU 2k+1, class nvlink, capacity
//     fabric_bandwidth_per_direction (the bridge); other pairs of the node meet at the host PCIe switch
//     (kHostPcieBandwidth), 2 hops.
//   * A node is an NVLink domain: one VM, or VmSize::domain_vms VMs (GB200 NVL72: 18 VMs, 72 GPUs) built as
//     one node with their GPUs, NICs and Ethernet rate; TopologyConfig::nodes and zones count VMs. A job that
//     takes k VMs of each domain (TopologyConfig::vms_per_nvlink_domain: 16 of a rack's 18 trays) gets
//     domains of those k VMs: their GPUs on the domain's NVSwitch, the other trays' GPUs, NICs and links absent
//     (they belong to other jobs; NVLink switch bandwidth per GPU does not depend on how many trays are used).
//   * infinity_fabric (MI300X): full mesh of GPU -> GPU links, class infinity_fabric, capacity
//     fabric_bandwidth_per_direction / (gpus_per_node - 1) each (896 GB/s bidirectional = 448 GB/s per
//     direction over 7 peers = 64 GB/s per peer per direction; devices.toml), latency kInfinityFabricLatency.
//   * pcie (T4 x4) and single-GPU VMs: GPU <-> host PCIe switch, class pcie, capacity
//     fabric_bandwidth_per_direction (T4: PCIe gen3 x16 15.75 GB/s); GPU -> GPU inside a node is 2 hops.
//   * nvswitch / infinity_fabric VMs: GPU <-> host, class pcie, capacity kHostPcieBandwidth (assumption:
//     PCIe gen4 x16), used to reach NICs that are not rail NICs and the front-end Ethernet NIC; never used
//     between two GPUs of one node.
//   * NICs. When infiniband_ports == gpus_per_node every GPU has its own "rail" NIC: GPU i <-> NIC i, class
//     pcie, capacity = the port rate (assumption: the PCIe switch between GPU and NIC is never the bottleneck,
//     gen4 x16 31.5 GB/s > HDR 25 GB/s, gen5 x16 63 GB/s > NDR 50 GB/s), and the rail NIC is NOT attached to
//     the host. Otherwise all NICs hang off the host at the port rate. Latency kPcieHopLatency (NIC + PCIe).
//   * NIC <-> its switch: class infiniband (ethernet for Ethernet-only VMs), capacity = port rate in bytes/s
//     (NDR 400 Gb/s = 50 GB/s), latency kInfinibandHopLatency (kEthernetHopLatency).
//
// ## Inter-node fabrics, one instance per zone (FabricKind)
//   * single_switch: every NIC of the zone on one switch (a non-blocking crossbar of any radix).
//   * fat_tree, two tiers (fat_tree_tiers = 2, default): NICs fill leaves of radix/2 down-ports in order
//     (zone-local NIC index, node-major), leaves = ceil(NICs / (radix/2)); if there is more than one leaf,
//     radix/2 spines, each leaf linked to every spine. Leaf-spine link capacity = (radix/2 * port rate) /
//     oversubscription / spines (the leaf's full down-port capacity, populated or not, so all leaves are
//     alike). Spines are given whatever radix they need (a real 64-port two-tier tree stops at 2,048 NICs).
//   * fat_tree, three tiers (fat_tree_tiers = 3, used when the zone needs more than radix/2 leaves, else two
//     tiers are built): pods of radix/2 leaves and radix/2 aggregation switches (tier 1), leaf <-> every
//     aggregation switch of its pod; (radix/2)^2 core switches (tier 2), aggregation switch j of every pod <->
//     cores j*radix/2 .. (j+1)*radix/2-1 (the k-ary fat tree of Al-Fares et al., SIGCOMM 2008). Every
//     up-link = port rate / oversubscription (oversubscribed at the leaf only). Cores get whatever radix the
//     pod count needs.
//   * rail_optimized: NIC i of every node on rail switch i (each rail one non-blocking switch); if there is
//     more than one rail, radix/2 spines join the rails: rail-spine capacity =
//     (nodes in zone * port rate) / oversubscription / spines. GPU i -> GPU i of another node: 1 rail switch.
//     GPU i -> GPU j (i != j) of another node goes rail i -> spine -> rail j (no PXN: GPUs never forward).
//
// ## Availability zones
// Nodes are split over zones in the given order (zone 0 gets nodes 0..n0-1, ...). Each zone has its own fabric
// instance; InfiniBand does not cross zones. Cross-zone traffic: GPU -> host -> the node's Ethernet NIC ->
// [ethernet, the NIC's rate] -> zone gateway -> [inter_zone] -> other zone's gateway -> [ethernet] -> Ethernet
// NIC -> host -> GPU. Each ordered pair of zones (a, b) is joined by one directed inter_zone link of capacity
// inter_zone_bandwidth_per_node * min(nodes(a), nodes(b)) (every node of the smaller zone can talk across at
// the per-node rate; default per-node rate = the VM's Ethernet NIC rate) and latency inter_zone_latency
// (default 1 ms one way: Azure zones are < 2 ms round trip, shared/validation/azure_vm_sizes.csv comment from
// the Azure availability-zones overview). The per-node limit itself is the node's Ethernet link to the gateway.
//
// ## Routing
// route() returns a fewest-hops path from one GPU to another. GPUs are endpoints only, never transit; a route
// between two GPUs of one node uses only the intra-node fabric (never NICs); a route between zones uses the
// gateways, one within a zone never does. Deterministic ECMP: among next hops that keep the path shortest, in
// increasing link id order, the first decision with count > 1 candidates takes flow_hash % count, and each later one
// takes the next digit of flow_hash read as a mixed-radix number (h = flow_hash / count_1 at the second, ...), so
// sequential hashes cover every combination and decisions are not polarised. A decision with one candidate consumes
// nothing. Cost: hop-count distances between the network switches are computed, on the first route that needs them,
// from each NIC-facing switch and gateway to every network vertex (16-bit entries: up to 512 leaves x 544 switches
// for 2,048 H100 nodes on a two-tier fat tree; no all-pairs table over GPUs; a switch with the previous row's
// switch's neighbours copies that row with the two entries swapped, models/network/route_rows.hpp); a route then
// costs the two end nodes in closed form from the node template's exits (models/network/route_exits.hpp) plus, at
// each switch, a scan of its switch neighbours (or, when only the destination's own switches can be next, a look-up
// of the links to them). On one zone's fat tree or single switch a route is computed for the translate of its pair
// by a whole number of periods (models/network/pattern_symmetry.hpp: the shift keeps every ECMP digit) and moved
// back link by link, so a ring over thousands of nodes computes the routes of a few. Between nodes of one zone
// on a fat tree or single switch whose nodes each sit on one leaf, the same path is read in closed form off
// per-template tables and the tree's arithmetic (models/network/route_fat_tree.hpp), ~215 instructions a route.
//
// ## Latencies (per directed link; the latency of a switch is charged to the link entering it)
//   kNvlinkHopLatency      0.5 us  ASSUMPTION (NCCL small-message GPU-GPU over NVSwitch is ~1-2 us incl.
//                                  software; half of the ~1 us hardware+protocol share per hop).
//   kInfinityFabricLatency 1 us    ASSUMPTION (one direct hop, same order as NVLink's two).
//   kPcieHopLatency        1 us    ASSUMPTION (PCIe switch + NIC DMA, order of magnitude).
//   kInfinibandHopLatency  130 ns  ASSUMPTION: the port-to-port figure usually quoted for NVIDIA Quantum HDR
//                                  (QM8700) switches, not checked against a datasheet here; a third-party page
//                                  (yobitel.com knowledge base, "NVIDIA Quantum-2") gives ~330 ns for NDR
//                                  Quantum-2. Cable propagation (~5 ns/m) neglected.
//   kEthernetHopLatency    1 us    ASSUMPTION (datacenter Ethernet switch hop, cut-through ~0.5-1 us).
//
// Errors: build_topology throws std::invalid_argument naming the bad input.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/units.hpp"

namespace clustersim::models {

namespace detail {
struct NetworkAdjacency;
}  // namespace detail

using VertexId = std::uint32_t;
using LinkId = std::uint32_t;

enum class LinkClass { nvlink, pcie, infinity_fabric, infiniband, ethernet, inter_zone };
enum class FabricKind { single_switch, fat_tree, rail_optimized };
enum class VertexKind { gpu, nvswitch, host, nic, ethernet_nic, network_switch, zone_gateway };

std::string_view to_string(LinkClass c);
std::string_view to_string(FabricKind f);
/// Parses "single_switch" | "fat_tree" | "rail_optimized"; nullopt otherwise.
std::optional<FabricKind> parse_fabric_kind(std::string_view name);
std::string_view to_string(VertexKind k);

/// One directed link. capacity: B/s in this direction; latency: one way. Links 2k and 2k+1 are the two
/// directions of one physical link.
struct Link {
  VertexId src = 0;
  VertexId dst = 0;
  units::BytesPerSecond capacity;
  units::Seconds latency;
  LinkClass link_class = LinkClass::nvlink;
};

/// What a vertex is. node: owning node (-1 for network switches and gateways). zone: zone index.
/// tier: for network switches 0 = leaf / rail / single switch, 1 = spine or aggregation, 2 = core; 0 otherwise.
struct VertexInfo {
  VertexKind kind = VertexKind::gpu;
  std::int64_t node = -1;
  int zone = 0;
  int tier = 0;
};

struct ZoneSpec {
  std::string name;
  std::int64_t nodes = 0;
};

struct TopologyConfig {
  std::int64_t nodes = 1;                       ///< VMs in the cluster, >= 1
  FabricKind fabric = FabricKind::fat_tree;
  int fat_tree_radix = 64;                      ///< switch ports, even, >= 2; leaves get radix/2 NICs
  int fat_tree_tiers = 2;                       ///< 2 or 3 (three only when more than radix/2 leaves)
  double oversubscription = 1.0;                ///< leaf (rail) down capacity / up capacity, >= 1
  std::vector<ZoneSpec> zones;                  ///< empty: one zone "zone-0" with every node
  units::Seconds inter_zone_latency = units::milliseconds(1.0);  ///< one way
  std::optional<units::BytesPerSecond> inter_zone_bandwidth_per_node;  ///< default: VM Ethernet NIC rate
  /// VMs of each NVLink domain the job uses (VmSize::domain_vms); nullopt: whole domains. Must satisfy
  /// VmSize::domain_problem (1..nvlink_domain_vms, nodes and zones whole domains of it).
  std::optional<std::int64_t> vms_per_nvlink_domain;
};

/// The fabric as built, for exact symmetry reductions (models/network/pattern_symmetry.hpp): what decides
/// which links a route may use and which ECMP choices it makes.
struct FabricShape {
  FabricKind fabric = FabricKind::fat_tree;
  int zones = 1;
  int nics_per_node = 1;          ///< InfiniBand ports per node (1 Ethernet NIC without InfiniBand)
  bool rail_nics = false;         ///< NIC i hangs off GPU i (not off the host): Topology's "rail" NICs
  int leaf_down_ports = 1;        ///< radix / 2: the NICs of a fat-tree leaf and the ECMP fan-out per tier
  /// Switch tiers of zone 0's fabric: 1 (a single switch, one leaf, or rails without spines), 2 (leaves or
  /// rails and spines), 3 (leaves, aggregation and core switches).
  int tiers = 1;
};

inline constexpr units::Seconds kNvlinkHopLatency = units::microseconds(0.5);
inline constexpr units::Seconds kInfinityFabricLatency = units::microseconds(1.0);
inline constexpr units::Seconds kPcieHopLatency = units::microseconds(1.0);
inline constexpr units::Seconds kInfinibandHopLatency = units::nanoseconds(130.0);
inline constexpr units::Seconds kEthernetHopLatency = units::microseconds(1.0);
/// GPU <-> host PCIe rate where the intra-node fabric is not PCIe: gen4 x16, 16 GT/s x 16 x 128/130 / 8.
inline constexpr units::BytesPerSecond kHostPcieBandwidth = units::gigabytes_per_second(31.5);

class Topology {
 public:
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  ~Topology();

  [[nodiscard]] std::int64_t node_count() const;
  [[nodiscard]] int gpus_per_node() const;
  [[nodiscard]] std::int64_t gpu_count() const;
  /// Vertex of GPU `local` of `node` (== node * gpus_per_node + local). Throws std::out_of_range.
  [[nodiscard]] VertexId gpu(std::int64_t node, int local) const;
  [[nodiscard]] std::size_t vertex_count() const;
  /// Vertex `v` in 0..vertex_count()-1 (computed for a node's vertices). Throws std::out_of_range.
  [[nodiscard]] VertexInfo vertex(VertexId v) const;
  [[nodiscard]] std::size_t link_count() const;
  /// Link `id` in 0..link_count()-1 (computed for a node's links: a few integer operations). Throws
  /// std::out_of_range.
  [[nodiscard]] Link link(LinkId id) const;
  /// Whether link `id` is an inter_zone link (== link(id).link_class == LinkClass::inter_zone, in O(1)).
  [[nodiscard]] bool is_inter_zone(LinkId id) const;
  /// The out-links of a node's vertex (a GPU, NVSwitch, host or NIC), in link id order. Throws
  /// std::invalid_argument for a network switch or gateway.
  [[nodiscard]] std::vector<LinkId> out_links(VertexId v) const;
  /// Zone index of a node and the zones as configured (one "zone-0" when none were given).
  [[nodiscard]] int zone_of_node(std::int64_t node) const;
  [[nodiscard]] const std::vector<ZoneSpec>& zones() const;
  [[nodiscard]] const FabricShape& fabric_shape() const;

  /// Fewest-hops route from GPU src_gpu to GPU dst_gpu with deterministic ECMP (see the header comment).
  /// Empty when src == dst. Throws std::invalid_argument when either vertex is not a GPU. Thread-safe; each
  /// thread caches the paths it computed on the topology it used last (up to 2^20 paths, then starts over),
  /// since collective schedules ask for the same pairs again and again.
  [[nodiscard]] std::vector<LinkId> route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash) const;
  /// route() appended to `path` (no allocation when `path` has room: collective schedules build one path per
  /// transfer, half a million for a 256-GPU all-to-all on every node of a 2,048-GPU cluster).
  void append_route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash, std::vector<LinkId>& path) const;
  /// route() by the generic search alone (no closed form, no cache, no translation), for tests of the faster
  /// ways; the same path. Throws std::invalid_argument when either vertex is not a GPU.
  [[nodiscard]] std::vector<LinkId> search_route(VertexId src_gpu, VertexId dst_gpu, std::uint64_t flow_hash) const;
  /// Whether route() reads this pair's path in closed form (models/network/route_fat_tree.hpp): GPUs of two
  /// nodes of one zone on a fat tree or single switch whose nodes each sit on one leaf.
  [[nodiscard]] bool closed_form_route(VertexId src_gpu, VertexId dst_gpu) const;

  /// The links between network vertices and their component sizes as built (models/network/network_adjacency.hpp;
  /// not part of the contract): for tests that check them against Topology::link.
  [[nodiscard]] const detail::NetworkAdjacency& network_adjacency() const;

  struct Impl;

 private:
  explicit Topology(std::unique_ptr<Impl> impl);
  friend Topology build_topology(const VmSize& vm, const DeviceSpec& device, const TopologyConfig& cfg);
  std::unique_ptr<Impl> impl_;
};

/// Why `radix` cannot be a fat-tree switch's port count, "" when it can: a leaf splits its ports evenly
/// between NICs below and spines above (Leiserson 1985; Al-Fares et al. 2008), so the radix is even and >= 2.
/// The one rule behind build_topology's check, the scenario loader's and `clustersim collective --fat-tree-radix`.
std::string fat_tree_radix_error(int64_t radix);

/// Builds the cluster network for `cfg.nodes` VMs of size `vm` with devices `device`. Throws
/// std::invalid_argument on inconsistent input (zones not summing to nodes, bad radix, vm.device != device.name,
/// fabric "nvlink_mesh" which is not modelled, non-positive rates, ...).
Topology build_topology(const VmSize& vm, const DeviceSpec& device, const TopologyConfig& cfg);

}  // namespace clustersim::models
