// The IR of one training step: per pipeline stage, the order of its forward/backward passes and what each
// costs, the pipeline transfers between stages, and the tail (data-parallel gradient sync, optimizer).
//
// Built from the model shape, the parallelism plan and the compute and communication models; executed as
// events by sim/step/pipeline_executor. One representative rank per stage ("replica" fidelity): every
// tensor-parallel rank and data-parallel replica of a stage runs the same passes.
//
// Rank layout (Megatron-LM): rank = stage * (t * d) + data_rank * t + tensor_rank, so a tensor-parallel group
// is t consecutive ranks (inside a node when t <= GPUs per node) and a data-parallel group is strided by t.
// The communication of each kind is timed as a whole-cluster pattern (every group of that kind at once), so
// data-parallel rings that share NICs or spine links slow each other down (replica fidelity: one
// representative rank per stage runs the passes; the network sees every rank's traffic).
//
// Costs per pass of one microbatch through one model chunk (l / (p v) layers; v = 1 without interleaving):
//   forward  = embedding (first virtual stage) + layers x forward ops + LM head and loss (last virtual stage)
//   backward = layers x (recompute ops + backward ops) + the same extras' backward
// ZeRO (Rajbhandari et al. 2020): stages 1-2 (Megatron's distributed optimizer) reduce-scatter the gradients,
// step the optimizer on 1/d of the parameters and all-gather the 16-bit parameters; stage 3 all-gathers each
// layer's parameters before its forward and backward and reduce-scatters its gradients after the backward,
// prefetched one layer ahead, so only the part of that traffic longer than the layer's compute is exposed.
// with 2 tensor-parallel all-reduces of b*s*h activations per layer per forward, backward and recompute.
// Pipeline transfers move one microbatch's b*s*h activation (or its gradient). Megatron's scatter/gather
// optimisation (SC'21 Sec. 4.1) sends 1/t of it per tensor rank across nodes and all-gathers it over NVLink.
// Every stage boundary and every (tensor, data) rank sends at once (the send/recv pattern).
// Gradient sync: all-reduce of the stage's parameters per tensor rank in the gradient dtype
// (fp32 for bf16/fp8/fp32/tf32, which Megatron requires via --accumulate-allreduce-grads-in-fp32; fp16 for
// fp16). Optimizer: Adam over the local parameters, memory-bound at optimizer_bytes_per_parameter.
// Without gradient-accumulation fusion every backward pass also adds its chunk's 16-bit weight gradients into
// the main-gradient buffer (a memory-bound kernel per microbatch).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "models/compute/compute_model.hpp"
#include "models/network/communication_model.hpp"
#include "models/parallelism/plan.hpp"
#include "models/parallelism/schedule.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"
#include "models/workload/transformer.hpp"

namespace clustersim::models {

/// HBM bytes per parameter of one Adam step with fp32 master weights, counted kernel by kernel in
/// Megatron-LM's mixed-precision optimizer (megatron/optimizer/optimizer.py, apex multi-tensor kernels):
///   fp16 only: unscale the fp32 main gradient and check for inf/NaN (loss scaling): read 4 + write 4;
///   gradient-norm clipping: L2 norm reads the gradient, 4;
///   Adam (apex FusedAdam): reads gradient, master weight, m, v (16), writes master weight, m, v (12);
///   16-bit weights: copy main to model params, read 4 + write 2 (none for fp32/tf32: the model is the master);
///   zeroing the gradient buffer for the next step: write 4.
/// fp16 50, bf16/fp8 42, fp32/tf32 36 bytes.
double optimizer_bytes_per_parameter(Precision precision);

/// Everything that shapes one training step, besides hardware.
struct StepSetup {
  ModelConfig model;
  TrainingConfig training;
  ParallelismConfig parallelism;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int64_t gpus_per_node = 8;

  /// Microbatches per pipeline per step: m = global_batch / (micro_batch * data).
  [[nodiscard]] int64_t microbatches() const;
};

/// Parameters per data-parallel gradient bucket (Megatron's DDP default bucket of 40 M parameters).
inline constexpr double kGradientBucketParameters = 40e6;

/// Cost of one pass of one microbatch through one model chunk on one GPU.
struct PassCost {
  units::Seconds compute;  ///< kernels on the compute stream
  units::Seconds attention;     ///< of compute: fused attention kernels
  units::Seconds memory_bound;  ///< of compute: memory-bound kernels (the rest of compute is GEMMs)
  units::Seconds tp_comm;  ///< tensor-parallel collectives, serialised with the compute (not overlapped)
  units::Seconds dp_comm;  ///< ZeRO-3 parameter all-gathers / gradient reduce-scatters not hidden by prefetch
  /// Context-parallel K/V exchange not hidden under the attention kernels, plus the slowdown of the attention
  /// it hides under (context_exchange_time).
  units::Seconds cp_comm;
  /// MoE layers' dispatch and combine (all-to-all, and the expert-tensor all-gather / reduce-scatter) not hidden
  /// under the shared expert (expert_comm_time).
  units::Seconds ep_comm;
  /// GPU idle time waiting on the host (CPU) to issue kernels (pass_host_time): after an MoE layer's
  /// device-to-host synchronisation, or where the host issues more than the GPU runs.
  units::Seconds host;
  units::Flops flops;      ///< math executed (counts recomputation)
  [[nodiscard]] units::Seconds total() const { return compute + tp_comm + dp_comm + cp_comm + ep_comm + host; }
};

struct StageProgram {
  std::vector<ScheduledPass> order;  ///< the schedule's pass order on this stage
  std::vector<PassCost> forward;     ///< per model chunk (v entries)
  std::vector<PassCost> backward;    ///< per model chunk, includes recomputation
  /// With moe_a2a_overlap (per model chunk; empty without): the costs of a forward that runs merged with the
  /// backward after it in `order`, and of a backward merged with the forward before it (the steady state of
  /// 1F1B); passes without such a neighbour (warm-up forwards, cool-down backwards) cost `forward` / `backward`.
  /// Each MoE layer's dispatch and combine hide under the partner's compute of one MoE layer:
  /// max(0, a - c) exposed, plus kOverlapComputeSlowdown x min(a, c) for the compute they share SMs with.
  std::vector<PassCost> forward_paired;
  std::vector<PassCost> backward_paired;
  /// Data-parallel gradient reduction after the last backward: all-reduce (ZeRO 0), reduce-scatter (ZeRO 1-2),
  /// none (ZeRO 3 reduces per layer inside the passes).
  units::Seconds grad_sync;
  int64_t grad_buckets = 1;          ///< buckets of kGradientBucketParameters the reduction is split into
  /// Reduction overlapped with backward, bucket by bucket: each model chunk's gradients are final in that
  /// chunk's last backward pass, so its buckets' reduction starts with that pass on the stage's
  /// data-parallel stream (Megatron-Core --overlap-grad-reduce: with interleaving, chunk by chunk through the
  /// pipeline's cool-down; PyTorch DDP: during the last backward).
  bool overlap_grad_sync = false;
  /// Per model chunk (v entries, or empty): its share of grad_sync and its bucket count. Empty: the whole
  /// grad_sync belongs to the stage's final backward pass.
  std::vector<units::Seconds> chunk_grad_sync;
  std::vector<int64_t> chunk_grad_buckets;
  units::Seconds optimizer;          ///< optimizer step over the local (ZeRO: sharded) parameters
  units::Seconds param_gather;       ///< ZeRO 1-2: all-gather of the updated parameters after the optimizer
  double parameters = 0.0;           ///< parameters held by one GPU of this stage (before ZeRO sharding)
  /// Of which routed-expert parameters (MoE), reduced and ZeRO-sharded over the expert-data ranks.
  double expert_parameters = 0.0;
};

/// Which kinds of communication cross an availability-zone boundary.
struct ZoneCrossings {
  bool tensor_parallel = false;
  bool pipeline = false;
  bool data_parallel = false;
  [[nodiscard]] bool any() const { return tensor_parallel || pipeline || data_parallel; }
};

struct StepProgram {
  int64_t microbatches = 0;
  int64_t virtual_stages = 1;        ///< model chunks per rank, v
  std::vector<StageProgram> stages;  ///< p entries
  units::Seconds p2p_forward;        ///< activation transfer stage i -> i+1, per microbatch
  units::Seconds p2p_backward;       ///< gradient transfer stage i+1 -> i, per microbatch
  /// The sender's stream waits for each transfer to complete (ParallelismConfig::overlap_p2p_comm false).
  bool p2p_blocking = false;
  /// Compute slows by this fraction of the time an overlapped data-parallel reduction runs beside it
  /// (kOverlapComputeSlowdown, communication_model.hpp); the executor adds it to the stage's exposed
  /// gradient synchronisation.
  double overlap_compute_slowdown = 0.0;
  ZoneCrossings crosses_zones;
  /// The busiest expert-parallel rank's routed tokens over the mean (moe_rank_imbalance; 1 for dense models).
  double expert_imbalance = 1.0;
};

struct MegatronPatterns;
struct StridedGroups;

/// Whole-cluster patterns shared by the layouts of one cluster. A regular pattern (the groups of a
/// StridedGroups, or its neighbour pairs) is a pure function of the StridedGroups' five numbers, and many
/// layouts have the same ones (on a fixed number of GPUs the pipeline pairs depend on the pipeline size
/// alone, the tensor groups on the tensor size alone), so one copy serves them all: built once, and hashed once
/// (CommPattern::hash caches its value), instead of once per layout. Exact: the same groups, rank for rank, as
/// building them again. Thread-safe; bounded (cleared past kMaxPatterns patterns or kMaxRanks ranks held;
/// callers hold their own references).
class PatternStore {
 public:
  /// Ranks held before the store is cleared (about 8 bytes each plus each group's vector).
  static constexpr int64_t kMaxRanks = int64_t{1} << 22;
  /// Patterns held before the store is cleared (a look-up reads them in turn).
  static constexpr size_t kMaxPatterns = 256;

  /// s.pattern(), shared.
  [[nodiscard]] std::shared_ptr<const CommPattern> groups(const StridedGroups& s);
  /// neighbour_pairs(s) (layout.hpp), shared.
  [[nodiscard]] std::shared_ptr<const CommPattern> neighbours(const StridedGroups& s);
  /// Patterns held now.
  [[nodiscard]] size_t size() const;

 private:
  /// (kind: 0 groups, 1 neighbour pairs; count, size, stride, per_block, block_step).
  using Key = std::array<int64_t, 6>;
  std::shared_ptr<const CommPattern> find_or_build(const Key& key, const StridedGroups& s);
  mutable std::mutex mutex_;
  std::vector<std::pair<Key, std::shared_ptr<const CommPattern>>> patterns_;
  int64_t ranks_ = 0;  ///< ranks held by patterns_
};

/// One whole-cluster pattern of a MegatronPatterns, built the first time get() is called (a dense model never
/// builds its expert or context patterns: at 131,072 GPUs each is 131,072 ranks in thousands of vectors).
/// Safe to call get() from several threads at once (sweep threads share the cached patterns): the first call
/// builds, the others wait for it (std::call_once); later calls return without the once-flag. The pattern is
/// held by a shared pointer, so that layouts with the same groups can share one (PatternStore). Neither
/// copyable nor movable.
class LazyPattern {
 public:
  /// Builds the pattern from its owner's layout.
  using Build = std::shared_ptr<const CommPattern> (*)(const MegatronPatterns& owner);

  /// An empty pattern until set() (no builder).
  LazyPattern() = default;
  LazyPattern(const LazyPattern&) = delete;
  LazyPattern& operator=(const LazyPattern&) = delete;

  /// The pattern: built by the builder on the first call (empty without one, or what set() gave).
  [[nodiscard]] const CommPattern& get() const {
    if (built_.load(std::memory_order_acquire)) return *pattern_;
    return build_once();
  }
  /// Whether the pattern exists yet (get() or set() has run).
  [[nodiscard]] bool built() const { return built_.load(std::memory_order_acquire); }
  /// Gives the pattern outright (tests). Throws std::logic_error when it was already built or set; not safe
  /// beside a concurrent get().
  void set(CommPattern pattern);
  /// Makes `build(owner)` the builder; before any get(), by the owner's constructor.
  void bind(const MegatronPatterns* owner, Build build) {
    owner_ = owner;
    build_ = build;
  }

 private:
  const CommPattern& build_once() const;  ///< the first get(): builds under the once-flag
  const MegatronPatterns* owner_ = nullptr;
  Build build_ = nullptr;
  mutable std::once_flag once_;
  mutable std::shared_ptr<const CommPattern> pattern_;  ///< non-null once built_
  mutable std::atomic<bool> built_{false};
};

/// The whole-cluster communication patterns of a Megatron layout (see the functions below), each built on
/// first use (LazyPattern::get()). They depend on the layout's dimensions and the GPUs per node only, so callers
/// that simulate many configurations of one layout keep them (one shared, immutable-once-built object).
struct MegatronPatterns {
  /// Every pattern empty until set (tests that give their own groups).
  MegatronPatterns() = default;
  /// The patterns of `p` on nodes of `gpus_per_node` GPUs (>= 1), each built when first asked for; the regular
  /// ones (tensor, data, pipeline, context, and the folded expert groups when they are strided) taken from
  /// `store` when given (shared with the other layouts of the store's cluster), built for this layout alone
  /// otherwise. The same groups either way.
  MegatronPatterns(const ParallelismConfig& p, int64_t gpus_per_node, std::shared_ptr<PatternStore> store = nullptr);
  MegatronPatterns(const MegatronPatterns&) = delete;
  MegatronPatterns& operator=(const MegatronPatterns&) = delete;

  ParallelismConfig parallelism;  ///< the layout the patterns are of
  int64_t gpus_per_node = 8;      ///< GPUs per node (the node split of the expert groups)
  std::shared_ptr<PatternStore> store;  ///< where the regular patterns come from (null: built here)

  LazyPattern tensor;    ///< tensor_parallel_pattern
  LazyPattern data;      ///< data_parallel_pattern
  LazyPattern pipeline;  ///< pipeline_pattern
  LazyPattern context;   ///< context_parallel_pattern
  LazyPattern expert;         ///< expert_parallel_pattern (MoE all-to-all)
  LazyPattern expert_tensor;  ///< expert_tensor_pattern
  LazyPattern expert_model;   ///< expert_model_pattern (allgather dispatcher)
  LazyPattern expert_data;    ///< expert_data_pattern (expert gradients)
  /// The expert-parallel groups split by node (split_by_node): the members on one node (flex dispatcher's
  /// NVLink forwarding) and the members at one position on every node (its RDMA sends, rail to rail); empty
  /// when a group has unequal numbers of members on its nodes, or without expert parallelism.
  LazyPattern expert_intra_node;
  LazyPattern expert_inter_node;
};

/// `pattern`'s groups split by node of `gpus_per_node` GPUs: `intra`, for each group and node, the members on
/// that node (in group order); `inter`, for each group and position i, the i-th member on each of its nodes.
/// Both empty unless every node of every group holds the same number of its members.
struct NodeSplit {
  CommPattern intra;
  CommPattern inter;
};
NodeSplit split_by_node(const CommPattern& pattern, int64_t gpus_per_node);

/// Time of an MoE layer pass's expert-parallel traffic (`traffic`, ExpertTraffic): the dispatch and the
/// combine, each an all-to-all of traffic.all_to_all_bytes over the expert-parallel groups and, with
/// expert_tensor > 1, an all-gather (after the dispatch) or a reduce-scatter (before the combine) of
/// traffic.expert_tensor_bytes over the expert-tensor groups; with the allgather dispatcher an all-gather and
/// a reduce-scatter of traffic.all_gather_bytes over the expert x expert-tensor groups; with the flex dispatcher
/// (DeepEP) the dispatch and the combine each take max(network, NVLink): an all-to-all over
/// patterns.expert_inter_node of token_bytes x flex_dispatch_copies().network x n / (n - 1) per rank (n nodes
/// per group: that much leaves each rank), and one over patterns.expert_intra_node of token_bytes x nvlink x
/// r / (r - 1) (r members per node), the two running pipelined in one kernel. All of it is on the
/// critical path (Megatron-Core runs the dispatcher on the compute stream) except the part that runs beside
/// `hidden_under` (the shared expert with moe_shared_expert_overlap), which slows that compute by `slowdown`
/// of the hidden time.
units::Seconds expert_comm_time(const ExpertTraffic& traffic, const MegatronPatterns& patterns,
                                const CommunicationModel& network, units::Seconds hidden_under, double slowdown);

/// The host queue of one pass of one layer (host_queue.hpp): every op's kernels, each issued at
/// kHostKernelLaunch, beside the op's GPU time `op_times[i]` (forward, or recompute then backward); an MoE
/// layer's dispatch and combine (work.moe_issue), each half of the pass's exposed expert-parallel time
/// (`ep_forward` for the forward and a full recompute, `ep_backward` for the backward), issued at
/// kHostCollectiveLaunch; the host's wait for the GPU (a device-to-host copy, kHostKernelLaunch) before the
/// MoE synchronisation point of the forward and of a full recompute; the pass's other GPU time (`other_device`:
/// tensor- and context-parallel communication) last. Returns host_cycle_time of that cycle: the layer's GPU idle
/// time when the same layer repeats (layer after layer of a model chunk).
units::Seconds pass_host_time(const LayerWork& work, PassKind kind, bool recompute,
                              const std::vector<units::Seconds>& forward_times,
                              const std::vector<units::Seconds>& recompute_times,
                              const std::vector<units::Seconds>& backward_times, units::Seconds ep_forward,
                              units::Seconds ep_backward, units::Seconds other_device);

/// Exposed time of the context-parallel K/V exchange of one layer pass (PassCost::cp_comm), Megatron-Core /
/// Transformer Engine and PyTorch ring attention with c = context ranks, each step's attention kernel taking
/// 1/c of the pass's attention time `attention` (the causal work is balanced over the steps):
///   p2p forward:  c - 1 hops of the K/V block (`hop`: a ring_shift of the block, every rank at once),
///                 each under one step's attention: (c - 1) max(0, hop - a) exposed, a = attention / c;
///   p2p backward: step 0 receives the next K/V, steps 1 .. c-2 also send the previous step's K/V gradient,
///                 step c - 1 only the gradient, and the last gradient goes home after the loop
///                 (AttnFuncWithCPAndKVP2P.backward): 2 max(0, hop - a) + (c - 2) max(0, 2 hop - a) + hop;
///   all_gather forward: the all-gather of every rank's block (`gather`) under the local block's attention
///                 only: max(0, gather - a); backward: the same all-gather, then the K/V gradients ring-shifted
///                 as in p2p: max(0, gather - a) + (c - 2) max(0, hop - a) + hop.
/// The attention that hides an exchange runs slower by `slowdown` of the hidden time (the communication
/// kernels' SMs and HBM traffic; kOverlapComputeSlowdown). Zero for c = 1.
units::Seconds context_exchange_time(ContextComm comm, int64_t context, bool backward, units::Seconds attention,
                                     units::Seconds hop, units::Seconds gather, double slowdown);

/// Builds the step IR. `patterns`, when given, must be MegatronPatterns(setup.parallelism, setup.gpus_per_node)
/// (kept by the caller to skip rebuilding them); otherwise they are built, each on first use. Throws
/// std::invalid_argument on an inconsistent setup (layers not divisible by pipeline, batch not divisible by
/// micro_batch * data, heads not divisible by tensor, ...).
StepProgram build_step_program(const StepSetup& setup, const ComputeModel& compute,
                               const CommunicationModel& network, const MegatronPatterns* patterns = nullptr);

/// Global rank of (tensor rank, data rank, stage) under Megatron's order.
int64_t megatron_rank(const ParallelismConfig& p, int64_t tensor_rank, int64_t data_rank, int64_t stage);
/// Every tensor-parallel group of the cluster (t consecutive ranks each).
CommPattern tensor_parallel_pattern(const ParallelismConfig& p);
/// Every context-parallel group of the cluster (c ranks strided by t each, in ring order): the rings of ring
/// attention (CollectiveOp::ring_shift: each rank sends its K/V block to the next) and the groups of the
/// all_gather variant.
CommPattern context_parallel_pattern(const ParallelismConfig& p);
/// Every group of ranks that hold the same parameters (data x context ranks; d ranks strided by t without
/// context parallelism), all stages at once: gradients are reduced and ZeRO shards over these.
CommPattern data_parallel_pattern(const ParallelismConfig& p);
/// Every pipeline send of one microbatch: {rank at stage s, same (tensor, data) rank at stage s+1}.
CommPattern pipeline_pattern(const ParallelismConfig& p);

}  // namespace clustersim::models
