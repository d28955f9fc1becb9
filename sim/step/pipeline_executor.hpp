// Executes one training step's IR (models/parallelism/step_program.hpp) as events on the engine.
//
// Each pipeline stage is one in-order compute stream that runs its schedule's passes. With v model chunks per
// rank the pipeline has p v virtual stages, chunk c of rank r being virtual stage c p + r. A forward pass of
// microbatch i on virtual stage k waits for virtual stage k-1's forward of i plus the activation transfer; a
// backward pass waits for virtual stage k+1's backward of i plus the gradient transfer (the last virtual
// stage's backward waits only for its own forward). After its last backward a stage reduces its gradients
// (overlapped with backward chunk by chunk, bucket by bucket, when the program says so), steps the optimizer and, with
// ZeRO 1-2, all-gathers its parameters. The step ends when the last stage finishes. Nothing here knows the bubble formula: idle time emerges from
// the dependencies, and tests hold it against (p-1)/m.
//
// Attribution of idle time: a stage is idle whenever it is not running a pass or its tail. Exposed pipeline
// communication is what the transfers cost the step, T - T', where T' is the step time of the same program
// with free transfers (executed too when transfers cost anything); the rest of a stage's idle time is pipeline
// bubble (warm-up, drain, imbalance, waiting for slower stages). So every stage's components sum to T.
#pragma once

#include <cstdint>
#include <vector>

#include "models/parallelism/step_program.hpp"
#include "models/units.hpp"
#include "sim/step/critical_path.hpp"

namespace clustersim::sim {

/// Where one stage's step time went. compute + tp_comm + cp_comm + ep_comm + host + pp_exposed + bubble +
/// grad_sync + optimizer equals
/// the step time (up to the engine's 1 ns rounding per event).
struct StageBreakdown {
  units::Seconds compute;     ///< kernels of all passes
  units::Seconds attention;     ///< of compute: fused attention kernels
  units::Seconds memory_bound;  ///< of compute: memory-bound kernels (the rest of compute is GEMMs)
  units::Seconds tp_comm;     ///< tensor-parallel collectives inside the passes
  units::Seconds cp_comm;     ///< context-parallel K/V exchange inside the passes, not hidden by attention
  units::Seconds ep_comm;     ///< MoE dispatch and combine inside the passes, not hidden
  units::Seconds host;        ///< GPU idle inside the passes, waiting on the host to issue kernels
  units::Seconds pp_exposed;  ///< waiting on pipeline transfers
  units::Seconds bubble;      ///< idle waiting on other stages' work (warm-up, drain, imbalance, tail)
  units::Seconds grad_sync;   ///< data-parallel communication not hidden: gradient reduction past the last
                              ///< backward, ZeRO parameter all-gathers (after the optimizer, or ZeRO-3's
                              ///< per-layer traffic not hidden by prefetch)
  units::Seconds optimizer;
  units::Seconds finish;      ///< when this stage's optimizer ended
  units::Flops flops;         ///< math executed by one GPU of this stage
};

/// What a span of a timeline is.
enum class SpanKind {
  forward,    ///< forward pass of one microbatch through one model chunk (compute + its TP collectives)
  backward,   ///< backward pass (with recompute)
  p2p,        ///< a pipeline transfer arriving at this stage (activation or gradient)
  grad_sync,  ///< data-parallel gradient reduction (ZeRO: reduce-scatter + parameter all-gather)
  optimizer   ///< optimizer step
};

/// One interval of one simulated GPU's timeline, for the Chrome trace. Times are from the step's start.
struct TraceSpan {
  int64_t stage = 0;       ///< pipeline rank
  int64_t chunk = 0;       ///< model chunk (virtual stage index on this rank), 0 without interleaving
  int64_t microbatch = -1; ///< -1 for spans not tied to a microbatch
  SpanKind kind = SpanKind::forward;
  units::Seconds start;
  units::Seconds end;
  units::Seconds tp_comm;  ///< for forward/backward: the tensor-parallel communication inside the span
  units::Seconds cp_comm;  ///< for forward/backward: the exposed context-parallel exchange inside the span
  units::Seconds ep_comm;  ///< for forward/backward: the exposed MoE dispatch and combine inside the span
};

struct PipelineResult {
  std::vector<TraceSpan> spans;  ///< every pass, transfer and tail span, in start-time order per stage
  units::Seconds step_time;
  std::vector<StageBreakdown> stages;
  int64_t critical_stage = 0;  ///< the stage that finishes last (the lowest index of those)
  CriticalPath critical_path;  ///< the step's critical path by kind (sim/step/critical_path.hpp)
  int64_t replicas = 1;        ///< data-parallel replicas simulated per stage
  uint64_t events = 0;         ///< engine events executed (0 without spans: evaluated without the engine)
  uint64_t fingerprint = 0;    ///< the engine's determinism fingerprint (0 without spans, likewise)
};

/// How many GPUs' timelines are simulated.
struct ExecutionFidelity {
  /// Data-parallel replicas simulated per stage: 1 (replica fidelity: one representative per stage) or the
  /// data-parallel size (full fidelity: every GPU, each tensor-parallel group in lockstep, since its passes'
  /// all-reduces synchronise it). With several replicas the gradient reduction of a stage starts when every
  /// replica of the stage has reached it (a barrier), and pipeline transfers connect equal replica indices.
  int64_t replicas = 1;
  /// Per (stage * replicas + replica): a factor on that tensor-parallel group's pass times (a straggler is
  /// > 1). Empty: all 1.
  std::vector<double> slowdown;
  /// Per (stage * replicas + replica): a factor on that tensor-parallel group's compute kernels only (its
  /// passes' compute and its optimizer step), the pace of its slowest GPU (models/variability: the group's
  /// collectives wait for that GPU, their own time is unchanged). Empty: all 1.
  std::vector<double> compute_slowdown;
  /// Record PipelineResult::spans (the timeline a Chrome trace shows); sweeps leave it off for speed. Off, the
  /// step runs without the event engine: each pass starts at max(its stream free, its input present), the rule
  /// the events follow, evaluated in dependency order, which gives the same times, breakdowns and critical
  /// path bit for bit (tests/step/test_dependency_order.cpp) in about a tenth of the time, but no events to
  /// count or fingerprint (PipelineResult::events and fingerprint are 0).
  bool record_spans = true;
};

/// Runs `program` to completion. Throws std::invalid_argument if a stage's order is not a valid schedule
/// (each microbatch's forward exactly once before its backward) or `fidelity` is inconsistent, and
/// std::logic_error on a deadlock. Per-stage results are those of the stage's slowest replica.
PipelineResult execute_pipeline(const models::StepProgram& program, const ExecutionFidelity& fidelity = {});

/// Orders `spans` as PipelineResult::spans are: by stage, then start, ties in their order in `spans`, which is
/// what std::stable_sort by (stage, start) gives (a stable sort's result is unique), in fewer steps: a stable
/// distribution by stage, then a stable sort of each stage's spans only where they are not in start order
/// already. `stages`: one more than the largest stage (a span outside [0, stages) falls back to
/// std::stable_sort).
void sort_spans(std::vector<TraceSpan>& spans, size_t stages);

/// The step time of execute_pipeline(program, fidelity) alone: no trace spans, no breakdown of the exposed
/// pipeline transfers (the reference run without them is skipped). Same errors.
units::Seconds pipeline_step_time(const models::StepProgram& program, const ExecutionFidelity& fidelity);

/// The step time of `program` with free pipeline transfers, the reference execute_pipeline subtracts from the
/// step time to give the exposed pipeline communication (StageBreakdown::pp_exposed). `fused`: computed in the
/// step's own dependency pass, as execute_pipeline does without spans; otherwise by a separate run, as it does
/// with spans. Both give the same time bit for bit (tests/step/test_dependency_order.cpp). Same errors as
/// execute_pipeline; `fidelity.record_spans` is ignored.
units::Seconds free_transfer_step_time(const models::StepProgram& program, const ExecutionFidelity& fidelity,
                                       bool fused);

}  // namespace clustersim::sim
