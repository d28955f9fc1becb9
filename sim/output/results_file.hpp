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
#include <string_view>
#include <utility>
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

/// Receives a row of /summary columns one at a time, in their order, each with its name, units and description
/// and its one value (step_summary_columns' row; SummaryColumnList collects them as SummaryColumns). A layout
/// search's point runner (sim/sweep) takes the values straight into its row and compares the names, units and
/// descriptions with the last point's in place: no SummaryColumn, vector or string is built per column. The
/// views are valid only during the call.
class SummaryColumnSink {
 public:
  virtual ~SummaryColumnSink() = default;
  /// A float64 column.
  virtual void real(std::string_view name, std::string_view units, std::string_view description, double value) = 0;
  /// An int64 column.
  virtual void integer(std::string_view name, std::string_view units, std::string_view description,
                       int64_t value) = 0;
  /// A string column.
  virtual void text(std::string_view name, std::string_view units, std::string_view description,
                    std::string_view value) = 0;
  /// A column built whole elsewhere (a job's, an analysis' row): SummaryColumnList keeps it as it is; a sweep's
  /// row takes its first value (NaN or "" if it has none).
  virtual void column(SummaryColumn column) = 0;
};

/// The sink that collects each column as a one-row SummaryColumn, in order (the form the results file takes).
class SummaryColumnList final : public SummaryColumnSink {
 public:
  void real(std::string_view name, std::string_view units, std::string_view description, double value) override {
    columns.push_back({std::string(name), std::string(units), std::string(description), std::vector<double>{value}});
  }
  void integer(std::string_view name, std::string_view units, std::string_view description,
               int64_t value) override {
    columns.push_back({std::string(name), std::string(units), std::string(description), std::vector<int64_t>{value}});
  }
  void text(std::string_view name, std::string_view units, std::string_view description,
            std::string_view value) override {
    std::vector<std::string> one{std::string(value)};
    columns.push_back({std::string(name), std::string(units), std::string(description), std::move(one)});
  }
  void column(SummaryColumn column) override { columns.push_back(std::move(column)); }
  std::vector<SummaryColumn> columns;  ///< the columns received, in order
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
