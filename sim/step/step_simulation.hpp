// One training step of a scenario: build the step IR from the models, execute it on the engine, and derive
// the figures users compare (step time breakdown, TFLOP/s per GPU, MFU, HFU).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "models/hardware/catalog.hpp"
#include "models/memory/memory_model.hpp"
#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"
#include "models/parallelism/step_program.hpp"
#include "models/variability/variability.hpp"
#include "sim/step/bottleneck.hpp"
#include "sim/step/pipeline_executor.hpp"

namespace clustersim::models {
class KernelTimeMemo;
}  // namespace clustersim::models

namespace clustersim::sim {

struct Scenario;

/// The cluster network of a step: topology (nodes, fabric, zones) and the all-reduce algorithm choice; and how
/// the step is executed on it.
struct NetworkSetup {
  models::TopologyConfig topology;
  std::optional<models::CollectiveAlgorithm> all_reduce_algorithm;  ///< nullopt: automatic (NCCL-like)
  bool full_fidelity = false;  ///< simulate every data-parallel replica's timeline (ExecutionFidelity)
  /// The GPUs' variability (models/variability); nullopt: every GPU at its nominal speed (variability off).
  std::optional<models::VariabilitySpec> variability;
  uint64_t seed = 0;  ///< of full fidelity's variability draws (sim/step/variability_draws.hpp)
};

/// A step with variability (NetworkSetup::variability): the compute factor X of its slowest GPU
/// (models::SlowestGpuFactor) and the step time it gives. Replica fidelity runs the step at E[X]; its quantiles
/// are the step at X's quantiles (the step time grows with X, so the step's q-quantile is the step at X's).
struct StepVariability {
  models::VariabilitySpec spec;
  int64_t vms = 0;          ///< M: VMs the job's GPUs fill
  int64_t gpus_per_vm = 0;  ///< n
  double factor_mean = 1.0;                ///< E[X]
  double factor_p50 = 1.0;                 ///< median of X
  double factor_p99 = 1.0;                 ///< 99th percentile of X
  double probability_any_slow_vm = 0.0;    ///< 1 - (1 - f)^M
  /// Full fidelity: StepReport::step_time is one seeded draw of every GPU and VM, not the step at E[X].
  bool drawn = false;
  units::Seconds nominal_step_time;  ///< the same step with every GPU at factor 1
  units::Seconds step_time_p50;      ///< the step at X's median
  units::Seconds step_time_p99;      ///< the step at X's 99th percentile
};

/// Result of simulating one optimizer step.
struct StepReport {
  PipelineResult pipeline;        ///< per-stage timelines and the critical path (pipeline.critical_path)
  units::Seconds step_time;
  int64_t gpus = 0;
  int64_t microbatches = 0;
  double expert_imbalance = 1.0;  ///< MoE: the busiest expert-parallel rank's routed tokens over the mean
  units::Flops model_flops;       ///< per iteration, no recomputation (MFU numerator)
  units::Flops hardware_flops;    ///< per iteration, with recomputation (Megatron's TFLOP/s convention)
  double tflops_per_gpu = 0.0;    ///< hardware_flops / (step_time * gpus), TFLOP/s
  double model_tflops_per_gpu = 0.0;  ///< model_flops / (step_time * gpus), TFLOP/s
  double tokens_per_s_per_gpu = 0.0;  ///< global batch x seq_length / (step_time x gpus)
  double mfu = 0.0;               ///< model_tflops_per_gpu / datasheet peak at the run's precision
  double hfu = 0.0;               ///< tflops_per_gpu / the same peak
  models::ZoneCrossings crosses_zones;  ///< communication kinds that cross an availability-zone boundary
  Bottleneck bottleneck;  ///< the dominant part of the critical path, in words (sim/step/bottleneck.hpp)
  models::MemoryReport memory;          ///< per-stage memory per GPU and the out-of-memory verdict
  /// How far to trust step_time: the leave-one-source-out errors of published runs on this device's
  /// calibration group and framework family (catalog prediction_uncertainty.toml); nullopt without one.
  std::optional<models::PredictionBand> prediction_band;
  std::optional<StepVariability> variability;  ///< set when NetworkSetup::variability is
};

/// The clusters a StepSimulator has built: topology, collective model (with its memoised flow solves) and the
/// communication patterns of each layout, keyed by VM size, topology and algorithm. Thread-safe: the threads
/// of a sweep share one, so a flow solve done by one thread serves all (results do not depend on which
/// thread solved first: a memoised solve is a function of its pattern).
class ClusterCache {
 public:
  ClusterCache();
  ~ClusterCache();
  ClusterCache(const ClusterCache&) = delete;
  ClusterCache& operator=(const ClusterCache&) = delete;

 private:
  friend class StepSimulator;
  struct Cluster;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Cluster>> clusters_;
};

/// Simulates steps, keeping each cluster's topology and collective model (with its memoised flow solves)
/// between calls, so that configurations on the same cluster (sweeps, layout searches) reuse them, and the
/// GEMM times and attention rates it has computed (models/compute/kernel_time_memo.hpp: keyed by their exact
/// inputs, so a step's figures are the same bit for bit as with a fresh simulator).
/// A StepSimulator is not thread-safe (use one per thread), but several may share one ClusterCache.
class StepSimulator {
 public:
  /// `clusters`: a cache shared with other simulators (e.g. the threads of a sweep); null: a private one.
  explicit StepSimulator(std::shared_ptr<ClusterCache> clusters = nullptr);
  ~StepSimulator();
  StepSimulator(const StepSimulator&) = delete;
  StepSimulator& operator=(const StepSimulator&) = delete;

  /// As simulate_step below.
  StepReport simulate(const models::StepSetup& setup, const models::VmSize& vm, const models::DeviceSpec& device,
                      const NetworkSetup& network);
  /// Whether reports carry the pipeline's trace spans (PipelineResult::spans, for --trace); on by default.
  /// Sweeps turn it off: recording and sorting spans is a tenth of a point's time.
  void set_record_spans(bool record) { record_spans_ = record; }

 private:
  std::shared_ptr<ClusterCache> clusters_;
  std::unique_ptr<models::KernelTimeMemo> kernel_times_;  ///< this simulator's (thread's) kernel time memo
  bool record_spans_ = true;
};

/// Simulates one step of `setup` on the cluster `network` describes, of VMs `vm` with devices `device`.
/// network.topology.nodes must hold setup's GPUs. Throws std::invalid_argument on an inconsistent setup,
/// std::out_of_range if the device lacks the precision.
StepReport simulate_step(const models::StepSetup& setup, const models::VmSize& vm, const models::DeviceSpec& device,
                         const NetworkSetup& network);

/// The StepSetup a scenario describes (1F1B, GPUs per node from its VM size).
models::StepSetup step_setup_of(const Scenario& scenario, const models::Catalog& catalog);
/// The NetworkSetup a scenario describes ([cluster] nodes, fabric and zones; [network]).
NetworkSetup network_setup_of(const Scenario& scenario);
/// The memory of every pipeline stage of the scenario on its VM size's device, without simulating: the
/// StepReport::memory simulate_scenario would give (models::estimate_memory on step_setup_of).
models::MemoryReport memory_of(const Scenario& scenario, const models::Catalog& catalog);
/// step_setup_of + network_setup_of + simulate_step on the scenario's VM size.
StepReport simulate_scenario(const Scenario& scenario, const models::Catalog& catalog);

}  // namespace clustersim::sim
