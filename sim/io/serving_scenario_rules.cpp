// A serving scenario's rules: [serving], [workload] and [slo] (serving_scenario_rules.hpp).
#include "sim/io/serving_scenario_rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "models/hardware/catalog.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/io/cluster_rules.hpp"
#include "sim/io/disaggregation_rules.hpp"
#include "sim/io/loader.hpp"
#include "sim/io/model_rules.hpp"
#include "sim/io/reference_rules.hpp"
#include "sim/io/serving_moe_rules.hpp"
#include "sim/io/serving_rules.hpp"

namespace clustersim::sim::detail {

LengthKeys length_keys(const Loader& l, const std::string& which) {
  const std::string key = "workload." + which;
  LengthKeys k{l.get_string(key), l.get_int(key + "_tokens"), std::nullopt, std::nullopt, l.get_double(key + "_sigma")};
  if (l.has(key + "_min")) k.min = l.get_int(key + "_min");
  if (l.has(key + "_max")) k.max = l.get_int(key + "_max");
  return k;
}

namespace {

/// Reports a rule's violation at its key (its table's header when the key is missing).
void report(const Loader& l, const std::optional<KeyViolation>& v) {
  if (v && v->at_table) l.fail(v->key, l.table_loc(v->key.substr(0, v->key.find('.'))), v->message);
  if (v) l.fail_at(v->key, v->message);
}

/// A replica's layout against the model and the VM size: tensor divides the heads and the MLP widths (the
/// experts' too) and divides or is a multiple of the key/value heads; the pipeline's stages at most the layers,
/// its tensor-parallel groups within a VM, none of the features not modelled with it; the tensor-parallel GPUs
/// within one NVLink domain.
void check_replica_layout(Loader& l, const models::VmSize& vm) {
  const int64_t t = l.get_int("serving.tensor");
  const int64_t heads = l.get_int("model.num_attention_heads"), groups = l.get_int("model.num_query_groups");
  if (heads % t != 0) {
    l.fail_at("serving.tensor",
              "must divide model.num_attention_heads (" + std::to_string(heads) + "), got " + std::to_string(t));
  }
  if (groups % t != 0 && t % groups != 0) {
    l.fail_at("serving.tensor", "must divide, or be a multiple of, model.num_query_groups (" + std::to_string(groups) +
                                    "), got " + std::to_string(t));
  }
  if (l.get_int("model.ffn_hidden_size") % t != 0) {
    l.fail_at("serving.tensor", "must divide model.ffn_hidden_size (" +
                                    std::to_string(l.get_int("model.ffn_hidden_size")) + "), got " + std::to_string(t));
  }
  if (l.get_int("model.num_experts") > 0) {
    // Tensor-parallel experts: each expert's MLP (and the shared expert's) is split t ways.
    // Expert parallelism holds whole experts: only the shared expert is split.
    const bool whole_experts = l.get_int("serving.expert_parallel") > 1;
    for (const char* k : {"model.moe_ffn_hidden_size", "model.moe_shared_expert_intermediate_size"}) {
      if (whole_experts && std::string(k) == "model.moe_ffn_hidden_size") continue;
      if (l.get_int(k) % t != 0) {
        l.fail_at("serving.tensor", "must divide " + std::string(k) + " (" + std::to_string(l.get_int(k)) +
                                        "): a replica splits each expert over its tensor-parallel GPUs, got " +
                                        std::to_string(t));
      }
    }
  }
  const int64_t stages = l.get_int("serving.pipeline");
  if (stages > 1) {
    if (stages > l.get_int("model.num_layers")) {
      l.fail_at("serving.pipeline", "must not exceed model.num_layers (" +
                                        std::to_string(l.get_int("model.num_layers")) + "), got " +
                                        std::to_string(stages));
    }
    if (t * stages > vm.devices_per_vm && vm.devices_per_vm % t != 0) {
      l.fail_at("serving.pipeline", "the replica's " + std::to_string(t * stages) + " GPUs span VMs of " +
                                        std::to_string(vm.devices_per_vm) + " GPUs, and a tensor-parallel group of " +
                                        std::to_string(t) + " would straddle two: use a tensor that divides " +
                                        std::to_string(vm.devices_per_vm));
    }
    for (const char* k : {"serving.min_replicas", "serving.zone_outage_start_s"}) {
      if (l.has(k)) l.fail_at(k, "not modelled with serving.pipeline > 1 yet");
    }
    if (l.get_int("serving.spot_replicas") > 0) {
      l.fail_at("serving.spot_replicas", "not modelled with serving.pipeline > 1 yet");
    }
  }
  // At most a whole domain: a replica takes ceil(tensor / GPUs per VM) VMs of one rack, whatever the rest of
  // the rack runs (serving has no cluster.vms_per_nvlink_domain).
  const int64_t domain = vm.domain_gpus(vm.nvlink_domain_vms, std::nullopt);
  if (t > domain) {
    l.fail_at("serving.tensor", "a replica's tensor-parallel GPUs share one NVLink domain: at most " +
                                    std::to_string(domain) + " on " + vm.name + ", got " + std::to_string(t));
  }
}

/// The device has the math of serving.precision (and of its activations). Returns the numerics.
models::ServingNumerics check_serving_precision(Loader& l, const models::VmSize& vm, const models::DeviceSpec& device) {
  const std::string precision = l.get_string("serving.precision");
  const models::ServingNumerics numerics =
      models::serving_numerics(precision, l.get_string("serving.kv_cache_dtype") == "fp8");
  for (const models::Precision math : {numerics.math, numerics.activations()}) {
    const auto peak = device.peak.find(math);
    if (peak == device.peak.end() || !(peak->second.value() > 0.0)) {
      l.fail_at("serving.precision", "the " + vm.device + " of " + vm.name + " has no " +
                                         std::string(models::to_string(math)) + " math (serving.precision = \"" +
                                         precision + "\")");
    }
  }
  return numerics;
}

/// serving.precision = "fp4" needs FP4 tensor cores (DeviceSpec::peak_fp4: Blackwell).
void check_fp4(const Loader& l, const models::VmSize& vm, const models::DeviceSpec& device) {
  if (l.get_string("serving.precision") == "fp4" && !device.peak_fp4) {
    l.fail_at("serving.precision", "the " + vm.device + " of " + vm.name +
                                       " has no FP4 tensor cores (NVFP4 needs Blackwell: GB200, GB300); use fp8");
  }
}

/// Speculative decoding's keys (models/serving/speculative.hpp): the others need serving.speculative_method; the
/// method needs k and the acceptance; a draft model its shape, which serving.tensor must split; EAGLE heads and MTP
/// modules take the model's width; not with multi-step scheduling or pipeline stages.
void check_speculative(const Loader& l) {
  constexpr const char* kShape[] = {"serving.draft_hidden_size", "serving.draft_num_attention_heads",
                                    "serving.draft_num_query_groups", "serving.draft_ffn_hidden_size"};
  if (!l.has("serving.speculative_method")) {
    for (const char* k : {"serving.speculative_tokens", "serving.speculative_acceptance",
                          "serving.speculative_acceptance_by_position", "serving.draft_layers", kShape[0], kShape[1],
                          kShape[2], kShape[3]}) {
      if (l.has(k)) l.fail_at(k, "needs serving.speculative_method (draft, eagle or mtp)");
    }
    return;
  }
  const std::string method = l.get_string("serving.speculative_method");
  if (!l.has("serving.speculative_tokens")) {
    l.fail("serving.speculative_tokens", l.table_loc("serving"), "required with serving.speculative_method");
  }
  const bool rate = l.has("serving.speculative_acceptance");
  const bool by_position = l.has("serving.speculative_acceptance_by_position");
  if (rate == by_position) {
    if (rate) {
      l.fail_at("serving.speculative_acceptance_by_position", "give one rate or the rates by position, not both");
    }
    l.fail("serving.speculative_acceptance", l.table_loc("serving"),
           "required with serving.speculative_method (or serving.speculative_acceptance_by_position)");
  }
  if (by_position) {
    const auto given = static_cast<int64_t>(l.resolved_node("serving.speculative_acceptance_by_position")->as_array()->size());
    if (given != l.get_int("serving.speculative_tokens")) {
      l.fail_at("serving.speculative_acceptance_by_position",
                "needs one rate per drafted position: serving.speculative_tokens = " +
                    std::to_string(l.get_int("serving.speculative_tokens")) + ", got " + std::to_string(given));
    }
  }
  if (l.get_int("serving.scheduler_steps") > 1) {
    l.fail_at("serving.scheduler_steps", "multi-step scheduling does not run with speculative decoding (vLLM "
                                         "rejects --num-scheduler-steps with a speculative model)");
  }
  if (l.get_int("serving.pipeline") > 1) {
    l.fail_at("serving.speculative_method", "speculative decoding is modelled without pipeline stages "
                                            "(serving.pipeline = 1)");
  }
  if (method != "draft") {
    for (const char* k : kShape) {
      if (l.has(k)) l.fail_at(k, method + " heads take the model's width and heads: drop this key");
    }
    return;
  }
  for (const char* k : {"serving.draft_layers", kShape[0], kShape[1], kShape[3]}) {
    if (!l.has(k)) l.fail(k, l.table_loc("serving"), "required with serving.speculative_method = \"draft\"");
  }
  const int64_t t = l.get_int("serving.tensor"), heads = l.get_int("serving.draft_num_attention_heads");
  const int64_t groups = l.has(kShape[2]) ? l.get_int(kShape[2]) : heads;
  if (heads % t != 0) {
    l.fail_at(kShape[1], "serving.tensor (" + std::to_string(t) + ") must divide it, got " + std::to_string(heads));
  }
  if (l.has(kShape[2]) && (heads % groups != 0 || (groups % t != 0 && t % groups != 0))) {
    l.fail_at(kShape[2], "must divide draft_num_attention_heads and be a multiple or a divisor of serving.tensor (" +
                             std::to_string(t) + "), got " + std::to_string(groups));
  }
  if (l.get_int(kShape[0]) % heads != 0) {
    l.fail_at(kShape[0], "must be a multiple of draft_num_attention_heads (" + std::to_string(heads) + "), got " +
                             std::to_string(l.get_int(kShape[0])));
  }
  if (l.get_int(kShape[3]) % t != 0) {
    l.fail_at(kShape[3], "serving.tensor (" + std::to_string(t) + ") must divide it, got " +
                             std::to_string(l.get_int(kShape[3])));
  }
}

/// [workload]'s arrival keys: a trace or a synthetic stream's rate (poisson, gamma) or requests (offline,
/// closed_loop); a closed loop's concurrency.
void check_workload_arrival(Loader& l) {
  const bool trace = l.has("workload.trace");
  const std::string arrival = l.get_string("workload.arrival");
  const bool rated = arrival == "poisson" || arrival == "gamma";
  if (trace) {
    for (const char* k : {"workload.rate_per_s", "workload.requests", "workload.concurrency"}) {
      if (l.has(k)) l.fail_at(k, "a trace gives the requests: drop workload.trace or this key");
    }
  } else if (rated && !l.has("workload.rate_per_s")) {
    l.fail("workload.rate_per_s", l.table_loc("workload"),
           "give workload.trace, or a synthetic stream's rate_per_s (arrival = \"" + arrival + "\")");
  } else if (!rated) {
    if (l.has("workload.rate_per_s")) {
      l.fail_at("workload.rate_per_s", "arrival = \"" + arrival + "\" takes no rate: the requests are sent " +
                                           (arrival == "offline" ? "at once" : "as earlier ones finish"));
    }
    if (!l.has("workload.requests")) {
      l.fail("workload.requests", l.table_loc("workload"), "required with arrival = \"" + arrival + "\"");
    }
  }
  if (arrival == "closed_loop" && !l.has("workload.concurrency")) {
    l.fail("workload.concurrency", l.table_loc("workload"), "required with arrival = \"closed_loop\"");
  }
  if (arrival != "closed_loop" && l.has("workload.concurrency")) {
    l.fail_at("workload.concurrency", "only a closed loop (arrival = \"closed_loop\") has a concurrency");
  }
}

/// The weights must leave a KV cache (InferenceModel::kv_cache_tokens, vLLM's memory profile).
void check_kv_cache(Loader& l, const models::VmSize& vm, const models::DeviceSpec& device,
                    const models::ServingNumerics& numerics) {
  const int64_t t = l.get_int("serving.tensor");
  const int64_t stages = l.get_int("serving.pipeline");
  const auto free_comm = [](units::Bytes) { return units::Seconds(0.0); };
  const models::InferenceModel model(model_keys(l), numerics, t, device, vm.device_share, free_comm, {},
                                     {stages, free_comm}, {}, expert_parallel_keys(l));
  if (model.kv_cache_tokens(
          models::kv_cache_budget(l.get_string("serving.engine"), l.get_double("serving.gpu_memory_utilization"),
                                  l.get_int("serving.max_num_batched_tokens"), l.get_int("serving.max_num_seqs"),
                                  l.get_int("serving.block_size"))) /
          stages <
      l.get_int("serving.block_size")) {
    l.fail_at("serving.tensor",
              "the weights (" +
                  std::to_string(static_cast<int64_t>(model.weight_bytes_per_gpu().value() / 1073741824.0 + 0.5)) +
                  " GiB per GPU at tensor " + std::to_string(t) +
                  (stages > 1 ? " x pipeline " + std::to_string(stages) : std::string()) +
                  ") leave no KV cache on the " + vm.device +
                  ": raise serving.tensor (or serving.pipeline) or gpu_memory_utilization, or "
                  "choose a larger GPU");
  }
}

/// The simulation's budgets of a synthetic stream (requests, output tokens) and of the samples over `window_s`.
void check_workload_budgets(Loader& l, double window_s) {
  const bool trace = l.has("workload.trace");
  const std::string arrival = l.get_string("workload.arrival");
  const bool rated = arrival == "poisson" || arrival == "gamma";
  // The simulation's budget: at most 2 million requests and 200 million output tokens (each about 10 s of one
  // core: bench_serving simulates 360,518 requests of 264 output tokens on average in 2.5-3.8 s), and 1 million
  // samples of the time series over the workload's duration.
  if (!trace) {
    const double requests = l.has("workload.requests")
                                ? static_cast<double>(l.get_int("workload.requests"))
                                : l.get_double("workload.rate_per_s") * l.get_double("workload.duration_s");
    if (requests > 2e6) {
      l.fail_at("workload.rate_per_s", "rate x duration = " + std::to_string(static_cast<int64_t>(requests)) +
                                           " requests, above the simulation's budget of 2,000,000");
    }
    const std::string kind = l.get_string("workload.output");
    const double seq = static_cast<double>(l.get_int("model.seq_length"));
    double mean_output = static_cast<double>(l.get_int("workload.output_tokens"));
    if (kind == "uniform") mean_output = static_cast<double>(l.get_int("workload.output_max"));
    if (kind == "lognormal") {
      const double sigma = l.get_double("workload.output_sigma");
      mean_output *= std::exp(std::min(sigma * sigma / 2.0, 50.0));
      if (l.has("workload.output_max")) {
        mean_output = std::min(mean_output, static_cast<double>(l.get_int("workload.output_max")));
      }
    }
    if (requests * std::min(mean_output, seq) > 2e8) {
      l.fail_at("workload.rate_per_s", "about " +
                                           std::to_string(static_cast<int64_t>(requests * std::min(mean_output, seq))) +
                                           " output tokens, above the simulation's budget of 200,000,000");
    }
  }
  const double span_s = !trace && l.has("workload.requests") && rated
                            ? static_cast<double>(l.get_int("workload.requests")) / l.get_double("workload.rate_per_s")
                            : window_s;
  if (span_s / l.get_double("serving.sample_interval_s") > 1e6) {
    l.fail_at("serving.sample_interval_s", "more than 1,000,000 samples over the workload's duration");
  }
}

/// The fleet: autoscaling's bounds, the fleet's budget over `window_s`, zones and their outage, spot replicas.
void check_fleet(Loader& l, double window_s) {
  // Autoscaling: min_replicas and max_replicas together, min <= replicas <= max; spot replicas of a fixed fleet.
  if (l.has("serving.min_replicas") != l.has("serving.max_replicas")) {
    const std::string missing = l.has("serving.min_replicas") ? "serving.max_replicas" : "serving.min_replicas";
    l.fail(missing, l.table_loc("serving"), "autoscaling needs both serving.min_replicas and serving.max_replicas");
  }
  if (l.has("serving.max_replicas")) {
    const int64_t lo = l.get_int("serving.min_replicas"), hi = l.get_int("serving.max_replicas");
    const int64_t r = l.get_int("serving.replicas");
    if (lo > hi) l.fail_at("serving.min_replicas", "must not exceed serving.max_replicas (" + std::to_string(hi) + ")");
    if (r < lo || r > hi) {
      l.fail_at("serving.replicas", "the replicas at time 0 must be within [min_replicas, max_replicas] = [" +
                                        std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(r));
    }
    if (l.get_int("serving.spot_replicas") > 0) {
      l.fail_at("serving.spot_replicas", "spot replicas with autoscaling are not modelled yet: give a fixed fleet");
    }
  }
  report(l, check_fleet_budget(
                {l.has("serving.max_replicas") ? l.get_int("serving.max_replicas") : l.get_int("serving.replicas"),
                 l.has("serving.max_replicas"), l.get_int("serving.pipeline"), window_s,
                 l.get_double("serving.autoscale_interval_s"), l.get_int("serving.spot_replicas"),
                 l.get_double("serving.spot_eviction_rate_per_hour")}));
  {
    // Zones: at most one per replica slot; an outage loses one of several.
    const int64_t slots =
        l.has("serving.max_replicas") ? l.get_int("serving.max_replicas") : l.get_int("serving.replicas");
    if (l.get_int("serving.zones") > slots) {
      l.fail_at("serving.zones", "more zones than replicas (" + std::to_string(slots) + ")");
    }
    if (l.has("serving.zone_outage_duration_s") && !l.has("serving.zone_outage_start_s")) {
      l.fail_at("serving.zone_outage_duration_s", "needs serving.zone_outage_start_s");
    }
    if (l.has("serving.zone_outage_start_s") && l.get_int("serving.zones") < 2) {
      l.fail_at("serving.zone_outage_start_s", "losing the only zone stops the whole fleet: give serving.zones >= 2");
    }
  }
  if (l.get_int("serving.spot_replicas") > l.get_int("serving.replicas")) {
    l.fail_at("serving.spot_replicas",
              "must not exceed serving.replicas (" + std::to_string(l.get_int("serving.replicas")) + ")");
  }
}

/// The engine profile's defaults (an alias resolved to its release; overheads, capacity policy) and its
/// multi-step scheduling.
void set_engine_defaults(Loader& l) {
  const models::EngineProfile& engine = models::engine_profile(l.get_string("serving.engine"));
  l.set("serving.engine", std::string(engine.name));  // an alias resolves to the release it stands for
  if (l.get_int("serving.scheduler_steps") > 1 && !engine.multi_step) {
    l.fail_at("serving.scheduler_steps", "multi-step scheduling is vLLM v0.6-v0.7's (serving.engine = \"vllm-0.6\"); " +
                                             std::string(engine.name) + " schedules every iteration");
  }
  if (!l.has("serving.engine_overhead_ms")) {
    l.set("serving.engine_overhead_ms", engine.overhead.fixed.value() * 1e3);
  }
  if (!l.has("serving.engine_overhead_per_sequence_us")) {
    l.set("serving.engine_overhead_per_sequence_us", engine.overhead.per_sequence.value() * 1e6);
  }
  if (!l.has("serving.capacity_scheduler_policy")) {
    l.set("serving.capacity_scheduler_policy",
          std::string(models::kCapacityPolicyNames[static_cast<size_t>(engine.admission)]));
  }
}

}  // namespace

void check_serving(Loader& l, const models::Catalog& catalog) {
  check_model_shape(l);
  check_model_for_serving(l);
  const models::VmSize& vm = vm_size_of(l, "serving.vm_size", catalog);
  const models::DeviceSpec& device = catalog.device(vm.device);
  check_replica_layout(l, vm);
  check_expert_parallel(l, vm);
  check_fp4(l, vm, device);
  const models::ServingNumerics numerics = check_serving_precision(l, vm, device);
  check_speculative(l);
  check_workload_arrival(l);
  check_prefix_caching(l);
  const bool trace = l.has("workload.trace");
  check_serving_reference(l);
  // A trace is read now (its budgets, its longest prompt); it runs whole unless workload.duration_s is given.
  TraceFacts facts;
  const bool windowed = l.find_node("workload", "duration_s") != nullptr;
  if (trace) {
    report(l, read_trace_facts(l.path().parent_path() / l.get_string("workload.trace"),
                               windowed ? l.get_optional_double("workload.duration_s") : std::nullopt,
                               l.get_int("model.seq_length"), facts));
  }
  const double window_s = trace && !windowed ? facts.last_arrival_s : l.get_double("workload.duration_s");
  for (const std::string which : {"prompt", "output"}) report(l, check_length_keys(which, length_keys(l, which)));
  const std::optional<int64_t> longest =
      trace ? std::optional(facts.longest_prompt_tokens)
            : longest_prompt_tokens(length_keys(l, "prompt"), l.get_int("model.seq_length"));
  report(l,
         check_prompt_fits_batch(longest,
                                 trace ? "in the trace" : "workload.prompt",
                                 l.get_int("serving.max_num_batched_tokens"), l.get_bool("serving.chunked_prefill")));
  check_kv_cache(l, vm, device, numerics);
  check_workload_budgets(l, window_s);
  check_fleet(l, window_s);
  check_disaggregation(l, catalog, longest);
  l.learned.serving_price = vm.price_usd_per_hour;
  set_engine_defaults(l);
}

}  // namespace clustersim::sim::detail
