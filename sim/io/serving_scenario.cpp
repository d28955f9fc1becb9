// A serving scenario's builder (serving_scenario_rules.hpp).
#include "sim/io/serving_scenario_rules.hpp"

#include <string>
#include <utility>

#include "sim/io/loader.hpp"
#include "sim/io/model_rules.hpp"

namespace clustersim::sim::detail {

ServingScenario build_serving_scenario(const Loader& l) {
  ServingScenario s;
  s.schema_version = l.get_int("schema_version");
  s.name = l.get_string("name");
  if (l.has("description")) s.description = l.get_string("description");
  s.model = model_keys(l);
  ServingFleetConfig& f = s.serving;
  f.vm_size = l.get_string("serving.vm_size");
  f.replicas = l.get_int("serving.replicas");
  f.tensor = l.get_int("serving.tensor");
  f.pipeline = l.get_int("serving.pipeline");
  f.expert_parallel = l.get_int("serving.expert_parallel");
  f.data_parallel_attention = l.get_bool("serving.data_parallel_attention");
  f.redundant_experts = l.get_int("serving.redundant_experts");
  f.precision = l.get_string("serving.precision");
  f.kv_cache_fp8 = l.get_string("serving.kv_cache_dtype") == "fp8";
  f.max_num_seqs = l.get_int("serving.max_num_seqs");
  f.max_num_batched_tokens = l.get_int("serving.max_num_batched_tokens");
  f.chunked_prefill = l.get_bool("serving.chunked_prefill");
  f.block_size = l.get_int("serving.block_size");
  f.gpu_memory_utilization = l.get_double("serving.gpu_memory_utilization");
  f.routing = l.get_string("serving.routing");
  f.prefix_caching = l.get_bool("serving.prefix_caching");
  f.engine = l.get_string("serving.engine");
  f.scheduler_steps = l.get_int("serving.scheduler_steps");
  f.capacity_scheduler_policy = l.get_string("serving.capacity_scheduler_policy");
  f.engine_overhead_ms = l.get_double("serving.engine_overhead_ms");
  f.engine_overhead_per_sequence_us = l.get_double("serving.engine_overhead_per_sequence_us");
  f.sample_interval_s = l.get_double("serving.sample_interval_s");
  f.vm_price_usd_per_hour = l.learned.serving_price;
  if (l.has("serving.min_replicas")) f.min_replicas = l.get_int("serving.min_replicas");
  if (l.has("serving.max_replicas")) f.max_replicas = l.get_int("serving.max_replicas");
  f.target_outstanding_per_replica = l.get_double("serving.target_outstanding_per_replica");
  f.autoscale_interval_s = l.get_double("serving.autoscale_interval_s");
  f.scale_down_window_s = l.get_double("serving.scale_down_window_s");
  f.provisioning_s = l.get_double("serving.provisioning_s");
  f.spot_replicas = l.get_int("serving.spot_replicas");
  f.spot_eviction_rate_per_hour = l.get_double("serving.spot_eviction_rate_per_hour");
  f.spot_reprovision_mean_s = l.get_double("serving.spot_reprovision_mean_s");
  f.spot_notice_s = l.get_double("serving.spot_notice_s");
  f.spot_discount = l.get_double("serving.spot_discount");
  f.zones = l.get_int("serving.zones");
  f.zone_outage_start_s = l.get_optional_double("serving.zone_outage_start_s");
  f.zone_outage_duration_s = l.get_optional_double("serving.zone_outage_duration_s");
  if (l.has("serving.prefill_replicas")) f.prefill_replicas = l.get_int("serving.prefill_replicas");
  f.prefill_vm_size = l.has("serving.prefill_vm_size") ? l.get_string("serving.prefill_vm_size") : f.vm_size;
  f.prefill_tensor = l.has("serving.prefill_tensor") ? l.get_int("serving.prefill_tensor") : f.tensor;
  f.prefill_max_num_seqs = l.has("serving.prefill_max_num_seqs") ? l.get_int("serving.prefill_max_num_seqs")
                                                                  : f.max_num_seqs;
  f.prefill_max_num_batched_tokens = l.has("serving.prefill_max_num_batched_tokens")
                                         ? l.get_int("serving.prefill_max_num_batched_tokens")
                                         : f.max_num_batched_tokens;
  f.prefill_vm_price_usd_per_hour = l.learned.serving_prefill_price;
  if (l.has("serving.speculative_method")) {
    SpeculativeConfig& c = f.speculative.emplace();
    c.method = l.get_string("serving.speculative_method");
    c.tokens = l.get_int("serving.speculative_tokens");
    if (l.has("serving.speculative_acceptance")) c.acceptance = l.get_double("serving.speculative_acceptance");
    if (l.has("serving.speculative_acceptance_by_position")) {
      for (const toml::node& a : *l.resolved_node("serving.speculative_acceptance_by_position")->as_array()) {
        c.acceptance_by_position.push_back(*a.value<double>());
      }
    }
    if (l.has("serving.draft_layers")) c.layers = l.get_int("serving.draft_layers");
    if (c.method == "draft") {
      c.hidden_size = l.get_int("serving.draft_hidden_size");
      c.num_attention_heads = l.get_int("serving.draft_num_attention_heads");
      c.num_query_groups = l.has("serving.draft_num_query_groups") ? l.get_int("serving.draft_num_query_groups")
                                                                    : c.num_attention_heads;
      c.ffn_hidden_size = l.get_int("serving.draft_ffn_hidden_size");
    }
  }
  WorkloadConfig& w = s.workload;
  if (l.has("workload.trace")) w.trace = l.path().parent_path() / l.get_string("workload.trace");
  w.duration_s = l.get_double("workload.duration_s");
  w.duration_given = l.find_node("workload", "duration_s") != nullptr;
  w.arrival = l.get_string("workload.arrival");
  if (l.has("workload.rate_per_s")) w.rate_per_s = l.get_double("workload.rate_per_s");
  w.arrival_cv = l.get_double("workload.arrival_cv");
  if (l.has("workload.requests")) w.requests = l.get_int("workload.requests");
  if (l.has("workload.concurrency")) w.concurrency = l.get_int("workload.concurrency");
  for (auto [which, length] :
       {std::pair{std::string("prompt"), &w.prompt}, std::pair{std::string("output"), &w.output}}) {
    const LengthKeys k = length_keys(l, which);
    *length = LengthConfig{k.kind, k.tokens, k.min, k.max, k.sigma};
  }
  w.system_prompt_tokens = l.get_int("workload.system_prompt_tokens");
  w.system_prompt_share = l.get_double("workload.system_prompt_share");
  w.system_prompts = l.get_int("workload.system_prompts");
  w.turns = l.get_int("workload.turns");
  w.think_time_s = l.get_double("workload.think_time_s");
  s.slo.ttft_p99_ms = l.get_optional_double("slo.ttft_p99_ms");
  s.slo.tpot_p99_ms = l.get_optional_double("slo.tpot_p99_ms");
  if (l.resolved_table("reference") != nullptr) {
    ServingReference r;
    r.metric = l.get_string("reference.metric");
    r.value = l.get_double("reference.value");
    r.source = l.get_string("reference.source");
    if (l.has("reference.dataset")) r.dataset = l.get_string("reference.dataset");
    if (l.has("reference.exclude_reason")) r.exclude_reason = l.get_string("reference.exclude_reason");
    s.reference = r;
  }
  s.seed = static_cast<uint64_t>(l.get_int("simulation.seed"));
  s.source_path = l.path();
  s.resolved_toml = l.resolved_text();
  s.overrides = l.set_options();
  return s;
}

}  // namespace clustersim::sim::detail
