#include "sim/step/step_simulation.hpp"

#include "models/compute/compute_model.hpp"
#include "models/network/alpha_beta.hpp"
#include "models/workload/transformer.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim::sim {

StepReport simulate_step(const models::StepSetup& setup, const models::VmSize& vm,
                         const models::DeviceSpec& device) {
  const models::ComputeModel compute(device, vm.device_share);
  const models::AlphaBetaNetwork network(vm, device);
  const models::StepProgram program = models::build_step_program(setup, compute, network);

  StepReport r;
  r.pipeline = execute_pipeline(program);
  r.critical = r.pipeline.stages[static_cast<size_t>(r.pipeline.critical_stage)];
  r.step_time = r.pipeline.step_time;
  r.gpus = setup.parallelism.gpus();
  r.microbatches = program.microbatches;
  r.model_flops = models::model_flops_per_iteration(setup.model, setup.training, setup.gated_mlp);
  r.hardware_flops = models::hardware_flops_per_iteration(setup.model, setup.training, setup.gated_mlp);
  const double gpu_seconds = r.step_time.value() * static_cast<double>(r.gpus);
  r.tflops_per_gpu = r.hardware_flops.value() / gpu_seconds * 1e-12;
  r.model_tflops_per_gpu = r.model_flops.value() / gpu_seconds * 1e-12;
  const double peak_tflops = units::in_tflops_per_second(compute.peak(setup.training.precision));
  r.mfu = r.model_tflops_per_gpu / peak_tflops;
  r.hfu = r.tflops_per_gpu / peak_tflops;
  return r;
}

models::StepSetup step_setup_of(const Scenario& scenario, const models::Catalog& catalog) {
  models::StepSetup setup;
  setup.model = scenario.model;
  setup.training = scenario.training;
  setup.parallelism = scenario.parallelism;
  setup.schedule = models::PipelineSchedule::one_f_one_b;
  setup.gpus_per_node = catalog.vm_size(scenario.cluster.vm_size).devices_per_vm;
  return setup;
}

}  // namespace clustersim::sim
