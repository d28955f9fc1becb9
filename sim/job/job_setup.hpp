// From a scenario and its simulated step to the job the job simulation runs (sim/job/job_simulation.hpp).
#pragma once

#include "models/reliability/job_model.hpp"

namespace clustersim::sim {

struct Scenario;
struct StepReport;

/// The JobSpec of `scenario` (which must have a [job]) with `step` as its step time. Checkpoint size defaults
/// to parameters x 14 B (16-bit weights + fp32 master weights, m and v: shared/validation/reliability.md);
/// an asynchronous checkpoint stalls each GPU for its share at 25 GB/s (PCIe gen4 x16 device-to-host; the
/// A100 v4 measures 26.3 GB/s, hardware.csv). Cross-zone bytes per step: the pipeline sends that cross the
/// zone boundary (each of m microbatches' activation and its gradient, per data-parallel replica) and, when
/// data-parallel rings cross it, two gradient volumes per crossing ring (reduce-scatter and all-gather halves).
/// Throws std::invalid_argument without a [job].
models::JobSpec job_spec_of(const Scenario& scenario, const StepReport& step);

}  // namespace clustersim::sim
