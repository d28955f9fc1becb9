// What `clustersim run` computes for a serving scenario (issue 15): the scenario's fleet and workload turned
// into the inference model and the engine's setup, the simulation, its summary, its /summary row, its per-request
// and time-series tables and its text report. The one place that owns the recipe of a serving run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/results_file.hpp"
#include "sim/run/split_pools.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/serving_summary.hpp"

namespace clustersim::sim {

struct ServingRun {
  ServingResult result;
  ServingSummary summary;
  int64_t kv_cache_tokens = 0;        ///< per replica
  double weight_bytes_per_gpu = 0;    ///< B
  double kv_bytes_per_token = 0;      ///< per GPU, B
  int64_t vms = 0;                    ///< VMs the replicas occupy
  double decode_step_s = 0;           ///< one sequence decoding at a 1,024-token context, s (a reference)
  int64_t trace_requests_cut = 0;     ///< trace rows after the window workload.duration_s gives (not run)
  std::optional<SplitPoolsSummary> split;  ///< split pools (serving.prefill_replicas > 0) only
};

/// Runs `scenario`: the requests (the trace, or the synthetic stream from simulation.seed), the replicas'
/// inference model (numerics from serving.precision and kv_cache_dtype; the tensor-parallel all-reduce from the
/// VM size's collective model), the KV cache as vLLM sizes it, the simulation and its summary. Throws DataError
/// when the weights leave no KV cache or the trace is malformed (its file and line), and the errors of the
/// models. `iteration_log`: which engine iterations ServingRun::result.inside.records keeps (none by default; the
/// batch statistics and TBT are always computed).
ServingRun run_serving_scenario(const ServingScenario& scenario, const models::Catalog& catalog,
                                const IterationSampling& iteration_log = {});

/// Whether the fleet meets the scenario's targets: some request completed, the p99 TTFT at or below
/// slo.ttft_p99_ms and the p99 TPOT at or below slo.tpot_p99_ms (a target not given is met). The ranking of
/// a serving sweep (cost_per_mtoken_under_slo) puts these fleets first.
bool meets_slo(const SloConfig& slo, const ServingSummary& summary);

/// The run's /summary row (docs/hdf5-schema.md, "Serving runs").
std::vector<SummaryColumn> serving_summary_columns(const ServingScenario& scenario, const ServingRun& run);
/// One row per request (/requests): arrival, first token, finish, TTFT, TPOT, end to end, lengths, replica,
/// preemptions, rejected.
std::vector<SummaryColumn> serving_request_columns(const ServingRun& run);
/// One row per sample (/timeseries): time, queued and running requests, KV occupancy.
std::vector<SummaryColumn> serving_sample_columns(const ServingRun& run);
/// One row per recorded engine iteration (/iterations; docs/hdf5-schema.md): iteration, replica, engine, start,
/// duration, sequences, prefill and decode tokens, KV blocks used.
std::vector<SummaryColumn> serving_iteration_columns(const ServingScenario& scenario, const ServingRun& run);
/// The text report of `clustersim run`.
std::string format_serving_summary(const ServingScenario& scenario, const ServingRun& run);

}  // namespace clustersim::sim
