// The table reporter of the benchmark programs (tests/bench/table_reporter.hpp): number formatting, one row
// per case with its median when repeated, a unit per table, counters by name, errors.
#include "tests/bench/table_reporter.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using benchmark::BenchmarkReporter;
using clustersim::bench::format_number;
using clustersim::bench::TableReporter;

BenchmarkReporter::Run run(const std::string& function, const std::string& args, double seconds_per_iteration,
                           benchmark::TimeUnit unit) {
  BenchmarkReporter::Run r;
  r.run_name.function_name = function;
  r.run_name.args = args;
  r.iterations = 10;
  r.real_accumulated_time = seconds_per_iteration * 10;
  r.cpu_accumulated_time = seconds_per_iteration * 10 / 2;
  r.time_unit = unit;
  r.repetitions = 1;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string table_of(const std::vector<std::vector<BenchmarkReporter::Run>>& cases, bool* error = nullptr) {
  std::ostringstream out;
  TableReporter reporter;
  reporter.SetOutputStream(&out);
  for (const auto& runs : cases) reporter.ReportRuns(runs);
  reporter.Finalize();
  if (error != nullptr) *error = reporter.had_error();
  return out.str();
}

TEST(FormatNumber, FourSignificantDigitsWholeNumbersWholeAndThousandsSeparated) {
  EXPECT_EQ(format_number(0.383278), "0.3833");
  EXPECT_EQ(format_number(72.5888), "72.59");
  EXPECT_EQ(format_number(30.3236), "30.32");
  EXPECT_EQ(format_number(5139.4), "5,139");
  EXPECT_EQ(format_number(59825.2), "59,825");
  EXPECT_EQ(format_number(1047270), "1,047,270");
  EXPECT_EQ(format_number(32), "32");
  EXPECT_EQ(format_number(-1234.6), "-1,235");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(clustersim::bench::format_significant(80), "80.00");
  EXPECT_EQ(clustersim::bench::format_significant(90800), "90,800");
  EXPECT_EQ(format_number(1.5e-5), "1.500e-05");
  EXPECT_EQ(format_number(2e15), "2.000e+15");
  EXPECT_EQ(format_number(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), "inf");
}

TEST(TableReporter, OneAlignedMarkdownRowPerCaseInTheFinestUnitWithCountersByName) {
  auto a = run("BM_Hold", "pending:1000", 80e-9, benchmark::kNanosecond);
  a.counters["ns_per_op"] = 72.59;
  auto b = run("BM_Sim<Pods>", "1000", 90.8e-6, benchmark::kMicrosecond);
  b.counters["ns_per_op"] = 89.12;
  b.counters["items_per_second"] = 11.22e6;
  b.report_label = "a | b";  // one cell in Markdown too
  const std::string table = table_of({{a}, {b}});
  const auto lines = lines_of(table);
  const std::vector<std::string> expected = {
      "",
      "| case                   | time per iteration (ns) | CPU per iteration (ns) | iterations | items_per_second | "
      "ns_per_op | label  |",
      "|:-----------------------|------------------------:|-----------------------:|-----------:|-----------------:|"
      "----------:|:-------|",
      "| `BM_Hold/pending:1000` |                   80.00 |                  40.00 |         10 |                  | "
      "    72.59 |        |",
      "| `BM_Sim<Pods>/1000`    |                  90,800 |                 45,400 |         10 |       11,220,000 | "
      "    89.12 | a \\| b |",
      ""};
  EXPECT_EQ(lines, expected) << table;
}

TEST(TableReporter, RepeatedCaseShowsItsMedianAndManualTimeStaysInTheName) {
  auto rep = run("BM_AllReduce1GiB", "nodes:128/dp:0", 20e-3, benchmark::kMillisecond);
  rep.run_name.iterations = "iterations:1";
  rep.run_name.repetitions = "repeats:3";
  rep.run_name.time_type = "manual_time";
  rep.repetitions = 3;
  std::vector<BenchmarkReporter::Run> runs;
  for (const std::string name : {"mean", "median", "stddev", "cv"}) {
    auto r = rep;
    r.run_type = BenchmarkReporter::Run::RT_Aggregate;
    r.aggregate_name = name;
    r.counters["first_ms"] = name == "median" ? 15.28 : 99.0;
    runs.push_back(r);
  }
  const std::string table = table_of({runs});
  EXPECT_NE(table.find("| `BM_AllReduce1GiB/nodes:128/dp:0/manual_time (median of 3)` |"), std::string::npos) << table;
  EXPECT_NE(table.find("15.28"), std::string::npos) << table;
  EXPECT_EQ(table.find("99.00"), std::string::npos) << table;
  EXPECT_EQ(lines_of(table).size(), 5U) << table;  // blank, header, rule, the median, blank
}

TEST(TableReporter, FailedCaseShowsItsErrorAndBlankNumbers) {
  auto ok = run("BM_MonthLongJob", "0", 0.1, benchmark::kMillisecond);
  ok.counters["wall_days"] = 30.32;
  auto bad = run("BM_MonthLongJob", "5", 0.1, benchmark::kMillisecond);
  bad.error_occurred = true;
  bad.error_message = "wall_days = 0.000000: not finite or shorter than the job's work of 30.000000 days";
  bool error = false;
  const std::string table = table_of({{ok}, {bad}}, &error);
  EXPECT_TRUE(error);
  EXPECT_NE(table.find(" 30.32 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| ERROR: wall_days = 0.000000: not finite"), std::string::npos) << table;
  const auto lines = lines_of(table);
  ASSERT_EQ(lines.size(), 6U);
  EXPECT_EQ(lines[4].rfind("| `BM_MonthLongJob/5` |                         |                        |            |"
                           "           | ERROR: wall_days",
                           0),
            0U)
      << table;
}

TEST(TableReporter, NothingRan) { EXPECT_EQ(table_of({}), "(no benchmark ran)\n"); }

}  // namespace
