// A layout search's points run from the scenarios its screening loaded (LoadedSweep::loaded) give the rows that
// loading every point again gives, bit for bit: the shipped GPT-3 175B search, and a small grid x layout search
// with --set options, a swept seed and a job.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <variant>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim {
namespace {

namespace fs = std::filesystem;

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Runs every point of `path` (with `overrides`) twice: from the screened scenarios and loading each point;
/// returns how many points had a screened scenario.
size_t expect_same_rows(const fs::path& path, const std::vector<std::string>& overrides) {
  const sim::LoadedSweep screened = sim::load_sweep(path, overrides, catalog(), 2);
  sim::LoadedSweep loaded = sim::load_sweep(path, overrides, catalog(), 2);
  size_t reused = 0;
  for (const auto& s : screened.loaded) reused += s ? 1 : 0;
  loaded.loaded.clear();
  std::vector<const sim::SweepPoint*> a, b;
  for (const sim::SweepPoint& p : screened.points) a.push_back(&p);
  for (const sim::SweepPoint& p : loaded.points) b.push_back(&p);
  sim::SweepRunOptions options;
  options.jobs = 2;
  const std::vector<sim::SweepRow> x = sim::run_sweep(screened, catalog(), a, options);
  const std::vector<sim::SweepRow> y = sim::run_sweep(loaded, catalog(), b, options);
  EXPECT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    SCOPED_TRACE("point " + std::to_string(i));
    EXPECT_EQ(x[i].seed, y[i].seed);
    EXPECT_EQ(x[i].status, y[i].status);
    EXPECT_EQ(x[i].reason, y[i].reason);
    if (x[i].values.size() != y[i].values.size()) {
      ADD_FAILURE() << "columns " << x[i].values.size() << " vs " << y[i].values.size();
      continue;
    }
    if (x[i].meta && y[i].meta) {
      EXPECT_EQ(*x[i].meta, *y[i].meta);
    }
    for (size_t c = 0; c < x[i].values.size(); ++c) {
      const auto* dx = std::get_if<double>(&x[i].values[c]);
      const auto* dy = std::get_if<double>(&y[i].values[c]);
      if (dx != nullptr && dy != nullptr) {
        EXPECT_TRUE(same_bits(*dx, *dy)) << (*x[i].meta)[c].name << ": " << *dx << " vs " << *dy;
      } else {
        EXPECT_EQ(x[i].values[c], y[i].values[c]) << (*x[i].meta)[c].name;
      }
    }
  }
  return reused;
}

/// Every point of `path`'s search (with `overrides`) has a screened scenario, and each equals a fresh load of
/// that point (the sweep's overrides, then the point's values) in the fields a load records beside the
/// values (--set options, key locations, source, resolved text) and in the layout and training settings;
/// returns the number of points. The rows (expect_same_rows) cover every field that reaches an output.
size_t expect_screened_equal_loads(const fs::path& path, const std::vector<std::string>& overrides) {
  const sim::LoadedSweep sweep = sim::load_sweep(path, overrides, catalog(), 2);
  EXPECT_EQ(sweep.loaded.size(), sweep.points.size());
  for (size_t i = 0; i < sweep.points.size() && i < sweep.loaded.size(); ++i) {
    SCOPED_TRACE("point " + std::to_string(i));
    if (!sweep.loaded[i]) {
      ADD_FAILURE() << "no screened scenario";
      continue;
    }
    const sim::Scenario& a = *sweep.loaded[i];
    std::vector<std::string> all = overrides;
    for (const std::string& o : sweep.points[i].overrides()) all.push_back(o);
    const sim::Scenario b = sim::load_scenario(sweep.document, all, catalog(), sim::ResolvedText::skip);
    EXPECT_EQ(a.overrides, b.overrides);
    EXPECT_EQ(a.locations.size(), b.locations.size());
    for (const auto& [key, at] : b.locations) {
      const auto it = a.locations.find(key);
      if (it == a.locations.end()) {
        ADD_FAILURE() << key << " has no location";
        continue;
      }
      EXPECT_EQ(it->second.file, at.file) << key;
      EXPECT_EQ(it->second.line, at.line) << key;
      EXPECT_EQ(it->second.column, at.column) << key;
    }
    EXPECT_EQ(a.source_path, b.source_path);
    EXPECT_EQ(a.resolved_toml, b.resolved_toml);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.what_if, b.what_if);
    EXPECT_EQ(a.simulation.seed, b.simulation.seed);
    const models::ParallelismConfig& p = a.parallelism;
    const models::ParallelismConfig& q = b.parallelism;
    EXPECT_EQ(p.tensor, q.tensor);
    EXPECT_EQ(p.context, q.context);
    EXPECT_EQ(p.pipeline, q.pipeline);
    EXPECT_EQ(p.data, q.data);
    EXPECT_EQ(p.virtual_stages, q.virtual_stages);
    EXPECT_EQ(p.sequence_parallel, q.sequence_parallel);
    EXPECT_EQ(p.zero_stage, q.zero_stage);
    EXPECT_EQ(p.overlap_grad_reduce, q.overlap_grad_reduce);
    EXPECT_EQ(p.overlap_param_gather, q.overlap_param_gather);
    EXPECT_EQ(p.overlap_p2p_comm, q.overlap_p2p_comm);
    EXPECT_EQ(p.async_tensor_parallel_allreduce, q.async_tensor_parallel_allreduce);
    EXPECT_EQ(p.tp_comm_overlap, q.tp_comm_overlap);
    EXPECT_EQ(p.expert, q.expert);
    EXPECT_EQ(p.expert_tensor, q.expert_tensor);
    EXPECT_EQ(a.training.micro_batch_size, b.training.micro_batch_size);
    EXPECT_EQ(a.training.activation_recompute, b.training.activation_recompute);
    EXPECT_EQ(a.training.recompute_modules, b.training.recompute_modules);
    EXPECT_EQ(a.training.recompute_num_layers, b.training.recompute_num_layers);
    EXPECT_EQ(a.training.grad_reduce, b.training.grad_reduce);
  }
  return sweep.points.size();
}

TEST(ScreenedPoints, Gpt3LayoutSearchScenariosEqualLoadingEachPoint) {
  const fs::path path = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "gpt3-175b-1024-a100-layouts.toml";
  EXPECT_EQ(expect_screened_equal_loads(path, {}), 395U);
  EXPECT_GT(expect_screened_equal_loads(path, {"simulation.seed=11", "training.activation_recompute=full"}), 100U);
}

TEST(ScreenedPoints, MoeLayoutSearchScenariosEqualLoadingEachPoint) {
  const fs::path path =
      fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "deepseek-v3-like-2048-h100-32k-layouts.toml";
  EXPECT_EQ(expect_screened_equal_loads(path, {}), 6302U);
}

TEST(ScreenedPoints, Gpt3LayoutSearchRowsEqualLoadingEachPoint) {
  const fs::path path = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "sweeps" / "gpt3-175b-1024-a100-layouts.toml";
  EXPECT_GT(expect_same_rows(path, {}), 100U);
}

TEST(ScreenedPoints, GridLayoutSearchWithSetSeedAndJobRowsEqualLoadingEachPoint) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-screened-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "search.toml";
  std::ofstream(path) << "schema_version = 1\n"
                         "name = \"screened\"\n"
                         "[model]\nnum_layers = 24\nhidden_size = 2048\nnum_attention_heads = 16\n"
                         "vocab_size = 51200\nseq_length = 2048\n"
                         "[training]\nglobal_batch_size = 64\nactivation_recompute = \"selective\"\n"
                         "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                         "[simulation]\nvariability = \"on\"\n"
                         "[job]\ntrain_tokens = 2e9\nreplications = 20\n"
                         "[sweep]\n\"simulation.seed\" = [3, 7]\n\"training.precision\" = [\"bf16\", \"fp16\"]\n"
                         "parallelism = \"auto\"\n";
  EXPECT_GT(expect_same_rows(path, {"training.framework = megatron-core", "simulation.seed=11"}), 10U);
  // The loader's rules that read the knobs (knob_rules_may_reject): a recompute_modules list, tp_comm_overlap
  // from NeMo's profile and given explicitly.
  for (const std::vector<std::string>& set :
       {std::vector<std::string>{"training.framework = megatron-core", "simulation.seed=11"},
        std::vector<std::string>{"training.recompute_modules=[\"core_attn\", \"layernorm\"]"},
        std::vector<std::string>{"training.framework=nemo"},
        std::vector<std::string>{"parallelism.tp_comm_overlap=true", "parallelism.sequence_parallel=true"}}) {
    EXPECT_GT(expect_screened_equal_loads(path, set), 10U);
  }
  // Without a swept seed each point runs with its own seed (the job's Monte Carlo depends on it).
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  text.replace(text.find("\"simulation.seed\" = [3, 7]\n"), std::strlen("\"simulation.seed\" = [3, 7]\n"), "");
  std::ofstream(path) << text;
  EXPECT_GT(expect_same_rows(path, {"simulation.seed=11"}), 5U);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clustersim
