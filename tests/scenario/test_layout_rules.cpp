// derive_layout (sim/io/layout_rules.hpp) against loading: on thousands of layouts of both shipped layout
// searches, valid and invalid (non-dividing sizes, GPU counts that do not match, out-of-range and overflowing
// values, batch splits that fail, too many passes), with --set options that switch the layout rules on
// (moe_a2a_overlap, gpipe, the flex dispatcher, an explicit tp_comm_overlap, NeMo's profile), the derived
// scenario equals a fresh load of the layout in every field, and it refuses exactly the layouts the load refuses.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/layout.hpp"
#include "models/splitmix64.hpp"
#include "sim/io/layout_rules.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

#define EXPECT_FIELD(x) EXPECT_EQ(a.x, b.x) << #x
#define EXPECT_DOUBLE_FIELD(x) EXPECT_TRUE(same_bits(a.x, b.x)) << #x

/// Every field of two scenarios equal (doubles bit for bit). The size checks below fail when a field is added
/// to one of the structs compared here (on the x86-64 / libstdc++ layout this project builds for), so that it
/// is added to the comparison too.
void expect_same_scenario(const sim::Scenario& a, const sim::Scenario& b) {
#if defined(__x86_64__) && defined(__GLIBCXX__)
  static_assert(sizeof(sim::JobConfig) == 200, "a field added to JobConfig: compare it below");
  static_assert(sizeof(sim::ClusterConfig) == 144, "a field added to ClusterConfig: compare it below");
  static_assert(sizeof(models::ModelConfig) == 192, "a field added to ModelConfig: compare it below");
  static_assert(sizeof(models::TrainingConfig) == 88, "a field added to TrainingConfig: compare it below");
  static_assert(sizeof(models::ParallelismConfig) == 104, "a field added to ParallelismConfig: compare it below");
  static_assert(sizeof(sim::Scenario) == 1272, "a field added to Scenario: compare it below");
#endif
  EXPECT_FIELD(schema_version);
  EXPECT_FIELD(name);
  EXPECT_FIELD(description);
  // model
  EXPECT_FIELD(model.num_layers);
  EXPECT_FIELD(model.hidden_size);
  EXPECT_FIELD(model.num_attention_heads);
  EXPECT_FIELD(model.num_query_groups);
  EXPECT_FIELD(model.ffn_hidden_size);
  EXPECT_FIELD(model.vocab_size);
  EXPECT_FIELD(model.seq_length);
  EXPECT_FIELD(model.gated_mlp);
  EXPECT_FIELD(model.rope);
  EXPECT_DOUBLE_FIELD(model.dropout);
  EXPECT_FIELD(model.tie_embeddings);
  EXPECT_FIELD(model.kv_channels);
  EXPECT_FIELD(model.multi_latent_attention);
  EXPECT_FIELD(model.q_lora_rank);
  EXPECT_FIELD(model.kv_lora_rank);
  EXPECT_FIELD(model.qk_head_dim);
  EXPECT_FIELD(model.qk_pos_emb_head_dim);
  EXPECT_FIELD(model.v_head_dim);
  EXPECT_FIELD(model.num_experts);
  EXPECT_FIELD(model.moe_router_topk);
  EXPECT_FIELD(model.moe_ffn_hidden_size);
  EXPECT_FIELD(model.moe_shared_expert_intermediate_size);
  EXPECT_FIELD(model.moe_layer_freq);
  EXPECT_FIELD(model.num_dense_layers_first);
  EXPECT_FIELD(model.mtp_num_layers);
  // training
  EXPECT_FIELD(training.global_batch_size);
  EXPECT_FIELD(training.micro_batch_size);
  EXPECT_FIELD(training.precision);
  EXPECT_FIELD(training.activation_recompute);
  EXPECT_FIELD(training.flash_attention);
  EXPECT_FIELD(training.attention_kernel);
  EXPECT_FIELD(training.gradient_accumulation_fusion);
  EXPECT_FIELD(training.kernel_fusion);
  EXPECT_FIELD(training.framework);
  EXPECT_FIELD(training.grad_reduce);
  EXPECT_FIELD(training.recompute_num_layers);
  EXPECT_FIELD(training.recompute_modules);
  EXPECT_FIELD(training.moe_token_dispatcher);
  EXPECT_FIELD(training.moe_router_load_balancing);
  EXPECT_DOUBLE_FIELD(training.moe_expert_capacity_factor);
  EXPECT_FIELD(training.moe_pad_expert_input_to_capacity);
  EXPECT_FIELD(training.moe_router_fusion);
  EXPECT_FIELD(training.moe_grouped_gemm);
  EXPECT_FIELD(training.moe_shared_expert_overlap);
  EXPECT_FIELD(training.moe_a2a_overlap);
  // parallelism
  EXPECT_FIELD(parallelism.tensor);
  EXPECT_FIELD(parallelism.pipeline);
  EXPECT_FIELD(parallelism.data);
  EXPECT_FIELD(parallelism.virtual_stages);
  EXPECT_FIELD(parallelism.sequence_parallel);
  EXPECT_FIELD(parallelism.zero_stage);
  EXPECT_FIELD(parallelism.overlap_grad_reduce);
  EXPECT_FIELD(parallelism.overlap_param_gather);
  EXPECT_FIELD(parallelism.overlap_p2p_comm);
  EXPECT_FIELD(parallelism.async_tensor_parallel_allreduce);
  EXPECT_FIELD(parallelism.tp_comm_overlap);
  EXPECT_FIELD(parallelism.context);
  EXPECT_FIELD(parallelism.context_comm);
  EXPECT_FIELD(parallelism.expert);
  EXPECT_FIELD(parallelism.expert_tensor);
  EXPECT_FIELD(parallelism.first_stage_layers);
  EXPECT_FIELD(parallelism.last_stage_layers);
  EXPECT_FIELD(schedule);
  // cluster, network
  EXPECT_FIELD(cluster.vm_size);
  EXPECT_FIELD(cluster.nodes);
  EXPECT_FIELD(cluster.vm_price_usd_per_hour);
  EXPECT_FIELD(cluster.fabric);
  EXPECT_DOUBLE_FIELD(cluster.oversubscription);
  EXPECT_FIELD(cluster.fat_tree_radix);
  EXPECT_EQ(a.cluster.zones.size(), b.cluster.zones.size());
  for (size_t i = 0; i < a.cluster.zones.size() && i < b.cluster.zones.size(); ++i) {
    EXPECT_FIELD(cluster.zones[i].name);
    EXPECT_FIELD(cluster.zones[i].nodes);
  }
  EXPECT_DOUBLE_FIELD(cluster.inter_zone_latency.value());
  EXPECT_EQ(a.cluster.inter_zone_bandwidth_per_node.has_value(), b.cluster.inter_zone_bandwidth_per_node.has_value());
  if (a.cluster.inter_zone_bandwidth_per_node && b.cluster.inter_zone_bandwidth_per_node) {
    EXPECT_DOUBLE_FIELD(cluster.inter_zone_bandwidth_per_node->value());
  }
  EXPECT_FIELD(cluster.vms_per_nvlink_domain);
  EXPECT_FIELD(network.all_reduce_algorithm);
  // job
  EXPECT_EQ(a.job.has_value(), b.job.has_value());
  if (a.job && b.job) {
    EXPECT_FIELD(job->steps);
    EXPECT_FIELD(job->replications);
    EXPECT_FIELD(job->spot);
    EXPECT_DOUBLE_FIELD(job->spot_eviction_rate_per_hour);
    EXPECT_EQ(a.job->eviction_trace.size(), b.job->eviction_trace.size());
    EXPECT_DOUBLE_FIELD(job->failure_rate_per_gpu_day);
    EXPECT_FIELD(job->checkpoint_every_steps);
    EXPECT_EQ(a.job->checkpoint_every.has_value(), b.job->checkpoint_every.has_value());
    if (a.job->checkpoint_every && b.job->checkpoint_every) {
      EXPECT_DOUBLE_FIELD(job->checkpoint_every->value());
    }
    EXPECT_EQ(a.job->checkpoint_size.has_value(), b.job->checkpoint_size.has_value());
    if (a.job->checkpoint_size && b.job->checkpoint_size) {
      EXPECT_DOUBLE_FIELD(job->checkpoint_size->value());
    }
    EXPECT_DOUBLE_FIELD(job->detection.value());
    EXPECT_DOUBLE_FIELD(job->reprovision.value());
    EXPECT_DOUBLE_FIELD(job->spot_reprovision_mean.value());
    EXPECT_DOUBLE_FIELD(job->spot_discount);
    EXPECT_DOUBLE_FIELD(job->storage_usd_per_gb_month);
    EXPECT_DOUBLE_FIELD(job->egress_usd_per_gb);
    EXPECT_FIELD(job->checkpoint_async);
    EXPECT_DOUBLE_FIELD(job->checkpoint_write.value());
    EXPECT_DOUBLE_FIELD(job->checkpoint_read.value());
    EXPECT_DOUBLE_FIELD(job->restart.value());
    EXPECT_DOUBLE_FIELD(job->vm_price_usd_per_hour);
  }
  // reference
  EXPECT_EQ(a.reference.has_value(), b.reference.has_value());
  if (a.reference && b.reference) {
    EXPECT_FIELD(reference->tflops_per_gpu);
    EXPECT_FIELD(reference->step_time_s);
    EXPECT_FIELD(reference->tokens_per_s_per_gpu);
    EXPECT_FIELD(reference->mfu);
    EXPECT_FIELD(reference->source);
    EXPECT_FIELD(reference->dataset);
    EXPECT_FIELD(reference->exclude_reason);
  }
  // simulation, what-if, provenance
  EXPECT_FIELD(simulation.seed);
  EXPECT_FIELD(simulation.fidelity);
  EXPECT_EQ(a.simulation.variability.has_value(), b.simulation.variability.has_value());
  if (a.simulation.variability && b.simulation.variability) {
    EXPECT_DOUBLE_FIELD(simulation.variability->gpu_compute_cv);
    EXPECT_DOUBLE_FIELD(simulation.variability->slow_vm_fraction);
    EXPECT_DOUBLE_FIELD(simulation.variability->slow_vm_factor);
    EXPECT_FIELD(simulation.variability->gpu_compute_cv_source);
    EXPECT_FIELD(simulation.variability->slow_vm_source);
  }
  EXPECT_FIELD(what_if);
  EXPECT_FIELD(source_path);
  EXPECT_EQ(a.locations.size(), b.locations.size());
  for (const auto& [key, at] : b.locations) {
    const auto it = a.locations.find(key);
    if (it == a.locations.end()) {
      ADD_FAILURE() << key << " has no location";
      continue;
    }
    EXPECT_EQ(it->second.file, at.file) << key;
    EXPECT_EQ(it->second.line, at.line) << key;
    EXPECT_EQ(it->second.column, at.column) << key;
  }
  EXPECT_FIELD(resolved_toml);
  EXPECT_FIELD(overrides);
}

struct Counts {
  int loads = 0;
  int refused = 0;
  int load_to_know = 0;
};

/// Derives and loads each of `layouts` (each a list of layout settings) of `path` with `overrides`: a `loads`
/// verdict gives the scenario the load gives, a `refused` one a load that throws ScenarioError.
Counts expect_derived_equal_loads(const fs::path& path, const std::vector<std::string>& overrides,
                                  const std::vector<std::vector<sim::LayoutSetting>>& layouts) {
  const sim::ScenarioDocument document = sim::ScenarioDocument::read(path);
  const sim::Scenario base = sim::load_scenario(document, overrides, catalog(), sim::ResolvedText::skip);
  Counts counts;
  for (const auto& layout : layouts) {
    std::vector<std::string> all = overrides;
    std::string text;
    for (const sim::LayoutSetting& s : layout) {
      all.push_back(std::string(s.key) + "=" + std::to_string(s.value));
      text += all.back() + " ";
    }
    SCOPED_TRACE(text);
    sim::Scenario derived;
    const sim::LayoutVerdict verdict = sim::derive_layout(base, layout, derived);
    std::optional<sim::Scenario> loaded;
    try {
      loaded = sim::load_scenario(document, all, catalog(), sim::ResolvedText::skip);
    } catch (const sim::ScenarioError&) {
    }
    switch (verdict) {
      case sim::LayoutVerdict::loads:
        ++counts.loads;
        EXPECT_TRUE(loaded.has_value()) << "derived, but the load refuses it";
        if (loaded) expect_same_scenario(derived, *loaded);
        break;
      case sim::LayoutVerdict::refused:
        ++counts.refused;
        EXPECT_FALSE(loaded.has_value()) << "refused, but the load gives a scenario";
        break;
      case sim::LayoutVerdict::load_to_know: ++counts.load_to_know; break;
    }
  }
  std::printf("%s: %d derived, %d refused, %d to load\n", path.filename().c_str(), counts.loads, counts.refused,
              counts.load_to_know);
  return counts;
}

/// `n` layouts drawn (deterministically) from values that divide and values that do not, out of range and
/// overflowing ones, each setting tensor, [context,] pipeline, data, [expert,] micro batch and virtual stages as
/// the layout search does; data is usually GPUs / (tensor x context x pipeline) when that divides.
std::vector<std::vector<sim::LayoutSetting>> drawn_layouts(int64_t gpus, bool moe, int n) {
  const std::vector<int64_t> sizes{1, 1, 2, 2, 4, 4, 8, 8, 16, 32, 3, 6, 64, 0, -2, 1048576, 1048577};
  const std::vector<int64_t> small{1, 1, 1, 2, 2, 4, 8, 3, 16};
  const std::vector<int64_t> virtuals{1, 1, 1, 2, 2, 3, 4, 6, 8, 16385};
  const std::vector<int64_t> micro{1, 1, 2, 4, 3, 16777217, 0};
  std::vector<std::vector<sim::LayoutSetting>> out;
  uint64_t state = 31;
  const auto pick = [&state](const std::vector<int64_t>& v) {
    state = splitmix64(state);
    return v[state % v.size()];
  };
  for (int i = 0; i < n; ++i) {
    const int64_t t = pick(sizes), c = pick(small), p = pick(sizes);
    const int64_t tcp = t * c * p;
    state = splitmix64(state);
    int64_t d = tcp > 0 && gpus % tcp == 0 && state % 5 != 0 ? gpus / tcp : pick(sizes);
    if (state % 97 == 0) d = 1048576;  // tensor x context x pipeline x data may overflow
    std::vector<sim::LayoutSetting> layout{{"parallelism.tensor", t}, {"parallelism.context", c},
                                           {"parallelism.pipeline", p}, {"parallelism.data", d}};
    if (moe) layout.push_back({"parallelism.expert", state % 3 == 0 ? pick(sizes) : 2 * t * c});
    if (state % 7 == 0) layout.push_back({"parallelism.expert_tensor", pick(small)});
    layout.push_back({"training.micro_batch_size", pick(micro)});
    layout.push_back({"parallelism.virtual_stages", pick(virtuals)});
    out.push_back(std::move(layout));
  }
  return out;
}

/// Every candidate of the layout search of `path` (models::enumerate_layouts, as the sweep asks it), each
/// setting every layout key.
std::vector<std::vector<sim::LayoutSetting>> search_layouts(const fs::path& path) {
  const sim::Scenario s = sim::load_scenario(path, {}, catalog());
  const models::LayoutSearch search = sim::layout_search_of(s, catalog());
  std::vector<std::vector<sim::LayoutSetting>> out;
  for (const models::LayoutCandidate& c : models::enumerate_layouts(search)) {
    const models::ParallelismConfig& p = c.parallelism;
    out.push_back({{"parallelism.tensor", p.tensor},
                   {"parallelism.context", p.context},
                   {"parallelism.pipeline", p.pipeline},
                   {"parallelism.data", p.data},
                   {"parallelism.expert", p.expert},
                   {"parallelism.expert_tensor", p.expert_tensor},
                   {"training.micro_batch_size", c.micro_batch},
                   {"parallelism.virtual_stages", p.virtual_stages}});
  }
  return out;
}

const fs::path kGpt3 = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "gpt3-175b-1024-a100-layouts.toml";
const fs::path kMoe =
    fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "deepseek-v3-like-2048-h100-32k-layouts.toml";

TEST(LayoutRules, Gpt3LayoutsDerivedEqualLoads) {
  const auto layouts = drawn_layouts(1024, false, 1500);
  const Counts plain = expect_derived_equal_loads(kGpt3, {}, layouts);
  EXPECT_GT(plain.loads, 100);
  EXPECT_GT(plain.refused, 500);
  EXPECT_EQ(plain.load_to_know, 0);
  const Counts gpipe = expect_derived_equal_loads(kGpt3, {"parallelism.schedule=gpipe", "simulation.seed=5"}, layouts);
  EXPECT_GT(gpipe.loads, 50);
  // NeMo's profile turns tp_comm_overlap on (not explicit): sequence parallelism off and on.
  const Counts search = expect_derived_equal_loads(kGpt3, {}, search_layouts(kGpt3));
  EXPECT_GT(search.loads, 150);
  EXPECT_EQ(search.load_to_know, 0);
  const Counts nemo = expect_derived_equal_loads(kGpt3, {"training.framework=nemo"}, layouts);
  EXPECT_GT(nemo.loads, 100);
  expect_derived_equal_loads(kGpt3, {"training.framework=nemo", "parallelism.sequence_parallel=true"}, layouts);
  // Explicit: refused without sequence parallelism where tensor > 1; with the scenario's tensor 1, only a load
  // tells whether it was explicit.
  const Counts explicit_overlap = expect_derived_equal_loads(
      kGpt3, {"parallelism.tensor=1", "parallelism.data=128", "parallelism.tp_comm_overlap=true"}, layouts);
  EXPECT_GT(explicit_overlap.load_to_know, 100);
}

TEST(LayoutRules, MoeLayoutsDerivedEqualLoads) {
  const auto layouts = drawn_layouts(2048, true, 3000);
  const Counts plain = expect_derived_equal_loads(kMoe, {}, layouts);
  EXPECT_GT(plain.loads, 100);
  EXPECT_GT(plain.refused, 500);
  EXPECT_EQ(plain.load_to_know, 0);
  const Counts search = expect_derived_equal_loads(kMoe, {}, search_layouts(kMoe));
  EXPECT_GT(search.loads, 3000);
  EXPECT_EQ(search.load_to_know, 0);
  // A layout that loads with moe_a2a_overlap (interleaved: microbatches divisible by pipeline).
  const Counts overlap = expect_derived_equal_loads(
      kMoe,
      {"training.moe_a2a_overlap=true", "training.activation_recompute=selective", "parallelism.tensor=2",
       "parallelism.context=8", "parallelism.pipeline=4", "parallelism.virtual_stages=2"},
      layouts);
  EXPECT_GT(overlap.loads, 20);
  expect_derived_equal_loads(kMoe, {"training.moe_token_dispatcher=flex"}, layouts);
  expect_derived_equal_loads(kMoe, {"training.micro_batch_size=3", "job.steps=100"}, layouts);
}

TEST(LayoutRules, OtherKeysOrDataLeftToTheLoaderNeedALoad) {
  const sim::ScenarioDocument document = sim::ScenarioDocument::read(kGpt3);
  const sim::Scenario base = sim::load_scenario(document, {}, catalog(), sim::ResolvedText::skip);
  sim::Scenario out;
  const std::vector<sim::LayoutSetting> no_data{{"parallelism.tensor", 4}, {"parallelism.pipeline", 8}};
  EXPECT_EQ(sim::derive_layout(base, no_data, out), sim::LayoutVerdict::load_to_know);
  const std::vector<sim::LayoutSetting> other{{"parallelism.data", 16}, {"parallelism.zero_stage", 1}};
  EXPECT_EQ(sim::derive_layout(base, other, out), sim::LayoutVerdict::load_to_know);
  const sim::Scenario with_text = sim::load_scenario(document, {}, catalog());
  const std::vector<sim::LayoutSetting> valid{{"parallelism.tensor", 8}, {"parallelism.pipeline", 8},
                                              {"parallelism.data", 16}};
  EXPECT_EQ(sim::derive_layout(with_text, valid, out), sim::LayoutVerdict::load_to_know);
  EXPECT_EQ(sim::derive_layout(base, valid, out), sim::LayoutVerdict::loads);
}

}  // namespace
}  // namespace clustersim
