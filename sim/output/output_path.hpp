// The checks every output of a command passes before any simulation starts, and the check of stdout at its end.
//
// An output path is refused (sim::IoError, exit 74, with a plain reason) unless its directory exists and is
// writable and the path is absent or a regular file that is none of the run's inputs. Without this, `-o` naming
// the scenario, its trace or a device replaced them (issue 26, defect 1), and a missing directory surfaced only
// after the whole simulation, inside HDF5.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace clustersim::sim {

/// A file a command reads, for check_output_path: the path (relative to the working directory, or absolute)
/// and what it is, as said in the error ("the scenario file", "the request trace", "a merge input shard").
struct InputFile {
  std::filesystem::path path;
  std::string role;
};

/// Checks that `path` can be written by the atomic writers (sim/output/atomic_file.hpp) without destroying
/// anything. Throws sim::IoError "cannot write WHAT 'PATH': REASON", REASON one of: "has no file name", "is a
/// directory", "is a device", "is a FIFO", "is a socket", "is not a regular file", "is ROLE" (an input of
/// `inputs`, compared with std::filesystem::equivalent: symbolic and hard links, "./x" and "x" are the same
/// file), "directory 'D' does not exist", "'D' is not a directory", "directory 'D' is not writable (ERRNO
/// TEXT)". `what` names the option ("-o", "--trace"). Inputs that do not exist are skipped. Touches nothing.
void check_output_path(const std::filesystem::path& path, const std::vector<InputFile>& inputs,
                       const std::string& what);

/// Flushes std::cout and stdout; throws sim::IoError "cannot write standard output: ERRNO TEXT" (e.g. "No
/// space left on device" for /dev/full) when either has failed, now or at an earlier write. Call it at the end
/// of a command that printed its result, so that a truncated report never exits 0 (issue 26, defect 12).
void check_standard_output();

}  // namespace clustersim::sim
