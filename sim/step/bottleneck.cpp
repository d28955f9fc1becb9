#include "sim/step/bottleneck.hpp"

#include <algorithm>

#include "models/hardware/catalog.hpp"
#include "models/network/topology.hpp"
#include "models/parallelism/plan.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/format.hpp"
#include "sim/step/pipeline_executor.hpp"

namespace clustersim::sim {

namespace {

/// The scale-up link inside a VM, in words.
const char* intra_vm_link(models::IntraNodeFabric fabric) {
  switch (fabric) {
    case models::IntraNodeFabric::nvswitch:
    case models::IntraNodeFabric::nvlink_mesh:
    case models::IntraNodeFabric::nvlink_bridge:
      return "NVLink";
    case models::IntraNodeFabric::pcie:
      return "PCIe";
    case models::IntraNodeFabric::infinity_fabric:
      return "Infinity Fabric";
    case models::IntraNodeFabric::none:
      break;
  }
  return "the VM's own links";
}

/// Where a group of `span` consecutive GPUs communicates: inside one VM, one NVLink domain, or between VMs.
std::string place_of(int64_t span, const models::TopologyConfig& topology, const models::VmSize& vm) {
  if (span <= vm.devices_per_vm) return std::string(intra_vm_link(vm.fabric)) + " inside a VM";
  const int64_t domain_vms = vm.domain_vms(topology.nodes, topology.vms_per_nvlink_domain);
  if (domain_vms > 1 && span <= domain_vms * vm.devices_per_vm) {
    return "NVLink across an NVLink domain of " + counted(domain_vms, "VM");
  }
  return std::string(vm.infiniband_ports > 0 ? "InfiniBand" : "Ethernet") + " between VMs";
}

/// The stages whose own time of a kind is at least half the largest stage's; empty when every stage has none.
std::vector<int64_t> stages_with(const PipelineResult& r, units::Seconds StageBreakdown::*kind) {
  double most = 0.0;
  for (const StageBreakdown& s : r.stages) most = std::max(most, (s.*kind).value());
  std::vector<int64_t> out;
  if (most <= 0.0) return out;
  for (size_t k = 0; k < r.stages.size(); ++k) {
    if ((r.stages[k].*kind).value() >= 0.5 * most) out.push_back(static_cast<int64_t>(k));
  }
  return out;
}

std::string on_stages(const std::vector<int64_t>& stages, size_t pipeline) {
  if (pipeline <= 1 || stages.empty()) return "";
  if (stages.size() == pipeline) return " (every stage)";
  return std::string(stages.size() == 1 ? " (stage " : " (stages ") + stage_ranges(stages) + ")";
}

/// A stage's busy time inside its passes: compute and the communication and host time not hidden there.
double busy(const StageBreakdown& s) {
  return (s.compute + s.tp_comm + s.cp_comm + s.ep_comm + s.host).value();
}

/// When other stages run within 5 % of the home stage's busy time and something else takes most of theirs, the
/// pipeline is nearly balanced and relieving the home stage alone moves the bottleneck there: say so.
std::string near_pace_text(const PipelineResult& r, const std::string& part) {
  const auto home = static_cast<size_t>(r.critical_path.home_stage);
  if (r.stages.size() <= 1 || home >= r.stages.size()) return "";
  const double pace = busy(r.stages[home]);
  std::vector<int64_t> near;
  double total = 0.0;
  StageBreakdown sum;
  for (size_t k = 0; k < r.stages.size(); ++k) {
    const StageBreakdown& s = r.stages[k];
    if (k == home || busy(s) < 0.95 * pace) continue;
    near.push_back(static_cast<int64_t>(k));
    total += busy(s);
    sum.compute += s.compute;
    sum.tp_comm += s.tp_comm;
    sum.cp_comm += s.cp_comm;
    sum.ep_comm += s.ep_comm;
    sum.host += s.host;
  }
  if (near.empty() || total <= 0.0) return "";
  const std::pair<const char*, units::Seconds> kinds[] = {{"compute", sum.compute},
                                                          {"tp_comm", sum.tp_comm},
                                                          {"cp_comm", sum.cp_comm},
                                                          {"ep_comm", sum.ep_comm},
                                                          {"host", sum.host}};
  size_t top = 0;
  for (size_t i = 1; i < std::size(kinds); ++i) {
    if (kinds[i].second > kinds[top].second) top = i;
  }
  if (kinds[top].first == part) return "";
  static const std::pair<const char*, const char*> names[] = {{"compute", "GPU compute"},
                                                              {"tp_comm", "tensor-parallel collectives"},
                                                              {"cp_comm", "context-parallel K/V exchange"},
                                                              {"ep_comm", "expert dispatch/combine"},
                                                              {"host", "host kernel issue"}};
  const char* name = names[top].second;
  return printf_string("; %s %s within 5 %% of its pace, bound by %s (%.0f %% of their busy time)",
                       near.size() == 1 ? "stage" : "stages", stage_ranges(near).c_str(), name,
                       100.0 * kinds[top].second.value() / total);
}

}  // namespace

std::string stage_ranges(const std::vector<int64_t>& stages) {
  std::string out;
  for (size_t i = 0; i < stages.size();) {
    size_t j = i;
    while (j + 1 < stages.size() && stages[j + 1] == stages[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(stages[i]);
    if (j > i) out += "-" + std::to_string(stages[j]);
    i = j + 1;
  }
  return out;
}

Bottleneck bottleneck_of(const models::ParallelismConfig& par, const models::VmSize& vm,
                         const models::TopologyConfig& topology, const models::ZoneCrossings& crossings,
                         const PipelineResult& r) {
  const CriticalPath& path = r.critical_path;
  const std::pair<const char*, units::Seconds> parts[] = {
      {"compute", path.compute},     {"tp_comm", path.tp_comm},     {"cp_comm", path.cp_comm},
      {"ep_comm", path.ep_comm},     {"host", path.host},           {"pp_comm", path.pp_comm},
      {"dp_comm", path.dp_comm},     {"optimizer", path.optimizer}, {"pipeline_wait", path.pipeline_wait}};
  size_t top = 0;
  for (size_t i = 1; i < std::size(parts); ++i) {
    if (parts[i].second > parts[top].second) top = i;
  }
  Bottleneck b;
  b.part = parts[top].first;
  const double step = r.step_time.value();
  b.share = step > 0.0 ? parts[top].second.value() / step : 0.0;
  const size_t pipeline = r.stages.size();
  const int64_t t = par.tensor, tc = par.tensor * par.context, tcd = tc * par.data;
  const std::string zones = " and across availability zones";
  std::string what;
  if (b.part == "compute") {
    const double c = path.compute.value();
    const double gemm = c - path.attention.value() - path.memory_bound.value();
    what = "GPU compute";
    if (pipeline > 1) what += " on stage " + std::to_string(path.home_stage);
    if (c > 0.0) {
      // The kernels that make up compute, each shown when it is at least 0.5 % of it.
      std::string kinds;
      for (const auto& [name, t] : {std::pair<const char*, double>{"GEMMs", gemm},
                                    {"attention", path.attention.value()},
                                    {"memory-bound kernels", path.memory_bound.value()}}) {
        if (t < 0.005 * c) continue;
        kinds += printf_string("%s%s %.0f %%", kinds.empty() ? "" : ", ", name, 100.0 * t / c);
      }
      what += " (" + kinds + ")";
    }
  } else if (b.part == "tp_comm") {
    what = "tensor-parallel collectives on " + place_of(t, topology, vm) +
           (crossings.tensor_parallel ? zones : "") + on_stages(stages_with(r, &StageBreakdown::tp_comm), pipeline);
  } else if (b.part == "cp_comm") {
    what = "context-parallel K/V exchange on " + place_of(tc, topology, vm) +
           on_stages(stages_with(r, &StageBreakdown::cp_comm), pipeline);
  } else if (b.part == "ep_comm") {
    what = "expert dispatch/combine (all-to-all) on " + place_of(par.expert * par.expert_tensor, topology, vm) +
           on_stages(stages_with(r, &StageBreakdown::ep_comm), pipeline);
  } else if (b.part == "host") {
    what = "host (CPU) kernel issue, the GPU idle" + on_stages(stages_with(r, &StageBreakdown::host), pipeline);
  } else if (b.part == "pp_comm") {
    // Neighbouring stages are tensor x context x data ranks apart.
    what = "pipeline send/recv on " + place_of(tcd < vm.devices_per_vm ? tcd * par.pipeline : 2 * tcd, topology, vm) +
           (crossings.pipeline ? zones : "");
  } else if (b.part == "dp_comm") {
    what = "data-parallel gradient sync on " + place_of(tcd, topology, vm) + (crossings.data_parallel ? zones : "") +
           on_stages(stages_with(r, &StageBreakdown::grad_sync), pipeline);
  } else if (b.part == "optimizer") {
    what = "optimizer step" + (pipeline > 1 ? " (stage " + std::to_string(path.end_stage) + ")" : std::string());
  } else {
    std::vector<int64_t> waited;
    for (const StageWait& w : path.waits) waited.push_back(w.stage);
    what = "pipeline bubble: stage " + std::to_string(path.home_stage) + " waiting on " +
           (waited.size() == 1 ? "stage " : "stages ") + stage_ranges(waited) + " (fill, drain, imbalance)";
  }
  b.text = what + printf_string(", %.0f %% of the step", 100.0 * b.share) + near_pace_text(r, b.part);
  return b;
}

}  // namespace clustersim::sim
