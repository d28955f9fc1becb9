// The spot eviction trace of a training job (reliability.spot_eviction_trace): eviction times in hours from the
// job's start, one per line, '#' comments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "models/units.hpp"

namespace clustersim::sim {

/// The most entries an eviction trace may hold for one replication: the job simulation's event budget
/// (kJobEventBudget, sim/job/job_simulation.hpp; asserted equal there), since every entry is at least one event of
/// every replication. The loader allows kMaxEvictionTraceEvents / job.replications entries.
inline constexpr int64_t kMaxEvictionTraceEvents = 200'000'000;

/// Reads the eviction trace `file` (a regular file of at most kMaxTraceInputBytes, sim/input_file.hpp) and returns
/// its times, sorted. Lines are "HOURS" (a number >= 0 and finite), blank, or '#' comments (also after a value).
/// Errors: sim::InputFileError when the file cannot be read (missing, unreadable, a directory, FIFO or device, too
/// large), for the caller to locate at its key; ScenarioError at `file`:line:1 (key
/// reliability.spot_eviction_trace) for a bad entry (the message quotes at most its first 32 bytes) or for the
/// entry past `max_entries` (>= 0), found while the lines are read.
std::vector<units::Seconds> read_eviction_trace(const std::filesystem::path& file, int64_t max_entries);

}  // namespace clustersim::sim
