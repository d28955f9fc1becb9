// A layout search's candidate scenarios derived from one loaded scenario (layout_rules.hpp). Each check below
// is the loader's rule of the same name (training_rules.cpp; the key table, scenario_params.cpp), applied to the
// derived values; tests/scenario/test_layout_rules.cpp holds the verdicts and scenarios against loading.
#include "sim/io/layout_rules.hpp"

#include <array>
#include <string>

#include "models/parallelism/layout.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/io/training_rules.hpp"

namespace clustersim::sim {

namespace {

/// A layout key: its name, the member of ParallelismConfig it sets (nullptr: training.micro_batch_size), and its
/// entry in the key table (its range).
struct LayoutKey {
  std::string_view key;
  int64_t models::ParallelismConfig::*field = nullptr;
  const detail::ParamSpec* spec = nullptr;
};

/// The layout keys, their key-table entries looked up once (find_param walks the table).
const std::array<LayoutKey, 8>& layout_keys() {
  using P = models::ParallelismConfig;
  static const std::array<LayoutKey, 8> keys = [] {
    std::array<LayoutKey, 8> k{{{"parallelism.tensor", &P::tensor},
                                {"parallelism.context", &P::context},
                                {"parallelism.pipeline", &P::pipeline},
                                {"parallelism.data", &P::data},
                                {"parallelism.expert", &P::expert},
                                {"parallelism.expert_tensor", &P::expert_tensor},
                                {"parallelism.virtual_stages", &P::virtual_stages},
                                {"training.micro_batch_size", nullptr}}};
    for (LayoutKey& e : k) e.spec = detail::find_param(e.key);
    return k;
  }();
  return keys;
}

/// The layout key named `key`, nullptr for another key.
const LayoutKey* layout_key(std::string_view key) {
  for (const LayoutKey& k : layout_keys()) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

/// Whether the loader refuses layout `p` with micro batch `mb` (every other key as `s`, the loaded base, has it;
/// `gpus` the cluster's): the rules of check_training_scenario that read the layout keys, in their order.
bool layout_refused(const models::ParallelismConfig& p, int64_t mb, const Scenario& s, int64_t gpus) {
  // check_parallelism_shape.
  if (p.virtual_stages > 1 && s.schedule == models::PipelineSchedule::gpipe) return true;
  if (models::layout_problem(p, s.model)) return true;
  // check_gpu_count, parallelism.data given: the checked products, then their equality with the GPUs.
  int64_t tc = 0, tp = 0, tpd = 0;
  if (__builtin_mul_overflow(p.tensor, p.context, &tc) || __builtin_mul_overflow(tc, p.pipeline, &tp) ||
      __builtin_mul_overflow(tp, p.data, &tpd) || tpd != gpus) {
    return true;
  }
  // check_training_on_cluster.
  if (models::expert_layout_problem(p, s.model)) return true;
  if (s.training.moe_a2a_overlap && (p.expert < 2 || (p.pipeline > 1 && p.virtual_stages < 2))) return true;
  if (s.training.moe_token_dispatcher == models::MoeDispatcher::flex && p.expert_tensor != 1) return true;
  const int64_t b = s.training.global_batch_size;
  int64_t mbd = 0;
  if (__builtin_mul_overflow(mb, p.data, &mbd)) return true;
  if (!models::batch_split_error(b, mb, p.data).empty()) return true;
  if (p.virtual_stages > 1 && (b / mbd) % p.pipeline != 0) return true;
  // check_step_size's pass bound (its FLOP bound reads no layout key).
  const double passes = static_cast<double>(b / mbd) * static_cast<double>(p.pipeline) *
                        static_cast<double>(p.virtual_stages);
  return passes > detail::kMaxPipelinePasses;
}

}  // namespace

LayoutVerdict derive_layout(const Scenario& base, std::span<const LayoutSetting> settings, Scenario& out) {
  if (!base.resolved_toml.empty()) return LayoutVerdict::load_to_know;  // its text would change
  const models::ParallelismConfig& q = base.parallelism;
  models::ParallelismConfig p = q;
  int64_t micro_batch = base.training.micro_batch_size;
  bool data_given = false;
  for (const LayoutSetting& s : settings) {
    const LayoutKey* k = layout_key(s.key);
    if (k == nullptr || k->spec == nullptr) return LayoutVerdict::load_to_know;
    if (s.value < k->spec->min_int || s.value > k->spec->max_int) return LayoutVerdict::refused;  // check_param
    (k->field == nullptr ? micro_batch : p.*(k->field)) = s.value;
    data_given = data_given || k->field == &models::ParallelismConfig::data;
  }
  if (!data_given) return LayoutVerdict::load_to_know;  // the loader derives data (check_gpu_count)
  // check_tp_comm_overlap: `base` with tensor > 1 shows the value was not explicit (it passed); with tensor 1,
  // only the document tells.
  if (p.tp_comm_overlap && !p.sequence_parallel && p.tensor > 1 && q.tensor <= 1) return LayoutVerdict::load_to_know;
  // The cluster's GPUs: `base` passed check_gpu_count, so its tensor x context x pipeline x data is their count
  // (data given: equal; derived: GPUs / (tensor x context x pipeline), which divides them), and no product
  // overflowed.
  const int64_t gpus = q.tensor * q.context * q.pipeline * q.data;
  if (layout_refused(p, micro_batch, base, gpus)) return LayoutVerdict::refused;
  out = base;
  out.parallelism = p;
  out.training.micro_batch_size = micro_batch;
  for (const LayoutSetting& s : settings) out.overrides.push_back(std::string(s.key) + "=" + std::to_string(s.value));
  return LayoutVerdict::loads;
}

}  // namespace clustersim::sim
