#include "sim/run/what_if.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/step_report.hpp"
#include "sim/run/run_serving.hpp"

namespace clustersim::sim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The loader's message of `error`, without its location and key.
std::string message_of(const ScenarioError& error) {
  const std::string what = error.what();
  const std::string marker = ": key '" + error.key() + "': ";
  const size_t at = what.find(marker);
  return at == std::string::npos ? what : what.substr(at + marker.size());
}

/// `error` re-located at the what-if option when the loader located it at the what-if's own --set (the one after
/// the scenario's `scenario_sets`); `position` is the option's 1-based position among the --what-if-set options.
ScenarioError relocated(const ScenarioError& error, size_t scenario_sets, size_t position) {
  if (error.file() != "--set" || error.line() != static_cast<int64_t>(scenario_sets) + 1) return error;
  return ScenarioError("--what-if-set", static_cast<int64_t>(position), error.column(), error.key(),
                       message_of(error));
}

std::vector<std::string> with(std::vector<std::string> overrides, const std::vector<std::string>& more) {
  overrides.insert(overrides.end(), more.begin(), more.end());
  return overrides;
}

double change(double value, double baseline) { return value / baseline - 1.0; }

SummaryColumn real(std::string name, std::string units, std::string description, std::vector<double> v) {
  return {std::move(name), std::move(units), std::move(description), std::move(v)};
}

/// "+12.3 %" of a change (a fraction), "n/a" for NaN.
std::string percent(double fraction) {
  return std::isnan(fraction) ? std::string("n/a") : printf_string("%+.1f %%", fraction * 100.0);
}
std::string dollars(double usd) { return std::isnan(usd) ? std::string("n/a") : printf_string("%.3f", usd); }
std::string rank_text(int64_t rank) { return rank == 0 ? std::string("-") : std::to_string(rank); }

std::string skipped_lines(const std::vector<WhatIfSkip>& skipped) {
  std::string out;
  for (const WhatIfSkip& s : skipped) out += "  not run: " + s.perturbation + ": " + s.reason + "\n";
  return out;
}

/// The next VM size's overrides for a job of `gpus` GPUs now on `vm`, or why there is none.
struct NextSize {
  std::vector<std::string> overrides;
  std::string name;
  std::string not_applicable;
};

NextSize next_size_of(const models::VmSize& vm, int64_t gpus, const models::Catalog& catalog, bool serving) {
  NextSize n;
  if (vm.next_size.empty()) {
    n.not_applicable = "the catalog names no next size for " + vm.name;
    return n;
  }
  n.name = vm.next_size;
  if (serving) {
    n.overrides = {"serving.vm_size=" + vm.next_size};
    return n;
  }
  const int64_t per_vm = catalog.vm_size(vm.next_size).devices_per_vm;
  if (gpus % per_vm != 0) {
    n.not_applicable = "the job's GPU count (" + std::to_string(gpus) + ") is not a multiple of " + vm.next_size +
                       "'s " + std::to_string(per_vm) + " GPUs per VM";
    return n;
  }
  n.overrides = {"cluster.vm_size=" + vm.next_size, "cluster.nodes=" + std::to_string(gpus / per_vm)};
  return n;
}

}  // namespace

std::vector<int64_t> what_if_ranks(const std::vector<double>& values) {
  std::vector<size_t> order;
  for (size_t i = 1; i < values.size(); ++i) {
    if (!std::isnan(values[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<int64_t> ranks(values.size(), 0);
  for (size_t r = 0; r < order.size(); ++r) ranks[order[r]] = static_cast<int64_t>(r + 1);
  return ranks;
}

std::vector<HardwarePerturbation> hardware_perturbations(const models::VmSize& vm, const models::DeviceSpec& device,
                                                          const NetworkSetup& network) {
  std::vector<HardwarePerturbation> out;
  const auto add = [&](std::string name, std::string description, bool same_cluster) -> StepHardware& {
    out.push_back({std::move(name), std::move(description), "", {vm, device, network}, same_cluster});
    return out.back().hardware;
  };
  add("gpu_matmul_x1.5", "GPU matmul (GEMM) math rate x 1.5 (models/compute; attention and memory traffic unchanged)",
      true)
      .device.matmul_rate_scale = 1.5;
  {
    StepHardware& h = add("hbm_bandwidth_x1.5",
                          "HBM bandwidth x 1.5 (datasheet and stream-triad rates: memory-bound kernels, GEMM operands)",
                          true);
    h.device.memory_bandwidth = device.memory_bandwidth * 1.5;
    h.device.achievable_memory_bandwidth = device.achievable_memory_bandwidth * 1.5;
  }
  {
    StepHardware& h = add("nvlink_x2", "NVLink (scale-up fabric) bandwidth per GPU x 2", false);
    h.device.fabric_bandwidth_per_direction = device.fabric_bandwidth_per_direction * 2.0;
    const bool scale_up = vm.fabric == models::IntraNodeFabric::nvswitch ||
                          vm.fabric == models::IntraNodeFabric::nvlink_mesh ||
                          vm.fabric == models::IntraNodeFabric::nvlink_bridge ||
                          vm.fabric == models::IntraNodeFabric::infinity_fabric;
    if (!scale_up) {
      out.back().not_applicable =
          vm.name + " has no NVLink (intra-VM fabric " + std::string(models::to_string(vm.fabric)) + ")";
    }
  }
  {
    const bool infiniband = vm.infiniband_ports > 0;
    StepHardware& h = add("nic_x2",
                          infiniband ? "scale-out NIC bandwidth x 2 (every InfiniBand port)"
                                     : "scale-out NIC bandwidth x 2 (the Ethernet NIC: the VM has no InfiniBand)",
                          false);
    if (infiniband) {
      h.vm.infiniband_port_rate = vm.infiniband_port_rate * 2.0;
    } else {
      h.vm.ethernet_bandwidth = vm.ethernet_bandwidth * 2.0;
    }
  }
  {
    StepHardware& h = add("latency_x0.5",
                          "network latency x 0.5 (every collective's NCCL base and per-step latency; inter-zone)",
                          false);
    h.vm.collective_latency_scale = 0.5;
    h.network.topology.inter_zone_latency = network.topology.inter_zone_latency * 0.5;
  }
  return out;
}

struct TrainingWhatIfPlan {
  struct Loaded {
    std::string perturbation;
    std::string description;
    Scenario scenario;
    std::optional<double> price_usd_per_hour;
  };
  const Scenario* baseline = nullptr;  ///< outlives the plan (the caller's)
  const models::Catalog* catalog = nullptr;
  bool standard = false;
  std::vector<std::string> only;  ///< WhatIfRequest::only
  /// Whether the standard row `name` is asked for.
  [[nodiscard]] bool wanted(std::string_view name) const {
    return standard && (only.empty() || std::find(only.begin(), only.end(), name) != only.end());
  }
  std::optional<Loaded> next_vm;  ///< set when next_vm_size loaded
  std::vector<Loaded> software;   ///< the recipe's switches the scenario leaves off (software_switches)
  std::vector<Loaded> user;
  std::vector<WhatIfSkip> skipped;  ///< found while planning
};

/// One software setting of the standard set: a published recipe's switch the scenario leaves off.
struct SoftwareSwitch {
  const char* perturbation;
  const char* set;          ///< the --set that turns it on
  const char* description;
  bool applies;             ///< off in the scenario, and it has something to act on
};

/// The recipe switches a planner copies (docs/model.md, "Pipeline and step"; Megatron-Core's and NeMo's defaults
/// turn the first three on): each row turns one on. fp8 runs the linears in fp8 where the device has fp8 tensor
/// cores (Transformer Engine's recipe).
std::vector<SoftwareSwitch> software_switches(const Scenario& sc, const models::DeviceSpec& device) {
  const auto& par = sc.parallelism;
  const bool sixteen_bit =
      sc.training.precision == models::Precision::bf16 || sc.training.precision == models::Precision::fp16;
  const auto fp8 = device.peak.find(models::Precision::fp8);
  return {
      {"overlap_grad_reduce", "parallelism.overlap_grad_reduce=true",
       "the data-parallel gradient reduction overlapped with the last backward, bucket by bucket (--set "
       "parallelism.overlap_grad_reduce=true)",
       !par.overlap_grad_reduce && par.data > 1},
      {"overlap_p2p_comm", "parallelism.overlap_p2p_comm=true",
       "pipeline sends overlapped with compute (--set parallelism.overlap_p2p_comm=true)",
       !par.overlap_p2p_comm && par.pipeline > 1},
      {"tp_comm_overlap", "parallelism.tp_comm_overlap=true",
       "tensor-parallel communication overlapped with the GEMMs (--set parallelism.tp_comm_overlap=true)",
       !par.tp_comm_overlap && par.tensor > 1},
      {"fp8", "training.precision=fp8", "fp8 linears where the GPU has fp8 tensor cores (--set training.precision=fp8)",
       sixteen_bit && fp8 != device.peak.end() && fp8->second.value() > 0.0},
  };
}

std::shared_ptr<const TrainingWhatIfPlan> plan_training_what_if(const Scenario& scenario,
                                                                const models::Catalog& catalog,
                                                                const WhatIfRequest& request) {
  auto plan = std::make_shared<TrainingWhatIfPlan>();
  plan->baseline = &scenario;
  plan->catalog = &catalog;
  plan->standard = request.enabled;
  plan->only = request.only;
  if (plan->wanted("next_vm_size")) {
    const models::VmSize& vm = catalog.vm_size(scenario.cluster.vm_size);
    const NextSize next = next_size_of(vm, scenario.parallelism.gpus(), catalog, false);
    if (!next.not_applicable.empty()) {
      plan->skipped.push_back({"next_vm_size", next.not_applicable});
    } else {
      try {
        Scenario s = load_scenario(scenario.source_path, with(scenario.overrides, next.overrides), catalog);
        plan->next_vm = TrainingWhatIfPlan::Loaded{
            "next_vm_size", "the next VM size up, " + next.name + " (--set " + next.overrides[0] + "," +
                                next.overrides[1] + "; its price)",
            std::move(s), catalog.vm_size(next.name).price_usd_per_hour};
      } catch (const ScenarioError& e) {
        plan->skipped.push_back({"next_vm_size", "--set " + next.overrides[0] + "," + next.overrides[1] +
                                                     " does not load: key '" + e.key() + "': " + message_of(e)});
      }
    }
  }
  if (request.enabled) {
    const models::DeviceSpec& device = catalog.device(catalog.vm_size(scenario.cluster.vm_size).device);
    for (const SoftwareSwitch& sw : software_switches(scenario, device)) {
      if (!sw.applies || !plan->wanted(sw.perturbation)) continue;
      try {
        Scenario s = load_scenario(scenario.source_path, with(scenario.overrides, {sw.set}), catalog);
        const std::optional<double> price = s.cluster.vm_price_usd_per_hour;
        plan->software.push_back({sw.perturbation, sw.description, std::move(s), price});
      } catch (const ScenarioError& e) {
        plan->skipped.push_back({sw.perturbation, std::string("--set ") + sw.set + " does not load: key '" + e.key() +
                                                      "': " + message_of(e)});
      }
    }
  }
  for (size_t i = 0; i < request.user.size(); ++i) {
    try {
      Scenario s = load_scenario(scenario.source_path, with(scenario.overrides, {request.user[i]}), catalog);
      const std::optional<double> price = s.cluster.vm_price_usd_per_hour;
      plan->user.push_back({request.user[i], "the scenario with --set " + request.user[i], std::move(s), price});
    } catch (const ScenarioError& e) {
      throw relocated(e, scenario.overrides.size(), i + 1);
    }
  }
  return plan;
}

TrainingWhatIf run_training_what_if(const TrainingWhatIfPlan& plan, const StepReport& baseline,
                                    StepSimulator& simulator) {
  const Scenario& sc = *plan.baseline;
  const models::Catalog& catalog = *plan.catalog;
  const std::optional<double> price = sc.cluster.vm_price_usd_per_hour;
  simulator.set_record_spans(false);
  TrainingWhatIf out;
  const auto row = [&](std::string name, std::string description, double step_time_s, std::optional<double> p,
                       const Scenario& of) {
    out.rows.push_back({std::move(name), std::move(description), step_time_s,
                        training_usd_per_million_tokens(of, p, step_time_s), 0, 0});
  };
  row("baseline", "the scenario as written (the plain run's step)", baseline.step_time.value(), price, sc);
  if (plan.standard) {
    const models::VmSize& vm = catalog.vm_size(sc.cluster.vm_size);
    const models::DeviceSpec& device = catalog.device(vm.device);
    const models::StepSetup setup = step_setup_of(sc, catalog);
    const NetworkSetup network = network_setup_of(sc);
    for (const HardwarePerturbation& p : hardware_perturbations(vm, device, network)) {
      if (!plan.wanted(p.name)) continue;
      if (!p.not_applicable.empty()) {
        out.skipped.push_back({p.name, p.not_applicable});
        continue;
      }
      // A changed network is another cluster: a simulator of its own (the shared one caches clusters by VM name).
      StepSimulator own;
      own.set_record_spans(false);
      StepSimulator& on = p.same_cluster ? simulator : own;
      const StepReport r = on.simulate(setup, p.hardware.vm, p.hardware.device, p.hardware.network);
      row(p.name, p.description, r.step_time.value(), price, sc);
    }
    if (plan.wanted("no_pipeline_bubble")) {
      row("no_pipeline_bubble",
          "the step without its pipeline wait (fill, drain, imbalance): step - critical_path.pipeline_wait; "
          "analytic from the critical path, not a re-simulation",
          (baseline.step_time - baseline.pipeline.critical_path.pipeline_wait).value(), price, sc);
    }
    if (plan.wanted("no_variability")) {
      if (network.variability) {
        NetworkSetup off = network;
        off.variability.reset();
        const StepReport r = simulator.simulate(setup, vm, device, off);
        row("no_variability", "the step with simulation.variability off (every GPU at its nominal speed)",
            r.step_time.value(), price, sc);
      } else {
        out.skipped.push_back({"no_variability", "the scenario has simulation.variability off"});
      }
    }
  }
  const auto run_loaded = [&](const TrainingWhatIfPlan::Loaded& l) {
    const models::VmSize& vm = catalog.vm_size(l.scenario.cluster.vm_size);
    const StepReport r = simulator.simulate(step_setup_of(l.scenario, catalog), vm, catalog.device(vm.device),
                                            network_setup_of(l.scenario));
    row(l.perturbation, l.description, r.step_time.value(), l.price_usd_per_hour, l.scenario);
  };
  if (plan.next_vm) {
    try {
      run_loaded(*plan.next_vm);
    } catch (const std::invalid_argument& e) {  // the models reject the layout on that VM size
      out.skipped.push_back({"next_vm_size", std::string("does not simulate: ") + e.what()});
    }
  }
  for (const auto& l : plan.software) {
    try {
      run_loaded(l);
    } catch (const std::exception& e) {  // the models reject the switch on this layout or device
      out.skipped.push_back({l.perturbation, std::string("does not simulate: ") + e.what()});
    }
  }
  out.skipped.insert(out.skipped.begin(), plan.skipped.begin(), plan.skipped.end());
  for (const auto& l : plan.user) run_loaded(l);
  std::vector<double> times, costs;
  for (const auto& r : out.rows) {
    times.push_back(r.step_time_s);
    costs.push_back(r.usd_per_million_tokens);
  }
  const std::vector<int64_t> by_time = what_if_ranks(times), by_cost = what_if_ranks(costs);
  for (size_t i = 0; i < out.rows.size(); ++i) {
    out.rows[i].rank_step_time = by_time[i];
    out.rows[i].rank_cost = by_cost[i];
  }
  return out;
}

std::vector<SummaryColumn> training_what_if_columns(const TrainingWhatIf& w) {
  std::vector<std::string> names, descriptions;
  std::vector<double> time, time_change, cost, cost_change;
  std::vector<int64_t> rank_time, rank_cost;
  const TrainingWhatIfRow& base = w.rows.at(0);
  for (const auto& r : w.rows) {
    names.push_back(r.perturbation);
    descriptions.push_back(r.description);
    time.push_back(r.step_time_s);
    time_change.push_back(change(r.step_time_s, base.step_time_s));
    cost.push_back(r.usd_per_million_tokens);
    cost_change.push_back(change(r.usd_per_million_tokens, base.usd_per_million_tokens));
    rank_time.push_back(r.rank_step_time);
    rank_cost.push_back(r.rank_cost);
  }
  return {{"perturbation", "", "the change from the scenario as written; row 0 the baseline", names},
          {"description", "", "what the change is, and how it is computed", descriptions},
          real("step_time_s", "s", "one optimizer step with the change", time),
          real("step_time_change", "1", "step_time_s / the baseline's - 1", time_change),
          real("usd_per_million_tokens", "USD/Mtoken",
               "on-demand VM cost of one million training tokens at this step time; NaN without a price", cost),
          real("usd_per_million_tokens_change", "1", "usd_per_million_tokens / the baseline's - 1", cost_change),
          {"rank_step_time", "", "rank by step time, 1 the fastest; 0 for the baseline", rank_time},
          {"rank_cost", "", "rank by usd_per_million_tokens, 1 the cheapest; 0 for the baseline and NaN", rank_cost}};
}

std::string format_training_what_if(const TrainingWhatIf& w) {
  const TrainingWhatIfRow& base = w.rows.at(0);
  std::string out = "what-if     one change at a time, ranked by step time (baseline " +
                    printf_string("%.3f s", base.step_time_s) +
                    (std::isnan(base.usd_per_million_tokens)
                         ? std::string(", no price")
                         : printf_string(", $%.3f/Mtoken", base.usd_per_million_tokens)) +
                    ")\n";
  out += printf_string("  %4s  %-34s %11s %9s %10s %9s\n", "rank", "change", "step time", "change", "$/Mtoken",
                       "cost rank");
  std::vector<size_t> order(w.rows.size() - 1);
  std::iota(order.begin(), order.end(), size_t{1});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) {
                     const int64_t ra = w.rows[a].rank_step_time, rb = w.rows[b].rank_step_time;
                     return (ra == 0 ? INT64_MAX : ra) < (rb == 0 ? INT64_MAX : rb);
                   });
  for (size_t i : order) {
    const TrainingWhatIfRow& r = w.rows[i];
    out += printf_string("  %4s  %-34s %9.3f s %9s %10s %9s\n", rank_text(r.rank_step_time).c_str(),
                         r.perturbation.c_str(), r.step_time_s,
                         percent(change(r.step_time_s, base.step_time_s)).c_str(),
                         dollars(r.usd_per_million_tokens).c_str(), rank_text(r.rank_cost).c_str());
  }
  out += skipped_lines(w.skipped);
  out += "  each row re-simulates one step with one change (no_pipeline_bubble: analytic); docs/what-if.md\n";
  return out;
}

ServingWhatIf serving_what_if(const ServingScenario& sc, const ServingRun& baseline, const models::Catalog& catalog,
                              const WhatIfRequest& request) {
  struct Change {
    std::string name;
    std::string description;
    std::vector<std::string> overrides;
    bool user = false;
  };
  std::vector<Change> changes;
  ServingWhatIf out;
  const ServingFleetConfig& f = sc.serving;
  if (request.enabled) {
    if (f.max_replicas) {
      changes.push_back({"plus_1_replica", "one more replica at most: the autoscaler's max_replicas + 1",
                         {"serving.max_replicas=" + std::to_string(*f.max_replicas + 1)}});
    } else {
      changes.push_back({"plus_1_replica", "one more replica: serving.replicas + 1",
                         {"serving.replicas=" + std::to_string(f.replicas + 1)}});
    }
    const models::VmSize& vm = catalog.vm_size(f.vm_size);
    const NextSize next = next_size_of(vm, 0, catalog, true);
    if (next.not_applicable.empty()) {
      changes.push_back({"next_vm_size", "the next VM size up, " + next.name + " (the same replicas and layout; its price)",
                         next.overrides});
    } else {
      out.skipped.push_back({"next_vm_size", next.not_applicable});
    }
    if (f.kv_cache_fp8) {
      out.skipped.push_back({"fp8_kv_cache", "the KV cache is fp8 already"});
    } else {
      changes.push_back({"fp8_kv_cache", "KV cache in fp8 (serving.kv_cache_dtype = \"fp8\": 1-byte elements)",
                         {"serving.kv_cache_dtype=fp8"}});
    }
    changes.push_back({"tp_x2", "tensor parallel x 2 per replica (serving.tensor = " + std::to_string(2 * f.tensor) + ")",
                       {"serving.tensor=" + std::to_string(2 * f.tensor)}});
    // Prefix caching (issue 30), TTFT with and without: toggled where it is on or the workload shares prompt content.
    if (f.prefix_caching) {
      std::vector<std::string> off{"serving.prefix_caching=false"};
      if (f.routing == "prefix_aware") off.emplace_back("serving.routing=least_outstanding");
      changes.push_back({"prefix_caching", "prefix caching off (serving.prefix_caching = false; prefix_aware routing "
                                           "becomes least_outstanding)", off});
    } else if (sc.workload.system_prompt_tokens > 0 || sc.workload.turns > 1) {
      changes.push_back({"prefix_caching", "prefix caching on (serving.prefix_caching = true)",
                         {"serving.prefix_caching=true"}});
    }
  }
  for (const std::string& kv : request.user) changes.push_back({kv, "the scenario with --set " + kv, {kv}, true});

  const auto add = [&](std::string name, std::string description, const ServingSummary& s) {
    out.rows.push_back({std::move(name), std::move(description), s.ttft_p99_s, s.tpot_p99_s, s.output_tokens_per_s,
                        s.usd_per_million_tokens, 0, 0});
  };
  add("baseline", "the scenario as written (the plain run)", baseline.summary);
  // Every change loads first, so that a bad --what-if-set fails before anything runs.
  std::vector<std::optional<ServingScenario>> loaded;
  size_t user_position = 0;
  for (const Change& c : changes) {
    if (c.user) ++user_position;
    try {
      loaded.emplace_back(load_serving_scenario(sc.source_path, with(sc.overrides, c.overrides), catalog));
    } catch (const ScenarioError& e) {
      if (c.user) throw relocated(e, sc.overrides.size(), user_position);
      out.skipped.push_back(
          {c.name, "--set " + c.overrides.at(0) + " does not load: key '" + e.key() + "': " + message_of(e)});
      loaded.emplace_back();
    }
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    if (!loaded[i]) continue;
    if (changes[i].user) {
      add(changes[i].name, changes[i].description, run_serving_scenario(*loaded[i], catalog).summary);
      continue;
    }
    try {
      add(changes[i].name, changes[i].description, run_serving_scenario(*loaded[i], catalog).summary);
    } catch (const DataError& e) {  // e.g. the weights leave no KV cache on that fleet
      out.skipped.push_back({changes[i].name, std::string("does not run: ") + e.what()});
    } catch (const std::invalid_argument& e) {  // the models reject the fleet
      out.skipped.push_back({changes[i].name, std::string("does not run: ") + e.what()});
    }
  }
  std::vector<double> ttft, cost;
  for (const auto& r : out.rows) {
    ttft.push_back(r.ttft_p99_s);
    cost.push_back(r.usd_per_million_tokens);
  }
  const std::vector<int64_t> by_ttft = what_if_ranks(ttft), by_cost = what_if_ranks(cost);
  for (size_t i = 0; i < out.rows.size(); ++i) {
    out.rows[i].rank_ttft = by_ttft[i];
    out.rows[i].rank_cost = by_cost[i];
  }
  return out;
}

std::vector<SummaryColumn> what_if_point_columns(const std::vector<std::string>& names, const TrainingWhatIf& w) {
  const double base = w.rows.at(0).step_time_s;
  std::vector<SummaryColumn> out;
  for (const std::string& name : names) {
    double step = kNaN;
    for (const TrainingWhatIfRow& r : w.rows) {
      if (r.perturbation == name) step = r.step_time_s;
    }
    std::string column = name;
    std::replace(column.begin(), column.end(), '.', 'p');
    out.push_back(real("what_if_" + column + "_step_time_s", "s",
                       "the point's step with one change, what-if " + name + " (docs/what-if.md); NaN if not run",
                       {step}));
    out.push_back(real("what_if_" + column + "_change", "1",
                       "what_if_" + column + "_step_time_s / step_time_s - 1", {change(step, base)}));
  }
  return out;
}

std::vector<SummaryColumn> serving_what_if_columns(const ServingWhatIf& w) {
  std::vector<std::string> names, descriptions;
  std::vector<double> ttft, ttft_change, tpot, tpot_change, tokens, cost, cost_change;
  std::vector<int64_t> rank_ttft, rank_cost;
  const ServingWhatIfRow& base = w.rows.at(0);
  for (const auto& r : w.rows) {
    names.push_back(r.perturbation);
    descriptions.push_back(r.description);
    ttft.push_back(r.ttft_p99_s);
    ttft_change.push_back(change(r.ttft_p99_s, base.ttft_p99_s));
    tpot.push_back(r.tpot_p99_s);
    tpot_change.push_back(change(r.tpot_p99_s, base.tpot_p99_s));
    tokens.push_back(r.output_tokens_per_s);
    cost.push_back(r.usd_per_million_tokens);
    cost_change.push_back(change(r.usd_per_million_tokens, base.usd_per_million_tokens));
    rank_ttft.push_back(r.rank_ttft);
    rank_cost.push_back(r.rank_cost);
  }
  return {{"perturbation", "", "the change from the scenario as written; row 0 the baseline", names},
          {"description", "", "what the change is", descriptions},
          real("ttft_p99_s", "s", "99th percentile time to first token with the change", ttft),
          real("ttft_p99_change", "1", "ttft_p99_s / the baseline's - 1", ttft_change),
          real("tpot_p99_s", "s", "99th percentile time per output token with the change", tpot),
          real("tpot_p99_change", "1", "tpot_p99_s / the baseline's - 1", tpot_change),
          real("output_tokens_per_s", "tokens/s", "generated tokens per second with the change", tokens),
          real("usd_per_million_tokens", "USD/Mtoken",
               "cost per million prompt and generated tokens with the change; NaN without a price", cost),
          real("usd_per_million_tokens_change", "1", "usd_per_million_tokens / the baseline's - 1", cost_change),
          {"rank_ttft", "", "rank by ttft_p99_s, 1 the lowest; 0 for the baseline", rank_ttft},
          {"rank_cost", "", "rank by usd_per_million_tokens, 1 the cheapest; 0 for the baseline and NaN", rank_cost}};
}

std::string format_serving_what_if(const ServingWhatIf& w) {
  const ServingWhatIfRow& base = w.rows.at(0);
  std::string out = "what-if     one change at a time, ranked by TTFT p99 (baseline " +
                    printf_string("%.3f s, TPOT p99 %.1f ms", base.ttft_p99_s, base.tpot_p99_s * 1e3) +
                    (std::isnan(base.usd_per_million_tokens)
                         ? std::string(", no price")
                         : printf_string(", $%.3f/Mtoken", base.usd_per_million_tokens)) +
                    ")\n";
  out += printf_string("  %4s  %-26s %11s %9s %13s %9s %10s %9s\n", "rank", "change", "TTFT p99", "change",
                       "TPOT p99", "change", "$/Mtoken", "cost rank");
  std::vector<size_t> order(w.rows.size() - 1);
  std::iota(order.begin(), order.end(), size_t{1});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t ra = w.rows[a].rank_ttft, rb = w.rows[b].rank_ttft;
    return (ra == 0 ? INT64_MAX : ra) < (rb == 0 ? INT64_MAX : rb);
  });
  for (size_t i : order) {
    const ServingWhatIfRow& r = w.rows[i];
    out += printf_string("  %4s  %-26s %9.3f s %9s %10.1f ms %9s %10s %9s\n", rank_text(r.rank_ttft).c_str(),
                         r.perturbation.c_str(), r.ttft_p99_s, percent(change(r.ttft_p99_s, base.ttft_p99_s)).c_str(),
                         r.tpot_p99_s * 1e3, percent(change(r.tpot_p99_s, base.tpot_p99_s)).c_str(),
                         dollars(r.usd_per_million_tokens).c_str(), rank_text(r.rank_cost).c_str());
  }
  out += skipped_lines(w.skipped);
  out += "  each row is a serving run of the scenario with one change (the same seed); docs/what-if.md\n";
  return out;
}

}  // namespace clustersim::sim
