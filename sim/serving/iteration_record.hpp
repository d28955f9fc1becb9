// One engine iteration of a serving run as `clustersim run --trace` and the HDF5 /iterations group see it (issue
// 30, item 6; docs/serving.md, "Inside a serving run"), and which iterations a run records. Plain data, no
// dependencies: the Chrome-trace writer (sim/output/serving_chrome_trace.hpp) reads it too.
#pragma once

#include <cstdint>
#include <limits>

namespace clustersim::sim {

/// The most iteration records one run keeps: 2^20 (about 64 MiB; the Azure conversation hour on two replicas takes
/// about 244,000 iterations). Further selected iterations are counted (ServingResult::iteration_records_dropped),
/// not kept.
inline constexpr int64_t kMaxIterationRecords = int64_t{1} << 20;

/// One engine iteration (a scheduler step of one replica's engine). Times in s of simulated time; counts of
/// sequences, tokens and KV blocks at the iteration's start (after its scheduling).
struct IterationRecord {
  int64_t index = 0;       ///< its number among the run's iterations (all replicas), from 0, in the order they start
  int64_t engine = 0;      ///< the engine that ran it: the replica (with pipeline parallelism p, a virtual engine:
                           ///< replica = engine / p)
  double start_s = 0.0;    ///< when it started
  double duration_s = 0.0; ///< its duration on the engine's 1 ns clock (an iteration abandoned by an eviction keeps
                           ///< the duration it was scheduled for)
  int64_t sequences = 0;       ///< sequences in its batch (decoding and prefilling)
  int64_t prefill_tokens = 0;  ///< prompt tokens it computed (chunks of prompts, recomputation after a preemption)
  int64_t decode_tokens = 0;   ///< decoding sequences (one token each)
  int64_t kv_blocks_used = 0;  ///< KV-cache blocks its engine held, of EnginePolicy::block_size tokens
};

/// Which iterations a run records (ServingSetup::iteration_log): off by default (no memory); on, every `every`-th
/// iteration of the run (index % every == 0) that starts in [from_s, to_s), up to max_records.
struct IterationSampling {
  bool enabled = false;
  int64_t every = 1;  ///< >= 1
  double from_s = 0.0;
  double to_s = std::numeric_limits<double>::infinity();
  int64_t max_records = kMaxIterationRecords;
  /// Whether the iteration `index` starting at `start_s` is selected (before the cap).
  [[nodiscard]] bool selects(int64_t index, double start_s) const {
    return enabled && index % every == 0 && start_s >= from_s && start_s < to_s;
  }
};

}  // namespace clustersim::sim
