#include "sim/serving/speculation.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace clustersim::sim {
namespace {

const models::SpeculativeDecoding& checked(const std::shared_ptr<const models::SpeculativeDecoding>& d) {
  if (d == nullptr) throw std::invalid_argument("SpeculativeServing: a speculative decoding model is needed");
  return *d;
}

void add(ResourceSplit& to, const ResourceSplit& s) {
  to.compute_s += s.compute_s;
  to.memory_s += s.memory_s;
  to.communication_s += s.communication_s;
  to.host_s += s.host_s;
}

}  // namespace

SpeculativeServing::SpeculativeServing(std::shared_ptr<const models::SpeculativeDecoding> decoding, uint64_t seed,
                                       models::SpeculativeHost host)
    : decoding_(std::move(decoding)), proposer_resources_(checked(decoding_).proposer()), seed_(seed), host_(host) {}

IterationCost SpeculativeServing::cost(const models::InferenceModel& main, const IterationResources& main_resources,
                                       const models::IterationBatch& b) const {
  const models::SpeculativeDecoding& d = *decoding_;
  const models::IterationBatch verify = d.verify_batch(b);
  const models::IterationTime verify_time = main.iteration_time(verify);
  IterationCost c;
  c.duration = verify_time.total();
  c.split = main_resources.split(verify, verify_time);
  if (b.decode_sequences > 0) {
    c.duration += host_.step;
    c.split.host_s += host_.step.value();
  }
  for (int64_t pass = 0; pass < d.draft_passes(b); ++pass) {
    const models::IterationBatch draft = d.draft_batch(b, pass);
    const models::IterationTime t = d.proposer().iteration_time(draft);
    const units::Seconds pass_time = models::draft_pass_time(t.total(), host_);
    c.duration += pass_time;
    add(c.split, proposer_resources_.split(draft, t));
    c.split.host_s += (pass_time - t.total()).value();
  }
  return c;
}

int64_t SpeculativeServing::kv_slots(int64_t remaining_output) const {
  return std::clamp<int64_t>(remaining_output, 1, decoding_->tokens() + 1);
}

int64_t SpeculativeServing::accepted_drafts(RandomStream& stream, int64_t remaining_output) const {
  const int64_t drawn = models::draw_tokens_per_step(decoding_->acceptance(), [&] { return stream.uniform(); });
  return std::clamp<int64_t>(drawn - 1, 0, std::max<int64_t>(remaining_output - 1, 0));
}

IterationCost iteration_cost(const models::InferenceModel& main, const IterationResources& main_resources,
                             const SpeculativeServing* speculative, const models::IterationBatch& b,
                             models::IterationMemo* memo) {
  if (speculative != nullptr) return speculative->cost(main, main_resources, b);
  const models::IterationTime time = memo != nullptr ? main.iteration_time(b, *memo) : main.iteration_time(b);
  return {time.total(), main_resources.split(b, time)};
}

}  // namespace clustersim::sim
