// A sweep's identity by content (issue 26, defect 2): what `--resume` checks against the sidecar and what `merge`
// checks across shards. Each part is a 64-bit FNV-1a hash (sim/sweep/sidecar.hpp, fnv1a) of one input, so that a
// mismatch names what changed: the scenario file's bytes, the --set overrides, the [sweep] table as read (its
// axes, values and objective), every file the run reads (the request traces `workload.trace` and eviction traces
// `reliability.spot_eviction_trace`, of the base scenario and of every swept value, resolved against the
// scenario's directory as the loader does), the hardware catalog directory's files, the engine version
// (sim/version.hpp) and the expanded points.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/sweep/sweep_runner.hpp"

namespace clustersim::sim {

/// One hashed input of a sweep.
struct FingerprintPart {
  std::string name;  ///< "scenario", "set", "sweep", "request trace PATH", "eviction trace PATH", "catalog",
                     ///< "engine", "points" (and "shard" in a sidecar)
  std::string hash;  ///< 16 lower-case hex digits (FNV-1a 64)
  bool operator==(const FingerprintPart&) const = default;
};

/// The fingerprint of a sweep's inputs: the parts listed in the header comment, in that order. A file that cannot
/// be read (a swept trace that does not exist) hashes its reason instead of its bytes. `catalog_directory` is
/// the directory Catalog::load read (every regular file under it is hashed, by sorted relative path). Reads
/// each file once (traces: up to kMaxTraceInputBytes, in chunks). Does not throw for unreadable inputs.
std::vector<FingerprintPart> sweep_fingerprint(const LoadedSweep& sweep,
                                               const std::filesystem::path& catalog_directory);

/// What differs between the fingerprint `was` (written before) and `now`, as a sentence per part: "the scenario
/// changed since the sidecar was written", "the request trace 'traces/a.csv' changed since ...", with `since`
/// ("since the sidecar was written") at the end of each. Empty when they are equal.
std::string describe_fingerprint_change(const std::vector<FingerprintPart>& was,
                                        const std::vector<FingerprintPart>& now, const std::string& since);

/// The 16 lower-case hex digits of `h`.
std::string hex64(uint64_t h);

}  // namespace clustersim::sim
