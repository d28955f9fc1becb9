// The sweep commands' shared helpers (command_support.hpp).
#include "sim/sweep/command_support.hpp"

#include <charconv>
#include <system_error>

namespace clustersim::sim {

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t v = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace clustersim::sim
