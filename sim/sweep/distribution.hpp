// How a sweep's points are spread over worker threads and MPI ranks (docs/scale-out.md, "MPI"): one guided
// scheduler for both, and the protocol by which rank 0 hands points to the other ranks and collects their rows.
//
// Rank 0 owns the list of points still to compute (after --shard, --resume and --stop-after) and a
// GuidedScheduler over it. Its own worker threads take chunks from it; every other rank asks rank 0 for points and
// gets a few at a time (their run_index values), keeping about 2 x -j of them queued for its threads, and sends
// its rows back to rank 0 as they finish, in the row codec's text form (sim/sweep/sidecar.hpp). Rank 0 hands
// every row to `on_row` (the sidecar) as it arrives, so a killed MPI sweep resumes like a serial one.
//
// Messages (tags): kTagRows, rank r -> 0: a line "W <TAB> WANT <TAB> FINAL" (WANT: points asked for, FINAL: 1 in
// the last message, once r has been told there are no more points and has sent every row), then RowEncoder
// lines. kTagPoints, 0 -> r: run_index values separated by tabs, in answer to each WANT > 0; empty: no more.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/sweep/rank_channel.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// Guided self-scheduling (Polychronopoulos & Kuck 1987) of `points` over `workers`: each chunk is a share of
/// what is left, max(1, min(cap, weight x left / (2 x workers))) points, so chunks shrink towards the end and a
/// slow last layout (the largest pipelines come last in a layout search) is shared instead of leaving workers
/// idle (1.3x with 2 threads). Chunks are contiguous: neighbouring points usually share a layout and hence its
/// flow solves. Thread-safe.
class GuidedScheduler {
 public:
  /// `points` to hand out to `workers` (>= 1) threads in all.
  GuidedScheduler(size_t points, size_t workers);
  /// The cap of a thread's chunk: points / (8 x workers), at least 1.
  [[nodiscard]] size_t max_chunk() const { return max_chunk_; }
  /// The next chunk [begin, end) for a consumer that runs `weight` workers (a thread: 1; a remote rank: its
  /// threads), at most `cap` points; false when every point has been handed out.
  bool next(size_t& begin, size_t& end, size_t cap, size_t weight = 1);
  /// A thread's next chunk: next(begin, end, max_chunk(), 1).
  bool next(size_t& begin, size_t& end) { return next(begin, end, max_chunk_, 1); }

 private:
  size_t points_;
  size_t workers_;
  size_t max_chunk_;
  std::atomic<size_t> next_{0};
};

inline constexpr int kTagRows = 1;    ///< rank r -> 0: rows and the number of points wanted
inline constexpr int kTagPoints = 2;  ///< rank 0 -> r: points to compute

/// Rank 0's part: computes `todo` with `jobs` threads and hands points out to the other ranks (each running
/// work_on_points with `jobs` threads); returns the rows in the order of `todo`, each given to `on_row` (on the
/// calling thread or a worker thread, one at a time per call site: must be thread-safe) as it arrives. Calls
/// `progress` with the number of rows received about every millisecond. On a failure of any rank or thread,
/// ends every rank (RankChannel::abort) with the exit status of sim/run/exit_status.hpp.
std::vector<SweepRow> serve_points(RankChannel& ranks, const LoadedSweep& sweep, const models::Catalog& catalog,
                                   const std::vector<const SweepPoint*>& todo, int jobs,
                                   const std::function<void(const SweepRow&)>& on_row,
                                   const std::function<void(size_t)>& progress);

/// The part of a rank other than 0: asks rank 0 for points, computes them with `jobs` threads and sends the rows
/// back as they finish, until rank 0 has no more. Ends every rank on a failure (RankChannel::abort).
void work_on_points(RankChannel& ranks, const LoadedSweep& sweep, const models::Catalog& catalog, int jobs);

}  // namespace clustersim::sim
