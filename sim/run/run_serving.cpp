#include "sim/run/run_serving.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>

#include "models/serving/engine_profile.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/io/request_trace.hpp"
#include "sim/serving/speculation.hpp"
#include "sim/serving/tensor_parallel.hpp"
#include "sim/serving/workload.hpp"

namespace clustersim::sim {
namespace {

LengthDistribution length_of(const LengthConfig& c, int64_t max_tokens) {
  LengthDistribution d;
  d.kind = c.kind == "uniform" ? LengthDistribution::Kind::uniform
           : c.kind == "lognormal" ? LengthDistribution::Kind::lognormal
                                   : LengthDistribution::Kind::fixed;
  d.value = static_cast<double>(c.tokens);
  d.median = static_cast<double>(c.tokens);
  d.low = c.min ? static_cast<double>(*c.min) : 1.0;
  d.high = c.max ? static_cast<double>(*c.max) : std::numeric_limits<double>::infinity();
  d.truncated = d.kind == LengthDistribution::Kind::lognormal && (c.min || c.max);
  d.sigma = c.sigma;
  d.max_tokens = max_tokens;
  return d;
}

/// The scenario's requests; `cut`: the trace rows after the window workload.duration_s gives (a trace runs whole
/// without it).
std::vector<ServingRequest> requests_of(const ServingScenario& sc, int64_t& cut) {
  const WorkloadConfig& w = sc.workload;
  if (w.trace) {
    try {
      const RequestTrace trace =
          load_request_trace(*w.trace, w.duration_given ? std::optional(w.duration_s) : std::nullopt);
      cut = trace.cut;
      std::vector<ServingRequest> requests;
      requests.reserve(trace.requests.size());
      for (const TraceRequest& r : trace.requests) requests.push_back({r.arrival_s, r.prompt_tokens, r.output_tokens});
      return requests;
    } catch (const TraceError& e) {
      throw DataError(std::string(e.what()) + " (workload.trace of " + sc.source_path.string() + ")");
    }
  }
  SyntheticWorkload s;
  s.arrivals.kind = w.arrival == "gamma"     ? ArrivalProcess::Kind::gamma
                    : w.arrival == "poisson" ? ArrivalProcess::Kind::poisson
                                             : ArrivalProcess::Kind::at_once;  // offline, closed_loop
  s.requests = w.requests;
  s.arrivals.rate_per_s = w.rate_per_s;
  s.arrivals.cv = w.arrival_cv;
  s.prompt = length_of(w.prompt, sc.model.seq_length);
  s.output = length_of(w.output, sc.model.seq_length);
  s.duration_s = w.duration_s;
  s.seed = sc.seed;
  s.system_prompt = {w.system_prompt_tokens, w.system_prompt_share, w.system_prompts};
  s.sessions = {w.turns, w.think_time_s};
  return generate_workload(s);
}

/// The fleet's speculative decoder (serving.speculative_*): the proposer on the replica's device and tensor
/// parallelism, with no per-iteration host work of its own (the iteration pays the engine's) but the engine's NCCL
/// calls; `host`, the engine release's speculative host work (EngineProfile::speculative).
std::shared_ptr<const SpeculativeServing> speculative_of(const ServingScenario& sc, const models::InferenceModel& main,
                                                          const models::VmSize& vm, const models::DeviceSpec& device,
                                                          models::EngineOverhead overhead,
                                                          const models::SpeculativeHost& host) {
  const SpeculativeConfig& c = *sc.serving.speculative;
  const models::SpeculativeMethod method = models::speculative_method(c.method);
  models::ModelConfig shape = sc.model;
  if (method == models::SpeculativeMethod::draft) {
    shape.num_layers = c.layers;
    shape.hidden_size = c.hidden_size;
    shape.num_attention_heads = c.num_attention_heads;
    shape.num_query_groups = c.num_query_groups;
    shape.ffn_hidden_size = c.ffn_hidden_size;
    shape.kv_channels = 0;
    shape.num_experts = 0;
    shape.mtp_num_layers = 0;
    shape.tie_embeddings = true;  // small drafts tie them (Llama 3.2 1B and 3B)
  } else {
    shape = models::head_proposer_config(method, sc.model, c.layers);
  }
  overhead.fixed = overhead.per_sequence = units::Seconds(0.0);
  auto proposer = std::make_shared<const models::InferenceModel>(
      shape, models::serving_numerics(sc.serving.precision, sc.serving.kv_cache_fp8), main.tensor(), device,
      vm.device_share, tensor_parallel_all_reduce(vm, device, main.tensor()), overhead);
  auto decoding = std::make_shared<const models::SpeculativeDecoding>(
      method, std::move(proposer),
      c.acceptance_by_position.empty() ? std::vector<double>(static_cast<size_t>(c.tokens), c.acceptance)
                                       : c.acceptance_by_position,
      method != models::SpeculativeMethod::draft);
  return std::make_shared<const SpeculativeServing>(std::move(decoding), sc.seed, host);
}

SummaryColumn real(std::string name, std::string units, std::string description, double v) {
  return {std::move(name), std::move(units), std::move(description), std::vector<double>{v}};
}
SummaryColumn integer(std::string name, std::string units, std::string description, int64_t v) {
  return {std::move(name), std::move(units), std::move(description), std::vector<int64_t>{v}};
}

}  // namespace

bool meets_slo(const SloConfig& slo, const ServingSummary& s) {
  const bool ttft = !slo.ttft_p99_ms || s.ttft_p99_s * 1e3 <= *slo.ttft_p99_ms;
  const bool tpot = !slo.tpot_p99_ms || !std::isfinite(s.tpot_p99_s) || s.tpot_p99_s * 1e3 <= *slo.tpot_p99_ms;
  return s.completed > 0 && ttft && tpot;
}

ServingRun run_serving_scenario(const ServingScenario& sc, const models::Catalog& catalog,
                                const IterationSampling& iteration_log) {
  const models::VmSize& vm = catalog.vm_size(sc.serving.vm_size);
  const models::DeviceSpec& device = catalog.device(vm.device);
  const ServingFleetConfig& f = sc.serving;
  models::PipelineStages stages{f.pipeline, nullptr};
  if (f.pipeline > 1) stages.send = pipeline_stage_send(vm, device, f.tensor, f.pipeline);
  // The release's structure with the scenario's (or the family's fitted) host work.
  const models::EngineProfile& engine = models::engine_profile(f.engine);
  models::EngineOverhead overhead = engine.overhead;
  overhead.fixed = units::milliseconds(f.engine_overhead_ms);
  overhead.per_sequence = units::microseconds(f.engine_overhead_per_sequence_us);
  // Expert parallelism (models/serving/expert_parallel_serving.hpp): DeepEP's links for data-parallel attention.
  models::ExpertParallelServing ep{f.expert_parallel, f.data_parallel_attention, f.redundant_experts, std::nullopt};
  if (f.data_parallel_attention) ep.links = models::deepep_links(vm, device, f.expert_parallel);
  auto model = std::make_shared<const models::InferenceModel>(
      sc.model, models::serving_numerics(f.precision, f.kv_cache_fp8), f.tensor, device, vm.device_share,
      tensor_parallel_all_reduce(vm, device, f.tensor), overhead, std::move(stages), engine.kernels, ep);
  ServingRun run;
  run.kv_cache_tokens = model->kv_cache_tokens(models::kv_cache_budget(
      f.engine, f.gpu_memory_utilization, f.max_num_batched_tokens, f.max_num_seqs, f.block_size));
  run.weight_bytes_per_gpu = model->weight_bytes_per_gpu().value();
  run.kv_bytes_per_token = model->kv_bytes_per_token_per_gpu().value();
  std::shared_ptr<const SpeculativeServing> speculative;
  if (f.speculative) {
    speculative = speculative_of(sc, *model, vm, device, overhead, engine.speculative);
    run.kv_cache_tokens = speculative->decoding().kv_cache_tokens(*model, run.kv_cache_tokens, f.block_size);
  }
  if (run.kv_cache_tokens / f.pipeline < f.block_size) {
    throw DataError(sc.source_path.string() + ": the weights (" + printf_string("%.1f", run.weight_bytes_per_gpu / 1073741824.0) +
                    " GiB per GPU at tensor " + std::to_string(f.tensor) + ") leave no KV cache in " +
                    printf_string("%.0f %%", 100.0 * f.gpu_memory_utilization) + " of the " + vm.device +
                    "'s memory: raise serving.tensor or choose a larger GPU");
  }
  models::IterationBatch one;
  one.decode_sequences = 1;
  one.decode_kv_tokens = 1024;
  one.sampled_sequences = 1;
  run.decode_step_s = model->iteration_time(one).total().value();

  ServingSetup setup;
  setup.model = model;
  setup.speculative = std::move(speculative);
  setup.policy = {f.max_num_seqs, f.max_num_batched_tokens, f.chunked_prefill, f.block_size,
                  models::capacity_policy(f.capacity_scheduler_policy), f.scheduler_steps, f.prefix_caching};
  // A pipelined replica runs `pipeline` virtual engines (vLLM: one scheduler per in-flight batch, each with its
  // share of the replica's cache blocks): the engine simulates each as a replica of its own, whose iteration
  // takes the whole pipeline's latency.
  setup.kv_cache_tokens = run.kv_cache_tokens / f.pipeline / f.block_size * f.block_size;
  setup.max_model_len = sc.model.seq_length;
  setup.replicas = f.replicas * f.pipeline;
  setup.routing = f.routing == "round_robin"    ? Routing::round_robin
                  : f.routing == "prefix_aware" ? Routing::prefix_aware
                                                : Routing::least_outstanding;
  setup.sample_interval_s = f.sample_interval_s;
  setup.concurrency = sc.workload.arrival == "closed_loop" ? sc.workload.concurrency : 0;
  setup.provisioning_s = f.provisioning_s;
  setup.iteration_log = iteration_log;
  setup.zones.zones = f.zones;
  setup.zones.outage_start_s = f.zone_outage_start_s;
  if (f.zone_outage_duration_s) setup.zones.outage_duration_s = *f.zone_outage_duration_s;
  if (f.min_replicas && f.max_replicas) {
    setup.autoscaling = ServingAutoscaling{*f.min_replicas, *f.max_replicas, f.target_outstanding_per_replica,
                                           f.autoscale_interval_s, f.scale_down_window_s};
  }
  if (f.spot_replicas > 0) {
    SpotReplicas& spot = setup.spot;
    spot.replicas = f.spot_replicas;
    spot.replicas_per_vm = std::max<int64_t>(1, vm.devices_per_vm / f.gpus_per_replica());
    spot.vms_per_replica = std::max<int64_t>(1, (f.gpus_per_replica() + vm.devices_per_vm - 1) / vm.devices_per_vm);
    spot.eviction_rate_per_hour = f.spot_eviction_rate_per_hour;
    spot.reprovision_mean_s = f.spot_reprovision_mean_s;
    spot.notice_s = f.spot_notice_s;
    spot.seed = sc.seed;
  }
  const int64_t prefill_kv = f.disaggregated() ? configure_split_pools(setup, sc, catalog, overhead) : 0;
  run.result = simulate_serving(setup, requests_of(sc, run.trace_requests_cut));
  if (f.pipeline > 1) {
    // Back from virtual engines to replicas: the replica of each request, and busy time per replica.
    for (RequestOutcome& o : run.result.requests) {
      if (o.replica >= 0) o.replica /= f.pipeline;
    }
    run.result.busy_s /= static_cast<double>(f.pipeline);
  }
  LatencyTargets targets;
  if (sc.slo.ttft_p99_ms) targets.ttft_s = *sc.slo.ttft_p99_ms / 1e3;
  if (sc.slo.tpot_p99_ms) targets.tpot_s = *sc.slo.tpot_p99_ms / 1e3;
  run.summary = summarize_serving(run.result, targets, f.replicas, f.gpus_per_replica(), vm.devices_per_vm,
                                  f.vm_price_usd_per_hour, f.spot_discount);
  run.vms = (f.replicas * f.gpus_per_replica() + vm.devices_per_vm - 1) / vm.devices_per_vm;
  if (f.disaggregated()) {
    run.split = summarize_split_pools(run.result, f, catalog.vm_size(f.prefill_vm_size), run.summary);
    run.split->prefill_kv_cache_tokens = prefill_kv;
  }
  return run;
}

std::vector<SummaryColumn> serving_summary_columns(const ServingScenario& sc, const ServingRun& run) {
  const ServingSummary& s = run.summary;
  std::vector<SummaryColumn> c;
  c.push_back({"scenario", "", "scenario name", std::vector<std::string>{sc.name}});
  c.push_back({"vm_size", "", "VM size of the replicas", std::vector<std::string>{sc.serving.vm_size}});
  c.push_back(integer("replicas", "1", "model replicas", sc.serving.replicas));
  c.push_back(integer("tensor_parallel", "1", "tensor-parallel GPUs per pipeline stage", sc.serving.tensor));
  c.push_back(integer("pipeline_parallel", "1", "pipeline stages per replica", sc.serving.pipeline));
  c.push_back(integer("vms", "1", "VMs the replicas occupy", run.vms));
  c.push_back(integer("kv_cache_tokens", "tokens", "KV-cache capacity of one replica", run.kv_cache_tokens));
  c.push_back(real("weight_bytes_per_gpu", "B", "weights held by one GPU", run.weight_bytes_per_gpu));
  c.push_back(real("decode_step_s", "s", "one sequence decoding at a 1,024-token context", run.decode_step_s));
  c.push_back(integer("requests", "1", "requests of the workload", s.requests));
  c.push_back(integer("completed", "1", "requests that finished", s.completed));
  c.push_back(integer("rejected", "1",
                      "requests longer than the model's context or one replica's KV cache, or never schedulable "
                      "(rejected_unschedulable)",
                      s.rejected));
  c.push_back(integer("preemptions", "1", "recompute preemptions over all requests", s.preemptions));
  c.push_back(real("ttft_mean_s", "s", "mean time to first token", s.ttft_mean_s));
  c.push_back(real("ttft_p50_s", "s", "median time to first token", s.ttft_p50_s));
  c.push_back(real("ttft_p90_s", "s", "90th percentile time to first token", s.ttft_p90_s));
  c.push_back(real("ttft_p99_s", "s", "99th percentile time to first token", s.ttft_p99_s));
  // TPOT per request: (finish - first token) / (N - 1), vLLM benchmark_serving's and genai-perf's definition.
  const std::string tpot_def = " time per output token after the first, (finish - first token) / (output tokens - 1) "
                               "per request (vLLM benchmark_serving, genai-perf)";
  c.push_back(real("tpot_mean_s", "s", "mean over requests of the" + tpot_def, s.tpot_mean_s));
  c.push_back(real("tpot_p50_s", "s", "median" + tpot_def, s.tpot_p50_s));
  c.push_back(real("tpot_p90_s", "s", "90th percentile" + tpot_def, s.tpot_p90_s));
  c.push_back(real("tpot_p99_s", "s", "99th percentile" + tpot_def, s.tpot_p99_s));
  c.push_back(real("e2e_mean_s", "s", "mean end-to-end latency", s.e2e_mean_s));
  c.push_back(real("e2e_p50_s", "s", "median end-to-end latency", s.e2e_p50_s));
  c.push_back(real("e2e_p90_s", "s", "90th percentile end-to-end latency", s.e2e_p90_s));
  c.push_back(real("e2e_p99_s", "s", "99th percentile end-to-end latency", s.e2e_p99_s));
  c.push_back(real("requests_per_s", "1/s", "completed requests per second of the makespan", s.requests_per_s));
  c.push_back(real("output_tokens_per_s", "tokens/s", "generated tokens per second", s.output_tokens_per_s));
  c.push_back(real("input_tokens_per_s", "tokens/s", "prompt tokens per second", s.input_tokens_per_s));
  c.push_back(real("goodput_requests_per_s", "1/s", "completed requests within the [slo] targets per second",
                   s.goodput_requests_per_s));
  c.push_back(real("slo_attainment", "1", "share of all requests completed within the targets", s.slo_attainment));
  c.push_back(real("kv_occupancy_mean", "1", "mean KV-cache occupancy over the samples", s.mean_kv_occupancy));
  c.push_back(real("kv_occupancy_peak", "1", "highest KV-cache occupancy of a sample", s.peak_kv_occupancy));
  c.push_back(integer("queue_peak", "1", "most requests waiting at a sample", s.peak_waiting));
  c.push_back(real("utilization", "1", "share of the replicas' time in iterations", s.utilization));
  c.push_back(real("makespan_s", "s", "first arrival (0) to the last finish", s.makespan_s));
  c.push_back(real("gpu_hours", "GPU h", "GPUs x makespan", s.gpu_hours));
  c.push_back(real("cost_usd", "USD", "VM-hours x on-demand price; NaN without a price", s.usd));
  c.push_back(real("usd_per_million_output_tokens", "USD/Mtoken", "cost per million generated tokens; NaN without a price",
                   s.usd_per_million_output_tokens));
  c.push_back(real("replica_hours", "replica h", "replicas billed (provisioning, serving, draining) x time",
                   s.replica_hours));
  c.push_back(real("mean_replicas", "replicas", "replica_hours / makespan (autoscaling: the mean fleet)",
                   s.mean_replicas));
  c.push_back(integer("evictions", "1", "spot VM evictions during the run", s.evictions));
  c.push_back(integer("unserved", "1", "requests not finished when the simulation ended", s.unserved));
  c.push_back(integer("restarted_requests", "1", "requests that started again after their replica's eviction",
                      s.restarted_requests));
  c.push_back(real("meets_slo", "1",
                   "1 when the p99 TTFT and p99 TPOT are at or below the [slo] targets (1 without targets), else 0",
                   meets_slo(sc.slo, s) ? 1.0 : 0.0));
  c.push_back(real("usd_per_million_tokens", "USD/Mtoken",
                   "cost per million prompt and generated tokens; NaN without a price", s.usd_per_million_tokens));
  c.push_back(integer("iterations", "1", "engine iterations over all replicas", run.result.iterations));
  c.push_back(integer("fingerprint", "1", "the engine's determinism fingerprint (bit pattern)",
                      static_cast<int64_t>(run.result.fingerprint)));
  c.push_back(integer("trace_requests_cut", "1", "trace requests after the window workload.duration_s gives (not run)",
                      run.trace_requests_cut));
  c.push_back(integer("rejected_unschedulable", "1",
                      "rejected requests whose prompt (with recomputed tokens) exceeds max_num_batched_tokens "
                      "without chunked prefill",
                      run.result.unschedulable));
  // What limits TTFT and TPOT (issue 29; sim/serving/latency_attribution.hpp): mean shares over requests.
  const TtftParts& t = s.latency.ttft;
  const TpotParts& p = s.latency.tpot;
  const std::string ttft = "mean over completed requests of the share of their TTFT ";
  const std::string tpot = "mean over requests with more than one output token of the share of their TPOT ";
  c.push_back(real("ttft_queueing_share", "1", ttft + "spent queued (not in an iteration computing its prompt), "
                                                     "less the KV wait", t.queueing_s));
  c.push_back(real("ttft_kv_wait_share", "1", ttft + "queued while its replica's admission lacked KV blocks",
                   t.kv_wait_s));
  c.push_back(real("ttft_prefill_compute_share", "1", ttft + "in its prompt's share of iterations, matmul compute",
                   t.compute_s));
  c.push_back(real("ttft_prefill_memory_share", "1", ttft + "in its prompt's share of iterations, HBM bandwidth",
                   t.memory_s));
  c.push_back(real("ttft_prefill_communication_share", "1",
                   ttft + "in its prompt's share of iterations, inter-GPU communication (tensor/pipeline-parallel, "
                          "expert dispatch and combine)",
                   t.communication_s));
  c.push_back(real("ttft_prefill_host_share", "1", ttft + "in its prompt's share of iterations, the engine's host work",
                   t.host_s));
  c.push_back(real("ttft_co_scheduled_share", "1",
                   ttft + "in other requests' tokens of the iterations computing its prompt", t.co_scheduled_s));
  c.push_back(real("ttft_restart_share", "1", ttft + "in prompt work lost to a preemption or eviction", t.restart_s));
  c.push_back(real("tpot_decode_compute_share", "1", tpot + "in the decodes' share of its iterations, matmul compute",
                   p.compute_s));
  c.push_back(real("tpot_decode_memory_share", "1",
                   tpot + "in the decodes' share of its iterations, HBM bandwidth (weights, KV reads)", p.memory_s));
  c.push_back(real("tpot_decode_communication_share", "1",
                   tpot + "in the decodes' share of its iterations, inter-GPU communication (tensor/pipeline-parallel, "
                          "expert dispatch and combine)",
                   p.communication_s));
  c.push_back(real("tpot_decode_host_share", "1", tpot + "in the decodes' share of its iterations, the engine's host work",
                   p.host_s));
  c.push_back(real("tpot_prefill_stall_share", "1", tpot + "in co-scheduled prompt chunks' share of its iterations",
                   p.prefill_stall_s));
  c.push_back(real("tpot_preemption_share", "1",
                   tpot + "out of any iteration decoding it (preempted or evicted: waiting, recomputing)",
                   p.preemption_s));
  c.push_back(integer("kv_limited_iterations", "1",
                      "iterations whose admission stopped for want of free KV blocks", s.kv_limited_iterations));
  // Prefix caching (issue 30): 0 when it is off.
  const PrefixCacheStats prefix = prefix_cache_stats(run.result);
  c.push_back(real("prefix_cache_hit_rate", "1",
                   "prompt tokens found in the prefix cache / prompt tokens, of the requests admitted (vLLM's "
                   "prefix-cache hit rate)",
                   prefix.hit_rate()));
  c.push_back(integer("prefix_cached_tokens", "tokens", "prompt tokens served from the prefix cache, not computed",
                      prefix.cached_tokens));
  // Inside the run (issue 30; docs/serving.md, "Inside a serving run").
  const std::string per_iteration = " per engine iteration (all replicas' iterations)";
  c.push_back(real("sequences_per_iteration_mean", "1", "mean sequences" + per_iteration,
                   s.sequences_per_iteration_mean));
  c.push_back(real("sequences_per_iteration_p50", "1",
                   "median sequences" + per_iteration + " (nearest rank of an exact histogram)",
                   s.sequences_per_iteration_p50));
  c.push_back(real("sequences_per_iteration_p99", "1",
                   "99th percentile sequences" + per_iteration + " (nearest rank of an exact histogram)",
                   s.sequences_per_iteration_p99));
  c.push_back(real("prefill_tokens_per_iteration_mean", "tokens", "mean prompt tokens computed" + per_iteration,
                   s.prefill_tokens_per_iteration_mean));
  c.push_back(real("decode_tokens_per_iteration_mean", "tokens",
                   "mean decoding sequences (one token each)" + per_iteration, s.decode_tokens_per_iteration_mean));
  c.push_back(real("prefill_token_share", "1", "prefill tokens / (prefill + decode tokens) over all iterations",
                   s.prefill_token_share));
  const std::string tbt = " time between tokens (TBT): the gap between successive output tokens of a request, over "
                          "every token after the first";
  const std::string bucket = " (nearest rank; log-bucket histogram, within 0.39 %)";
  c.push_back(real("tbt_mean_s", "s", "mean" + tbt, s.tbt_mean_s));
  c.push_back(real("tbt_p50_s", "s", "median" + tbt + bucket, s.tbt_p50_s));
  c.push_back(real("tbt_p90_s", "s", "90th percentile" + tbt + bucket, s.tbt_p90_s));
  c.push_back(real("tbt_p99_s", "s", "99th percentile" + tbt + bucket, s.tbt_p99_s));
  c.push_back(real("e2e_per_output_token_mean_s", "s",
                   "mean over completed requests of end-to-end latency / output tokens (LLMPerf's inter-token "
                   "latency; TTFT included)",
                   s.e2e_per_output_token_mean_s));
  c.push_back(real("running_mean", "1", "running sequences over all replicas, mean over the samples", s.running_mean));
  if (run.split) {
    for (SummaryColumn& x : split_pools_columns(sc.serving, *run.split)) c.push_back(std::move(x));
  }
  return c;
}

std::vector<SummaryColumn> serving_iteration_columns(const ServingScenario& sc, const ServingRun& run) {
  const int64_t pipeline = sc.serving.pipeline;
  std::vector<double> start, duration;
  std::vector<int64_t> iteration, replica, engine, sequences, prefill, decode, blocks;
  for (const IterationRecord& r : run.result.inside.records) {
    iteration.push_back(r.index);
    replica.push_back(r.engine / pipeline);
    engine.push_back(r.engine);
    start.push_back(r.start_s);
    duration.push_back(r.duration_s);
    sequences.push_back(r.sequences);
    prefill.push_back(r.prefill_tokens);
    decode.push_back(r.decode_tokens);
    blocks.push_back(r.kv_blocks_used);
  }
  return {{"iteration", "1", "the iteration's number among the run's (all replicas), from 0, by start", iteration},
          {"replica", "1", "replica that ran it", replica},
          {"engine", "1", "engine that ran it (a replica of pipeline parallelism p runs p: replica = engine / p)",
           engine},
          {"start_s", "s", "when it started", start},
          {"duration_s", "s", "its duration", duration},
          {"sequences", "1", "sequences in its batch (decoding and prefilling)", sequences},
          {"prefill_tokens", "tokens", "prompt tokens it computed", prefill},
          {"decode_tokens", "tokens", "decoding sequences (one token each)", decode},
          {"kv_blocks_used", "1", "KV-cache blocks its engine held at its start", blocks}};
}

std::vector<SummaryColumn> serving_request_columns(const ServingRun& run) {
  std::vector<double> arrival, first, finish, ttft, tpot, e2e;
  std::vector<int64_t> prompt, output, replica, preemptions, rejected;
  for (const RequestOutcome& o : run.result.requests) {
    arrival.push_back(o.arrival_s);
    first.push_back(o.first_token_s);
    finish.push_back(o.finish_s);
    ttft.push_back(o.ttft_s());
    tpot.push_back(o.rejected ? std::numeric_limits<double>::quiet_NaN() : o.tpot_s());
    e2e.push_back(o.e2e_s());
    prompt.push_back(o.prompt_tokens);
    output.push_back(o.output_tokens);
    replica.push_back(o.replica);
    preemptions.push_back(o.preemptions);
    rejected.push_back(o.rejected ? 1 : 0);
  }
  std::vector<SummaryColumn> columns{{"arrival_s", "s", "arrival time", arrival},
          {"first_token_s", "s", "first output token; NaN when rejected", first},
          {"finish_s", "s", "last output token; NaN when rejected", finish},
          {"ttft_s", "s", "time to first token", ttft},
          {"tpot_s", "s", "time per output token after the first (0 for one token)", tpot},
          {"e2e_s", "s", "arrival to last token", e2e},
          {"prompt_tokens", "tokens", "prompt length", prompt},
          {"output_tokens", "tokens", "output length", output},
          {"replica", "1", "replica that served it", replica},
          {"preemptions", "1", "times it was preempted and recomputed", preemptions},
          {"rejected", "1", "1 when it exceeded the context or a replica's KV cache", rejected}};
  if (run.split) columns.push_back({"kv_transfer_s", "s", "split pools: its KV cache's transfer; NaN: none", run.result.kv_transfer_s});
  return columns;
}

std::vector<SummaryColumn> serving_sample_columns(const ServingRun& run) {
  std::vector<double> time, kv;
  std::vector<int64_t> waiting, running, replicas, provisioning;
  for (const ServingSample& x : run.result.samples) {
    time.push_back(x.time_s);
    waiting.push_back(x.waiting);
    running.push_back(x.running);
    kv.push_back(x.kv_occupancy);
    replicas.push_back(x.replicas);
    provisioning.push_back(x.provisioning);
  }
  return {{"time_s", "s", "sample time", time},
          {"waiting", "1", "requests queued (at the router and the replicas)", waiting},
          {"running", "1", "sequences running over all replicas", running},
          {"kv_occupancy", "1", "used / total KV blocks over the replicas not stopped", kv},
          {"replicas", "1", "replicas serving", replicas},
          {"provisioning", "1", "replicas starting", provisioning}};
}

namespace {

/// "64 %" of a share.
std::string pct(double share) { return printf_string("%.0f %%", 100.0 * share); }

/// What limits TTFT (decode false) or TPOT (decode true), with its mean share: the bottleneck line's clause.
std::string limit_clause(const LatencyBottleneck& b, bool decode) {
  const std::string of = " of " + std::string(decode ? "TPOT" : "TTFT");
  const std::string phase = decode ? "decode" : "prefill";
  switch (b.limit) {
    case LatencyLimit::queueing: return "queueing " + pct(b.share);
    case LatencyLimit::compute: return phase + " is matmul-compute bound (" + pct(b.share) + of + ")";
    case LatencyLimit::memory:
      return phase + " is HBM-bandwidth bound (" + (decode ? "weights + KV reads " : "weight reads ") + pct(b.share) +
             of + ")";
    case LatencyLimit::communication:
      return phase + " is bound by inter-GPU communication (TP/PP collectives, EP dispatch and combine: " +
             pct(b.share) + of + ")";
    case LatencyLimit::host: return phase + " waits on the engine's host work (" + pct(b.share) + of + ")";
    case LatencyLimit::co_scheduled:
      return decode ? "decodes stall behind co-scheduled prompt chunks (" + pct(b.share) + of + ")"
                    : "other requests' tokens in its prefill iterations (" + pct(b.share) + of + ")";
    case LatencyLimit::restart: return "prompt work lost to preemptions and evictions (" + pct(b.share) + of + ")";
    case LatencyLimit::preemption: return "preemptions, waiting and recomputing (" + pct(b.share) + of + ")";
  }
  return "";
}

/// ", <name> <share>" for a part worth printing (at least 0.5 %), else "".
std::string minor_part(const char* name, double share) {
  return share >= 0.005 ? std::string(", ") + name + " " + pct(share) : "";
}

/// The report's lines on what limits TTFT and TPOT (issue 29; docs/serving.md, "What limits TTFT and TPOT"): the
/// mean shares of their parts and the bottleneck line, of a run of `iterations` engine iterations. Empty with no
/// completed request.
std::string latency_lines(const ServingSummary& s, int64_t iterations) {
  const LatencyShares& l = s.latency;
  if (l.ttft_requests == 0) return "";
  const TtftParts& t = l.ttft;
  std::string out = printf_string(
      "TTFT parts  queueing %s%s, prefill %s (compute %.0f, HBM %.0f, comm %.0f, host %.0f %%), other requests' "
      "tokens %s%s\n",
      pct(t.queueing_s + t.kv_wait_s).c_str(),
      t.kv_wait_s >= 0.005 ? (" (for KV blocks " + pct(t.kv_wait_s) + ")").c_str() : "",
      pct(t.compute_s + t.memory_s + t.communication_s + t.host_s).c_str(), 100.0 * t.compute_s, 100.0 * t.memory_s,
      100.0 * t.communication_s, 100.0 * t.host_s, pct(t.co_scheduled_s).c_str(),
      minor_part("lost to restarts", t.restart_s).c_str());
  const TpotParts& p = l.tpot;
  std::string line = "bottleneck  ";
  if (l.tpot_requests > 0) {
    out += printf_string("TPOT parts  decode %s (HBM %.0f, compute %.0f, comm %.0f, host %.0f %%), prefill chunks "
                         "%s%s\n",
                         pct(p.compute_s + p.memory_s + p.communication_s + p.host_s).c_str(), 100.0 * p.memory_s,
                         100.0 * p.compute_s, 100.0 * p.communication_s, 100.0 * p.host_s,
                         pct(p.prefill_stall_s).c_str(), minor_part("preemptions", p.preemption_s).c_str());
    line += "TPOT: " + limit_clause(tpot_bottleneck(p), true) + "; ";
  }
  const LatencyBottleneck b = ttft_bottleneck(t);
  line += "TTFT: " + limit_clause(b, false);
  if (b.limit == LatencyLimit::queueing) {
    line += printf_string(" (peak %lld waiting; KV cache %s full)", static_cast<long long>(s.peak_waiting),
                          pct(s.peak_kv_occupancy).c_str());
  }
  // KV capacity: say when the cache, not the batch limits, held admissions back or preempted.
  if (s.kv_limited_iterations > 0 || s.preemptions > 0) {
    line += printf_string("; the KV cache stopped admissions in %.0f %% of iterations (%lld) and ",
                          100.0 * static_cast<double>(s.kv_limited_iterations) / static_cast<double>(iterations),
                          static_cast<long long>(s.kv_limited_iterations)) +
            (s.preemptions > 0 ? "preempted " + counted(s.preemptions, "time") : "preempted none");
  }
  return out + line + "\n";
}

}  // namespace

std::string format_serving_summary(const ServingScenario& sc, const ServingRun& run) {
  const ServingSummary& s = run.summary;
  const ServingFleetConfig& f = sc.serving;
  std::ostringstream out;
  out << report_header(sc.name, sc.description, sc.overrides);
  out << printf_string("fleet       %s x TP %lld%s on %lld x %s, %s weights%s\n",
                       counted(f.replicas, "replica").c_str(), static_cast<long long>(f.tensor),
                       (f.pipeline > 1   ? " x PP " + std::to_string(f.pipeline)
                        : f.expert_parallel > 1 ? " x EP " + std::to_string(f.expert_parallel) +
                                                     (f.data_parallel_attention ? " (DP attention)" : "")
                                                 : std::string())
                           .c_str(),
                       static_cast<long long>(run.vms), f.vm_size.c_str(), f.precision.c_str(),
                       f.kv_cache_fp8 ? ", fp8 KV cache" : "");
  out << printf_string("replica     %.1f GiB of weights per GPU, KV cache %lld tokens, one decode step %.2f ms\n",
                       run.weight_bytes_per_gpu / 1073741824.0, static_cast<long long>(run.kv_cache_tokens),
                       run.decode_step_s * 1e3);
  out << printf_string("workload    %s over %.1f s%s\n", counted(s.requests, "request").c_str(), s.makespan_s,
                       sc.workload.trace ? (", trace " + sc.workload.trace->filename().string()).c_str() : "");
  if (run.trace_requests_cut > 0) {
    out << printf_string("            the window workload.duration_s = %g s cut %lld later requests of the trace\n",
                         sc.workload.duration_s, static_cast<long long>(run.trace_requests_cut));
  }
  out << printf_string("TTFT        p50 %.3f s   p90 %.3f s   p99 %.3f s\n", s.ttft_p50_s, s.ttft_p90_s, s.ttft_p99_s);
  out << printf_string("TPOT        p50 %.1f ms   p90 %.1f ms   p99 %.1f ms   per request: (finish - first token) / "
                       "(N - 1); e2e / N %.1f ms mean\n",
                       s.tpot_p50_s * 1e3, s.tpot_p90_s * 1e3, s.tpot_p99_s * 1e3, s.e2e_per_output_token_mean_s * 1e3);
  if (std::isfinite(s.tbt_p50_s)) {
    out << printf_string("TBT         p50 %.1f ms   p90 %.1f ms   p99 %.1f ms   between successive tokens, over every "
                         "token (mean %.1f ms)\n",
                         s.tbt_p50_s * 1e3, s.tbt_p90_s * 1e3, s.tbt_p99_s * 1e3, s.tbt_mean_s * 1e3);
  }
  out << printf_string("end to end  p50 %.2f s   p90 %.2f s   p99 %.2f s\n", s.e2e_p50_s, s.e2e_p90_s, s.e2e_p99_s);
  out << printf_string("throughput  %.2f requests/s, %.0f output tokens/s, %.0f prompt tokens/s\n", s.requests_per_s,
                       s.output_tokens_per_s, s.input_tokens_per_s);
  if (sc.slo.ttft_p99_ms || sc.slo.tpot_p99_ms) {
    out << printf_string("SLO         %.1f %% of requests within", 100.0 * s.slo_attainment);
    if (sc.slo.ttft_p99_ms) out << printf_string(" TTFT %.0f ms", *sc.slo.ttft_p99_ms);
    if (sc.slo.tpot_p99_ms) out << printf_string(" TPOT %.0f ms", *sc.slo.tpot_p99_ms);
    out << printf_string(": goodput %.2f requests/s\n", s.goodput_requests_per_s);
  }
  // "engines": the share of replica-time inside iterations, which is not saturation (an engine iterating on a
  // batch of one is "in an iteration"): beside it, the batches, the KV occupancy and the running count say how full.
  out << printf_string("engines     in an iteration %.0f %% of replica-time (not saturation); %.1f sequences running "
                       "on average over the fleet, KV cache %.0f %% mean / %.0f %% peak\n",
                       100.0 * s.utilization, s.running_mean, 100.0 * s.mean_kv_occupancy, 100.0 * s.peak_kv_occupancy);
  if (std::isfinite(s.sequences_per_iteration_mean)) {
    out << printf_string("batches     %s: %.1f sequences each (p50 %.0f, p99 %.0f), %.0f prefill + %.1f decode "
                         "tokens (prefill %.0f %% of tokens)\n",
                         counted(run.result.iterations, "iteration").c_str(), s.sequences_per_iteration_mean,
                         s.sequences_per_iteration_p50, s.sequences_per_iteration_p99,
                         s.prefill_tokens_per_iteration_mean, s.decode_tokens_per_iteration_mean,
                         100.0 * s.prefill_token_share);
  }
  out << printf_string("queue       peak %lld waiting, %s, %lld rejected\n", static_cast<long long>(s.peak_waiting),
                       counted(s.preemptions, "preemption").c_str(), static_cast<long long>(s.rejected));
  if (run.result.unschedulable > 0) {
    out << printf_string("            %lld rejected as never schedulable: a prompt (or a preempted one with its "
                         "tokens) over max_num_batched_tokens = %lld, chunked prefill off\n",
                         static_cast<long long>(run.result.unschedulable),
                         static_cast<long long>(f.max_num_batched_tokens));
  }
  if (run.split) out << split_pools_lines(f, *run.split);
  out << latency_lines(s, run.result.iterations);
  if (f.prefix_caching) {
    const PrefixCacheStats prefix = prefix_cache_stats(run.result);
    out << printf_string("prefix      caching on: %.1f %% of prompt tokens from the cache (%lld of %lld), not computed\n",
                         100.0 * prefix.hit_rate(), static_cast<long long>(prefix.cached_tokens),
                         static_cast<long long>(prefix.prompt_tokens));
  }
  if (f.min_replicas && f.max_replicas) {
    out << printf_string("autoscaling %lld-%lld replicas at %.0f outstanding requests each: %.1f on average, "
                         "%.1f replica-hours\n",
                         static_cast<long long>(*f.min_replicas), static_cast<long long>(*f.max_replicas),
                         f.target_outstanding_per_replica, s.mean_replicas, s.replica_hours);
  }
  if (f.zone_outage_start_s) {
    out << printf_string("zones       %lld; zone 0 lost at %.0f s for %s: %lld request(s) started again elsewhere, "
                         "%lld unserved\n",
                         static_cast<long long>(f.zones), *f.zone_outage_start_s,
                         f.zone_outage_duration_s ? printf_string("%.0f s", *f.zone_outage_duration_s).c_str()
                                                  : "the rest of the run",
                         static_cast<long long>(s.restarted_requests), static_cast<long long>(s.unserved));
  }
  if (f.spot_replicas > 0) {
    out << printf_string("spot        %lld of %s on spot at %.0f %% off: %lld eviction(s), %lld request(s) "
                         "started again\n",
                         static_cast<long long>(f.spot_replicas), counted(f.replicas, "replica").c_str(),
                         100.0 * f.spot_discount, static_cast<long long>(s.evictions),
                         static_cast<long long>(s.restarted_requests));
  }
  if (std::isfinite(s.usd)) {
    out << printf_string("cost        %.1f GPU-hours, $%.2f %s: $%.3f per million output tokens, $%.3f per "
                         "million tokens (prompt and output)\n",
                         s.gpu_hours, s.usd, f.spot_replicas > 0 ? "on demand and spot" : "on demand",
                         s.usd_per_million_output_tokens, s.usd_per_million_tokens);
  } else {
    out << printf_string("cost        %.1f GPU-hours (no price for %s in the catalog)\n", s.gpu_hours, f.vm_size.c_str());
  }
  if (sc.reference) {
    const double predicted = serving_metric(s, sc.reference->metric, f.total_gpus());
    out << printf_string("reference   %s: measured %.4g, predicted %.4g (%+.1f %%), %s\n", sc.reference->metric.c_str(),
                         sc.reference->value, predicted, 100.0 * (predicted / sc.reference->value - 1.0),
                         sc.reference->source.c_str());
  }
  out << "uncertainty the engines' overheads are calibrated on published serving measurements; their errors, "
         "left one source out, are in `make validate` and docs/serving.md (\"Validation\")\n";
  return out.str();
}

}  // namespace clustersim::sim
