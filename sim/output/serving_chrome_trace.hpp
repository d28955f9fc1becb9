// The engine iterations of a serving run as a Chrome trace (`clustersim run SERVING.toml --trace FILE.json`; issue
// 30, item 6), for chrome://tracing and https://ui.perfetto.dev. The training step's trace is chrome_trace.hpp's.
//
// Format: the JSON object form of the Trace Event Format, {"displayTimeUnit": "ms", "otherData": {...},
// "traceEvents": [...]}. One complete event ("ph": "X") per recorded engine iteration, "ts" and "dur" in
// microseconds with exactly three decimals (the engine's 1 ns clock), from the run's start (the first arrival, 0).
//   pid   1, the fleet, named "fleet: R replicas x TP t" (process_name metadata).
//   tid   one thread per engine, tid = engine + 2 (unique and above the pid, as Perfetto wants), named
//         "replica r" (with pipeline parallelism p, "replica r engine k": each replica runs p virtual engines whose
//         iterations overlap, one track each so that every track holds disjoint spans).
// Names: "prefill" (only prompt tokens), "decode" (only decodes), "mixed" (both: a chunked prompt co-scheduled
// with decodes). "args": iteration (the run's iteration number from 0), replica, sequences, prefill_tokens,
// decode_tokens, kv_blocks_used, duration_ms. "otherData": scenario, iterations (all of the run's), recorded
// (events written), every, from_s, to_s (the sampling: clustersim run --trace-every, --trace-from, --trace-to),
// dropped (selected beyond the 2^20-record cap), time_unit, then the caller's other_data.
// Deterministic: the records' order (iterations by start time, then as the engine started them), fixed number
// formatting. Written atomically (atomic_file.hpp), streamed: memory stays that of the records.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/serving/iteration_record.hpp"

namespace clustersim::sim {

/// What the serving trace says besides its events.
struct ServingTraceInfo {
  std::string scenario;
  int64_t replicas = 1;
  int64_t tensor_parallel = 1;
  int64_t pipeline_parallel = 1;  ///< p: engine e is replica e / p
  int64_t iterations = 0;         ///< all of the run's iterations (/summary/iterations)
  IterationSampling sampling;     ///< which were recorded
  int64_t dropped = 0;            ///< selected beyond sampling.max_records
  /// Further "otherData" entries as strings, in order (keys unique and not one of the fixed ones).
  std::vector<std::pair<std::string, std::string>> other_data;
};

/// Writes the trace of `records` (in the order given) to `out`. Throws std::logic_error on a record with a negative
/// or non-finite time or a negative count or engine.
void write_serving_chrome_trace(std::ostream& out, const std::vector<IterationRecord>& records,
                                const ServingTraceInfo& info);

/// Writes it to `path` atomically. Throws std::runtime_error naming the path and the failing call when the file
/// cannot be written (nothing is left at `path` then), and std::logic_error as above.
void write_serving_chrome_trace(const std::filesystem::path& path, const std::vector<IterationRecord>& records,
                                const ServingTraceInfo& info);

}  // namespace clustersim::sim
