#include "sim/step/step_simulation.hpp"

#include <map>
#include <sstream>
#include <vector>
#include <stdexcept>
#include <string>

#include "models/compute/compute_model.hpp"
#include "models/compute/kernel_time_memo.hpp"
#include "models/network/collective_model.hpp"
#include "models/parallelism/framework_behaviour.hpp"
#include "models/parallelism/layout.hpp"
#include "models/workload/transformer.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/variability_draws.hpp"

namespace clustersim::sim {

struct ClusterCache::Cluster {
  models::Topology topology;
  models::CollectiveModel network;
  Cluster(models::Topology t, const models::VmSize& vm, std::optional<models::CollectiveAlgorithm> algorithm)
      : topology(std::move(t)), network(topology, models::CollectiveConstants::for_vm(vm), algorithm) {}

  /// Patterns per layout simulated on this cluster, keyed by the size of every layout dimension (the folded
  /// expert ones included: two layouts with the same tensor, pipeline and data sizes but another expert size
  /// have other expert groups); cleared past kPatternLayouts so a long layout search on a large cluster keeps
  /// bounded memory (callers hold their own reference).
  static constexpr size_t kPatternLayouts = 64;
  /// The regular patterns, shared by the layouts (many have the same tensor, data or pipeline groups).
  std::shared_ptr<models::PatternStore> pattern_store = std::make_shared<models::PatternStore>();
  std::mutex patterns_mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<const models::MegatronPatterns>> patterns;
  std::shared_ptr<const models::MegatronPatterns> patterns_of(const models::ParallelismConfig& p,
                                                                int64_t gpus_per_node) {
    std::vector<int64_t> key;
    for (const models::LayoutDimension* d : models::layout_dimensions_as_written()) key.push_back(p.*d->size);
    {
      std::lock_guard lock(patterns_mutex);
      if (auto it = patterns.find(key); it != patterns.end()) return it->second;
    }
    auto built = std::make_shared<const models::MegatronPatterns>(p, gpus_per_node, pattern_store);
    std::lock_guard lock(patterns_mutex);
    if (patterns.size() >= kPatternLayouts) patterns.clear();
    return patterns.emplace(key, std::move(built)).first->second;
  }
};

ClusterCache::ClusterCache() = default;
ClusterCache::~ClusterCache() = default;

StepSimulator::StepSimulator(std::shared_ptr<ClusterCache> clusters)
    : clusters_(clusters ? std::move(clusters) : std::make_shared<ClusterCache>()),
      kernel_times_(std::make_unique<models::KernelTimeMemo>()) {}
StepSimulator::~StepSimulator() = default;

namespace {

std::string cluster_key(const models::VmSize& vm, const NetworkSetup& n) {
  std::ostringstream k;
  const models::TopologyConfig& t = n.topology;
  k << vm.name << '|' << t.nodes << '|' << static_cast<int>(t.fabric) << '|' << t.fat_tree_radix << '|'
    << t.fat_tree_tiers << '|' << t.oversubscription << '|' << t.inter_zone_latency.value() << '|'
    << (t.inter_zone_bandwidth_per_node ? t.inter_zone_bandwidth_per_node->value() : -1.0) << '|'
    << (n.all_reduce_algorithm ? static_cast<int>(*n.all_reduce_algorithm) : -1) << '|'
    << t.vms_per_nvlink_domain.value_or(0);
  for (const auto& z : t.zones) k << '|' << z.name << ':' << z.nodes;
  return k.str();
}

/// The slowest GPU's factor for the layout's GPUs on VMs of `vm` and the step at its median and 99th
/// percentile and at 1 (replica fidelity: one representative per stage, every stage at the factor).
StepVariability step_variability(const models::StepProgram& program, const models::ParallelismConfig& p,
                                 const models::VmSize& vm, const models::VariabilitySpec& spec) {
  StepVariability v;
  v.spec = spec;
  v.gpus_per_vm = vm.devices_per_vm;
  v.vms = (p.gpus() + v.gpus_per_vm - 1) / v.gpus_per_vm;
  const models::SlowestGpuFactor x(spec, v.vms, v.gpus_per_vm);
  v.factor_mean = x.mean();
  v.factor_p50 = x.quantile(0.5);
  v.factor_p99 = x.quantile(0.99);
  v.probability_any_slow_vm = x.probability_any_slow_vm();
  const auto step_at = [&](double factor) {
    ExecutionFidelity at;
    at.compute_slowdown.assign(program.stages.size(), factor);
    at.record_spans = false;
    return pipeline_step_time(program, at);
  };
  v.nominal_step_time = step_at(1.0);
  v.step_time_p50 = step_at(v.factor_p50);
  v.step_time_p99 = step_at(v.factor_p99);
  return v;
}

}  // namespace

StepReport simulate_step(const models::StepSetup& setup, const models::VmSize& vm, const models::DeviceSpec& device,
                         const NetworkSetup& net) {
  StepSimulator simulator;
  return simulator.simulate(setup, vm, device, net);
}

StepReport StepSimulator::simulate(const models::StepSetup& setup, const models::VmSize& vm,
                                   const models::DeviceSpec& device, const NetworkSetup& net) {
  const models::ComputeModel compute(device, vm.device_share, kernel_times_.get());
  ClusterCache::Cluster* cluster = nullptr;
  {
    // Building a topology under the lock serialises first uses of a cluster; the threads of a sweep share one
    // cluster, so the others would wait for it anyway.
    std::lock_guard lock(clusters_->mutex_);
    auto& slot = clusters_->clusters_[cluster_key(vm, net)];
    if (!slot) {
      slot = std::make_unique<ClusterCache::Cluster>(models::build_topology(vm, device, net.topology), vm,
                                                     net.all_reduce_algorithm);
    }
    cluster = slot.get();
  }
  if (cluster->topology.gpu_count() < setup.parallelism.gpus()) {
    throw std::invalid_argument("simulate_step: the cluster has " + std::to_string(cluster->topology.gpu_count()) +
                                " GPUs, the layout needs " + std::to_string(setup.parallelism.gpus()));
  }
  const std::shared_ptr<const models::MegatronPatterns> patterns = cluster->patterns_of(setup.parallelism, setup.gpus_per_node);
  const models::StepProgram program = models::build_step_program(setup, compute, cluster->network, patterns.get());

  StepReport r;
  ExecutionFidelity fidelity;
  if (net.full_fidelity) fidelity.replicas = setup.parallelism.data;
  fidelity.record_spans = record_spans_;
  if (net.variability) {
    r.variability = step_variability(program, setup.parallelism, vm, *net.variability);
    if (net.full_fidelity) {
      fidelity.compute_slowdown = drawn_compute_factors(*net.variability, setup.parallelism, vm.devices_per_vm, net.seed);
      r.variability->drawn = true;
    } else {
      fidelity.compute_slowdown.assign(program.stages.size(), r.variability->factor_mean);
    }
  }
  r.pipeline = execute_pipeline(program, fidelity);
  r.step_time = r.pipeline.step_time;
  r.gpus = setup.parallelism.gpus();
  r.microbatches = program.microbatches;
  r.expert_imbalance = program.expert_imbalance;
  r.model_flops = models::model_flops_per_iteration(setup.model, setup.training);
  r.hardware_flops = models::hardware_flops_per_iteration(setup.model, setup.training, setup.parallelism);
  const double gpu_seconds = r.step_time.value() * static_cast<double>(r.gpus);
  r.tflops_per_gpu = r.hardware_flops.value() / gpu_seconds * 1e-12;
  r.model_tflops_per_gpu = r.model_flops.value() / gpu_seconds * 1e-12;
  r.tokens_per_s_per_gpu = static_cast<double>(setup.training.global_batch_size) *
                           static_cast<double>(setup.model.seq_length) / gpu_seconds;
  const double peak_tflops = units::in_tflops_per_second(compute.peak(setup.training.precision));
  r.mfu = r.model_tflops_per_gpu / peak_tflops;
  r.hfu = r.tflops_per_gpu / peak_tflops;
  r.crosses_zones = program.crosses_zones;
  r.bottleneck = bottleneck_of(setup.parallelism, vm, net.topology, r.crosses_zones, r.pipeline);
  r.memory = models::estimate_memory(setup, device);
  r.prediction_band = device.prediction_band(models::framework_family(setup.training.framework),
                                             models::validation_workload(setup.model, setup.parallelism));
  return r;
}

models::StepSetup step_setup_of(const Scenario& scenario, const models::Catalog& catalog) {
  models::StepSetup setup;
  setup.model = scenario.model;
  setup.training = scenario.training;
  setup.parallelism = scenario.parallelism;
  setup.schedule = scenario.schedule;
  // The network's "node" is the NVLink domain (one VM, or the VMs of an NVL72 rack the job uses).
  setup.gpus_per_node = catalog.vm_size(scenario.cluster.vm_size)
                            .domain_gpus(scenario.cluster.nodes, scenario.cluster.vms_per_nvlink_domain);
  return setup;
}

NetworkSetup network_setup_of(const Scenario& scenario) {
  NetworkSetup n;
  const ClusterConfig& c = scenario.cluster;
  n.topology.nodes = c.nodes;
  n.topology.fabric = c.fabric;
  n.topology.fat_tree_radix = static_cast<int>(c.fat_tree_radix);
  n.topology.oversubscription = c.oversubscription;
  n.topology.zones = c.zones;
  n.topology.inter_zone_latency = c.inter_zone_latency;
  n.topology.inter_zone_bandwidth_per_node = c.inter_zone_bandwidth_per_node;
  n.topology.vms_per_nvlink_domain = c.vms_per_nvlink_domain;
  n.all_reduce_algorithm = scenario.network.all_reduce_algorithm;
  n.full_fidelity = scenario.simulation.fidelity == Fidelity::full;
  n.variability = scenario.simulation.variability;
  n.seed = scenario.simulation.seed;
  return n;
}

models::MemoryReport memory_of(const Scenario& scenario, const models::Catalog& catalog) {
  return models::estimate_memory(step_setup_of(scenario, catalog),
                                 catalog.device(catalog.vm_size(scenario.cluster.vm_size).device));
}

StepReport simulate_scenario(const Scenario& scenario, const models::Catalog& catalog) {
  const models::VmSize& vm = catalog.vm_size(scenario.cluster.vm_size);
  return simulate_step(step_setup_of(scenario, catalog), vm, catalog.device(vm.device), network_setup_of(scenario));
}

}  // namespace clustersim::sim
