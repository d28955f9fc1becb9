#include "sim/run/run_scenario.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
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

namespace {

/// simulator.simulate for `scenario`; a forced all-reduce algorithm that does not apply becomes a ScenarioError
/// at network.all_reduce_algorithm, and the engine clock's overflow (a step beyond 292 years that the loader's
/// bounds let through: e.g. a model far too large for a slow network) becomes a ScenarioError located at
/// training.global_batch_size, the size of the step, since it comes from the input, not from a bug.
StepReport simulate_step(const Scenario& scenario, const models::Catalog& catalog, StepSimulator& simulator,
                         const models::VmSize& vm, const models::DeviceSpec& device) {
  try {
    return simulator.simulate(step_setup_of(scenario, catalog), vm, device, network_setup_of(scenario));
  } catch (const models::CollectiveAlgorithmError& e) {
    const Scenario::Location& at = scenario.locations.at("network.all_reduce_algorithm");
    throw ScenarioError(at.file, at.line, at.column, "network.all_reduce_algorithm", e.what());
  } catch (const std::overflow_error& e) {
    const Scenario::Location& at = scenario.locations.at("training.global_batch_size");
    throw ScenarioError(at.file, at.line, at.column, "training.global_batch_size",
                        std::string("the simulated step exceeds the engine's clock of 292 years (") + e.what() +
                            "): the model, the batch or the network is far outside what the simulation can time");
  }
}

}  // namespace

RunResult run_scenario(const Scenario& scenario, const models::Catalog& catalog, StepSimulator& simulator,
                       const RunProgress& progress) {
  const models::VmSize& vm = catalog.vm_size(scenario.cluster.vm_size);
  const models::DeviceSpec& device = catalog.device(vm.device);
  RunResult run{simulate_step(scenario, catalog, simulator, vm, device), std::nullopt, std::nullopt, std::nullopt};
  if (scenario.cluster.zones.size() > 1) {
    Scenario single = scenario;
    single.cluster.zones.clear();
    run.one_zone = simulate_step(single, catalog, simulator, vm, device);
  }
  if (scenario.job) {
    const models::JobSpec spec = job_spec_of(scenario, run.step);
    const int64_t replications = scenario.job->replications;
    int64_t done = 0;
    const int64_t planned =
        planned_replications(spec, replications) +
        (scenario.job->spot ? planned_replications(on_demand_counterpart(spec), replications) : 0);
    JobProgress tick;
    if (progress) tick = [&] { progress(++done, planned); };
    try {
      run.job = simulate_job(spec, replications, scenario.simulation.seed, kJobEventBudget, tick);
      if (scenario.job->spot) {
        run.on_demand = simulate_job(on_demand_counterpart(spec), replications, scenario.simulation.seed,
                                     kJobEventBudget, tick);
      }
    } catch (const JobBudgetExceeded& e) {
      const Scenario::Location& at = scenario.locations.at("job.replications");
      throw ScenarioError(at.file, at.line, at.column, "job.replications",
                          std::string(e.what()) + ": lower job.replications, or the interruption rates");
    }
  }
  return run;
}

RunResult run_scenario(const Scenario& scenario, const models::Catalog& catalog, const RunProgress& progress) {
  StepSimulator simulator;
  return run_scenario(scenario, catalog, simulator, progress);
}

void write_run_summary_columns(const Scenario& scenario, const RunResult& run, SummaryColumnSink& out) {
  write_step_summary_columns(scenario, run.step, run.one_zone_report(), out);
  if (run.job) {
    for (auto& c : job_summary_columns(scenario, *run.job, run.on_demand_job())) out.column(std::move(c));
  }
}

std::vector<SummaryColumn> run_summary_columns(const Scenario& scenario, const RunResult& run) {
  SummaryColumnList list;
  write_run_summary_columns(scenario, run, list);
  return std::move(list.columns);
}

}  // namespace clustersim::sim
