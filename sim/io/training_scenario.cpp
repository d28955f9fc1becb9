// A training scenario: its rules in order and its builder (training_scenario.hpp).
#include "sim/io/training_scenario.hpp"

#include <cmath>
#include <string>

#include "models/hardware/catalog.hpp"
#include "sim/io/cluster_rules.hpp"
#include "sim/io/job_rules.hpp"
#include "sim/io/loader.hpp"
#include "sim/io/model_rules.hpp"
#include "sim/io/reference_rules.hpp"
#include "sim/io/training_rules.hpp"

namespace clustersim::sim::detail {

void check_training_scenario(Loader& l, const models::Catalog& catalog) {
  set_grad_reduce_default(l);
  check_tp_comm_overlap(l);
  check_model_shape(l);
  check_model_framework(l);
  check_training_reference(l);
  check_parallelism_shape(l);
  check_training_on_cluster(l, check_cluster(l, catalog), catalog);
  check_job(l, catalog);
  check_variability(l);
}

Scenario build_training_scenario(const Loader& l, bool resolved_text) {
  Scenario s;
  s.schema_version = l.get_int("schema_version");
  s.name = l.get_string("name");
  s.description = l.get_string("description");
  s.model = model_keys(l);
  for (const char* key : {"training.global_batch_size", "network.all_reduce_algorithm", "job.replications"}) {
    const Loc at = l.loc_of(key);
    s.locations[key] = {at.file, at.line, at.column};
  }
  s.training.moe_token_dispatcher = *models::parse_moe_dispatcher(l.get_string("training.moe_token_dispatcher"));
  s.training.moe_router_load_balancing = *models::parse_moe_balance(l.get_string("training.moe_router_load_balancing"));
  s.training.moe_expert_capacity_factor = l.get_double("training.moe_expert_capacity_factor");
  s.training.moe_pad_expert_input_to_capacity = l.get_bool("training.moe_pad_expert_input_to_capacity");
  s.training.moe_router_fusion = l.get_bool("training.moe_router_fusion");
  s.training.moe_grouped_gemm = l.get_bool("training.moe_grouped_gemm");
  s.training.moe_shared_expert_overlap = l.get_bool("training.moe_shared_expert_overlap");
  s.training.moe_a2a_overlap = l.get_bool("training.moe_a2a_overlap");
  s.training.global_batch_size = l.get_int("training.global_batch_size");
  s.training.micro_batch_size = l.get_int("training.micro_batch_size");
  s.training.precision = *models::parse_precision(l.get_string("training.precision"));
  s.training.activation_recompute = *models::parse_recompute(l.get_string("training.activation_recompute"));
  s.training.flash_attention = l.get_bool("training.flash_attention");
  s.training.attention_kernel = *models::parse_attention_kernel(l.get_string("training.attention_kernel"));
  s.training.gradient_accumulation_fusion = l.get_bool("training.gradient_accumulation_fusion");
  s.training.kernel_fusion = *models::parse_kernel_fusion(l.get_string("training.kernel_fusion"));
  s.training.framework = *models::parse_framework(l.get_string("training.framework"));
  s.training.grad_reduce = *models::parse_precision(l.get_string("training.grad_reduce_dtype"));
  if (l.has("training.recompute_num_layers"))
    s.training.recompute_num_layers = l.get_int("training.recompute_num_layers");
  s.training.recompute_modules = 0;
  for (const toml::node& module : *l.resolved_node("training.recompute_modules")->as_array()) {
    s.training.recompute_modules |= static_cast<uint32_t>(*models::parse_recompute_module(module.as_string()->get()));
  }
  for (const toml::node& name : *l.resolved_node("analysis.what_if")->as_array()) {
    s.what_if.push_back(std::string(name.as_string()->get()));
  }
  s.parallelism = layout_keys(l);
  s.schedule = *models::parse_pipeline_schedule(l.get_string("parallelism.schedule"));
  s.cluster.vm_size = l.get_string("cluster.vm_size");
  s.cluster.nodes = l.get_int("cluster.nodes");
  s.cluster.vm_price_usd_per_hour = l.has("cost.vm_price_usd_per_hour")
                                        ? l.get_optional_double("cost.vm_price_usd_per_hour")
                                        : l.learned.catalog_price;
  s.cluster.fabric = *models::parse_fabric_kind(l.get_string("cluster.fabric"));
  s.cluster.oversubscription = l.get_double("cluster.oversubscription");
  s.cluster.fat_tree_radix = l.get_int("cluster.fat_tree_radix");
  if (l.has("cluster.vms_per_nvlink_domain")) {
    s.cluster.vms_per_nvlink_domain = l.get_int("cluster.vms_per_nvlink_domain");
  }
  s.cluster.inter_zone_latency = units::milliseconds(l.get_double("cluster.inter_zone_latency_ms"));
  if (const auto gbps = l.get_optional_double("cluster.inter_zone_bandwidth_gbps")) {
    s.cluster.inter_zone_bandwidth_per_node = units::to_bytes_per_second(units::gigabits_per_second(*gbps));
  }
  if (l.has("cluster.zones")) {
    for (const toml::node& z : *l.resolved_node("cluster.zones")->as_array()) {
      const toml::table& zone = *z.as_table();
      s.cluster.zones.push_back({zone.get("name")->as_string()->get(), zone.get("nodes")->as_integer()->get()});
    }
  }
  if (const std::string algorithm = l.get_string("network.all_reduce_algorithm"); algorithm != "auto") {
    s.network.all_reduce_algorithm = models::parse_collective_algorithm(algorithm);
  }
  if (l.resolved_table("reference") != nullptr) {
    ReferenceConfig r;
    r.tflops_per_gpu = l.get_optional_double("reference.tflops_per_gpu");
    r.step_time_s = l.get_optional_double("reference.step_time_s");
    r.tokens_per_s_per_gpu = l.get_optional_double("reference.tokens_per_s_per_gpu");
    r.mfu = l.get_optional_double("reference.mfu");
    r.source = l.get_string("reference.source");
    if (l.has("reference.dataset")) r.dataset = l.get_string("reference.dataset");
    if (l.has("reference.exclude_reason")) r.exclude_reason = l.get_string("reference.exclude_reason");
    s.reference = r;
  }
  if (l.resolved_table("job") != nullptr) {
    JobConfig j;
    if (l.has("job.steps")) {
      j.steps = l.get_int("job.steps");
    } else {
      const double tokens_per_step =
          static_cast<double>(s.training.global_batch_size) * static_cast<double>(s.model.seq_length);
      j.steps = static_cast<int64_t>(std::ceil(l.get_double("job.train_tokens") / tokens_per_step));
    }
    j.replications = l.get_int("job.replications");
    j.spot = l.get_bool("reliability.spot");
    j.spot_eviction_rate_per_hour = l.get_double("reliability.spot_eviction_rate_per_hour");
    j.eviction_trace = l.learned.eviction_trace;
    j.failure_rate_per_gpu_day = l.get_double("reliability.failure_rate_per_gpu_day");
    if (const auto m = l.get_optional_double("reliability.checkpoint_interval_minutes")) {
      j.checkpoint_every = units::minutes(*m);
    }
    if (l.has("reliability.checkpoint_interval_steps")) {
      j.checkpoint_every_steps = l.get_int("reliability.checkpoint_interval_steps");
    }
    if (const auto gb = l.get_optional_double("reliability.checkpoint_size_gb"))
      j.checkpoint_size = units::gigabytes(*gb);
    const bool nvme = l.get_string("reliability.checkpoint_storage") == "local_nvme";
    const double vms = static_cast<double>(s.cluster.nodes);
    // local_nvme: 28 GB/s per VM (Azure ND H100 v5 NVMe, shared/validation/reliability.md); parallel_fs:
    // 273 GB/s write and about 1 TB/s read (Megatron SC'21, the same file).
    const double write_gbps =
        l.get_optional_double("reliability.checkpoint_write_gb_per_s").value_or(nvme ? 28.0 * vms : 273.0);
    const double read_gbps =
        l.get_optional_double("reliability.checkpoint_read_gb_per_s").value_or(nvme ? 28.0 * vms : 1000.0);
    j.checkpoint_write = units::gigabytes_per_second(write_gbps);
    j.checkpoint_read = units::gigabytes_per_second(read_gbps);
    j.checkpoint_async = l.get_bool("reliability.checkpoint_async");
    j.detection = units::seconds(l.get_double("reliability.detection_time_s"));
    j.reprovision = units::seconds(l.get_double("reliability.reprovision_time_s"));
    j.spot_reprovision_mean = units::seconds(l.get_double("reliability.spot_reprovision_mean_s"));
    j.restart = units::seconds(l.get_double("reliability.restart_time_s"));
    j.vm_price_usd_per_hour = l.get_double("cost.vm_price_usd_per_hour");
    j.spot_discount = l.get_double("cost.spot_discount");
    j.storage_usd_per_gb_month = l.get_double("cost.storage_usd_per_gb_month");
    j.egress_usd_per_gb = l.get_double("cost.egress_usd_per_gb");
    s.job = j;
  }
  s.simulation.seed = static_cast<uint64_t>(l.get_int("simulation.seed"));
  s.simulation.fidelity = l.get_string("simulation.fidelity") == "full" ? Fidelity::full : Fidelity::replica;
  s.simulation.variability = variability_spec(l);
  s.source_path = l.path();
  if (resolved_text) s.resolved_toml = l.resolved_text();
  s.overrides = l.set_options();
  return s;
}

}  // namespace clustersim::sim::detail
