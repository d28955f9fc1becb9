// The layout of a job over GPUs, one parallelism dimension at a time. Each dimension is described once, in
// layout_dimensions(): its name, its scenario key, its report column and abbreviation, where it sits in the rank
// order and in the order people write layouts. Ranks, communication groups, report columns, the layout line of
// the text report and the sweep's layout ranking are all derived from that table, so a new dimension (context
// or expert parallelism) is a new row there, a member of ParallelismConfig, its key, and its effect on the work
// and memory models.
//
// Rank order (Megatron-LM, Narayanan et al. SC'21; megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp"):
// tensor fastest, then context, data, pipeline, so a tensor-parallel group sits inside one node when tensor <=
// GPUs per node, context-parallel ranks are next closest, and consecutive data-parallel replicas share nodes
// before pipeline stages do.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/parallelism/plan.hpp"
#include "models/parallelism/strided_groups.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

/// The dimensions, by their place in the rank order (fastest first).
/// expert and expert_tensor are folded dimensions: they re-divide the tensor x context x data ranks of a stage
/// for the MoE layers and do not multiply the GPU count (ParallelismConfig::expert).
enum class LayoutDim { tensor = 0, context = 1, data = 2, pipeline = 3, expert = 4, expert_tensor = 5 };

/// One parallelism dimension.
struct LayoutDimension {
  LayoutDim dim;
  std::string_view name;          ///< "tensor"
  std::string_view abbreviation;  ///< "TP", as layouts are written ("TP 8 x PP 8 x DP 16")
  std::string_view key;           ///< scenario key, "parallelism.tensor"
  std::string_view column;        ///< HDF5 /summary column, "tensor_parallel"
  std::string_view description;   ///< of the column
  int64_t ParallelismConfig::*size;  ///< the member of ParallelismConfig that holds its size
  /// Written in layout_text only when its size is above 1 (a dimension most layouts do not use: "TP 8 x PP 8
  /// x DP 16" reads as before context parallelism existed).
  bool shown_when_one = true;
};

/// Every dimension that multiplies the GPU count, in rank order (fastest first): tensor, context, data,
/// pipeline.
std::span<const LayoutDimension> layout_dimensions();
/// Every dimension in the order layouts are written and reported: tensor, context, pipeline, data, then the
/// folded expert and expert_tensor.
std::vector<const LayoutDimension*> layout_dimensions_as_written();
/// The entry of `dim`.
const LayoutDimension& layout_dimension(LayoutDim dim);

/// The size of `dim` in `p` (>= 1 for a valid layout).
int64_t size_of(const ParallelismConfig& p, LayoutDim dim);

/// Global rank of the GPU with coordinate coords[k] along layout_dimensions()[k] (0 <= coords[k] < its size):
/// the mixed-radix number with the first dimension as the fastest digit.
int64_t layout_rank(const ParallelismConfig& p, std::span<const int64_t> coords);

/// Every group along `dim`: for each setting of the other coordinates, the size_of(dim) ranks that differ only
/// in `dim`'s coordinate (ascending). Groups are ordered by the other coordinates, the slowest dimension
/// outermost. Tensor: the t consecutive ranks of each (data, stage); data: d ranks strided by t.
CommPattern layout_groups(const ParallelismConfig& p, LayoutDim dim);

/// layout_groups(p, dim) without the rank lists (strided_groups.hpp): the same groups and ranks, in the same
/// order. `dim` is one of layout_dimensions() (tensor, context, data, pipeline).
StridedGroups layout_strided_groups(const ParallelismConfig& p, LayoutDim dim);

/// layout_groups(p, dims) without the rank lists when `dims` are adjacent in the rank order (context and data:
/// the data-parallel groups); nullopt when they are not (their groups are no arithmetic progressions), or empty.
std::optional<StridedGroups> layout_strided_groups(const ParallelismConfig& p, std::span<const LayoutDim> dims);

/// The folded MoE groups (expert_parallel_pattern, expert_tensor_pattern, expert_data_pattern, and with `dim`
/// nullopt expert_model_pattern) without the rank lists: `dim` expert, expert_tensor, or data for the
/// expert-data groups. nullopt when expert x expert_tensor does not divide the stage's ranks.
std::optional<StridedGroups> expert_strided_groups(const ParallelismConfig& p, std::optional<LayoutDim> dim);

/// Every group over the dimensions `dims` together: for each setting of the other coordinates, the ranks that
/// differ only in the coordinates of `dims`, ascending. layout_groups(p, {context, data}) is Megatron-Core's
/// data-parallel group with context parallelism (the ranks that hold the same parameters); with one dimension
/// it equals layout_groups(p, dim).
CommPattern layout_groups(const ParallelismConfig& p, std::span<const LayoutDim> dims);

/// Every pair of neighbours along `dim`: {rank at coordinate c, the same GPU's rank at c + 1} for c <
/// size_of(dim) - 1, ordered by c outermost, then the other coordinates slowest first. Pipeline: every send of
/// one microbatch from stage s to stage s + 1.
CommPattern layout_neighbours(const ParallelismConfig& p, LayoutDim dim);

/// The neighbour pairs of the groups `along` (layout_neighbours(p, dim) is neighbour_pairs of
/// layout_strided_groups(p, dim)): {along.rank(g, c), along.rank(g, c + 1)} for c < along.size - 1, c outermost,
/// then g. Empty when along.size < 2. A pure function of along's five numbers.
CommPattern neighbour_pairs(const StridedGroups& along);

/// "TP 4 x PP 8 x DP 4": the sizes as written.
std::string layout_text(const ParallelismConfig& p);

/// A rule of the layout that a model breaks: the scenario key to blame and why.

/// The first layout rule `p` breaks for `model`, nullopt when none: tensor divides the attention heads and the
/// query groups (Megatron splits heads, Shoeybi et al. 2019); an interleaved schedule (virtual_stages > 1) needs
/// pipeline > 1; every model chunk needs a layer (num_layers >= pipeline x virtual_stages); sequence
/// parallelism needs the sequence divisible by tensor (Korthikanti et al. 2022); context parallelism needs it
/// divisible by 2 x context (the causal load-balancing split into 2 c chunks, Megatron-Core
/// get_batch_on_this_cp_rank) and, with sequence parallelism, each rank's shard divisible by tensor. The one
/// statement of these
/// rules: the scenario loader reports them at the key's location, the memory model throws on them.
std::optional<LayoutProblem> layout_problem(const ParallelismConfig& p, const ModelConfig& model);

/// The expert-parallel groups of the MoE layers: for each pipeline stage and each (expert_tensor, expert-data)
/// coordinate of its folded ranks, the `expert` ranks that share the experts between them (the all-to-all's
/// group). A stage's ranks in rank order are folded as expert_tensor fastest, then expert, then expert data.
CommPattern expert_parallel_pattern(const ParallelismConfig& p);
/// The expert-tensor-parallel groups (expert_tensor consecutive ranks).
CommPattern expert_tensor_pattern(const ParallelismConfig& p);
/// The expert x expert-tensor groups (expert x expert_tensor consecutive ranks): the allgather dispatcher's.
CommPattern expert_model_pattern(const ParallelismConfig& p);
/// The expert-data-parallel groups (ranks with the same experts: stride expert x expert_tensor): expert
/// gradients are reduced over these.
CommPattern expert_data_pattern(const ParallelismConfig& p);

/// Why the expert layout cannot fold into `p`'s ranks, "" when it can: expert and expert_tensor >= 1, their
/// product dividing tensor x context x data (Megatron-Core's folding), and 1 when the model has no experts;
/// the experts divisible by expert; the expert MLP width by expert_tensor. With the key to blame.
std::optional<LayoutProblem> expert_layout_problem(const ParallelismConfig& p, const ModelConfig& model);

/// What a layout search needs to know of the model and the cluster.
struct LayoutSearch {
  int64_t gpus = 1;          ///< GPUs of the cluster
  int64_t gpus_per_vm = 1;   ///< GPUs per VM (tensor parallelism up to 8 VMs' worth)
  /// GPUs of one NVLink domain the job uses (VmSize::domain_gpus: 64 for 16 GB200 VMs of each rack); tensor
  /// parallelism also goes up to it. 0: gpus_per_vm.
  int64_t gpus_per_domain = 0;
  int64_t heads = 1;         ///< attention heads
  int64_t query_groups = 1;  ///< key/value heads
  int64_t layers = 1;        ///< decoder layers
  int64_t global_batch = 1;  ///< sequences per step
  int64_t seq_length = 1;    ///< tokens per sequence (context parallelism is tried when sequences are long)
  int64_t experts = 0;       ///< routed experts (expert parallelism is tried for MoE models)
};

/// One candidate layout: the sizes of the dimensions, the micro batch and the virtual stages.
struct LayoutCandidate {
  ParallelismConfig parallelism;  ///< tensor, pipeline, data, virtual_stages set
  int64_t micro_batch = 1;
};

/// Every layout the search considers, in order (tensor outermost, then context, pipeline, micro batch, virtual stages,
/// each ascending): tensor a power of two up to the larger of gpus_per_vm x 8 and gpus_per_domain, dividing the heads,
/// the query groups and the GPUs; context a power of two with at least kMinContextShardTokens tokens per shard and the
/// sequence divisible by 2 x context; pipeline dividing GPUs / (t c) and the layers, or leaving at least 2 layers a
/// stage (uneven splits, layers_per_virtual_stage); data = GPUs / (t c p) dividing the global batch; expert (MoE
/// models) a power of two dividing the experts and t c d (expert_tensor 1); micro batch 1-8 dividing global batch /
/// data; virtual stages 1, 2, 4, above 1 only with pipeline > 1, layers divisible by p v and the microbatch count by p
/// (Megatron's interleaving rule). The scenario loader still judges each (memory, sequence parallelism, framework
/// rules).
std::vector<LayoutCandidate> enumerate_layouts(const LayoutSearch& search);

/// The shortest sequence shard the layout search gives a context-parallel rank: 4,096 tokens. Context
/// parallelism pays off for long sequences only: NeMo's long-context recipes use it from 16K tokens and its
/// guide recommends it when the activations of sequences of 8K or more no longer fit (NeMo Framework user
/// guide, "Context Parallelism"); below a few thousand tokens per rank the attention steps are too short to
/// hide the K/V exchange. Keeps the search of short-sequence models (GPT-3 at 2,048) what it was.
inline constexpr int64_t kMinContextShardTokens = 4096;

}  // namespace clustersim::models
