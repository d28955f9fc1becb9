#include "sim/run/run_scenario.hpp"

#include <utility>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/job/job_setup.hpp"
#include "sim/output/job_report.hpp"
#include "sim/output/step_report.hpp"

namespace clustersim::sim {

models::JobSpec on_demand_counterpart(const models::JobSpec& spot) {
  models::JobSpec od = spot;
  od.interruptions.spot = false;
  od.interruptions.eviction_trace.clear();
  od.cost.spot_discount = 0.0;
  return od;
}

RunResult run_scenario(const Scenario& scenario, const models::Catalog& catalog, StepSimulator& simulator) {
  const models::VmSize& vm = catalog.vm_size(scenario.cluster.vm_size);
  const models::DeviceSpec& device = catalog.device(vm.device);
  RunResult run{simulator.simulate(step_setup_of(scenario, catalog), vm, device, network_setup_of(scenario)),
                std::nullopt, std::nullopt, std::nullopt};
  if (scenario.cluster.zones.size() > 1) {
    Scenario single = scenario;
    single.cluster.zones.clear();
    run.one_zone = simulator.simulate(step_setup_of(single, catalog), vm, device, network_setup_of(single));
  }
  if (scenario.job) {
    const models::JobSpec spec = job_spec_of(scenario, run.step);
    run.job = simulate_job(spec, scenario.job->replications, scenario.simulation.seed);
    if (scenario.job->spot) {
      run.on_demand = simulate_job(on_demand_counterpart(spec), scenario.job->replications, scenario.simulation.seed);
    }
  }
  return run;
}

RunResult run_scenario(const Scenario& scenario, const models::Catalog& catalog) {
  StepSimulator simulator;
  return run_scenario(scenario, catalog, simulator);
}

std::vector<SummaryColumn> run_summary_columns(const Scenario& scenario, const RunResult& run) {
  std::vector<SummaryColumn> columns = step_summary_columns(scenario, run.step, run.one_zone_report());
  if (run.job) {
    for (auto& c : job_summary_columns(scenario, *run.job, run.on_demand_job())) columns.push_back(std::move(c));
  }
  return columns;
}

}  // namespace clustersim::sim
