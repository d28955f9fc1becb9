// What-if analysis (issue 29; docs/what-if.md): the step, or the serving fleet, re-simulated with one resource
// changed at a time, ranked by time and by cost, as `clustersim run --what-if` prints and writes (/what_if).
//
// Training (each row one change from the scenario as written; one step each, never the [job] Monte Carlo nor the
// one-zone reference; the same seed):
//   gpu_matmul_x1.5     DeviceSpec::matmul_rate_scale 1.5: every GEMM's math rate (models/compute)
//   hbm_bandwidth_x1.5  DeviceSpec memory_bandwidth and achievable_memory_bandwidth x 1.5
//   nvlink_x2           DeviceSpec::fabric_bandwidth_per_direction x 2 (VMs with an NVLink or Infinity Fabric)
//   nic_x2              the scale-out NIC x 2: VmSize::infiniband_port_rate, or ethernet_bandwidth without InfiniBand
//   latency_x0.5        VmSize::collective_latency_scale 0.5 (every NCCL alpha term) and the inter-zone latency
//   no_pipeline_bubble  analytic: the baseline step - its critical path's pipeline_wait (not a re-simulation)
//   no_variability      simulation.variability off (only when the scenario has it on; otherwise no row)
//   next_vm_size        --set cluster.vm_size=NEXT,cluster.nodes=GPUS/NEXT's GPUs per VM (catalog next_size)
//   KEY=VALUE           a user's --what-if-set: the scenario with that --set
// Serving: plus_1_replica, next_vm_size, fp8_kv_cache, tp_x2, prefix_caching (toggled, where it is on or the
// workload shares prompt content) and the user's, each a scenario override and a
// serving run.
// Ranks: ascending, 1 = best, among the perturbation rows (the baseline row 0 has rank 0); a row whose value is
// NaN (no price) has rank 0 too. Ties keep the rows' order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/output/results_file.hpp"
#include "sim/run/run_output.hpp"  // WhatIfRequest
#include "sim/step/step_simulation.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

struct Scenario;
struct ServingScenario;
struct ServingRun;

/// A perturbation the analysis did not run, and why (printed under the table; not in /what_if).
struct WhatIfSkip {
  std::string perturbation;
  std::string reason;
};

/// The step's hardware inputs (StepSimulator::simulate's) with one change.
struct StepHardware {
  models::VmSize vm;
  models::DeviceSpec device;
  NetworkSetup network;
};

/// One hardware perturbation of the standard set (rows 1-5): its name, its description, and the changed inputs;
/// `not_applicable` says why it has no row ("" when it has one).
struct HardwarePerturbation {
  std::string name;
  std::string description;
  std::string not_applicable;
  StepHardware hardware;
  bool same_cluster = false;  ///< the network is the baseline's (the StepSimulator's cached cluster serves)
};

/// The standard hardware perturbations of a step on `vm`, `device` and `network`, in table order. Pure.
std::vector<HardwarePerturbation> hardware_perturbations(const models::VmSize& vm, const models::DeviceSpec& device,
                                                          const NetworkSetup& network);

/// One row of a training what-if.
struct TrainingWhatIfRow {
  std::string perturbation;  ///< "baseline", a standard name, or the user's KEY=VALUE
  std::string description;
  double step_time_s = 0.0;
  double usd_per_million_tokens = 0.0;  ///< NaN without a price
  int64_t rank_step_time = 0;           ///< 1 = fastest; 0 for the baseline
  int64_t rank_cost = 0;                ///< 1 = cheapest; 0 for the baseline and a NaN cost
};

/// A training what-if: the baseline (row 0) and one row per perturbation, in the standard order then the user's.
struct TrainingWhatIf {
  std::vector<TrainingWhatIfRow> rows;
  std::vector<WhatIfSkip> skipped;
};

/// The scenarios a training what-if loads (next_vm_size and the user's), loaded before anything is simulated so
/// that a bad --what-if-set fails first. The plan refers to `scenario` and `catalog`: both must outlive it.
/// next_vm_size that does not apply or load is a skip with its reason, not an error. Errors: a user's KEY=VALUE that the loader rejects throws its
/// ScenarioError, re-located at the option ("--what-if-set:I:COL: key 'KEY': ...", I its 1-based position) when
/// the loader located it at that --set, as is otherwise.
struct TrainingWhatIfPlan;
std::shared_ptr<const TrainingWhatIfPlan> plan_training_what_if(const Scenario& scenario,
                                                                const models::Catalog& catalog,
                                                                const WhatIfRequest& request);

/// Runs the plan against the scenario's baseline step `baseline` (the plain run's), on `simulator` (its cluster
/// cache reused where the cluster is the baseline's; its span recording turned off). Errors: as
/// StepSimulator::simulate for a user's row; the standard rows that cannot run are skipped with a reason.
TrainingWhatIf run_training_what_if(const TrainingWhatIfPlan& plan, const StepReport& baseline,
                                    StepSimulator& simulator);

/// The /what_if columns of a training what-if (docs/what-if.md): perturbation, description, step_time_s,
/// step_time_change, usd_per_million_tokens, usd_per_million_tokens_change, rank_step_time, rank_cost.
std::vector<SummaryColumn> training_what_if_columns(const TrainingWhatIf& what_if);
/// The report's ranked table.
std::string format_training_what_if(const TrainingWhatIf& what_if);

/// A sweep point's what-if columns (analysis.what_if): for each name in `names`, in order,
/// what_if_<name>_step_time_s (s) and what_if_<name>_change (1: step / the point's step - 1), '.' in a name written
/// as 'p' (what_if_gpu_matmul_x1p5_step_time_s); NaN where the row did not run (its reason is in the report of
/// `clustersim run`).
std::vector<SummaryColumn> what_if_point_columns(const std::vector<std::string>& names, const TrainingWhatIf& what_if);

/// One row of a serving what-if.
struct ServingWhatIfRow {
  std::string perturbation;
  std::string description;
  double ttft_p99_s = 0.0;
  double tpot_p99_s = 0.0;
  double output_tokens_per_s = 0.0;
  double usd_per_million_tokens = 0.0;  ///< NaN without a price
  int64_t rank_ttft = 0;
  int64_t rank_cost = 0;
};

struct ServingWhatIf {
  std::vector<ServingWhatIfRow> rows;
  std::vector<WhatIfSkip> skipped;
};

/// A serving what-if of `scenario` whose plain run is `baseline`: each perturbation a scenario override (the
/// scenario's own --set first) and a serving run. Errors: a user's KEY=VALUE as plan_training_what_if; a user's
/// row's run errors as run_serving_scenario's; the standard rows that cannot load or run are skipped.
ServingWhatIf serving_what_if(const ServingScenario& scenario, const ServingRun& baseline,
                              const models::Catalog& catalog, const WhatIfRequest& request);

/// The /what_if columns of a serving what-if: perturbation, description, ttft_p99_s, ttft_p99_change,
/// tpot_p99_s, tpot_p99_change, output_tokens_per_s, usd_per_million_tokens, usd_per_million_tokens_change,
/// rank_ttft, rank_cost.
std::vector<SummaryColumn> serving_what_if_columns(const ServingWhatIf& what_if);
std::string format_serving_what_if(const ServingWhatIf& what_if);

/// Ranks of `values` (1 = smallest; ties in index order), index 0 excluded (rank 0), NaN values rank 0.
std::vector<int64_t> what_if_ranks(const std::vector<double>& values);

}  // namespace clustersim::sim
