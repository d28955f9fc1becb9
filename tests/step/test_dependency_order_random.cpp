// The pipeline executor's dependency-order run (sweeps' path: no spans) against the event-driven run (spans
// recorded), bit for bit, on many random programs at once: ranks, virtual stages, microbatches, schedules,
// replicas, stragglers and compute factors, transfer times per direction (free, asynchronous or blocking),
// merged MoE costs, per-chunk and whole-stage gradient reductions (overlapped or not, with chunks that reduce
// nothing), optimizer and ZeRO parameter all-gathers. The runs follow one another on one thread, large and small
// mixed, so the dependency run's per-thread buffers (kept across runs, their old contents never read) are reused
// at every size. tests/step/test_dependency_order.cpp holds the structured cases.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/parallelism/schedule.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/step/pipeline_executor.hpp"
#include "tests/step/pipeline_compare.hpp"

namespace clustersim {
namespace {

using models::PipelineSchedule;

/// A random cost in [0, scale) seconds, zero one time in `zero_one_in`.
units::Seconds random_seconds(std::mt19937_64& rng, double scale, int zero_one_in) {
  std::uniform_int_distribution<int> zero(0, zero_one_in - 1);
  if (zero(rng) == 0) return units::seconds(0.0);
  return units::seconds(std::uniform_real_distribution<double>(0.05, 1.0)(rng) * scale);
}

models::PassCost random_cost(std::mt19937_64& rng, double scale) {
  models::PassCost c;
  c.compute = random_seconds(rng, scale, 50);
  c.attention = c.compute * std::uniform_real_distribution<double>(0.0, 0.4)(rng);
  c.memory_bound = c.compute * std::uniform_real_distribution<double>(0.0, 0.3)(rng);
  c.tp_comm = random_seconds(rng, 0.1 * scale, 3);
  c.cp_comm = random_seconds(rng, 0.05 * scale, 3);
  c.ep_comm = random_seconds(rng, 0.05 * scale, 3);
  c.host = random_seconds(rng, 0.01 * scale, 3);
  c.dp_comm = random_seconds(rng, 0.02 * scale, 3);
  c.flops = units::Flops(std::uniform_real_distribution<double>(1e11, 1e13)(rng));
  return c;
}

/// A random program and fidelity: nullopt-like `false` when the schedule does not exist for the counts drawn.
bool random_case(std::mt19937_64& rng, models::StepProgram& program, sim::ExecutionFidelity& fidelity,
                 std::string& what) {
  const auto pick = [&rng](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const auto chance = [&rng](double p) { return std::bernoulli_distribution(p)(rng); };
  const int64_t p = pick(1, 8);
  const int64_t v = chance(0.5) ? 1 : pick(2, 4);
  const int64_t m = pick(1, 24);
  const PipelineSchedule schedule = chance(0.25) ? PipelineSchedule::gpipe : PipelineSchedule::one_f_one_b;
  const int64_t replicas = chance(0.6) ? 1 : pick(2, 3);
  what = std::string(models::to_string(schedule)) + " p " + std::to_string(p) + " v " + std::to_string(v) + " m " +
         std::to_string(m) + " replicas " + std::to_string(replicas);
  program = models::StepProgram{};
  program.microbatches = m;
  program.virtual_stages = v;
  const bool merged = chance(0.3);
  const bool per_chunk = chance(0.5);
  for (int64_t k = 0; k < p; ++k) {
    models::StageProgram s;
    try {
      s.order = models::stage_order(schedule, k, p, m, v);
    } catch (const std::invalid_argument&) {
      return false;  // no such schedule (e.g. interleaving with these counts)
    }
    const double scale = 1e-3 * std::uniform_real_distribution<double>(0.5, 2.0)(rng);
    for (int64_t c = 0; c < v; ++c) {
      s.forward.push_back(random_cost(rng, scale));
      s.backward.push_back(random_cost(rng, 2.0 * scale));
    }
    if (merged) {
      for (int64_t c = 0; c < v; ++c) {
        s.forward_paired.push_back(random_cost(rng, 0.8 * scale));
        s.backward_paired.push_back(random_cost(rng, 1.6 * scale));
      }
    }
    s.overlap_grad_sync = chance(0.5);
    s.grad_sync = random_seconds(rng, 3e-3, 4);
    s.grad_buckets = pick(1, 6);
    if (per_chunk) {
      for (int64_t c = 0; c < v; ++c) {
        s.chunk_grad_sync.push_back(random_seconds(rng, 2e-3, 4));
        s.chunk_grad_buckets.push_back(pick(0, 5));
      }
    }
    s.optimizer = random_seconds(rng, 1e-3, 5);
    s.param_gather = random_seconds(rng, 0.5e-3, 2);
    program.stages.push_back(std::move(s));
  }
  program.p2p_forward = random_seconds(rng, 0.3e-3, 3);
  program.p2p_backward = chance(0.2) ? program.p2p_forward : random_seconds(rng, 0.3e-3, 3);
  program.p2p_blocking = chance(0.4);
  program.overlap_compute_slowdown = chance(0.5) ? 0.0 : std::uniform_real_distribution<double>(0.0, 0.3)(rng);
  fidelity = sim::ExecutionFidelity{};
  fidelity.replicas = replicas;
  const auto units = static_cast<size_t>(p * replicas);
  if (chance(0.5)) {
    fidelity.slowdown.assign(units, 1.0);
    for (double& f : fidelity.slowdown) {
      if (chance(0.3)) f = std::uniform_real_distribution<double>(1.0, 1.5)(rng);
    }
  }
  if (chance(0.5)) {
    fidelity.compute_slowdown.assign(units, 1.0);
    for (double& f : fidelity.compute_slowdown) {
      if (chance(0.5)) f = std::uniform_real_distribution<double>(1.0, 1.2)(rng);
    }
  }
  return true;
}

TEST(DependencyOrderRandom, EqualsTheEventsOnManyRandomPrograms) {
  std::mt19937_64 rng(20261129);
  int checked = 0;
  for (int trial = 0; trial < 1500 && checked < 800; ++trial) {
    models::StepProgram program;
    sim::ExecutionFidelity fidelity;
    std::string what;
    if (!random_case(rng, program, fidelity, what)) continue;
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + what);
    testing::expect_same(program, fidelity);
    if (::testing::Test::HasFailure()) break;  // the first failing program is enough to read
    ++checked;
  }
  EXPECT_GE(checked, 800);
}

}  // namespace
}  // namespace clustersim
