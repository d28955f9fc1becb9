// Exact symmetry of collective patterns on a rail-optimized fabric (issue 31): solve one block of a pattern's
// groups instead of all of them when the other blocks are it moved by whole nodes and whole rails.
//
// Claim. Take a cluster of one zone on a rail-optimized fabric (Topology::fabric_shape()) with rail NICs (GPU l
// owns NIC l, on rail l) and an NVLink switch vertex in each node, and a pattern whose groups all have the
// same size. Require of every group: (send_recv) its two ranks are on one node or have the same local index;
// (every other op) each node it touches holds members at the same local indices. Split the groups into blocks
// that share no rank (union-find over ranks). If every block is block 0 (the block of the first group) moved
// rank by rank by one shift D x gpus_per_node + E that moves each of its ranks by D whole nodes and E local
// indices (no rank leaves its node's range), then each phase's time (phase_seconds_per_byte, hence
// bandwidth_seconds_per_byte) of the pattern's schedule, for any op and algorithm, equals that of block 0's
// schedule to the last bit, and so do the phases' repeats, step counts, zone latency and applicability.
//
// Why:
//  1. Every transfer of build_schedule is one or two legs, each a route of one of two forms, both unique
//     shortest paths (every routing decision has one candidate, so the ECMP hash is never read). (a) Inside
//     node a, GPU i -> GPU j: GPU i -> NVLink switch -> GPU j (Topology: a route inside a node uses only the
//     node's fabric; GPUs, and with an NVLink switch the host, do not transit; the switch is the only two-hop
//     way). (b) GPU i of node a -> GPU i of node b: GPU i -> NIC i -> rail i -> NIC i of b -> GPU i (with rail
//     NICs the NIC is the GPU's only way into the network; rail i reaches NIC i of b by its own down-link in one
//     hop, any other way takes three or more). Under the requirement every cross-node hop joins one local index
//     (or is relayed to it by a member of the sender's node): ring_phase's hop enters the next node at a local
//     index the sender's node also holds (its proxy, Builder::add_via: a leg (a) then a leg (b)); the trees'
//     node edges and hierarchical's column rings join the c-th (j-th) member of each node, which have one local
//     index; the direct all-to-all and ring shift relay through the sender node's member at the destination's
//     local index (Builder::add_p2p, one zone and an NVLink switch); NVLS stays on the switch links of one
//     node; a send_recv pair is one leg. So no transfer crosses a spine, and every link it uses belongs to one
//     GPU that is a member of its group (the relays are members): its NVLink switch links, its NIC and the NIC's
//     rail links. Blocks share no rank, so they share no link, and each max-min component of a phase lies in one
//     block, its transfers in the same relative order as in that block's own schedule (blocks keep the groups
//     in pattern order; build_schedule builds each group's transfers from that group alone).
//  2. The map sigma: node a -> a + D on block 0's nodes (extended to a permutation of all nodes), local index
//     l -> (l + E) mod gpus_per_node in every node, rail l -> rail (l + E) mod gpus_per_node, spines fixed, is
//     an automorphism of the graph that keeps every link's capacity, latency and class (every node is node 0's
//     template, ClusterGraph; within a node the GPUs are alike: each has one link pair to the NVLink switch, to
//     the host, and to its NIC; every NIC's rail links have the port rate; every rail-spine link has the same
//     capacity). It maps each leg (a) or (b) onto the leg between the moved GPUs (a unique shortest path maps
//     onto one). It keeps the order of a group's ranks (it is r -> r + shift on them) and so each group's
//     sorting, nodes and channel rotation, its proxies and relays (members to members, local indices kept
//     equal), and the bytes (they depend on the group's size and per-node counts). So block b's schedule is
//     block 0's with every link renamed injectively, capacities and classes kept.
//  3. phase_seconds_per_byte keys each component by its structure (paths over links numbered by first use,
//     bytes, capacities x efficiency), which such a renaming keeps, solves each structure once to one double,
//     and takes the largest: the same set of doubles for the pattern and for block 0, so the same maximum.
//     Step counts and applicability come from the first group, which block 0 keeps first; send_recv's "crosses
//     nodes" holds for block 0 iff for some translate of it; with one zone no transfer crosses zones.
// Anything else (several zones, NICs on the host, no NVLink switch, a group whose nodes hold different local
// indices, a cross-rail pair, blocks that are not such translates, fewer than two blocks) gets nullopt: the
// caller solves the whole pattern (or another reduction applies).
#pragma once

#include <optional>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

namespace clustersim::models {

/// Block 0 of `pattern` when the claim above holds and there are at least two blocks; nullopt otherwise (the
/// exact answer is then the whole pattern). Depends on `op` only through send_recv (whose groups are directed
/// {source, destination} pairs) against every other op. Groups must be non-empty; ranks outside the cluster or
/// groups of unequal size give nullopt. O(GPUs + ranks log group size).
std::optional<CommPattern> rail_block_representative(CollectiveOp op, const CommPattern& pattern,
                                                      const Topology& topology);

}  // namespace clustersim::models
