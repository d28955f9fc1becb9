// Test support: reading result columns back from a clustersim HDF5 file.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "sim/sweep/summary_file.hpp"

namespace clustersim::testing {

/// Column `name` of `file`'s /summary group as a vector of T (double or std::string); an empty vector and a
/// test failure when there is no such column.
template <typename T>
std::vector<T> summary_column(const std::filesystem::path& file, const std::string& name) {
  for (auto& c : sim::read_results_columns(file, "summary")) {
    if (c.name == name) return std::get<std::vector<T>>(c.values);
  }
  ADD_FAILURE() << "no column " << name << " in " << file;
  return {};
}

}  // namespace clustersim::testing
