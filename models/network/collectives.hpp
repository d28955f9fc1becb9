// Collective algorithms as schedules of flows on the topology, and their timing (docs/network.md).
//
// A collective over one or more concurrent groups of GPUs (global ranks) is a sequence of phases; each phase
// is a set of transfers (a routed path and a byte count) that start together, repeated `repeat` times with
// the same pattern. The phase's duration comes from max-min fair sharing of the links by every transfer of
// every concurrent group (FairShareSolver), so rings that share a NIC or an oversubscribed spine slow each
// other down. Every transfer's size is proportional to the collective's bytes, so the bandwidth time of a
// schedule is linear in the bytes: it is computed once per (op, algorithm, groups) as seconds per byte.
//
// Algorithms and their closed forms, uncontended, n ranks, S bytes per rank, B the bottleneck link rate
// (these are the test oracles):
//   ring all-reduce        2(n-1) steps of S/n per rank:   T_bw = 2 (n-1)/n * S / B
//   ring reduce-scatter,   n-1 steps of S/n:               T_bw = (n-1)/n * S / B
//     all-gather
//   hierarchical all-red.  intra-node ring reduce-scatter (k ranks per node), inter-node ring all-reduce of
//                          S/k among same-local-index ranks, intra-node ring all-gather
//   double binary tree     two trees over the nodes, each carrying S/2 up (reduce) and down (broadcast),
//                          pipelined; ranks inside a node form a chain (NCCL, Sanders et al. 2009); one
//                          tree pair per channel (member of a node), each with S / channels
//   NVLS all-reduce        NVLink SHARP (H100/H200 NVSwitch): each GPU sends S to the switch, which reduces,
//                          and receives S by multicast: T_bw = S / B  (one node)
//   all-to-all (direct)    every rank sends S/n to every other rank
//   broadcast (ring)       pipelined along a ring: T_bw = S / B
//   send/recv              one transfer of S
// A multi-node ring runs one channel per member of the group in a node (NCCL rings through NVLink inside a
// node and leaves each node through a different GPU's NIC), each channel carrying S / channels.
//
// Time of an (algorithm, protocol), NCCL's cost structure (NVIDIA/nccl src/graph/tuning.cc) with a pipeline
// fill term for the steps inside a node:
//   Simple:  T = T0 + (sqrt(L_intra) + sqrt(T_bw))^2 + L_inter    L = sum over steps of the step latency
//   LL:      T = T0 + L_LL + T_bw / f_LL      f_LL = 1/2 inside one node (LL moves a 4-byte flag with every
//                                               4 bytes of data; fitted), 1/4 across nodes (NCCL tuning.cc)
// (sqrt(L) + sqrt(T_bw))^2 is the time of a pipelined transfer with the optimal chunk count (Traff & Ripke
// 2008); it fits the measured single-VM curves. Steps across nodes add their latency, as in NCCL's model
// (a fill term over thousands of ring steps would overstate large rings). T0 is the launch and
// synchronisation cost measured on the VM. T0, the NVLink step
// latency and the NVLink efficiencies are calibrated per VM size from nccl-tests (catalog vm_sizes.toml,
// docs/network.md); network step latencies are NCCL's (tuning.cc hwLat: NET ring Simple 9.6 us, LL 2.7 us).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "models/network/fair_share.hpp"
#include "models/network/rank_groups.hpp"
#include "models/network/topology.hpp"
#include "models/units.hpp"

namespace clustersim::models {

/// ring_shift: every member of a group sends its buffer (`bytes`) to the next member, the last to the first, all
/// at once: one step of ring attention's K/V rotation (Liu et al. 2023; Megatron-Core context parallelism).
enum class CollectiveOp { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv, ring_shift };
enum class CollectiveAlgorithm { ring, tree, hierarchical, nvls, direct };
enum class Protocol { ll, simple };

std::string_view to_string(CollectiveOp op);
std::string_view to_string(CollectiveAlgorithm a);
std::string_view to_string(Protocol p);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);
std::optional<CollectiveAlgorithm> parse_collective_algorithm(std::string_view name);

/// nccl-tests' bus-bandwidth factor: busbw = algbw * factor (all-reduce 2(n-1)/n; reduce-scatter and
/// all-gather (n-1)/n; all-to-all (n-1)/n; broadcast, send/recv and ring shift 1).
double bus_bandwidth_factor(CollectiveOp op, int64_t ranks);

/// Concurrent groups of global GPU ranks (rank = node * GPUs per node + local index). All groups of one
/// pattern run the same collective at the same time. For send_recv each group is {source, destination}.
struct CommPattern {
  CommPattern() = default;
  /// Copies take the groups, not the cached hash: a copy may be edited before it is hashed.
  CommPattern(const CommPattern& other) : groups(other.groups) {}
  CommPattern& operator=(const CommPattern& other) {
    if (this != &other) {
      groups = other.groups;
      hash_.store(0, std::memory_order_relaxed);
    }
    return *this;
  }
  CommPattern(CommPattern&& other) noexcept
      : groups(std::move(other.groups)), hash_(other.hash_.exchange(0, std::memory_order_relaxed)) {}
  CommPattern& operator=(CommPattern&& other) noexcept {
    groups = std::move(other.groups);
    hash_.store(other.hash_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
  ~CommPattern() = default;

  RankGroups groups;  ///< the groups, stored flat (models/network/rank_groups.hpp)
  /// A stable hash of the groups (for memoisation), computed on the first call and kept: the groups must not
  /// change after it (build a new pattern instead). Safe to call from several threads at once on one pattern
  /// (sweep threads share cached step programs): the cache is atomic, and racing first calls store the same
  /// value.
  [[nodiscard]] uint64_t hash() const;

 private:
  mutable std::atomic<uint64_t> hash_{0};  ///< 0: not computed yet
};

/// One transfer of a phase: its routed path, links [first, first + length) of the phase's `links` (read it with
/// Phase::path), and its bytes per byte of collective payload.
struct Transfer {
  uint32_t first = 0;           ///< offset of the path's first link in Phase::links
  uint32_t length = 0;          ///< links on the path
  double bytes_per_byte = 0.0;  ///< transfer bytes / collective bytes S
};

/// Transfers that start together; the phase ends when the last one finishes; `repeat` identical rounds.
/// The transfers' paths are stored back to back in one array per phase (`links`, transfer k's path right after
/// transfer k-1's) instead of a vector per transfer: a 256-GPU all-to-all on every node of a 2,048-GPU cluster
/// has half a million transfers, and the route search appends to the phase's array directly.
struct Phase {
  std::vector<Transfer> transfers;
  std::vector<LinkId> links;  ///< every transfer's path, in transfer order (Transfer::first, Transfer::length)
  /// The path of `t`, a transfer of this phase: its links in order from the sender to the receiver.
  [[nodiscard]] std::span<const LinkId> path(const Transfer& t) const { return {links.data() + t.first, t.length}; }
  /// Appends a transfer over `path` (a route of this phase's topology; may be empty only where a reader accepts
  /// it). Throws std::length_error when the phase's links would pass 2^32.
  void add_transfer(std::span<const LinkId> path, double bytes_per_byte);
  int64_t repeat = 1;
  int64_t intra_steps = 0;  ///< latency-bearing steps inside nodes, over all repeats
  int64_t inter_steps = 0;  ///< latency-bearing steps across nodes (or zones), over all repeats
  /// Largest one-way inter-zone propagation on any transfer's path. Every step of a synchronous phase waits
  /// for its slowest hop, so the phase pays (intra_steps + inter_steps) x this on top of NCCL's step latencies
  /// (which hold for one datacenter).
  units::Seconds zone_latency;
  /// true: the transfers are stages of one pipelined stream (ring steps, tree edges, NVLS), so the phase runs
  /// at its slowest transfer's rate from one max-min solve; false: independent transfers (all-to-all,
  /// send/recv) finish progressively and hand their bandwidth to the rest.
  bool pipelined = true;
};

struct CollectiveSchedule {
  CollectiveOp op = CollectiveOp::all_reduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  std::vector<Phase> phases;
  int64_t ranks = 1;  ///< ranks per group
};

/// Builds the schedule, or nullopt when the algorithm does not apply (NVLS across nodes or without NVSwitch
/// SHARP, tree or hierarchical inside one node, an algorithm the op does not have). Groups must be non-empty,
/// of equal size, and name GPUs of `topology`; throws std::invalid_argument otherwise.
std::optional<CollectiveSchedule> build_schedule(CollectiveOp op, CollectiveAlgorithm algorithm,
                                                 const Topology& topology, const CommPattern& pattern,
                                                 bool nvls_capable);

/// Sustained fraction of each link class's rate that the collective's data moves at.
struct LinkEfficiency {
  double nvlink = 1.0;
  double pcie = 1.0;
  double infinity_fabric = 1.0;
  double infiniband = 1.0;
  double ethernet = 1.0;
  double inter_zone = 1.0;
  [[nodiscard]] double of(LinkClass c) const;
};

/// Seconds per byte of payload S of the whole schedule: each phase's transfers run concurrently under max-min
/// fair sharing (links at capacity x efficiency); a pipelined phase takes its slowest transfer's time, an
/// independent one finishes progressively; phases add up, times their repeat. 0 for a schedule without transfers (a group of one).
double bandwidth_seconds_per_byte(const CollectiveSchedule& schedule, const Topology& topology,
                                  const LinkEfficiency& efficiency);

/// The same solve per phase: element i is phase i's seconds per byte of payload S for one of its `repeat`
/// rounds (its slowest max-min component; 0 for a phase without transfers). bandwidth_seconds_per_byte is
/// exactly `total = 0.0; for each phase with transfers: total += result[i] * repeat`, in phase order, so a
/// caller that knows one phase's round time can price other repeat counts of the same transfers to the bit
/// (CollectiveModel prices a ring all-reduce and reduce-scatter from the ring all-gather's one round).
std::vector<double> phase_seconds_per_byte(const CollectiveSchedule& schedule, const Topology& topology,
                                           const LinkEfficiency& efficiency);

}  // namespace clustersim::models
