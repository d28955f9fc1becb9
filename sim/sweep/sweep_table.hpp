// A sweep's results file (docs/hdf5-schema.md, "Sweeps"): the /summary table assembled from the points' rows
// (index columns, one column per swept key, the result columns), the /sweep/columns roles, the /sweep grids of a
// pure grid sweep, the merge of the files of a sharded sweep, and the layout ranking of parallelism = "auto".
// Every way of running a sweep (threads, MPI ranks, shards + merge, resume) ends in build_sweep_table or
// merge_sweep_files and write_sweep_file, so they give the same file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/output/results_file.hpp"
#include "sim/sweep/fingerprint.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim::sim {

inline constexpr const char* kSweepColumnsGroup = "sweep/columns";  ///< the column roles table
inline constexpr const char* kSweepGridGroup = "sweep";             ///< the grid axes and grids
inline constexpr const char* kSweepFingerprintGroup = "sweep_inputs";  ///< the inputs' hashes, point count

/// What a sweep's file says about the sweep as a whole (so that `merge` can check its shards): the inputs'
/// fingerprint (sim/sweep/fingerprint.hpp, without the shard) and the number of points of the whole sweep.
/// Written as /sweep_inputs: string columns `part` and `hash`, the last row `point_count` and the count.
struct SweepIdentity {
  std::vector<FingerprintPart> inputs;
  int64_t points = -1;  ///< every shard's points together; -1: unknown (a file written before issue 26)
};

/// The /summary columns of a sweep with the role of each.
struct SweepTable {
  std::vector<SummaryColumn> columns;
  std::vector<std::string> kinds;                  ///< per column: index | parameter | result
  std::map<std::string, std::string> param_names;  ///< swept key -> its /summary column
};

/// The table of `rows` (sorted by index; each row's index names a point of `sweep`): run_index, seed, status,
/// reason; then one column per swept key in order of first appearance (float64 with the key's unit when every
/// point's value is a finite number, else the values as labels; named after the key with '.' -> '_', prefixed
/// param_ on a clash); then the result columns in the order of the first row that has them (NaN / "" where a row
/// lacks one).
SweepTable build_sweep_table(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows);

/// The /sweep axes of a pure grid sweep (axes, no parallelism = "auto"): one per axis, named after the /summary
/// column of its first key, holding that key's values (float64 when all are finite numbers, else labels).
/// Empty for any other sweep.
std::vector<SummaryColumn> sweep_grid_axes(const LoadedSweep& sweep, const SweepTable& table);

/// The /sweep grids: every float64 result column of `table` reshaped by `axes` (run_index is the row-major
/// position; cells of points not in the table, e.g. another shard's, are NaN). Empty without axes.
std::vector<GridGroup> sweep_grids(const std::vector<SummaryColumn>& axes, const SweepTable& table);

/// Writes the sweep's results file atomically: /summary, /sweep/columns, /sweep_inputs (when `identity`
/// has parts) and the grids. Throws IoError.
void write_sweep_file(const std::filesystem::path& path, const RunMetadata& meta, const SweepTable& table,
                      const std::vector<SummaryColumn>& axes, const SweepIdentity& identity = {});

/// The files of a sharded sweep combined.
struct MergedSweep {
  RunMetadata meta;                ///< the first file's (all must agree)
  SweepTable table;                ///< every file's rows sorted by run_index
  std::vector<SummaryColumn> axes; ///< the grid axes of the file holding the lowest run_index
  SweepIdentity identity;          ///< the shards' (all must agree); points -1 when a file has none
  size_t files = 0;
  size_t points = 0;
  int64_t missing = 0;             ///< identity.points - points when known, else 0
};

/// Reads and combines the results files of one sharded sweep: column order that of the file holding the lowest
/// run_index, then any further columns of the others; rows sorted by run_index; a column a file lacks is NaN /
/// "". Throws DataError when a file is not a sweep file, belongs to another sweep (command line, scenario, seed,
/// schema or the inputs' fingerprint differ: the message names the part, "the request trace 'a.csv' differs
/// between ...") or two files hold the same run_index. Does not check completeness: see MergedSweep::missing.
MergedSweep merge_sweep_files(const std::vector<std::filesystem::path>& shards);

/// The simulated points of `rows` (invalid ones left out) ranked by the sweep's objective ([sweep] objective,
/// objective_column): those that fit in memory (a serving fleet: that meet the SLO, the meets_slo column) first,
/// each group by the objective's value, lowest first, points without a value (no price for cost_per_token) last;
/// ties keep the order of `rows`.
std::vector<const SweepRow*> rank_points(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows);

/// The ranking as text: the 10 best of rank_points (run; for parallelism = "auto" the layout: TP, [CP,] PP, DP,
/// [EP,] micro batch, virtual stages and the memory-saving knobs; step time; the objective when it is not the
/// step time; status; the grid point), then the best point that fits. A serving sweep's: the cost per million
/// output tokens, p99 TTFT and TPOT, the share within the SLO and the grid point, then the cheapest fleet that
/// meets the SLO.
std::string format_ranking(const LoadedSweep& sweep, const std::vector<const SweepRow*>& rows);

}  // namespace clustersim::sim
