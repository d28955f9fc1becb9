// The main() of every benchmark program in tests/bench, linked instead of Google Benchmark's benchmark_main:
// the same flags (--benchmark_filter, --benchmark_min_time, --benchmark_repetitions, --benchmark_out, ...), but
// the results print as a table (table_reporter.hpp) instead of the console reporter's lines.
// --benchmark_format=console|json|csv (or the environment's BENCHMARK_FORMAT) prints Google Benchmark's own
// format instead.
// Exit status: 0; 1 when a case failed (SkipWithError) or an argument is not a benchmark flag.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string_view>

#include "tests/bench/table_reporter.hpp"

int main(int argc, char** argv) {
  bool own_format = std::getenv("BENCHMARK_FORMAT") != nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]).rfind("--benchmark_format", 0) == 0) own_format = true;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (own_format) {
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  clustersim::bench::TableReporter table;
  benchmark::RunSpecifiedBenchmarks(&table);
  benchmark::Shutdown();
  return table.had_error() ? 1 : 0;
}
