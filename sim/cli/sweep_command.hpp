// `clustersim sweep`, `clustersim merge` and `clustersim list-runs` (docs/sweeps.md).
//
//   clustersim sweep SCENARIO -o FILE.h5 [-j N] [--set k=v]... [--shard I/N | --shard auto] [--resume] [--strict]
//   clustersim merge [--allow-partial] OUT.h5 SHARD.h5...
//   clustersim list-runs SCENARIO [--set k=v]...
//
// Exit status (sysexits.h): 0 success; 64 usage error; 65 bad scenario or [sweep] table (a grid over
// kMaxSweepPoints), shard files of other inputs or an incomplete set (without --allow-partial), a sidecar of other
// inputs or a corrupt one (located), an invalid point under --strict; 70 internal error; 74 output could not be
// written; 75 stopped early (SIGINT/SIGTERM during setup, the points or the final write; --stop-after), resumable.
// A point that is invalid or out of memory is a row of the file (status "invalid" / "out_of_memory"), not an
// error; stderr names the first 10 invalid points and their count.
//
// In `clustersim-mpi` (docs/scale-out.md, "MPI"), `sweep` under `mpirun -n N` spreads the points over the N
// ranks (sim/sweep/mpi_ranks.hpp) and rank 0 writes the same file; every rank exits with the same status.
#pragma once

#include <string>
#include <vector>

namespace clustersim::sim {

/// `clustersim sweep` with `args` (after the command name); `command_line` is the whole command line. In
/// clustersim-mpi it joins the MPI job for the duration of the command. Never throws.
int run_sweep_command(const std::vector<std::string>& args, const std::string& command_line);

/// `clustersim merge OUT.h5 SHARD.h5...`. Never throws.
int run_merge_command(const std::vector<std::string>& args, const std::string& command_line);

/// `clustersim list-runs SCENARIO`: one line per point (index, seed, overrides). Never throws.
int run_list_runs_command(const std::vector<std::string>& args, const std::string& command_line);

}  // namespace clustersim::sim
