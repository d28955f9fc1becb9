// Serving that never stalls and traces within their budgets (issue 26, defects 3, 5, 8, 9 and 18): every request
// ends completed, rejected or unserved; trace token counts, rows and dates are checked as they are read; a
// message quotes at most the offending field.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/serving/inference_model.hpp"
#include "sim/io/request_trace.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/models.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

ServingSetup h100_7b_setup() {
  ServingSetup setup;
  setup.model = std::make_shared<const models::InferenceModel>(testing::llama2_7b(), models::ServingNumerics{}, 1,
                                                               catalog().device("H100-SXM5-80GB"), 1.0, nullptr,
                                                               models::EngineOverhead{});
  setup.kv_cache_tokens = 1 << 16;
  return setup;
}

/// A trace file in the temporary directory, its name carrying this process's id (test runs side by side on
/// one machine, e.g. two checkouts' ctest, must not write or remove each other's files).
/// Removed when the test process exits (each test runs in its own process under ctest).
fs::path write_trace(const std::string& name, const std::string& rows) {
  struct Written {
    std::vector<fs::path> paths;
    ~Written() {
      std::error_code ignored;
      for (const fs::path& p : paths) fs::remove(p, ignored);
    }
  };
  static Written written;
  const fs::path p = fs::temp_directory_path() / ("clustersim-limits-" + std::to_string(::getpid()) + "-" + name);
  written.paths.push_back(p);
  std::ofstream(p) << "TIMESTAMP,ContextTokens,GeneratedTokens\n" << rows;
  return p;
}

/// what() of the TraceError of reading `p`, or "" when it reads.
std::string trace_error(const fs::path& p) {
  try {
    (void)load_request_trace(p);
  } catch (const TraceError& e) {
    return e.what();
  }
  return {};
}

TEST(ServingStall, APromptOverTheIterationBudgetWithoutChunkedPrefillIsRejectedNotLeftWaiting) {
  // Issue 26, defect 3: 3,000-token prompts, 2,048 tokens per iteration, prompts computed whole. Before: the first
  // such request waited at the queue's head for ever, and every request behind it with it (0 completed, exit 0).
  ServingSetup setup = h100_7b_setup();
  setup.policy.chunked_prefill = false;
  setup.policy.max_num_batched_tokens = 2048;
  std::vector<ServingRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back({0.1 * i, i % 2 == 0 ? 3000 : 500, 20});
  const ServingResult r = simulate_serving(setup, requests);
  EXPECT_EQ(r.unschedulable, 3);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(r.requests[i].rejected, i % 2 == 0) << i;
    EXPECT_EQ(std::isfinite(r.requests[i].finish_s), i % 2 == 1) << i;
  }
}

TEST(ServingStall, APreemptedRequestThatGrewPastTheBudgetIsRejected) {
  // Prompts of 81 tokens fit 90 tokens per iteration. A KV cache of 12 blocks of 16 tokens holds two running
  // requests of 6 blocks (96 tokens) each: when the older needs its 7th block, about 14 decodes later, the newer is
  // preempted with about 15 tokens generated, and would recompute 81 + 15 > 90 tokens in one iteration: never
  // schedulable again. Before the fix it waited at the queue's head for ever (and the requests behind it).
  ServingSetup setup = h100_7b_setup();
  setup.policy.chunked_prefill = false;
  setup.policy.max_num_batched_tokens = 90;
  setup.kv_cache_tokens = 12 * 16;
  const std::vector<ServingRequest> requests(4, ServingRequest{0.0, 81, 60});
  const ServingResult r = simulate_serving(setup, requests);
  int64_t completed = 0, rejected = 0;
  for (const RequestOutcome& o : r.requests) {
    if (o.rejected) {
      ++rejected;
    } else if (std::isfinite(o.finish_s)) {
      ++completed;
    }
  }
  EXPECT_EQ(r.unschedulable, 2);
  EXPECT_EQ(rejected, r.unschedulable);
  EXPECT_GE(r.requests[1].preemptions, 1);
  EXPECT_EQ(completed + rejected, 4);
}

TEST(ServingRouting, LeastOutstandingPicksTheFewestThenTheLowestIndex) {
  // Three replicas, requests at once: the first three go to replicas 0, 1, 2 (ties: the lowest index), the fourth
  // to replica 0 again. The heap gives the order of the old scan.
  ServingSetup setup = h100_7b_setup();
  setup.replicas = 3;
  setup.routing = Routing::least_outstanding;
  const std::vector<ServingRequest> requests(4, ServingRequest{0.0, 100, 10});
  const ServingResult r = simulate_serving(setup, requests);
  ASSERT_EQ(r.requests.size(), 4u);
  EXPECT_EQ(r.requests[0].replica, 0);
  EXPECT_EQ(r.requests[1].replica, 1);
  EXPECT_EQ(r.requests[2].replica, 2);
  EXPECT_EQ(r.requests[3].replica, 0);
}

TEST(ServingAutoscaler, DecisionsBeyondTheRunBudgetAreAnErrorNotMinutesOfWork) {
  // Issue 26, defect 9: a 1e-4 s autoscale interval ran for minutes. Beyond kMaxAutoscaleDecisions (the drain
  // included) the run stops with std::invalid_argument (exit 65), here after 10^7 decisions of 0.1 us: 1 s of a
  // request that takes seconds.
  ServingSetup setup = h100_7b_setup();
  setup.autoscaling = ServingAutoscaling{1, 2, 16.0, 1e-7, 300.0};
  try {
    (void)simulate_serving(setup, {ServingRequest{0.0, 100, 2000}});
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the autoscaler made more than 10000000 decisions"), std::string::npos)
        << e.what();
  }
}

TEST(ServingBudget, EngineIterationsBeyondTheBudgetAreAnErrorNotMinutesOfWork) {
  // Found by the extended fuzzer: max_num_batched_tokens = 1 over a 6,000 s window (120,000 requests of ~1,000
  // prompt tokens, one token an iteration) ran 3 min 40 s. Beyond the run's iteration budget it stops with
  // std::invalid_argument (exit 65); here a budget of 1,000 and a 2,000-token prompt, one token an iteration.
  ServingSetup setup = h100_7b_setup();
  setup.policy.chunked_prefill = true;
  setup.policy.max_num_batched_tokens = 1;
  setup.max_engine_iterations = 1000;
  try {
    (void)simulate_serving(setup, {ServingRequest{0.0, 2000, 20}});
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the engines ran more than 1000 iterations"), std::string::npos) << e.what();
  }
  setup.max_engine_iterations = 3000;  // 2,000 prefill + 19 decode iterations fit
  EXPECT_EQ(simulate_serving(setup, {ServingRequest{0.0, 2000, 20}}).requests.at(0).output_tokens, 20);
}

TEST(TraceLimits, TokenCountsAboveThePerRequestBoundAreRefusedNotOverflowed) {
  // Issue 26, defect 5: 2^63 - 1 gave exit 70; 2^62 + 2^62 a request that never completed.
  const std::string max = trace_error(write_trace("max.csv", "2023-11-16 18:15:46.68,9223372036854775807,5\n"));
  EXPECT_NE(max.find(":2: ContextTokens above the per-request bound of 2147483648 tokens"), std::string::npos) << max;
  const std::string sum = trace_error(write_trace("sum.csv", "2023-11-16 18:15:46.68,4611686018427387904,"
                                                             "4611686018427387904\n"));
  EXPECT_NE(sum.find("ContextTokens above the per-request bound"), std::string::npos) << sum;
  const std::string over = trace_error(write_trace("over.csv", "2023-11-16 18:15:46.68,5,99999999999999999999\n"));
  EXPECT_NE(over.find("GeneratedTokens above the per-request bound"), std::string::npos) << over;
  // At the bound it reads; prompt + output stays far inside int64.
  EXPECT_EQ(trace_error(write_trace("bound.csv", "2023-11-16 18:15:46.68,2147483648,5\n")), "");
}

TEST(TraceLimits, OutputTokensOverTheBudgetAreRefusedAtTheRowThatCrossesIt) {
  // Issue 26, defect 8: 256 rows of 16.7M output tokens ran 110 s. 200,000,000 / 16,777,216 = 11.9: row 12
  // crosses the budget (line 13, after the header).
  std::string rows;
  for (int i = 0; i < 256; ++i) rows += "2023-11-16 18:15:46.68,10,16777216\n";
  const std::string e = trace_error(write_trace("tokens.csv", rows));
  EXPECT_NE(e.find(":13: GeneratedTokens: more than 200000000 output tokens in all"), std::string::npos) << e;
}

TEST(TraceLimits, RowsOverTheBudgetAreRefusedAsTheyAreRead) {
  // Issue 26, defect 8: a 1.2e7-row trace took 4.4 GB. Refused at row 2,000,001 (line 2,000,002).
  const fs::path p = fs::temp_directory_path() / ("clustersim-limits-rows-" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream out(p);
    out << "TIMESTAMP,ContextTokens,GeneratedTokens\n";
    const std::string row = "2023-11-16 18:15:46,1,1\n";
    for (int64_t i = 0; i <= kMaxTraceRequests; ++i) out << row;
  }
  const std::string e = trace_error(p);
  fs::remove(p);
  EXPECT_NE(e.find(":2000002: more than 2000000 requests"), std::string::npos) << e;
}

TEST(TraceLimits, AFifoIsRefusedUnopened) {
  const fs::path p = fs::temp_directory_path() / ("clustersim-limits-fifo-" + std::to_string(::getpid()));
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  const std::string e = trace_error(p);  // would block for ever if it were opened
  fs::remove(p);
  EXPECT_NE(e.find("cannot read the trace"), std::string::npos) << e;
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;
}

TEST(TraceMessages, AFileThatIsNoTraceIsNotEchoedAndImpossibleDatesAreRefused) {
  // Issue 26, defect 18: the first line of any file (/etc/passwd) was echoed.
  const fs::path passwd = fs::temp_directory_path() / ("clustersim-limits-passwd-" + std::to_string(::getpid()));
  std::ofstream(passwd) << "root:x:0:0:root:/root:/bin/bash\n";
  const std::string e = trace_error(passwd);
  fs::remove(passwd);
  EXPECT_NE(e.find(":1: expected the header TIMESTAMP,ContextTokens,GeneratedTokens"), std::string::npos) << e;
  EXPECT_EQ(e.find("root"), std::string::npos) << e;
  // A malformed row is not echoed either: only its offending field, at most 32 characters of it.
  const std::string row = trace_error(write_trace("row.csv", "secret-token-abc,def\n"));
  EXPECT_NE(row.find(":2: expected three fields"), std::string::npos) << row;
  EXPECT_EQ(row.find("secret"), std::string::npos) << row;
  const std::string field =
      trace_error(write_trace("field.csv", "2023-11-16 18:15:46.68,10,5" + std::string(100, 'x') + "\n"));
  EXPECT_NE(field.find("GeneratedTokens must be a whole number >= 1, got '5xxx"), std::string::npos) << field;
  EXPECT_EQ(field.find(std::string(40, 'x')), std::string::npos) << field;
  // February 31, February 29 of a common year, April 31: refused; February 29 of a leap year reads.
  for (const char* date :
       {"2023-02-31 10:00:00", "2023-02-29 10:00:00", "2023-04-31 10:00:00", "1900-02-29 10:00:00"}) {
    const std::string d = trace_error(write_trace("date.csv", std::string(date) + ",10,5\n"));
    EXPECT_NE(d.find(":2: malformed timestamp or impossible date"), std::string::npos) << date << ": " << d;
  }
  EXPECT_EQ(trace_error(write_trace("leap2.csv", "2000-02-29 10:00:00,10,5\n2024-02-29 10:00:00,10,5\n")), "");
}

TEST(TraceWindow, AWindowCountsTheRequestsItCuts) {
  const fs::path trace =
      fs::path(CLUSTERSIM_SOURCE_DIR) / "tests" / "serving" / "data" / "azure_conv_2023_first300.csv";
  const RequestTrace whole = load_request_trace(trace);
  EXPECT_EQ(whole.requests.size(), 300u);
  EXPECT_EQ(whole.cut, 0);
  const RequestTrace window = load_request_trace(trace, 10.0);
  EXPECT_GT(window.cut, 0);
  EXPECT_EQ(static_cast<int64_t>(window.requests.size()) + window.cut, 300);
}

TEST(ServingCli, PromptsOverTheIterationBudgetAreCountedAsRejectedAndTheRunCompletes) {
  // Issue 26, defect 3, as a user meets it: lognormal prompts (median 1,024, sigma 0.8: about one in five over
  // 2,048 tokens), prompts computed whole. Before: the first long prompt blocked its replica's queue for ever and
  // the run exited 0 with the requests behind it never completed.
  const fs::path out = fs::temp_directory_path() / ("clustersim-limits-" + std::to_string(::getpid()) + ".h5");
  const auto r = testing::run_cli(
      "run scenarios/serving/llama3-70b-nd-h100-tp4-20rps.toml --set serving.chunked_prefill=false "
      "--set serving.max_num_batched_tokens=2048 --set workload.duration_s=5 -o '" + out.string() + "'");
  fs::remove(out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rejected as never schedulable: a prompt (or a preempted one with its tokens) over "
                       "max_num_batched_tokens = 2048"),
            std::string::npos)
      << r.out;
}

TEST(ServingCli, ATraceRunsWholeWithoutAWindowAndACutIsReported) {
  // Issue 26: without workload.duration_s the 60 s default cut a 1,000-request trace to 246, silently.
  const fs::path dir = fs::temp_directory_path() / ("clustersim-limits-window-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path src = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "serving" / "llama2-70b-azure-conv-trace.toml";
  std::ifstream in(src);
  std::ofstream toml(dir / "whole.toml");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("duration_s", 0) != 0) toml << line << "\n";
  }
  toml.close();
  const std::string trace = (fs::path(CLUSTERSIM_SOURCE_DIR) / "tests" / "serving" / "data" /
                             "azure_conv_2023_first300.csv").string();
  const std::string run = "run '" + (dir / "whole.toml").string() + "' --set 'workload.trace=\"" + trace +
                          "\"' -o '" + (dir / "out.h5").string() + "'";
  const auto whole = testing::run_cli(run);
  EXPECT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_NE(whole.out.find("workload    300 requests"), std::string::npos) << whole.out;
  EXPECT_EQ(whole.out.find("cut"), std::string::npos) << whole.out;
  const auto window = testing::run_cli(run + " --set workload.duration_s=10");
  EXPECT_EQ(window.exit_code, 0) << window.err;
  EXPECT_NE(window.out.find("the window workload.duration_s = 10 s cut "), std::string::npos) << window.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clustersim::sim
