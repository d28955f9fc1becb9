#include "sim/io/request_trace.hpp"

#include <charconv>
#include <fstream>
#include <string_view>

#include "sim/input_file.hpp"

namespace clustersim::sim {
namespace {

/// Seconds since the Unix epoch of "YYYY-MM-DD HH:MM:SS[.fraction]" read as UTC (days from the civil date by
/// Howard Hinnant's days_from_civil), or nullopt when malformed.
std::optional<double> parse_timestamp(std::string_view s) {
  const auto number = [&s](size_t at, size_t len) -> std::optional<int> {
    if (at + len > s.size()) return std::nullopt;
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data() + at, s.data() + at + len, v);
    if (ec != std::errc() || end != s.data() + at + len) return std::nullopt;
    return v;
  };
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':') return std::nullopt;
  const auto y = number(0, 4), mo = number(5, 2), d = number(8, 2), h = number(11, 2), mi = number(14, 2),
             se = number(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
      *se > 60) {
    return std::nullopt;
  }
  // No February 31: the day must exist in its month (Gregorian leap years).
  const bool leap = (*y % 4 == 0 && *y % 100 != 0) || *y % 400 == 0;
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*d > kDays[*mo - 1] + (*mo == 2 && leap ? 1 : 0)) return std::nullopt;
  double fraction = 0.0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20) return std::nullopt;
    double scale = 0.1;
    for (size_t i = 20; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      fraction += scale * (s[i] - '0');
      scale /= 10.0;
    }
  }
  const int yy = *mo <= 2 ? *y - 1 : *y;
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = static_cast<double>(era) * 146097.0 + static_cast<double>(doe) - 719468.0;
  return days * 86400.0 + *h * 3600.0 + *mi * 60.0 + *se + fraction;
}

/// At most 32 characters of a field, for a message: never more of a file than the offending field.
std::string excerpt(std::string_view field) {
  constexpr size_t kMax = 32;
  return field.size() <= kMax ? std::string(field) : std::string(field.substr(0, kMax)) + "...";
}

}  // namespace

RequestTrace load_request_trace(const std::filesystem::path& file, std::optional<double> window_s) {
  const auto fail = [&file](int64_t line, const std::string& what) {
    throw TraceError(file.string() + ":" + std::to_string(line) + ": " + what);
  };
  try {
    (void)check_input_file(file, kMaxTraceInputBytes);
  } catch (const InputFileError& e) {
    throw TraceError("cannot read the trace " + file.string() + ": " + e.what());
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw TraceError("cannot read the trace " + file.string());
  std::string text;
  int64_t line = 0;
  if (!std::getline(in, text)) fail(1, "empty file; expected the header TIMESTAMP,ContextTokens,GeneratedTokens");
  ++line;
  if (!text.empty() && text.back() == '\r') text.pop_back();
  // The first line is not echoed: a file named by mistake (/etc/passwd) must not be shown.
  if (text != "TIMESTAMP,ContextTokens,GeneratedTokens") {
    fail(line, "expected the header TIMESTAMP,ContextTokens,GeneratedTokens (is this a request trace?)");
  }
  RequestTrace trace;
  std::vector<TraceRequest>& out = trace.requests;
  std::optional<double> first, last;
  int64_t rows = 0, output_tokens = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.empty()) continue;
    if (++rows > kMaxTraceRequests) {
      fail(line, "more than " + std::to_string(kMaxTraceRequests) +
                     " requests, above the simulation's budget (docs/serving.md, \"Budgets\")");
    }
    const size_t c1 = text.find(','), c2 = c1 == std::string::npos ? c1 : text.find(',', c1 + 1);
    if (c2 == std::string::npos || text.find(',', c2 + 1) != std::string::npos) {
      fail(line, "expected three fields TIMESTAMP,ContextTokens,GeneratedTokens");
    }
    const auto at = parse_timestamp(std::string_view(text).substr(0, c1));
    if (!at) {
      fail(line, "malformed timestamp or impossible date '" + excerpt(std::string_view(text).substr(0, c1)) +
                     "' (expected YYYY-MM-DD HH:MM:SS.fraction)");
    }
    int64_t tokens[2] = {0, 0};
    const std::string_view fields[2] = {std::string_view(text).substr(c1 + 1, c2 - c1 - 1),
                                        std::string_view(text).substr(c2 + 1)};
    for (int k = 0; k < 2; ++k) {
      const char* name = k == 0 ? "ContextTokens" : "GeneratedTokens";
      const auto [end, ec] = std::from_chars(fields[k].data(), fields[k].data() + fields[k].size(), tokens[k]);
      const bool whole = end == fields[k].data() + fields[k].size() && !fields[k].empty();
      const bool too_many =
          ec == std::errc::result_out_of_range || (ec == std::errc() && tokens[k] > kMaxTraceTokensPerRequest);
      if (whole && too_many) {
        fail(line, std::string(name) + " above the per-request bound of " + std::to_string(kMaxTraceTokensPerRequest) +
                       " tokens, got '" + excerpt(fields[k]) + "'");
      }
      if (ec != std::errc() || !whole || tokens[k] < 1) {
        fail(line, std::string(name) + " must be a whole number >= 1, got '" + excerpt(fields[k]) + "'");
      }
    }
    if (last && *at < *last) fail(line, "timestamps must be ascending");
    last = *at;
    if (!first) first = *at;
    const double arrival = *at - *first;
    if (window_s && arrival >= *window_s) {
      ++trace.cut;  // outside the window: counted, not kept
      continue;
    }
    output_tokens += tokens[1];  // each <= 2^31, at most 2e6 rows: no overflow
    if (output_tokens > kMaxTraceOutputTokens) {
      fail(line, "GeneratedTokens: more than " + std::to_string(kMaxTraceOutputTokens) +
                     " output tokens in all, above the simulation's budget (docs/serving.md, \"Budgets\")");
    }
    out.push_back({arrival, tokens[0], tokens[1]});
  }
  if (in.bad()) fail(line, "read error");
  return trace;
}


}  // namespace clustersim::sim
