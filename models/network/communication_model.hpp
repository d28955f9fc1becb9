// The seam between the step model and the network: how long a collective or a point-to-point transfer takes.
//
// Issue 2 ships AlphaBetaNetwork (alpha_beta.hpp), a closed-form ring model on the catalog's link rates. The
// flow-level, contention-aware network (topology, max-min fair sharing, collective algorithms) replaces it
// behind this interface.
#pragma once

#include <cstdint>

#include "models/units.hpp"

namespace clustersim::models {

enum class Collective { all_reduce, reduce_scatter, all_gather };

/// Where the members of one communication group sit, and who else shares their links.
struct CommGroup {
  int64_t size = 1;             ///< ranks in the group, n
  int64_t ranks_per_node = 1;   ///< members of this group inside one node (size / ranks_per_node nodes)
  int64_t groups_per_node = 1;  ///< concurrent groups of this kind with members on the same node (they
                                ///< share the node's network interfaces)
};

/// Time of communication operations. Implementations are immutable and thread-compatible.
class CommunicationModel {
 public:
  virtual ~CommunicationModel() = default;
  /// Time of one collective over `group`; `bytes` is the per-rank buffer (all-reduce input, reduce-scatter
  /// input, all-gather output). Zero for a group of one.
  [[nodiscard]] virtual units::Seconds collective_time(Collective op, const CommGroup& group,
                                                       units::Bytes bytes) const = 0;
  /// Time of one send/recv of `bytes` between GPUs in different nodes (`cross_node`) or the same node, while
  /// `concurrent_per_node` such transfers leave each node at once.
  [[nodiscard]] virtual units::Seconds p2p_time(units::Bytes bytes, bool cross_node,
                                                int64_t concurrent_per_node) const = 0;
};

}  // namespace clustersim::models
