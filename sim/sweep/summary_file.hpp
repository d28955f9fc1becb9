// Reading back the parts of a results file (sim/output/results_file.hpp) that `clustersim merge` needs: the
// root attributes, the /summary columns (float64, int64, UTF-8 strings, with units and description) and a
// group of columns such as /sweep/columns.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/output/results_file.hpp"

namespace clustersim::sim {

/// Root attributes of `path`. Throws std::runtime_error naming the file when it cannot be read.
RunMetadata read_results_metadata(const std::filesystem::path& path);

/// The columns of group `group` ("summary", "sweep/columns") of `path`, in name order (HDF5 keeps no creation
/// order; callers reorder). Throws std::runtime_error naming the file and the dataset on failure.
std::vector<SummaryColumn> read_results_columns(const std::filesystem::path& path, const std::string& group);

/// The axes of the grid group `group` ("sweep"; see GridGroup) in dimension order, read from its "grid_axes"
/// attribute; empty when the group or the attribute is absent. Throws std::runtime_error when an axis cannot
/// be read.
std::vector<SummaryColumn> read_grid_axes(const std::filesystem::path& path, const std::string& group);

}  // namespace clustersim::sim
