#include "tests/bench/table_reporter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <ostream>
#include <set>
#include <utility>

namespace clustersim::bench {

namespace {

/// The case's name: Google Benchmark's without the parts that only say how it was run (see the header).
std::string case_name(const benchmark::BenchmarkReporter::Run& run) {
  const benchmark::BenchmarkName& n = run.run_name;
  std::string name = n.function_name;
  for (const std::string* part : {&n.args, &n.threads}) {
    if (!part->empty()) name += "/" + *part;
  }
  if (n.time_type == "manual_time") name += "/manual_time";
  return name;
}

std::string program_name() {
  const char* path = benchmark::BenchmarkReporter::Context::executable_name;
  if (path == nullptr) return "benchmark";
  const std::string p(path);
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

/// Inserts thousands separators into the integer digits of a fixed-notation number ("-1234.5" -> "-1,234.5").
std::string group_thousands(const std::string& fixed) {
  const std::size_t sign = fixed[0] == '-' ? 1 : 0;
  const std::size_t end = std::min(fixed.find('.'), fixed.size());
  std::string out = fixed.substr(0, sign);
  for (std::size_t i = sign; i < end; ++i) {
    out += fixed[i];
    const std::size_t left = end - i - 1;
    if (left > 0 && left % 3 == 0) out += ',';
  }
  return out + fixed.substr(end);
}

/// `text` with each '|' escaped ("\|"), so that it stays one Markdown table cell.
std::string escape_pipes(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

/// A cell of `width` characters: left-aligned text, or right-aligned (numbers).
std::string pad(const std::string& text, std::size_t width, bool left) {
  const std::string fill(width - std::min(width, text.size()), ' ');
  return left ? text + fill : fill + text;
}

}  // namespace

std::string format_number(double value) {
  if (value == std::round(value) && std::fabs(value) < 1e15) return format_significant(value, 0);
  return format_significant(value);
}

std::string format_significant(double value, int max_decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return "0";
  const double magnitude = std::fabs(value);
  char text[64];
  if (magnitude < 1e-4 || magnitude >= 1e15) {
    std::snprintf(text, sizeof text, "%.3e", value);
    return text;
  }
  const int decimals =
      std::min(max_decimals, std::max(0, 3 - static_cast<int>(std::floor(std::log10(magnitude)))));
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return group_thousands(text);
}

double convert_time(double value, benchmark::TimeUnit from, benchmark::TimeUnit to) {
  return value / benchmark::GetTimeUnitMultiplier(from) * benchmark::GetTimeUnitMultiplier(to);
}

bool TableReporter::ReportContext(const Context& context) {
  const benchmark::CPUInfo& cpu = context.cpu_info;
  std::string load;
  for (const double l : cpu.load_avg) {
    char text[16];
    std::snprintf(text, sizeof text, " %.2f", l);
    load += text;
  }
  GetOutputStream() << program_name() << ": " << cpu.num_cpus << " CPUs at "
                    << format_number(std::round(cpu.cycles_per_second / 1e6)) << " MHz"
                    << (load.empty() ? "" : ", load average" + load) << ", " << utc_now() << "\n"
                    << std::flush;
  return true;
}

void TableReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    Row row;
    row.name = case_name(run);
    if (run.run_type == Run::RT_Aggregate) {
      if (run.aggregate_name != "median") continue;
      row.name += " (median of " + std::to_string(run.repetitions) + ")";
    } else if (run.repetitions > 1) {
      row.name += " #" + std::to_string(run.repetition_index + 1);
    }
    row.unit = run.time_unit;
    row.label = run.report_label;
    if (run.error_occurred) {
      row.error = true;
      row.label = "ERROR: " + run.error_message;
      had_error_ = true;
    } else {
      row.real_time = run.GetAdjustedRealTime();
      row.cpu_time = run.GetAdjustedCPUTime();
      row.iterations = static_cast<int64_t>(run.iterations);
      for (const auto& [name, counter] : run.counters) row.counters[name] = counter.value;
    }
    rows_.push_back(std::move(row));
  }
}

void TableReporter::Finalize() {
  std::ostream& out = GetOutputStream();
  if (rows_.empty()) {
    out << "(no benchmark ran)\n" << std::flush;
    return;
  }
  // The table's time unit: the finest of its cases (TimeUnit runs from ns to s).
  benchmark::TimeUnit unit = benchmark::kSecond;
  std::set<std::string> counter_names;
  bool any_label = false;
  for (const Row& r : rows_) {
    if (!r.error) unit = std::min(unit, r.unit);
    for (const auto& c : r.counters) counter_names.insert(c.first);
    any_label = any_label || !r.label.empty();
  }
  const std::string u = benchmark::GetTimeUnitString(unit);

  std::vector<std::string> header = {"case", "time per iteration (" + u + ")", "CPU per iteration (" + u + ")",
                                     "iterations"};
  header.insert(header.end(), counter_names.begin(), counter_names.end());
  if (any_label) header.emplace_back("label");
  std::vector<bool> left(header.size(), false);
  left.front() = true;
  if (any_label) left.back() = true;

  std::vector<std::vector<std::string>> cells;
  for (const Row& r : rows_) {
    std::vector<std::string> line = {"`" + r.name + "`"};
    if (r.error) {
      line.resize(header.size());
    } else {
      line.push_back(format_significant(convert_time(r.real_time, r.unit, unit)));
      line.push_back(format_significant(convert_time(r.cpu_time, r.unit, unit)));
      line.push_back(format_number(static_cast<double>(r.iterations)));
      for (const std::string& name : counter_names) {
        const auto it = r.counters.find(name);
        line.push_back(it == r.counters.end() ? "" : format_number(it->second));
      }
      line.resize(header.size());
    }
    if (any_label) line.back() = r.label;
    for (std::string& cell : line) cell = escape_pipes(cell);
    cells.push_back(std::move(line));
  }

  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = std::max<std::size_t>(header[c].size(), 3);
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }
  const auto print = [&](const std::vector<std::string>& line) {
    out << "|";
    for (std::size_t c = 0; c < line.size(); ++c) out << " " << pad(line[c], width[c], left[c]) << " |";
    out << "\n";
  };
  out << "\n";
  print(header);
  out << "|";
  for (std::size_t c = 0; c < header.size(); ++c) {
    out << (left[c] ? ":" : "-") << std::string(width[c], '-') << (left[c] ? "-" : ":") << "|";
  }
  out << "\n";
  for (const auto& line : cells) print(line);
  out << "\n" << std::flush;
}

}  // namespace clustersim::bench
