// The what-if analysis (sim/run/what_if.hpp, docs/what-if.md): every row against a run with the change made by
// hand (a DeviceSpec or VmSize copy, a scenario loaded with --set), the baseline against the plain run, the
// ranks, the cost column, the user's rows and their errors, a serving row, and the CLI's --what-if outputs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>
#include <string>
#include <variant>
#include <vector>

#include "../support/cli.hpp"
#include "models/compute/compute_model.hpp"
#include "models/compute/measured_gemm.hpp"
#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "sim/io/scenario.hpp"
#include "sim/io/what_if_names.hpp"
#include "sim/output/step_report.hpp"
#include "sim/run/run_output.hpp"
#include "sim/run/run_scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/run/what_if.hpp"
#include "sim/sweep/summary_file.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios";
// 1.7 B parameters on 32 A100 (4 x ND96amsr A100 v4; next size ND H100 v5), data parallel only: a fast step.
const fs::path kSmall = kScenarios / "megatron" / "sc21-table1-1p7b-32gpus.toml";
// 39.1 B on 512 A100: tensor 8 and pipeline 2, so every perturbation moves the step.
const fs::path kPipelined = kScenarios / "megatron" / "sc21-table1-39p1b-512gpus.toml";
const fs::path kServing = kScenarios / "serving" / "llama3-70b-nd-h100-tp4-20rps.toml";

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// The what-if of `path` with `overrides`, and the plain run's step.
struct Analysed {
  Scenario scenario;
  RunResult run;
  TrainingWhatIf what_if;
};

Analysed analyse(const fs::path& path, const std::vector<std::string>& overrides, const WhatIfRequest& request) {
  Analysed a{load_scenario(path, overrides, catalog()), {}, {}};
  const auto plan = plan_training_what_if(a.scenario, catalog(), request);
  StepSimulator simulator;
  a.run = run_scenario(a.scenario, catalog(), simulator);
  a.what_if = run_training_what_if(*plan, a.run.step, simulator);
  return a;
}

WhatIfRequest standard() {
  WhatIfRequest r;
  r.enabled = true;
  return r;
}

const TrainingWhatIfRow& row(const TrainingWhatIf& w, const std::string& name) {
  for (const auto& r : w.rows) {
    if (r.perturbation == name) return r;
  }
  throw std::out_of_range("no what-if row " + name);
}

bool skipped(const TrainingWhatIf& w, const std::string& name) {
  return std::any_of(w.skipped.begin(), w.skipped.end(), [&](const WhatIfSkip& s) { return s.perturbation == name; });
}

void expect_relative(double got, double want) {
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << "got " << got << ", want " << want;
}

/// The scenario's step on hardware changed by `change` (a copy of its VM size, device and network), simulated
/// from scratch.
template <class Change>
double step_with(const Scenario& sc, Change change) {
  models::VmSize vm = catalog().vm_size(sc.cluster.vm_size);
  models::DeviceSpec device = catalog().device(vm.device);
  NetworkSetup network = network_setup_of(sc);
  change(vm, device, network);
  return simulate_step(step_setup_of(sc, catalog()), vm, device, network).step_time.value();
}

TEST(WhatIf, EachHardwareRowIsTheStepWithThatChangeMadeByHand) {
  const Analysed a = analyse(kPipelined, {}, standard());
  const Scenario& sc = a.scenario;
  expect_relative(row(a.what_if, "gpu_matmul_x1.5").step_time_s,
                  step_with(sc, [](auto&, models::DeviceSpec& d, auto&) { d.matmul_rate_scale = 1.5; }));
  expect_relative(row(a.what_if, "hbm_bandwidth_x1.5").step_time_s,
                  step_with(sc, [](auto&, models::DeviceSpec& d, auto&) {
                    d.memory_bandwidth = d.memory_bandwidth * 1.5;
                    d.achievable_memory_bandwidth = d.achievable_memory_bandwidth * 1.5;
                  }));
  expect_relative(row(a.what_if, "nvlink_x2").step_time_s,
                  step_with(sc, [](auto&, models::DeviceSpec& d, auto&) {
                    d.fabric_bandwidth_per_direction = d.fabric_bandwidth_per_direction * 2.0;
                  }));
  expect_relative(row(a.what_if, "nic_x2").step_time_s, step_with(sc, [](models::VmSize& v, auto&, auto&) {
                    ASSERT_GT(v.infiniband_ports, 0);
                    v.infiniband_port_rate = v.infiniband_port_rate * 2.0;
                  }));
  expect_relative(row(a.what_if, "latency_x0.5").step_time_s,
                  step_with(sc, [](models::VmSize& v, auto&, NetworkSetup& n) {
                    v.collective_latency_scale = 0.5;
                    n.topology.inter_zone_latency = n.topology.inter_zone_latency * 0.5;
                  }));
  // Each change moves this step (TP over NVLink, PP and DP over InfiniBand, GEMMs and memory-bound kernels).
  for (const char* name : {"gpu_matmul_x1.5", "hbm_bandwidth_x1.5", "nvlink_x2", "nic_x2", "latency_x0.5"}) {
    EXPECT_LT(row(a.what_if, name).step_time_s, a.run.step.step_time.value()) << name;
  }
}

TEST(WhatIf, TheModelKnobsDoWhatTheySay) {
  // GEMM math rate x 1.5: a compute-bound GEMM's roofline (its time over the measured correction r, 1 without a
  // table) less the kernel overhead / 1.5, on both paths (A100 and H100: measured tables; MI300X: none).
  for (const char* name : {"A100-SXM4-80GB", "H100-SXM5-80GB", "MI300X"}) {
    const models::DeviceSpec& device = catalog().device(name);
    models::DeviceSpec fast = device;
    fast.matmul_rate_scale = 1.5;
    const models::ComputeModel base(device), faster(fast);
    const models::GemmShape shape{8192, 8192, 8192, 1};
    const double r = device.gemm_correction ? device.gemm_correction->ratio(shape.m, shape.n, shape.k) : 1.0;
    const double overhead = models::ComputeModel::kKernelOverhead.value();
    expect_relative((faster.gemm_time(shape, models::Precision::bf16, 2.0).value() / r - overhead) * 1.5,
                    base.gemm_time(shape, models::Precision::bf16, 2.0).value() / r - overhead);
    EXPECT_EQ(faster.memory_time(units::Bytes(1e9)).value(), base.memory_time(units::Bytes(1e9)).value());
    EXPECT_EQ(faster.attention_rate(models::Precision::bf16, models::AttentionKernel::flash2).value(),
              base.attention_rate(models::Precision::bf16, models::AttentionKernel::flash2).value());
  }
  // Latency x 0.5: every alpha term of the collective model halves, nothing else.
  models::VmSize vm = catalog().vm_size("Standard_ND96isr_H100_v5");
  const models::CollectiveConstants c = models::CollectiveConstants::for_vm(vm);
  vm.collective_latency_scale = 0.5;
  const models::CollectiveConstants h = models::CollectiveConstants::for_vm(vm);
  EXPECT_EQ(h.base_latency.value(), c.base_latency.value() * 0.5);
  EXPECT_EQ(h.intra_step_simple.value(), c.intra_step_simple.value() * 0.5);
  EXPECT_EQ(h.intra_step_ll.value(), c.intra_step_ll.value() * 0.5);
  EXPECT_EQ(h.network_step_simple.value(), c.network_step_simple.value() * 0.5);
  EXPECT_EQ(h.network_step_ll.value(), c.network_step_ll.value() * 0.5);
  EXPECT_EQ(h.ring_efficiency, c.ring_efficiency);
}

TEST(WhatIf, BaselineIsThePlainRunAndTheCostIsTheSummarysFormula) {
  const Analysed a = analyse(kPipelined, {}, standard());
  const TrainingWhatIfRow& base = a.what_if.rows.at(0);
  EXPECT_EQ(base.perturbation, "baseline");
  EXPECT_EQ(base.step_time_s, a.run.step.step_time.value());
  double summary_cost = 0.0;
  for (const auto& c : run_summary_columns(a.scenario, a.run)) {
    if (c.name == "usd_per_million_tokens") summary_cost = std::get<std::vector<double>>(c.values).at(0);
  }
  ASSERT_TRUE(std::isfinite(summary_cost));
  EXPECT_EQ(base.usd_per_million_tokens, summary_cost);
  // A hardware row keeps the price: cost scales with the step time.
  const TrainingWhatIfRow& hbm = row(a.what_if, "hbm_bandwidth_x1.5");
  expect_relative(hbm.usd_per_million_tokens / base.usd_per_million_tokens, hbm.step_time_s / base.step_time_s);
}

TEST(WhatIf, NoPipelineBubbleIsTheStepLessItsCriticalPathsPipelineWait) {
  const Analysed a = analyse(kPipelined, {}, standard());
  EXPECT_EQ(row(a.what_if, "no_pipeline_bubble").step_time_s,
            (a.run.step.step_time - a.run.step.pipeline.critical_path.pipeline_wait).value());
  EXPECT_NE(row(a.what_if, "no_pipeline_bubble").description.find("analytic"), std::string::npos);
}

TEST(WhatIf, NoVariabilityOnlyWithVariabilityOn) {
  const Analysed off = analyse(kSmall, {}, standard());
  EXPECT_TRUE(skipped(off.what_if, "no_variability"));
  EXPECT_THROW((void)row(off.what_if, "no_variability"), std::out_of_range);
  const Analysed on = analyse(kSmall, {"simulation.variability=on"}, standard());
  ASSERT_TRUE(on.scenario.simulation.variability.has_value());
  const Scenario plain = load_scenario(kSmall, {"simulation.variability=off"}, catalog());
  expect_relative(row(on.what_if, "no_variability").step_time_s, simulate_scenario(plain, catalog()).step_time.value());
  EXPECT_NE(row(on.what_if, "no_variability").step_time_s, on.run.step.step_time.value());
}

TEST(WhatIf, NextVmSizeIsTheScenarioWithItsSetOverrides) {
  const Analysed a = analyse(kSmall, {}, standard());
  ASSERT_EQ(a.scenario.cluster.vm_size, "Standard_ND96amsr_A100_v4");
  const Scenario next = load_scenario(kSmall, {"cluster.vm_size=Standard_ND96isr_H100_v5", "cluster.nodes=4"},
                                      catalog());
  const TrainingWhatIfRow& r = row(a.what_if, "next_vm_size");
  const double step = simulate_scenario(next, catalog()).step_time.value();
  expect_relative(r.step_time_s, step);
  const double price = *catalog().vm_size("Standard_ND96isr_H100_v5").price_usd_per_hour;
  expect_relative(r.usd_per_million_tokens, training_usd_per_million_tokens(next, price, step));
  EXPECT_NE(r.description.find("Standard_ND96isr_H100_v5"), std::string::npos);
}

// The recipe switches the scenario leaves off: each row is the scenario with that --set, simulated by hand; a
// switch the scenario already has, or one without anything to act on, is no row.
TEST(WhatIf, EachSoftwareSwitchIsTheScenarioWithItsSet) {
  const Analysed a = analyse(kPipelined, {}, standard());
  ASSERT_GT(a.scenario.parallelism.pipeline, 1);
  for (const auto& [name, set] : {std::pair<std::string, std::string>{"overlap_grad_reduce",
                                                                      "parallelism.overlap_grad_reduce=true"},
                                  {"overlap_p2p_comm", "parallelism.overlap_p2p_comm=true"}}) {
    SCOPED_TRACE(name);
    const Scenario by_hand = load_scenario(kPipelined, {set}, catalog());
    expect_relative(row(a.what_if, name).step_time_s, simulate_scenario(by_hand, catalog()).step_time.value());
  }
  // A100 has no fp8 tensor cores: no fp8 row; sequence parallelism is off, so TP overlap cannot load: a skip.
  EXPECT_THROW((void)row(a.what_if, "fp8"), std::out_of_range);
  EXPECT_FALSE(skipped(a.what_if, "fp8"));
  const Analysed on = analyse(kPipelined, {"parallelism.overlap_grad_reduce=true"}, standard());
  EXPECT_THROW((void)row(on.what_if, "overlap_grad_reduce"), std::out_of_range);
  // On H100 the fp8 row is the scenario in fp8.
  const std::vector<std::string> h100{"cluster.vm_size=Standard_ND96isr_H100_v5"};
  const Analysed h = analyse(kPipelined, h100, standard());
  const Scenario fp8 = load_scenario(kPipelined, {h100[0], "training.precision=fp8"}, catalog());
  expect_relative(row(h.what_if, "fp8").step_time_s, simulate_scenario(fp8, catalog()).step_time.value());
}

TEST(WhatIf, NextVmSizeThatDoesNotDivideTheGpusIsSkippedWithItsReason) {
  // NC64as T4 v3 (4 T4 over PCIe) is the last of its series: no next size, and no NVLink to double.
  const Analysed a = analyse(kSmall, {"cluster.vm_size=Standard_NC64as_T4_v3", "cluster.nodes=8"}, standard());
  EXPECT_TRUE(skipped(a.what_if, "next_vm_size"));
  EXPECT_TRUE(skipped(a.what_if, "nvlink_x2"));
  EXPECT_THROW((void)row(a.what_if, "nvlink_x2"), std::out_of_range);
  // 32 GPUs from ND96isr H200 v5 to ND GB200 v6 (4 GPUs a VM): 8 VMs, less than one NVL72 rack of 18 VMs: the
  // loader's verdict decides (a run, or a skip with its reason), and either way the table has the other rows.
  const Analysed h200 = analyse(kSmall, {"cluster.vm_size=Standard_ND96isr_H200_v5"}, standard());
  const bool ran = std::any_of(h200.what_if.rows.begin(), h200.what_if.rows.end(),
                               [](const TrainingWhatIfRow& r) { return r.perturbation == "next_vm_size"; });
  EXPECT_NE(skipped(h200.what_if, "next_vm_size"), ran);
  EXPECT_NO_THROW((void)row(h200.what_if, "gpu_matmul_x1.5"));
  // One GPU on NC24ads A100 v4 cannot fill whole NC48ads A100 v4 VMs of 2.
  const Analysed one = analyse(kScenarios / "azure" / "llama3.2-1b-nc24ads-a100-v4.toml", {}, standard());
  ASSERT_EQ(one.scenario.parallelism.gpus(), 1);
  EXPECT_TRUE(skipped(one.what_if, "next_vm_size"));
  EXPECT_EQ(one.what_if.skipped.at(0).reason,
            "the job's GPU count (1) is not a multiple of Standard_NC48ads_A100_v4's 2 GPUs per VM");
}

TEST(WhatIf, TheCatalogsNextSizeMustBeAKnownOtherSize) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-what-if-catalog-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(models::Catalog::default_directory(), dir, fs::copy_options::recursive);
  const std::string vms = testing::read_file(dir / "vm_sizes.toml");
  for (const auto& [to, message] :
       {std::pair{std::string("Standard_ND96isr_H900_v9"), std::string("unknown VM size 'Standard_ND96isr_H900_v9'")},
        std::pair{std::string("Standard_ND96isr_H100_v5"), std::string("names this VM size itself")}}) {
    std::string changed = vms;
    const std::string from = "next_size = \"Standard_ND96isr_H200_v5\"";
    changed.replace(changed.find(from), from.size(), "next_size = \"" + to + "\"");
    std::ofstream(dir / "vm_sizes.toml", std::ios::trunc) << changed;
    try {
      (void)models::Catalog::load(dir);
      ADD_FAILURE() << "next_size " << to << " was accepted";
    } catch (const models::CatalogError& e) {
      EXPECT_NE(std::string(e.what()).find(": key 'Standard_ND96isr_H100_v5.next_size': " + message), std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(dir);
  EXPECT_EQ(catalog().vm_size("Standard_ND96isr_H100_v5").next_size, "Standard_ND96isr_H200_v5");
  EXPECT_EQ(catalog().vm_size("Standard_ND128isr_GB300_v6").next_size, "");
}

TEST(WhatIf, RanksOrderTheRowsByStepTimeAndCost) {
  const Analysed a = analyse(kSmall, {}, standard());
  const auto& rows = a.what_if.rows;
  ASSERT_GE(rows.size(), 8u);  // the baseline and 7 standard rows (no variability here)
  std::vector<int64_t> ranks;
  for (size_t i = 1; i < rows.size(); ++i) {
    ranks.push_back(rows[i].rank_step_time);
    for (size_t j = 1; j < rows.size(); ++j) {
      if (rows[i].step_time_s < rows[j].step_time_s) {
        EXPECT_LT(rows[i].rank_step_time, rows[j].rank_step_time);
      }
      if (rows[i].usd_per_million_tokens < rows[j].usd_per_million_tokens) {
        EXPECT_LT(rows[i].rank_cost, rows[j].rank_cost);
      }
    }
  }
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(ranks[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(rows[0].rank_step_time, 0);
  EXPECT_EQ(rows[0].rank_cost, 0);
  EXPECT_EQ(what_if_ranks({1.0, 3.0, std::nan(""), 2.0, 2.0}), (std::vector<int64_t>{0, 3, 0, 1, 2}));
}

TEST(WhatIf, AUsersRowIsTheScenarioWithThatSet) {
  WhatIfRequest request;
  request.user = {"training.micro_batch_size=8", "parallelism.overlap_grad_reduce=false"};
  const Analysed a = analyse(kSmall, {}, request);
  ASSERT_EQ(a.what_if.rows.size(), 3u);  // the baseline and the two: no standard set
  for (const std::string& kv : request.user) {
    const Scenario changed = load_scenario(kSmall, {kv}, catalog());
    expect_relative(row(a.what_if, kv).step_time_s, simulate_scenario(changed, catalog()).step_time.value());
  }
}

TEST(WhatIf, ABadUserKeyIsLocatedAtItsOption) {
  WhatIfRequest request;
  request.user = {"training.micro_batch_size=8", "parallelism.tensr=2"};
  const Scenario sc = load_scenario(kSmall, {"training.micro_batch_size=2"}, catalog());
  try {
    (void)plan_training_what_if(sc, catalog(), request);
    ADD_FAILURE() << "a bad key was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.file(), "--what-if-set");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.key(), "parallelism.tensr");
    // The same message as that --set.
    try {
      (void)load_scenario(kSmall, {"parallelism.tensr=2"}, catalog());
    } catch (const ScenarioError& set) {
      const std::string a = e.what(), b = set.what();
      EXPECT_EQ(a.substr(a.find(": key")), b.substr(b.find(": key")));
      EXPECT_EQ(e.column(), set.column());
    }
  }
}

TEST(WhatIf, AServingRowIsTheFleetWithThatChangeMadeByHand) {
  const ServingScenario sc = load_serving_scenario(kServing, {}, catalog());
  const ServingRun base = run_serving_scenario(sc, catalog());
  const ServingWhatIf w = serving_what_if(sc, base, catalog(), standard());
  ASSERT_EQ(w.rows.at(0).perturbation, "baseline");
  EXPECT_EQ(w.rows[0].ttft_p99_s, base.summary.ttft_p99_s);
  const auto find = [&](const std::string& name) -> const ServingWhatIfRow& {
    for (const auto& r : w.rows) {
      if (r.perturbation == name) return r;
    }
    throw std::out_of_range(name);
  };
  const auto by_hand = [&](const std::string& set) {
    return run_serving_scenario(load_serving_scenario(kServing, {set}, catalog()), catalog()).summary;
  };
  const ServingSummary fp8 = by_hand("serving.kv_cache_dtype=fp8");
  EXPECT_EQ(find("fp8_kv_cache").ttft_p99_s, fp8.ttft_p99_s);
  EXPECT_EQ(find("fp8_kv_cache").tpot_p99_s, fp8.tpot_p99_s);
  const ServingSummary more = by_hand("serving.replicas=" + std::to_string(sc.serving.replicas + 1));
  EXPECT_EQ(find("plus_1_replica").ttft_p99_s, more.ttft_p99_s);
  EXPECT_EQ(find("plus_1_replica").usd_per_million_tokens, more.usd_per_million_tokens);
  const auto columns = serving_what_if_columns(w);
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"perturbation", "description", "ttft_p99_s", "ttft_p99_change",
                                             "tpot_p99_s", "tpot_p99_change", "output_tokens_per_s",
                                             "usd_per_million_tokens", "usd_per_million_tokens_change", "rank_ttft",
                                             "rank_cost"}));
}

TEST(WhatIf, TheCliWritesTheTableToTheReportJsonAndHdf5) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-what-if-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path h5 = dir / "w.h5";
  const auto text = testing::run_cli("run " + kSmall.string() + " --what-if --what-if-set training.micro_batch_size=8 -o " +
                                     h5.string());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("what-if     one change at a time, ranked by step time"), std::string::npos);
  EXPECT_NE(text.out.find("training.micro_batch_size=8"), std::string::npos);
  EXPECT_NE(text.out.find("  not run: no_variability"), std::string::npos);
  const auto columns = read_results_columns(h5, "what_if");
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"description", "perturbation", "rank_cost", "rank_step_time",
                                             "step_time_change", "step_time_s", "usd_per_million_tokens",
                                             "usd_per_million_tokens_change"}));
  const auto json = testing::run_cli("run " + kSmall.string() + " --what-if --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"what_if\": {\"values\": {\"perturbation\": [\"baseline\", \"gpu_matmul_x1.5\""),
            std::string::npos)
      << json.out;
  // Without --what-if nothing changes: no group, no key.
  const auto plain = testing::run_cli("run " + kSmall.string() + " --format json");
  EXPECT_EQ(plain.out.find("what_if"), std::string::npos);
  const auto bad = testing::run_cli("run " + kSmall.string() + " --what-if-set parallelism.tensr=2");
  EXPECT_EQ(bad.exit_code, 65);
  EXPECT_NE(bad.err.find("--what-if-set:1:1: key 'parallelism.tensr'"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

// The names the scenario key accepts (sim/io/what_if_names.hpp) are exactly the standard rows: on a scenario where
// every one applies or says why not, each name is a row or a skip, and nothing else is.
TEST(WhatIf, TheKeysNamesAreTheStandardRows) {
  const Analysed a = analyse(kPipelined, {"cluster.vm_size=Standard_ND96isr_H100_v5", "simulation.variability=on"},
                             standard());
  std::set<std::string> seen;
  for (const auto& r : a.what_if.rows) seen.insert(r.perturbation);
  for (const auto& s : a.what_if.skipped) seen.insert(s.perturbation);
  seen.erase("baseline");
  EXPECT_EQ(seen, std::set<std::string>(kTrainingWhatIfNames.begin(), kTrainingWhatIfNames.end()));
}

// analysis.what_if names the rows `clustersim run` computes without --what-if, and the columns each sweep point
// gets: the same step times as the full --what-if's rows.
TEST(WhatIf, TheAnalysisKeyNamesTheRowsOfARunAndTheColumnsOfASweepPoint) {
  const std::string names = "analysis.what_if=[\"nic_x2\", \"gpu_matmul_x1.5\", \"no_variability\"]";
  RunOptions options;
  const RunOutput out = run_scenario_file(kPipelined, {names}, catalog(), options);
  const ColumnGroup* group = what_if_group(out);
  ASSERT_NE(group, nullptr);
  const auto& perturbations = std::get<std::vector<std::string>>(group->columns.at(0).values);
  EXPECT_EQ(perturbations, (std::vector<std::string>{"baseline", "gpu_matmul_x1.5", "nic_x2"}));
  EXPECT_NE(out.report.find("not run: no_variability"), std::string::npos);
  const Analysed full = analyse(kPipelined, {}, standard());
  const auto& steps = std::get<std::vector<double>>(group->columns.at(2).values);
  expect_relative(steps.at(2), row(full.what_if, "nic_x2").step_time_s);

  const LoadedSweep sweep = load_sweep(kPipelined, {names}, catalog());
  ASSERT_EQ(sweep.points.size(), 1u);
  SweepPointRunner runner(sweep, catalog());
  const SweepRow point = runner.run(sweep.points.at(0));
  ASSERT_EQ(point.status, "ok");
  const auto value = [&](const std::string& name) {
    for (size_t i = 0; i < point.meta->size(); ++i) {
      if ((*point.meta)[i].name == name) return std::get<double>(point.values[i]);
    }
    throw std::out_of_range("no column " + name);
  };
  expect_relative(value("what_if_nic_x2_step_time_s"), row(full.what_if, "nic_x2").step_time_s);
  expect_relative(value("what_if_gpu_matmul_x1p5_step_time_s"), row(full.what_if, "gpu_matmul_x1.5").step_time_s);
  expect_relative(value("what_if_nic_x2_change"), row(full.what_if, "nic_x2").step_time_s / value("step_time_s") - 1);
  EXPECT_TRUE(std::isnan(value("what_if_no_variability_step_time_s")));
}

TEST(WhatIf, AnUnknownAnalysisNameIsALocatedError) {
  try {
    (void)load_scenario(kPipelined, {"analysis.what_if=[\"nic_x3\"]"}, catalog());
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key(), "analysis.what_if");
    EXPECT_NE(std::string(e.what()).find("nic_x2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clustersim::sim
