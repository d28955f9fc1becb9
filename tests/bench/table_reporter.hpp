// A Google Benchmark display reporter that prints each program's results as one aligned table, readable in a
// terminal and pasteable into Markdown docs (a pipe table with padded cells). The main() of every program in
// tests/bench (bench_main.cpp) uses it unless --benchmark_format is given.
//
//   bench_job: 2 CPUs at 2,096 MHz, load average 1.20 0.90 0.80, 2026-11-27 18:45 UTC   (columns trimmed)
//
//   | case                            | time per iteration (ms) | CPU per iteration (ms) | iterations | wall_days |
//   |:--------------------------------|------------------------:|-----------------------:|-----------:|----------:|
//   | `BM_MonthLongJob/0/manual_time` |                   86.50 |                  64.10 |          5 |     30.32 |
//
// Rows: one per benchmark case, in run order. A case run with repetitions shows its median (Google Benchmark's
// "median" aggregate, named "<case> (median of N)"); the other aggregates (mean, stddev, cv, complexity) are
// left out: --benchmark_format=json has them all. Plain repetitions (without aggregates only) are "#1", "#2"...
// Case names are Google Benchmark's without the run set-up parts (iterations:N, repeats:N, min_time:N,
// real_time) but with "/manual_time", since that changes what the time column means.
// Columns: case (in backticks, so that Markdown shows BM_FullSolve<Pods> as it is); time per iteration and CPU per iteration (main thread) in one unit for the table, the finest
// unit of its cases (ns, us, ms or s); iterations; each user counter by name, in name order (a counter's unit is
// in its name: wall_days, points_per_s; rates are per second of the case's clock); label (SetLabel), when any
// case has one. A case that failed (SkipWithError) shows "ERROR: <message>" in the label column and blank
// numbers, and makes had_error() true. A '|' in a cell is escaped ("\|").
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace clustersim::bench {

class TableReporter : public benchmark::BenchmarkReporter {
 public:
  /// Prints the program's title line (name, CPUs, clock, load average, UTC time); always true (run).
  bool ReportContext(const Context& context) override;
  /// Keeps the rows of one case (printed by Finalize, when the column widths are known).
  void ReportRuns(const std::vector<Run>& runs) override;
  /// Prints the table, or "(no benchmark ran)" when no case was reported.
  void Finalize() override;
  /// True when a reported case failed (SkipWithError).
  [[nodiscard]] bool had_error() const { return had_error_; }

 private:
  struct Row {
    std::string name;
    double real_time = 0.0;  ///< per iteration, in `unit`
    double cpu_time = 0.0;   ///< per iteration, in `unit`
    benchmark::TimeUnit unit = benchmark::kNanosecond;
    int64_t iterations = 0;
    std::map<std::string, double> counters;
    std::string label;
    bool error = false;
  };
  std::vector<Row> rows_;
  bool had_error_ = false;
};

/// `value` with 4 significant digits (at most `max_decimals` decimals) in fixed notation with thousands
/// separators ("0.3833", "72.59", "80.00", "5,139", "90,800"), scientific ("1.500e-05") below 1e-4 or from 1e15,
/// "nan", "inf". The time columns.
std::string format_significant(double value, int max_decimals = 20);

/// A counter's value: whole numbers whole ("32", "1,047,270"; counts), others as format_significant.
std::string format_number(double value);

/// `value` in `from` converted to `to` (e.g. 1.5 ms to 1500 us).
double convert_time(double value, benchmark::TimeUnit from, benchmark::TimeUnit to);

}  // namespace clustersim::bench
