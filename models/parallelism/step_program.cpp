#include "models/parallelism/step_program.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "models/network/collective_model.hpp"
#include "models/parallelism/framework_behaviour.hpp"
#include "models/parallelism/host_queue.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/pass_cost.hpp"
#include "models/parallelism/sharded_pass.hpp"
#include "models/workload/transformer.hpp"

namespace clustersim::models {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("step program: " + message);
}

using detail::LayerOpTimes;
using detail::layer_op_times;
using detail::scaled;

/// Cost of a pass of `work` with its ops' kernel times `times` (detail::pass_cost).
PassCost pass_cost(const LayerWork& work, const LayerOpTimes& times, PassKind kind, const StepSetup& setup,
                   const ComputeModel& compute, const CommunicationModel& network, const MegatronPatterns& patterns,
                   bool recompute = true) {
  return detail::pass_cost(work, &times, kind, setup, compute, network, patterns, recompute);
}

PassCost operator+(const PassCost& a, const PassCost& b) { return detail::sum(a, b); }

}  // namespace

double optimizer_bytes_per_parameter(Precision precision) {
  const double norm = 4.0, adam = 28.0, zero_grad = 4.0;
  switch (precision) {
    case Precision::fp16: return 8.0 + norm + adam + 6.0 + zero_grad;
    case Precision::bf16:
    case Precision::fp8: return norm + adam + 6.0 + zero_grad;
    case Precision::fp32:
    case Precision::tf32: return norm + adam + zero_grad;
  }
  return norm + adam + 6.0 + zero_grad;
}

int64_t StepSetup::microbatches() const {
  const std::string why =
      batch_split_error(training.global_batch_size, training.micro_batch_size, parallelism.data);
  require(why.empty(), "global_batch_size " + why);
  return training.global_batch_size / (training.micro_batch_size * parallelism.data);
}

int64_t megatron_rank(const ParallelismConfig& p, int64_t tensor_rank, int64_t data_rank, int64_t stage) {
  std::vector<int64_t> coords(layout_dimensions().size(), 0);  // any other dimension at coordinate 0
  coords[static_cast<size_t>(LayoutDim::tensor)] = tensor_rank;
  coords[static_cast<size_t>(LayoutDim::data)] = data_rank;
  coords[static_cast<size_t>(LayoutDim::pipeline)] = stage;
  return layout_rank(p, coords);
}

CommPattern tensor_parallel_pattern(const ParallelismConfig& p) { return layout_groups(p, LayoutDim::tensor); }

CommPattern data_parallel_pattern(const ParallelismConfig& p) {
  constexpr LayoutDim kReplicas[]{LayoutDim::context, LayoutDim::data};
  return layout_groups(p, kReplicas);
}

CommPattern context_parallel_pattern(const ParallelismConfig& p) { return layout_groups(p, LayoutDim::context); }

units::Seconds pass_host_time(const LayerWork& work, PassKind kind, bool recompute,
                              const std::vector<units::Seconds>& forward_times,
                              const std::vector<units::Seconds>& recompute_times,
                              const std::vector<units::Seconds>& backward_times, units::Seconds ep_forward,
                              units::Seconds ep_backward, units::Seconds other_device) {
  const MoeIssue& issue = work.moe_issue;
  std::vector<IssuedWork> cycle;
  // `ops` in order with their times; `moe` places the MoE layer's work among them (forward indices, or backward).
  enum class Place { none, forward, backward };
  auto issue_ops = [&](const std::vector<Op>& ops, const std::vector<units::Seconds>& t, Place place,
                       units::Seconds ep) {
    for (size_t i = 0; i <= ops.size(); ++i) {
      if (issue.moe && place == Place::forward) {
        if (issue.host_waits && i == issue.host_wait) cycle.push_back({units::Seconds(0.0), kHostKernelLaunch, true});
        if (i == issue.dispatch || i == issue.combine) cycle.push_back({ep * 0.5, kHostCollectiveLaunch, false});
      } else if (issue.moe && place == Place::backward) {
        if (i == issue.backward_combine || i == issue.backward_dispatch) {
          cycle.push_back({ep * 0.5, kHostCollectiveLaunch, false});
        }
      }
      if (i < ops.size()) cycle.push_back({t[i], kHostKernelLaunch * static_cast<double>(ops[i].kernels), false});
    }
  };
  if (kind == PassKind::forward) {
    issue_ops(work.forward, forward_times, Place::forward, ep_forward);
  } else {
    if (recompute) {
      // A full recompute re-runs the whole forward, dispatch and combine included (expert_comm).
      bool reruns = false;
      for (const Op& op : work.recompute) reruns = reruns || op.role == GemmRole::expert;
      issue_ops(work.recompute, recompute_times, reruns ? Place::forward : Place::none, ep_forward);
    }
    issue_ops(work.backward, backward_times, Place::backward, ep_backward);
  }
  if (other_device.value() > 0.0) cycle.push_back({other_device, units::Seconds(0.0), false});
  return host_cycle_time(cycle);
}

units::Seconds context_exchange_time(ContextComm comm, int64_t context, bool backward, units::Seconds attention,
                                     units::Seconds hop, units::Seconds gather, double slowdown) {
  if (context <= 1) return units::Seconds(0.0);
  const double c = d(context);
  const units::Seconds step = attention / c;
  units::Seconds exposed(0.0), hidden(0.0);
  // `times` transfers of `each`, each under one attention step.
  auto under_steps = [&](double times, units::Seconds each) {
    if (times <= 0.0) return;
    exposed += (each > step ? each - step : units::Seconds(0.0)) * times;
    hidden += std::min(each, step) * times;
  };
  if (comm == ContextComm::p2p) {
    if (!backward) {
      under_steps(c - 1.0, hop);
    } else {
      under_steps(2.0, hop);            // step 0: the next K/V in; step c - 1: the previous gradient out
      under_steps(c - 2.0, hop * 2.0);  // steps 1 .. c - 2: K/V in and a K/V gradient out
      exposed += hop;                   // the last gradient home
    }
  } else {
    under_steps(1.0, gather);
    if (backward) {
      under_steps(c - 2.0, hop);
      exposed += hop;
    }
  }
  return exposed + hidden * slowdown;
}

CommPattern pipeline_pattern(const ParallelismConfig& p) { return layout_neighbours(p, LayoutDim::pipeline); }

NodeSplit split_by_node(const CommPattern& pattern, int64_t gpus_per_node) {
  if (gpus_per_node < 1) throw std::invalid_argument("split_by_node: gpus_per_node must be >= 1");
  NodeSplit split;
  std::vector<std::vector<int64_t>> nodes;  // members per node, nodes in order of first member
  std::vector<int64_t> node_ids;
  for (const auto& group : pattern.groups) {
    nodes.clear();
    node_ids.clear();
    for (int64_t r : group) {
      const int64_t node = r / gpus_per_node;
      // A group spans few nodes (at most its size / 1): a linear search beats a map.
      size_t k = 0;
      while (k < node_ids.size() && node_ids[k] != node) ++k;
      if (k == node_ids.size()) {
        node_ids.push_back(node);
        nodes.emplace_back();
      }
      nodes[k].push_back(r);
    }
    for (const auto& n : nodes) {
      if (n.size() != nodes.front().size()) return {};
    }
    for (const auto& n : nodes) split.intra.groups.push_back(n);
    for (size_t i = 0; i < nodes.front().size(); ++i) {
      std::vector<int64_t> rail;
      for (const auto& n : nodes) rail.push_back(n[i]);
      split.inter.groups.push_back(std::move(rail));
    }
  }
  return split;
}

const CommPattern& LazyPattern::build_once() const {
  std::call_once(once_, [this] {
    pattern_ = build_ != nullptr ? build_(*owner_) : std::make_shared<const CommPattern>();
    built_.store(true, std::memory_order_release);
  });
  return *pattern_;
}

void LazyPattern::set(CommPattern pattern) {
  bool given = false;
  std::call_once(once_, [&] {
    pattern_ = std::make_shared<const CommPattern>(std::move(pattern));
    built_.store(true, std::memory_order_release);
    given = true;
  });
  if (!given) throw std::logic_error("LazyPattern::set: the pattern is already built");
}

std::shared_ptr<const CommPattern> PatternStore::groups(const StridedGroups& s) {
  return find_or_build({0, s.count, s.size, s.stride, s.per_block, s.block_step}, s);
}

std::shared_ptr<const CommPattern> PatternStore::neighbours(const StridedGroups& s) {
  return find_or_build({1, s.count, s.size, s.stride, s.per_block, s.block_step}, s);
}

size_t PatternStore::size() const {
  std::lock_guard lock(mutex_);
  return patterns_.size();
}

std::shared_ptr<const CommPattern> PatternStore::find_or_build(const Key& key, const StridedGroups& s) {
  const auto find = [&]() -> std::shared_ptr<const CommPattern> {
    for (const auto& [k, pattern] : patterns_) {
      if (k == key) return pattern;
    }
    return nullptr;
  };
  {
    std::lock_guard lock(mutex_);
    if (auto found = find()) return found;
  }
  // Built outside the lock (another thread may build the same one: the first stored is kept, same groups).
  auto built = std::make_shared<const CommPattern>(key[0] == 0 ? s.pattern() : neighbour_pairs(s));
  // Ranks held, from the five numbers: count groups of size, or (size - 1) x count pairs (none below size 2).
  const int64_t ranks = key[0] == 0 ? s.count * s.size : 2 * s.count * std::max<int64_t>(s.size - 1, 0);
  std::lock_guard lock(mutex_);
  if (auto found = find()) return found;
  if (patterns_.size() >= kMaxPatterns || ranks_ + ranks > kMaxRanks) {
    patterns_.clear();
    ranks_ = 0;
  }
  patterns_.emplace_back(key, built);
  ranks_ += ranks;
  return built;
}

namespace {

/// The pattern of the strided groups `s`: from the owner's store when it has one, built alone otherwise.
std::shared_ptr<const CommPattern> strided(const MegatronPatterns& m, const StridedGroups& s) {
  return m.store ? m.store->groups(s) : std::make_shared<const CommPattern>(s.pattern());
}

/// An expert pattern: strided when expert_strided_groups(p, dim) is, else `folded(p)`.
std::shared_ptr<const CommPattern> expert_groups(const MegatronPatterns& m, std::optional<LayoutDim> dim,
                                                 CommPattern (*folded)(const ParallelismConfig&)) {
  if (const std::optional<StridedGroups> s = expert_strided_groups(m.parallelism, dim)) return strided(m, *s);
  return std::make_shared<const CommPattern>(folded(m.parallelism));
}

}  // namespace

MegatronPatterns::MegatronPatterns(const ParallelismConfig& p, int64_t gpus_per_node_,
                                   std::shared_ptr<PatternStore> store_)
    : parallelism(p), gpus_per_node(gpus_per_node_), store(std::move(store_)) {
  if (gpus_per_node < 1) throw std::invalid_argument("MegatronPatterns: gpus_per_node must be >= 1");
  // Each the same groups as the function named in its member's comment (layout.hpp, step_program.hpp).
  tensor.bind(this, [](const MegatronPatterns& m) {
    return strided(m, layout_strided_groups(m.parallelism, LayoutDim::tensor));
  });
  data.bind(this, [](const MegatronPatterns& m) {
    constexpr LayoutDim kReplicas[]{LayoutDim::context, LayoutDim::data};
    if (const std::optional<StridedGroups> s = layout_strided_groups(m.parallelism, kReplicas)) return strided(m, *s);
    return std::make_shared<const CommPattern>(data_parallel_pattern(m.parallelism));
  });
  pipeline.bind(this, [](const MegatronPatterns& m) {
    const StridedGroups along = layout_strided_groups(m.parallelism, LayoutDim::pipeline);
    return m.store ? m.store->neighbours(along) : std::make_shared<const CommPattern>(neighbour_pairs(along));
  });
  context.bind(this, [](const MegatronPatterns& m) {
    return strided(m, layout_strided_groups(m.parallelism, LayoutDim::context));
  });
  expert.bind(this, [](const MegatronPatterns& m) {
    return expert_groups(m, LayoutDim::expert, expert_parallel_pattern);
  });
  expert_tensor.bind(this, [](const MegatronPatterns& m) {
    return expert_groups(m, LayoutDim::expert_tensor, expert_tensor_pattern);
  });
  expert_model.bind(this, [](const MegatronPatterns& m) {
    return expert_groups(m, std::nullopt, expert_model_pattern);
  });
  expert_data.bind(this, [](const MegatronPatterns& m) {
    return expert_groups(m, LayoutDim::data, expert_data_pattern);
  });
  expert_intra_node.bind(this, [](const MegatronPatterns& m) {
    return std::make_shared<const CommPattern>(
        m.parallelism.expert > 1 ? split_by_node(m.expert.get(), m.gpus_per_node).intra : CommPattern{});
  });
  expert_inter_node.bind(this, [](const MegatronPatterns& m) {
    return std::make_shared<const CommPattern>(
        m.parallelism.expert > 1 ? split_by_node(m.expert.get(), m.gpus_per_node).inter : CommPattern{});
  });
}

units::Seconds expert_comm_time(const ExpertTraffic& traffic, const MegatronPatterns& patterns,
                                const CommunicationModel& network, units::Seconds hidden_under, double slowdown) {
  units::Seconds t(0.0);
  if (traffic.dispatcher == MoeDispatcher::flex) {
    if (traffic.token_bytes.value() > 0.0) {
      const CommPattern& intra = patterns.expert_intra_node.get();
      if (intra.groups.empty()) {
        throw std::invalid_argument("the flex (DeepEP) dispatcher needs every expert-parallel group to have the "
                                    "same number of ranks on each of its nodes");
      }
      const auto ranks = static_cast<int64_t>(patterns.expert.get().groups.front().size());
      const auto per_node = static_cast<int64_t>(intra.groups.front().size());
      const int64_t nodes = ranks / per_node;
      const FlexDispatchCopies copies = flex_dispatch_copies(traffic.experts, traffic.topk, ranks, per_node);
      units::Seconds rdma(0.0), nvlink(0.0);
      if (nodes > 1 && copies.network > 0.0) {
        const double share = static_cast<double>(nodes) / static_cast<double>(nodes - 1);
        rdma = network.collective_time(CollectiveOp::all_to_all, patterns.expert_inter_node.get(),
                                       traffic.token_bytes * (copies.network * share)).time;
      }
      if (per_node > 1 && copies.nvlink > 0.0) {
        const double share = static_cast<double>(per_node) / static_cast<double>(per_node - 1);
        nvlink = network.collective_time(CollectiveOp::all_to_all, patterns.expert_intra_node.get(),
                                         traffic.token_bytes * (copies.nvlink * share)).time;
      }
      t += std::max(rdma, nvlink) * 2.0;
    }
  } else if (traffic.dispatcher == MoeDispatcher::alltoall) {
    if (traffic.all_to_all_bytes.value() > 0.0) {
      t += network.collective_time(CollectiveOp::all_to_all, patterns.expert.get(), traffic.all_to_all_bytes).time * 2.0;
    }
    if (traffic.expert_tensor_bytes.value() > 0.0) {
      t += network.collective_time(CollectiveOp::all_gather, patterns.expert_tensor.get(), traffic.expert_tensor_bytes).time;
      t += network.collective_time(CollectiveOp::reduce_scatter, patterns.expert_tensor.get(), traffic.expert_tensor_bytes)
               .time;
    }
  } else if (traffic.all_gather_bytes.value() > 0.0) {
    t += network.collective_time(CollectiveOp::all_gather, patterns.expert_model.get(), traffic.all_gather_bytes).time;
    t += network.collective_time(CollectiveOp::reduce_scatter, patterns.expert_model.get(), traffic.all_gather_bytes).time;
  }
  const units::Seconds hidden = std::min(t, hidden_under);
  return t - hidden + hidden * slowdown;
}

StepProgram build_step_program(const StepSetup& setup, const ComputeModel& compute,
                               const CommunicationModel& network, const MegatronPatterns* patterns) {
  const ParallelismConfig& par = setup.parallelism;
  const ModelConfig& model = setup.model;
  require(par.tensor >= 1 && par.context >= 1 && par.pipeline >= 1 && par.data >= 1 && par.virtual_stages >= 1,
          "parallel sizes must be >= 1");
  require(par.zero_stage >= 0 && par.zero_stage <= 3, "zero_stage must be 0-3");
  require(setup.gpus_per_node >= 1, "gpus_per_node must be >= 1");
  const int64_t v = par.virtual_stages;
  require(model.num_layers >= par.pipeline * v,
          "num_layers " + std::to_string(model.num_layers) + " is fewer than pipeline x virtual_stages = " +
              std::to_string(par.pipeline * v));
  const int64_t m = setup.microbatches();
  const std::vector<int64_t> chunk_layers = layers_per_virtual_stage(model.num_layers, par);

  LayerOptions options;
  options.tensor = par.tensor;
  options.sequence_parallel = par.sequence_parallel;
  options.context = par.context;
  options.context_comm = par.context_comm;
  const std::shared_ptr<const LayerWork> shared_layer = shared_transformer_layer(model, setup.training, options);
  const LayerWork& layer = *shared_layer;
  const LayerWork head = lm_head(model, setup.training, options);
  const LayerWork embed = embedding(model, setup.training, options);
  const Precision precision = setup.training.precision;
  const LayerOpTimes layer_times = layer_op_times(layer, compute, precision);
  const LayerOpTimes head_times = layer_op_times(head, compute, precision);
  const LayerOpTimes embed_times = layer_op_times(embed, compute, precision);

  std::optional<MegatronPatterns> built;
  if (patterns == nullptr) patterns = &built.emplace(par, setup.gpus_per_node);
  const CommPattern& tp = patterns->tensor.get();
  const CommPattern& dp = patterns->data.get();
  PassCost layer_fwd = pass_cost(layer, layer_times, PassKind::forward, setup, compute, network, *patterns);
  PassCost layer_bwd = pass_cost(layer, layer_times, PassKind::backward, setup, compute, network, *patterns);
  // A layer that keeps its activations (full recompute of only recompute_num_layers of a chunk).
  PassCost layer_bwd_stored = pass_cost(layer, layer_times, PassKind::backward, setup, compute, network, *patterns, false);
  // MoE layers (model.is_moe_layer): the MLP replaced by the router and the experts, over the folded layout.
  PassCost moe_fwd, moe_bwd, moe_bwd_stored;
  // An MoE layer's attention-block and MLP-block kernel time per pass (for moe_a2a_overlap).
  units::Seconds moe_attention_fwd, moe_mlp_fwd, moe_attention_bwd, moe_mlp_bwd;
  double expert_imbalance = 1.0;
  if (model.moe()) {
    LayerOptions moe_options = options;
    moe_options.moe = true;
    moe_options.expert = par.expert;
    moe_options.expert_tensor = par.expert_tensor;
    const std::shared_ptr<const LayerWork> shared_moe_layer = shared_transformer_layer(model, setup.training, moe_options);
    const LayerWork& moe_layer = *shared_moe_layer;
    const LayerOpTimes moe_times = layer_op_times(moe_layer, compute, precision);
    moe_fwd = pass_cost(moe_layer, moe_times, PassKind::forward, setup, compute, network, *patterns);
    moe_bwd = pass_cost(moe_layer, moe_times, PassKind::backward, setup, compute, network, *patterns);
    moe_bwd_stored = pass_cost(moe_layer, moe_times, PassKind::backward, setup, compute, network, *patterns, false);
    expert_imbalance = moe_layer.expert_forward.imbalance;
    for (size_t i = 0; i < moe_layer.forward.size(); ++i) {
      (i < moe_layer.mlp_forward_begin ? moe_attention_fwd : moe_mlp_fwd) += moe_times.forward[i];
    }
    for (size_t i = 0; i < moe_layer.backward.size(); ++i) {
      (i < moe_layer.mlp_backward_end ? moe_mlp_bwd : moe_attention_bwd) += moe_times.backward[i];
    }
  }
  // The first layer of each virtual stage (layers run in virtual-stage order), to tell MoE layers apart.
  std::vector<int64_t> first_layer(chunk_layers.size(), 0);
  for (size_t k = 1; k < chunk_layers.size(); ++k) first_layer[k] = first_layer[k - 1] + chunk_layers[k - 1];
  const std::vector<double> expert_params_of_chunk = chunk_expert_parameters(model, par);

  // Parameters on one GPU of each model chunk (before ZeRO sharding).
  const std::vector<double> params_of_chunk = chunk_parameters(model, par);
  const double layer_params_per_gpu = layer_parameter_count(model) / d(par.tensor);
  const double weight_bytes = activation_bytes_per_element(precision);  // 16-bit weights (fp32 for fp32/tf32)
  const double grad_bytes = grad_reduce_bytes_per_element(setup.training);

  StepProgram program;
  program.expert_imbalance = expert_imbalance;
  program.microbatches = m;
  program.virtual_stages = v;
  program.overlap_compute_slowdown = kOverlapComputeSlowdown;
  if (par.tensor > 1) {
    program.crosses_zones.tensor_parallel =
        network.collective_time(CollectiveOp::all_reduce, tp, units::Bytes(1e6)).crosses_zones;
  }

  // Fully sharded data parallelism without pipelining (ZeRO-3 / FSDP FULL_SHARD, and FSDP's SHARD_GRAD_OP as
  // zero_stage 2): every microbatch's pass gathers each unit's parameters and reduce-scatters its gradients,
  // on a communication stream beside the compute (sharded_pass.hpp). With pipelining, FSDP keeps the
  // parameters gathered over the step's microbatches (torchtitan: reshard_after_forward off with PP) and
  // reduces once, so its traffic is the ZeRO-2 tail's: a reduce-scatter after the last backward and a
  // parameter all-gather before the next step.
  const FrameworkBehaviour framework = behaviour_of(setup.training.framework);
  // Parameters are replicated over data x context ranks (ParallelismConfig::replicas): those reduce gradients
  // and hold ZeRO shards.
  const int64_t replicas = par.replicas();
  const bool sharded_passes = replicas > 1 && par.pipeline == 1 &&
                              (par.zero_stage == 3 || (par.zero_stage == 2 && framework.per_unit_stage2));

  program.stages.resize(static_cast<size_t>(par.pipeline));
  const int64_t last_virtual = par.pipeline * v - 1;
  for (int64_t i = 0; i < par.pipeline; ++i) {
    StageProgram& stage = program.stages[static_cast<size_t>(i)];
    stage.order = stage_order(setup.schedule, i, par.pipeline, m, v);
    stage.parameters = 0.0;
    std::vector<double> chunk_params;  // parameters of each model chunk on one GPU (before ZeRO sharding)
    std::vector<double> chunk_expert_params;  // of which (MoE) routed experts
    for (int64_t c = 0; c < v; ++c) {
      const int64_t virtual_stage = c * par.pipeline + i;
      const int64_t layers = chunk_layers[static_cast<size_t>(virtual_stage)];
      const int64_t recomputing = recomputed_layers(setup.training, layers);
      // MoE layers of the chunk, and of its first `recomputing` layers (Megatron's block method).
      const int64_t first = first_layer[static_cast<size_t>(virtual_stage)];
      const int64_t moe_layers = model.moe_layers_in(first, layers);
      const int64_t moe_recomputing = model.moe_layers_in(first, recomputing);
      PassCost fwd = scaled(layer_fwd, d(layers - moe_layers)) + scaled(moe_fwd, d(moe_layers));
      PassCost bwd = scaled(layer_bwd, d(recomputing - moe_recomputing)) +
                     scaled(layer_bwd_stored, d(layers - recomputing - (moe_layers - moe_recomputing))) +
                     scaled(moe_bwd, d(moe_recomputing)) + scaled(moe_bwd_stored, d(moe_layers - moe_recomputing));
      const double chunk_parameters = params_of_chunk[static_cast<size_t>(virtual_stage)];
      const double chunk_expert_parameters = expert_params_of_chunk[static_cast<size_t>(virtual_stage)];
      PassCost embed_fwd, embed_bwd, head_fwd, head_bwd;
      if (virtual_stage == 0) {
        embed_fwd = pass_cost(embed, embed_times, PassKind::forward, setup, compute, network, *patterns);
        embed_bwd = pass_cost(embed, embed_times, PassKind::backward, setup, compute, network, *patterns);
      }
      if (virtual_stage == last_virtual) {
        head_fwd = pass_cost(head, head_times, PassKind::forward, setup, compute, network, *patterns);
        head_bwd = pass_cost(head, head_times, PassKind::backward, setup, compute, network, *patterns);
        if (model.mtp_num_layers > 0) {
          // Multi-token prediction on the last stage (Megatron-Core): per module the next tokens' embedding
          // lookup, the norms and projection, a block of the last layer's kind, and the output head again.
          const LayerWork projection = mtp_projection(model, setup.training, options);
          const LayerOpTimes projection_times = layer_op_times(projection, compute, precision);
          const bool moe_block = model.mtp_is_moe();
          const PassCost module_fwd =
              pass_cost(embed, embed_times, PassKind::forward, setup, compute, network, *patterns) +
              pass_cost(projection, projection_times, PassKind::forward, setup, compute, network, *patterns) +
              (moe_block ? moe_fwd : layer_fwd) + head_fwd;
          const PassCost module_bwd =
              pass_cost(embed, embed_times, PassKind::backward, setup, compute, network, *patterns) +
              pass_cost(projection, projection_times, PassKind::backward, setup, compute, network, *patterns) +
              (moe_block ? moe_bwd : layer_bwd) + head_bwd;
          head_fwd = head_fwd + scaled(module_fwd, d(model.mtp_num_layers));
          head_bwd = head_bwd + scaled(module_bwd, d(model.mtp_num_layers));
        }
      }
      fwd = fwd + embed_fwd + head_fwd;
      bwd = bwd + embed_bwd + head_bwd;
      if (sharded_passes) {
        // Units: the root (embedding, final norm, output layer: every parameter outside the blocks) and one per
        // transformer block. Gathers move 16-bit weights, reduce-scatters gradients in the reduce dtype.
        const double root_params = chunk_parameters - d(layers) * layer_params_per_gpu;
        auto gather = [&](double params) {
          return network.collective_time(CollectiveOp::all_gather, dp, units::Bytes(params * weight_bytes)).time;
        };
        auto reduce = [&](double params) {
          return network.collective_time(CollectiveOp::reduce_scatter, dp, units::Bytes(params * grad_bytes)).time;
        };
        const units::Seconds layer_gather = gather(layer_params_per_gpu), root_gather = gather(root_params);
        const units::Seconds layer_reduce = reduce(layer_params_per_gpu), root_reduce = reduce(root_params);
        program.crosses_zones.data_parallel =
            network.collective_time(CollectiveOp::all_gather, dp, units::Bytes(1e6)).crosses_zones;
        std::vector<ShardedUnit> forward_units, backward_units;
        forward_units.push_back({embed_fwd.compute + embed_fwd.tp_comm, root_gather, {}});
        for (int64_t l = 0; l < layers; ++l) {
          forward_units.push_back({layer_fwd.compute + layer_fwd.tp_comm, layer_gather, {}});
        }
        forward_units.push_back({head_fwd.compute + head_fwd.tp_comm, {}, {}});
        const bool backward_gathers = par.zero_stage == 3;  // SHARD_GRAD_OP keeps them until after backward
        backward_units.push_back({head_bwd.compute + head_bwd.tp_comm,
                                  backward_gathers && framework.root_reshards ? root_gather : units::Seconds(0.0),
                                  {}});
        for (int64_t l = layers; l-- > 0;) {
          const PassCost& b = l < recomputing ? layer_bwd : layer_bwd_stored;
          const bool last_block = l == layers - 1;
          const bool gathered = !backward_gathers || (last_block && !framework.last_block_reshards);
          backward_units.push_back({b.compute + b.tp_comm, gathered ? units::Seconds(0.0) : layer_gather,
                                    layer_reduce});
        }
        backward_units.push_back({embed_bwd.compute + embed_bwd.tp_comm, {}, root_reduce});
        // Memory passes the framework adds per pass, over a unit's unsharded (gathered) size on this tensor rank:
        // FSDP2 copies each gathered unit out into its parameters (read + write of the 16-bit weights) on the
        // compute stream; FSDP1 casts each unit's unsharded gradient to the reduce dtype (read 16-bit, write
        // grad_bytes) and divides it by the predivide factor (read + write) before its reduce-scatter.
        units::Seconds forward_memory(0.0), backward_memory(0.0);
        units::Seconds* added = &forward_memory;
        auto add_memory = [&](ShardedUnit& u, double bytes) {
          const units::Seconds t = compute.memory_time(units::Bytes(bytes));
          u.compute += t;
          *added += t;
        };
        const double divide_bytes = grad_bytes > weight_bytes ? weight_bytes + 3.0 * grad_bytes : 2.0 * weight_bytes;
        for (size_t k = 0; k < forward_units.size(); ++k) {
          ShardedUnit& u = forward_units[k];
          if (framework.copies_out_gathered_parameters && u.gather.value() > 0.0) {
            add_memory(u, 2.0 * weight_bytes * (k == 0 ? root_params : layer_params_per_gpu));
          }
        }
        added = &backward_memory;
        for (size_t k = 0; k < backward_units.size(); ++k) {
          ShardedUnit& u = backward_units[k];
          const bool root = k == 0 || k + 1 == backward_units.size();
          const double unsharded = root ? root_params : layer_params_per_gpu;
          if (framework.copies_out_gathered_parameters && u.gather.value() > 0.0) {
            add_memory(u, 2.0 * weight_bytes * unsharded);
          }
          if (framework.divides_unsharded_gradient && u.reduce.value() > 0.0) add_memory(u, divide_bytes * unsharded);
        }
        fwd.dp_comm =
            sharded_forward(forward_units, framework.gathers_in_flight, kOverlapComputeSlowdown).exposed();
        bwd.dp_comm = sharded_backward(backward_units, framework.one_reduce_scatter_in_flight,
                                       kOverlapComputeSlowdown)
                          .exposed();
        fwd.compute += forward_memory;
        fwd.memory_bound += forward_memory;
        bwd.compute += backward_memory;
        bwd.memory_bound += backward_memory;
      }
      if (par.zero_stage == 2 && framework.zero2_reduces_every_microbatch && replicas > 1 && !sharded_passes) {
        // DeepSpeed ZeRO-2 all-reduces the chunk's gradient buckets in every microbatch's backward, on the compute
        // stream (overlap_comm off for stages 1-2).
        bwd.dp_comm += network.collective_time(CollectiveOp::all_reduce, dp,
                                               units::Bytes(chunk_parameters * grad_bytes)).time;
      }
      const bool accumulates_unsharded = framework.unsharded_under_pipelining && par.pipeline > 1 &&
                                         par.zero_stage >= 2 && replicas > 1 && m > 1;
      if (!setup.training.gradient_accumulation_fusion || accumulates_unsharded) {
        // Unfused gradient accumulation (Megatron-LM 2021, DDP "local"; FSDP's unsharded accumulation under
        // pipelining): after each microbatch's backward, a kernel reads the 16-bit weight gradient the wgrad
        // GEMM wrote and reads and writes the accumulated gradient (grad_bytes wide) for every parameter of the
        // chunk.
        const units::Seconds accumulate =
            compute.memory_time(units::Bytes(chunk_parameters * (weight_bytes + 2.0 * grad_bytes)));
        bwd.compute += accumulate;
        bwd.memory_bound += accumulate;
      }
      stage.forward.push_back(fwd);
      stage.backward.push_back(bwd);
      if (setup.training.moe_a2a_overlap) {
        // Merged passes (Megatron-Core combined 1F1B, after DeepSeek-V3's Sec. 3.2.1 Figure 4): layer by layer,
        // the backward's combine gradient runs beside the forward's attention block, the forward's dispatch
        // beside the backward's MLP block, the backward's dispatch gradient beside the forward's MLP block and
        // the forward's combine beside the backward's attention block; each all-to-all (half a pass's dispatch
        // and combine) shows what its partner block does not cover, and slows that block by
        // kOverlapComputeSlowdown of what it covers. Without full recompute the backward reruns no expert:
        // every MoE layer's backward costs moe_bwd_stored's.
        const auto beside = [](units::Seconds a2a, units::Seconds partner) {
          const units::Seconds hidden = std::min(a2a, partner);
          return a2a - hidden + hidden * kOverlapComputeSlowdown;
        };
        const units::Seconds f_half = moe_fwd.ep_comm * 0.5, b_half = moe_bwd_stored.ep_comm * 0.5;
        const units::Seconds f_merged = beside(f_half, moe_mlp_bwd) + beside(f_half, moe_attention_bwd);
        const units::Seconds b_merged = beside(b_half, moe_attention_fwd) + beside(b_half, moe_mlp_fwd);
        PassCost fwd_paired = fwd, bwd_paired = bwd;
        // The chunk's MoE layers, with the multi-token-prediction blocks on the last one.
        const int64_t mtp_blocks = virtual_stage == last_virtual && model.mtp_is_moe() ? model.mtp_num_layers : 0;
        const double moe = d(moe_layers + mtp_blocks);
        fwd_paired.ep_comm -= (moe_fwd.ep_comm - f_merged) * moe;
        bwd_paired.ep_comm -= (moe_bwd_stored.ep_comm - b_merged) * moe;
        stage.forward_paired.push_back(fwd_paired);
        stage.backward_paired.push_back(bwd_paired);
      }
      chunk_params.push_back(chunk_parameters);
      chunk_expert_params.push_back(chunk_expert_parameters);
      stage.parameters += chunk_parameters + chunk_expert_parameters;
      stage.expert_parameters += chunk_expert_parameters;
    }

    // Dense parameters reduce and shard over data x context, routed experts over the expert-data ranks.
    const double dense_parameters = stage.parameters - stage.expert_parameters;
    const double shard = par.zero_stage >= 1 ? 1.0 / d(replicas) : 1.0;
    const double expert_shard = par.zero_stage >= 1 ? 1.0 / d(par.expert_replicas()) : 1.0;
    // The expert gradients' share of a reduction (or of the parameter all-gather), over the expert-data groups.
    auto expert_collective = [&](CollectiveOp op, double params, double bytes_each) {
      if (params <= 0.0) return units::Seconds(0.0);
      return network.collective_time(op, patterns->expert_data.get(), units::Bytes(params * bytes_each)).time;
    };
    stage.grad_buckets =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(stage.parameters / kGradientBucketParameters)));
    stage.overlap_grad_sync = par.overlap_grad_reduce;
    const bool reduced_in_passes = par.zero_stage == 2 && framework.zero2_reduces_every_microbatch;
    if (!sharded_passes && !reduced_in_passes) {
      // ZeRO 0: all-reduce of the gradients; ZeRO 1-3: reduce-scatter (the distributed optimizer; FSDP with
      // pipelining), or DeepSpeed's all-reduce per bucket.
      const CollectiveOp reduce = par.zero_stage == 0 || framework.zero12_all_reduce ? CollectiveOp::all_reduce
                                                                                      : CollectiveOp::reduce_scatter;
      const CollectiveTiming sync = network.collective_time(reduce, dp, units::Bytes(dense_parameters * grad_bytes));
      stage.grad_sync = sync.time + expert_collective(reduce, stage.expert_parameters, grad_bytes);
      if (par.overlap_grad_reduce && replicas > 1) {
        // Overlapped with backward: chunk by chunk (each chunk's buckets once its last backward has begun).
        stage.grad_sync = units::Seconds(0.0);
        for (size_t k = 0; k < chunk_params.size(); ++k) {
          const double params = chunk_params[k];
          const units::Seconds t = network.collective_time(reduce, dp, units::Bytes(params * grad_bytes)).time +
                                   expert_collective(reduce, chunk_expert_params[k], grad_bytes);
          stage.chunk_grad_sync.push_back(t);
          stage.chunk_grad_buckets.push_back(
              std::max<int64_t>(1, static_cast<int64_t>(std::ceil((params + chunk_expert_params[k]) /
                                                                  kGradientBucketParameters))));
          stage.grad_sync += t;
        }
      }
      program.crosses_zones.data_parallel = program.crosses_zones.data_parallel || sync.crosses_zones;
    }
    if (par.zero_stage >= 1 && !sharded_passes) {
      stage.param_gather =
          network.collective_time(CollectiveOp::all_gather, dp, units::Bytes(dense_parameters * weight_bytes)).time +
          expert_collective(CollectiveOp::all_gather, stage.expert_parameters, weight_bytes);
      if (par.overlap_param_gather && framework.param_gather_can_overlap) {
        // Megatron --overlap-param-gather: the all-gather of the updated parameters runs bucket by bucket under
        // the next step's first forward pass of this stage; only the part longer than that pass is exposed.
        // The forward pass it hides under runs slower while it does (kOverlapComputeSlowdown).
        const units::Seconds first_forward = stage.forward.front().total();
        const units::Seconds hidden = std::min(stage.param_gather, first_forward);
        stage.param_gather = stage.param_gather - hidden + hidden * kOverlapComputeSlowdown;
      }
    }
    stage.optimizer = compute.memory_time(units::Bytes((dense_parameters * shard + stage.expert_parameters * expert_shard) *
                                                       optimizer_bytes_per_parameter(precision)));
    if (precision == Precision::fp8) {
      // The bf16 weights are cast (and transposed) to FP8 once per step, on the first microbatch: Transformer
      // Engine caches the FP8 weights over the microbatches of a step. Read 2, write 1 + 1 bytes per weight.
      stage.optimizer += compute.memory_time(units::Bytes(stage.parameters * 4.0));
    }
  }

  if (par.pipeline > 1) {
    const double e = activation_bytes_per_element(setup.training.precision);
    // One context shard's activation with context parallelism (each context rank sends its own).
    const units::Bytes activation(d(setup.training.micro_batch_size) * d(model.seq_length / par.context) *
                                  d(model.hidden_size) * e);
    // Scatter/gather (SC'21 Sec. 4.1): each tensor rank sends 1/t of the activation to its peer of the next
    // stage, which all-gathers it over NVLink (with sequence parallelism it is split by t already, so no
    // all-gather). Without tensor parallelism the one rank sends all of it.
    const CollectiveTiming send =
        network.collective_time(CollectiveOp::send_recv, patterns->pipeline.get(), activation / d(par.tensor));
    units::Seconds transfer = send.time;
    if (par.tensor > 1 && !par.sequence_parallel) {
      transfer += network.collective_time(CollectiveOp::all_gather, tp, activation).time;
    }
    // Megatron overlaps pipeline sends only with interleaving; its 1F1B exchanges block (framework_behaviour.hpp).
    program.p2p_blocking = !par.overlap_p2p_comm || (v == 1 && framework.p2p_overlap_needs_interleaving);
    program.p2p_forward = transfer;
    program.p2p_backward = transfer;
    program.crosses_zones.pipeline = send.crosses_zones;
  }
  return program;
}

}  // namespace clustersim::models
