// What a serving run writes for split prefill and decode pools (issue 30; sim/run/split_pools.hpp): the /summary
// columns and /requests/kv_transfer_s only when split, both pools in the bill, the report's lines; a co-located run
// without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "tests/support/catalog.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kScenario = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";

using testing::catalog;

bool has_column(const std::vector<SummaryColumn>& columns, const std::string& name) {
  return std::any_of(columns.begin(), columns.end(), [&](const SummaryColumn& c) { return c.name == name; });
}

// A short stream: one minute at 20 requests/s.
const std::vector<std::string> kShort{"workload.duration_s=60"};

TEST(SplitPoolsRun, SplitRunsWriteTheirColumnsAndCoLocatedRunsDoNot) {
  const ServingScenario colocated = load_serving_scenario(kScenario, kShort, catalog());
  const ServingRun c = run_serving_scenario(colocated, catalog());
  EXPECT_FALSE(c.split);
  EXPECT_FALSE(has_column(serving_summary_columns(colocated, c), "kv_transfer_mean_s"));
  EXPECT_FALSE(has_column(serving_request_columns(c), "kv_transfer_s"));
  EXPECT_EQ(format_serving_summary(colocated, c).find("KV transfer"), std::string::npos);

  std::vector<std::string> o = kShort;
  o.push_back("serving.prefill_replicas=2");
  o.push_back("serving.replicas=2");
  const ServingScenario split = load_serving_scenario(kScenario, o, catalog());
  const ServingRun s = run_serving_scenario(split, catalog());
  ASSERT_TRUE(s.split);
  const std::vector<SummaryColumn> columns = serving_summary_columns(split, s);
  for (const char* name : {"prefill_replicas", "prefill_vm_size", "prefill_tensor_parallel", "prefill_vms",
                           "kv_transfer_mean_s", "kv_transfer_p50_s", "kv_transfer_p99_s", "kv_transfer_ttft_share",
                           "prefill_utilization", "decode_utilization", "held_transfers"}) {
    EXPECT_TRUE(has_column(columns, name)) << name;
  }
  EXPECT_TRUE(has_column(serving_request_columns(s), "kv_transfer_s"));
  EXPECT_NE(format_serving_summary(split, s).find("KV transfer mean"), std::string::npos);
  // Llama 3 70B bf16 at TP 4: 80 layers x 2 x 8 KV heads x 128 x 2 B = 320 KiB a token over the replica, through 4
  // NDR ports (200 GB/s): a transfer is at least 1.6 us per prompt token plus 2.26 us.
  EXPECT_GT(s.split->transfer_mean_s, 0.0);
  EXPECT_GT(s.split->transfer_ttft_share, 0.0);
  EXPECT_LT(s.split->transfer_ttft_share, 1.0);
  EXPECT_GT(s.split->prefill_utilization, 0.0);
  EXPECT_GT(s.split->decode_utilization, 0.0);
  EXPECT_EQ(s.split->prefill_vms, 1);
  // Both pools' VMs (1 + 1) for the makespan at the ND H100 v5 price.
  EXPECT_NEAR(s.summary.usd, 2 * 98.32 * s.summary.makespan_s / 3600.0, 1e-6 * s.summary.usd);
  EXPECT_NEAR(s.summary.gpu_hours, 16 * s.summary.makespan_s / 3600.0, 1e-9);
}

}  // namespace
}  // namespace clustersim::sim
