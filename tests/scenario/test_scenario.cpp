// Scenario loading: valid files, defaults, --set overrides, one test per class of bad input (each asserting the
// file, LINE:COL and key of the message), and the generated reference in docs/scenario-format.md.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/framework_profiles.hpp"
#include "sim/io/scenario_params.hpp"
#include "tests/support/files.hpp"

namespace clustersim::sim {
namespace {

const std::filesystem::path kSourceDir{CLUSTERSIM_SOURCE_DIR};
const std::filesystem::path kData = kSourceDir / "tests" / "scenario" / "data";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

Scenario load(const std::string& fixture, const std::vector<std::string>& overrides = {}) {
  return load_scenario(kData / fixture, overrides, catalog());
}

/// Loads `fixture` (with `overrides`) expecting a ScenarioError; checks that what() starts with
/// "FILE:LINE:COL: key 'KEY': " (FILE the fixture, or "--set") and contains `message`.
void expect_error(const std::string& fixture, const std::vector<std::string>& overrides, const std::string& file,
                  int64_t line, int64_t column, const std::string& key, const std::string& message) {
  try {
    (void)load(fixture, overrides);
    FAIL() << fixture << ": expected a ScenarioError";
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    const std::string prefix = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": key '" + key +
                               "': ";
    EXPECT_NE(what.find(prefix), std::string::npos) << "message: " << what << "\nexpected prefix: " << prefix;
    EXPECT_NE(what.find(message), std::string::npos) << "message: " << what << "\nexpected to contain: " << message;
    EXPECT_EQ(e.line(), line) << what;
    EXPECT_EQ(e.column(), column) << what;
    EXPECT_EQ(e.key(), key) << what;
  }
}

void expect_file_error(const std::string& fixture, int64_t line, int64_t column, const std::string& key,
                       const std::string& message) {
  expect_error(fixture, {}, (kData / fixture).string(), line, column, key, message);
}

// --- valid files -----------------------------------------------------------------------------------------------

TEST(ScenarioLoad, FullFileLoadsEveryValue) {
  const Scenario s = load("valid_full.toml");
  EXPECT_EQ(s.schema_version, 1);
  EXPECT_EQ(s.name, "megatron-sc21-145b-1536");
  EXPECT_EQ(s.description, "145.6B GPT on 1,536 A100-80GB (Megatron-LM SC'21, Table 1)");
  EXPECT_EQ(s.model.num_layers, 80);
  EXPECT_EQ(s.model.hidden_size, 12288);
  EXPECT_EQ(s.model.num_attention_heads, 96);
  EXPECT_EQ(s.model.num_query_groups, 96);
  EXPECT_EQ(s.model.ffn_hidden_size, 49152);
  EXPECT_EQ(s.model.vocab_size, 51200);
  EXPECT_EQ(s.model.seq_length, 2048);
  EXPECT_EQ(s.training.global_batch_size, 2304);
  EXPECT_EQ(s.training.micro_batch_size, 1);
  EXPECT_EQ(s.training.precision, models::Precision::bf16);
  EXPECT_EQ(s.training.activation_recompute, models::Recompute::full);
  EXPECT_EQ(s.parallelism.tensor, 8);
  EXPECT_EQ(s.parallelism.pipeline, 8);
  EXPECT_EQ(s.parallelism.data, 24);
  EXPECT_EQ(s.parallelism.virtual_stages, 1);
  EXPECT_FALSE(s.parallelism.sequence_parallel);
  EXPECT_EQ(s.parallelism.gpus(), 1536);  // 192 VMs x 8 A100
  EXPECT_EQ(s.cluster.vm_size, "Standard_ND96amsr_A100_v4");
  EXPECT_EQ(s.cluster.nodes, 192);
  ASSERT_TRUE(s.reference.has_value());
  ASSERT_TRUE(s.reference->tflops_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*s.reference->tflops_per_gpu, 148.0);  // an integer accepted for a number key
  EXPECT_FALSE(s.reference->step_time_s.has_value());
  EXPECT_FALSE(s.reference->mfu.has_value());
  EXPECT_EQ(s.reference->source, "Narayanan et al., SC'21, Table 1");
  EXPECT_EQ(s.simulation.seed, 7u);
  EXPECT_EQ(s.source_path, kData / "valid_full.toml");
}

TEST(ScenarioLoad, MinimalFileTakesDefaults) {
  const Scenario s = load("valid_minimal.toml");
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.model.num_query_groups, 16);     // = num_attention_heads
  EXPECT_EQ(s.model.ffn_hidden_size, 8192);    // 4 x 2048
  EXPECT_EQ(s.training.micro_batch_size, 1);
  EXPECT_EQ(s.training.precision, models::Precision::bf16);
  EXPECT_EQ(s.training.activation_recompute, models::Recompute::none);
  EXPECT_EQ(s.parallelism.tensor, 1);
  EXPECT_EQ(s.parallelism.pipeline, 1);
  EXPECT_EQ(s.parallelism.data, 32);  // 4 VMs x 8 H100 / (1 x 1)
  EXPECT_EQ(s.parallelism.virtual_stages, 1);
  EXPECT_FALSE(s.parallelism.sequence_parallel);
  EXPECT_FALSE(s.reference.has_value());
  EXPECT_EQ(s.simulation.seed, 0u);
}

TEST(ScenarioLoad, LlamaStyleModelAndKernelKeys) {
  const Scenario d = load("valid_minimal.toml");
  EXPECT_FALSE(d.model.rope);
  EXPECT_DOUBLE_EQ(d.model.dropout, 0.1);
  EXPECT_TRUE(d.model.tie_embeddings);
  EXPECT_EQ(d.training.kernel_fusion, models::KernelFusion::fused);
  EXPECT_EQ(d.training.recompute_num_layers, -1);
  const Scenario s = load("valid_minimal.toml",
                          {"model.position_embedding=rope", "model.dropout=0", "model.tie_embeddings=false",
                           "training.kernel_fusion=eager", "training.activation_recompute=selective_op",
                           "training.recompute_num_layers=3"});
  EXPECT_TRUE(s.model.rope);
  EXPECT_DOUBLE_EQ(s.model.dropout, 0.0);
  EXPECT_FALSE(s.model.tie_embeddings);
  EXPECT_EQ(s.training.kernel_fusion, models::KernelFusion::eager);
  EXPECT_EQ(s.training.activation_recompute, models::Recompute::selective_op);
  EXPECT_EQ(s.training.recompute_num_layers, 3);
  EXPECT_THROW(load("valid_minimal.toml", {"model.dropout=1"}), ScenarioError);
  EXPECT_THROW(load("valid_minimal.toml", {"training.kernel_fusion=jit"}), ScenarioError);
}

TEST(ScenarioLoad, FrameworkProfilesSetDefaultsAndScenarioKeysWin) {
  const Scenario core = load("valid_minimal.toml");
  EXPECT_EQ(core.training.framework, models::Framework::megatron_core);
  EXPECT_EQ(core.parallelism.zero_stage, 1);  // --use-distributed-optimizer
  EXPECT_TRUE(core.parallelism.overlap_grad_reduce);
  EXPECT_TRUE(core.training.flash_attention);
  EXPECT_EQ(core.training.grad_reduce, models::Precision::fp32);
  const Scenario fsdp2 = load("valid_minimal.toml", {"training.framework=fsdp2"});
  EXPECT_EQ(fsdp2.parallelism.zero_stage, 3);
  EXPECT_EQ(fsdp2.training.kernel_fusion, models::KernelFusion::eager);
  EXPECT_FALSE(fsdp2.parallelism.overlap_grad_reduce);  // not in its profile: the table's default
  // The resolved scenario records what the profile chose.
  EXPECT_NE(fsdp2.resolved_toml.find("zero_stage = 3"), std::string::npos) << fsdp2.resolved_toml;
  const Scenario mine = load("valid_minimal.toml", {"training.framework=fsdp2", "parallelism.zero_stage=2",
                                                    "training.kernel_fusion=compiled"});
  EXPECT_EQ(mine.parallelism.zero_stage, 2);
  EXPECT_EQ(mine.training.kernel_fusion, models::KernelFusion::compiled);
  const Scenario old = load("valid_minimal.toml", {"training.framework=megatron-lm-2021", "training.precision=fp16"});
  EXPECT_FALSE(old.training.gradient_accumulation_fusion);
  EXPECT_FALSE(old.parallelism.async_tensor_parallel_allreduce);
  EXPECT_EQ(old.parallelism.zero_stage, 0);
  EXPECT_EQ(old.training.grad_reduce, models::Precision::fp16);  // derived from the precision
  EXPECT_TRUE(load("valid_minimal.toml", {"training.framework=nemo"}).parallelism.tp_comm_overlap);
}

TEST(ScenarioLoad, ExplicitTensorParallelOverlapNeedsSequenceParallelism) {
  try {
    (void)load("valid_minimal.toml", {"parallelism.tensor=4", "parallelism.tp_comm_overlap=true"});
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key(), "parallelism.tp_comm_overlap");
    EXPECT_EQ(e.line(), 2);  // the second --set
  }
  // From NeMo's profile it only applies where sequence parallelism is on: no error.
  EXPECT_NO_THROW((void)load("valid_minimal.toml", {"training.framework=nemo", "parallelism.tensor=4"}));
}

TEST(ScenarioLoad, ResolvedTomlHasDefaultsAndDerivedDataAndReloadsToItself) {
  const Scenario s = load("valid_minimal.toml", {"parallelism.tensor=4"});
  const std::string& r = s.resolved_toml;
  EXPECT_NE(r.find("data = 8"), std::string::npos) << r;  // 32 GPUs / (4 x 1)
  EXPECT_NE(r.find("tensor = 4"), std::string::npos) << r;
  EXPECT_NE(r.find("micro_batch_size = 1"), std::string::npos) << r;
  EXPECT_NE(r.find("precision = \"bf16\""), std::string::npos) << r;
  EXPECT_NE(r.find("ffn_hidden_size = 8192"), std::string::npos) << r;
  EXPECT_NE(r.find("seed = 0"), std::string::npos) << r;
  EXPECT_EQ(r.find("[reference]"), std::string::npos) << r;

  const clustersim::testing::TempDir tmp("clustersim-test-scenario-");
  const auto path = tmp.path() / "resolved.toml";
  {
    std::ofstream out(path);
    out << r;
  }
  const Scenario again = load_scenario(path, {}, catalog());
  EXPECT_EQ(again.resolved_toml, r);
  EXPECT_EQ(again.parallelism.data, 8);
  EXPECT_EQ(again.parallelism.tensor, 4);
}

TEST(ScenarioLoad, ResolvedTomlIsStable) {
  EXPECT_EQ(load("valid_full.toml").resolved_toml, load("valid_full.toml").resolved_toml);
}

TEST(ScenarioDocument, LoadsLikeTheFileWithAndWithoutOverrides) {
  const ScenarioDocument doc = ScenarioDocument::read(kData / "valid_full.toml");
  EXPECT_EQ(doc.path(), kData / "valid_full.toml");
  EXPECT_EQ(load_scenario(doc, {}, catalog()).resolved_toml, load("valid_full.toml").resolved_toml);
  const std::vector<std::string> o{"training.micro_batch_size=2", "simulation.seed=5"};
  EXPECT_EQ(load_scenario(doc, o, catalog()).resolved_toml, load("valid_full.toml", o).resolved_toml);
  // The document is not changed by a load's overrides.
  EXPECT_EQ(load_scenario(doc, {}, catalog()).resolved_toml, load("valid_full.toml").resolved_toml);
  // Errors name the file and the --set option the same way.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"training.micro_batch_size=0"},
                                              std::vector<std::string>{"model.no_such_key=1"}}) {
    std::string from_file, from_doc;
    try { (void)load("valid_full.toml", bad); } catch (const ScenarioError& e) { from_file = e.what(); }
    try { (void)load_scenario(doc, bad, catalog()); } catch (const ScenarioError& e) { from_doc = e.what(); }
    EXPECT_FALSE(from_file.empty());
    EXPECT_EQ(from_doc, from_file);
  }
}

TEST(ScenarioDocument, ASkippedResolvedTextLeavesEveryOtherFieldAsLoaded) {
  const ScenarioDocument doc = ScenarioDocument::read(kData / "valid_full.toml");
  const std::vector<std::string> o{"training.micro_batch_size=2", "simulation.seed=5"};
  const Scenario kept = load_scenario(doc, o, catalog());
  const Scenario skipped = load_scenario(doc, o, catalog(), ResolvedText::skip);
  EXPECT_FALSE(kept.resolved_toml.empty());
  EXPECT_TRUE(skipped.resolved_toml.empty());
  EXPECT_EQ(skipped.overrides, kept.overrides);
  EXPECT_EQ(skipped.source_path, kept.source_path);
  EXPECT_EQ(skipped.simulation.seed, kept.simulation.seed);
  EXPECT_EQ(skipped.training.micro_batch_size, kept.training.micro_batch_size);
  EXPECT_EQ(skipped.parallelism.gpus(), kept.parallelism.gpus());
  // The same errors.
  std::string with_text, without_text;
  try { (void)load_scenario(doc, {"training.micro_batch_size=0"}, catalog()); } catch (const ScenarioError& e) { with_text = e.what(); }
  try {
    (void)load_scenario(doc, {"training.micro_batch_size=0"}, catalog(), ResolvedText::skip);
  } catch (const ScenarioError& e) {
    without_text = e.what();
  }
  EXPECT_FALSE(with_text.empty());
  EXPECT_EQ(without_text, with_text);
}

TEST(ScenarioDocument, UnreadableFileIsAScenarioErrorAtZeroZero) {
  try {
    (void)ScenarioDocument::read(kData / "no_such_file.toml");
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(e.column(), 0);
  }
}

// --- --set overrides -------------------------------------------------------------------------------------------

TEST(ScenarioOverrides, IntegerBareWordAndQuotedString) {
  const Scenario s = load("valid_minimal.toml", {"parallelism.tensor=4", "training.precision=fp8", "name=\"x\""});
  EXPECT_EQ(s.parallelism.tensor, 4);
  EXPECT_EQ(s.parallelism.data, 8);
  EXPECT_EQ(s.training.precision, models::Precision::fp8);
  EXPECT_EQ(s.name, "x");
}

TEST(ScenarioOverrides, LaterOverrideWinsAndSpacesAreTrimmed) {
  const Scenario s = load("valid_full.toml", {"simulation.seed=1", " simulation.seed = 2 "});
  EXPECT_EQ(s.simulation.seed, 2u);
}

TEST(ScenarioOverrides, StringKeyTakesNonStringTextVerbatim) {
  EXPECT_EQ(load("valid_minimal.toml", {"name=2024"}).name, "2024");
}

TEST(ScenarioOverrides, CreateMissingTable) {
  const Scenario s = load("valid_minimal.toml", {"reference.mfu=0.5", "reference.source=paper"});
  ASSERT_TRUE(s.reference.has_value());
  EXPECT_DOUBLE_EQ(*s.reference->mfu, 0.5);
  EXPECT_EQ(s.reference->source, "paper");
}

TEST(ScenarioOverrides, UnknownKeyNamesSetAndItsIndex) {
  expect_error("valid_minimal.toml", {"parallelism.tensr=4"}, "--set", 1, 1, "parallelism.tensr", "unknown key");
  expect_error("valid_minimal.toml", {"parallelism.tensor=2", "foo=1"}, "--set", 2, 1, "foo", "unknown key");
}

TEST(ScenarioOverrides, BadValuePointsAtTheValue) {
  // "parallelism.tensor=0": the value starts at column 20.
  expect_error("valid_minimal.toml", {"parallelism.tensor=0"}, "--set", 1, 20, "parallelism.tensor",
               "must be in [1, 1048576], got 0");
  expect_error("valid_minimal.toml", {"parallelism.tensor=four"}, "--set", 1, 20, "parallelism.tensor",
               "expected an integer, got string");
}

TEST(ScenarioOverrides, ContextAndExpertLayoutErrorsAreLocated) {
  // Context parallelism: 2 x context chunks of the 2,048-token sequence, and tensor x context dividing the GPUs.
  expect_error("valid_minimal.toml", {"parallelism.context=3"}, "--set", 1, 21, "parallelism.context",
               "must split model.seq_length (2048) into 2 × context chunks");
  expect_error("valid_minimal.toml", {"parallelism.context=64"}, "--set", 1, 21, "parallelism.context",
               "tensor × context = 1 × 64 = 64 does not divide the cluster's 32 GPUs");
  // Mixture of experts: Megatron-Core's frameworks only; expert divides the experts and folds into the ranks.
  expect_error("valid_minimal.toml", {"model.num_experts=8", "training.framework=\"fsdp2\""}, "--set", 1, 19,
               "model.num_experts", "MoE is modelled as Megatron-Core runs it");
  expect_error("valid_minimal.toml", {"model.num_experts=8", "parallelism.expert=3"}, "--set", 2, 20,
               "parallelism.expert", "must divide model.num_experts (8), got 3");
  expect_error("valid_minimal.toml", {"model.num_experts=64", "parallelism.expert=64"}, "--set", 2, 20,
               "parallelism.expert", "must divide tensor × context × data = 32");
  // A key left at its default is blamed where the overrides end.
  expect_error("valid_minimal.toml", {"model.num_experts=8", "parallelism.tensor=2"}, "--set", 2, 1,
               "parallelism.sequence_parallel", "must be true for an MoE model with tensor > 1");
  expect_error("valid_minimal.toml", {"parallelism.expert=2"}, "--set", 1, 20, "parallelism.expert",
               "needs model.num_experts > 0");
  // Multi-token prediction is Megatron-Core's; set first / last stage sizes must leave an even split.
  expect_error("valid_minimal.toml", {"model.mtp_num_layers=1", "training.framework=\"fsdp2\""}, "--set", 1, 22,
               "model.mtp_num_layers", "needs training.framework megatron-core or nemo, got fsdp2");
  expect_error("valid_minimal.toml", {"parallelism.first_stage_layers=3"}, "--set", 1, 32,
               "parallelism.first_stage_layers", "needs parallelism.pipeline > 1");
  expect_error("valid_minimal.toml", {"parallelism.pipeline=4", "parallelism.last_stage_layers=5"}, "--set", 2, 31,
               "parallelism.last_stage_layers", "leaves 19 of model.num_layers (24) for the other 3 stages");
  const Scenario split = load("valid_minimal.toml", {"parallelism.pipeline=4", "parallelism.first_stage_layers=3",
                                                     "parallelism.last_stage_layers=5"});
  EXPECT_EQ(models::layers_per_virtual_stage(24, split.parallelism), (std::vector<int64_t>{3, 8, 8, 5}));
  // Recompute modules belong to selective recompute; each is one of Megatron-Core's, once.
  expect_error("valid_minimal.toml", {"training.recompute_modules=[\"layernorm\"]"}, "--set", 1, 28,
               "training.recompute_modules", "applies to training.activation_recompute = \"selective\", got \"none\"");
  expect_error("valid_minimal.toml", {"training.activation_recompute=\"selective\"",
                                      "training.recompute_modules=[\"core_attn\", \"moe\"]"},
               "--set", 2, 28, "training.recompute_modules",
               "must be each one of core_attn, mla_up_proj, layernorm, moe_act, mlp, got 'moe'");
  expect_error("valid_minimal.toml", {"training.activation_recompute=\"selective\"",
                                      "training.recompute_modules=[\"mlp\", \"mlp\"]"},
               "--set", 2, 28, "training.recompute_modules", "'mlp' is given twice");
  const Scenario modules = load("valid_minimal.toml", {"training.activation_recompute=\"selective\"",
                                                       "training.recompute_modules=[\"layernorm\", \"mlp\"]"});
  EXPECT_EQ(modules.training.recompute_modules, static_cast<uint32_t>(models::RecomputeModule::layernorm) |
                                                    static_cast<uint32_t>(models::RecomputeModule::mlp));
  // Megatron-Core's conditions for the 1F1B all-to-all overlap.
  expect_error("valid_minimal.toml", {"model.num_experts=8", "training.moe_a2a_overlap=true"}, "--set", 2, 26,
               "training.moe_a2a_overlap", "needs parallelism.expert > 1");
  expect_error("valid_minimal.toml",
               {"model.num_experts=8", "parallelism.expert=8", "parallelism.pipeline=2",
                "training.moe_a2a_overlap=true"},
               "--set", 4, 26, "training.moe_a2a_overlap", "needs parallelism.virtual_stages > 1");
  // DeepEP (flex) dispatches over the expert-parallel group only.
  expect_error("valid_minimal.toml",
               {"model.num_experts=8", "parallelism.expert=4", "parallelism.expert_tensor=2",
                "training.moe_token_dispatcher=\"flex\""},
               "--set", 4, 31, "training.moe_token_dispatcher", "needs parallelism.expert_tensor = 1, got 2");
  // A valid MoE layout loads, and its folded sizes are read.
  const Scenario moe = load("valid_minimal.toml", {"model.num_experts=8", "parallelism.expert=8",
                                                   "parallelism.context=2", "model.moe_router_topk=2"});
  EXPECT_EQ(moe.parallelism.expert, 8);
  EXPECT_EQ(moe.parallelism.context, 2);
  EXPECT_EQ(moe.parallelism.data, 16);
  EXPECT_EQ(moe.model.num_experts, 8);
}

TEST(ScenarioLoad, VariabilityTakesSourcedDefaultsWhenOnAndRejectsItsNumbersWhenOff) {
  const Scenario off = load("valid_minimal.toml");
  EXPECT_FALSE(off.simulation.variability);
  const Scenario on = load("valid_minimal.toml", {"simulation.variability=on"});
  ASSERT_TRUE(on.simulation.variability);
  EXPECT_EQ(on.simulation.variability->gpu_compute_cv, models::kGpuComputeCv);
  EXPECT_EQ(on.simulation.variability->slow_vm_fraction, models::kSlowVmFraction);
  EXPECT_EQ(on.simulation.variability->slow_vm_factor, models::kSlowVmFactor);
  EXPECT_EQ(on.simulation.variability->slow_vm_source, models::kSlowVmSource);
  // The defaults are written into the resolved scenario, which reloads to the same numbers.
  const clustersim::testing::TempDir tmp("clustersim-test-variability-");
  const auto resolved = tmp.path() / "resolved.toml";
  std::ofstream(resolved) << on.resolved_toml;
  const Scenario again = load_scenario(resolved, {}, catalog());
  ASSERT_TRUE(again.simulation.variability);
  EXPECT_EQ(again.simulation.variability->gpu_compute_cv, models::kGpuComputeCv);
  EXPECT_EQ(again.simulation.variability->slow_vm_factor, models::kSlowVmFactor);
  const Scenario given = load("valid_minimal.toml", {"simulation.variability=on", "simulation.slow_vm_factor=2"});
  EXPECT_EQ(given.simulation.variability->slow_vm_factor, 2.0);
  EXPECT_EQ(given.simulation.variability->slow_vm_source, "set in the scenario");
  EXPECT_EQ(given.simulation.variability->gpu_compute_cv_source, models::kGpuComputeCvSource);
  expect_error("valid_minimal.toml", {"simulation.slow_vm_fraction=0.1"}, "--set", 1, 29,
               "simulation.slow_vm_fraction", "has no effect unless simulation.variability = \"on\"");
  expect_error("valid_minimal.toml", {"simulation.variability=on", "simulation.gpu_compute_cv=0.2"}, "--set", 2, 27,
               "simulation.gpu_compute_cv", "in [0, 0.1]");
  expect_error("valid_minimal.toml", {"simulation.variability=\"sometimes\""}, "--set", 1, 24,
               "simulation.variability", "one of off, on");
}

TEST(ScenarioOverrides, MissingEqualsSign) {
  expect_error("valid_minimal.toml", {"parallelism.tensor"}, "--set", 1, 1, "parallelism.tensor",
               "expected KEY=VALUE");
}

// --- bad input, one class per test -----------------------------------------------------------------------------

TEST(ScenarioErrors, UnknownKey) {
  expect_file_error("bad_unknown_key.toml", 20, 1, "parallelism.tensr", "unknown key");
}

TEST(ScenarioErrors, UnknownTable) {
  expect_file_error("bad_unknown_table.toml", 19, 2, "modle", "unknown table");
}

TEST(ScenarioErrors, WrongType) {
  expect_file_error("bad_wrong_type.toml", 20, 10, "parallelism.tensor", "expected an integer, got string");
}

TEST(ScenarioErrors, FloatForInteger) {
  expect_file_error("bad_float_for_integer.toml", 20, 10, "parallelism.tensor", "expected an integer, got float 8.5");
}

TEST(ScenarioErrors, MissingRequiredKeyPointsAtItsTable) {
  expect_file_error("bad_missing_key.toml", 5, 1, "model.hidden_size", "required key is missing");
}

TEST(ScenarioErrors, MissingRequiredTablePointsAtTheFileStart) {
  expect_file_error("bad_missing_table.toml", 1, 1, "cluster", "required table is missing");
}

TEST(ScenarioErrors, OutOfRange) {
  expect_file_error("bad_out_of_range.toml", 20, 10, "parallelism.tensor", "must be in [1, 1048576], got 0");
}

TEST(ScenarioErrors, FractionOutOfRange) {
  expect_file_error("bad_mfu.toml", 21, 7, "reference.mfu", "must be in (0, 1], got 1.5");
}

TEST(ScenarioErrors, NotOneOfTheChoices) {
  expect_file_error("bad_choice.toml", 14, 13, "training.precision",
                    "must be one of fp32, tf32, fp16, bf16, fp8, got 'fp12'");
}

TEST(ScenarioErrors, SchemaVersion) {
  expect_file_error("bad_schema_version.toml", 2, 18, "schema_version", "must be 1, got 2");
}

TEST(ScenarioErrors, ReferenceWithoutMetric) {
  expect_file_error("bad_reference_no_metric.toml", 19, 1, "reference", "needs at least one of");
}

TEST(ScenarioErrors, TomlSyntaxError) {
  // The parser's position; the key is read from the offending line and its table header.
  expect_file_error("bad_syntax.toml", 7, 15, "model.hidden_size", "TOML syntax error");
}

TEST(ScenarioErrors, UnknownVmSizeListsKnownNames) {
  expect_file_error("bad_vm_size.toml", 16, 11, "cluster.vm_size", "unknown VM size 'Standard_ND96isr_H100_v9'");
  expect_file_error("bad_vm_size.toml", 16, 11, "cluster.vm_size", "Standard_ND96isr_H100_v5");
}

TEST(ScenarioErrors, GpuCountMismatch) {
  // 8 x 2 x 4 = 64, but 4 VMs x 8 H100 = 32.
  expect_file_error("bad_gpu_count.toml", 22, 8, "parallelism.data",
                    "tensor × pipeline × data = 8 × 2 × 4 = 64, but the cluster has 32 GPUs");
}

TEST(ScenarioErrors, DerivedDataNotAnInteger) {
  // 32 GPUs / (2 x 3) is not an integer.
  expect_file_error("bad_data_not_integer.toml", 21, 12, "parallelism.pipeline",
                    "tensor × pipeline = 2 × 3 = 6 does not divide the cluster's 32 GPUs");
}

TEST(ScenarioErrors, HeadsNotDivisibleByTensor) {
  expect_file_error("bad_heads_tensor.toml", 20, 10, "parallelism.tensor",
                    "must divide model.num_attention_heads (16), got 32");
}

TEST(ScenarioErrors, MoreModelChunksThanLayers) {
  expect_file_error("bad_layers_pipeline.toml", 21, 12, "parallelism.pipeline",
                    "must not exceed model.num_layers (24): every model chunk needs a layer, got 16 × 2 = 32");
}

TEST(ScenarioErrors, BatchNotDivisibleByMicroBatchTimesData) {
  expect_file_error("bad_batch.toml", 13, 21, "training.global_batch_size",
                    "must be divisible by micro_batch_size × data = 3 × 32 = 96, got 512");
}

TEST(ScenarioErrors, VirtualStagesNeedPipeline) {
  expect_file_error("bad_virtual_stages.toml", 20, 18, "parallelism.virtual_stages", "needs pipeline > 1");
}

TEST(ScenarioErrors, HiddenNotDivisibleByHeads) {
  expect_file_error("bad_hidden_heads.toml", 7, 15, "model.hidden_size",
                    "must be divisible by model.num_attention_heads (16), got 2050");
}

TEST(ScenarioErrors, MissingFile) {
  expect_file_error("no_such_file.toml", 0, 0, "", "cannot open the scenario file: it does not exist");
}

TEST(ScenarioError, WhatIsFileLineColumnKeyMessage) {
  const ScenarioError e("scenarios/x.toml", 12, 10, "parallelism.tensor", "must be >= 1, got 0");
  EXPECT_STREQ(e.what(), "scenarios/x.toml:12:10: key 'parallelism.tensor': must be >= 1, got 0");
  EXPECT_EQ(e.file(), std::filesystem::path("scenarios/x.toml"));
  EXPECT_EQ(e.line(), 12);
  EXPECT_EQ(e.column(), 10);
  EXPECT_EQ(e.key(), "parallelism.tensor");
}

// --- the parameter table and its reference ---------------------------------------------------------------------

TEST(ScenarioKeys, ChoicesMatchTheEnums) {
  const auto* precision = detail::find_param("training.precision");
  ASSERT_NE(precision, nullptr);
  for (auto name : precision->choices) EXPECT_TRUE(models::parse_precision(name).has_value()) << name;
  const auto* recompute = detail::find_param("training.activation_recompute");
  ASSERT_NE(recompute, nullptr);
  EXPECT_EQ(recompute->choices.size(), 4u);
  for (auto name : recompute->choices) EXPECT_TRUE(models::parse_recompute(name).has_value()) << name;
  const auto* framework = detail::find_param("training.framework");
  ASSERT_NE(framework, nullptr);
  ASSERT_EQ(framework->choices.size(), detail::framework_names().size());
  for (size_t i = 0; i < framework->choices.size(); ++i) {
    EXPECT_EQ(framework->choices[i], detail::framework_names()[i]);
    EXPECT_TRUE(models::parse_framework(framework->choices[i]).has_value()) << framework->choices[i];
  }
  for (const auto& d : detail::framework_defaults()) {
    EXPECT_NE(detail::find_param(d.key), nullptr) << d.framework << " sets unknown key " << d.key;
    EXPECT_NE(std::find(framework->choices.begin(), framework->choices.end(), d.framework),
              framework->choices.end()) << d.framework;
  }
  const auto* fusion = detail::find_param("training.kernel_fusion");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(fusion->choices.size(), 3u);
  for (auto name : fusion->choices) EXPECT_TRUE(models::parse_kernel_fusion(name).has_value()) << name;
}

TEST(ScenarioKeys, EveryKeyIsInTheMarkdownTable) {
  const std::string md = scenario_keys_markdown();
  for (const auto& p : detail::scenario_params()) {
    EXPECT_NE(md.find("| `" + std::string(p.key) + "` |"), std::string::npos) << p.key;
    EXPECT_FALSE(p.help.empty()) << p.key;
  }
}

// The framework profiles, generated the same way between their own markers.
TEST(ScenarioKeys, DocMatchesGeneratedFrameworkProfiles) {
  const auto doc_path = kSourceDir / "docs" / "scenario-format.md";
  const std::string begin = "<!-- BEGIN GENERATED: framework profiles (framework_profiles_markdown) -->\n";
  const std::string end = "<!-- END GENERATED: framework profiles -->\n";
  std::ifstream in(doc_path);
  ASSERT_TRUE(in) << "cannot read " << doc_path;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();
  const auto b = doc.find(begin);
  const auto e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "missing marker line: " << begin;
  ASSERT_NE(e, std::string::npos) << "missing marker line: " << end;
  const std::string in_doc = doc.substr(b + begin.size(), e - b - begin.size());
  const std::string generated = detail::framework_profiles_markdown();
  if (in_doc != generated && std::getenv("CLUSTERSIM_UPDATE_DOCS") != nullptr) {
    std::ofstream out(doc_path, std::ios::binary);
    out << doc.substr(0, b + begin.size()) << generated << doc.substr(e);
    GTEST_SKIP() << "rewrote the framework profiles in " << doc_path;
  }
  EXPECT_EQ(in_doc, generated) << "docs/scenario-format.md is out of date; regenerate with CLUSTERSIM_UPDATE_DOCS=1";
}

// docs/scenario-format.md holds the generated table between two marker lines, byte for byte. Regenerate with
// CLUSTERSIM_UPDATE_DOCS=1 ./test_scenario --gtest_filter=ScenarioKeys.DocMatchesGeneratedTable
TEST(ScenarioKeys, DocMatchesGeneratedTable) {
  const auto doc_path = kSourceDir / "docs" / "scenario-format.md";
  const std::string begin = "<!-- BEGIN GENERATED: scenario keys (scenario_keys_markdown) -->\n";
  const std::string end = "<!-- END GENERATED: scenario keys -->\n";
  std::ifstream in(doc_path);
  ASSERT_TRUE(in) << "cannot read " << doc_path;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();
  const auto b = doc.find(begin);
  const auto e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "missing marker line: " << begin;
  ASSERT_NE(e, std::string::npos) << "missing marker line: " << end;
  ASSERT_LT(b, e);
  const std::string in_doc = doc.substr(b + begin.size(), e - b - begin.size());
  const std::string generated = scenario_keys_markdown();
  if (in_doc != generated && std::getenv("CLUSTERSIM_UPDATE_DOCS") != nullptr) {
    std::ofstream out(doc_path, std::ios::binary);
    out << doc.substr(0, b + begin.size()) << generated << doc.substr(e);
    GTEST_SKIP() << "rewrote the generated table in " << doc_path;
  }
  EXPECT_EQ(in_doc, generated) << "docs/scenario-format.md is out of date; regenerate with CLUSTERSIM_UPDATE_DOCS=1";
}

}  // namespace
}  // namespace clustersim::sim
