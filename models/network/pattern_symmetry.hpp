// Exact translation symmetry of collective patterns on a fat tree (issue 31): solve one block of a pattern's
// groups instead of all of them when the others are the same block moved by whole leaves or pods.
//
// Claim. Take a cluster of one zone whose fabric is a single switch or a fat tree of two or three tiers
// (Topology::fabric_shape()), whose leaves hold whole nodes (leaf_down_ports a multiple of nics_per_node).
// Split a pattern's groups into blocks: groups that may touch a common "side" of a common unit are in one
// block (union-find), where
//   unit  = the node (single switch, or one leaf and no spines), the leaf (two tiers: its up-links to the
//           spines and the spines' down-links to it belong to it), or the pod (three tiers: its leaf <->
//           aggregation and aggregation <-> core links);
//   side  = "out" (the links a route leaving the unit's GPUs uses: GPU -> NVSwitch/host/NIC, NIC -> leaf,
//           up-links) or "in" (down-links, leaf -> NIC, NIC -> GPU). With rail NICs (NIC i on GPU i) the two
//           sides share no link; otherwise (NICs on the host, whose host -> GPU links both sides use) a unit
//           has one side.
// A send_recv pair {a, b} on two nodes touches a's unit "out" and b's unit "in"; every other group (its
// members both send and receive), and a pair inside one node, touches both sides of its members' units.
// If every block is block 0 (the block of the first group) moved by D nodes (group i of the block is group i
// of block 0 plus D x gpus_per_node, rank by rank), D a multiple of translation_period_nodes, then
// bandwidth_seconds_per_byte of the pattern's schedule equals that of block 0's schedule, to the last bit,
// and so do the schedules' step counts.
//
// Why (the reduction behind CollectiveModel's node-local representative, one level up):
//  1. Every route is up-down: from its source GPU through its node, its NIC and up to the lowest common
//     switch, then down (Topology: fewest hops, GPUs never transit). Each link it crosses belongs to the
//     source's unit "out" or the destination's unit "in" (the core and spine switches are vertices, and every
//     spine/core link is the up- or down-link of one leaf or pod). Blocks touch disjoint unit sides, so they
//     share no link: no max-min component of bandwidth_seconds_per_byte spans two blocks.
//  2. Moving a block by D nodes (D a whole number of units) maps its nodes, leaves and pods onto others built
//     alike: the same link capacities and classes, and the links of each switch in the same id order. ECMP
//     picks the k-th next hop from the destination rank read as a mixed-radix number (digits: the NIC count
//     when NICs are on the host, then radix/2 per tier above the leaf); D x gpus_per_node is a multiple of
//     the product of those radices, so every digit, hence every choice, is unchanged. So the moved transfers'
//     paths are the moved paths, and each component of a moved block has the structure (paths over links
//     numbered by first use, their capacities, the bytes) of the component of block 0 it came from.
//  3. bandwidth_seconds_per_byte solves each structure once (the same double for every component of one
//     structure) and takes, per phase, the slowest component: the maximum over the same set of values for
//     the pattern and for block 0. Step counts and applicability come from the first group, which is in
//     block 0; with one zone no transfer crosses zones.
// The max-min allocation is unique (Bertsekas & Gallager, Data Networks, 2nd ed., Sec. 6.5.2) and invariant
// under the fabric's automorphisms; this is the subgroup of translations, where the orbits are whole blocks.
// Anything else (several zones, rail-optimized fabrics whose spine links every node of a rail shares, a block
// that is not a translate, a shift that is not a whole period) gets nullopt: the caller solves the whole
// pattern.
#pragma once

#include <cstdint>
#include <optional>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

namespace clustersim::models {

/// Node count of a unit of `shape` (see the header) and the least node shift D that is an exact symmetry
/// (a multiple of the unit, with D x gpus_per_node a multiple of the ECMP radices' product); nullopt when the
/// fabric has no such symmetry here (several zones, rail-optimized, leaves that split a node's NICs).
struct TranslationSymmetry {
  int64_t unit_nodes = 1;
  int64_t period_nodes = 1;
  bool split_sides = false;  ///< rail NICs: a unit's "out" and "in" links are disjoint
};
std::optional<TranslationSymmetry> translation_symmetry(const FabricShape& shape, int gpus_per_node);

/// Block 0 of `pattern` when every block is a translate of it by a multiple of the period and there are at
/// least two blocks (see the header); nullopt otherwise (the exact answer is then the whole pattern). `op`:
/// send_recv groups are directed pairs. Groups must be non-empty and name GPUs of `topology` (any other
/// group or rank gives nullopt: a returned block proves every rank of `pattern` in [0, gpu_count), each being
/// range-checked by the scan); O(ranks).
std::optional<CommPattern> translation_representative(CollectiveOp op, const CommPattern& pattern,
                                                       const Topology& topology);

}  // namespace clustersim::models
