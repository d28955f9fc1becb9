// Collective timing on a cluster's topology: the flow-level network behind the training step and
// `clustersim collective`.
//
// For each applicable (algorithm, protocol) it builds the flow schedule (collectives.hpp), measures its
// bandwidth time under max-min fair sharing of every concurrent group's traffic, adds NCCL's latency
// structure, and keeps the fastest, the way NCCL's tuner picks (NVIDIA/nccl src/graph/tuning.cc), unless an
// algorithm is forced. Bandwidth time is linear in the payload, so one flow solve per (op, algorithm,
// pattern) is memoised as seconds per byte; later sizes cost a multiplication.
//
// Constants (docs/network.md):
//   base latency T0, intra-node step latency, NVLink ring and NVLS efficiencies: per VM size, fitted to
//     nccl-tests (catalog keys nccl_*); without a fit: T0 = kDefaultBaseLatency, step latency NCCL's
//     hwLat (NVLink ring Simple 3.4 us, PCIe 5.7 us), ring efficiency kDefaultRingEfficiency;
//   network step latency: NCCL hwLat NET ring Simple 9.6 us, LL 2.7 us; NVLink LL 0.47 us, PCIe LL 1.0 us;
//   InfiniBand efficiency kInfinibandEfficiency, Ethernet/inter-zone kEthernetEfficiency: assumptions.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <tuple>

#include "models/hardware/catalog.hpp"
#include "models/network/collectives.hpp"
#include "models/network/communication_model.hpp"
#include "models/network/topology.hpp"

namespace clustersim::models {

/// A forced collective algorithm (NetworkConfig::all_reduce_algorithm) that does not apply to a pattern the job
/// needs (e.g. tree or hierarchical within one node): bad input, located by the caller at the scenario's
/// network.all_reduce_algorithm.
class CollectiveAlgorithmError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

inline constexpr units::Seconds kDefaultBaseLatency = units::microseconds(30.0);
inline constexpr double kDefaultRingEfficiency = 0.842;  // the ND A100 v4 fit
inline constexpr double kInfinibandEfficiency = 0.9;     // assumption: NCCL over IB ~90 % of line rate
inline constexpr double kEthernetEfficiency = 0.8;       // assumption: TCP/RoCE over a VM's front-end NIC

/// Latency and efficiency constants of one cluster.
struct CollectiveConstants {
  units::Seconds base_latency = kDefaultBaseLatency;
  units::Seconds intra_step_simple = units::microseconds(3.4);
  units::Seconds intra_step_ll = units::microseconds(0.47);
  units::Seconds network_step_simple = units::microseconds(9.6);
  units::Seconds network_step_ll = units::microseconds(2.7);
  double ring_efficiency = kDefaultRingEfficiency;
  /// PCIe links: the intra-node fabric of PCIe VMs (ring_efficiency there); elsewhere only GPU/NIC/host
  /// attachments, which are not a collective's bottleneck by design (1.0).
  double pcie_efficiency = 1.0;
  std::optional<double> nvls_efficiency;  ///< set where the NVSwitch does NVLS (H100/H200)
  double infiniband_efficiency = kInfinibandEfficiency;
  double ethernet_efficiency = kEthernetEfficiency;

  /// The constants of `vm` (its nccl_* calibration over the defaults; PCIe step latencies for PCIe VMs), every
  /// latency times vm.collective_latency_scale (1 but in a what-if).
  static CollectiveConstants for_vm(const VmSize& vm);
};

/// The time of one collective and how it was reached.
struct CollectiveTiming {
  units::Seconds time;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  Protocol protocol = Protocol::simple;
  units::Seconds bandwidth_time;  ///< the flow-level part (contention included), at the protocol's rate
  units::Seconds latency_time;    ///< time - bandwidth_time
  bool crosses_zones = false;     ///< some transfer of the pattern crosses an inter-zone link
};

class CollectiveModel final : public CommunicationModel {
 public:
  /// `topology` must outlive the model. `all_reduce_algorithm`: the algorithm every all-reduce of
  /// collective_time() uses; nullopt for the automatic choice.
  CollectiveModel(const Topology& topology, CollectiveConstants constants,
                  std::optional<CollectiveAlgorithm> all_reduce_algorithm = std::nullopt);
  ~CollectiveModel() override;
  CollectiveModel(const CollectiveModel&) = delete;
  CollectiveModel& operator=(const CollectiveModel&) = delete;

  /// CommunicationModel: time(op, pattern, bytes) with the configured all-reduce algorithm.
  [[nodiscard]] CollectiveTiming collective_time(CollectiveOp op, const CommPattern& pattern,
                                                 units::Bytes bytes) const override;

  /// Time of `op` on every group of `pattern` at once, `bytes` per rank (all-reduce input; reduce-scatter
  /// input; all-gather output; all-to-all send buffer; broadcast and send/recv message). Zero for groups of
  /// one. `forced`: that algorithm only (throws CollectiveAlgorithmError if it does not apply). Throws
  /// std::invalid_argument for an empty pattern, negative bytes, or (on its first solve; groups of one and zero
  /// bytes are not solved) a rank outside the cluster. Thread-safe: concurrent calls share one memo, and a
  /// pattern being solved by one caller is awaited by the others.
  [[nodiscard]] CollectiveTiming time(CollectiveOp op, const CommPattern& pattern, units::Bytes bytes,
                                      std::optional<CollectiveAlgorithm> forced = std::nullopt) const;

  [[nodiscard]] const Topology& topology() const { return topology_; }
  [[nodiscard]] const CollectiveConstants& constants() const { return constants_; }

 private:
  /// What the timing needs of one phase of a schedule: its round time from the max-min solve
  /// (phase_seconds_per_byte), whether it has transfers, its repeat, step counts and zone latency.
  struct PhaseSummary {
    double round_seconds_per_byte = 0.0;
    bool has_transfers = false;
    int64_t repeat = 1;
    int64_t intra_steps = 0;
    int64_t inter_steps = 0;
    double zone_latency = 0.0;  ///< s
  };
  struct Solved {
    double seconds_per_byte = 0.0;
    double latency_intra = 0.0;   ///< Simple: step latencies inside nodes (pipeline fill), s
    double latency_inter = 0.0;   ///< Simple: step latencies across nodes and zones, s
    double latency_ll = 0.0;      ///< LL: all step latencies, s
    bool inter_node = false;      ///< some phase has steps across nodes
    bool crosses_zones = false;
    /// A ring schedule's one phase (has_ring_phase): the ring all-gather's, from which solve() prices the ring
    /// all-reduce and reduce-scatter of the same pattern without building their schedules again.
    bool has_ring_phase = false;
    PhaseSummary ring_phase;
  };
  /// The timing terms of a schedule summarised by `phases` (in phase order), with this model's constants.
  /// The same floating-point operations in the same order as pricing the schedule itself.
  Solved summarise(const PhaseSummary* phases, size_t count) const;
  /// nullopt when the algorithm does not apply. Memoised. A ring all-reduce or reduce-scatter is derived from
  /// the ring all-gather of the same pattern (see solve() in the .cpp for why that is exact).
  std::optional<Solved> solve(CollectiveOp op, CollectiveAlgorithm algorithm, const CommPattern& pattern) const;
  std::optional<Solved> solve_uncached(CollectiveOp op, CollectiveAlgorithm algorithm, const CommPattern& pattern) const;

  const Topology& topology_;
  CollectiveConstants constants_;
  bool nvls_capable_;
  std::optional<CollectiveAlgorithm> all_reduce_algorithm_;
  /// Solved (or being solved) flow problems per (op, algorithm, pattern hash), shared by concurrent callers;
  /// defined in the .cpp (it holds futures).
  struct Memo;
  std::unique_ptr<Memo> memo_;
};

namespace detail {

/// The first rank of `ranks` (in order) outside [0, gpus), or nullptr when every rank lies inside: the rank
/// CollectiveModel names when it rejects a pattern. O(ranks): a branch-free pass (the compiler vectorises it);
/// only when it finds a rank outside does a second, ordinary pass look for the first one.
const int64_t* first_rank_outside(std::span<const int64_t> ranks, int64_t gpus);

/// When every group of `pattern` lies inside one node (of `gpus_per_node` GPUs, ranks >= 0) and every node
/// that holds groups holds the same arrangement (the same groups at the same local ranks: Megatron's
/// tensor-parallel groups, for one), the groups of the first such node in pattern order; nullopt otherwise
/// (also for fewer than two groups, an empty group or a single node). Intra-node links belong to one node, so
/// the nodes' flows are independent, identical max-min problems: the first node's solution is every node's,
/// exactly. O(ranks), plus a sort of the groups when they are not already by node and local ranks. A returned
/// pattern proves every rank of `pattern` >= 0 and on the node of its group's first rank (not below the
/// cluster's end: a first rank may lie past it).
std::optional<CommPattern> node_local_representative(const CommPattern& pattern, int64_t gpus_per_node);

}  // namespace detail

}  // namespace clustersim::models
