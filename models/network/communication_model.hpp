// The seam between the step model and the network: how long the collectives of a communication pattern take.
//
// CollectiveModel (collective_model.hpp) implements it on the flow-level network; tests may substitute a
// closed form.
#pragma once

#include "models/network/collectives.hpp"

namespace clustersim::models {

struct CollectiveTiming;

/// Time of communication operations. Implementations are thread-safe.
class CommunicationModel {
 public:
  virtual ~CommunicationModel() = default;
  /// Time of `op` run by every group of `pattern` at once; `bytes` per rank as in CollectiveModel::time.
  /// All-reduces use the configured algorithm (or the automatic choice). Zero for groups of one.
  [[nodiscard]] virtual CollectiveTiming collective_time(CollectiveOp op, const CommPattern& pattern,
                                                         units::Bytes bytes) const = 0;
};

}  // namespace clustersim::models
