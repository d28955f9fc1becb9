// Exact node symmetry of point-to-point patterns on a rail-optimized fabric (issue 31): solve one block of an
// expert all-to-all's groups instead of all of them when the other blocks are it moved by whole nodes.
//
// Claim. Take a cluster of one zone on a rail-optimized fabric (Topology::fabric_shape()) with rail NICs (GPU i
// owns NIC i on rail i) and an NVLink switch vertex in each node, and a pattern for op = all_to_all or
// ring_shift (the direct algorithm, whose cross-node transfers use PXN) or send_recv. Require of every group
// that spans two or more nodes: (all_to_all, ring_shift) each of its nodes holds members at the same set of
// local indices; (send_recv) its two ranks have the same local index. Split the groups into blocks that share
// no node (union-find over nodes). If every block is block 0 (the block of the first group) moved by D whole
// nodes (group i of the block is group i of block 0 plus D x gpus_per_node, rank by rank; any D), then
// phase_seconds_per_byte (hence bandwidth_seconds_per_byte) of the pattern's direct schedule equals that of
// block 0's, to the last bit, and so do the step counts and zone latency.
//
// Why:
//  1. Every transfer is one or two legs, each a route of one of two forms, and both are unique paths (every
//     routing decision has one candidate, so the ECMP hash is never read). (a) Inside node a, GPU i -> GPU j:
//     GPU i -> NVLink switch -> GPU j (Topology: a route inside a node uses only the node's fabric; GPUs and,
//     with an NVLink switch, the host do not transit; the switch is the only two-hop way). (b) GPU i of node a
//     -> GPU i of node b: GPU i -> NIC i -> rail i -> NIC i of b -> GPU i (with rail NICs the NIC is the GPU's
//     only way into the network; rail i reaches NIC i of b by its own down-link in one hop, any other way takes
//     three or more). A cross-node all-to-all or ring-shift transfer between local indices i != j goes through
//     the member of its source's node at local index j (Builder::add_p2p: one zone, an NVLink switch, and that
//     rank is a member because the node holds the same local indices as the destination's): a leg (a) then a
//     leg (b); one with i == j, and a send_recv pair across nodes, is a leg (b). No transfer crosses a spine.
//  2. So every link a transfer uses belongs to one node: its NVLink and PCIe links, its NICs' links to and from
//     their rails. Blocks have disjoint node sets, so they share no link, and each max-min component of the
//     pattern's phase lies in one block, with its transfers in the same relative order as in that block's own
//     schedule (blocks keep the groups in pattern order, build_schedule keeps transfer order within a group).
//  3. Moving block 0 by D nodes maps each leg onto the same form between the moved GPUs, i.e. each link of node
//     a onto the same link of node a + D (every node is node 0's template moved, ClusterGraph; each NIC's rail
//     links have the port rate and class of every other node's). The transfer order is kept too: a translation
//     keeps the sorted order of a group's ranks, each pair's relay is the moved relay, and the bytes (1/n of S
//     for an all-to-all, S otherwise) depend on the group size only. So each component of block b is a
//     component of block 0 with its links renamed injectively, capacities and classes kept: the same structure
//     key (paths over links numbered by first use, bytes, capacities x efficiency), solved once to one double.
//  4. A phase's time is the largest of its components' values: the same set of doubles for the pattern and for
//     block 0, so the same maximum. Step counts come from the first group, which block 0 keeps first; send_recv's
//     "crosses nodes" holds for block 0 iff for some translate of it; with one zone no transfer crosses zones.
// Anything else (several zones, NICs on the host, no NVLink switch, a group whose nodes hold different local
// indices or a cross-rail pair, blocks that are not translates, fewer than two blocks, another op) gets
// nullopt: the caller solves the whole pattern (or another reduction applies).
#pragma once

#include <optional>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

namespace clustersim::models {

/// Block 0 of `pattern` when the claim above holds and there are at least two blocks; nullopt otherwise (the
/// exact answer is then the whole pattern). Only for the direct schedules of `op` = all_to_all, ring_shift or
/// send_recv (groups of send_recv are directed {source, destination} pairs). Groups must be non-empty; ranks
/// outside the cluster or groups of unequal size give nullopt. O(ranks log group size).
std::optional<CommPattern> rail_block_representative(CollectiveOp op, const CommPattern& pattern,
                                                      const Topology& topology);

}  // namespace clustersim::models
