// The messages between the processes of one sweep, as the hand-out of points (sim/sweep/distribution.hpp) needs
// them: an interface, so that the sweep engine links without MPI and its protocol is tested in memory.
#pragma once

#include <cstdint>
#include <string>

namespace clustersim::sim {

/// What the hand-out of points needs from the processes of a sweep. SweepRanks (sim/sweep/mpi_ranks.hpp, MPI
/// or one process) implements it; tests implement it in memory. Only the thread that runs serve_points or
/// work_on_points calls it.
class RankChannel {
 public:
  virtual ~RankChannel() = default;
  /// This process's rank, 0 .. size() - 1.
  [[nodiscard]] virtual int rank() const = 0;
  /// The number of ranks.
  [[nodiscard]] virtual int size() const = 0;
  /// Sends `bytes` to rank `dest` with tag `tag` (>= 0) without blocking; messages between two ranks arrive in
  /// order.
  virtual void send(int dest, int tag, const std::string& bytes) = 0;
  /// One message that has arrived, from any rank, without blocking: true and its fields, or false.
  virtual bool poll(int& source, int& tag, std::string& bytes) = 0;
  /// Prints `message` and ends every rank with exit status `code`.
  [[noreturn]] virtual void abort(int code, const std::string& message) = 0;
};

/// The processes of a sweep as its orchestration (sim/sweep/sweep_job.hpp) needs them: the channel, and the
/// collective agreement on each stage's outcome. SweepRanks implements it; an implementation in memory lets the
/// orchestration link (and be tested) without MPI.
class SweepGroup : public RankChannel {
 public:
  /// Collective: combines one stage's outcome on every rank (SweepRanks::agree): 0 when every rank succeeded
  /// with the same `check`, else the failing status, the same on every rank.
  virtual int agree(int code, const std::string& message, uint64_t check) = 0;
  /// Collective: rank 0's `code` on every rank (the final exit status).
  virtual int finish(int code) = 0;
};

}  // namespace clustersim::sim
