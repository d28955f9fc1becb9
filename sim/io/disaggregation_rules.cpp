// Split prefill and decode pools' rules (disaggregation_rules.hpp).
#include "sim/io/disaggregation_rules.hpp"

#include <string>

#include "models/hardware/catalog.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/io/cluster_rules.hpp"
#include "sim/io/loader.hpp"
#include "sim/io/model_rules.hpp"

namespace clustersim::sim::detail {
namespace {

constexpr const char* kPrefillKeys[] = {"serving.prefill_vm_size", "serving.prefill_tensor",
                                        "serving.prefill_max_num_seqs", "serving.prefill_max_num_batched_tokens"};

/// A prefill replica's tensor-parallel GPUs against the model and its VM size (as serving.tensor's rules).
void check_prefill_layout(Loader& l, const models::VmSize& vm, int64_t t, const std::string& key) {
  const auto fail_unless_divides = [&](const char* width) {
    const int64_t w = l.get_int(width);
    if (w % t != 0) {
      l.fail_at(key, "must divide " + std::string(width) + " (" + std::to_string(w) + "), got " + std::to_string(t));
    }
  };
  fail_unless_divides("model.num_attention_heads");
  fail_unless_divides("model.ffn_hidden_size");
  const int64_t groups = l.get_int("model.num_query_groups");
  if (groups % t != 0 && t % groups != 0) {
    l.fail_at(key, "must divide, or be a multiple of, model.num_query_groups (" + std::to_string(groups) + "), got " +
                       std::to_string(t));
  }
  if (l.get_int("model.num_experts") > 0) {
    fail_unless_divides("model.moe_ffn_hidden_size");
    fail_unless_divides("model.moe_shared_expert_intermediate_size");
  }
  const int64_t domain = vm.domain_gpus(vm.nvlink_domain_vms, std::nullopt);
  if (t > domain) {
    l.fail_at(key, "a prefill replica's tensor-parallel GPUs share one NVLink domain: at most " +
                       std::to_string(domain) + " on " + vm.name + ", got " + std::to_string(t));
  }
}

}  // namespace

void check_disaggregation(Loader& l, const models::Catalog& catalog, std::optional<int64_t> longest_prompt_tokens) {
  // serving.prefill_replicas = 0 says "co-located" (a sweep's switch): the other prefill keys are then unused.
  const bool split = l.has("serving.prefill_replicas") && l.get_int("serving.prefill_replicas") > 0;
  if (!split && l.has("serving.prefill_replicas")) return;
  if (!split) {
    for (const char* k : kPrefillKeys) {
      if (l.has(k)) l.fail_at(k, "describes the prefill pool of split pools: give serving.prefill_replicas >= 1");
    }
    return;
  }
  const char* at = "serving.prefill_replicas";
  if (l.get_int("serving.pipeline") > 1) l.fail_at(at, "split pools with serving.pipeline > 1 are not modelled");
  for (const char* k : {"serving.min_replicas", "serving.max_replicas", "serving.zone_outage_start_s"}) {
    if (l.has(k)) l.fail_at(k, "not modelled with split pools (serving.prefill_replicas)");
  }
  if (l.get_int("serving.spot_replicas") > 0) {
    l.fail_at("serving.spot_replicas", "not modelled with split pools (serving.prefill_replicas)");
  }
  if (l.get_bool("serving.prefix_caching")) {
    l.fail_at("serving.prefix_caching", "not modelled with split pools (serving.prefill_replicas)");
  }
  if (l.has("serving.speculative_method")) {
    l.fail_at("serving.speculative_method", "not modelled with split pools (serving.prefill_replicas)");
  }
  if (l.get_int("serving.expert_parallel") > 1) {
    l.fail_at("serving.expert_parallel", "not modelled with split pools (serving.prefill_replicas)");
  }
  const models::VmSize& decode_vm = vm_size_of(l, "serving.vm_size", catalog);
  const bool own_vm = l.has("serving.prefill_vm_size");
  const models::VmSize& vm = own_vm ? vm_size_of(l, "serving.prefill_vm_size", catalog) : decode_vm;
  const std::string vm_key = own_vm ? "serving.prefill_vm_size" : at;
  const models::DeviceSpec& device = catalog.device(vm.device);
  for (const models::VmSize* v : {&decode_vm, &vm}) {
    if (v->infiniband_ports == 0) {
      l.fail_at(v == &vm ? vm_key : std::string("serving.vm_size"),
                "split pools move each request's KV cache over InfiniBand, and " + v->name + " has none");
    }
  }
  const bool own_tensor = l.has("serving.prefill_tensor");
  const int64_t t = own_tensor ? l.get_int("serving.prefill_tensor") : l.get_int("serving.tensor");
  const std::string tensor_key = own_tensor ? "serving.prefill_tensor" : vm_key;
  check_prefill_layout(l, vm, t, tensor_key);
  const models::ServingNumerics numerics =
      models::serving_numerics(l.get_string("serving.precision"), l.get_string("serving.kv_cache_dtype") == "fp8");
  for (const models::Precision math : {numerics.math, numerics.activations()}) {
    const auto peak = device.peak.find(math);
    if (peak == device.peak.end() || !(peak->second.value() > 0.0)) {
      l.fail_at(vm_key, "the " + vm.device + " of " + vm.name + " has no " + std::string(models::to_string(math)) +
                            " math (serving.precision = \"" + l.get_string("serving.precision") + "\")");
    }
  }
  const int64_t tokens = l.has("serving.prefill_max_num_batched_tokens")
                             ? l.get_int("serving.prefill_max_num_batched_tokens")
                             : l.get_int("serving.max_num_batched_tokens");
  const int64_t seqs =
      l.has("serving.prefill_max_num_seqs") ? l.get_int("serving.prefill_max_num_seqs") : l.get_int("serving.max_num_seqs");
  const auto free_comm = [](units::Bytes) { return units::Seconds(0.0); };
  const models::InferenceModel model(model_keys(l), numerics, t, device, vm.device_share, free_comm, {});
  if (model.kv_cache_tokens(models::kv_cache_budget(l.get_string("serving.engine"),
                                                    l.get_double("serving.gpu_memory_utilization"), tokens, seqs,
                                                    l.get_int("serving.block_size"))) < l.get_int("serving.block_size")) {
    l.fail_at(tensor_key, "a prefill replica's weights at tensor " + std::to_string(t) + " leave no KV cache on the " +
                              vm.device + ": raise serving.prefill_tensor or choose a larger GPU");
  }
  if (!l.get_bool("serving.chunked_prefill") && longest_prompt_tokens && *longest_prompt_tokens > tokens) {
    l.fail_at(l.has("serving.prefill_max_num_batched_tokens") ? "serving.prefill_max_num_batched_tokens"
                                                               : "serving.max_num_batched_tokens",
              "the longest prompt (" + std::to_string(*longest_prompt_tokens) +
                  " tokens) exceeds a prefill engine's batch, and chunked prefill is off");
  }
  l.learned.serving_prefill_price = vm.price_usd_per_hour;
}

}  // namespace clustersim::sim::detail
