// What one `clustersim collective` run computes: an nccl-tests-style sweep of one collective over message sizes
// on a cluster's topology (models::CollectiveModel), its table (nccl-tests' columns), its HDF5 columns and its
// results file. The CLI (sim/cli/collective_command.cpp) only parses the options into a CollectiveBenchmark
// and prints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"
#include "sim/output/results_file.hpp"

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// The collective, the cluster and the sizes of one benchmark.
struct CollectiveBenchmark {
  std::string vm_size;   ///< catalog key
  int64_t nodes = 1;     ///< VMs in the cluster
  int64_t gpus = 0;      ///< ranks 0..gpus-1 in the group (send_recv: 0 -> gpus-1); 0: every GPU (resolved)
  models::CollectiveOp op = models::CollectiveOp::all_reduce;
  std::optional<models::CollectiveAlgorithm> algorithm;  ///< nullopt: the fastest (NCCL's tuner)
  int64_t min_bytes = 0;    ///< smallest message size per rank, B
  int64_t max_bytes = 0;    ///< largest, B
  int64_t step_factor = 2;  ///< size multiplier between rows (nccl-tests -f)
  /// fabric, radix, oversubscription, zones, VMs per NVLink domain (its nodes = `nodes`)
  models::TopologyConfig topology;
  double inter_zone_gbps = 0.0;  ///< Gbit/s per node; 0: the VM's front-end Ethernet rate (resolved)
};

/// One message size's result.
struct CollectiveTimingRow {
  int64_t bytes = 0;
  double time_s = 0.0;
  double algbw = 0.0;  ///< GB/s: bytes / time / 1e9
  double busbw = 0.0;  ///< GB/s: algbw x nccl-tests' bus factor for the op and group size
  std::string algorithm;
  std::string protocol;
  bool crosses_zones = false;
};

/// "auto" or the forced algorithm's name.
std::string algorithm_name(const CollectiveBenchmark& b);

/// Builds the cluster and times the collective at min_bytes, min_bytes x step_factor, ... <= max_bytes. Resolves
/// `b.gpus` (0: the cluster's GPUs) and `b.inter_zone_gbps` (0: the VM's Ethernet rate). Throws DataError for an
/// unknown VM size, fewer than 2 or more GPUs than the cluster has, nodes that are not whole NVLink domains
/// (models::VmSize::domain_problem), or a forced algorithm that does not apply;
/// models::CatalogError, std::invalid_argument and std::out_of_range from the models (all bad data).
std::vector<CollectiveTimingRow> run_collective_benchmark(CollectiveBenchmark& b, const models::Catalog& catalog);

/// The table in nccl-tests' layout (size, count, type, time in us, algbw, busbw, algorithm/protocol; "crosses
/// zones" with zones), with a header naming the cluster and the mean bus bandwidth.
std::string format_collective_table(const CollectiveBenchmark& b, const std::vector<CollectiveTimingRow>& rows);

/// The /summary columns of the benchmark (one row per size).
std::vector<SummaryColumn> collective_summary_columns(const CollectiveBenchmark& b,
                                                      const std::vector<CollectiveTimingRow>& rows);

/// The benchmark's parameters as TOML (the results file's scenario_toml attribute).
std::string collective_parameters_toml(const CollectiveBenchmark& b);

/// Writes the benchmark's results file `path` atomically: /summary = collective_summary_columns (one row per
/// size); root attributes: the version, git sha, `command_line`, seed 0 and collective_parameters_toml. Throws
/// IoError with the writer's message on any failure (nothing is left at `path`).
void write_collective_file(const std::filesystem::path& path, const CollectiveBenchmark& b,
                           const std::vector<CollectiveTimingRow>& rows, const std::string& command_line);

}  // namespace clustersim::sim
