// Progress of long work on stderr, as `clustersim sweep` and `clustersim run` (a job's Monte Carlo) show it: a
// bar redrawn in place on a terminal, otherwise one line every 2 s; nothing for work done within that first
// interval, so that short runs print nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace clustersim::cli {

class ProgressLine {
 public:
  /// "LABEL: DONE/TOTAL UNIT, RATE UNIT/s, ETA S s", where DONE counts from `offset` (work done before, e.g. a
  /// sweep's resumed points) and the rate and ETA from the `target` units this process does. With
  /// `target_is_bound` the work may end before `target` (a job's checkpoint-interval search stops re-running
  /// intervals it has tried): "DONE of at most TOTAL UNIT, RATE UNIT/s, at most S s left".
  ProgressLine(std::string label, std::string unit, std::size_t total, std::size_t target, std::size_t offset = 0,
               bool target_is_bound = false);

  /// `done` of the target units are finished; shown when the interval since the last line has passed.
  void update(std::size_t done);
  /// The last line (all target units done; with a bound, the units done) when anything was shown or stderr is a
  /// terminal.
  void finish();

 private:
  void show(std::size_t done, bool final_line);

  std::string label_;
  std::string unit_;
  std::size_t total_;
  std::size_t target_;
  std::size_t offset_;
  bool bound_;
  bool tty_;
  std::size_t last_done_ = 0;
  std::chrono::steady_clock::time_point start_;
  double last_shown_s_ = 0.0;
};

}  // namespace clustersim::cli
