// The rules of split prefill and decode pools (serving.prefill_*; docs/serving.md, "Disaggregated prefill and
// decode"), on a Loader. Private to sim/io.
#pragma once

#include <cstdint>
#include <optional>

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim::detail {

class Loader;

/// Without serving.prefill_replicas >= 1, no other serving.prefill_* key. With it: no pipeline, autoscaling, spot
/// replicas or zone outage; the prefill VM size exists, has the math of serving.precision and InfiniBand (so has
/// the decode pool's VM size: the KV cache moves over it); serving.prefill_tensor divides the heads and widths as
/// serving.tensor must, within one NVLink domain, and its weights leave a KV cache; without chunked prefill the
/// longest prompt (`longest_prompt_tokens`, nullopt when unbounded) fits serving.prefill_max_num_batched_tokens.
/// Learns the prefill VM size's price. Throws ScenarioError at the key.
void check_disaggregation(Loader& l, const models::Catalog& catalog, std::optional<int64_t> longest_prompt_tokens);

}  // namespace clustersim::sim::detail
