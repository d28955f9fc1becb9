// estimate_memory's cache of the stages' activation peaks (models/memory/memory_model.cpp, cached_walk_order)
// gives the reports a cold computation gives, bit for bit: on many small shapes computed in a row (a key that
// missed an input, e.g. the schedule or the micro batch, would hand one shape another's peak), and on every point
// of both shipped layout searches after their screening filled the cache. memory_fits is the report's fits, at
// capacities on every stage's boundary (its early exits).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/memory/memory_model.hpp"
#include "sim/step/step_simulation.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim {
namespace {

using models::MemoryReport;
using models::StageMemory;

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Every field of `a` and `b` equal, the doubles bit for bit.
void expect_same_report(const MemoryReport& a, const MemoryReport& b) {
  EXPECT_TRUE(same_bits(a.capacity.value(), b.capacity.value()));
  EXPECT_EQ(a.peak_stage, b.peak_stage);
  EXPECT_TRUE(same_bits(a.peak.value(), b.peak.value()));
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.verdict, b.verdict);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    const StageMemory& x = a.stages[i];
    const StageMemory& y = b.stages[i];
    SCOPED_TRACE("stage " + std::to_string(i));
    EXPECT_TRUE(same_bits(x.weights.value(), y.weights.value()));
    EXPECT_TRUE(same_bits(x.gradients.value(), y.gradients.value()));
    EXPECT_TRUE(same_bits(x.optimizer_states.value(), y.optimizer_states.value()));
    EXPECT_TRUE(same_bits(x.activations.value(), y.activations.value()));
    EXPECT_TRUE(same_bits(x.activation_per_microbatch.value(), y.activation_per_microbatch.value()));
    EXPECT_EQ(x.microbatches_in_flight, y.microbatches_in_flight);
    EXPECT_TRUE(same_bits(x.microbatch_equivalents, y.microbatch_equivalents));
    EXPECT_TRUE(same_bits(x.transient.value(), y.transient.value()));
    EXPECT_TRUE(same_bits(x.framework_reserve.value(), y.framework_reserve.value()));
    EXPECT_TRUE(same_bits(x.parameters, y.parameters));
    EXPECT_TRUE(same_bits(x.layer_parameters, y.layer_parameters));
  }
}

/// Small shapes that differ in one input at a time: schedule, pipeline, virtual stages, micro batch, batch,
/// data, recompute, sequence parallelism, ZeRO stage (those estimate_memory accepts).
std::vector<models::StepSetup> shapes() {
  std::vector<models::StepSetup> out;
  for (const auto schedule : {models::PipelineSchedule::gpipe, models::PipelineSchedule::one_f_one_b}) {
    for (const int64_t p : {1, 2, 4}) {
      for (const int64_t v : {1, 2}) {
        for (const int64_t gbs : {8, 16, 24}) {
          for (const int64_t mbs : {1, 2}) {
            for (const int64_t data : {1, 2}) {
              for (const auto recompute :
                   {models::Recompute::none, models::Recompute::selective, models::Recompute::full}) {
                for (const bool sp : {false, true}) {
                  for (const int zero : {0, 1, 3}) {
                    models::StepSetup s;
                    s.schedule = schedule;
                    s.model.num_layers = 8;
                    s.model.hidden_size = 1024;
                    s.model.num_attention_heads = 16;
                    s.model.vocab_size = 1000;
                    s.model.seq_length = 128;
                    s.training.global_batch_size = gbs;
                    s.training.micro_batch_size = mbs;
                    s.training.precision = models::Precision::bf16;
                    s.training.activation_recompute = recompute;
                    s.parallelism.tensor = 2;
                    s.parallelism.pipeline = p;
                    s.parallelism.virtual_stages = v;
                    s.parallelism.data = data;
                    s.parallelism.sequence_parallel = sp;
                    s.parallelism.zero_stage = zero;
                    out.push_back(s);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

TEST(MemoryWalkCache, WarmEqualsColdOnManyShapes) {
  models::DeviceSpec device = catalog().device("A100-SXM4-80GB");
  device.memory_capacity = units::gib(2.2);  // some shapes fit, some do not
  const std::vector<models::StepSetup> all = shapes();
  std::vector<MemoryReport> cold(all.size());
  std::vector<bool> valid(all.size(), false);
  size_t fitting = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    models::clear_memory_walk_cache();
    try {
      cold[i] = models::estimate_memory(all[i], device);
      valid[i] = true;
      fitting += cold[i].fits ? 1 : 0;
    } catch (const std::invalid_argument&) {
    }
  }
  ASSERT_GT(fitting, 0u);
  size_t checked = 0;
  models::clear_memory_walk_cache();
  for (int round = 0; round < 2; ++round) {  // in order, then in reverse, through a warm cache
    for (size_t k = 0; k < all.size(); ++k) {
      const size_t i = round == 0 ? k : all.size() - 1 - k;
      if (!valid[i]) continue;
      SCOPED_TRACE("shape " + std::to_string(i));
      expect_same_report(models::estimate_memory(all[i], device), cold[i]);
      EXPECT_EQ(models::memory_fits(all[i], device), cold[i].fits);
      ++checked;
    }
  }
  EXPECT_LT(fitting, checked / 2);
  EXPECT_GT(checked, 2000u);
}

/// memory_fits stops at the first stage over the capacity (before its walk when the stage is over it without
/// activations): on every shape, at capacities at, just below and just above each stage's total and its total
/// without activations (and far below and above), it equals the report's fits, and it throws exactly when
/// estimate_memory throws.
TEST(MemoryFits, EqualsTheReportsFitsAtEveryStageBoundary) {
  models::DeviceSpec device = catalog().device("A100-SXM4-80GB");
  size_t compared = 0, threw = 0, fitting = 0;
  for (const models::StepSetup& setup : shapes()) {
    device.memory_capacity = units::gib(80.0);
    MemoryReport full;
    try {
      full = models::estimate_memory(setup, device);
    } catch (const std::invalid_argument&) {
      EXPECT_THROW((void)models::memory_fits(setup, device), std::invalid_argument);
      ++threw;
      continue;
    }
    std::vector<double> capacities{1.0, 1e15};
    for (const models::StageMemory& s : full.stages) {
      models::StageMemory without = s;
      without.activations = units::Bytes(0.0);
      for (const double c : {s.total().value(), without.total().value()}) {
        capacities.insert(capacities.end(), {c, std::nextafter(c, 0.0), std::nextafter(c, 1e300)});
      }
    }
    for (const double c : capacities) {
      device.memory_capacity = units::Bytes(c);
      const bool fits = models::estimate_memory(setup, device).fits;
      EXPECT_EQ(models::memory_fits(setup, device), fits) << "capacity " << c;
      fitting += fits ? 1 : 0;
      ++compared;
    }
  }
  EXPECT_GT(threw, 0u);
  EXPECT_GT(fitting, compared / 10);
  EXPECT_LT(fitting, compared * 9 / 10);
  EXPECT_GT(compared, 20000u);
}

/// Every screened point of `path`: its memory report with the cache as the screening left it equals a cold one.
void expect_points_same_memory(const std::filesystem::path& path) {
  const sim::LoadedSweep sweep = sim::load_sweep(path, {}, catalog(), 2);
  size_t checked = 0;
  for (const auto& sc : sweep.loaded) {
    if (!sc) continue;
    const MemoryReport warm = sim::memory_of(*sc, catalog());
    models::clear_memory_walk_cache();
    const MemoryReport cold = sim::memory_of(*sc, catalog());
    SCOPED_TRACE("point " + std::to_string(checked));
    expect_same_report(warm, cold);
    ++checked;
  }
  EXPECT_GT(checked, 300u);
}

TEST(MemoryWalkCache, EveryPointOfTheShippedSearches) {
  const std::filesystem::path dir = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps";
  expect_points_same_memory(dir / "gpt3-175b-1024-a100-layouts.toml");
  expect_points_same_memory(dir / "deepseek-v3-like-2048-h100-32k-layouts.toml");
}

}  // namespace
}  // namespace clustersim
