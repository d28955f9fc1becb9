// The one exit-status table of every clustersim command (sysexits.h), documented in the README:
//   0 success; 64 usage (malformed command line); 65 bad data (scenario, catalog, option values the models
//   reject; located file:line:column: key where the input is a file); 70 internal error (a failed invariant: a
//   bug); 74 an output could not be written; 75 a sweep stopped early, resumable (SIGINT/SIGTERM, or
//   --stop-after for testing).
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace clustersim::sim {

inline constexpr int kExitUsage = 64;      ///< EX_USAGE: malformed or contradictory command line
inline constexpr int kExitDataError = 65;  ///< EX_DATAERR: bad scenario, catalog or option values
inline constexpr int kExitSoftware = 70;   ///< EX_SOFTWARE: internal error (a bug)
inline constexpr int kExitIoError = 74;    ///< EX_IOERR: an output could not be written
inline constexpr int kExitStopped = 75;    ///< EX_TEMPFAIL: a sweep stopped early, resumable (signal, --stop-after)

/// What a command ends with on an error: the status and the message for stderr (whole lines).
struct ErrorExit {
  int status = kExitSoftware;
  std::string message;
};

/// The table: UsageError -> 64 ("clustersim COMMAND: ..."; `usage_hint` appended); ScenarioError, DataError,
/// std::invalid_argument, std::out_of_range -> 65 ("clustersim: error: ..."); models::CatalogError -> 65
/// ("clustersim: catalog error: ..."); IoError -> 74; any other exception -> 70 ("clustersim: internal error").
/// `error` must not be null.
ErrorExit exit_for(const std::exception_ptr& error, std::string_view command, std::string_view usage_hint = {});

/// Writes `message` to stderr (kept out of this header's includes).
void write_error(const std::string& message);

/// Runs `body` (returning an exit status); an exception becomes exit_for's status, its message written to
/// stderr.
template <typename F>
int exit_status_of(std::string_view command, F&& body, std::string_view usage_hint = {}) {
  try {
    return body();
  } catch (...) {
    const ErrorExit e = exit_for(std::current_exception(), command, usage_hint);
    write_error(e.message);
    return e.status;
  }
}

}  // namespace clustersim::sim
