// Exit statuses of the clustersim commands (sysexits.h) and the errors that map to them.
#pragma once

#include <stdexcept>

namespace clustersim::sim::cli {

inline constexpr int kExitUsage = 64;      ///< malformed or contradictory command line
inline constexpr int kExitDataError = 65;  ///< bad scenario, catalog or option values (file:line:col: key)
inline constexpr int kExitSoftware = 70;   ///< internal error
inline constexpr int kExitIoError = 74;    ///< an output could not be written

/// Malformed or contradictory options: exit 64.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Well-formed options that the catalog or the model rejects: exit 65.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// An output that could not be written: exit 74.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace clustersim::sim::cli
