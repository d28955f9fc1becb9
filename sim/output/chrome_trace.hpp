// The timeline of one simulated step as a Chrome trace (`clustersim run --trace FILE.json`), for
// chrome://tracing and https://ui.perfetto.dev.
//
// Format: the JSON object form of the Trace Event Format, {"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {...}}. Every span is a complete event ("ph": "X") with "ts" and "dur" in microseconds,
// written with exactly three decimals (the engine's nanoseconds), measured from the step's start.
//   pid   one process per pipeline stage: pid = stage + 1, named "stage k (GPUs a-b)" (process_name and
//         process_sort_index metadata events). In replica fidelity the stage's timeline is that of one
//         representative GPU (its first rank, a), which every GPU a..b of the stage mirrors. In full fidelity
//         every data-parallel replica of the stage is simulated and the tracks are replica 0's (GPU a again);
//         "otherData"'s "fidelity" says which ran.
//   tid   one thread per stream of that GPU: tid = 100 * pid + stream, stream 1 "compute" (forward and backward
//         passes), 2 "tp comm" (the tensor-parallel part of each pass, drawn at the pass's end), 3 "p2p"
//         (pipeline transfers arriving at the stage), 4 "dp sync" (gradient sync), 5 "optimizer". Spans that
//         overlap on one stream (transfers in flight at once) go to extra lanes "p2p #2", ... so that every
//         track holds disjoint spans (Perfetto requires complete events on a thread to nest).
// Names: "F mb 3", "B mb 3", "tp comm F mb 3", "recv act mb 3", "recv grad mb 3", "grad sync", "adam",
// "param all-gather"; with an interleaved schedule (some chunk > 0) pass and transfer names end in " chunk c".
// "args" carry microbatch and chunk (and tp_comm_us on passes). TraceSpan does not say which way a transfer
// goes: it is a gradient when it ends after the stage's forward of the same (microbatch, chunk) started, else an
// activation ("recv mb 3" without such a forward). A gradient-sync span that starts once the stage's optimizer
// has ended is ZeRO's parameter all-gather.
// The output is deterministic: events sorted (metadata, then by pid, tid, ts, longest first, name), fixed
// number formatting, no timestamps. Written atomically like the HDF5 file: "<path>.tmp-<pid>", fsync, rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/step/pipeline_executor.hpp"

namespace clustersim::sim {

/// What the trace says about the run besides its spans ("otherData" and the process names).
struct ChromeTraceInfo {
  std::string scenario;         ///< scenario name
  int64_t tensor_parallel = 1;  ///< t: GPUs of a stage are t * d consecutive ranks (Megatron's order)
  int64_t data_parallel = 1;    ///< d
  int64_t microbatches = 0;     ///< per pipeline per step
  /// Further metadata written into "otherData" as strings, in this order (keys must be unique and must not
  /// be one of the fixed keys: scenario, tensor_parallel, pipeline_parallel, data_parallel, microbatches,
  /// step_time_s, critical_stage, fidelity, time_unit).
  std::vector<std::pair<std::string, std::string>> other_data;
  /// c: GPUs of a stage are t * c * d consecutive ranks; written to "otherData" when above 1.
  int64_t context_parallel = 1;
  /// The fidelity that ran (simulation.fidelity = "full"), for "otherData"'s "fidelity": false "replica: ..."
  /// (one representative GPU per stage), true "full: ..." (every data-parallel replica of a stage simulated,
  /// PipelineResult::replicas of them, the tracks being replica 0's).
  bool full_fidelity = false;
};

/// The trace as JSON text (what write_chrome_trace writes). Throws std::logic_error if a span is
/// inconsistent (stage outside [0, stages), end < start, a time not finite, negative tp_comm or cp_comm) and
/// std::invalid_argument on a duplicate or reserved other_data key. Invalid UTF-8 in strings becomes U+FFFD.
std::string chrome_trace_json(const PipelineResult& pipeline, const ChromeTraceInfo& info);

/// Writes chrome_trace_json(pipeline, info) to `path` atomically. Throws std::runtime_error naming the path
/// and the failing call if the file cannot be written (nothing is left at `path` then), and what
/// chrome_trace_json throws before touching the file system.
void write_chrome_trace(const std::filesystem::path& path, const PipelineResult& pipeline,
                        const ChromeTraceInfo& info);

}  // namespace clustersim::sim
