// The scenario parameter table (private to sim/io): every table and key of a scenario file declared once, with
// its type, unit, default, allowed values and help. The loader (scenario.cpp) takes unknown-key rejection,
// type and range checks and defaults from it; scenario_keys_markdown() renders docs/scenario-format.md's
// reference from it. Checks that relate several keys (divisibility, GPU count) are code in scenario.cpp and
// are stated in the help texts here.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace clustersim::sim::detail {

/// zone_list: an array of tables, each {name = string, nodes = integer >= 1} ([[cluster.zones]]).
/// string_list: an array of distinct strings, each one of `choices`.
/// number_list: a non-empty array of finite numbers, each checked against lo/hi as a number.
enum class ParamType { integer, number, string, boolean, zone_list, string_list, number_list };

/// How a key may be absent.
enum class Need {
  required,   ///< must be given (for a key of an optional table: whenever the table is given)
  defaulted,  ///< `default_text` (a TOML literal) is used when absent
  derived,    ///< computed from other keys when absent; `default_text` says how (prose)
  optional    ///< may be absent, no default
};

/// A table of the file ("" is the root).
struct TableSpec {
  std::string_view name{};
  bool required = false;
  std::string_view help{};
};

/// One key. Integers are checked against [min_int, max_int]; numbers against lo/hi (open or closed) and must be
/// finite; strings against `choices` when given, else non-empty when `non_empty`.
struct ParamSpec {
  std::string_view key{};  ///< dotted: "parallelism.tensor"; a root key has no dot
  ParamType type = ParamType::integer;
  std::string_view unit{};  ///< "" when dimensionless
  Need need = Need::required;
  std::string_view default_text{};  ///< TOML literal (defaulted) or prose (derived)
  int64_t min_int = std::numeric_limits<int64_t>::min();
  int64_t max_int = std::numeric_limits<int64_t>::max();
  double lo = -std::numeric_limits<double>::infinity();
  bool lo_open = false;
  double hi = std::numeric_limits<double>::infinity();
  bool hi_open = false;
  std::span<const std::string_view> choices{};
  bool non_empty = false;
  std::string_view help{};
  /// Why the upper bound (max_int / hi) is where it is: the simulation's limits, with the published extremes they
  /// leave room for. Shown in the reference and in the error for a value above it; "" when there is none.
  std::string_view bound_reason{};

  /// "parallelism" for "parallelism.tensor", "" for a root key.
  [[nodiscard]] std::string_view table() const {
    const auto dot = key.find('.');
    return dot == std::string_view::npos ? std::string_view{} : key.substr(0, dot);
  }
  /// "tensor" for "parallelism.tensor".
  [[nodiscard]] std::string_view leaf() const {
    const auto dot = key.find('.');
    return dot == std::string_view::npos ? key : key.substr(dot + 1);
  }
};

/// Tables in file order; the root ("") first.
std::span<const TableSpec> scenario_tables();
/// Keys in file order.
std::span<const ParamSpec> scenario_params();
/// The serving keys ([serving], [workload], [slo]) in file order: a part of scenario_params() kept in its own unit
/// (serving_params.cpp).
std::span<const ParamSpec> serving_params();
/// nullptr when `dotted` is not a key of the format.
const ParamSpec* find_param(std::string_view dotted);
/// nullptr when `name` is not a table of the format.
const TableSpec* find_table(std::string_view name);

/// Allowed values in words, as the reference and the error messages state them: ">= 1", "in (0, 1]",
/// "one of fp32, tf32, fp16, bf16, fp8", "non-empty"; "" when anything of the type goes.
std::string allowed_text(const ParamSpec& p);
/// "integer", "number", "string", "boolean".
std::string_view type_name(ParamType t);
/// Shortest round-trip text of a double ("148", "0.5", "1e+300").
std::string format_number(double v);

}  // namespace clustersim::sim::detail
