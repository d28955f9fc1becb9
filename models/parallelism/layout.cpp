#include "models/parallelism/layout.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace clustersim::models {

namespace {

constexpr LayoutDimension kDimensions[]{
    {LayoutDim::tensor, "tensor", "TP", "parallelism.tensor", "tensor_parallel", "tensor-parallel size",
     &ParallelismConfig::tensor},
    {LayoutDim::context, "context", "CP", "parallelism.context", "context_parallel",
     "context-parallel size (sequence shards)", &ParallelismConfig::context, false},
    {LayoutDim::data, "data", "DP", "parallelism.data", "data_parallel", "data-parallel replicas",
     &ParallelismConfig::data},
    {LayoutDim::pipeline, "pipeline", "PP", "parallelism.pipeline", "pipeline_parallel", "pipeline stages",
     &ParallelismConfig::pipeline},
};

/// The folded dimensions of MoE layers (ParallelismConfig::expert), after the rank-order dimensions.
constexpr LayoutDimension kFolded[]{
    {LayoutDim::expert, "expert", "EP", "parallelism.expert", "expert_parallel",
     "expert-parallel size (MoE layers)", &ParallelismConfig::expert, false},
    {LayoutDim::expert_tensor, "expert_tensor", "ETP", "parallelism.expert_tensor", "expert_tensor_parallel",
     "expert-tensor-parallel size (MoE layers)", &ParallelismConfig::expert_tensor, false},
};

/// The order layouts are written in (Megatron's papers and logs: TP, CP, PP, DP, then EP, ETP).
constexpr LayoutDim kAsWritten[]{LayoutDim::tensor, LayoutDim::context, LayoutDim::pipeline,
                                 LayoutDim::data,   LayoutDim::expert,  LayoutDim::expert_tensor};

bool contains(std::span<const LayoutDim> dims, LayoutDim d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

/// Calls `f(coords)` for every coordinate vector of the dimensions in `selected` (in_selected true) or of
/// those not in it (false), the others' coordinates left as they are in `coords`, the fastest dimension's
/// coordinate counting first (so the slowest dimension is outermost).
template <typename F>
void for_each_coords(const ParallelismConfig& p, std::span<const LayoutDim> selected, bool in_selected,
                     std::vector<int64_t> coords, F&& f) {
  const size_t n = std::size(kDimensions);
  while (true) {
    f(coords);
    size_t k = 0;
    for (; k < n; ++k) {
      if (contains(selected, kDimensions[k].dim) != in_selected) continue;
      if (++coords[k] < p.*kDimensions[k].size) break;
      coords[k] = 0;
    }
    if (k == n) return;
  }
}

}  // namespace

std::span<const LayoutDimension> layout_dimensions() { return kDimensions; }

std::vector<const LayoutDimension*> layout_dimensions_as_written() {
  std::vector<const LayoutDimension*> out;
  for (const LayoutDim d : kAsWritten) out.push_back(&layout_dimension(d));
  return out;
}

const LayoutDimension& layout_dimension(LayoutDim dim) {
  const auto k = static_cast<size_t>(dim);
  return k < std::size(kDimensions) ? kDimensions[k] : kFolded[k - std::size(kDimensions)];
}

int64_t size_of(const ParallelismConfig& p, LayoutDim dim) { return p.*layout_dimension(dim).size; }

int64_t layout_rank(const ParallelismConfig& p, std::span<const int64_t> coords) {
  if (coords.size() != std::size(kDimensions)) throw std::invalid_argument("layout_rank: one coordinate per dimension");
  int64_t rank = 0;
  for (size_t k = std::size(kDimensions); k-- > 0;) rank = rank * (p.*kDimensions[k].size) + coords[k];
  return rank;
}

StridedGroups layout_strided_groups(const ParallelismConfig& p, LayoutDim dim) {
  const auto k = static_cast<size_t>(dim);
  if (k >= std::size(kDimensions)) throw std::invalid_argument("layout_strided_groups: not a rank-order dimension");
  int64_t below = 1, above = 1;
  for (size_t j = 0; j < std::size(kDimensions); ++j) {
    if (j < k) below *= p.*kDimensions[j].size;
    if (j > k) above *= p.*kDimensions[j].size;
  }
  return strided_groups(below, p.*kDimensions[k].size, above);
}

std::optional<StridedGroups> layout_strided_groups(const ParallelismConfig& p, std::span<const LayoutDim> dims) {
  // The selected rank-order dimensions must be one run [first, last].
  size_t first = std::size(kDimensions), last = 0;
  for (size_t j = 0; j < std::size(kDimensions); ++j) {
    if (!contains(dims, kDimensions[j].dim)) continue;
    first = std::min(first, j);
    last = j;
  }
  if (first == std::size(kDimensions)) return std::nullopt;
  for (size_t j = first; j <= last; ++j) {
    if (!contains(dims, kDimensions[j].dim)) return std::nullopt;
  }
  int64_t below = 1, size = 1, above = 1;
  for (size_t j = 0; j < std::size(kDimensions); ++j) {
    const int64_t radix = p.*kDimensions[j].size;
    (j < first ? below : j > last ? above : size) *= radix;
  }
  return strided_groups(below, size, above);
}

CommPattern layout_groups(const ParallelismConfig& p, LayoutDim dim) { return layout_strided_groups(p, dim).pattern(); }

CommPattern layout_groups(const ParallelismConfig& p, std::span<const LayoutDim> dims) {
  if (const std::optional<StridedGroups> strided = layout_strided_groups(p, dims)) return strided->pattern();
  CommPattern pattern;
  for_each_coords(p, dims, false, std::vector<int64_t>(std::size(kDimensions), 0), [&](std::vector<int64_t> base) {
    std::vector<int64_t> group;
    for_each_coords(p, dims, true, std::move(base),
                    [&](const std::vector<int64_t>& coords) { group.push_back(layout_rank(p, coords)); });
    std::sort(group.begin(), group.end());
    pattern.groups.push_back(std::move(group));
  });
  return pattern;
}

std::optional<StridedGroups> expert_strided_groups(const ParallelismConfig& p, std::optional<LayoutDim> dim) {
  const int64_t per_stage = p.tensor * p.context * p.data, folded = p.expert * p.expert_tensor;
  if (folded < 1 || per_stage % folded != 0) return std::nullopt;
  const int64_t replicas = per_stage / folded;
  if (!dim) return strided_groups(1, folded, replicas * p.pipeline);
  switch (*dim) {
    case LayoutDim::expert_tensor: return strided_groups(1, p.expert_tensor, p.expert * replicas * p.pipeline);
    case LayoutDim::expert: return strided_groups(p.expert_tensor, p.expert, replicas * p.pipeline);
    case LayoutDim::data: return strided_groups(folded, replicas, p.pipeline);
    default: throw std::invalid_argument("expert_strided_groups: expert, expert_tensor or data");
  }
}

namespace {

/// The groups of a stage's folded ranks (expert_tensor fastest, then expert, then expert data) along the
/// folded coordinate `which` (0: expert_tensor, 1: expert, 2: expert data), every stage.
CommPattern folded_groups(const ParallelismConfig& p, int which) {
  const int64_t per_stage = p.tensor * p.context * p.data;
  const int64_t sizes[3] = {p.expert_tensor, p.expert, p.expert_replicas()};
  const int64_t strides[3] = {1, p.expert_tensor, p.expert_tensor * p.expert};
  CommPattern pattern;
  for (int64_t stage = 0; stage < p.pipeline; ++stage) {
    // Every setting of the two other coordinates, the slower one outermost.
    const int a = which == 0 ? 1 : 0, b = which == 2 ? 1 : 2;
    for (int64_t cb = 0; cb < sizes[b]; ++cb) {
      for (int64_t ca = 0; ca < sizes[a]; ++ca) {
        std::vector<int64_t> group;
        for (int64_t c = 0; c < sizes[which]; ++c) {
          group.push_back(stage * per_stage + ca * strides[a] + cb * strides[b] + c * strides[which]);
        }
        pattern.groups.push_back(std::move(group));
      }
    }
  }
  return pattern;
}

}  // namespace

CommPattern expert_tensor_pattern(const ParallelismConfig& p) {
  if (const auto s = expert_strided_groups(p, LayoutDim::expert_tensor)) return s->pattern();
  return folded_groups(p, 0);
}
CommPattern expert_parallel_pattern(const ParallelismConfig& p) {
  if (const auto s = expert_strided_groups(p, LayoutDim::expert)) return s->pattern();
  return folded_groups(p, 1);
}
CommPattern expert_data_pattern(const ParallelismConfig& p) {
  if (const auto s = expert_strided_groups(p, LayoutDim::data)) return s->pattern();
  return folded_groups(p, 2);
}

CommPattern expert_model_pattern(const ParallelismConfig& p) {
  if (const auto s = expert_strided_groups(p, std::nullopt)) return s->pattern();
  const int64_t per_stage = p.tensor * p.context * p.data, size = p.expert * p.expert_tensor;
  CommPattern pattern;
  for (int64_t stage = 0; stage < p.pipeline; ++stage) {
    for (int64_t edp = 0; edp < p.expert_replicas(); ++edp) {
      std::vector<int64_t> group;
      for (int64_t r = 0; r < size; ++r) group.push_back(stage * per_stage + edp * size + r);
      pattern.groups.push_back(std::move(group));
    }
  }
  return pattern;
}

std::optional<LayoutProblem> expert_layout_problem(const ParallelismConfig& p, const ModelConfig& model) {
  const auto text = [](int64_t v) { return std::to_string(v); };
  if (!model.moe()) {
    if (p.expert != 1) return LayoutProblem{"parallelism.expert", "needs model.num_experts > 0, got " + text(p.expert)};
    if (p.expert_tensor != 1) {
      return LayoutProblem{"parallelism.expert_tensor", "needs model.num_experts > 0, got " + text(p.expert_tensor)};
    }
    return std::nullopt;
  }
  if (p.expert < 1 || model.num_experts % p.expert != 0) {
    return LayoutProblem{"parallelism.expert", "must divide model.num_experts (" + text(model.num_experts) +
                                                   "), got " + text(p.expert)};
  }
  if (p.expert_tensor < 1 || model.expert_ffn() % p.expert_tensor != 0) {
    return LayoutProblem{"parallelism.expert_tensor", "must divide the expert MLP width (" +
                                                          text(model.expert_ffn()) + "), got " +
                                                          text(p.expert_tensor)};
  }
  const int64_t ranks = p.tensor * p.context * p.data;
  if (ranks % (p.expert * p.expert_tensor) != 0) {
    return LayoutProblem{"parallelism.expert", "expert × expert_tensor = " + text(p.expert) + " × " +
                                                   text(p.expert_tensor) + " must divide tensor × context × data = " +
                                                   text(ranks) + " (the ranks of a pipeline stage, folded again "
                                                   "for the MoE layers)"};
  }
  if (p.tensor > 1 && !p.sequence_parallel) {
    return LayoutProblem{"parallelism.sequence_parallel", "must be true for an MoE model with tensor > 1 "
                                                          "(Megatron-Core's token dispatchers need it)"};
  }
  return std::nullopt;
}

CommPattern layout_neighbours(const ParallelismConfig& p, LayoutDim dim) {
  // The groups along `dim` start at the ranks with `dim`'s coordinate 0, ascending (the other coordinates
  // slowest first); the pair at coordinate c is that start moved by c and c + 1 strides.
  return neighbour_pairs(layout_strided_groups(p, dim));
}

CommPattern neighbour_pairs(const StridedGroups& along) {
  CommPattern pattern;
  if (along.size < 2) return pattern;
  // Stored flat, written once: each stage boundary c's pairs {rank(g, c), rank(g, c) + stride}, g in order, with
  // rank(g, c) = start(g) + c x stride.
  const int64_t boundaries = along.size - 1, stride = along.stride;
  pattern.groups.append_uniform_flat(static_cast<size_t>(boundaries * along.count), 2,
                                     [&along, boundaries, stride](std::span<int64_t> out) {
                                       int64_t* o = out.data();
                                       for (int64_t c = 0, shift = 0; c < boundaries; ++c, shift += stride) {
                                         along.for_each_start([&o, shift, stride](int64_t s) {
                                           o[0] = s + shift;
                                           o[1] = s + shift + stride;
                                           o += 2;
                                         });
                                       }
                                     });
  return pattern;
}

std::string layout_text(const ParallelismConfig& p) {
  std::string s;
  for (const LayoutDimension* d : layout_dimensions_as_written()) {
    if (!d->shown_when_one && p.*d->size == 1) continue;
    if (!s.empty()) s += " x ";
    s += std::string(d->abbreviation) + " " + std::to_string(p.*d->size);
  }
  return s;
}

std::optional<LayoutProblem> layout_problem(const ParallelismConfig& p, const ModelConfig& model) {
  const auto text = [](int64_t v) { return std::to_string(v); };
  if (p.tensor < 1 || model.num_attention_heads % p.tensor != 0) {
    return LayoutProblem{"parallelism.tensor", "must divide model.num_attention_heads (" +
                                                   text(model.num_attention_heads) + "), got " + text(p.tensor)};
  }
  if (model.kv_heads() % p.tensor != 0) {
    return LayoutProblem{"parallelism.tensor", "must divide model.num_query_groups (" + text(model.kv_heads()) +
                                                   "), got " + text(p.tensor)};
  }
  // The tensor-parallel splits of the layers' other widths (transformer_layer, the output layer, the MTP
  // projection): Megatron pads the vocabulary to a multiple of 128 x tensor (--make-vocab-size-divisible-by), so a
  // scenario gives the padded size.
  if (model.vocab_size % p.tensor != 0) {
    return LayoutProblem{"model.vocab_size", "must be divisible by parallelism.tensor (" + text(p.tensor) +
                                                 "): the embedding and the output layer are split over the "
                                                 "tensor-parallel ranks (Megatron pads it to a multiple of 128 × "
                                                 "tensor; give the padded size), got " + text(model.vocab_size)};
  }
  if (model.ffn() % p.tensor != 0) {
    return LayoutProblem{"model.ffn_hidden_size", "must be divisible by parallelism.tensor (" + text(p.tensor) +
                                                      "), got " + text(model.ffn())};
  }
  if (model.moe() && model.moe_shared_expert_intermediate_size % p.tensor != 0) {
    return LayoutProblem{"model.moe_shared_expert_intermediate_size",
                         "must be divisible by parallelism.tensor (" + text(p.tensor) + "), got " +
                             text(model.moe_shared_expert_intermediate_size)};
  }
  if (model.mtp_num_layers > 0 && model.hidden_size % p.tensor != 0) {
    return LayoutProblem{"model.hidden_size", "must be divisible by parallelism.tensor (" + text(p.tensor) +
                                                  ") for the multi-token-prediction projection, got " +
                                                  text(model.hidden_size)};
  }
  if (p.virtual_stages > 1 && p.pipeline == 1) {
    return LayoutProblem{"parallelism.virtual_stages", "interleaved schedule (virtual_stages = " +
                                                           text(p.virtual_stages) + ") needs pipeline > 1"};
  }
  int64_t chunks = 0;
  if (__builtin_mul_overflow(p.pipeline, p.virtual_stages, &chunks) || model.num_layers < chunks) {
    std::string got = "got " + text(p.pipeline);
    if (p.virtual_stages > 1) got += " × " + text(p.virtual_stages) + (chunks > 0 ? " = " + text(chunks) : "");
    return LayoutProblem{"parallelism.pipeline", "pipeline × virtual_stages must not exceed model.num_layers (" +
                                                     text(model.num_layers) + "): every model chunk needs a layer, " +
                                                     got};
  }
  if (auto split = pipeline_split_problem(model.num_layers, p)) return split;
  if (p.context < 1 || (p.context > 1 && model.seq_length % (2 * p.context) != 0)) {
    return LayoutProblem{"parallelism.context", "must split model.seq_length (" + text(model.seq_length) +
                                                    ") into 2 × context chunks of equal length (causal load "
                                                    "balancing), got " + text(p.context)};
  }
  if (p.sequence_parallel && (model.seq_length / p.context) % p.tensor != 0) {
    return LayoutProblem{"parallelism.sequence_parallel",
                         p.context > 1 ? "needs each context shard (model.seq_length / context = " +
                                             text(model.seq_length / p.context) + ") divisible by tensor (" +
                                             text(p.tensor) + ")"
                                       : "needs model.seq_length (" + text(model.seq_length) +
                                             ") divisible by tensor (" + text(p.tensor) + ")"};
  }
  return std::nullopt;
}

std::vector<LayoutCandidate> enumerate_layouts(const LayoutSearch& q) {
  std::vector<LayoutCandidate> out;
  const int64_t max_tensor = std::max(q.gpus_per_vm * 8, q.gpus_per_domain);
  for (int64_t t = 1; t <= max_tensor && t <= q.gpus; t *= 2) {
    if (q.heads % t != 0 || q.query_groups % t != 0 || q.gpus % t != 0) continue;
    for (int64_t c = 1; t * c <= q.gpus; c *= 2) {
      if (c > 1 && (q.seq_length / c < kMinContextShardTokens || q.seq_length % (2 * c) != 0)) break;
      if (q.gpus % (t * c) != 0) continue;
      for (int64_t p = 1; p <= q.layers && t * c * p <= q.gpus; ++p) {
        // Layers split evenly, or unevenly with at least 2 a stage (Megatron-Core's first/last-stage layer
        // counts; DeepSeek-V3's 61 layers on 16 stages).
        if ((q.layers % p != 0 && q.layers < 2 * p) || q.gpus % (t * c * p) != 0) continue;
        const int64_t d = q.gpus / (t * c * p);
        if (q.global_batch % d != 0) continue;
        for (int64_t b = 1; b <= 8; ++b) {
          if ((q.global_batch / d) % b != 0) continue;
          const int64_t m = q.global_batch / (d * b);
          for (const int64_t v : {1, 2, 4}) {
            if (v > 1 && (p == 1 || q.layers % (p * v) != 0 || m % p != 0)) continue;
            // Expert parallelism folds over the stage's t c d ranks: every power of two dividing the experts.
            for (int64_t e = 1; e <= std::max<int64_t>(1, q.experts); e *= 2) {
              if (e > 1 && (q.experts % e != 0 || (t * c * d) % e != 0)) continue;
              LayoutCandidate candidate;
              candidate.parallelism.tensor = t;
              candidate.parallelism.context = c;
              candidate.parallelism.pipeline = p;
              candidate.parallelism.data = d;
              candidate.parallelism.virtual_stages = v;
              candidate.parallelism.expert = e;
              candidate.micro_batch = b;
              out.push_back(candidate);
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace clustersim::models
