// Max-min fair bandwidth sharing among flows on links: the rate solver of the flow-level network (issue 3).
//
// Model. A flow crosses an ordered path of links (LinkId), each with a capacity in B/s, and may carry its own
// rate cap (a NIC or protocol limit), which acts as a private link that only this flow crosses. A flow that
// crosses a link k times uses k times its rate there.
//
// Definition (Bertsekas & Gallager, Data Networks, 2nd ed., Sec. 6.5.2). A feasible allocation r (for every
// link l, sum of r_f over the flows on l <= c_l; r_f <= cap_f) is max-min fair when no rate can be increased
// without decreasing another rate that is already smaller or equal. Equivalently, every flow f has a
// bottleneck: its cap (r_f = cap_f), or a link l on its path that is saturated (sum = c_l) and on which no
// flow has a larger rate than f. The max-min fair allocation exists and is unique.
//
// Algorithm: progressive filling (water-filling), as documented in SimGrid's src/kernel/lmm/System.hpp.
//   remaining(l) = c_l, unfrozen(l) = number of flows on l
//   repeat until every flow is frozen:
//     pick the most constrained resource: the link with the smallest fair share remaining(l) / unfrozen(l),
//       or the smallest cap of an unfrozen flow, whichever is smaller (ties: links before caps, lower id first);
//     freeze every unfrozen flow on it at that share (or the capped flow at its cap);
//     subtract each frozen rate from every link the flow crosses and decrement their unfrozen counts.
// A flow bottlenecked on one link thus leaves its unused share on its other links to the flows there.
// Links are ordered on (fair share, id) with lazy keys: freezing flows at the minimum share never lowers
// another link's share, so a key is a lower bound, refreshed only when its link reaches the top. The first keys
// are sorted once (a run); only re-keyed links enter a binary min-heap, and the top is the smaller of the two
// (the same link at every step as one heap of every link: see fill()). Caps never change during a solve and are
// sorted once. One solve costs
//   O(H + L log L + R log R + F log F)   H = sum of path lengths, L links, F flows of the components solved,
//                                        R <= H re-keyings of stale links at the top.
//
// Incrementality. Flows that share a link, transitively, form a connected component; the rates of one
// component do not depend on any other. add_flow / remove_flow / set_capacity only mark the links they touch
// as dirty; solve() recomputes, from scratch, exactly the components that contain a dirty link (found by a
// breadth-first search from those links) and leaves every other rate untouched. Use batch semantics: many
// changes, then one solve(). last_solve_stats() reports how much a solve touched. The gain depends on the
// traffic: random pairs on a fat tree join nearly every flow into one component, and then every solve is a
// full one; independent jobs or parallel groups on disjoint links give many small components.
//
// Determinism. Ties are broken by id, and link membership lists evolve only with the call sequence, so the
// same sequence of calls gives bit-identical rates. Nothing iterates an unordered container. A component is
// always re-solved from scratch, so incremental solves give the same bits as a full one (invalidate_all()).
//
// Memory. Flat vectors: links with their flow-membership lists, regions of one shared array (swap-removal in
// O(1) through back-indices; a full region moves to the end with twice the room), flows with their paths,
// regions of another (a slot's region reused by its next flow when the path fits), flow slots reused after
// remove_flow, scratch arrays reused across solves; clear() keeps every array's memory, so a solver that
// solves many problems in a row allocates only while they grow. A FlowId carries its slot and a
// generation, so an id of a removed flow is rejected rather than aliasing the slot's next flow.
//
// Units: capacities, caps and rates in B/s (units::BytesPerSecond). Not thread-safe; const methods may be
// called concurrently with each other only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "models/units.hpp"

namespace clustersim::models {

using LinkId = uint32_t;
using FlowId = uint64_t;

/// How much work the last solve() did (for tests of incrementality and for benchmarks).
struct FairShareSolveStats {
  size_t components = 0;  ///< connected components recomputed
  size_t links = 0;       ///< links in those components
  size_t flows = 0;       ///< flows in those components (including flows with an empty path)
};

class FairShareSolver {
 public:
  static constexpr units::BytesPerSecond kUncapped{std::numeric_limits<double>::infinity()};

  /// A new link of `capacity` B/s. Throws std::invalid_argument unless 0 < capacity < infinity.
  LinkId add_link(units::BytesPerSecond capacity);
  /// Changes a link's capacity; its component is re-solved at the next solve(). Same checks as add_link;
  /// std::out_of_range for an unknown link.
  void set_capacity(LinkId link, units::BytesPerSecond capacity);
  [[nodiscard]] units::BytesPerSecond capacity(LinkId link) const;
  [[nodiscard]] size_t link_count() const { return links_.size(); }
  /// Room for `flows` flows on `link` (its list grows once instead of doubling as add_flow fills it: a caller
  /// that knows its problem, such as a collective's component, saves the reallocations). No effect on any
  /// rate, id or statistic. Throws std::out_of_range for an unknown link.
  void reserve_flows(LinkId link, size_t flows);
  /// Room for `links` more links, `flows` more flows and `crossings` more (flow, link) crossings (the sum of the
  /// new flows' path lengths), so that a caller that knows its problem fills the solver without regrowing its
  /// arrays. No effect on any rate, id or statistic; throws std::bad_alloc / std::length_error as vector does.
  void reserve(size_t links, size_t flows, size_t crossings);

  /// A new flow over `path` (link ids, in order; repeats allowed), limited to `cap` B/s. Its rate is 0 until
  /// the next solve(). Throws std::out_of_range for an unknown link, std::invalid_argument if cap is not > 0
  /// or if the path is empty and the cap infinite (the rate would be unbounded).
  FlowId add_flow(std::span<const LinkId> path, units::BytesPerSecond cap = kUncapped);
  /// Removes a flow; the bandwidth it held is shared out at the next solve(). Throws std::out_of_range for an
  /// unknown or already removed id.
  void remove_flow(FlowId flow);
  [[nodiscard]] bool contains(FlowId flow) const;
  [[nodiscard]] size_t flow_count() const { return live_flows_; }

  /// Recomputes the max-min fair rates of the components changed since the last solve(); no-op if none.
  void solve();
  /// Removes every link and flow: the solver is then as a fresh one (ids restart at 0, every rate and statistic
  /// as new), but keeps its memory, the links' and flows' lists included, for the next problem (a caller that
  /// solves many small problems in a row, such as the components of a collective's phase, allocates once).
  void clear();
  /// Marks every link dirty, so that the next solve() recomputes the whole network (benchmarks, checks).
  void invalidate_all();
  /// True if a change is waiting for solve().
  [[nodiscard]] bool dirty() const { return !dirty_links_.empty() || !dirty_pathless_.empty(); }

  /// Rate of `flow` as of the last solve() (0 for a flow added since). Throws std::out_of_range for an
  /// unknown or removed id.
  [[nodiscard]] units::BytesPerSecond rate(FlowId flow) const;

  [[nodiscard]] const FairShareSolveStats& last_solve_stats() const { return stats_; }
  [[nodiscard]] size_t last_solve_flows_touched() const { return stats_.flows; }

 private:
  struct Hop {
    LinkId link;
    uint32_t pos;  ///< index of this hop's entry in links_[link].entries
  };
  struct Entry {
    uint32_t flow;  ///< flow slot
    uint32_t hop;   ///< index into that flow's hops
  };
  struct Link {
    double capacity = 0.0;
    /// entries_[first, first + size): one per (flow, hop) crossing this link; room for `room` there.
    uint32_t first = 0;
    uint32_t size = 0;
    uint32_t room = 0;
    // solve scratch
    double remaining = 0.0;
    uint32_t unfrozen = 0;
    uint32_t stamp = 0;    ///< == solve epoch once visited by the component search
    bool dirty = false;
  };
  struct Flow {
    /// hops_[first, first + size): the flow's path with each hop's entry; room for `room` there (kept when the
    /// slot is freed, for the slot's next flow).
    uint32_t first = 0;
    uint32_t size = 0;
    uint32_t room = 0;
    double cap = 0.0;
    double rate = 0.0;
    uint32_t generation = 0;
    uint32_t stamp = 0;     ///< == solve epoch once visited
    bool live = false;
    bool frozen = false;
  };
  /// A link in the bottleneck heap, keyed by a lower bound of its fair share remaining / unfrozen.
  struct HeapItem {
    double share;
    LinkId link;
  };
  /// A capped flow; caps do not change during a solve, so they are sorted once.
  struct CapItem {
    double cap;
    uint32_t slot;
  };

  [[nodiscard]] uint32_t slot_of(FlowId flow) const;  // throws std::out_of_range
  void check_link(LinkId link) const;
  /// `link`'s entries, in order.
  [[nodiscard]] std::span<Entry> entries_of(const Link& link) { return {entries_.data() + link.first, link.size}; }
  /// `flow`'s hops, in path order.
  [[nodiscard]] std::span<Hop> hops_of(const Flow& flow) { return {hops_.data() + flow.first, flow.size}; }
  [[nodiscard]] std::span<const Hop> hops_of(const Flow& flow) const { return {hops_.data() + flow.first, flow.size}; }
  /// Moves `link`'s entries to a new region of `room` (>= its size) at the end of entries_.
  void relocate(Link& link, size_t room);
  void mark_dirty(LinkId link);
  void collect_components();
  void fill();
  void freeze(uint32_t slot, double rate);
  void sift_down(uint32_t pos);
  void push_heap(HeapItem item);
  void sort_run();
  void pop_top();

  std::vector<Link> links_;
  std::vector<Flow> flows_;
  /// Every link's entries, each link's in one region (Link::first, size, room). A region that fills moves to the
  /// end with twice the room (the old one is left unused until clear()), so a link's regions add up to less than
  /// four times its peak flow count (plus 4); clear() empties it and keeps its memory.
  std::vector<Entry> entries_;
  size_t entries_used_ = 0;  ///< entries_[0, entries_used_) are regions; the rest is free room
  /// Every flow's hops, each flow's in one region (Flow::first, size, room). A slot's region is reused by its next
  /// flow when the path fits, else the flow takes a new one at the end with room for max(path, 2 x old room) (the
  /// old one is left unused until clear()), so a slot's regions add up to less than four times its longest path;
  /// clear() empties it and keeps its memory.
  std::vector<Hop> hops_;
  size_t hops_used_ = 0;  ///< hops_[0, hops_used_) are regions; the rest is free room
  std::vector<uint32_t> free_slots_;
  size_t live_flows_ = 0;
  std::vector<LinkId> dirty_links_;
  std::vector<uint32_t> dirty_pathless_;  ///< slots of flows with an empty path added since the last solve

  // solve scratch, reused
  uint32_t epoch_ = 0;
  std::vector<LinkId> comp_links_;
  std::vector<uint32_t> comp_flows_;
  std::vector<HeapItem> run_;   ///< every link's first key, sorted on (share, link id)
  std::vector<HeapItem> sorted_;  ///< sort_run's output, swapped with run_
  std::vector<HeapItem> heap_;  ///< binary min-heap on (share, link id) of the links re-keyed since
  std::vector<CapItem> caps_;
  FairShareSolveStats stats_;
};

}  // namespace clustersim::models
