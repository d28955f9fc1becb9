// Speculative decoding inside the serving engine (issue 30; the model: models/serving/speculative.hpp). An
// iteration with decoding sequences runs the proposer's k passes and the main model's verify pass over k + 1
// tokens per decoding sequence; each decoding sequence then keeps 1 to k + 1 tokens, drawn position by position
// from its replica's acceptance stream, capped by the output it still wants. Its KV cache grows by the tokens it
// keeps; before the pass the engine holds blocks for the k + 1 tokens it writes (vLLM's lookahead slots,
// num_lookahead_slots = k). docs/serving.md, "Speculative decoding".
#pragma once

#include <cstdint>
#include <memory>

#include "models/serving/inference_model.hpp"
#include "models/serving/speculative.hpp"
#include "sim/engine/random_stream.hpp"
#include "sim/serving/latency_attribution.hpp"

namespace clustersim::sim {

/// Random stream of the speculative acceptance draws (the workload uses streams 1-3, spot evictions 4): one per
/// replica slot, RandomStream(seed, replica slot, 5), drawn in the order the replica's iterations finish.
constexpr uint64_t kSpeculationStream = 5;

/// One iteration's time and its resource split (ResourceSplit; the four parts sum to duration exactly as the
/// model's terms do).
struct IterationCost {
  units::Seconds duration{0.0};
  ResourceSplit split;
};

/// A fleet's speculative decoder: the model (proposer, acceptance) and the seed of its draws.
class SpeculativeServing {
 public:
  /// `host`: the engine release's speculative host work (EngineProfile::speculative; default none). Throws
  /// std::invalid_argument for a null decoding.
  SpeculativeServing(std::shared_ptr<const models::SpeculativeDecoding> decoding, uint64_t seed,
                     models::SpeculativeHost host = {});

  /// The iteration of `b` (one query per decoding sequence, as the scheduler builds it): the verify pass on
  /// `main` (split by `main_resources`), with decoding sequences the engine's speculative step host work
  /// (host.step, serial), plus the proposer's passes, each models::draft_pass_time of its own time (split by the
  /// proposer's resources; a launch-bound pass's wait counted as host time).
  [[nodiscard]] IterationCost cost(const models::InferenceModel& main, const IterationResources& main_resources,
                                   const models::IterationBatch& b) const;
  /// KV slots a decoding sequence needs before its pass: min(k + 1, tokens it still wants), at least 1.
  [[nodiscard]] int64_t kv_slots(int64_t remaining_output) const;
  /// The drafted tokens one decoding sequence keeps beyond its one sampled token: a draw of
  /// models::draw_tokens_per_step less one, capped at remaining_output - 1 (0 when it wants one more token).
  [[nodiscard]] int64_t accepted_drafts(RandomStream& stream, int64_t remaining_output) const;
  /// The acceptance stream of replica slot `replica`.
  [[nodiscard]] RandomStream stream(int64_t replica) const { return {seed_, replica, kSpeculationStream}; }
  [[nodiscard]] const models::SpeculativeDecoding& decoding() const { return *decoding_; }
  [[nodiscard]] const models::SpeculativeHost& host() const { return host_; }

 private:
  std::shared_ptr<const models::SpeculativeDecoding> decoding_;
  IterationResources proposer_resources_;
  uint64_t seed_;
  models::SpeculativeHost host_;
};

/// The cost of iteration `b` on a fleet: the main model's iteration and its split, or with speculative decoding
/// (`speculative` not null) SpeculativeServing::cost. `memo` (the main model's, models::IterationMemo; null: none)
/// times the main model's iteration without speculation, bit-identical to timing it afresh.
IterationCost iteration_cost(const models::InferenceModel& main, const IterationResources& main_resources,
                             const SpeculativeServing* speculative, const models::IterationBatch& b,
                             models::IterationMemo* memo = nullptr);

}  // namespace clustersim::sim
