// A scenario: one TOML file describing a training job on a cluster (docs/scenario-format.md).
//
// Loading is strict: unknown keys, wrong types, missing required keys, out-of-range values and an
// inconsistent parallelism layout are ScenarioError, whose message names the file, line, column and key.
// Every key is declared once in a parameter table (name, type, unit, default, help) in scenario_params.cpp; the
// same table rejects unknown keys and generates the reference in docs/scenario-format.md. The rules of each
// table live in sim/io/*_rules.cpp, each kind of scenario is declared in sim/io/scenario_kind.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"
#include "models/parallelism/plan.hpp"
#include "models/parallelism/schedule.hpp"
#include "models/variability/variability.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// The cluster a job runs on: a VM size from the catalog, how many of them, their fabric and zones.
struct ClusterConfig {
  std::string vm_size;  ///< catalog key, e.g. "Standard_ND96amsr_A100_v4"
  int64_t nodes = 0;    ///< VMs
  /// On-demand price of one VM, US$/h: [cost] vm_price_usd_per_hour when given, else the catalog's
  /// pay-as-you-go price; empty when neither gives one.
  std::optional<double> vm_price_usd_per_hour;
  models::FabricKind fabric = models::FabricKind::fat_tree;
  double oversubscription = 1.0;  ///< fat-tree leaf down/up capacity ratio
  int64_t fat_tree_radix = 64;    ///< switch ports
  std::vector<models::ZoneSpec> zones;  ///< empty: one zone
  units::Seconds inter_zone_latency = units::milliseconds(1.0);  ///< one way
  std::optional<units::BytesPerSecond> inter_zone_bandwidth_per_node;  ///< default: the VM's Ethernet rate
  /// VMs of each NVLink domain the job uses (cluster.vms_per_nvlink_domain: 16 of a GB200 NVL72 rack's 18);
  /// nullopt: whole domains (models::VmSize::domain_vms).
  std::optional<int64_t> vms_per_nvlink_domain;
};

/// Collective algorithm overrides ([network]).
struct NetworkConfig {
  std::optional<models::CollectiveAlgorithm> all_reduce_algorithm;  ///< nullopt: NCCL-like automatic choice
};

/// A published measurement to compare the prediction with. At least one metric is set.
struct ReferenceConfig {
  std::optional<double> tflops_per_gpu;        ///< achieved TFLOP/s per GPU as the source counts it
  std::optional<double> step_time_s;           ///< iteration (optimizer step) time, s
  std::optional<double> tokens_per_s_per_gpu;  ///< global batch x seq / (step time x GPUs), tokens/s
  std::optional<double> mfu;                   ///< model FLOPs utilisation, fraction in (0, 1]
  std::string source;                          ///< citation
  std::string dataset;                         ///< short name of the published table ("" when not given)
  std::string exclude_reason;                  ///< non-empty: reported, left out of bounds and calibration
};

/// The whole training run ([job], [reliability], [cost]); present when the scenario has a [job] table.
struct JobConfig {
  int64_t steps = 0;           ///< from job.steps or ceil(train_tokens / (global batch x seq))
  int64_t replications = 200;
  bool spot = false;
  double spot_eviction_rate_per_hour = 0.05;
  std::vector<units::Seconds> eviction_trace;  ///< replayed evictions (from reliability.spot_eviction_trace)
  double failure_rate_per_gpu_day = 4.736e-4;
  std::optional<units::Seconds> checkpoint_every;  ///< checkpoint_interval_minutes
  std::optional<int64_t> checkpoint_every_steps;   ///< checkpoint_interval_steps
  std::optional<units::Bytes> checkpoint_size;     ///< nullopt: parameters x 14 B
  units::BytesPerSecond checkpoint_write;
  units::BytesPerSecond checkpoint_read;
  bool checkpoint_async = false;
  units::Seconds detection;
  units::Seconds reprovision;
  units::Seconds spot_reprovision_mean;
  units::Seconds restart;
  double vm_price_usd_per_hour = 0.0;
  double spot_discount = 0.7;
  double storage_usd_per_gb_month = 0.02;
  double egress_usd_per_gb = 0.01;
};

enum class Fidelity { replica, full };

struct SimulationConfig {
  uint64_t seed = 0;  ///< base seed of every random stream of the run
  Fidelity fidelity = Fidelity::replica;
  /// simulation.variability = "on": the GPUs' variability (its keys, or their sourced defaults); nullopt off.
  std::optional<models::VariabilitySpec> variability;
};

/// A fully resolved, validated scenario.
struct Scenario {
  int64_t schema_version = 1;
  std::string name;
  std::string description;
  models::ModelConfig model;
  models::TrainingConfig training;
  models::ParallelismConfig parallelism;  ///< data filled in from the cluster size when omitted
  models::PipelineSchedule schedule = models::PipelineSchedule::one_f_one_b;
  ClusterConfig cluster;
  NetworkConfig network;
  std::optional<JobConfig> job;
  std::optional<ReferenceConfig> reference;
  SimulationConfig simulation;
  /// [analysis] what_if: training what-if perturbations added to every run (sim/io/what_if_names.hpp); empty: none
  std::vector<std::string> what_if;

  std::filesystem::path source_path;  ///< file it was read from
  /// Where a key is set (file or "--set", 1-based line and column; its table's header when defaulted).
  struct Location {
    std::filesystem::path file;
    int64_t line = 1;
    int64_t column = 1;
  };
  /// The locations of the keys that errors found while simulating point at: training.global_batch_size (the
  /// size of one step), network.all_reduce_algorithm (a forced algorithm that does not apply) and
  /// job.replications (a job Monte Carlo beyond its event budget).
  std::map<std::string, Location> locations;
  std::string resolved_toml;          ///< the scenario after --set overrides and defaults, as TOML text
  std::vector<std::string> overrides;  ///< the --set options applied, in order, as "KEY=VALUE" (both trimmed)
};

/// A serving scenario's fleet ([serving], docs/serving.md): names and numbers as the file gives them; the run
/// layer (sim/run/run_serving) turns them into the models' and the engine's types.
/// Speculative decoding of a serving fleet (models/serving/speculative.hpp): serving.speculative_* and draft_*.
struct SpeculativeConfig {
  std::string method;         ///< models::kSpeculativeMethodNames
  int64_t tokens = 1;         ///< k
  double acceptance = 0.0;    ///< per-position conditional acceptance (one rate for every position)
  std::vector<double> acceptance_by_position;  ///< a_1..a_k when given (serving.speculative_acceptance_by_position)
  int64_t layers = 1;         ///< the proposer's layers
  int64_t hidden_size = 0;    ///< a draft model's shape (method "draft"); 0 otherwise
  int64_t num_attention_heads = 0;
  int64_t num_query_groups = 0;
  int64_t ffn_hidden_size = 0;
};

struct ServingFleetConfig {
  std::string vm_size;
  int64_t replicas = 1;
  int64_t tensor = 1;
  int64_t pipeline = 1;  ///< pipeline stages per replica (vLLM --pipeline-parallel-size)
  int64_t expert_parallel = 1;          ///< expert-parallel GPUs per replica (1: experts tensor-parallel)
  bool data_parallel_attention = false;  ///< attention data-parallel over the expert-parallel GPUs
  int64_t redundant_experts = 0;         ///< EPLB's replicas of hot experts
  /// GPUs of one replica: tensor x pipeline; expert_parallel with data-parallel attention.
  [[nodiscard]] int64_t gpus_per_replica() const {
    return data_parallel_attention ? expert_parallel * pipeline : tensor * pipeline;
  }
  std::string precision = "bf16";  ///< bf16 | fp16 | fp8 | int8 | fp4
  bool kv_cache_fp8 = false;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  bool chunked_prefill = true;
  int64_t block_size = 16;
  double gpu_memory_utilization = 0.9;
  std::string routing = "least_outstanding";  ///< least_outstanding | round_robin | prefix_aware
  bool prefix_caching = false;                ///< automatic prefix caching (EnginePolicy::prefix_caching)
  std::string engine = "vllm-0.6";            ///< a release of models::engine_profiles() (aliases resolved)
  int64_t scheduler_steps = 1;                ///< decode iterations per scheduling step (vLLM multi-step)
  std::string capacity_scheduler_policy = "max_utilization";  ///< models::kCapacityPolicyNames (default: the engine's)
  double engine_overhead_ms = 1.0;
  double engine_overhead_per_sequence_us = 10.0;
  double sample_interval_s = 1.0;
  std::optional<double> vm_price_usd_per_hour;  ///< the catalog's pay-as-you-go price, when it has one
  std::optional<int64_t> min_replicas;  ///< autoscaling when both are given
  std::optional<int64_t> max_replicas;
  double target_outstanding_per_replica = 16.0;
  double autoscale_interval_s = 15.0;
  double scale_down_window_s = 300.0;
  double provisioning_s = 300.0;
  int64_t spot_replicas = 0;
  double spot_eviction_rate_per_hour = 0.05;
  double spot_reprovision_mean_s = 1800.0;
  double spot_notice_s = 30.0;
  double spot_discount = 0.7;
  int64_t zones = 1;
  std::optional<double> zone_outage_start_s;
  std::optional<double> zone_outage_duration_s;
  /// Split pools (docs/serving.md, "Disaggregated prefill and decode"): the prefill pool, when prefill_replicas
  /// > 0; the fields above are then the decode pool's. Absent keys take the decode pool's values.
  int64_t prefill_replicas = 0;
  std::string prefill_vm_size;
  int64_t prefill_tensor = 1;
  int64_t prefill_max_num_seqs = 256;
  int64_t prefill_max_num_batched_tokens = 8192;
  std::optional<double> prefill_vm_price_usd_per_hour;
  [[nodiscard]] bool disaggregated() const { return prefill_replicas > 0; }
  /// GPUs of the fleet: both pools' when split.
  [[nodiscard]] int64_t total_gpus() const { return replicas * gpus_per_replica() + prefill_replicas * prefill_tensor; }
  std::optional<SpeculativeConfig> speculative;  ///< serving.speculative_method given
};

/// One token-length distribution of [workload]: fixed `tokens`, uniform [min, max], or lognormal with median
/// `tokens` and `sigma`, truncated to [min, max] when either bound is given (an absent min is 1, an absent max
/// unbounded).
struct LengthConfig {
  std::string kind = "fixed";  ///< fixed | uniform | lognormal
  int64_t tokens = 1;
  std::optional<int64_t> min;  ///< uniform: required; lognormal: a truncation bound
  std::optional<int64_t> max;  ///< uniform: required; lognormal: a truncation bound
  double sigma = 1.0;
};

/// [workload]: a trace, or a synthetic stream.
struct WorkloadConfig {
  std::optional<std::filesystem::path> trace;  ///< resolved against the scenario's directory
  double duration_s = 60.0;
  bool duration_given = false;  ///< workload.duration_s set in the scenario: without it a trace runs whole
  std::string arrival = "poisson";  ///< poisson | gamma | offline | closed_loop
  std::optional<int64_t> requests;  ///< the stream's length in requests (offline, closed_loop; optional else)
  int64_t concurrency = 0;          ///< closed_loop: clients in flight
  double rate_per_s = 0.0;          ///< synthetic streams only
  double arrival_cv = 1.0;
  LengthConfig prompt;
  LengthConfig output;
  int64_t system_prompt_tokens = 0;  ///< a shared system prompt's length (0: none; sim::SharedPrefix)
  double system_prompt_share = 1.0;  ///< the sessions that have it
  int64_t system_prompts = 1;        ///< distinct system prompts
  int64_t turns = 1;                 ///< requests per multi-turn session (sim::Sessions)
  double think_time_s = 0.0;         ///< mean think time between a session's turns, s
};

/// [slo]: latency targets, when given.
struct SloConfig {
  std::optional<double> ttft_p99_ms;
  std::optional<double> tpot_p99_ms;
};

/// A serving scenario's published measurement ([reference] with metric and value).
struct ServingReference {
  std::string metric;  ///< one of reference.metric's choices: output_tokens_per_s, ttft_p50_ms, ...
  double value = 0.0;  ///< in the unit the metric's name ends with
  std::string source;
  std::string dataset;
  std::string exclude_reason;
};

/// A fully resolved, validated serving scenario.
struct ServingScenario {
  int64_t schema_version = 1;
  std::string name;
  std::string description;
  models::ModelConfig model;
  ServingFleetConfig serving;
  WorkloadConfig workload;
  SloConfig slo;
  std::optional<ServingReference> reference;
  uint64_t seed = 0;
  std::filesystem::path source_path;
  std::string resolved_toml;  ///< the scenario after --set overrides and defaults, as TOML text
  std::vector<std::string> overrides;  ///< the --set options applied, in order, as "KEY=VALUE" (both trimmed)
};

/// The kind of the scenario file at `path`: "serving" when it has a [serving] table, else "training" (the kinds
/// are declared in sim/io/scenario_kind.cpp). Throws ScenarioError when the file cannot be read or parsed.
std::string_view scenario_kind(const std::filesystem::path& path);

/// Whether the scenario file at `path` describes a serving fleet: scenario_kind(path) == "serving". Throws
/// ScenarioError when the file cannot be read or parsed.
bool is_serving_scenario(const std::filesystem::path& path);

/// Bad scenario input. what() is "FILE:LINE:COL: key 'KEY': message" (docs/scenario-format.md, "Errors"):
/// LINE:COL (1-based) is where the key's value starts (an unknown key: the key itself); a missing or defaulted
/// key names its table's header, or 1:1 for the root or an absent table. For a --set option FILE is "--set",
/// LINE the option's 1-based position among the overrides and COL 1 (key) or the value's column. A TOML syntax
/// error has the parser's position and the key read from that line ("" when none); an unreadable file is 0:0.
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(std::filesystem::path file, int64_t line, int64_t column, std::string key, std::string message);
  [[nodiscard]] const std::filesystem::path& file() const { return file_; }
  [[nodiscard]] int64_t line() const { return line_; }
  [[nodiscard]] int64_t column() const { return column_; }
  [[nodiscard]] const std::string& key() const { return key_; }

 private:
  std::filesystem::path file_;
  int64_t line_;
  int64_t column_;
  std::string key_;
};

/// Loads and validates `path`, after applying `overrides` ("dotted.key=value", value in TOML syntax, bare
/// words taken as strings; in order, a later one winning) on top of the file. Defaults are filled in from the
/// parameter table: num_query_groups = num_attention_heads and ffn_hidden_size = 4 * hidden_size when omitted,
/// so the returned model always has both set. Cross-checks against `catalog` (vm_size exists; GPUs =
/// nodes * GPUs per VM = tensor * pipeline * data; heads divisible by tensor; layers divisible by
/// pipeline * virtual_stages; global batch divisible by micro batch * data). Throws ScenarioError.
Scenario load_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog);

/// Whether a load prints Scenario::resolved_toml (the scenario after overrides and defaults, for output files'
/// metadata): the points of a sweep do not need it, and printing it is a tenth of a load.
enum class ResolvedText { keep, skip };

/// A scenario file read and parsed once, to be loaded many times with different overrides (a sweep loads it
/// once per point; parsing was a tenth of a layout search's time). Cheap to copy (shared, immutable); safe to
/// use from several threads at once.
class ScenarioDocument {
 public:
  /// Reads and parses `path`. Throws ScenarioError for an unreadable file (0:0) or a TOML syntax error (the
  /// parser's line and column). Keys and values are checked by load_scenario, not here.
  static ScenarioDocument read(const std::filesystem::path& path);
  /// The file it was read from. Throws std::logic_error on a default-constructed document.
  [[nodiscard]] const std::filesystem::path& path() const;

 private:
  struct Impl;  // the parsed TOML table (kept out of this header: TOML++ is heavy)
  std::shared_ptr<const Impl> impl_;
  friend Scenario load_scenario(const ScenarioDocument&, const std::vector<std::string>&, const models::Catalog&,
                                ResolvedText);
};

/// load_scenario(path, ...) on a document read before: same result and errors as loading its file, without
/// reading or parsing it again (relative paths in it, e.g. reliability.spot_eviction_trace, still resolve
/// against the file's directory). With ResolvedText::skip, resolved_toml is left empty (every other field the
/// same).
Scenario load_scenario(const ScenarioDocument& document, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog, ResolvedText text = ResolvedText::keep);

/// Loads and validates the serving scenario at `path` (with `overrides`, as load_scenario): [model] as for
/// training (its defaults and shape rules), [serving], [workload], [slo], [simulation]. Cross-checks: the VM size
/// exists; tensor divides the heads and the MLP width, divides or is a multiple of the key/value heads and fits one
/// NVLink domain of the VM size; the device has the precision's math; the model is dense without multi-latent
/// attention (not modelled for serving yet); exactly one of workload.trace and workload.rate_per_s; uniform
/// lengths need min <= max; the trace reads (its errors as "FILE:LINE: ..." at workload.trace). A training table
/// in a serving scenario is an error at its header, as is load_scenario on a serving scenario. Throws
/// ScenarioError.
ServingScenario load_serving_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                                      const models::Catalog& catalog);

/// The reference of every scenario key as a Markdown table, generated from the parameter table.
std::string scenario_keys_markdown();

}  // namespace clustersim::sim
