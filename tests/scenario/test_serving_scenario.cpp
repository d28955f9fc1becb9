// Serving scenarios (issue 15): [serving], [workload] and [slo] with [model], their defaults and their located
// errors; the two kinds of scenario keep to their own tables.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/engine_profile.hpp"
#include "sim/io/scenario.hpp"
#include "tests/support/catalog.hpp"
#include "tests/support/files.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = fs::path(CLUSTERSIM_SOURCE_DIR);
const fs::path kSynthetic = kRoot / "scenarios" / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";
const fs::path kTrace = kRoot / "scenarios" / "serving" / "llama2-70b-azure-conv-trace.toml";

using testing::catalog;

constexpr auto& error_of = testing::serving_scenario_error;

TEST(ServingScenario, LoadsTheFleetTheWorkloadAndTheTargets) {
  EXPECT_TRUE(is_serving_scenario(kSynthetic));
  EXPECT_FALSE(is_serving_scenario(kRoot / "scenarios" / "megatron" / "sc21-table1-1p7b-32gpus.toml"));
  const ServingScenario s = load_serving_scenario(kSynthetic, {}, catalog());
  EXPECT_EQ(s.model.num_layers, 80);
  EXPECT_EQ(s.model.kv_heads(), 8);
  EXPECT_TRUE(s.model.gated_mlp);
  EXPECT_EQ(s.serving.vm_size, "Standard_ND96isr_H100_v5");
  EXPECT_EQ(s.serving.replicas, 8);
  EXPECT_EQ(s.serving.tensor, 4);
  EXPECT_EQ(s.serving.max_num_seqs, 256);  // vLLM's defaults
  EXPECT_EQ(s.serving.block_size, 16);
  EXPECT_DOUBLE_EQ(s.serving.gpu_memory_utilization, 0.9);
  ASSERT_TRUE(s.serving.vm_price_usd_per_hour);
  EXPECT_DOUBLE_EQ(*s.serving.vm_price_usd_per_hour, 98.32);
  EXPECT_DOUBLE_EQ(s.workload.rate_per_s, 20.0);
  EXPECT_EQ(s.workload.prompt.kind, "lognormal");
  EXPECT_EQ(s.workload.output.tokens, 256);
  EXPECT_FALSE(s.workload.trace);
  ASSERT_TRUE(s.slo.ttft_p99_ms);
  EXPECT_DOUBLE_EQ(*s.slo.ttft_p99_ms, 2000.0);
  EXPECT_NE(s.resolved_toml.find("[serving]"), std::string::npos);
  // The trace resolves against the scenario's directory.
  const ServingScenario t = load_serving_scenario(kTrace, {}, catalog());
  ASSERT_TRUE(t.workload.trace);
  EXPECT_EQ(*t.workload.trace, kTrace.parent_path() / "traces" / "AzureLLMInferenceTrace_conv.csv");
}

TEST(ServingScenario, BadFleetsAreLocated) {
  std::string e = error_of(kSynthetic, {"serving.tensor=3"});
  EXPECT_NE(e.find("--set:1:16: key 'serving.tensor': must divide model.num_attention_heads (64)"), std::string::npos)
      << e;
  e = error_of(kSynthetic, {"serving.tensor=16"});
  EXPECT_NE(e.find("key 'serving.tensor': a replica's tensor-parallel GPUs share one NVLink domain: at most 8"),
            std::string::npos)
      << e;
  e = error_of(kSynthetic, {"serving.vm_size=\"Standard_ND96isr_H100\""});
  EXPECT_NE(e.find("key 'serving.vm_size': unknown VM size"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.vm_size=\"Standard_ND96amsr_A100_v4\"", "serving.precision=\"fp8\""});
  EXPECT_NE(e.find("key 'serving.precision': the A100-SXM4-80GB of Standard_ND96amsr_A100_v4 has no fp8 math"),
            std::string::npos)
      << e;
  // Multi-latent attention is modelled for serving since issue 30 (models/serving/mla.hpp).
  EXPECT_TRUE(load_serving_scenario(kSynthetic, {"model.multi_latent_attention=true"}, catalog()).model.multi_latent_attention);
  // Mixture of experts: each expert is split over the replica's tensor-parallel GPUs.
  const ServingScenario moe = load_serving_scenario(kSynthetic, {"model.num_experts=8", "model.moe_ffn_hidden_size=3584"}, catalog());
  EXPECT_EQ(moe.model.num_experts, 8);
  e = error_of(kSynthetic, {"model.num_experts=8", "model.moe_ffn_hidden_size=1001"});
  EXPECT_NE(e.find("key 'serving.tensor': must divide model.moe_ffn_hidden_size (1001)"), std::string::npos) << e;
  // Pipeline stages: at most the layers, tensor-parallel groups inside one VM, and not (yet) with a changing fleet.
  const ServingScenario pp = load_serving_scenario(kSynthetic, {"serving.tensor=8", "serving.pipeline=2"}, catalog());
  EXPECT_EQ(pp.serving.gpus_per_replica(), 16);
  e = error_of(kSynthetic, {"serving.pipeline=81"});
  EXPECT_NE(e.find("key 'serving.pipeline': must not exceed model.num_layers (80)"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.pipeline=2", "serving.min_replicas=1", "serving.max_replicas=4"});
  EXPECT_NE(e.find("key 'serving.min_replicas': not modelled with serving.pipeline > 1 yet"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.pipeline=2", "serving.spot_replicas=1"});
  EXPECT_NE(e.find("key 'serving.spot_replicas': not modelled with serving.pipeline > 1 yet"), std::string::npos) << e;
  // The step's variability is a training run's: a located error in a serving scenario.
  e = error_of(kSynthetic, {"simulation.variability=on"});
  EXPECT_NE(e.find("key 'simulation.variability': a training run's key"), std::string::npos) << e;
  e = error_of(kSynthetic, {"model.num_experts=8", "model.moe_router_topk=9"});
  EXPECT_NE(e.find("key 'model.moe_router_topk': must not exceed model.num_experts (8)"), std::string::npos) << e;
}

TEST(ServingScenario, FleetsWithoutKvCacheAndRunsBeyondTheBudgetAreLocated) {
  // Llama 3 70B's 132 GiB of bf16 weights on one 80 GB H100 leave no KV cache.
  std::string e = error_of(kSynthetic, {"serving.tensor=1"});
  EXPECT_NE(e.find("--set:1:16: key 'serving.tensor': the weights (131 GiB per GPU at tensor 1) leave no KV cache"),
            std::string::npos)
      << e;
  e = error_of(kSynthetic, {"workload.rate_per_s=10000"});
  EXPECT_NE(e.find("key 'workload.rate_per_s': rate x duration = 6000000 requests, above the simulation's budget"),
            std::string::npos)
      << e;
  e = error_of(kSynthetic, {"workload.rate_per_s=3000", "workload.output=\"fixed\"", "workload.output_tokens=8000"});
  EXPECT_NE(e.find("output tokens, above the simulation's budget of 200,000,000"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.sample_interval_s=0.0001"});
  EXPECT_NE(e.find("key 'serving.sample_interval_s': more than 1,000,000 samples"), std::string::npos) << e;
}

TEST(ServingScenario, WorkloadNeedsExactlyOneSourceAndSaneLengths) {
  std::string e = error_of(kSynthetic, {"workload.trace=\"traces/AzureLLMInferenceTrace_code.csv\""});
  EXPECT_NE(e.find("key 'workload.rate_per_s': a trace gives the requests: drop workload.trace or this key"),
            std::string::npos)
      << e;
  e = error_of(kTrace, {"workload.trace=\"traces/missing.csv\""});
  EXPECT_NE(e.find("--set:1:16: key 'workload.trace': cannot read the trace"), std::string::npos) << e;
  e = error_of(kSynthetic, {"workload.prompt=\"uniform\""});
  EXPECT_NE(e.find("key 'workload.prompt_min': required with workload.prompt = \"uniform\""), std::string::npos)
      << e;
  e = error_of(kSynthetic, {"workload.prompt=\"uniform\"", "workload.prompt_min=500", "workload.prompt_max=100"});
  EXPECT_NE(e.find("--set:2:21: key 'workload.prompt_min': must not exceed workload.prompt_max"), std::string::npos)
      << e;
  e = error_of(kSynthetic, {"workload.rate_per_s=0"});
  EXPECT_NE(e.find("key 'workload.rate_per_s'"), std::string::npos) << e;
  // A lognormal takes _min and _max as truncation bounds (a benchmark's sampler drops the rest); a fixed length
  // takes neither; bounds with almost no probability between them are refused at the bound.
  const ServingScenario capped =
      load_serving_scenario(kSynthetic, {"workload.prompt_max=1024", "workload.prompt_min=4"}, catalog());
  EXPECT_EQ(capped.workload.prompt.kind, "lognormal");
  EXPECT_EQ(capped.workload.prompt.max, 1024);
  EXPECT_EQ(capped.workload.prompt.min, 4);
  EXPECT_FALSE(capped.workload.output.max);
  e = error_of(kSynthetic, {"workload.output=\"fixed\"", "workload.output_max=100"});
  EXPECT_NE(e.find("--set:2:21: key 'workload.output_max': a bound of a uniform or lognormal length"),
            std::string::npos)
      << e;
  e = error_of(kSynthetic, {"workload.prompt_min=1000000", "workload.prompt_max=2000000"});
  EXPECT_NE(e.find("key 'workload.prompt_max': the lognormal of median"), std::string::npos) << e;
  e = error_of(kSynthetic, {"workload.prompt_min=600", "workload.prompt_max=500"});
  EXPECT_NE(e.find("key 'workload.prompt_min': must not exceed workload.prompt_max"), std::string::npos) << e;
}

TEST(ServingScenario, BenchmarkWorkloadsNeedTheirCounts) {
  // offline and closed_loop send `requests` requests and take no rate; a closed loop needs its concurrency.
  const std::vector<std::string> offline = {"workload.arrival=\"offline\"", "workload.rate_per_s=1"};
  std::string e = error_of(kSynthetic, offline);
  EXPECT_NE(e.find("key 'workload.rate_per_s': arrival = \"offline\" takes no rate"), std::string::npos) << e;
  const fs::path row = kRoot / "scenarios" / "validation-serving" / "nim-llm-benchmarking-perf-66.toml";
  const ServingScenario closed = load_serving_scenario(row, {}, catalog());
  EXPECT_EQ(closed.workload.arrival, "closed_loop");
  EXPECT_EQ(closed.workload.concurrency, 50);
  EXPECT_EQ(closed.workload.requests, 500);
  e = error_of(row, {"workload.arrival=\"offline\""});
  EXPECT_NE(e.find("key 'workload.concurrency': only a closed loop"), std::string::npos) << e;
  const fs::path offline_row = kRoot / "scenarios" / "validation-serving" / "trtllm-perf-overview-v017-01.toml";
  e = error_of(offline_row, {"workload.arrival=\"closed_loop\""});
  EXPECT_NE(e.find("key 'workload.concurrency': required with arrival = \"closed_loop\""), std::string::npos) << e;
  e = error_of(offline_row, {"workload.requests=0"});
  EXPECT_NE(e.find("key 'workload.requests'"), std::string::npos) << e;
}

TEST(ServingScenario, EnginesSetTheOverheadAndTheKvBudget) {
  const fs::path row = kRoot / "scenarios" / "validation-serving" / "trtllm-perf-overview-v017-01.toml";
  const ServingScenario trt = load_serving_scenario(row, {}, catalog());
  EXPECT_EQ(trt.serving.engine, "tensorrt-llm-0.17");
  const models::EngineProfile& p = models::engine_profile("tensorrt-llm-0.17");
  EXPECT_DOUBLE_EQ(trt.serving.engine_overhead_ms, p.overhead.fixed.value() * 1e3);
  EXPECT_DOUBLE_EQ(trt.serving.engine_overhead_per_sequence_us, p.overhead.per_sequence.value() * 1e6);
  // A scenario's own overhead wins over the engine's.
  const ServingScenario own = load_serving_scenario(row, {"serving.engine_overhead_ms=0.25"}, catalog());
  EXPECT_DOUBLE_EQ(own.serving.engine_overhead_ms, 0.25);
  std::string e = error_of(row, {"serving.engine=\"tgi\""});
  EXPECT_NE(e.find("key 'serving.engine'"), std::string::npos) << e;
  // The loader's choices are the releases' names, then the families' aliases; an alias resolves to its release.
  std::vector<std::string> names;
  for (const models::EngineProfile& q : models::engine_profiles()) names.emplace_back(q.name);
  for (const models::EngineAlias& a : models::engine_aliases()) names.emplace_back(a.name);
  EXPECT_EQ(names, std::vector<std::string>(std::begin(models::kEngineNames), std::end(models::kEngineNames)));
  EXPECT_EQ(load_serving_scenario(kSynthetic, {}, catalog()).serving.engine, "vllm-0.6");
  EXPECT_NE(load_serving_scenario(kSynthetic, {}, catalog()).resolved_toml.find("engine = \"vllm-0.6\""),
            std::string::npos);
  // Multi-step scheduling is vLLM v0.6-v0.7's.
  EXPECT_EQ(load_serving_scenario(kSynthetic, {"serving.scheduler_steps=10"}, catalog()).serving.scheduler_steps, 10);
  e = error_of(row, {"serving.scheduler_steps=8"});
  EXPECT_NE(e.find("key 'serving.scheduler_steps': multi-step scheduling is vLLM v0.6-v0.7's"), std::string::npos) << e;
  EXPECT_FALSE(models::kv_cache_budget("vllm", 0.9, 8192, 256, 16).of_free_memory);
  EXPECT_TRUE(models::kv_cache_budget("tensorrt-llm", 0.9, 8192, 256, 16).of_free_memory);
  // The capacity scheduler policy: the engine's default (TensorRT-LLM's GUARANTEED_NO_EVICT, vLLM's on-demand
  // blocks), or the scenario's.
  const ServingScenario trt_default =
      load_serving_scenario(kRoot / "scenarios" / "validation-serving" / "nim-llm-benchmarking-perf-63.toml", {}, catalog());
  EXPECT_EQ(trt_default.serving.capacity_scheduler_policy, "guaranteed_no_evict");
  EXPECT_EQ(load_serving_scenario(row, {"serving.capacity_scheduler_policy=\"max_utilization\""}, catalog())
                .serving.capacity_scheduler_policy,
            "max_utilization");
  EXPECT_EQ(load_serving_scenario(kSynthetic, {}, catalog()).serving.capacity_scheduler_policy, "max_utilization");
  e = error_of(row, {"serving.capacity_scheduler_policy=\"static_batch\""});
  EXPECT_NE(e.find("key 'serving.capacity_scheduler_policy'"), std::string::npos) << e;
  EXPECT_EQ(models::capacity_policy("guaranteed_no_evict"), models::CapacityPolicy::guaranteed_no_evict);
  EXPECT_THROW((void)models::capacity_policy("fcfs"), std::invalid_argument);
}

TEST(ServingScenario, AutoscalingAndSpotReplicasAreChecked) {
  const ServingScenario a = load_serving_scenario(
      kSynthetic, {"serving.min_replicas=2", "serving.max_replicas=12", "serving.replicas=4"}, catalog());
  EXPECT_EQ(a.serving.min_replicas, 2);
  EXPECT_EQ(a.serving.max_replicas, 12);
  EXPECT_DOUBLE_EQ(a.serving.target_outstanding_per_replica, 16.0);
  EXPECT_DOUBLE_EQ(a.serving.autoscale_interval_s, 15.0);
  EXPECT_DOUBLE_EQ(a.serving.scale_down_window_s, 300.0);
  std::string e = error_of(kSynthetic, {"serving.max_replicas=12"});
  EXPECT_NE(e.find("key 'serving.min_replicas': autoscaling needs both"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.min_replicas=10", "serving.max_replicas=12"});
  EXPECT_NE(e.find("key 'serving.replicas': the replicas at time 0 must be within [min_replicas, max_replicas] = "
                   "[10, 12], got 8"),
            std::string::npos)
      << e;
  e = error_of(kSynthetic, {"serving.min_replicas=2", "serving.max_replicas=12", "serving.spot_replicas=1"});
  EXPECT_NE(e.find("key 'serving.spot_replicas': spot replicas with autoscaling are not modelled yet"),
            std::string::npos)
      << e;
  e = error_of(kSynthetic, {"serving.spot_replicas=9"});
  EXPECT_NE(e.find("key 'serving.spot_replicas': must not exceed serving.replicas (8)"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.min_replicas=1", "serving.max_replicas=100000", "serving.autoscale_interval_s=0.01"});
  EXPECT_NE(e.find("key 'serving.autoscale_interval_s'"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.zone_outage_start_s=60"});
  EXPECT_NE(e.find("key 'serving.zone_outage_start_s': losing the only zone stops the whole fleet"), std::string::npos)
      << e;
  e = error_of(kSynthetic, {"serving.zones=9"});
  EXPECT_NE(e.find("key 'serving.zones': more zones than replicas (8)"), std::string::npos) << e;
  e = error_of(kSynthetic, {"serving.zones=2", "serving.zone_outage_duration_s=60"});
  EXPECT_NE(e.find("key 'serving.zone_outage_duration_s': needs serving.zone_outage_start_s"), std::string::npos) << e;
  const ServingScenario zoned = load_serving_scenario(
      kSynthetic, {"serving.zones=2", "serving.zone_outage_start_s=60", "serving.zone_outage_duration_s=600"}, catalog());
  EXPECT_EQ(zoned.serving.zones, 2);
  EXPECT_EQ(zoned.serving.zone_outage_start_s, 60.0);
  const ServingScenario spot = load_serving_scenario(kSynthetic, {"serving.spot_replicas=4"}, catalog());
  EXPECT_EQ(spot.serving.spot_replicas, 4);
  EXPECT_DOUBLE_EQ(spot.serving.spot_discount, 0.7);
  EXPECT_DOUBLE_EQ(spot.serving.spot_notice_s, 30.0);
}

TEST(ServingScenario, PrecisionsNeedTheirMathOnTheDevice) {
  // The T4 has fp16 tensor cores but no bf16: bf16 is an error at the key; int8 weight-only runs fp16 math.
  std::string e = error_of(kSynthetic, {"serving.vm_size=\"Standard_NC4as_T4_v3\"", "serving.tensor=1"});
  EXPECT_NE(e.find("key 'serving.precision': the T4 of Standard_NC4as_T4_v3 has no bf16 math"), std::string::npos)
      << e;
  const fs::path seven_b = kRoot / "scenarios" / "sweeps" / "llama2-7b-serving-which-vm.toml";
  const ServingScenario t4 = load_serving_scenario(
      seven_b, {"serving.vm_size=\"Standard_NC4as_T4_v3\"", "serving.precision=\"int8\""}, catalog());
  EXPECT_EQ(models::serving_numerics(t4.serving.precision, false).math, models::Precision::fp16);
  // fp16 weights of a 7B leave no KV cache in the T4's 16 GB.
  e = error_of(seven_b, {"serving.vm_size=\"Standard_NC4as_T4_v3\"", "serving.precision=\"fp16\""});
  EXPECT_NE(e.find("key 'serving.tensor': the weights (13 GiB per GPU at tensor 1) leave no KV cache"),
            std::string::npos)
      << e;
}

TEST(ServingScenario, ReferencesKeepToTheirKind) {
  const fs::path row = kRoot / "scenarios" / "validation-serving" / "trtllm-perf-overview-v017-01.toml";
  const ServingScenario s = load_serving_scenario(row, {}, catalog());
  ASSERT_TRUE(s.reference);
  EXPECT_EQ(s.reference->metric, "output_tokens_per_s");
  EXPECT_DOUBLE_EQ(s.reference->value, 28836.77);
  EXPECT_EQ(s.reference->dataset, "trtllm_perf_overview_v0.17");
  std::string e = error_of(row, {"reference.tflops_per_gpu=100"});
  EXPECT_NE(e.find("key 'reference.tflops_per_gpu': a training metric"), std::string::npos) << e;
  e = error_of(row, {"reference.metric=\"ttft_p42_ms\""});
  EXPECT_NE(e.find("key 'reference.metric'"), std::string::npos) << e;
  e = error_of(kSynthetic, {"reference.source=\"a paper\"", "reference.metric=\"ttft_p50_ms\""});
  EXPECT_NE(e.find("key 'reference.value': a serving scenario's [reference] needs metric and value"),
            std::string::npos)
      << e;
  try {
    (void)load_scenario(kRoot / "scenarios" / "megatron" / "sc21-table1-1p7b-32gpus.toml",
                        {"reference.metric=\"ttft_p50_ms\""}, catalog());
    ADD_FAILURE() << "expected a ScenarioError";
  } catch (const ScenarioError& x) {
    EXPECT_NE(std::string(x.what()).find("key 'reference.metric': a serving scenario's key"), std::string::npos)
        << x.what();
  }
}

TEST(ServingScenario, EachKindKeepsToItsTables) {
  // A training table in a serving scenario, and a serving table in a training scenario, are errors at the table;
  // one that a --set created is an error at that --set, which it names (issue 28).
  std::string e = error_of(kSynthetic, {"training.global_batch_size=8"});
  EXPECT_EQ(e, "--set:1:1: key 'training': --set training.global_batch_size=8: [training] belongs to training "
               "scenarios; this file is a serving scenario (it has a [serving] table)");
  try {
    (void)load_scenario(kRoot / "scenarios" / "megatron" / "sc21-table1-1p7b-32gpus.toml", {"slo.ttft_p99_ms=100"},
                        catalog());
    ADD_FAILURE() << "expected a ScenarioError";
  } catch (const ScenarioError& x) {
    EXPECT_EQ(std::string(x.what()), "--set:1:1: key 'slo': --set slo.ttft_p99_ms=100: [slo] belongs to serving "
                                     "scenarios; this file is a training scenario (it has no [serving] table)");
  }
  // A training load of a serving scenario stops at its [serving] header.
  try {
    (void)load_scenario(kSynthetic, {}, catalog());
    ADD_FAILURE() << "expected a ScenarioError";
  } catch (const ScenarioError& x) {
    EXPECT_NE(std::string(x.what()).find("llama3-70b-nd-h100-tp4-20rps.toml:"), std::string::npos) << x.what();
    EXPECT_EQ(x.key(), "serving");
  }
}

TEST(ServingScenario, APromptNoIterationHoldsIsRefusedAtLoadWithoutChunkedPrefill) {
  // Issue 26, defect 3: fixed 3,000-token prompts, 2,048 tokens per iteration, prompts computed whole: no request
  // could ever be scheduled (0 completed, exit 0). vLLM refuses such a configuration at start; so does the loader.
  const fs::path fixed = kRoot / "scenarios" / "serving" / "llama31-405b-bf16-tp8-pp2.toml";
  const std::vector<std::string> off = {"serving.chunked_prefill=false", "serving.max_num_batched_tokens=2048"};
  std::vector<std::string> o = off;
  o.push_back("workload.prompt_tokens=3000");
  std::string e = error_of(fixed, o);
  EXPECT_NE(e.find("--set:2:32: key 'serving.max_num_batched_tokens': max_num_batched_tokens (2048) is smaller "
                   "than the longest prompt (3000, workload.prompt) and chunked prefill is off"),
            std::string::npos)
      << e;
  // A uniform or truncated lognormal prompt's _max is its longest.
  o = off;
  for (const char* k : {"workload.prompt=\"uniform\"", "workload.prompt_min=100", "workload.prompt_max=4000"}) {
    o.push_back(k);
  }
  e = error_of(kSynthetic, o);
  EXPECT_NE(e.find("smaller than the longest prompt (4000, workload.prompt)"), std::string::npos) << e;
  // A trace's longest prompt is known once it is read.
  e = error_of(kTrace, {"serving.chunked_prefill=false", "serving.max_num_batched_tokens=512"});
  EXPECT_NE(e.find("key 'serving.max_num_batched_tokens': max_num_batched_tokens (512) is smaller than the longest "
                   "prompt ("),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(", in the trace) and chunked prefill is off"), std::string::npos) << e;
  // Chunked prefill splits the prompt: it loads; so does an unbounded lognormal (rejected at run time if drawn).
  EXPECT_NO_THROW((void)load_serving_scenario(
      fixed, {"serving.max_num_batched_tokens=2048", "workload.prompt_tokens=3000"}, catalog()));
  EXPECT_NO_THROW((void)load_serving_scenario(kSynthetic, off, catalog()));
}

TEST(ServingScenario, TraceErrorsCarryTheKeyAndTheTraceLineAndNeverTheFile) {
  // Issue 26, defect 18: a trace error named no key, and echoed the first line of any file (/etc/passwd).
  const clustersim::testing::TempDir tmp("clustersim-serving-scenario-");
  const fs::path passwd = tmp.path() / "passwd";
  std::ofstream(passwd) << "root:x:0:0:root:/root:/bin/bash\n";
  const std::string e = error_of(kTrace, {"workload.trace=\"" + passwd.string() + "\""});
  EXPECT_NE(e.find("--set:1:16: key 'workload.trace': " + passwd.string() +
                   ":1: expected the header TIMESTAMP,ContextTokens,GeneratedTokens"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("root"), std::string::npos) << e;
  const fs::path bad = tmp.path() / "bad.csv";
  std::ofstream(bad) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n"
                        "2023-02-31 18:15:47.00,9223372036854775807,5\n";
  const std::string d = error_of(kTrace, {"workload.trace=\"" + bad.string() + "\""});
  EXPECT_NE(d.find("key 'workload.trace': " + bad.string() + ":3: malformed timestamp or impossible date"),
            std::string::npos)
      << d;
}

TEST(ServingScenario, ATraceRunsWholeUnlessAWindowIsGiven) {
  // Issue 26: workload.duration_s's 60 s default cut a trace silently. The shipped trace scenarios give a window.
  EXPECT_TRUE(load_serving_scenario(kTrace, {}, catalog()).workload.duration_given);
  const clustersim::testing::TempDir tmp("clustersim-serving-scenario-window-");
  const fs::path& dir = tmp.path();
  std::ifstream in(kTrace);
  std::ofstream out(dir / "whole.toml");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("duration_s", 0) != 0) out << line << "\n";
  }
  out.close();
  const std::string trace =
      "workload.trace=\"" + (kRoot / "tests" / "serving" / "data" / "azure_conv_2023_first300.csv").string() + "\"";
  EXPECT_FALSE(load_serving_scenario(dir / "whole.toml", {trace}, catalog()).workload.duration_given);
  EXPECT_TRUE(load_serving_scenario(dir / "whole.toml", {trace, "workload.duration_s=10"}, catalog())
                  .workload.duration_given);
}

TEST(ServingScenario, FleetsBeyondTheEngineAndAutoscalerBudgetsAreLocated) {
  // Issue 26, defect 9: 10^5 replicas x 128 stages needed 10.5 GB; a 1e-3 s autoscale interval over an hour made
  // 3.6 million decisions.
  std::string e = error_of(kSynthetic, {"serving.replicas=100000", "serving.pipeline=8"});
  EXPECT_NE(e.find("key 'serving.replicas': 100000 replicas x 8 pipeline stages = 800000 engines, above the "
                   "simulation's budget of 262144"),
            std::string::npos)
      << e;
  const fs::path autoscale = kRoot / "scenarios" / "serving" / "llama3-70b-azure-conv-autoscale.toml";
  e = error_of(autoscale, {"serving.autoscale_interval_s=0.001"});
  EXPECT_NE(e.find("key 'serving.autoscale_interval_s': about 3600000 autoscaler decisions over the workload's "
                   "window, above the simulation's budget of 1,000,000"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace clustersim::sim
