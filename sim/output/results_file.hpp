// The HDF5 results file (schema in docs/hdf5-schema.md).
//
// Layout (schema_version 1):
//   /                      attributes: software_version, git_sha, schema_version (int64), command_line,
//                          seed (uint64), scenario_toml (the resolved scenario). Strings are variable-length
//                          UTF-8. No timestamps anywhere: the same input gives a byte-identical file.
//   /summary/<column>      1-D dataset, one row per run; float64, int64 or variable-length UTF-8 string;
//                          attributes "units" (e.g. "s", "TFLOP/s", "1" for dimensionless, "" for labels)
//                          and "description".
//   /<group path>/<column> optional further groups of 1-D datasets (ColumnGroup), e.g. /runs/0/stages with one
//                          row per pipeline stage of run 0; same types and attributes as /summary columns; the
//                          group itself has a "description" attribute. Intermediate groups (/runs, /runs/0)
//                          have no attributes.
//   /<grid path>/...       optional N-dimensional grids (GridGroup), e.g. /sweep of a grid sweep: one 1-D
//                          dataset per axis (float64 or string; an HDF5 dimension scale named after itself) and
//                          N-D float64 datasets shaped by the axes (row-major, the last axis fastest), each
//                          dimension attached to its axis's scale; "units" and "description" attributes on all;
//                          the group's attribute "grid_axes" lists the axis datasets in dimension order,
//                          separated by single spaces.
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

/// A group of columns outside /summary, e.g. the per-stage table of one run. Columns of one group have the
/// same number of rows; different groups (and /summary) may differ.
struct ColumnGroup {
  std::string path;         ///< "runs/0/stages": components [a-z0-9_]+ joined by '/'; not under "summary"
  std::string description;  ///< one line, the group's "description" attribute
  std::vector<SummaryColumn> columns;
};

/// An N-dimensional grid: `axes` are 1-D columns (float64 or strings) written as dimension scales, in
/// dimension order; `datasets` are float64 columns of prod(axis sizes) values in row-major order (the last axis
/// varies fastest), written with that shape and each dimension attached to its axis.
struct GridGroup {
  std::string path;                     ///< like ColumnGroup::path; may be the parent of a ColumnGroup's path
  std::vector<SummaryColumn> axes;      ///< at least one, each with at least one value
  std::vector<SummaryColumn> datasets;  ///< float64 only
};

/// Writes `path` atomically. Throws std::runtime_error (message names the path and the HDF5 call) on
/// failure, or std::invalid_argument (before touching the file system) if columns differ in length, a
/// name is not [a-z0-9_]+ or appears twice, or a string contains a NUL character. Zero columns and zero
/// rows are allowed. If only the final fsync of the directory fails, the file is already at `path`.
void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns);

/// The same, with `groups` written after /summary, in order (intermediate groups are created as needed).
/// Also throws std::invalid_argument (before touching the file system) if a group path is malformed, appears
/// twice or lies under /summary, if a group's columns break the rules above, or if a column's dataset path
/// is also a group's path or one's ancestor.
void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns, const std::vector<ColumnGroup>& groups);

/// The same, with `grids` written after `groups`. Also throws std::invalid_argument when a grid has no axes,
/// an empty axis, an int64 axis, a non-float64 dataset, a dataset of the wrong size, a name used twice in the
/// grid or a dataset whose path is a group's.
void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns, const std::vector<ColumnGroup>& groups,
                        const std::vector<GridGroup>& grids);

}  // namespace clustersim::sim
