// The HDF5 results file (schema in docs/hdf5-schema.md).
//
// Layout (schema_version 1):
//   /                      attributes: software_version, git_sha, schema_version (int64), command_line,
//                          seed (uint64), scenario_toml (the resolved scenario). Strings are variable-length
//                          UTF-8. No timestamps anywhere: the same input gives a byte-identical file.
//   /summary/<column>      1-D dataset, one row per run; float64, int64 or variable-length UTF-8 string;
//                          attributes "units" (e.g. "s", "TFLOP/s", "1" for dimensionless, "" for labels)
//                          and "description".
// Written atomically: to "<path>.tmp-<pid>" in the same directory, flushed, fsync'd, closed, then renamed
// over `path`. On any error the temporary file is removed and nothing appears at `path`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

namespace clustersim::sim {

/// One /summary column. All columns of a file have the same number of rows.
struct SummaryColumn {
  std::string name;         ///< dataset name: [a-z0-9_]+
  std::string units;        ///< unit string as written in docs/hdf5-schema.md
  std::string description;  ///< one line
  std::variant<std::vector<double>, std::vector<int64_t>, std::vector<std::string>> values;
};

/// Root attributes of a results file.
struct RunMetadata {
  std::string software_version;
  std::string git_sha;
  int64_t schema_version = 1;
  std::string command_line;
  uint64_t seed = 0;
  std::string scenario_toml;
};

/// Writes `path` atomically. Throws std::runtime_error (message names the path and the HDF5 call) on
/// failure, or std::invalid_argument (before touching the file system) if columns differ in length, a
/// name is not [a-z0-9_]+ or appears twice, or a string contains a NUL character. Zero columns and zero
/// rows are allowed. If only the final fsync of the directory fails, the file is already at `path`.
void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns);

}  // namespace clustersim::sim
