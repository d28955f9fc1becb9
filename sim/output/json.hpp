// JSON text for the machine-readable outputs (clustersim run/sweep/collective --format json, the Chrome trace):
// string literals, numbers and the /summary columns as one object. RFC 8259; no library (the project's
// dependencies have none for JSON on Debian 12: Boost 1.74 predates Boost.JSON).
#pragma once

#include <string>
#include <vector>

#include "sim/output/results_file.hpp"

namespace clustersim::sim {

/// `s` as a JSON string literal: quotes, backslashes and control characters escaped, well-formed UTF-8 copied,
/// any other byte replaced by U+FFFD.
std::string json_string(const std::string& s);

/// `v` as a JSON number: the shortest text that reads back to the same double (std::to_chars); NaN and the
/// infinities, which JSON lacks, as null.
std::string json_number(double v);

/// Columns of equal length n as one JSON object: {"values": {NAME: value, ...}, "units": {NAME: "unit", ...},
/// "descriptions": {NAME: "...", ...}} in column order, a value being a scalar when n = 1 (`scalar_rows`) and an
/// array of n otherwise; float64 through json_number, int64 as integers, strings through json_string. The names,
/// units and descriptions are the HDF5 /summary's (docs/hdf5-schema.md). std::invalid_argument when the columns'
/// lengths differ.
std::string columns_json(const std::vector<SummaryColumn>& columns, bool scalar_rows);

}  // namespace clustersim::sim
