#include "sim/io/eviction_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/input_file.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim::sim {

namespace {

constexpr const char* kKey = "reliability.spot_eviction_trace";

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

/// At most the first 32 bytes of `field`, "..." after a cut: a message never echoes more of the file.
std::string shown_field(std::string_view field) {
  constexpr std::size_t kShown = 32;
  return "'" + std::string(field.substr(0, kShown)) + (field.size() > kShown ? "...'" : "'");
}

}  // namespace

std::vector<units::Seconds> read_eviction_trace(const std::filesystem::path& file, int64_t max_entries) {
  const std::string content = read_input_file(file, kMaxTraceInputBytes);
  std::vector<units::Seconds> times;
  std::string_view rest = content;
  int64_t number = 0;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    ++number;
    const std::string text(trim(line.substr(0, line.find('#'))));
    if (text.empty()) continue;
    char* stop = nullptr;
    const double hours = std::strtod(text.c_str(), &stop);
    if (stop == text.c_str() || *stop != '\0' || !(hours >= 0.0) || !std::isfinite(hours)) {
      throw ScenarioError(file, number, 1, kKey, "expected hours >= 0 since the job's start, got " + shown_field(text));
    }
    if (static_cast<int64_t>(times.size()) >= max_entries) {
      throw ScenarioError(file, number, 1, kKey,
                          "more than " + std::to_string(max_entries) +
                              " evictions: over the job simulation's event budget (" +
                              std::to_string(kMaxEvictionTraceEvents) + " events / job.replications)");
    }
    times.push_back(units::hours(hours));
  }
  std::sort(times.begin(), times.end());
  return times;
}

}  // namespace clustersim::sim
