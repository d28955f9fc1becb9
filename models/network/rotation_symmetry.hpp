// Exact rotation symmetry of collective patterns on a fat tree with rail NICs (issue 31): solve the groups of
// one local index instead of all of them when the others are those groups moved to other local indices of the
// same nodes. The case: a data-parallel all-reduce of one pipeline stage (after pattern_symmetry's translation
// reduction), one group per local index t = 0 .. gpus_per_node - 1, each over GPU t of every node of the stage.
//
// Claim. Take a cluster of one zone whose fabric is a single switch, a fat tree of one leaf, or a two-tier fat
// tree whose leaves hold whole nodes (leaf_down_ports a multiple of gpus_per_node), with rail NICs (GPU l owns
// NIC l: nics_per_node == gpus_per_node). Take a pattern whose groups all have the same size and whose every
// group has all its members at one local index (rank % gpus_per_node; hence one member per node). Split the
// groups into blocks by that local index, each in pattern order; block 0 is the block of the first group, at
// local index t0. If every block, at local index t, is block 0 with every rank moved by t - t0 (group i of the
// block is group i of block 0 plus t - t0, rank by rank), then each phase's time (phase_seconds_per_byte, hence
// bandwidth_seconds_per_byte) of the pattern's schedule, for any op and algorithm, equals that of block 0's
// schedule to the last bit, and so do the phases' repeats, step counts, zone latency and applicability.
//
// Why:
//  1. Every transfer of build_schedule joins two members of one group, so two GPUs with one local index on
//     different nodes (or a rank with itself: an empty path). No intra-node leg occurs: ring_phase's proxy for
//     a hop is the member of the sender's node at the destination's local index, i.e. the sender itself;
//     add_p2p relays only between different local indices; the trees' node edges and hierarchical's columns
//     join members; NVLS applies only to groups on one node (of one member here: nothing to move).
//  2. Routes (Topology: fewest hops, GPUs never transit; a rail NIC is not attached to the host, so with one
//     zone GPU l's only way into the network is NIC l, and GPU l is entered only from NIC l): GPU s (node a,
//     local t) -> GPU d (node b, local t) is GPU s -> NIC (a, t) -> leaf(a) [-> spine j -> leaf(b)] ->
//     NIC (b, t) -> GPU d, where leaf(n) is the leaf of node n's NICs (one, as leaves hold whole nodes) and the
//     bracket is taken when the leaves differ. Its only routing decision with more than one candidate is the
//     up-link at leaf(a): U = leaf_down_ports spines, each leaf linked to every spine, up-link ids increasing
//     with the spine index (topology.cpp), so ECMP takes spine j = flow_hash % U = d % U (flow_hash is the
//     destination rank). With gpn = gpus_per_node dividing U and d = gpn b + t: j = gpn (b mod U/gpn) + t,
//     so j = t (mod gpn).
//  3. So a group at local index t uses only links of index t: the GPU <-> NIC and NIC <-> leaf links of NIC t
//     of its nodes and the leaf <-> spine links of spines j = t (mod gpn). Blocks share no link, and each
//     max-min component of a phase lies in one block, its transfers in the same relative order as in that
//     block's own schedule (build_schedule builds each group's transfers from that group alone, in pattern
//     order; flow_hash ignores the group index).
//  4. Rotating by E = t - t0: the renaming phi of links NIC (n, l)'s two link pairs -> NIC (n, l + E mod
//     gpn)'s, leaf a <-> spine gpn q + l -> leaf a <-> spine gpn q + (l + E mod gpn) (a bijection of the
//     spines, the same at every leaf) maps the route of (s, d) onto the route of (s + E, d + E): the leaves are
//     the same, and (d + E) % U = gpn (b mod U/gpn) + t + E is the image of d % U's spine. phi keeps
//     capacities and classes (every rail NIC link has the port rate; every NIC <-> leaf link the port rate and
//     class; every leaf <-> spine link the same capacity). It keeps each group's order (it is r -> r + E on its
//     ranks), hence sorting, nodes, channels and bytes. So block t's schedule is block 0's with every link
//     renamed injectively, capacities and classes kept.
//  5. phase_seconds_per_byte keys each component by its structure (paths over links numbered by first use,
//     bytes, capacities x efficiency), which such a renaming keeps, solves each structure once to one double,
//     and takes the largest: the same set of doubles for the pattern and for block 0, so the same maximum.
//     Step counts and applicability come from the first group, which block 0 keeps first; send_recv's "crosses
//     nodes" holds for block 0 iff for any block (the same nodes); with one zone no transfer crosses zones.
// Anything else gets nullopt and the caller solves the pattern as it is: several zones, rail-optimized fabrics
// (rail_symmetry.hpp), three tiers (a core's choice is a second ECMP digit), NICs on the host (every GPU's
// traffic shares the host links), leaves that split a node's NICs, a group with members at two local indices,
// blocks that are not rotations of block 0, a single block.
#pragma once

#include <optional>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

namespace clustersim::models {

/// Block 0 of `pattern` when the claim above holds and there are at least two blocks; nullopt otherwise (the
/// exact answer is then the pattern itself). The same for every op (a send_recv group is a pair at one local
/// index). Groups must be non-empty; ranks outside the cluster or groups of unequal size give nullopt, so a
/// returned block proves every rank of `pattern` in [0, gpu_count): block 0's are range-checked, and every other
/// rank is one of them plus t - t0, at local index t of the same node (gpu_count = nodes x gpus_per_node).
/// O(ranks + gpus_per_node).
std::optional<CommPattern> rotation_representative(const CommPattern& pattern, const Topology& topology);

}  // namespace clustersim::models
