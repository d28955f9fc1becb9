// "Did you mean" suggestions for unknown keys and catalog names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::sim {

/// The most leading bytes of a wanted name that closest_names compares: longer than any key or catalog name
/// (the longest key has under 50 bytes), so that an 80 KB unknown key costs as little as a short one.
inline constexpr std::size_t kClosestNameBytes = 64;

/// Case-insensitive Levenshtein distance between `a` and `b` (insert, delete, substitute: 1 each).
/// Cost: O(|a| x |b|) time, O(|b|) memory.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// Up to `n` of `names`, closest to `wanted` (its first kClosestNameBytes bytes) first, ties in the given order,
/// comma separated, ", ..." after when some were left out. Cost: O(names x kClosestNameBytes x name length).
std::string closest_names(std::string_view wanted, std::vector<std::string> names, std::size_t n);

}  // namespace clustersim::sim
