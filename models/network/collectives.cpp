#include "models/network/collectives.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "models/splitmix64.hpp"

namespace clustersim::models {

namespace {

constexpr CollectiveOp kOps[] = {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                                 CollectiveOp::all_to_all, CollectiveOp::broadcast,      CollectiveOp::send_recv,
                                 CollectiveOp::ring_shift};
constexpr CollectiveAlgorithm kAlgorithms[] = {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                               CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::nvls,
                                               CollectiveAlgorithm::direct};


/// The ECMP key of a transfer: its destination GPU (D-mod-K routing: an up-link is chosen by destination, which
/// routes shift permutations such as ring steps without conflicts on a fat tree; Zahavi et al., "D-Mod-K
/// routing providing non-blocking traffic for shift permutations on real life fat trees", 2010; the default
/// of InfiniBand's OpenSM ftree routing). The other arguments are kept for the call sites' readability.
uint64_t flow_hash(uint64_t /*group*/, uint64_t /*channel*/, uint64_t /*from*/, uint64_t to) { return to; }

/// Builds transfers over routed paths and tallies the inter-zone propagation on them.
class Builder {
 public:
  Builder(const Topology& t) : topology_(t), gpn_(t.gpus_per_node()) {}

  int64_t node_of(int64_t rank) const { return rank / gpn_; }

  /// A transfer from `from` to `to`, routed straight into the phase's link array.
  void add(Phase& phase, int64_t from, int64_t to, double bytes_per_byte, uint64_t hash) {
    const size_t first = phase.links.size();
    topology_.append_route(static_cast<VertexId>(from), static_cast<VertexId>(to), hash, phase.links);
    close_transfer(phase, first, bytes_per_byte);
  }

  /// A transfer from `from` to `to` on another node that leaves through the NIC of `proxy`, a GPU of the
  /// sender's node: NVLink from -> proxy, then proxy's rail NIC to `to` (NCCL's PXN, "PCI x NVLink", NCCL
  /// 2.12+: a GPU hands data over NVLink to the node-mate on the destination's rail, so inter-node traffic stays
  /// on one rail; NVIDIA Developer Blog, "Doubling all2all Performance with NVIDIA Collective Communication
  /// Library 2.12", 2022). `proxy == from` is a plain route.
  void add_via(Phase& phase, int64_t from, int64_t proxy, int64_t to, double bytes_per_byte, uint64_t hash) {
    if (proxy == from) {
      add(phase, from, to, bytes_per_byte, hash);
      return;
    }
    const size_t first = phase.links.size();
    topology_.append_route(static_cast<VertexId>(from), static_cast<VertexId>(proxy), hash, phase.links);
    topology_.append_route(static_cast<VertexId>(proxy), static_cast<VertexId>(to), hash, phase.links);
    close_transfer(phase, first, bytes_per_byte);
  }

  /// Records the transfer whose path is phase.links[first ..] (just appended). Throws std::length_error past
  /// 2^32 links in one phase (Transfer's offsets are 32-bit).
  static void close_transfer(Phase& phase, size_t first, double bytes_per_byte) {
    if (phase.links.size() > std::numeric_limits<uint32_t>::max()) {
      throw std::length_error("build_schedule: more than 2^32 links in one phase");
    }
    phase.transfers.push_back(
        Transfer{static_cast<uint32_t>(first), static_cast<uint32_t>(phase.links.size() - first), bytes_per_byte});
  }

  int64_t local_of(int64_t rank) const { return rank % gpn_; }

  /// Whether the nodes' GPUs meet at an NVSwitch (looked up once).
  bool has_nvswitch() {
    if (!nvswitch_) nvswitch_ = switch_links(0).has_value();
    return *nvswitch_;
  }

  /// A point-to-point transfer between members of one communicator (`members`: all-to-all, ring shift), as
  /// NCCL sends it: across nodes of one zone with an NVSwitch, through the member of the sender's node on the
  /// destination's rail when there is one (PXN; NCCL_P2P_PXN_LEVEL's default uses it for every peer whose NIC
  /// is on another rail; the relay must be a rank of the communicator, whose proxy thread does the network
  /// send), so that the transfer does not cross rails in the network; otherwise routed directly.
  /// `sorted_members`: the communicator's ranks in ascending order (the relay, the GPU of the sender's node
  /// with the destination's local index, is looked up among them by binary search).
  void add_p2p(Phase& phase, int64_t from, int64_t to, const std::vector<int64_t>& sorted_members,
               double bytes_per_byte, uint64_t hash) {
    int64_t proxy = from;
    const int64_t from_node = node_of(from), to_node = node_of(to);
    if (from_node != to_node && local_of(from) != local_of(to) &&
        topology_.zone_of_node(from_node) == topology_.zone_of_node(to_node) && has_nvswitch()) {
      const int64_t relay = from_node * gpn_ + local_of(to);
      if (std::binary_search(sorted_members.begin(), sorted_members.end(), relay)) proxy = relay;
    }
    add_via(phase, from, proxy, to, bytes_per_byte, hash);
  }

  /// GPU -> NVSwitch and NVSwitch -> GPU links of `rank` (NVLS), or nullopt without an NVSwitch.
  std::optional<std::pair<LinkId, LinkId>> switch_links(int64_t rank) const {
    const auto gpu = static_cast<VertexId>(rank);
    for (LinkId id : topology_.out_links(gpu)) {  // in id order: the first such link, as a scan of all links
      if (topology_.vertex(topology_.link(id).dst).kind == VertexKind::nvswitch) return std::pair{id, id ^ 1u};
    }
    return std::nullopt;
  }

 private:
  const Topology& topology_;
  std::optional<bool> nvswitch_;
  int64_t gpn_;

 public:
  /// ring_phase's scratch: one channel's ring and each position's node (reused by every ring of a schedule).
  std::vector<int64_t> ring_order;
  std::vector<size_t> ring_node_of_position;
};

/// A group's members per node, as views: node k's members are members[start[k] .. start[k + 1]), in the group's
/// order (runs of one node in `members`). One array of ranks and one of offsets instead of a list per node (a
/// data-parallel group of 2,048 nodes has 2,048 one-member nodes).
struct NodeSpans {
  std::span<const int64_t> members;
  std::span<const size_t> start;  ///< size() + 1 offsets into members; start[0] = 0, the last = members.size()
  [[nodiscard]] size_t size() const { return start.size() - 1; }
  [[nodiscard]] std::span<const int64_t> operator[](size_t k) const {
    return members.subspan(start[k], start[k + 1] - start[k]);
  }
  [[nodiscard]] std::span<const int64_t> front() const { return (*this)[0]; }
};

/// The runs of one node in `ranks` (a group's ranks, in ascending order but for a send/recv pair), as the offsets
/// of NodeSpans over `ranks`, into `start` (its previous contents replaced, its memory reused).
NodeSpans by_node(std::span<const int64_t> ranks, const Builder& b, std::vector<size_t>& start) {
  start.clear();
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 0 || b.node_of(ranks[i - 1]) != b.node_of(ranks[i])) start.push_back(i);
  }
  start.push_back(ranks.size());
  return NodeSpans{ranks, start};
}

/// The ring's node-to-node hops are rail-aligned, as NCCL builds them: channel c enters every node at the
/// member rotated to the front (its "rail" member) and the node's last member sends to the next node's rail
/// member through the NIC of the member with that member's local index (PXN, Builder::add_via), so every
/// inter-node hop of channel c joins two NICs of one rail. NCCL's ring search keeps one NIC per channel on every
/// node (NCCL_CROSS_NIC, default 2: "try to use the same NIC for the same ring/tree"; NCCL environment-variable
/// documentation) and sends through it by PXN when the sending GPU is not the NIC's own. Without it, a ring
/// over a strided data-parallel group (two members per node) would hop from local index 4+t to local index t of
/// the next node, i.e. across rails and through the spines of a rail-optimized fabric, which NCCL avoids.
/// When the sender's node has no member with the destination's local index, the hop is routed directly.
/// `nodes`: the members per node (views: one node's list is passed without a copy); `b`'s ring scratch holds
/// one channel's ring.
void ring_phase(Phase& phase, Builder& b, NodeSpans nodes, uint64_t group_index, double bytes_per_step, bool wrap) {
  // One channel per member of a node (the fewest members any node has), each rotated so that it leaves every
  // node through a different GPU's NIC; one channel inside a single node.
  size_t channels = nodes.size() == 1 ? 1 : nodes.front().size();
  for (size_t k = 0; k < nodes.size(); ++k) channels = std::min(channels, nodes[k].size());
  std::vector<int64_t>& order = b.ring_order;  // one channel's ring, reused by the next
  std::vector<size_t>& node_of_position = b.ring_node_of_position;
  for (size_t c = 0; c < channels; ++c) {
    order.clear();
    node_of_position.clear();
    for (size_t k = 0; k < nodes.size(); ++k) {
      const std::span<const int64_t> members = nodes[k];
      for (size_t i = 0; i < members.size(); ++i) {
        order.push_back(members[(i + c) % members.size()]);
        node_of_position.push_back(k);
      }
    }
    const size_t n = order.size();
    for (size_t i = 0; i < n; ++i) {
      if (!wrap && i + 1 == n) break;
      const int64_t from = order[i], to = order[(i + 1) % n];
      int64_t proxy = from;
      if (node_of_position[i] != node_of_position[(i + 1) % n]) {
        for (int64_t m : nodes[node_of_position[i]]) {
          if (b.local_of(m) == b.local_of(to)) proxy = m;
        }
      }
      b.add_via(phase, from, proxy, to, bytes_per_step / static_cast<double>(channels),
                flow_hash(group_index, c, static_cast<uint64_t>(from), static_cast<uint64_t>(to)));
    }
  }
}

int64_t ceil_log2(int64_t x) {
  int64_t k = 0;
  while ((int64_t{1} << k) < x) ++k;
  return k;
}

}  // namespace

void Phase::add_transfer(std::span<const LinkId> path, double bytes_per_byte) {
  const size_t first = links.size();
  links.insert(links.end(), path.begin(), path.end());
  Builder::close_transfer(*this, first, bytes_per_byte);
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::all_to_all: return "all_to_all";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::send_recv: return "send_recv";
    case CollectiveOp::ring_shift: return "ring_shift";
  }
  return "?";
}

std::string_view to_string(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::ring: return "ring";
    case CollectiveAlgorithm::tree: return "tree";
    case CollectiveAlgorithm::hierarchical: return "hierarchical";
    case CollectiveAlgorithm::nvls: return "nvls";
    case CollectiveAlgorithm::direct: return "direct";
  }
  return "?";
}

std::string_view to_string(Protocol p) { return p == Protocol::ll ? "LL" : "Simple"; }

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (CollectiveOp op : kOps) {
    if (to_string(op) == name) return op;
  }
  return std::nullopt;
}

std::optional<CollectiveAlgorithm> parse_collective_algorithm(std::string_view name) {
  for (CollectiveAlgorithm a : kAlgorithms) {
    if (to_string(a) == name) return a;
  }
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveOp op, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * (n - 1.0) / n;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
    case CollectiveOp::all_to_all: return (n - 1.0) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::send_recv: return 1.0;
    case CollectiveOp::ring_shift: return 1.0;
  }
  return 1.0;
}

uint64_t CommPattern::hash() const {
  if (const uint64_t cached = hash_.load(std::memory_order_relaxed); cached != 0) return cached;
  const uint64_t h = groups.content_hash();  // never 0
  hash_.store(h, std::memory_order_relaxed);
  return h;
}

double LinkEfficiency::of(LinkClass c) const {
  switch (c) {
    case LinkClass::nvlink: return nvlink;
    case LinkClass::pcie: return pcie;
    case LinkClass::infinity_fabric: return infinity_fabric;
    case LinkClass::infiniband: return infiniband;
    case LinkClass::ethernet: return ethernet;
    case LinkClass::inter_zone: return inter_zone;
  }
  return 1.0;
}

std::optional<CollectiveSchedule> build_schedule(CollectiveOp op, CollectiveAlgorithm algorithm,
                                                 const Topology& topology, const CommPattern& pattern,
                                                 bool nvls_capable) {
  if (pattern.groups.empty() || pattern.groups.front().empty()) {
    throw std::invalid_argument("build_schedule: the pattern has no group");
  }
  const size_t n = pattern.groups.front().size();
  const int64_t gpus = topology.gpu_count();
  for (const auto& g : pattern.groups) {
    if (g.size() != n) throw std::invalid_argument("build_schedule: groups of one pattern must have equal size");
    for (int64_t r : g) {
      if (r < 0 || r >= gpus) {
        throw std::invalid_argument("build_schedule: rank " + std::to_string(r) + " is not a GPU of the cluster (" +
                                    std::to_string(gpus) + " GPUs)");
      }
    }
  }
  if (op == CollectiveOp::send_recv && n != 2) {
    throw std::invalid_argument("build_schedule: send_recv groups are {source, destination} pairs");
  }

  Builder b(topology);
  CollectiveSchedule s;
  s.op = op;
  s.algorithm = algorithm;
  s.ranks = static_cast<int64_t>(n);
  if (n == 1) return s;  // nothing to move
  // Inter-zone links exist only between zones (topology.hpp: one per ordered pair of zones), so a cluster of one
  // zone has none, and every phase's zone latency is the walk's 0.0 without walking its links.
  const bool zones = topology.zones().size() > 1;
  auto finish = [&topology, zones](CollectiveSchedule& schedule) {
    for (Phase& phase : schedule.phases) {
      if (!zones) {
        phase.zone_latency = units::Seconds(0.0);
        continue;
      }
      double worst = 0.0;
      for (const Transfer& t : phase.transfers) {
        double zone = 0.0;
        for (LinkId l : phase.path(t)) {
          if (topology.is_inter_zone(l)) zone += topology.link(l).latency.value();
        }
        worst = std::max(worst, zone);
      }
      phase.zone_latency = units::Seconds(worst);
    }
    return std::optional<CollectiveSchedule>(std::move(schedule));
  };

  // The first group decides applicability and step counts (all groups have the same shape in practice).
  std::vector<int64_t> first(pattern.groups.front().begin(), pattern.groups.front().end());
  std::sort(first.begin(), first.end());
  std::vector<size_t> first_start;
  const NodeSpans first_nodes = by_node(first, b, first_start);
  const auto nodes_spanned = static_cast<int64_t>(first_nodes.size());
  const bool one_node = nodes_spanned == 1;
  const double nd = static_cast<double>(n);

  // Each group's sorted ranks and members per node, in buffers reused from group to group.
  auto per_group = [&](auto&& fn) {
    std::vector<int64_t> sorted;
    std::vector<size_t> start;
    for (size_t gi = 0; gi < pattern.groups.size(); ++gi) {
      sorted.assign(pattern.groups[gi].begin(), pattern.groups[gi].end());
      if (op != CollectiveOp::send_recv) std::sort(sorted.begin(), sorted.end());
      fn(gi, sorted, by_node(sorted, b, start));
    }
  };

  switch (algorithm) {
    case CollectiveAlgorithm::ring: {
      if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv || op == CollectiveOp::ring_shift) {
        return std::nullopt;
      }
      Phase phase;
      const bool broadcast = op == CollectiveOp::broadcast;
      const int64_t steps = op == CollectiveOp::all_reduce ? 2 * (s.ranks - 1) : s.ranks - 1;
      phase.repeat = broadcast ? 1 : steps;
      const int64_t inter = one_node ? 0 : (op == CollectiveOp::all_reduce ? 2 * (nodes_spanned - 1) : nodes_spanned - 1);
      phase.inter_steps = inter;
      phase.intra_steps = steps - inter;
      per_group([&](size_t gi, const std::vector<int64_t>&, NodeSpans nodes) {
        ring_phase(phase, b, nodes, gi, broadcast ? 1.0 : 1.0 / nd, /*wrap=*/!broadcast);
      });
      s.phases.push_back(std::move(phase));
      return finish(s);
    }
    case CollectiveAlgorithm::hierarchical: {
      if (op != CollectiveOp::all_reduce || one_node || first_nodes.front().size() < 2) return std::nullopt;
      const auto k = static_cast<int64_t>(first_nodes.front().size());
      Phase reduce_scatter, inter, all_gather;
      reduce_scatter.repeat = all_gather.repeat = k - 1;
      reduce_scatter.intra_steps = all_gather.intra_steps = k - 1;
      inter.repeat = 2 * (nodes_spanned - 1);
      inter.inter_steps = 2 * (nodes_spanned - 1);
      std::vector<int64_t> column;        // one member per node, reused by every column
      std::vector<size_t> column_start;  // 0, 1, .., nodes: one member per node
      per_group([&](size_t gi, const std::vector<int64_t>&, NodeSpans nodes) {
        for (size_t i = 0; i < nodes.size(); ++i) {
          const std::span<const int64_t> members = nodes[i];
          const size_t whole[] = {0, members.size()};  // the node alone
          ring_phase(reduce_scatter, b, NodeSpans{members, whole}, gi, 1.0 / static_cast<double>(k), true);
          ring_phase(all_gather, b, NodeSpans{members, whole}, gi, 1.0 / static_cast<double>(k), true);
        }
        column.resize(nodes.size());
        column_start.resize(nodes.size() + 1);
        for (size_t i = 0; i <= nodes.size(); ++i) column_start[i] = i;
        for (int64_t j = 0; j < k; ++j) {
          for (size_t i = 0; i < nodes.size(); ++i) column[i] = nodes[i][static_cast<size_t>(j) % nodes[i].size()];
          ring_phase(inter, b, NodeSpans{column, column_start}, gi * 1000003 + static_cast<uint64_t>(j),
                     1.0 / static_cast<double>(k) / static_cast<double>(nodes_spanned), true);
        }
      });
      s.phases.push_back(std::move(reduce_scatter));
      s.phases.push_back(std::move(inter));
      s.phases.push_back(std::move(all_gather));
      return finish(s);
    }
    case CollectiveAlgorithm::tree: {
      if (op != CollectiveOp::all_reduce || one_node) return std::nullopt;
      const auto k = static_cast<int64_t>(first_nodes.front().size());
      Phase phase;
      phase.intra_steps = 2 * (k - 1);
      phase.inter_steps = 2 * ceil_log2(nodes_spanned);
      per_group([&](size_t gi, const std::vector<int64_t>&, NodeSpans nodes) {
        // One channel per member of a node (as NCCL runs a tree per channel), each carrying S / channels.
        size_t channels = nodes.front().size();
        for (size_t i = 0; i < nodes.size(); ++i) channels = std::min(channels, nodes[i].size());
        const double share = 1.0 / static_cast<double>(channels);
        for (size_t c = 0; c < channels; ++c) {
          // Intra-node chain starting at member c, both directions (reduce up, broadcast down).
          for (size_t node = 0; node < nodes.size(); ++node) {
            const std::span<const int64_t> members = nodes[node];
            for (size_t i = 0; i + 1 < members.size(); ++i) {
              const int64_t a = members[(c + i) % members.size()], b2 = members[(c + i + 1) % members.size()];
              b.add(phase, b2, a, share, flow_hash(gi, c, static_cast<uint64_t>(b2), static_cast<uint64_t>(a)));
              b.add(phase, a, b2, share, flow_hash(gi, c, static_cast<uint64_t>(a), static_cast<uint64_t>(b2)));
            }
          }
          // Two binary trees over the nodes, each with half the channel's payload, through member c of each
          // node; the second tree is the first shifted by one node, so that most nodes are a leaf in one of
          // them (double binary tree, Sanders et al. 2009).
          const size_t count = nodes.size();
          for (size_t tree = 0; tree < 2; ++tree) {
            for (size_t i = 1; i < count; ++i) {
              const size_t child = (i + tree) % count, parent = ((i - 1) / 2 + tree) % count;
              const std::span<const int64_t> cm = nodes[child], pm = nodes[parent];
              const int64_t from = cm[c % cm.size()], to = pm[c % pm.size()];
              b.add(phase, from, to, 0.5 * share,
                    flow_hash(gi, c, static_cast<uint64_t>(from), static_cast<uint64_t>(to)));
              b.add(phase, to, from, 0.5 * share,
                    flow_hash(gi, c, static_cast<uint64_t>(to), static_cast<uint64_t>(from)));
            }
          }
        }
      });
      s.phases.push_back(std::move(phase));
      return finish(s);
    }
    case CollectiveAlgorithm::nvls: {
      if (op != CollectiveOp::all_reduce || !one_node || !nvls_capable) return std::nullopt;
      Phase phase;
      phase.intra_steps = 2;
      bool ok = true;
      per_group([&](size_t, const std::vector<int64_t>& sorted, NodeSpans) {
        for (int64_t r : sorted) {
          const auto links = b.switch_links(r);
          if (!links) {
            ok = false;
            return;
          }
          phase.add_transfer(std::span<const LinkId>(&links->first, 1), 1.0);
          phase.add_transfer(std::span<const LinkId>(&links->second, 1), 1.0);
        }
      });
      if (!ok) return std::nullopt;
      s.phases.push_back(std::move(phase));
      return finish(s);
    }
    case CollectiveAlgorithm::direct: {
      if (op != CollectiveOp::all_to_all && op != CollectiveOp::send_recv && op != CollectiveOp::ring_shift) {
        return std::nullopt;
      }
      Phase phase;
      phase.pipelined = false;
      (one_node ? phase.intra_steps : phase.inter_steps) = 1;
      per_group([&](size_t gi, const std::vector<int64_t>& ranks, NodeSpans) {
        if (op == CollectiveOp::send_recv) {
          b.add(phase, ranks[0], ranks[1], 1.0,
                flow_hash(gi, 0, static_cast<uint64_t>(ranks[0]), static_cast<uint64_t>(ranks[1])));
          return;
        }
        if (op == CollectiveOp::ring_shift) {
          const std::span<const int64_t> order = pattern.groups[gi];  // the ring as given
          for (size_t i = 0; i < order.size(); ++i) {
            const int64_t from = order[i], to = order[(i + 1) % order.size()];
            b.add_p2p(phase, from, to, ranks, 1.0,
                      flow_hash(gi, 0, static_cast<uint64_t>(from), static_cast<uint64_t>(to)));
          }
          return;
        }
        for (int64_t from : ranks) {
          for (int64_t to : ranks) {
            if (from != to) {
              b.add_p2p(phase, from, to, ranks, 1.0 / nd,
                        flow_hash(gi, 0, static_cast<uint64_t>(from), static_cast<uint64_t>(to)));
            }
          }
        }
      });
      // A send/recv pattern may mix pairs inside and across nodes: count it as crossing when any pair does.
      if (op == CollectiveOp::send_recv) {
        bool crosses = false;
        for (const auto& g : pattern.groups) crosses = crosses || b.node_of(g[0]) != b.node_of(g[1]);
        phase.intra_steps = crosses ? 0 : 1;
        phase.inter_steps = crosses ? 1 : 0;
      }
      s.phases.push_back(std::move(phase));
      return finish(s);
    }
  }
  return std::nullopt;
}

namespace {

/// Scratch of component_seconds_per_byte, one per thread, reused by every component it solves: the solver
/// keeps its links' and flows' lists across FairShareSolver::clear(), so a phase of thousands of components
/// (or a sweep of thousands of schedules) allocates them once. Holds the largest problem's memory until the
/// thread exits (a 65 K-transfer all-to-all group: a few MB).
struct SolveScratch {
  FairShareSolver solver;
  std::vector<FlowId> flows;
  std::vector<double> remaining;
  std::vector<LinkId> path;
  std::vector<double> bytes;
  std::vector<uint32_t> on_link;
  std::vector<size_t> live, still;
};

/// Seconds per byte of one max-min component, read from its structure words (phase_seconds_per_byte): for
/// each of `transfer_count` transfers its path length L, its bytes per byte (bit_cast), then L link numbers in
/// 0..link_count-1; then link_count capacities x efficiency (bit_cast, B/s), link by link number. The
/// transfers alone on the links: max-min fair shares, then the slowest transfer (pipelined) or progressive
/// completion (each finish frees bandwidth for the rest).
///
/// Exact: the solver receives the same links (same capacities, ids by first use), then the same flows in the
/// same order, as when each transfer's new links were added just before its flow (the previous code): adding
/// a link marks nothing dirty and hands out the next id and spare list, whatever flows exist, so the solver's
/// state before solve() is the same, and so is every rate to the bit.
double component_seconds_per_byte(std::span<const uint64_t> words, size_t transfer_count, size_t link_count,
                                  bool pipelined) {
  thread_local SolveScratch scratch;
  FairShareSolver& solver = scratch.solver;
  solver.clear();
  std::vector<FlowId>& flows = scratch.flows;
  std::vector<double>& remaining = scratch.remaining;
  std::vector<LinkId>& path = scratch.path;
  flows.clear();
  remaining.clear();
  // Every array sized once: words hold 2 + L per transfer, then the link words.
  solver.reserve(link_count, transfer_count, words.size() - 2 * transfer_count - link_count);
  for (const uint64_t w : words.last(link_count)) solver.add_link(units::BytesPerSecond(std::bit_cast<double>(w)));
  // Each link's flow list sized once: the flows on each link, counted from the link words.
  std::vector<uint32_t>& on_link = scratch.on_link;
  on_link.assign(link_count, 0);
  for (size_t k = 0, at = 0; k < transfer_count; ++k) {
    const size_t length = words[at];
    for (size_t h = 0; h < length; ++h) ++on_link[words[at + 2 + h]];
    at += 2 + length;
  }
  for (size_t l = 0; l < link_count; ++l) solver.reserve_flows(static_cast<LinkId>(l), on_link[l]);
  size_t at = 0;
  for (size_t k = 0; k < transfer_count; ++k) {
    const size_t length = words[at];
    const double bytes = std::bit_cast<double>(words[at + 1]);
    path.resize(length);
    for (size_t h = 0; h < length; ++h) path[h] = static_cast<LinkId>(words[at + 2 + h]);
    at += 2 + length;
    flows.push_back(solver.add_flow(path));
    remaining.push_back(bytes);
  }
  if (pipelined) {
    solver.solve();
    double slowest = 0.0;
    for (size_t i = 0; i < flows.size(); ++i) slowest = std::max(slowest, remaining[i] / solver.rate(flows[i]).value());
    return slowest;
  }
  // Progressive completion: solve, advance to the next finish, drop finished transfers, repeat.
  std::vector<double>& bytes = scratch.bytes;  // each transfer's size, for the finishing tolerance
  bytes.assign(remaining.begin(), remaining.end());
  double elapsed = 0.0;
  std::vector<size_t>& live = scratch.live;
  std::vector<size_t>& still = scratch.still;
  live.resize(flows.size());
  for (size_t i = 0; i < live.size(); ++i) live[i] = i;
  while (!live.empty()) {
    solver.solve();
    double step = std::numeric_limits<double>::infinity();
    for (size_t i : live) step = std::min(step, remaining[i] / solver.rate(flows[i]).value());
    elapsed += step;
    still.clear();
    for (size_t i : live) {
      remaining[i] -= solver.rate(flows[i]).value() * step;
      // Transfers within 1e-9 of finishing finish now: merges rounds that differ only by rounding.
      if (remaining[i] <= 1e-9 * bytes[i]) {
        solver.remove_flow(flows[i]);
      } else {
        still.push_back(i);
      }
    }
    live.swap(still);
  }
  return elapsed;
}

/// Find with path halving over a union-find forest of a phase's transfers.
uint32_t find_root(uint32_t* parent, uint32_t k) {
  while (parent[k] != k) {
    parent[k] = parent[parent[k]];
    k = parent[k];
  }
  return k;
}

/// A per-thread array of 32-bit marks over link ids, all 0 between uses. Allocated zeroed (calloc: the fresh
/// pages of a large block are the kernel's zero pages, no memset: a 131,072-GPU cluster has 1.3 M links) and
/// grown the same way; each use restores every mark it set, or, when an exception leaves a use, `Restore`
/// clears the whole array.
class LinkMarks {
 public:
  /// The array for `link_count` link ids. Throws std::bad_alloc.
  uint32_t* get(size_t link_count) {
    if (size_ < link_count) {
      data_.reset(static_cast<uint32_t*>(std::calloc(link_count, sizeof(uint32_t))));
      if (!data_) throw std::bad_alloc();
      size_ = link_count;
    }
    return data_.get();
  }
  void clear_all() { std::fill(data_.get(), data_.get() + size_, 0u); }

 private:
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t[], Free> data_;
  size_t size_ = 0;
};

}  // namespace

double bandwidth_seconds_per_byte(const CollectiveSchedule& schedule, const Topology& topology,
                                  const LinkEfficiency& efficiency) {
  const std::vector<double> per_round = phase_seconds_per_byte(schedule, topology, efficiency);
  double total = 0.0;
  for (size_t p = 0; p < schedule.phases.size(); ++p) {
    if (schedule.phases[p].transfers.empty()) continue;
    total += per_round[p] * static_cast<double>(schedule.phases[p].repeat);
  }
  return total;
}

std::vector<double> phase_seconds_per_byte(const CollectiveSchedule& schedule, const Topology& topology,
                                           const LinkEfficiency& efficiency) {
  // A phase's transfers fall into components that share no link (the groups of an expert-parallel all-to-all
  // on disjoint nodes and rails, the stage pairs of a pipeline send/recv). Components are independent max-min
  // problems, and the phase ends when its slowest component does. Components with the same structure (the
  // same sequence of paths over links of the same capacities, links numbered in order of first use, and the
  // same bytes) have the same solution, so each structure is solved once: exact, and a 256-GPU all-to-all on
  // every node of a 2,048-GPU cluster (8 groups, 522 K transfers) solves one group's 65 K.
  //
  // Two walks over the phase's links (tests/network/test_phase_pricing.cpp holds the previous algorithm, a
  // union-find over links and separate passes, and compares the two to the bit):
  //  1. each link's mark takes the first transfer that uses it (k + 1; 0: none yet), and a transfer that meets
  //     a marked link joins that transfer's set in a union-find over transfers (the smaller root wins, so a
  //     component's root is its first transfer): components in order of their first transfer, members in
  //     transfer order, as before;
  //  2. per component, the structure words and their hash in one walk: a link met for the first time in the
  //     component takes the next number (its mark becomes kNumbered | number), then the capacities of the
  //     links in number order, each mark restored to 0 as its capacity is read. Every link of the phase is in
  //     exactly one component, so every mark is restored. The words, the hash and the solver's input are the
  //     previous code's to the bit (the same values in the same order).
  constexpr uint32_t kNumbered = uint32_t{1} << 31;
  const std::size_t link_count = topology.link_count();
  if (link_count >= kNumbered) {
    throw std::length_error("phase_seconds_per_byte: a topology of 2^31 links or more");
  }
  thread_local LinkMarks link_marks;
  uint32_t* const mark = link_marks.get(link_count);
  struct Restore {
    LinkMarks& marks;
    int exceptions = std::uncaught_exceptions();
    ~Restore() {
      if (std::uncaught_exceptions() > exceptions) marks.clear_all();
    }
  } restore{link_marks};
  // capacity x efficiency per link class, as efficiency.of returns it (the same double).
  constexpr LinkClass kClasses[] = {LinkClass::nvlink,     LinkClass::pcie,     LinkClass::infinity_fabric,
                                    LinkClass::infiniband, LinkClass::ethernet, LinkClass::inter_zone};
  double class_efficiency[std::size(kClasses)];
  for (LinkClass c : kClasses) class_efficiency[static_cast<size_t>(c)] = efficiency.of(c);
  std::vector<double> per_round(schedule.phases.size(), 0.0);
  // Scratch reused by every phase (and component) of this call, and by the thread's next calls (a step prices
  // about ten schedules of the same sizes: their arrays are allocated and first touched once).
  struct PricingScratch {
    std::vector<uint32_t> parent, component_of;
    std::vector<size_t> offsets, fill, members;
    std::unique_ptr<uint64_t[]> structure;  // a component's words (below), structure_room of them
    size_t structure_room = 0;
    std::vector<LinkId> first_use;
  };
  thread_local PricingScratch scratch;
  std::vector<uint32_t>& parent = scratch.parent;
  std::vector<uint32_t>& component_of = scratch.component_of;
  std::vector<size_t>& offsets = scratch.offsets;
  std::vector<size_t>& fill = scratch.fill;
  std::vector<size_t>& members = scratch.members;
  std::unique_ptr<uint64_t[]>& structure = scratch.structure;
  size_t& structure_room = scratch.structure_room;
  std::vector<LinkId>& first_use = scratch.first_use;
  struct Solved {
    std::vector<uint64_t> structure;
    double seconds;  ///< its component_seconds_per_byte
  };
  std::vector<Solved> solved;
  std::unordered_multimap<uint64_t, size_t> solved_index;  // structure hash -> index into `solved`
  for (size_t phase_index = 0; phase_index < schedule.phases.size(); ++phase_index) {
    const Phase& phase = schedule.phases[phase_index];
    if (phase.transfers.empty()) continue;
    const size_t n = phase.transfers.size();
    if (n >= kNumbered) throw std::length_error("phase_seconds_per_byte: a phase of 2^31 transfers or more");
    // Walk 1: components. component_of[k] for transfer k, counted in `components`.
    parent.resize(n);
    component_of.resize(n);
    size_t components = 0;
    for (size_t k = 0; k < n; ++k) {
      const Transfer& t = phase.transfers[k];
      if (t.length == 0) throw std::invalid_argument("bandwidth_seconds_per_byte: a transfer without a path");
      const auto self = static_cast<uint32_t>(k);
      parent[k] = self;
      uint32_t root = self;  // k's root, carried along the path (after a union, the smaller root)
      // A mark whose transfer is known to be in root's set (a union keeps it so): the links a path shares with
      // one earlier transfer in a row need no find.
      uint32_t joined = self + 1;
      for (LinkId l : phase.path(t)) {
        const uint32_t owner = mark[l];
        if (owner == 0) {
          mark[l] = self + 1;
          continue;
        }
        if (owner == joined) continue;
        const uint32_t other = find_root(parent.data(), owner - 1);
        if (other != root) {
          parent[std::max(root, other)] = std::min(root, other);
          root = std::min(root, other);
        }
        joined = owner;
      }
    }
    // A root is its component's first transfer, numbered when met; the others take their root's number.
    for (size_t k = 0; k < n; ++k) {
      const uint32_t root = find_root(parent.data(), static_cast<uint32_t>(k));
      component_of[k] = root == k ? static_cast<uint32_t>(components++) : component_of[root];
    }
    // The members of component c at members[offsets[c] .. offsets[c + 1]), in transfer order.
    members.resize(n);
    if (components == n) {
      for (size_t k = 0; k < n; ++k) members[k] = k;
      offsets.resize(n + 1);
      for (size_t c = 0; c <= n; ++c) offsets[c] = c;
    } else {
      offsets.assign(components + 1, 0);
      for (size_t k = 0; k < n; ++k) ++offsets[component_of[k] + 1];
      for (size_t c = 0; c < components; ++c) offsets[c + 1] += offsets[c];
      fill.assign(offsets.begin(), offsets.end() - 1);
      for (size_t k = 0; k < n; ++k) members[fill[component_of[k]]++] = k;
    }
    // Walk 2: each component's structure: per transfer its path length, its bytes, its links by order of first
    // use; then the capacity x efficiency of each link in that order. The structures solved in this phase with
    // their times, found by an FNV-1a hash of their words and then compared word for word (memcmp), so a hash
    // collision never merges two structures.
    solved.clear();
    solved_index.clear();
    double phase_time = 0.0;
    for (size_t c = 0; c < components; ++c) {
      // The words: 2 + L per transfer, then at most one capacity per link word; written through a pointer into
      // a buffer grown to that bound (no capacity check per word).
      size_t bound = 0;
      for (size_t m = offsets[c]; m < offsets[c + 1]; ++m) bound += 2 + 2 * size_t{phase.transfers[members[m]].length};
      if (structure_room < bound) {
        structure_room = std::max(bound, 2 * structure_room);
        structure = std::make_unique_for_overwrite<uint64_t[]>(structure_room);
      }
      uint64_t* out = structure.get();
      first_use.clear();
      uint64_t hash = 0xcbf29ce484222325ULL;
      const auto word = [&](uint64_t w) {
        *out++ = w;
        hash = (hash ^ w) * 0x100000001b3ULL;
      };
      for (size_t m = offsets[c]; m < offsets[c + 1]; ++m) {
        const Transfer& t = phase.transfers[members[m]];
        word(t.length);
        word(std::bit_cast<uint64_t>(t.bytes_per_byte));
        for (LinkId l : phase.path(t)) {
          uint32_t& at = mark[l];
          if ((at & kNumbered) == 0) {
            at = kNumbered | static_cast<uint32_t>(first_use.size());
            first_use.push_back(l);
          }
          word(at & ~kNumbered);
        }
      }
      for (LinkId l : first_use) {
        const Link link = topology.link(l);
        word(std::bit_cast<uint64_t>((link.capacity * class_efficiency[static_cast<size_t>(link.link_class)]).value()));
        mark[l] = 0;
      }
      const std::span<const uint64_t> words(structure.get(), static_cast<size_t>(out - structure.get()));
      const Solved* match = nullptr;
      for (auto [at, end] = solved_index.equal_range(hash); at != end && match == nullptr; ++at) {
        const Solved& candidate = solved[at->second];
        if (std::equal(candidate.structure.begin(), candidate.structure.end(), words.begin(), words.end())) {
          match = &candidate;
        }
      }
      if (match == nullptr) {
        const double seconds =
            component_seconds_per_byte(words, offsets[c + 1] - offsets[c], first_use.size(), phase.pipelined);
        if (c + 1 == components) {  // the phase's last component: no later one to match, nothing kept
          phase_time = std::max(phase_time, seconds);
          break;
        }
        solved_index.emplace(hash, solved.size());
        solved.push_back(Solved{std::vector<uint64_t>(words.begin(), words.end()), seconds});
        match = &solved.back();
      }
      phase_time = std::max(phase_time, match->seconds);
    }
    per_round[phase_index] = phase_time;
  }
  return per_round;
}

}  // namespace clustersim::models
