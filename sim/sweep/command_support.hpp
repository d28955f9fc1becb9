// Two helpers shared by the sweep commands' units (sweep_job.cpp, distribution.cpp) and the sweep command's
// option parsing (sim/cli/sweep_command.cpp): attempt(), an exception as an exit status and message, and
// parse_int(), a whole decimal integer.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sim/run/exit_status.hpp"

namespace clustersim::sim {

/// Runs `body` (returning an exit status), mapping an exception to its exit status (sim/run/exit_status.hpp,
/// exit_for with `command`); the error text goes to `message`, which is left alone when `body` returns.
template <typename F>
int attempt(std::string_view command, std::string& message, F&& body) {
  try {
    return std::forward<F>(body)();
  } catch (...) {
    ErrorExit e = exit_for(std::current_exception(), command);
    message = std::move(e.message);
    return e.status;
  }
}

/// `text` as a decimal int64 when all of it is one (an optional '-' and digits, in range), else nullopt.
std::optional<int64_t> parse_int(std::string_view text);

}  // namespace clustersim::sim
