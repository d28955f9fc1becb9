// JSON text: see json.hpp.
#include "sim/output/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <type_traits>
#include <variant>

namespace clustersim::sim {
namespace {

/// Length of the well-formed UTF-8 sequence at s[i], or 0 if it is not one.
std::size_t utf8_sequence_length(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

/// Appends `s` as a JSON string literal: quotes, backslashes and control characters escaped, well-formed
/// UTF-8 copied, any other byte replaced by U+FFFD.
void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  out += '"';
}


size_t rows_of(const SummaryColumn& c) {
  return std::visit([](const auto& v) { return v.size(); }, c.values);
}

std::string value_json(const SummaryColumn& c, size_t row) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, double>) {
          return json_number(v[row]);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v[row]);
        } else {
          return json_string(v[row]);
        }
      },
      c.values);
}

}  // namespace

std::string json_string(const std::string& s) {
  std::string out;
  append_string(out, s);
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

std::string columns_json(const std::vector<SummaryColumn>& columns, bool scalar_rows) {
  const size_t n = columns.empty() ? 0 : rows_of(columns.front());
  for (const SummaryColumn& c : columns) {
    if (rows_of(c) != n) throw std::invalid_argument("columns_json: column '" + c.name + "' has another length");
  }
  std::string values = "{", units = "{", descriptions = "{";
  for (size_t i = 0; i < columns.size(); ++i) {
    const SummaryColumn& c = columns[i];
    const std::string sep = i == 0 ? "" : ", ";
    const std::string key = json_string(c.name) + ": ";
    std::string value;
    if (scalar_rows && n == 1) {
      value = value_json(c, 0);
    } else {
      value = "[";
      for (size_t r = 0; r < n; ++r) value += (r == 0 ? "" : ", ") + value_json(c, r);
      value += "]";
    }
    values += sep + key + value;
    units += sep + key + json_string(c.units);
    descriptions += sep + key + json_string(c.description);
  }
  return "{\"values\": " + values + "}, \"units\": " + units + "}, \"descriptions\": " + descriptions + "}}";
}

}  // namespace clustersim::sim
