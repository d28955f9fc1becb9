// The processes that run one `clustersim sweep` together (docs/scale-out.md, "MPI").
//
// Two implementations, one linked into each executable, so that no MPI header or library reaches anything
// else: mpi_ranks_serial.cpp (the plain `clustersim`: always one process) and mpi_ranks_mpi.cpp
// (`clustersim-mpi`, built with -DCLUSTERSIM_WITH_MPI=ON: the ranks of MPI_COMM_WORLD, one when it is run
// without mpirun). Only the thread that constructed SweepRanks may call its members (MPI_THREAD_FUNNELED).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/sweep/rank_channel.hpp"

namespace clustersim::sim {

/// The ranks of a sweep: joins the MPI job on construction (MPI_Init_thread) and leaves it on destruction
/// (MPI_Finalize); in the plain binary a single rank with nothing to join. Messages are byte strings, sent
/// without blocking and delivered in order between any two ranks. Not copyable; construct at most one.
class SweepRanks final : public SweepGroup {
 public:
  SweepRanks();
  ~SweepRanks() override;
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;

  /// This process's rank, 0 .. size() - 1; rank 0 reads the sidecar and writes the results.
  int rank() const override { return rank_; }
  /// The number of ranks (1 for the plain binary and for clustersim-mpi without mpirun).
  int size() const override { return size_; }
  /// The default number of worker threads per rank (-j): the CPUs this process may run on (its affinity
  /// mask: one core under Open MPI's default binding of up to 2 ranks, a socket's cores above) but no more
  /// than the machine's CPUs divided by the ranks on that machine; at least 1. The plain binary:
  /// std::thread::hardware_concurrency().
  int default_threads() const;

  /// Collective: combines the outcome of one stage on every rank. `code` is this rank's exit status (0: the
  /// stage succeeded); `message` its error text (whole lines), printed to stderr by this rank only when the
  /// group fails because of it, so that an error every rank hits is printed once, by rank 0; `check` a hash
  /// that must be the same on every rank that succeeded (e.g. of the sweep's points; 0 when irrelevant).
  /// Returns, the same on every rank: 0 when every rank succeeded with the same check; else rank 0's status if
  /// it failed, else that of the lowest failing rank; else 65 (ranks disagree on `check`; rank 0 says so).
  int agree(int code, const std::string& message, uint64_t check) override;

  /// Collective: rank 0's `code` on every rank (the final exit status), after every message sent by this
  /// rank has been delivered.
  int finish(int code) override;

  /// Sends `bytes` to rank `dest` with tag `tag` (>= 0) without blocking (the bytes are copied).
  void send(int dest, int tag, const std::string& bytes) override;

  /// Receives one message that has arrived, from any rank and with any tag, without blocking: true and
  /// `source`, `tag` and `bytes` set, or false when none is waiting.
  bool poll(int& source, int& tag, std::string& bytes) override;

  /// Prints `message` (lines; a missing final newline is added) to stderr, then ends every rank with exit status `code`
  /// (MPI_Abort; std::exit in the plain binary). For failures after the stages have been agreed on, when
  /// other ranks may be waiting for this one.
  [[noreturn]] void abort(int code, const std::string& message) override;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;  ///< ranks on this machine (MPI build only)
  struct Pending;
  std::unique_ptr<Pending> pending_;  ///< sends not yet complete (MPI build only)
};

}  // namespace clustersim::sim
