// Limits on a TOML text's shape, checked before TOML++ parses it: TOML++ 3.3 recurses once per dotted key part
// and per nested array or inline table, so a 40,000-part key (80 KB) overflows the stack (SIGSEGV). A lexical
// pre-scan (strings and comments skipped) refuses such a text with a position instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clustersim::sim {

/// The most dotted parts of one key, a table header's included ("a.b.c" has 3).
inline constexpr int64_t kMaxTomlKeyParts = 32;
/// The most arrays and inline tables nested in one value ("[[1]]" nests 2).
inline constexpr int64_t kMaxTomlValueNesting = 32;
/// The longest key, in bytes as written (dots, quotes and spaces between its parts included).
inline constexpr std::size_t kMaxTomlKeyBytes = 256;

/// Where a text breaks one of the limits above: 1-based line and byte column, and a plain reason.
struct TomlLimitViolation {
  int64_t line = 1;
  int64_t column = 1;
  std::string message;
};

/// Scans `text` (a TOML document) once, O(size), without recursion, and returns the first place where a key has
/// more than kMaxTomlKeyParts parts or more than kMaxTomlKeyBytes bytes, or a value nests arrays or inline tables
/// deeper than kMaxTomlValueNesting; nullopt when it keeps to them. Strings (basic, literal, multi-line) and
/// comments are skipped; anything that is not valid TOML is left to the parser (this never reports syntax).
/// Numbers and dates in values count as dotted parts too ("1.5" is 2), which no valid value comes near the limit
/// with.
std::optional<TomlLimitViolation> check_toml_limits(std::string_view text);

}  // namespace clustersim::sim
