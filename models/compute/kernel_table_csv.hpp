// Reading the measured kernel tables' CSV files (models/hardware/catalog/kernels/): the common grammar of
// measured_gemm.cpp and measured_attention.cpp. Internal to models/compute.
#pragma once

#include <string>
#include <vector>

namespace clustersim::models::detail {

/// One data line of a kernel table: its 1-based line number in the file and its comma-separated cells.
struct CsvRecord {
  int line = 0;
  std::vector<std::string> cells;
};

/// The data lines of `path`: `#` comment and empty lines skipped, the first other line must start with `header`
/// (the columns the reader needs; more columns may follow), every data line must have at least `columns` cells.
/// `what` names the table in errors. Throws std::runtime_error "PATH:LINE: why" on a missing file, a wrong header,
/// a short line or no data line.
std::vector<CsvRecord> read_kernel_table(const std::string& path, const std::string& header, size_t columns,
                                         const std::string& what);

/// `cell` as a number, or std::runtime_error "PATH:LINE: not a number: 'cell'".
double kernel_table_number(const std::string& path, int line, const std::string& cell);

/// Throws std::runtime_error "PATH:LINE: why".
[[noreturn]] void kernel_table_error(const std::string& path, int line, const std::string& why);

}  // namespace clustersim::models::detail
