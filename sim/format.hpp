// printf into a std::string, for the text reports and tables (base layer: every layer may use it).
#pragma once

#include <string>

namespace clustersim::sim {

/// `format` filled with the arguments as std::printf would, of any length. Arguments must match the format
/// (checked by the compiler).
__attribute__((format(printf, 1, 2))) std::string printf_string(const char* format, ...);

}  // namespace clustersim::sim
