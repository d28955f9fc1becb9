#include "models/compute/kernel_table_csv.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace clustersim::models::detail {

void kernel_table_error(const std::string& path, int line, const std::string& why) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": " + why);
}

double kernel_table_number(const std::string& path, int line, const std::string& cell) {
  try {
    size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size()) return v;
  } catch (const std::logic_error&) {
  }
  kernel_table_error(path, line, "not a number: '" + cell + "'");
}

std::vector<CsvRecord> read_kernel_table(const std::string& path, const std::string& header, size_t columns,
                                         const std::string& what) {
  // A regular file only, as the catalog's TOML files: a FIFO would block the open, a device never end.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::runtime_error(path + ": cannot read the " + what + " (missing or not a regular file)");
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the " + what);
  std::vector<CsvRecord> records;
  std::string text;
  int line = 0;
  bool seen_header = false;
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text[0] == '#') continue;
    if (!seen_header) {
      if (!text.starts_with(header)) kernel_table_error(path, line, "expected the header " + header);
      seen_header = true;
      continue;
    }
    CsvRecord r{line, {}};
    std::stringstream fields(text);
    for (std::string cell; std::getline(fields, cell, ',');) r.cells.push_back(cell);
    if (r.cells.size() < columns) kernel_table_error(path, line, "expected " + header);
    records.push_back(std::move(r));
  }
  if (records.empty()) throw std::runtime_error(path + ": the " + what + " has no rows");
  return records;
}

}  // namespace clustersim::models::detail
