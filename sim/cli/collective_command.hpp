// `clustersim collective`: an nccl-tests-style sweep of one collective over message sizes on a cluster's
// topology (sim/run/collective_benchmark.hpp), printed as a table and optionally written to HDF5. This file
// parses the options and prints.
//
//   clustersim collective --vm-size Standard_ND96isr_H100_v5 --nodes 1 --op all_reduce --min-bytes 1K
//                         --max-bytes 8G [-o FILE.h5]
//
// Exit status (the table of sim/run/exit_status.hpp): 0 success; 64 usage error (unknown option, malformed value such as a size of
// "12Q", options that contradict each other such as zones not summing to --nodes); 65 the options are well
// formed but the catalog or the model rejects them (unknown VM size, more GPUs than the cluster has, a forced
// algorithm that does not apply, a bad catalog); 70 internal error; 74 the HDF5 file could not be written
// (the table has been printed). On 64, 65 and 70 nothing is printed to stdout; on any error no file is written.
#pragma once

#include <string>
#include <vector>

namespace clustersim::sim {

/// Runs `clustersim collective` with `args` (the arguments after the command name); `command_line` is the
/// whole command line, recorded in the HDF5 file. Prints the table to stdout and errors to stderr; returns
/// the exit status. Never throws.
int run_collective_command(const std::vector<std::string>& args, const std::string& command_line);

}  // namespace clustersim::sim
