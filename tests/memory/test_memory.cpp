// The memory model (models/memory/memory_model.hpp) against Korthikanti et al. 2022 Figures 1 and 7
// (shared/validation/korthikanti_2022_table5.csv, comments) and hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "models/hardware/catalog.hpp"
#include "models/memory/memory_model.hpp"
#include "models/workload/transformer.hpp"

namespace clustersim::models {
namespace {

const Catalog& catalog() {
  static const Catalog c = Catalog::load(Catalog::default_directory());
  return c;
}

double gib(units::Bytes b) { return units::in_gib(b); }

double rel_error(double model, double paper) { return (model - paper) / paper; }

/// One configuration of Korthikanti et al. 2022 Table 5 / Figure 1 with the paper's memory numbers (GiB).
struct Fig1Row {
  const char* name;
  int64_t heads, hidden, layers, tensor, pipeline, global_batch, micro_batch, virtual_stages;
  double params_optimizer_gib, activations_none_gib, activations_sp_selective_gib;
};

// shared/validation/korthikanti_2022_table5.csv: the rows and the Figure 1 comment.
constexpr Fig1Row kFigure1[] = {
    {"22B", 64, 6144, 48, 8, 1, 4, 4, 1, 45.5625, 59.25, 9.5625},
    {"175B", 96, 12288, 96, 8, 8, 64, 1, 3, 45.5625, 66.84375, 12.3515625},
    {"530B", 128, 20480, 105, 8, 35, 280, 1, 3, 31.640625, 114.0234375, 23.076171875},
    {"1T", 160, 25600, 128, 8, 64, 512, 1, 1, 32.958984375, 131.25, 26.5625},
};

StepSetup setup_of(const Fig1Row& row, Recompute recompute, bool sequence_parallel) {
  StepSetup s;
  s.model.num_layers = row.layers;
  s.model.hidden_size = row.hidden;
  s.model.num_attention_heads = row.heads;
  s.model.vocab_size = 51200;
  s.model.seq_length = 2048;
  s.training.global_batch_size = row.global_batch;
  s.training.micro_batch_size = row.micro_batch;
  s.training.precision = Precision::bf16;
  s.training.activation_recompute = recompute;
  s.parallelism.tensor = row.tensor;
  s.parallelism.pipeline = row.pipeline;
  s.parallelism.data = 1;
  s.parallelism.virtual_stages = row.virtual_stages;
  s.parallelism.sequence_parallel = sequence_parallel;
  s.schedule = PipelineSchedule::one_f_one_b;
  return s;
}

const DeviceSpec& a100() { return catalog().device("A100-SXM4-80GB"); }

units::Bytes model_states(const StageMemory& s) { return s.weights + s.gradients + s.optimizer_states; }

// (1) Figure 1, parameters + optimizer state. The figure counts 18 bytes x 12 l h^2 / (t p): the transformer
// layers only (docs/memory.md). The model's layer part reproduces it; the first stage adds the word and
// position embeddings, which the figure leaves out (+2 % to +11 %), and a middle stage has none.
TEST(MemoryFigure1, ParametersAndOptimizerState) {
  std::printf("%-5s %-22s %10s %10s %8s\n", "model", "quantity", "paper GiB", "model GiB", "error");
  for (const Fig1Row& row : kFigure1) {
    const MemoryReport r = estimate_memory(setup_of(row, Recompute::selective, true), a100());
    const StageMemory& first = r.stages.front();
    const double layers_only = first.layer_parameters * bytes_per_parameter(Precision::bf16).total();
    const double layers_gib = layers_only / (1024.0 * 1024.0 * 1024.0);
    std::printf("%-5s %-22s %10.3f %10.3f %+7.2f%%\n", row.name, "param+opt (layers)", row.params_optimizer_gib,
                layers_gib, 100.0 * rel_error(layers_gib, row.params_optimizer_gib));
    std::printf("%-5s %-22s %10.3f %10.3f %+7.2f%%\n", row.name, "param+opt (stage 0)", row.params_optimizer_gib,
                gib(model_states(first)), 100.0 * rel_error(gib(model_states(first)), row.params_optimizer_gib));
    EXPECT_NEAR(rel_error(layers_gib, row.params_optimizer_gib), 0.0, 0.05) << row.name;
    // The first stage holds the layers plus V h / t + s h embedding parameters at 18 bytes.
    const double embedding = (51200.0 * static_cast<double>(row.hidden) / static_cast<double>(row.tensor) +
                              2048.0 * static_cast<double>(row.hidden)) *
                             18.0;
    EXPECT_NEAR(model_states(first).value(),
                layers_only + embedding + (row.pipeline == 1 ? 36.0 * static_cast<double>(row.hidden) : 0.0),
                1.0)
        << row.name;
    EXPECT_GT(model_states(first).value(), model_states(r.stages.back()).value() - 1.0) << row.name;
    if (row.pipeline > 2) {
      const StageMemory& middle = r.stages[static_cast<size_t>(row.pipeline / 2)];
      std::printf("%-5s %-22s %10.3f %10.3f %+7.2f%%\n", row.name, "param+opt (middle)", row.params_optimizer_gib,
                  gib(model_states(middle)), 100.0 * rel_error(gib(model_states(middle)), row.params_optimizer_gib));
      EXPECT_NEAR(rel_error(gib(model_states(middle)), row.params_optimizer_gib), 0.0, 0.05) << row.name;
    } else {
      EXPECT_NEAR(rel_error(gib(model_states(first)), row.params_optimizer_gib), 0.0, 0.05) << row.name;
    }
  }
}

// (1) Figure 1, activations of the first stage with the CSV's schedule: no recompute (tensor-parallel
// baseline, no sequence parallelism) and sequence parallelism + selective recompute.
TEST(MemoryFigure1, FirstStageActivations) {
  for (const Fig1Row& row : kFigure1) {
    const MemoryReport none = estimate_memory(setup_of(row, Recompute::none, false), a100());
    const MemoryReport present = estimate_memory(setup_of(row, Recompute::selective, true), a100());
    const double none_gib = gib(none.stages.front().activations);
    const double present_gib = gib(present.stages.front().activations);
    std::printf("%-5s %-22s %10.3f %10.3f %+7.2f%%\n", row.name, "act. no recompute", row.activations_none_gib,
                none_gib, 100.0 * rel_error(none_gib, row.activations_none_gib));
    std::printf("%-5s %-22s %10.3f %10.3f %+7.2f%%\n", row.name, "act. SP + selective",
                row.activations_sp_selective_gib, present_gib,
                100.0 * rel_error(present_gib, row.activations_sp_selective_gib));
    EXPECT_NEAR(rel_error(none_gib, row.activations_none_gib), 0.0, 0.05) << row.name;
    EXPECT_NEAR(rel_error(present_gib, row.activations_sp_selective_gib), 0.0, 0.05) << row.name;
  }
}

// Without the embedding and output-layer extras the layer part is the paper's closed form exactly:
// L (1 + (p-1)/(p v)) layers (v > 1) or L layers (1F1B) of s b h (10 + 24/t + 5 a s/(h t)).
TEST(MemoryFigure1, LayerPartIsThePapersClosedForm) {
  for (const Fig1Row& row : kFigure1) {
    const StepSetup s = setup_of(row, Recompute::none, false);
    const double per_layer = layer_activation_bytes(s.model, s.training, s.parallelism).value();
    const double sbh = 2048.0 * static_cast<double>(row.micro_batch * row.hidden);
    const double t = static_cast<double>(row.tensor);
    const double closed = sbh * (10.0 + 24.0 / t + 5.0 * static_cast<double>(row.heads) * 2048.0 /
                                                       (static_cast<double>(row.hidden) * t));
    EXPECT_NEAR(per_layer / closed, 1.0, 1e-12) << row.name;
    const double p = static_cast<double>(row.pipeline);
    const double v = static_cast<double>(row.virtual_stages);
    const double layers = static_cast<double>(row.layers) * (row.virtual_stages > 1 ? 1.0 + (p - 1.0) / (p * v) : 1.0);
    EXPECT_NEAR(gib(units::Bytes(per_layer * layers)), row.activations_none_gib, 1e-9) << row.name;
    const MemoryReport r = estimate_memory(s, a100());
    EXPECT_NEAR(r.stages.front().microbatch_equivalents, layers / static_cast<double>(row.layers) * p, 1e-9)
        << row.name;
  }
}

// (2) Figure 7: a layer's activations under each technique as a share of the tensor-parallel baseline.
TEST(MemoryFigure7, ShareOfTheBaseline) {
  struct Row {
    int fig1;
    double sp, selective, both, full;
  };
  const Row rows[] = {{0, 66.84, 49.42, 16.18, 7.64},
                      {1, 62.04, 56.53, 18.49, 8.71},
                      {2, 58.31, 62.04, 20.27, 9.42},
                      {3, 58.31, 62.04, 20.27, 9.42}};
  for (const Row& row : rows) {
    const Fig1Row& f = kFigure1[row.fig1];
    auto share = [&](Recompute r, bool sp) {
      const StepSetup base = setup_of(f, Recompute::none, false);
      const StepSetup s = setup_of(f, r, sp);
      return 100.0 * (layer_activation_bytes(s.model, s.training, s.parallelism) /
                      layer_activation_bytes(base.model, base.training, base.parallelism));
    };
    const double sp = share(Recompute::none, true);
    const double sel = share(Recompute::selective, false);
    const double both = share(Recompute::selective, true);
    const double full = share(Recompute::full, false);
    std::printf("%-5s fig7 paper %6.2f %6.2f %6.2f %6.2f | model %6.2f %6.2f %6.2f %6.2f\n", f.name, row.sp,
                row.selective, row.both, row.full, sp, sel, both, full);
    EXPECT_NEAR(rel_error(sp, row.sp), 0.0, 0.02) << f.name;
    EXPECT_NEAR(rel_error(sel, row.selective), 0.0, 0.02) << f.name;
    EXPECT_NEAR(rel_error(both, row.both), 0.0, 0.02) << f.name;
    EXPECT_NEAR(rel_error(full, row.full), 0.0, 0.02) << f.name;
  }
}

StepSetup small_setup() {
  StepSetup s;
  s.model.num_layers = 4;
  s.model.hidden_size = 1024;
  s.model.num_attention_heads = 16;
  s.model.vocab_size = 1000;
  s.model.seq_length = 128;
  s.training.global_batch_size = 8;
  s.training.micro_batch_size = 1;
  s.training.precision = Precision::bf16;
  s.parallelism.data = 4;
  return s;
}

// (3) ZeRO: stage 1 divides the optimizer states by d, stage 2 also the gradients, stage 3 also the weights.
TEST(MemoryZero, ShardsTheRightParts) {
  StepSetup s = small_setup();
  const double n = parameter_count(s.model);
  // t = p = 1: one GPU holds every parameter.
  struct Expected {
    int64_t stage;
    double weights, gradients, optimizer;
  };
  const Expected cases[] = {{0, 2.0 * n, 4.0 * n, 12.0 * n},
                            {1, 2.0 * n, 4.0 * n, 3.0 * n},
                            {2, 2.0 * n, 1.0 * n, 3.0 * n},
                            {3, 0.5 * n, 1.0 * n, 3.0 * n}};
  for (const Expected& c : cases) {
    s.parallelism.zero_stage = c.stage;
    const StageMemory m = estimate_memory(s, a100()).stages.front();
    EXPECT_DOUBLE_EQ(m.parameters, n) << c.stage;
    EXPECT_NEAR(m.weights.value(), c.weights, 1e-6) << c.stage;
    EXPECT_NEAR(m.gradients.value(), c.gradients, 1e-6) << c.stage;
    EXPECT_NEAR(m.optimizer_states.value(), c.optimizer, 1e-6) << c.stage;
  }
  // ZeRO-3 adds two gathered layers of 16-bit weights as transient memory.
  const double layer = (n - (1000.0 + 128.0) * 1024.0 - 2048.0) / 4.0;
  EXPECT_NEAR(estimate_memory(s, a100()).stages.front().transient.value(), 2.0 * 2.0 * layer, 1e-6);
}

// torchtitan's FSDP2 under pipelining keeps each stage's parameters gathered and accumulates its gradients
// unsharded in the reduce dtype (fp32) over the microbatches; only the optimizer (with the fp32 master) is
// sharded. Without pipelining, or with one microbatch, FSDP2 shards as ZeRO-3.
TEST(MemoryZero, FsdpUnderPipeliningKeepsParametersAndGradientsUnsharded) {
  StepSetup s = small_setup();
  s.model.num_layers = 4;
  s.parallelism.pipeline = 2;
  s.parallelism.zero_stage = 3;
  s.training.framework = Framework::fsdp2;
  s.training.grad_reduce = Precision::fp32;
  const StageMemory fsdp = estimate_memory(s, a100()).stages.front();
  EXPECT_NEAR(fsdp.weights.value(), 2.0 * fsdp.parameters, 1e-6);
  EXPECT_NEAR(fsdp.gradients.value(), 4.0 * fsdp.parameters, 1e-6);
  EXPECT_NEAR(fsdp.optimizer_states.value(), 12.0 * fsdp.parameters / 4.0, 1e-6);
  StepSetup megatron = s;
  megatron.training.framework = Framework::megatron_core;
  const StageMemory zero3 = estimate_memory(megatron, a100()).stages.front();
  EXPECT_NEAR(zero3.weights.value(), 2.0 * zero3.parameters / 4.0, 1e-6);
  StepSetup no_pipeline = s;
  no_pipeline.parallelism.pipeline = 1;
  const StageMemory flat = estimate_memory(no_pipeline, a100()).stages.front();
  EXPECT_NEAR(flat.weights.value(), 2.0 * flat.parameters / 4.0, 1e-6);
}

TEST(MemoryParameters, StagesSumToTheModelWithTheTiedCopy) {
  StepSetup s = small_setup();
  s.parallelism.data = 1;
  const double n = parameter_count(s.model);
  EXPECT_DOUBLE_EQ(estimate_memory(s, a100()).stages.front().parameters, n);
  s.parallelism.pipeline = 4;
  double sum = 0.0;
  for (const StageMemory& st : estimate_memory(s, a100()).stages) sum += st.parameters;
  EXPECT_NEAR(sum, n + 1000.0 * 1024.0, 1e-6);  // the last stage's tied copy of the word embedding
}

// (4) GPipe holds all m microbatches, 1F1B min(p - i, m).
TEST(MemorySchedule, GpipeHoldsMoreThanOneFOneB) {
  StepSetup s = small_setup();
  s.parallelism.data = 1;
  s.parallelism.pipeline = 4;
  s.training.global_batch_size = 8;  // m = 8
  s.schedule = PipelineSchedule::one_f_one_b;
  const MemoryReport f1b = estimate_memory(s, a100());
  s.schedule = PipelineSchedule::gpipe;
  const MemoryReport gpipe = estimate_memory(s, a100());
  for (int64_t i = 0; i < 4; ++i) {
    const StageMemory& a = f1b.stages[static_cast<size_t>(i)];
    const StageMemory& g = gpipe.stages[static_cast<size_t>(i)];
    EXPECT_EQ(a.microbatches_in_flight, 4 - i);
    EXPECT_EQ(g.microbatches_in_flight, 8);
    EXPECT_NEAR(a.activations.value(), a.activation_per_microbatch.value() * static_cast<double>(4 - i), 1e-3);
    EXPECT_NEAR(g.activations.value(), g.activation_per_microbatch.value() * 8.0, 1e-3);
    EXPECT_GT(g.activations, a.activations);
  }
  EXPECT_EQ(f1b.peak_stage, 0);
  // Fewer microbatches than stages: 1F1B holds all of them on stage 0.
  s.schedule = PipelineSchedule::one_f_one_b;
  s.training.global_batch_size = 2;
  EXPECT_EQ(estimate_memory(s, a100()).stages.front().microbatches_in_flight, 2);
}

TEST(MemorySchedule, InterleavedFirstStageFactor) {
  // 175B row: p = 8, v = 3, m = 64. Stage 0 runs 2 (p-1) + (v-1) p = 30 warm-up chunk forwards, then one more:
  // 31 chunk passes = 31/3 microbatches' worth = p (1 + (p-1)/(p v)). In the steady state they belong to 16
  // microbatches: forward 31 (microbatch 15, chunk 0) runs while microbatch 0 still holds chunks 0 and 1.
  const MemoryReport r = estimate_memory(setup_of(kFigure1[1], Recompute::selective, true), a100());
  EXPECT_NEAR(r.stages.front().microbatch_equivalents, 31.0 / 3.0, 1e-12);
  EXPECT_EQ(r.stages.front().microbatches_in_flight, 16);
  EXPECT_NEAR(r.stages.back().microbatch_equivalents, (2.0 * 8.0 + 1.0) / 3.0, 1e-12);  // (v-1) p + 1 = 17
}

// (5) A 175B model on 8 A100-80GB with t = 8, p = 1 does not fit; the verdict says where and by how much.
TEST(MemoryVerdict, Gpt175bOnOneNodeDoesNotFit) {
  StepSetup s = setup_of(kFigure1[1], Recompute::full, false);
  s.parallelism.pipeline = 1;
  s.parallelism.virtual_stages = 1;
  s.training.global_batch_size = 8;
  MemoryReport r;
  ASSERT_NO_THROW(r = estimate_memory(s, a100()));
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.peak_stage, 0);
  EXPECT_GT(gib(r.peak), 350.0);  // 175e9 / 8 x 18 B = 367 GiB of model states alone
  EXPECT_EQ(r.capacity.value(), 80.0 * 1024 * 1024 * 1024);  // A100-80GB: 81920 MiB
  EXPECT_NE(r.verdict.find("out of memory"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("stage 0"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("GiB"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("of 80.0 GiB"), std::string::npos) << r.verdict;
  std::printf("%s\n", r.verdict.c_str());
}

TEST(MemoryVerdict, PaperConfigurationsFitWithSelectiveRecompute) {
  for (const Fig1Row& row : kFigure1) {
    const MemoryReport r = estimate_memory(setup_of(row, Recompute::selective, true), a100());
    EXPECT_TRUE(r.fits) << r.verdict;
    EXPECT_NE(r.verdict.find("fits: "), std::string::npos) << r.verdict;
    std::printf("%-5s %s\n", row.name, r.verdict.c_str());
    // Figure 1: the baseline without recompute needs more than 80 GB on every model.
    EXPECT_FALSE(estimate_memory(setup_of(row, Recompute::none, false), a100()).fits) << row.name;
  }
}

// (6) Bytes per parameter by precision.
TEST(MemoryPrecision, BytesPerParameter) {
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::bf16).total(), 18.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::bf16).gradients, 4.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::fp8).total(), 18.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::fp16).total(), 16.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::fp16).gradients, 2.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::fp32).total(), 16.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::fp32).weights, 4.0);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(Precision::tf32).total(), 16.0);
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8}) {
    EXPECT_DOUBLE_EQ(bytes_per_parameter(p).optimizer_states + bytes_per_parameter(p).weights,
                     p == Precision::fp32 || p == Precision::tf32 ? 12.0 : 14.0);
  }
}

TEST(MemoryActivations, RecomputeFlashAndSwiGlu) {
  StepSetup s = small_setup();
  ModelConfig& m = s.model;
  TrainingConfig& tr = s.training;
  ParallelismConfig& par = s.parallelism;
  par.tensor = 4;
  const double sbh = 128.0 * 1024.0;
  const double t = 4.0;
  // Full recompute keeps the layer input: 2 s b h, / t with sequence parallelism.
  tr.activation_recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tr, par).value(), 2.0 * sbh);
  par.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tr, par).value(), 2.0 * sbh / t);
  // FlashAttention: no s x s scores, only the fp32 log-sum-exp 4 a s b / t.
  tr.activation_recompute = Recompute::none;
  tr.flash_attention = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tr, par).value(), sbh * 34.0 / t + 4.0 * 16.0 * 128.0 / t);
  // SwiGLU with f = 8h/3 x ... : the MLP stores 3 f (gate, up, fc2 input) instead of 2 f.
  tr.flash_attention = false;
  tr.activation_recompute = Recompute::selective;
  m.gated_mlp = true;
  m.ffn_hidden_size = 2048;  // f = 2h
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tr, par).value(), sbh * (10.0 + 2.0 * (4.0 + 3.0 * 2.0)) / t);
  // Grouped-query attention with 4 groups of 64: K and V shrink to kv/h = 1/4.
  m.gated_mlp = false;
  m.ffn_hidden_size = 0;
  m.num_query_groups = 4;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tr, par).value(), sbh * (10.0 + 2.0 * (2.0 + 0.5 + 8.0)) / t);
  // fp32 activations double the tensors but not the 1-byte dropout masks.
  m.num_query_groups = 0;
  tr.precision = Precision::fp32;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tr, par).value(), sbh * (18.0 + 4.0 * 12.0) / t);
}

TEST(MemoryErrors, InconsistentSetupsThrow) {
  StepSetup s = small_setup();
  s.parallelism.zero_stage = 4;
  EXPECT_THROW(estimate_memory(s, a100()), std::invalid_argument);
  s = small_setup();
  s.parallelism.pipeline = 5;  // 4 layers: a stage without a layer
  EXPECT_THROW(estimate_memory(s, a100()), std::invalid_argument);
  s = small_setup();
  s.parallelism.tensor = 3;  // 16 heads
  EXPECT_THROW(estimate_memory(s, a100()), std::invalid_argument);
  s = small_setup();
  s.training.global_batch_size = 6;  // micro 1 x data 4
  EXPECT_THROW(estimate_memory(s, a100()), std::invalid_argument);
  s = small_setup();
  s.schedule = PipelineSchedule::gpipe;
  s.parallelism.data = 1;
  s.parallelism.pipeline = 2;
  s.parallelism.virtual_stages = 2;
  EXPECT_THROW(estimate_memory(s, a100()), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::models
