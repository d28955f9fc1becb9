// critical_path_of (sim/step/critical_path.cpp) bit for bit as it was before the tenth round of issue 31 rewrote
// its bookkeeping (no reversed and filtered copy of the path, no copy of the home unit's passes, scratch kept per
// thread): on several hundred steps of many shapes (schedules, stages, microbatches, virtual stages, transfers
// free, asynchronous and blocking, zero-length passes, uneven and merged passes, overlapped reductions, replicas
// with stragglers and compute factors), the critical path's every field, hashed by its bit patterns, must give
// the hashes the implementation of main 448efd4 gave (recorded below, one per group of shapes). Both executor
// paths (with the event engine and in dependency order) walk the same timeline, so each step is run both ways.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "models/parallelism/schedule.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/step/pipeline_executor.hpp"
#include "tests/support/pipeline_programs.hpp"

namespace clustersim {
namespace {

using models::PipelineSchedule;

/// FNV-1a over the 8 bytes of each word.
struct Hash {
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t words = 0;
  void add(uint64_t x) {
    for (int i = 0; i < 8; ++i) {
      h ^= (x >> (8 * i)) & 0xFFU;
      h *= 0x100000001b3ULL;
    }
    ++words;
  }
  void add(double x) { add(std::bit_cast<uint64_t>(x)); }
  void add(int64_t x) { add(static_cast<uint64_t>(x)); }
  void add(units::Seconds x) { add(x.value()); }
};

void add_path(Hash& hash, const sim::CriticalPath& c) {
  for (const units::Seconds part : {c.compute, c.attention, c.memory_bound, c.tp_comm, c.cp_comm, c.ep_comm, c.host,
                                    c.pp_comm, c.dp_comm, c.optimizer, c.pipeline_wait}) {
    hash.add(part);
  }
  hash.add(c.home_stage);
  hash.add(c.end_stage);
  hash.add(static_cast<int64_t>(c.waits.size()));
  for (const sim::StageWait& w : c.waits) {
    hash.add(w.stage);
    for (const units::Seconds part : {w.time, w.compute, w.tp_comm, w.cp_comm, w.ep_comm, w.host, w.dp_comm}) {
      hash.add(part);
    }
  }
}

/// The step of `program` run both ways; both paths' critical paths hashed (and the step time, which the path
/// must tile).
void add_step(Hash& hash, const models::StepProgram& program, sim::ExecutionFidelity fidelity = {}) {
  for (const bool spans : {true, false}) {
    fidelity.record_spans = spans;
    const sim::PipelineResult r = sim::execute_pipeline(program, fidelity);
    hash.add(r.step_time);
    add_path(hash, r.critical_path);
  }
}

/// Stage k's passes cost a different factor each (a fixed pseudo-random sequence from `seed`), with attention,
/// memory-bound, tensor-, context-, expert-parallel, host and ZeRO-3 parts; every stage reduces gradients and
/// steps its optimizer, every other one gathers parameters. `zero_stage` (if >= 0): that stage's forwards take
/// no time at all (zero-length passes) and its backwards twice as long (so that it is often the home stage,
/// whose zero-length passes must not split the path's segments).
models::StepProgram varied(models::StepProgram program, uint64_t seed, int64_t zero_stage = -1) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<double>(x % 1000) / 1000.0;
  };
  for (size_t k = 0; k < program.stages.size(); ++k) {
    models::StageProgram& s = program.stages[k];
    const double f = 0.8 + 0.5 * next();
    for (models::PassCost& c : s.forward) {
      c.compute = static_cast<int64_t>(k) == zero_stage ? units::seconds(0.0) : c.compute * f;
      c.attention = c.compute * (0.2 + 0.2 * next());
      c.memory_bound = c.compute * 0.13;
      c.tp_comm = units::seconds(0.09e-3 * f);
      c.cp_comm = units::seconds(0.021e-3 * next());
      c.ep_comm = units::seconds(0.047e-3 * f);
      c.host = units::seconds(0.011e-3);
      if (static_cast<int64_t>(k) == zero_stage) c.tp_comm = c.cp_comm = c.ep_comm = c.host = units::seconds(0.0);
    }
    for (models::PassCost& c : s.backward) {
      c.compute = c.compute * (f + 0.1 * next()) * (static_cast<int64_t>(k) == zero_stage ? 2.0 : 1.0);
      c.dp_comm = units::seconds(0.06e-3 * next());
    }
    s.grad_sync = units::seconds(2.9e-3 + 0.13e-3 * static_cast<double>(k));
    s.grad_buckets = 4;
    s.optimizer = units::seconds(0.7e-3 + 0.1e-3 * next());
    s.param_gather = units::seconds(k % 2 == 1 ? 0.35e-3 : 0.0);
  }
  return program;
}

TEST(CriticalPathBits, UniformPipelinesAsBefore) {
  Hash hash;
  for (const PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
    for (const int64_t p : {1, 2, 3, 4, 8}) {
      for (const int64_t m : {1, 2, 5, 8, 16, 37}) {
        for (const double p2p : {0.0, 0.17e-3}) {
          add_step(hash, testing::uniform_program(schedule, p, m, 1.3e-3, 2.9e-3, p2p));
          add_step(hash, testing::uniform_program(schedule, p, m, 1.3e-3, 2.9e-3, p2p, 1, p / 2, 1.37));
        }
      }
    }
  }
  EXPECT_EQ(hash.words, 17184U);
  EXPECT_EQ(hash.h, 0xa80e3ebd30e0bab5ULL);  // main 448efd4's critical_path_of
}

TEST(CriticalPathBits, VariedPipelinesAsBefore) {
  Hash hash;
  uint64_t seed = 0;
  for (const PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
    for (const int64_t p : {1, 2, 3, 4, 8}) {
      for (const int64_t m : {1, 3, 8, 16, 29}) {
        for (const double p2p : {0.0, 0.23e-3}) {
          for (const bool blocking : {false, true}) {
            models::StepProgram program =
                varied(testing::uniform_program(schedule, p, m, 1.1e-3, 2.4e-3, p2p, 1, p - 1, 1.21), ++seed,
                       seed % 3 == 0 ? p - 1 : (p > 2 ? 1 : -1));
            program.p2p_blocking = blocking;
            add_step(hash, program);
          }
        }
      }
    }
  }
  EXPECT_EQ(hash.words, 14320U);
  EXPECT_EQ(hash.h, 0xffd883524d79fc3dULL);  // main 448efd4's critical_path_of
}

TEST(CriticalPathBits, InterleavedAndOverlappedAsBefore) {
  Hash hash;
  uint64_t seed = 100;
  for (const int64_t p : {2, 3, 4, 8}) {
    for (const int64_t v : {2, 3, 4}) {
      for (const int64_t m : {p, 2 * p, 4 * p}) {
        for (const bool blocking : {false, true}) {
          models::StepProgram program = varied(
              testing::uniform_program(PipelineSchedule::one_f_one_b, p, m, 1.1e-3, 2.3e-3, 0.19e-3, v), ++seed);
          program.p2p_blocking = blocking;
          add_step(hash, program);
          for (auto& stage : program.stages) {
            stage.overlap_grad_sync = true;
            stage.chunk_grad_sync.assign(static_cast<size_t>(v), units::seconds(1.3e-3));
            stage.chunk_grad_buckets.assign(static_cast<size_t>(v), 2);
          }
          program.overlap_compute_slowdown = 0.08;
          add_step(hash, program);
        }
      }
    }
  }
  EXPECT_EQ(hash.words, 11392U);
  EXPECT_EQ(hash.h, 0x4265bd723bfd6555ULL);  // main 448efd4's critical_path_of
}

TEST(CriticalPathBits, MergedPassesAndReplicasAsBefore) {
  Hash hash;
  uint64_t seed = 500;
  for (const int64_t p : {1, 2, 4}) {
    for (const int64_t m : {3, 8, 9}) {
      models::StepProgram program =
          varied(testing::uniform_program(PipelineSchedule::one_f_one_b, p, m, 1e-3, 2e-3, 0.1e-3), ++seed);
      for (models::StageProgram& s : program.stages) {
        s.forward_paired = s.forward;
        s.backward_paired = s.backward;
        for (models::PassCost& c : s.forward_paired) c.compute = c.compute * 0.55;
        for (models::PassCost& c : s.backward_paired) c.compute = c.compute * 0.6;
      }
      add_step(hash, program);
    }
  }
  for (const int64_t p : {1, 2, 4}) {
    for (const int64_t replicas : {2, 3}) {
      for (const bool overlap : {false, true}) {
        models::StepProgram program =
            varied(testing::uniform_program(PipelineSchedule::one_f_one_b, p, 8, 1.2e-3, 2.5e-3, 0.15e-3, 2), ++seed);
        for (auto& stage : program.stages) stage.overlap_grad_sync = overlap;
        const auto units = static_cast<size_t>(p * replicas);
        sim::ExecutionFidelity fidelity{replicas, {}, {}};
        add_step(hash, program, fidelity);
        for (const size_t straggler : {size_t{0}, units - 1, units / 2}) {
          fidelity.slowdown.assign(units, 1.0);
          fidelity.slowdown[straggler] = 1.29;
          fidelity.compute_slowdown.assign(units, 1.0);
          for (size_t u = 0; u < units; ++u) fidelity.compute_slowdown[u] = 1.0 + 0.011 * static_cast<double>(u % 4);
          add_step(hash, program, fidelity);
        }
      }
    }
  }
  EXPECT_EQ(hash.words, 2878U);
  EXPECT_EQ(hash.h, 0x754b0c0e9ed56b65ULL);  // main 448efd4's critical_path_of
}

}  // namespace
}  // namespace clustersim
