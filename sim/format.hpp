// printf into a std::string and counted nouns, for the text reports and tables (base layer: every layer may use
// them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::sim {

/// `format` filled with the arguments as std::printf would, of any length. Arguments must match the format
/// (checked by the compiler).
__attribute__((format(printf, 1, 2))) std::string printf_string(const char* format, ...);

/// A count and its noun, singular when the count is 1 and plural otherwise: counted(1, "replica") is "1 replica",
/// counted(4, "replica") "4 replicas", counted(1, "microbatch", "microbatches") "1 microbatch". `plural`
/// defaults to `singular` + "s". Every count a report prints with a noun goes through this one function.
std::string counted(int64_t count, std::string_view singular, std::string_view plural = {});

/// The first lines of a run's text report: the scenario's name, then its description indented by two spaces
/// (none when empty). With --set options (`overrides`, "KEY=VALUE" each) the description is the file's, not
/// necessarily this run's, and a second indented line says so: "(the file's description; this run is the file
/// with --set KEY=VALUE --set ...)". Each line ends in a newline.
std::string report_header(std::string_view name, std::string_view description,
                          const std::vector<std::string>& overrides);

}  // namespace clustersim::sim
