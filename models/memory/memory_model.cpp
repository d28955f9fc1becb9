#include "models/memory/memory_model.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include "models/parallelism/framework_behaviour.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/schedule.hpp"
#include "models/precision.hpp"
#include "models/workload/transformer.hpp"

namespace clustersim::models {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

// The checks below run on every call (a layout search makes tens of thousands): their messages are built only
// when a check fails (the same text as ever).
[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument("memory model: " + message); }

void require(bool ok, std::string_view message) {
  if (!ok) fail(std::string(message));
}

void require_divisible(int64_t value, int64_t by, std::string_view what, std::string_view by_what) {
  if (by > 0 && value % by == 0) return;
  fail(std::string(what) + " (" + std::to_string(value) + ") is not divisible by " + std::string(by_what) + " (" +
       std::to_string(by) + ")");
}

void check_setup(const StepSetup& setup) {
  const ModelConfig& m = setup.model;
  const ParallelismConfig& par = setup.parallelism;
  require(m.num_layers > 0 && m.hidden_size > 0 && m.num_attention_heads > 0 && m.vocab_size > 0 &&
              m.seq_length > 0,
          "num_layers, hidden_size, num_attention_heads, vocab_size and seq_length must be > 0");
  require(m.num_query_groups >= 0 && m.ffn_hidden_size >= 0, "num_query_groups and ffn_hidden_size must be >= 0");
  require(par.tensor >= 1 && par.context >= 1 && par.pipeline >= 1 && par.data >= 1 && par.virtual_stages >= 1,
          "tensor, context, pipeline, data and virtual_stages must be >= 1");
  if (par.zero_stage < 0 || par.zero_stage > 3) {
    fail("zero_stage must be 0, 1, 2 or 3 (got " + std::to_string(par.zero_stage) + ")");
  }
  require(setup.training.micro_batch_size >= 1 && setup.training.global_batch_size >= 1,
          "global_batch_size and micro_batch_size must be >= 1");
  if (m.kv_channels == 0) require_divisible(m.hidden_size, m.num_attention_heads, "hidden_size", "num_attention_heads");
  require_divisible(m.num_attention_heads, m.kv_heads(), "num_attention_heads", "num_query_groups");
  if (const auto problem = layout_problem(par, m)) require(false, problem->key + ": " + problem->message);
  if (const auto problem = expert_layout_problem(par, m)) require(false, problem->key + ": " + problem->message);
  require_divisible(m.ffn(), par.tensor, "ffn_hidden_size", "tensor");
  require_divisible(setup.training.global_batch_size, setup.training.micro_batch_size * par.data,
                    "global_batch_size", "micro_batch_size x data");
}

/// Activation extras of one microbatch: the embedding's on stage 0, chunk 0; the output layer's on the last
/// stage, last chunk (header item 4).
struct Extras {
  double embedding = 0.0;
  double output = 0.0;
};

Extras extras_per_microbatch(const StepSetup& setup) {
  const ModelConfig& m = setup.model;
  const ParallelismConfig& par = setup.parallelism;
  const double e = activation_bytes_per_element(setup.training.precision);
  const double sb = d(m.seq_length / par.context) * d(setup.training.micro_batch_size);  // this context shard's
  const double sbh = sb * d(m.hidden_size);
  const double sp_split = par.sequence_parallel ? d(par.tensor) : 1.0;
  Extras x;
  x.embedding = 8.0 * sb + sbh / sp_split;
  x.output = 2.0 * e * sbh / sp_split + 4.0 * sb * d(m.vocab_size) / d(par.tensor);
  return x;
}

/// Peak of one stage's stored activations over its pass order.
struct InFlight {
  double bytes = 0.0;
  int64_t microbatches = 0;
  double equivalents = 0.0;
};

InFlight walk_order(const StepSetup& setup, int64_t stage, int64_t m, double chunk_layer_bytes,
                    const Extras& extras) {
  const ParallelismConfig& par = setup.parallelism;
  const int64_t v = par.virtual_stages;
  const std::vector<ScheduledPass> order = stage_order(setup.schedule, stage, par.pipeline, m, v);
  auto chunk_bytes = [&](int64_t chunk) {
    double bytes = chunk_layer_bytes;
    if (stage == 0 && chunk == 0) bytes += extras.embedding;
    if (stage == par.pipeline - 1 && chunk == v - 1) bytes += extras.output;
    return bytes;
  };
  std::vector<int64_t> chunks_held(static_cast<size_t>(m), 0);
  int64_t distinct = 0;
  int64_t units = 0;
  double bytes = 0.0;
  InFlight peak;
  for (const ScheduledPass& pass : order) {
    int64_t& held = chunks_held[static_cast<size_t>(pass.microbatch)];
    if (pass.kind == PassKind::forward) {
      if (held++ == 0) ++distinct;
      ++units;
      bytes += chunk_bytes(pass.chunk);
      if (bytes > peak.bytes) {
        peak.bytes = bytes;
        peak.microbatches = distinct;
        peak.equivalents = d(units) / d(v);
      }
    } else {
      if (--held == 0) --distinct;
      --units;
      bytes -= chunk_bytes(pass.chunk);
    }
  }
  return peak;
}

/// What walk_order reads, exactly: the schedule, the stage, p, m, v and the bytes of each chunk's pass
/// (chunk_layer_bytes for every chunk, plus the embedding extra on stage 0's chunk 0 and the output extra on the
/// last stage's chunk v - 1; the extras a stage does not add are kept as 0 so that they do not split the key).
/// The doubles are compared by their bit patterns: equal keys give walk_order the same arguments.
struct WalkKey {
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int64_t stage = 0, stages = 0, microbatches = 0, virtual_stages = 0;
  uint64_t chunk_layer_bytes = 0, embedding = 0, output = 0;
  bool operator==(const WalkKey&) const = default;
};

struct WalkKeyHash {
  size_t operator()(const WalkKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.schedule);
    for (const uint64_t x : {static_cast<uint64_t>(k.stage), static_cast<uint64_t>(k.stages),
                             static_cast<uint64_t>(k.microbatches), static_cast<uint64_t>(k.virtual_stages),
                             k.chunk_layer_bytes, k.embedding, k.output}) {
      h = (h ^ x) * 0x9E3779B97F4A7C15ULL;
      h ^= h >> 29;
    }
    return static_cast<size_t>(h);
  }
};

/// The peaks walk_order found, by their exact inputs, shared by all threads (a sweep's screening computes a
/// layout's memory once per trial setting, and its points' runs compute it again with the same inputs, on other
/// threads). walk_order is a pure function of its key, so a cached peak is the one walk_order returns, bit for
/// bit. Bounded: emptied when it reaches kMaxEntries (about 100 B an entry).
struct WalkCache {
  static constexpr size_t kMaxEntries = size_t{1} << 16;
  std::mutex mutex;
  std::unordered_map<WalkKey, InFlight, WalkKeyHash> peaks;
};

WalkCache& walk_cache() {
  static WalkCache cache;
  return cache;
}

/// walk_order through walk_cache(): the same InFlight, computed at most once per key while it is cached. The
/// walk itself runs outside the lock (two threads may both compute a new key: the same value).
InFlight cached_walk_order(const StepSetup& setup, int64_t stage, int64_t m, double chunk_layer_bytes,
                           const Extras& extras) {
  const ParallelismConfig& par = setup.parallelism;
  WalkKey key;
  key.schedule = setup.schedule;
  key.stage = stage;
  key.stages = par.pipeline;
  key.microbatches = m;
  key.virtual_stages = par.virtual_stages;
  key.chunk_layer_bytes = std::bit_cast<uint64_t>(chunk_layer_bytes);
  key.embedding = stage == 0 ? std::bit_cast<uint64_t>(extras.embedding) : 0;
  key.output = stage == par.pipeline - 1 ? std::bit_cast<uint64_t>(extras.output) : 0;
  WalkCache& cache = walk_cache();
  {
    std::lock_guard lock(cache.mutex);
    if (const auto it = cache.peaks.find(key); it != cache.peaks.end()) return it->second;
  }
  const InFlight peak = walk_order(setup, stage, m, chunk_layer_bytes, extras);
  std::lock_guard lock(cache.mutex);
  if (cache.peaks.size() >= WalkCache::kMaxEntries) cache.peaks.clear();
  cache.peaks.emplace(key, peak);
  return peak;
}

std::string fixed1(double value) { return fixed_text(value, 1); }

std::string fixed2(double value) { return fixed_text(value, 2); }

std::string verdict_of(const MemoryReport& report, const DeviceSpec& device) {
  const StageMemory& s = report.stages[static_cast<size_t>(report.peak_stage)];
  std::string capacity;
  if (device.memory_quoted_in_gib) {
    capacity = fixed1(units::in_gib(report.capacity)) + " GiB";
  } else {
    capacity = fixed1(report.capacity.value() / 1e9) + " GB (" + fixed1(units::in_gib(report.capacity)) + " GiB)";
  }
  std::string in_flight = std::to_string(s.microbatches_in_flight) +
                          (s.microbatches_in_flight == 1 ? " microbatch in flight" : " microbatches in flight");
  if (s.microbatch_equivalents != static_cast<double>(s.microbatches_in_flight)) {
    in_flight += ", " + fixed2(s.microbatch_equivalents) + " microbatches' worth";
  }
  std::string text = std::string(report.fits ? "fits: " : "out of memory: ") + "stage " +
                     std::to_string(report.peak_stage) + " needs " + fixed1(units::in_gib(report.peak)) +
                     " GiB of " + capacity + ": weights " + fixed1(units::in_gib(s.weights)) + ", gradients " +
                     fixed1(units::in_gib(s.gradients)) + ", optimizer " +
                     fixed1(units::in_gib(s.optimizer_states)) + ", activations " +
                     fixed1(units::in_gib(s.activations)) + " (" + in_flight + ")";
  if (s.transient.value() > 0.0) text += ", transient " + fixed1(units::in_gib(s.transient));
  text += ", reserve " + fixed1(units::in_gib(s.framework_reserve)) + " GiB";
  return text;
}

}  // namespace

std::string fixed_text(double value, int decimals) {
  // The longest fixed text of a double with 17 decimals: sign, 309 integer digits, the point, 17 decimals.
  char buffer[400];
  const std::to_chars_result written =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
  if (written.ec != std::errc()) throw std::invalid_argument("fixed_text: no room");
  return std::string(buffer, std::min<std::ptrdiff_t>(written.ptr - buffer, 31));
}

ParameterBytes bytes_per_parameter(Precision precision) {
  switch (precision) {
    case Precision::fp32:
    case Precision::tf32: return {4.0, 4.0, 8.0};
    case Precision::fp16: return {2.0, 2.0, 12.0};
    case Precision::bf16:
    case Precision::fp8: return {2.0, 4.0, 12.0};
  }
  throw std::invalid_argument("memory model: unknown precision");
}

units::Bytes layer_activation_bytes(const ModelConfig& m, const TrainingConfig& training,
                                    const ParallelismConfig& par) {
  require(par.tensor >= 1, "tensor must be >= 1");
  require_divisible(m.num_attention_heads, par.tensor, "num_attention_heads", "tensor");
  require_divisible(m.ffn(), par.tensor, "ffn_hidden_size", "tensor");
  const double e = activation_bytes_per_element(training.precision);
  const double t = d(par.tensor);
  const double h = d(m.hidden_size);
  require(par.context >= 1 && m.seq_length % par.context == 0, "seq_length must be divisible by context");
  // This context shard's tokens; the unfused attention scores are its s/c queries against all s keys.
  const double sb = d(m.seq_length / par.context) * d(training.micro_batch_size);
  const double sbh = sb * h;
  const double sp_split = par.sequence_parallel ? t : 1.0;
  if (training.activation_recompute == Recompute::full) return units::Bytes(e * sbh / sp_split);

  const double kv = d(m.kv_heads()) * d(m.head_dim());
  if (training.activation_recompute == Recompute::selective_op) {
    // torchtitan's per-op policy saves the outputs of every other matmul (Q, V, gate or fc1, down / fc2) and of
    // the attention kernel (its output and fp32 log-sum-exp), plus the block's input (the checkpoint's);
    // everything else is recomputed.
    const double f = d(m.ffn());
    const double saved = sb * (h + kv + f + h) * e / t + sb * h * e / t + 4.0 * d(m.num_attention_heads) * sb / t +
                         sbh * e / sp_split;
    return units::Bytes(saved);
  }
  // Selective recompute of a dense MLP (module mlp) stores only its input (the pre-norm's output, in
  // `replicated`); of the pre-norms (layernorm) only their inputs, not their outputs (2 e sbh of the 4 e).
  const double mlp = training.recomputes(RecomputeModule::mlp) ? 0.0 : (m.gated_mlp ? 3.0 : 2.0) * d(m.ffn()) / h;
  const double replicated = sbh * ((training.recomputes(RecomputeModule::layernorm) ? 2.0 : 4.0) * e + 2.0);
  const double split = sbh * e * (2.0 + 2.0 * kv / h + mlp);
  double bytes = replicated / sp_split + split / t;
  // Q and the output projection's input are a d wide, h in the formula: the difference when they are not.
  const double q_width = d(m.num_attention_heads) * d(m.head_dim());
  if (q_width != h && !m.multi_latent_attention) bytes += 2.0 * sb * e * (q_width - h) / t;
  if (m.multi_latent_attention) {
    // MLA: the queries and keys a d_qk wide, the values and the output projection's input a d_v (split over t)
    // in place of the formula's 2 h + 2 g d, plus the latents (r_q, r_kv + d_r: the down-projections'
    // outputs, replicated over t).
    const double a = d(m.num_attention_heads);
    const double mla = 2.0 * a * d(m.query_key_dim()) + 2.0 * a * d(m.value_dim());
    bytes += sb * e * (mla - 2.0 * h - 2.0 * kv) / t +
             sb * e * d(m.q_lora_rank + m.kv_lora_rank + m.qk_pos_emb_head_dim);
    // Recomputed up-projections (module mla_up_proj): the attention's Q, K and V are not stored.
    if (training.recomputes(RecomputeModule::mla_up_proj)) {
      bytes -= sb * e * a * d(2 * m.query_key_dim() + m.value_dim()) / t;
    }
  }
  if (!training.recomputes(RecomputeModule::core_attn)) {  // none, or selective without core_attn
    const double a = d(m.num_attention_heads);
    const double scores = training.flash_attention ? 4.0 * a * sb : a * d(m.seq_length) * sb * (2.0 * e + 1.0);
    bytes += scores / t;
  }
  return units::Bytes(bytes);
}

units::Bytes moe_layer_activation_bytes(const ModelConfig& m, const TrainingConfig& training,
                                        const ParallelismConfig& par) {
  // The dense layer's tensors with its own MLP stored (module mlp re-runs dense MLPs only; the MoE block
  // replaces that MLP below).
  TrainingConfig attention_part = training;
  attention_part.recompute_modules &= ~static_cast<uint32_t>(RecomputeModule::mlp);
  const double dense = layer_activation_bytes(m, attention_part, par).value();
  if (!m.moe() || training.activation_recompute == Recompute::full) return units::Bytes(dense);
  const double e = activation_bytes_per_element(training.precision);
  const double t = d(par.tensor), h = d(m.hidden_size);
  const double sb = d(m.seq_length / par.context) * d(training.micro_batch_size);
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  // The dense MLP's stored tensors (its activation's input and fc2's input) are not there.
  const double dense_mlp = sb * e * (gate + 1.0) * d(m.ffn()) / t;
  // The routed tokens of this rank and the busiest rank's received copies, as the step program has them.
  const double routed = par.sequence_parallel ? sb / t : sb;
  const int64_t local = m.num_experts / std::max<int64_t>(1, par.expert);
  const double mean_received = d(par.expert_tensor) * routed * d(m.moe_router_topk);
  const double received = mean_received * moe_rank_load(training, m.num_experts, local, par.expert, mean_received);
  const double fe = d(m.expert_ffn()) / d(par.expert_tensor);
  // Stored per received copy: fc1's input, the activation's input (gate x fe) and, unless the activation is
  // recomputed (module moe_act), its output (fc2's input).
  const double act_out = training.recomputes(RecomputeModule::moe_act) ? 0.0 : 1.0;
  const double experts = received * e * (h + (gate + act_out) * fe) + routed * d(m.moe_router_topk) * h * e +
                         routed * d(m.num_experts) * 4.0;
  const double shared = sb * e * (gate + 1.0) * d(m.moe_shared_expert_intermediate_size) / t;
  return units::Bytes(dense - dense_mlp + experts + shared);
}

namespace {

/// What estimate computes: the report with its verdict's text (estimate_memory), or only `fits` (memory_fits).
enum class Want { report, fits };

/// estimate_memory, with the verdict's text only for Want::report. For Want::fits only the returned `fits` is
/// meaningful: the stage loop stops at the first stage whose total exceeds the capacity (then the peak does,
/// so fits is false), before its walk when the stage's total without activations already exceeds it (the
/// activations are >= 0 and IEEE addition is monotone, so the total, summed in total()'s order, exceeds it too).
/// Stage 0 is always walked first: stage_order throws for a stage iff it throws for every stage (its checks do
/// not read the stage), so memory_fits throws exactly when estimate_memory does.
MemoryReport estimate(const StepSetup& setup, const DeviceSpec& device, Want want) {
  check_setup(setup);
  if (!(device.memory_capacity.value() > 0.0)) fail("device '" + device.name + "' has no memory capacity");
  const ModelConfig& m = setup.model;
  const ParallelismConfig& par = setup.parallelism;
  const int64_t p = par.pipeline;
  const int64_t v = par.virtual_stages;
  const int64_t mb = setup.microbatches();
  require(setup.schedule != PipelineSchedule::gpipe || v == 1, "GPipe has no interleaved form (virtual_stages "
                                                               "must be 1)");
  if (v != 1 && mb % p != 0) {
    fail("interleaved 1F1B needs microbatches (" + std::to_string(mb) + ") divisible by pipeline (" +
         std::to_string(p) + ")");
  }

  const double t = d(par.tensor);
  const double dp = d(par.replicas());  // ZeRO shards over the ranks that hold the same parameters
  const double layer_params = layer_parameter_count(m);
  const std::vector<double> params_of_chunk = chunk_parameters(m, par);
  // Layers per stage: the sum over its chunks (uneven splits as the step program, layers_per_virtual_stage).
  const std::vector<int64_t> chunk_layers = layers_per_virtual_stage(m.num_layers, par);
  auto stage_layers_of = [&](int64_t stage) {
    int64_t n = 0;
    for (int64_t c = 0; c < v; ++c) n += chunk_layers[static_cast<size_t>(c * p + stage)];
    return d(n);
  };
  ParameterBytes per_param = bytes_per_parameter(setup.training.precision);
  if (par.zero_stage < 3 && behaviour_of(setup.training.framework).grad_buffer_in_reduce_dtype) {
    per_param.gradients = grad_reduce_bytes_per_element(setup.training);  // as the step program
  }
  // FSDP under pipelining keeps the stage's parameters gathered and its gradients unsharded (in the reduce
  // dtype) over the step's microbatches (FrameworkBehaviour::unsharded_under_pipelining).
  const bool unsharded = behaviour_of(setup.training.framework).unsharded_under_pipelining && p > 1 &&
                         par.zero_stage >= 2 && par.replicas() > 1 && setup.microbatches() > 1;
  if (unsharded) per_param.gradients = grad_reduce_bytes_per_element(setup.training);
  const double weight_shard = par.zero_stage >= 3 && !unsharded ? dp : 1.0;
  const double grad_shard = par.zero_stage >= 2 && !unsharded ? dp : 1.0;
  const double optimizer_shard = par.zero_stage >= 1 ? dp : 1.0;
  // Routed experts shard over the expert-data ranks (ParallelismConfig::expert_replicas).
  const double edp = d(par.expert_replicas());
  const double expert_weight_shard = par.zero_stage >= 3 && !unsharded ? edp : 1.0;
  const double expert_grad_shard = par.zero_stage >= 2 && !unsharded ? edp : 1.0;
  const double expert_optimizer_shard = par.zero_stage >= 1 ? edp : 1.0;
  const std::vector<double> expert_params_of_chunk = chunk_expert_parameters(m, par);

  const double layer_activation = layer_activation_bytes(m, setup.training, par).value();
  // With full recompute of only some layers of each chunk (recompute_num_layers), the others store everything.
  TrainingConfig keep_all = setup.training;
  keep_all.activation_recompute = Recompute::none;
  const double stored_layer_activation = layer_activation_bytes(m, keep_all, par).value();
  const double moe_activation = moe_layer_activation_bytes(m, setup.training, par).value();
  const double stored_moe_activation = moe_layer_activation_bytes(m, keep_all, par).value();
  std::vector<int64_t> first_layer(chunk_layers.size(), 0);  // of each virtual stage, to find its MoE layers
  for (size_t k = 1; k < chunk_layers.size(); ++k) first_layer[k] = first_layer[k - 1] + chunk_layers[k - 1];
  auto stage_layer_bytes = [&](int64_t stage) {
    double bytes = 0.0;
    for (int64_t c = 0; c < v; ++c) {
      const auto vs = static_cast<size_t>(c * p + stage);
      const int64_t layers = chunk_layers[vs];
      const int64_t recomputing = recomputed_layers(setup.training, layers);
      const int64_t moe = m.moe_layers_in(first_layer[vs], layers);
      const int64_t moe_recomputing = m.moe_layers_in(first_layer[vs], recomputing);
      bytes += d(recomputing - moe_recomputing) * layer_activation +
               d(layers - recomputing - (moe - moe_recomputing)) * stored_layer_activation;
      if (moe > 0) {
        bytes += d(moe_recomputing) * moe_activation + d(moe - moe_recomputing) * stored_moe_activation;
      }
    }
    return bytes;
  };
  const Extras extras = extras_per_microbatch(setup);

  // Transient working memory (header item 6).
  double transient = 0.0;
  if (setup.training.activation_recompute == Recompute::full) {
    TrainingConfig stored = setup.training;
    stored.activation_recompute = Recompute::none;
    transient += layer_activation_bytes(m, stored, par).value();
  }
  if (par.zero_stage >= 3 && par.replicas() > 1) transient += 2.0 * layer_params / t * per_param.weights;
  if (par.context > 1) {
    // Context parallelism: the K/V blocks in flight during a layer's attention, this rank's b (s/c) 2 (g/t) d
    // each: the block being used and the one arriving (p2p), or all c gathered (all_gather); the backward holds
    // as many K/V-gradient blocks again.
    const double block = 2.0 * d(setup.training.micro_batch_size) * d(m.seq_length / par.context) *
                         d(m.kv_heads()) * d(m.head_dim()) / t * activation_bytes_per_element(setup.training.precision);
    const double blocks = par.context_comm == ContextComm::p2p ? 2.0 : d(par.context);
    transient += 2.0 * blocks * block;
  }

  MemoryReport report;
  report.capacity = device.memory_capacity;
  report.stages.resize(static_cast<size_t>(p));
  for (int64_t i = 0; i < p; ++i) {
    StageMemory& s = report.stages[static_cast<size_t>(i)];
    const double stage_layers = stage_layers_of(i);
    const double layer_bytes = stage_layer_bytes(i);  // a pure function of the stage: computed once
    const double chunk_layer_bytes = layer_bytes / d(v);  // a chunk's share, on average
    s.layer_parameters = stage_layers * layer_params / t;
    s.parameters = 0.0;
    for (int64_t c = 0; c < v; ++c) s.parameters += params_of_chunk[static_cast<size_t>(c * p + i)];
    double per_microbatch = layer_bytes;
    if (i == 0) per_microbatch += extras.embedding;
    if (i == p - 1) {
      per_microbatch += extras.output;
      // Multi-token prediction on the last stage: per module a block of the last layer's kind and the output
      // head's logits again (the projection's input is one h-wide activation more, counted in the block's).
      if (m.mtp_num_layers > 0) {
        const double block = m.mtp_is_moe() ? moe_activation : layer_activation;
        per_microbatch += d(m.mtp_num_layers) * (block + extras.output);
      }
    }
    s.weights = units::Bytes(s.parameters * per_param.weights / weight_shard);
    s.gradients = units::Bytes(s.parameters * per_param.gradients / grad_shard);
    s.optimizer_states = units::Bytes(s.parameters * per_param.optimizer_states / optimizer_shard);
    if (m.moe()) {
      double experts = 0.0;
      for (int64_t c = 0; c < v; ++c) experts += expert_params_of_chunk[static_cast<size_t>(c * p + i)];
      s.weights += units::Bytes(experts * per_param.weights / expert_weight_shard);
      s.gradients += units::Bytes(experts * per_param.gradients / expert_grad_shard);
      s.optimizer_states += units::Bytes(experts * per_param.optimizer_states / expert_optimizer_shard);
      s.parameters += experts;
    }
    s.activation_per_microbatch = units::Bytes(per_microbatch);
    s.transient = units::Bytes(transient);
    s.framework_reserve = kFrameworkReserve;
    if (want == Want::fits && i > 0 && s.total() > report.capacity) return report;  // activations still 0
    const InFlight peak = cached_walk_order(setup, i, mb, chunk_layer_bytes, extras);
    s.activations = units::Bytes(peak.bytes);
    s.microbatches_in_flight = peak.microbatches;
    s.microbatch_equivalents = peak.equivalents;
    if (want == Want::fits && s.total() > report.capacity) return report;  // fits stays false
  }
  for (int64_t i = 0; i < p; ++i) {
    if (report.stages[static_cast<size_t>(i)].total() > report.stages[static_cast<size_t>(report.peak_stage)].total()) {
      report.peak_stage = i;
    }
  }
  report.peak = report.stages[static_cast<size_t>(report.peak_stage)].total();
  report.fits = report.peak <= report.capacity;
  if (want == Want::report) report.verdict = verdict_of(report, device);
  return report;
}

}  // namespace

MemoryReport estimate_memory(const StepSetup& setup, const DeviceSpec& device) {
  return estimate(setup, device, Want::report);
}

bool memory_fits(const StepSetup& setup, const DeviceSpec& device) { return estimate(setup, device, Want::fits).fits; }

void clear_memory_walk_cache() {
  WalkCache& cache = walk_cache();
  std::lock_guard lock(cache.mutex);
  cache.peaks.clear();
}

}  // namespace clustersim::models
