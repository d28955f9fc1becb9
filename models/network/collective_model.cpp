#include "models/network/collective_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <exception>
#include <future>
#include <mutex>
#include <map>
#include <memory>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/network/pattern_symmetry.hpp"
#include "models/network/rail_symmetry.hpp"
#include "models/network/rotation_symmetry.hpp"

namespace clustersim::models {

CollectiveConstants CollectiveConstants::for_vm(const VmSize& vm) {
  CollectiveConstants c;
  if (vm.fabric == IntraNodeFabric::pcie || vm.fabric == IntraNodeFabric::none) {
    c.intra_step_simple = units::microseconds(5.7);  // NCCL hwLat PCI ring Simple
    c.intra_step_ll = units::microseconds(1.0);      // NCCL hwLat PCI ring LL
  }
  if (vm.nccl.base_latency) c.base_latency = *vm.nccl.base_latency;
  if (vm.nccl.intra_step_latency) c.intra_step_simple = *vm.nccl.intra_step_latency;
  if (vm.nccl.ring_efficiency) c.ring_efficiency = *vm.nccl.ring_efficiency;
  if (vm.fabric == IntraNodeFabric::pcie) c.pcie_efficiency = c.ring_efficiency;
  if (vm.fabric == IntraNodeFabric::nvswitch) c.nvls_efficiency = vm.nccl.nvls_efficiency;
  if (vm.collective_latency_scale != 1.0) {  // a what-if (sim/run/what_if.hpp): every alpha term scaled
    for (units::Seconds* t : {&c.base_latency, &c.intra_step_simple, &c.intra_step_ll, &c.network_step_simple,
                              &c.network_step_ll}) {
      *t = *t * vm.collective_latency_scale;
    }
  }
  return c;
}

struct CollectiveModel::Memo {
  std::mutex mutex;
  std::map<std::tuple<int, int, uint64_t>, std::shared_future<std::optional<Solved>>> solved;
  /// What each solved pattern reduces to (node_local_representative; else rotation_representative and
  /// translation_representative, composed; else rail_block_representative; nullopt: the pattern itself), by
  /// (pattern hash, op is send_recv, the one op the reductions treat apart): the pattern's other ops and
  /// algorithms reuse it instead of scanning every rank again.
  std::map<std::pair<uint64_t, bool>, std::shared_ptr<const std::optional<CommPattern>>> representatives;
};

CollectiveModel::~CollectiveModel() = default;

CollectiveModel::CollectiveModel(const Topology& topology, CollectiveConstants constants,
                                 std::optional<CollectiveAlgorithm> all_reduce_algorithm)
    : topology_(topology),
      constants_(constants),
      nvls_capable_(constants.nvls_efficiency.has_value()),
      all_reduce_algorithm_(all_reduce_algorithm),
      memo_(std::make_unique<Memo>()) {}

CollectiveTiming CollectiveModel::collective_time(CollectiveOp op, const CommPattern& pattern,
                                                  units::Bytes bytes) const {
  return time(op, pattern, bytes, op == CollectiveOp::all_reduce ? all_reduce_algorithm_ : std::nullopt);
}

namespace {

/// Whether every rank of group `g` of `groups` is on the node whose first rank is `base` (>= 0), a node of
/// `gpus_per_node` GPUs. In unsigned 64-bit arithmetic, with d = r - base, r | d | (gpus_per_node - 1 - d) has
/// its top bit set iff r < 0 (in r) or r >= 0 is off that node: r < base or r >= base + gpus_per_node makes
/// d >= gpus_per_node, and then d >= 2^63 or gpus_per_node - 1 - d wraps to 2^64 - (d - gpus_per_node + 1)
/// >= 2^63; d < gpus_per_node leaves all three below 2^63. OR-ed over the group: no branch, no division.
bool group_on_node(std::span<const int64_t> group, uint64_t base, int64_t gpus_per_node) {
  const auto last = static_cast<uint64_t>(gpus_per_node) - 1;
  uint64_t off = 0;
  for (const int64_t r : group) {
    const uint64_t d = static_cast<uint64_t>(r) - base;
    off |= static_cast<uint64_t>(r) | d | (last - d);
  }
  return (off >> 63) == 0;
}

/// node_local_representative's common case in one pass, without a table or a sort: the groups node by node
/// (their nodes increasing along the pattern), the first node's run R of groups all on that node, and every
/// later run of R's length equal to R group by group with every rank moved by whole nodes (base_k - base_0,
/// each rank checked as r == r0 + base_k - base_0 in unsigned arithmetic, with base_k + gpus_per_node <= 2^63
/// so that no sum wraps). Then every group is on one node (a moved group of R is on the node of its first
/// rank), the runs are the nodes' groups, and each node's groups sorted by local ranks are R's sorted, so the
/// general algorithm below answers R, in pattern order: returned. Anything else (a group empty, negative or off
/// its node, nodes out of order, a run that differs, a single node) returns nullopt: undecided, the general
/// algorithm decides.
std::optional<CommPattern> node_major_representative(const RankGroups& groups, int64_t gpus_per_node) {
  const size_t count = groups.size();
  // A first rank's node: a shift when gpus_per_node is a power of two (no division per group).
  const int shift_bits = std::has_single_bit(static_cast<uint64_t>(gpus_per_node))
                             ? std::countr_zero(static_cast<uint64_t>(gpus_per_node))
                             : -1;
  const auto front_node = [&](size_t g, int64_t& node) {
    const std::span<const int64_t> group = groups[g];
    if (group.empty() || group.front() < 0) return false;
    node = shift_bits >= 0 ? group.front() >> shift_bits : group.front() / gpus_per_node;
    return true;
  };
  const int64_t max_node = (std::numeric_limits<int64_t>::max() - gpus_per_node) / gpus_per_node;
  int64_t first_node = 0, node = 0;
  if (!front_node(0, first_node)) return std::nullopt;
  const auto first_base = static_cast<uint64_t>(first_node * gpus_per_node);
  size_t run = 0;
  while (run < count && front_node(run, node) && node == first_node) {
    if (!group_on_node(groups[run], first_base, gpus_per_node)) return std::nullopt;
    ++run;
  }
  if (run == count || count % run != 0) return std::nullopt;
  int64_t previous = first_node;
  for (size_t start = run; start < count; start += run) {
    if (!front_node(start, node) || node <= previous) return std::nullopt;
    if (node > max_node) return std::nullopt;  // base_k + gpus_per_node <= 2^63 - 1
    const uint64_t shift = static_cast<uint64_t>(node * gpus_per_node) - first_base;
    for (size_t i = 0; i < run; ++i) {
      const std::span<const int64_t> moved = groups[start + i], base = groups[i];
      if (moved.size() != base.size()) return std::nullopt;
      uint64_t differ = 0;
      for (size_t j = 0; j < moved.size(); ++j) {
        differ |= static_cast<uint64_t>(moved[j]) ^ (static_cast<uint64_t>(base[j]) + shift);
      }
      if (differ != 0) return std::nullopt;
    }
    previous = node;
  }
  CommPattern reduced;
  reduced.groups.reserve(run, groups.offsets()[run]);
  for (size_t g = 0; g < run; ++g) reduced.groups.push_back(groups[g]);
  return reduced;
}

}  // namespace

namespace detail {

const int64_t* first_rank_outside(std::span<const int64_t> ranks, int64_t gpus) {
  // r | (gpus - 1 - r), in unsigned 64-bit arithmetic, has its top bit set iff r < 0 or r >= gpus (gpus >= 1):
  // r < 0 sets it in r; 0 <= r < gpus leaves both terms in [0, gpus - 1]; r >= gpus makes the difference
  // 2^64 - (r - gpus + 1), with r - gpus + 1 in [1, 2^63 - 1], so in [2^63 + 1, 2^64 - 1]. (With gpus = 0
  // every rank sets it.) OR-ing every rank's value is a reduction without branches.
  const uint64_t last = static_cast<uint64_t>(gpus) - 1;
  uint64_t any = 0;
  for (const int64_t r : ranks) any |= static_cast<uint64_t>(r) | (last - static_cast<uint64_t>(r));
  if ((any >> 63) == 0) return nullptr;
  // As unsigned, a negative rank is above every GPU: one comparison checks both bounds.
  for (const int64_t& r : ranks) {
    if (static_cast<uint64_t>(r) >= static_cast<uint64_t>(gpus)) return &r;
  }
  return nullptr;  // not reached: the top bit came from some rank outside
}

std::optional<CommPattern> node_local_representative(const CommPattern& pattern, int64_t gpus_per_node) {
  const auto& groups = pattern.groups;
  if (groups.size() < 2 || gpus_per_node < 1) return std::nullopt;
  if (std::optional<CommPattern> reduced = node_major_representative(groups, gpus_per_node)) return reduced;
  // Every group on one node first (group_on_node), with no table until the groups pass (a pattern across
  // nodes, the common refusal, fails at its first group).
  for (const auto group : groups) {
    if (group.empty() || group.front() < 0) return std::nullopt;
    const auto base = static_cast<uint64_t>(group.front() / gpus_per_node * gpus_per_node);
    if (!group_on_node(group, base, gpus_per_node)) return std::nullopt;
  }
  // Node of each group.
  std::vector<int64_t> node_of(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) node_of[g] = groups[g].front() / gpus_per_node;
  // The groups by node, and inside a node by their local ranks (lexicographically, as std::vector compares):
  // each node's groups as a sorted list, the nodes ascending.
  std::vector<uint32_t> order(groups.size());
  for (uint32_t g = 0; g < order.size(); ++g) order[g] = g;
  const auto local_less = [&](uint32_t a, uint32_t b) {
    const int64_t base_a = node_of[a] * gpus_per_node, base_b = node_of[b] * gpus_per_node;
    return std::lexicographical_compare(
        groups[a].begin(), groups[a].end(), groups[b].begin(), groups[b].end(),
        [&](int64_t x, int64_t y) { return x - base_a < y - base_b; });
  };
  const auto by_node_then_local = [&](uint32_t a, uint32_t b) {
    if (node_of[a] != node_of[b]) return node_of[a] < node_of[b];
    return local_less(a, b);
  };
  // Megatron's groups usually come in this order already (one linear check instead of a sort).
  if (!std::is_sorted(order.begin(), order.end(), by_node_then_local)) {
    std::sort(order.begin(), order.end(), by_node_then_local);
  }
  // The same local ranks: equal sizes, and x - base_a == y - base_b member by member, i.e. x == y + (base_a -
  // base_b) in unsigned 64-bit arithmetic (ranks lie in [0, 2^63): y + base_a - base_b is below 2^64, so equal
  // modulo 2^64 is equal), OR-ed over the group without a branch.
  const auto local_equal = [&](uint32_t a, uint32_t b) {
    const auto group_a = groups[a], group_b = groups[b];
    if (group_a.size() != group_b.size()) return false;
    const uint64_t shift = static_cast<uint64_t>(node_of[a] * gpus_per_node) -
                           static_cast<uint64_t>(node_of[b] * gpus_per_node);
    uint64_t differ = 0;
    for (size_t j = 0; j < group_a.size(); ++j) {
      differ |= static_cast<uint64_t>(group_a[j]) ^ (static_cast<uint64_t>(group_b[j]) + shift);
    }
    return differ == 0;
  };
  // The first node's run; every other node's run must hold the same sorted local groups.
  const int64_t first_node = node_of[order.front()];
  size_t run = 0;
  while (run < order.size() && node_of[order[run]] == first_node) ++run;
  if (run == order.size()) return std::nullopt;  // one node only
  for (size_t start = run; start < order.size();) {
    size_t end = start;
    while (end < order.size() && node_of[order[end]] == node_of[order[start]]) ++end;
    if (end - start != run) return std::nullopt;
    for (size_t i = 0; i < run; ++i) {
      if (!local_equal(order[start + i], order[i])) return std::nullopt;
    }
    start = end;
  }
  // The first node's groups, in pattern order.
  CommPattern reduced;
  reduced.groups.reserve(run, run * groups.front().size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (node_of[g] == first_node) reduced.groups.push_back(groups[g]);
  }
  return reduced;
}

}  // namespace detail

CollectiveModel::Solved CollectiveModel::summarise(const PhaseSummary* phases, size_t count) const {
  const CollectiveConstants& k = constants_;
  Solved s;
  double total = 0.0;  // bandwidth_seconds_per_byte's sum, term by term
  for (size_t p = 0; p < count; ++p) {
    const PhaseSummary& phase = phases[p];
    if (phase.has_transfers) total += phase.round_seconds_per_byte * static_cast<double>(phase.repeat);
  }
  s.seconds_per_byte = total;
  for (size_t p = 0; p < count; ++p) {
    const PhaseSummary& phase = phases[p];
    const double steps = static_cast<double>(phase.intra_steps + phase.inter_steps);
    const double zone = steps * phase.zone_latency;
    s.latency_intra += static_cast<double>(phase.intra_steps) * k.intra_step_simple.value();
    s.latency_inter += static_cast<double>(phase.inter_steps) * k.network_step_simple.value() + zone;
    s.inter_node = s.inter_node || phase.inter_steps > 0;
    s.latency_ll += static_cast<double>(phase.intra_steps) * k.intra_step_ll.value() +
                    static_cast<double>(phase.inter_steps) * k.network_step_ll.value() + zone;
    s.crosses_zones = s.crosses_zones || phase.zone_latency > 0.0;
  }
  return s;
}

std::optional<CollectiveModel::Solved> CollectiveModel::solve(CollectiveOp op, CollectiveAlgorithm algorithm,
                                                              const CommPattern& pattern) const {
  // Ring all-reduce and reduce-scatter from the ring all-gather of the same pattern (one schedule built and
  // solved for the three; a data-parallel pattern of a layout search meets all three). Exact: build_schedule
  // gives the three ops one phase with the same transfers (ring_phase with 1/n of S per step and the wrap, for
  // the same groups, hence the same routes and max-min solution: the same round time), and differs only in
  // the counts: the all-gather's repeat n - 1, inter-node steps m - 1 (m nodes spanned by the first group; 0
  // on one node) and intra-node steps the rest; the reduce-scatter's the same; the all-reduce's 2(n - 1),
  // 2(m - 1) (0 on one node) and the rest, i.e. exactly twice each. summarise() then performs the same
  // operations on the same values as pricing the op's own schedule (bandwidth_seconds_per_byte's sum is
  // round time x repeat per phase; the efficiencies depend on the algorithm only; the representative pattern
  // depends on the op only for send_recv). Zone latency comes from the transfers, also the same.
  // tests/network/test_ring_family.cpp compares the derived timings with each op's own schedule.
  if (algorithm == CollectiveAlgorithm::ring &&
      (op == CollectiveOp::all_reduce || op == CollectiveOp::reduce_scatter)) {
    const std::optional<Solved> gather = solve(CollectiveOp::all_gather, CollectiveAlgorithm::ring, pattern);
    if (gather && gather->has_ring_phase) {
      PhaseSummary phase = gather->ring_phase;
      if (op == CollectiveOp::all_reduce) {
        phase.repeat *= 2;
        phase.intra_steps *= 2;
        phase.inter_steps *= 2;
      }
      Solved derived = summarise(&phase, 1);
      derived.has_ring_phase = true;
      derived.ring_phase = phase;
      return derived;
    }
    // No ring phase (never for groups of two or more, the only ones time() solves): the op's own schedule.
  }
  const auto key = std::tuple{static_cast<int>(op), static_cast<int>(algorithm), pattern.hash()};
  // One solve per key across threads: the first caller inserts a future and solves; later callers (another
  // thread of a sweep reaching the same layout) wait on it instead of solving again.
  // The promise (two allocations and a shared state) is made only by the caller that solves: the warm calls,
  // nearly all of a layout search's, only look up.
  std::optional<std::promise<std::optional<Solved>>> promise;
  {
    std::unique_lock lock(memo_->mutex);
    if (auto it = memo_->solved.find(key); it != memo_->solved.end()) {
      const std::shared_future<std::optional<Solved>> pending = it->second;
      lock.unlock();  // wait, if it is still being solved, outside the lock
      return pending.get();
    }
    promise.emplace();
    memo_->solved.emplace(key, promise->get_future().share());
  }
  try {
    std::optional<Solved> solved = solve_uncached(op, algorithm, pattern);
    promise->set_value(solved);
    return solved;
  } catch (...) {
    promise->set_exception(std::current_exception());
    throw;
  }
}

std::optional<CollectiveModel::Solved> CollectiveModel::solve_uncached(CollectiveOp op, CollectiveAlgorithm algorithm,
                                                                       const CommPattern& pattern) const {
  std::optional<Solved> result;
  const std::pair<uint64_t, bool> key{pattern.hash(), op == CollectiveOp::send_recv};
  std::shared_ptr<const std::optional<CommPattern>> representative;
  {
    std::lock_guard lock(memo_->mutex);
    if (auto it = memo_->representatives.find(key); it != memo_->representatives.end()) representative = it->second;
  }
  if (!representative) {
    // Find the smallest equivalent pattern and validate every rank (a pattern reduced before was valid). The
    // reductions below take any ranks (each checks what it reads), so they run first: a rotation or translation
    // of the whole pattern proves every rank a GPU of the cluster (see their headers), a node-local reduction
    // does once every group's first rank is one (below), and the O(ranks) validation, a branch-free pass
    // (detail::first_rank_outside), runs only when none of these proved it. A pattern with a rank outside the
    // cluster gets no proof, so it throws with the same rank and message as when the validation came first.
    bool all_valid = false;
    std::optional<CommPattern> reduced = detail::node_local_representative(pattern, topology_.gpus_per_node());
    if (reduced) {
      // Every rank is >= 0 and on the node of its group's first rank (node_local_representative's header), and
      // the cluster is whole nodes (gpu_count = nodes x gpus_per_node): the ranks are valid iff every group's
      // first rank is below gpu_count, one look-up a group instead of one a rank.
      const auto gpus = static_cast<uint64_t>(topology_.gpu_count());
      const std::span<const int64_t> ranks = pattern.groups.all_ranks();
      const std::span<const uint32_t> offsets = pattern.groups.offsets();
      uint64_t highest = 0;
      for (size_t g = 0; g + 1 < offsets.size(); ++g) {
        highest = std::max(highest, static_cast<uint64_t>(ranks[offsets[g]]));
      }
      all_valid = highest < gpus;
    } else {
      // Inter-node groups on a fat tree with rail NICs: the groups of one local index when the others are them
      // moved to other local indices of the same nodes (models/network/rotation_symmetry.hpp); then one block of
      // groups when the others are it moved by whole leaves or pods (models/network/pattern_symmetry.hpp). Both
      // are exact to the last bit (every phase's time, step counts, applicability), so they compose in either
      // order: rotation first, as it is the cheaper scan (a few operations a rank) and leaves translation an
      // eighth of a data-parallel pattern; rotation again on translation's block when the whole pattern was not
      // a rotation but its block is.
      std::optional<CommPattern> rotated = rotation_representative(pattern, topology_);
      reduced = translation_representative(op, rotated ? *rotated : pattern, topology_);
      all_valid = rotated.has_value() || reduced.has_value();  // the whole pattern rotated or translated
      if (!reduced) {
        reduced = std::move(rotated);
      } else if (!rotated) {
        if (auto block_rotated = rotation_representative(*reduced, topology_)) reduced = std::move(block_rotated);
      }
    }
    if (!all_valid) {
      if (const int64_t* r = detail::first_rank_outside(pattern.groups.all_ranks(), topology_.gpu_count())) {
        throw std::invalid_argument("CollectiveModel: rank " + std::to_string(*r) + " is not a GPU of the " +
                                    std::to_string(topology_.gpu_count()) + "-GPU cluster");
      }
    }
    // One zone of a rail-optimized fabric: one block of groups when the others are it moved by whole nodes and
    // rails and no transfer crosses rails (exact to the last bit; models/network/rail_symmetry.hpp).
    if (!reduced) reduced = rail_block_representative(op, pattern, topology_);
    representative = std::make_shared<const std::optional<CommPattern>>(std::move(reduced));
    std::lock_guard lock(memo_->mutex);
    memo_->representatives.emplace(key, representative);  // a racing thread's equal result may be kept instead
  }
  const CommPattern& solved_pattern = *representative ? **representative : pattern;
  if (auto schedule = build_schedule(op, algorithm, topology_, solved_pattern, nvls_capable_)) {
    const CollectiveConstants& k = constants_;
    LinkEfficiency eff;
    eff.nvlink = algorithm == CollectiveAlgorithm::nvls ? k.nvls_efficiency.value_or(k.ring_efficiency)
                                                         : k.ring_efficiency;
    eff.pcie = k.pcie_efficiency;
    eff.infinity_fabric = k.ring_efficiency;
    eff.infiniband = k.infiniband_efficiency;
    eff.ethernet = k.ethernet_efficiency;
    eff.inter_zone = k.ethernet_efficiency;
    const std::vector<double> rounds = phase_seconds_per_byte(*schedule, topology_, eff);
    std::vector<PhaseSummary> phases(schedule->phases.size());
    for (size_t p = 0; p < phases.size(); ++p) {
      const Phase& phase = schedule->phases[p];
      phases[p] = PhaseSummary{rounds[p], !phase.transfers.empty(), phase.repeat, phase.intra_steps,
                               phase.inter_steps, phase.zone_latency.value()};
    }
    Solved s = summarise(phases.data(), phases.size());
    if (algorithm == CollectiveAlgorithm::ring && phases.size() == 1) {
      s.has_ring_phase = true;
      s.ring_phase = phases.front();
    }
    result = s;
  }
  return result;
}

CollectiveTiming CollectiveModel::time(CollectiveOp op, const CommPattern& pattern, units::Bytes bytes,
                                       std::optional<CollectiveAlgorithm> forced) const {
  if (pattern.groups.empty()) throw std::invalid_argument("CollectiveModel::time: empty pattern");
  if (!(bytes.value() >= 0.0)) throw std::invalid_argument("CollectiveModel::time: bytes must be >= 0");
  // Ranks are checked when a pattern is first solved (build_schedule throws std::invalid_argument for a rank
  // outside the cluster); a memoised pattern was valid, so warm calls skip the O(ranks) scan.
  CollectiveTiming best;
  if (pattern.groups.front().size() <= 1 || bytes.value() == 0.0) return best;

  // The candidates in NCCL's order, in place (no allocation per call: a layout search asks tens of thousands).
  static constexpr CollectiveAlgorithm kAllReduce[] = {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                                       CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::nvls};
  static constexpr CollectiveAlgorithm kRing[] = {CollectiveAlgorithm::ring};
  static constexpr CollectiveAlgorithm kDirect[] = {CollectiveAlgorithm::direct};
  std::span<const CollectiveAlgorithm> candidates;
  if (forced) {
    candidates = std::span<const CollectiveAlgorithm>(&*forced, 1);
  } else {
    switch (op) {
      case CollectiveOp::all_reduce: candidates = kAllReduce; break;
      case CollectiveOp::reduce_scatter:
      case CollectiveOp::all_gather:
      case CollectiveOp::broadcast: candidates = kRing; break;
      case CollectiveOp::all_to_all:
      case CollectiveOp::send_recv:
      case CollectiveOp::ring_shift: candidates = kDirect; break;
    }
  }
  const double t0 = constants_.base_latency.value();
  double best_time = std::numeric_limits<double>::infinity();
  for (CollectiveAlgorithm algorithm : candidates) {
    const auto solved = solve(op, algorithm, pattern);
    if (!solved) continue;
    const double bw = solved->seconds_per_byte * bytes.value();
    // Simple: pipelined chunks inside nodes, (sqrt(L_intra) + sqrt(T_bw))^2, plus the steps across nodes.
    const double simple =
        t0 + std::pow(std::sqrt(solved->latency_intra) + std::sqrt(bw), 2.0) + solved->latency_inter;
    auto consider = [&](double t, Protocol p, double bandwidth_part) {
      if (t < best_time) {
        best_time = t;
        best.time = units::Seconds(t);
        best.algorithm = algorithm;
        best.protocol = p;
        best.bandwidth_time = units::Seconds(bandwidth_part);
        best.latency_time = units::Seconds(t - bandwidth_part);
        best.crosses_zones = solved->crosses_zones;
      }
    };
    consider(simple, Protocol::simple, bw);
    if (algorithm != CollectiveAlgorithm::nvls) {
      // LL: fine-grained flags, no pipeline fill; half the bandwidth inside a node (fitted), a quarter across
      // nodes (NCCL tuning.cc: ring LL busBw / 4 with several nodes).
      const double slowdown = solved->inter_node ? 4.0 : 2.0;
      consider(t0 + solved->latency_ll + slowdown * bw, Protocol::ll, slowdown * bw);
    }
  }
  if (!std::isfinite(best_time)) {
    if (forced) {
      throw CollectiveAlgorithmError(std::string("algorithm '") + std::string(to_string(*forced)) +
                                     "' does not apply to " + std::string(to_string(op)) + " on a pattern this job "
                                     "needs (" + std::to_string(pattern.groups.size()) + " groups of " +
                                     std::to_string(pattern.groups.front().size()) + " ranks)");
    }
    throw std::invalid_argument(std::string("CollectiveModel: algorithm '") +
                                std::string(forced ? to_string(*forced) : "any") + "' does not apply to " +
                                std::string(to_string(op)) + " on this pattern");
  }
  return best;
}

}  // namespace clustersim::models
