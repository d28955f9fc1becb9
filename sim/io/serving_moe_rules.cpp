#include "sim/io/serving_moe_rules.hpp"

#include <cstdint>
#include <string>

#include "sim/io/loader.hpp"

namespace clustersim::sim::detail {

void check_expert_parallel(Loader& l, const models::VmSize& vm) {
  const int64_t ep = l.get_int("serving.expert_parallel");
  const bool dp = l.get_bool("serving.data_parallel_attention");
  const int64_t redundant = l.get_int("serving.redundant_experts");
  const int64_t t = l.get_int("serving.tensor");
  if (dp && ep < 2) l.fail_at("serving.data_parallel_attention", "needs serving.expert_parallel > 1");
  if (redundant > 0 && ep < 2) l.fail_at("serving.redundant_experts", "needs serving.expert_parallel > 1");
  if (ep < 2) return;
  const int64_t experts = l.get_int("model.num_experts");
  if (experts == 0) l.fail_at("serving.expert_parallel", "needs an MoE model (model.num_experts > 0)");
  if ((experts + redundant) % ep != 0) {
    l.fail_at("serving.expert_parallel", "must divide model.num_experts + serving.redundant_experts (" +
                                             std::to_string(experts + redundant) + "), got " + std::to_string(ep));
  }
  if (l.get_int("serving.pipeline") > 1) {
    l.fail_at("serving.expert_parallel", "not modelled with serving.pipeline > 1");
  }
  if (dp && t != 1) {
    l.fail_at("serving.tensor", "must be 1 with serving.data_parallel_attention (each GPU runs attention whole on "
                                "its share of the batch), got " + std::to_string(t));
  }
  if (!dp && t != ep) {
    l.fail_at("serving.expert_parallel", "must equal serving.tensor (" + std::to_string(t) +
                                             ") with tensor-parallel attention, or set "
                                             "serving.data_parallel_attention = true; got " + std::to_string(ep));
  }
  const int64_t per_vm = vm.devices_per_vm;
  if (ep > per_vm ? ep % per_vm != 0 : per_vm % ep != 0) {
    l.fail_at("serving.expert_parallel", "a replica fills whole " + vm.name + " VMs of " + std::to_string(per_vm) +
                                             " GPUs (a multiple of " + std::to_string(per_vm) +
                                             ", or a divisor inside one), got " + std::to_string(ep));
  }
  const int64_t vms = (ep + per_vm - 1) / per_vm;
  if (vms > vm.nvlink_domain_vms && vm.infiniband_ports == 0) {
    l.fail_at("serving.expert_parallel", "spans " + std::to_string(vms) + " " + vm.name +
                                             " VMs, which have no InfiniBand for DeepEP's all-to-alls");
  }
}

models::ExpertParallelServing expert_parallel_keys(const Loader& l) {
  models::ExpertParallelServing ep;
  ep.ranks = l.get_int("serving.expert_parallel");
  ep.data_parallel_attention = l.get_bool("serving.data_parallel_attention");
  ep.redundant_experts = l.get_int("serving.redundant_experts");
  return ep;
}

}  // namespace clustersim::sim::detail
