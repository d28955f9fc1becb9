// `clustersim validate`: the validation suite (sim/validation) from the command line.
//
//   clustersim validate [DIR] [-j N] [--leave-one-out] [--fit]
//
// DIR defaults to the source tree's scenarios/validation. Prints every row grouped by published dataset, the
// errors per GPU group and framework, and with --fit the training fractions refitted on the whole suite, with
// --leave-one-out the leave-one-source-out table. Exit status: 0 (whatever the errors: the bounds are the
// validation test's), else the one table of sim/run/exit_status.hpp (64 usage, 65 bad catalog or an unreadable
// directory, 74 --write-uncertainty not written, 70 internal error).
#pragma once

#include <string>
#include <vector>

namespace clustersim::sim {

/// Runs `clustersim validate` with `args` (after the command name). Prints to stdout; returns the exit
/// status. Throws sim/errors.hpp's types, which main maps to exit statuses (sim/run/exit_status.hpp).
int run_validate_command(const std::vector<std::string>& args);

}  // namespace clustersim::sim
