#include "sim/format.hpp"

#include <cstdarg>
#include <cstdio>

namespace clustersim::sim {

std::string printf_string(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0U, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, format, args);
  va_end(args);
  return s;
}

std::string counted(int64_t count, std::string_view singular, std::string_view plural) {
  std::string out = std::to_string(count) + " ";
  if (count == 1) return out.append(singular);
  if (plural.empty()) return out.append(singular).append("s");
  return out.append(plural);
}

std::string report_header(std::string_view name, std::string_view description,
                          const std::vector<std::string>& overrides) {
  std::string out = std::string(name) + "\n";
  if (description.empty()) return out;
  out.append("  ").append(description).append("\n");
  if (overrides.empty()) return out;
  out += "  (the file's description; this run is the file with";
  for (const std::string& o : overrides) out.append(" --set ").append(o);
  return out + ")\n";
}

}  // namespace clustersim::sim
