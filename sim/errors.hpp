// The errors that the commands' one exit-status table (sim/run/exit_status.hpp) maps to sysexits.h codes,
// beside the layers' own: sim::ScenarioError (a located scenario error, 65), models::CatalogError (65),
// std::invalid_argument / std::out_of_range (values the models reject, 65). Any other exception is a
// programming error (a failed invariant): 70.
#pragma once

#include <stdexcept>

namespace clustersim::sim {

/// Malformed or contradictory command line: exit 64.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Well-formed input (options, a sidecar, a shard file) that the catalog or the model rejects: exit 65.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// An output that could not be created or written: exit 74.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace clustersim::sim
