// `clustersim validate`: the validation suite (sim/validation) from the command line.
//
//   clustersim validate [DIR] [-j N] [--leave-one-out] [--fit]
//
// DIR defaults to the source tree's scenarios/validation. Prints every row grouped by published dataset, the
// errors per GPU group and framework, and with --fit the training fractions refitted on the whole suite, with
// --leave-one-out the leave-one-source-out table. Exit status: 0 (whatever the errors: the bounds are the
// validation test's), 64 usage, 65 bad catalog or an unreadable directory, 70 internal error.
#pragma once

#include <string>
#include <vector>

namespace clustersim::sim {

/// Runs `clustersim validate` with `args` (after the command name). Prints to stdout; returns the exit
/// status. Throws the CLI's error types (cli/exit_status.hpp), which main maps to exit statuses.
int run_validate_command(const std::vector<std::string>& args);

}  // namespace clustersim::sim
