// Request traces in the format of Azure's public LLM inference traces (Patel et al., "Splitwise", ISCA 2024;
// github.com/Azure/AzurePublicDataset, AzureLLMInferenceDataset2023: TIMESTAMP,ContextTokens,GeneratedTokens),
// read safely and within the simulation's budgets (issue 26): the scenario loader reads a trace when it loads
// (sim/io/serving_rules.hpp), the serving run when it runs (sim/run/run_serving.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace clustersim::sim {

/// Bad trace input: what() is "FILE:LINE: message", or "cannot read the trace FILE: reason".
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The budgets of a trace (docs/serving.md, "Budgets"), the synthetic workload's: at most 2,000,000 request rows
/// in the file and 200,000,000 output tokens over the requests kept; each token count at most 2^31 (far above any
/// model's context: such a request is rejected when it arrives, never overflows a sum).
inline constexpr int64_t kMaxTraceRequests = 2'000'000;
inline constexpr int64_t kMaxTraceOutputTokens = 200'000'000;
inline constexpr int64_t kMaxTraceTokensPerRequest = int64_t{1} << 31;

/// One request of a trace: its arrival relative to the trace's first, its prompt and its output (the layout of
/// sim::ServingRequest, which the serving run builds from it).
struct TraceRequest {
  double arrival_s = 0.0;
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
};

/// A trace's requests within a window, and how many rows the window cut.
struct RequestTrace {
  std::vector<TraceRequest> requests;
  int64_t cut = 0;  ///< rows whose arrival is at or after the window's end (0 without a window)
};

/// Reads a trace CSV with the header TIMESTAMP,ContextTokens,GeneratedTokens (timestamps "YYYY-MM-DD
/// HH:MM:SS[.fraction]" of real dates, ascending), keeping requests whose arrival, relative to the first, is below
/// `window_s` (all when absent) and counting the others. Arrival times are relative to the first request. The file
/// is checked with check_input_file (a regular file of at most kMaxTraceInputBytes: a FIFO or device is refused
/// unopened) and read row by row. Throws TraceError "cannot read the trace FILE: reason" for an unreadable file,
/// and "FILE:LINE: message" for a missing or wrong header, a malformed row, an impossible date (February 31), a
/// token count < 1 or above kMaxTraceTokensPerRequest, a timestamp out of order, more than kMaxTraceRequests rows or more than
/// kMaxTraceOutputTokens output tokens kept (refused at the row that crosses the budget). A message quotes at most
/// the offending field (32 characters), never the rest of the file.
RequestTrace load_request_trace(const std::filesystem::path& file, std::optional<double> window_s = std::nullopt);

}  // namespace clustersim::sim
