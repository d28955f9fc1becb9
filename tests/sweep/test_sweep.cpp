// Sweeps: the [sweep] table's syntax (lists, linear and log ranges, zip groups) expanded in row-major order,
// written out by hand; stable, distinct seeds; bad inputs with file:line:col and key; the parallel layouts of
// GPT-3 175B on 1,024 A100s.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"
#include "sim/sweep/sweep.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
using Overrides = std::vector<std::string>;

const fs::path kSourceDir{CLUSTERSIM_SOURCE_DIR};

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

/// A small valid scenario (GPT-2-like on 2 x 8 A100) followed by `sweep` (TOML text of the [sweep] table).
fs::path write_scenario(const std::string& name, const std::string& sweep) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-test-sweep-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream out(path);
  out << "schema_version = 1\n"                            // 1
         "name = \"sweep-test\"\n"                         // 2
         "[model]\n"                                       // 3
         "num_layers = 24\n"                               // 4
         "hidden_size = 1024\n"                            // 5
         "num_attention_heads = 16\n"                      // 6
         "vocab_size = 51200\n"                            // 7
         "seq_length = 1024\n"                             // 8
         "[training]\n"                                    // 9
         "global_batch_size = 64\n"                        // 10
         "[cluster]\n"                                     // 11
         "vm_size = \"Standard_ND96amsr_A100_v4\"\n"       // 12
         "nodes = 2\n"                                     // 13
         "[sweep]\n"                                       // 14
      << sweep;                                            // line 15 on
  return path;
}

std::vector<Overrides> overrides_of(const std::vector<SweepPoint>& points) {
  std::vector<Overrides> out;
  for (const auto& p : points) out.push_back(p.overrides());
  return out;
}

std::vector<Overrides> expand(const fs::path& path) {
  return overrides_of(expand_sweep(read_sweep(path), path, 7, catalog()));
}

TEST(Sweep, NoSweepTableIsOnePoint) {
  const fs::path path = kSourceDir / "scenarios" / "azure" / "gpt3-175b-a100-one-node-oom.toml";
  const SweepSpec spec = read_sweep(path);
  EXPECT_TRUE(spec.axes.empty());
  EXPECT_FALSE(spec.auto_parallelism);
  EXPECT_EQ(spec.size(), 1);
  const auto points = expand_sweep(spec, path, 0, catalog());
  ASSERT_EQ(points.size(), 1U);
  EXPECT_EQ(points[0].index, 0);
  EXPECT_TRUE(points[0].values.empty());
}

TEST(Sweep, ListsAreACartesianProductLastAxisFastest) {
  const auto path = write_scenario("lists.toml",
                                   "\"parallelism.tensor\" = [1, 2]\n"
                                   "\"training.precision\" = [\"bf16\", \"fp16\", \"fp32\"]\n");
  const SweepSpec spec = read_sweep(path);
  ASSERT_EQ(spec.axes.size(), 2U);
  EXPECT_EQ(spec.size(), 6);
  const std::vector<Overrides> want{
      {"parallelism.tensor=1", "training.precision=\"bf16\""}, {"parallelism.tensor=1", "training.precision=\"fp16\""},
      {"parallelism.tensor=1", "training.precision=\"fp32\""}, {"parallelism.tensor=2", "training.precision=\"bf16\""},
      {"parallelism.tensor=2", "training.precision=\"fp16\""}, {"parallelism.tensor=2", "training.precision=\"fp32\""},
  };
  EXPECT_EQ(expand(path), want);
}

TEST(Sweep, AxesFollowTheOrderWrittenNotTheAlphabet) {
  const auto path = write_scenario("order.toml",
                                   "\"training.precision\" = [\"bf16\", \"fp16\"]\n"
                                   "\"cluster.nodes\" = [2, 4]\n");
  const std::vector<Overrides> want{
      {"training.precision=\"bf16\"", "cluster.nodes=2"}, {"training.precision=\"bf16\"", "cluster.nodes=4"},
      {"training.precision=\"fp16\"", "cluster.nodes=2"}, {"training.precision=\"fp16\"", "cluster.nodes=4"},
  };
  EXPECT_EQ(expand(path), want);
}

TEST(Sweep, LinearRangeIncludesStop) {
  const auto path = write_scenario("linear.toml", "\"cluster.nodes\" = { start = 2, stop = 8, step = 2 }\n");
  const std::vector<Overrides> want{{"cluster.nodes=2"}, {"cluster.nodes=4"}, {"cluster.nodes=6"}, {"cluster.nodes=8"}};
  EXPECT_EQ(expand(path), want);
  const auto floats = write_scenario("linear-float.toml",
                                     "\"cluster.oversubscription\" = { start = 1.0, stop = 2.0, step = 0.5 }\n");
  const std::vector<Overrides> want_floats{
      {"cluster.oversubscription=1.0"}, {"cluster.oversubscription=1.5"}, {"cluster.oversubscription=2.0"}};
  EXPECT_EQ(expand(floats), want_floats);
}

TEST(Sweep, LogRange) {
  const auto path =
      write_scenario("log.toml", "\"training.global_batch_size\" = { start = 16, stop = 100, factor = 2 }\n");
  const std::vector<Overrides> want{{"training.global_batch_size=16"}, {"training.global_batch_size=32"},
                                    {"training.global_batch_size=64"}};
  EXPECT_EQ(expand(path), want);
}

TEST(Sweep, DottedKeysUnquotedAreTheSameAxis) {
  const auto path = write_scenario("dotted.toml", "parallelism.tensor = [1, 2]\n");
  const std::vector<Overrides> want{{"parallelism.tensor=1"}, {"parallelism.tensor=2"}};
  EXPECT_EQ(expand(path), want);
}

TEST(Sweep, ZipGroupIsOneAxisAtItsFirstMember) {
  const auto path = write_scenario("zip.toml",
                                   "\"cluster.nodes\" = [2, 4]\n"
                                   "\"parallelism.tensor\" = [1, 2]\n"
                                   "\"training.global_batch_size\" = [32, 64]\n"
                                   "zip = [[\"cluster.nodes\", \"training.global_batch_size\"]]\n");
  const SweepSpec spec = read_sweep(path);
  ASSERT_EQ(spec.axes.size(), 2U);
  EXPECT_EQ(spec.axes[0].keys, (std::vector<std::string>{"cluster.nodes", "training.global_batch_size"}));
  const std::vector<Overrides> want{
      {"cluster.nodes=2", "training.global_batch_size=32", "parallelism.tensor=1"},
      {"cluster.nodes=2", "training.global_batch_size=32", "parallelism.tensor=2"},
      {"cluster.nodes=4", "training.global_batch_size=64", "parallelism.tensor=1"},
      {"cluster.nodes=4", "training.global_batch_size=64", "parallelism.tensor=2"},
  };
  EXPECT_EQ(expand(path), want);
}

TEST(Sweep, SeedsAreStableAndDistinct) {
  EXPECT_EQ(sweep_point_seed(0, 0), sweep_point_seed(0, 0));
  const auto path = write_scenario("seeds.toml", "\"cluster.nodes\" = { start = 1, stop = 64, step = 1 }\n");
  const auto a = expand_sweep(read_sweep(path), path, 42, catalog());
  const auto b = expand_sweep(read_sweep(path), path, 42, catalog());
  const auto c = expand_sweep(read_sweep(path), path, 43, catalog());
  ASSERT_EQ(a.size(), 64U);
  std::set<uint64_t> seen;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(a[i].seed, b[i].seed);
    EXPECT_NE(a[i].seed, c[i].seed);
    EXPECT_EQ(a[i].seed, sweep_point_seed(42, a[i].index));
    seen.insert(a[i].seed);
  }
  EXPECT_EQ(seen.size(), a.size());
  // The documented formula, written out again: splitmix64(base ^ splitmix64(index)) >> 1.
  const auto splitmix64 = [](uint64_t x) {
    uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);  // SplitMix64's first output from state 0
  for (int64_t i : {0, 1, 5, 1000}) {
    EXPECT_EQ(sweep_point_seed(42, i), splitmix64(42 ^ splitmix64(static_cast<uint64_t>(i))) >> 1);
  }
}

/// Expects read_sweep(path) to throw a ScenarioError starting "PATH:LINE:COL: key 'KEY': " and containing `text`.
void expect_error(const fs::path& path, int64_t line, int64_t column, const std::string& key,
                  const std::string& text) {
  try {
    (void)read_sweep(path);
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    const std::string prefix =
        path.string() + ":" + std::to_string(line) + ":" + std::to_string(column) + ": key '" + key + "': ";
    EXPECT_EQ(what.rfind(prefix, 0), 0U) << what;
    EXPECT_NE(what.find(text), std::string::npos) << what;
  }
}

TEST(SweepErrors, ZipOfUnequalLengths) {
  const auto path = write_scenario("bad-zip.toml",
                                   "\"cluster.nodes\" = [2, 4, 8]\n"
                                   "\"training.global_batch_size\" = [32, 64]\n"
                                   "zip = [[\"cluster.nodes\", \"training.global_batch_size\"]]\n");
  expect_error(path, 17, 26, "sweep.zip", "equal lengths");
}

TEST(SweepErrors, UnknownKey) {
  const auto path = write_scenario("bad-key.toml", "\"parallelism.tensr\" = [1, 2]\n");
  expect_error(path, 15, 1, "sweep.parallelism.tensr", "unknown scenario key");
}

TEST(SweepErrors, StepNotPositive) {
  const auto path = write_scenario("bad-step.toml", "\"cluster.nodes\" = { start = 2, stop = 8, step = 0 }\n");
  expect_error(path, 15, 49, "sweep.cluster.nodes", "step must be > 0");
  const auto neg = write_scenario("bad-step2.toml", "\"cluster.nodes\" = { start = 2, stop = 8, step = -2 }\n");
  expect_error(neg, 15, 49, "sweep.cluster.nodes", "step must be > 0");
}

TEST(SweepErrors, FactorAndParallelismValue) {
  const auto f = write_scenario("bad-factor.toml", "\"cluster.nodes\" = { start = 2, stop = 8, factor = 1 }\n");
  expect_error(f, 15, 51, "sweep.cluster.nodes", "factor must be > 1");
  const auto p = write_scenario("bad-auto.toml", "parallelism = \"all\"\n");
  expect_error(p, 15, 15, "sweep.parallelism", "\"auto\"");
  const auto e = write_scenario("bad-empty.toml", "\"cluster.nodes\" = []\n");
  expect_error(e, 15, 19, "sweep.cluster.nodes", "must not be empty");
}

TEST(SweepErrors, Objective) {
  const auto bad = write_scenario("bad-objective.toml", "objective = \"cheapest\"\n");
  expect_error(bad, 15, 13, "sweep.objective", "\"cost_per_token\"");
  const auto no_job = write_scenario("objective-no-job.toml", "objective = \"time_to_train\"\n");
  expect_error(no_job, 15, 13, "sweep.objective", "needs a [job] table");
  const SweepSpec cost = read_sweep(write_scenario("objective-cost.toml", "objective = \"cost_per_token\"\n"));
  EXPECT_EQ(cost.objective, SweepObjective::cost_per_token);
  EXPECT_TRUE(cost.objective_given);
  EXPECT_FALSE(read_sweep(write_scenario("no-objective.toml", "\"parallelism.tensor\" = [1, 2]\n")).objective_given);
}

TEST(SweepLayouts, Gpt3On1024A100) {
  const fs::path path = kSourceDir / "scenarios" / "sweeps" / "gpt3-175b-1024-a100-layouts.toml";
  const SweepSpec spec = read_sweep(path);
  EXPECT_TRUE(spec.auto_parallelism);
  std::vector<Overrides> layouts;
  for (const auto& typed : enumerate_layouts(path, {}, catalog())) {
    Overrides o;
    for (const SweptValue& v : typed) o.push_back(v.override_text());
    layouts.push_back(std::move(o));
  }
  // Megatron's layout (TP 8 x PP 8, micro batch 1) with its cheapest settings that fit: two, neither undercut
  // by the other (ZeRO 0 with selective recompute; the distributed optimizer with none), both with sequence
  // parallelism; the scenario's own (ZeRO 0, full recompute, no sequence parallelism) costs more than both.
  const Overrides megatron{"parallelism.tensor=8", "parallelism.pipeline=8", "parallelism.data=16",
                           "training.micro_batch_size=1", "parallelism.virtual_stages=1"};
  const auto with = [&megatron](int zero, const char* recompute, bool sp) {
    Overrides o = megatron;
    o.push_back("parallelism.zero_stage=" + std::to_string(zero));
    o.push_back(std::string("training.activation_recompute=\"") + recompute + "\"");
    o.push_back(std::string("parallelism.sequence_parallel=") + (sp ? "true" : "false"));
    return o;
  };
  EXPECT_NE(std::find(layouts.begin(), layouts.end(), with(0, "selective", true)), layouts.end());
  EXPECT_NE(std::find(layouts.begin(), layouts.end(), with(1, "none", true)), layouts.end());
  EXPECT_EQ(std::find(layouts.begin(), layouts.end(), with(0, "full", false)), layouts.end());
  // No point that fits is undercut by another that fits of the same layout (cost order: ZeRO 0 < 1, recompute
  // none < selective < full, sequence parallelism on < off).
  const auto rank = [](const Overrides& o, size_t k) {
    const std::string v = o[k].substr(o[k].find('=') + 1);
    if (k == o.size() - 3) return v == "0" ? 0 : v == "1" ? 1 : 2;
    if (k == o.size() - 2) return v == "\"none\"" ? 0 : v == "\"selective\"" ? 1 : 2;
    return v == "true" ? 0 : 1;
  };
  std::map<Overrides, std::vector<const Overrides*>> fitting_by_layout;
  for (const auto& l : layouts) {
    ASSERT_EQ(l.size(), 8U);
    if (memory_of(load_scenario(path, l, catalog()), catalog()).fits) {
      fitting_by_layout[Overrides(l.begin(), l.end() - 3)].push_back(&l);
    }
  }
  for (const auto& [layout, points] : fitting_by_layout) {
    for (const Overrides* a : points) {
      for (const Overrides* b : points) {
        if (a == b) continue;
        const bool undercuts = rank(*a, 5) <= rank(*b, 5) && rank(*a, 6) <= rank(*b, 6) && rank(*a, 7) <= rank(*b, 7);
        EXPECT_FALSE(undercuts) << testing::PrintToString(*a) << " undercuts " << testing::PrintToString(*b);
      }
    }
  }
  std::set<Overrides> distinct(layouts.begin(), layouts.end());
  EXPECT_EQ(distinct.size(), layouts.size());
  for (const auto& l : layouts) {
    EXPECT_NE(l[0], "parallelism.tensor=3");
    EXPECT_NE(l[0], "parallelism.tensor=128");  // above GPUs per VM x 8 = 64
    // Every layout loads.
    EXPECT_NO_THROW((void)load_scenario(path, l, catalog()));
  }
  // The sweep is the layouts, in order, with indices 0..n-1.
  const auto points = expand_sweep(spec, path, 0, catalog());
  ASSERT_EQ(points.size(), layouts.size());
  for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(points[i].overrides(), layouts[i]);
}

TEST(SweepLayouts, DeepSeekV3LikeSearchesExpertAndContextParallelism) {
  // The MoE search (issue 13): every layout loads; expert parallelism from 2 to 256 and context parallelism
  // (32K tokens: shards of 16K, 8K and 4K) both appear, each as its own key; well over 100 layouts.
  const fs::path path = kSourceDir / "scenarios" / "sweeps" / "deepseek-v3-like-2048-h100-32k-layouts.toml";
  int64_t max_expert = 1, max_context = 1, count = 0;
  for (const auto& typed : enumerate_layouts(path, {}, catalog())) {
    ++count;
    for (const SweptValue& v : typed) {
      if (v.key == "parallelism.expert") max_expert = std::max(max_expert, std::get<int64_t>(v.value));
      if (v.key == "parallelism.context") max_context = std::max(max_context, std::get<int64_t>(v.value));
    }
  }
  EXPECT_GE(count, 100);
  EXPECT_EQ(max_expert, 256);
  EXPECT_EQ(max_context, 8);
}

TEST(SweepLayouts, RunIgnoresTheSweepTable) {
  const fs::path path = kSourceDir / "scenarios" / "sweeps" / "gpt3-175b-1024-a100-layouts.toml";
  const Scenario s = load_scenario(path, {}, catalog());
  EXPECT_EQ(s.parallelism.tensor, 8);
  EXPECT_EQ(s.resolved_toml.find("sweep"), std::string::npos);
}

}  // namespace
}  // namespace clustersim::sim
