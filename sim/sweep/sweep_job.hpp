// `clustersim sweep`, `merge` and `list-runs` past their command lines (docs/sweeps.md; docs/scale-out.md for
// MPI): the orchestration of a sweep over threads or MPI ranks (set-up, the sidecar and --resume, SIGINT/SIGTERM,
// the results file, the summary line, the ranking, the JSON, the invalid points), the merge of a sharded
// sweep's files and the listing of a sweep's points. The CLI (sim/cli/sweep_command.cpp) parses the options
// into a SweepRequest, supplies the progress display, and maps exit statuses.
//
// Exit statuses (sim/run/exit_status.hpp): 0; 64 usage; 65 bad scenario, sidecar or shards, an invalid point
// under --strict; 70 internal; 74 an output not written; 75 stopped early (SIGINT/SIGTERM, --stop-after),
// resumable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::sim {

class SweepGroup;
struct LoadedSweep;

/// --shard I/N: this process runs the points with run_index % count == index.
struct SweepShard {
  int64_t index = 0;
  int64_t count = 1;
};

/// What `clustersim sweep` was asked, its command line parsed and checked (UsageError there).
struct SweepRequest {
  std::string scenario;                   ///< the scenario file
  std::vector<std::string> overrides;     ///< --set, in order
  std::optional<std::string> catalog_dir; ///< --catalog; nullopt: default_catalog_dir
  /// The catalog without --catalog (the CLI's default: CLUSTERSIM_CATALOG_DIR, the installed catalog beside the
  /// executable, the source tree's); empty: models::Catalog::default_directory().
  std::filesystem::path default_catalog_dir;
  std::filesystem::path output;           ///< -o; its sidecar is "<output>.partial"
  int jobs = 1;                           ///< worker threads per rank, at least 1
  SweepShard shard;
  bool resume = false;      ///< --resume: continue from the sidecar
  bool json = false;        ///< --format json: the points as one JSON object on stdout, the rest on stderr
  bool strict = false;      ///< --strict: any invalid point makes the sweep exit 65
  int64_t stop_after = -1;  ///< --stop-after (testing); -1: none
  std::string test_signal;  ///< --test-signal (testing): "setup" or "write", where SIGTERM is raised; "": none
};

/// Called on every rank at the start of a sweep, inside its first agreed stage: the parsed command line, or
/// nullopt when there is nothing to run (--help, printed by the parser). Throws UsageError.
using SweepRequestParser = std::function<std::optional<SweepRequest>()>;

/// The progress display a sweep reports to (the CLI's progress line on stderr).
class SweepProgress {
 public:
  virtual ~SweepProgress() = default;
  /// Before the points run, on every rank: `total` points of the shard, `target` to compute now, `offset`
  /// resumed from the sidecar.
  virtual void start(size_t total, size_t target, size_t offset) = 0;
  /// Rank 0: `done` of the target points are finished.
  virtual void update(size_t done) = 0;
  /// Rank 0: the points are finished.
  virtual void finish() = 0;
};

/// `clustersim sweep` on this rank of `ranks` (SweepRanks: MPI or one process). Stages: (1) every rank parses
/// (`parse`) and loads the sweep; (2) rank 0 opens the sidecar (reading it with --resume); each is agreed on by
/// all ranks, so an error ends every rank with the same exit status; (3) the points are run: on threads with one
/// rank, else spread over the ranks; (4) rank 0 writes the results file and prints the summary line, the
/// ranking, "wrote ..." (to `out`, or `err` with --format json, when `out` gets the JSON) and the invalid points
/// (to `err`). With one rank, SIGINT/SIGTERM are caught for the sweep's life: the sweep stops between points,
/// resumable (75). Errors are printed to `err`; returns the exit status (every rank returns rank 0's). Never
/// throws.
int run_sweep_job(SweepGroup& ranks, const SweepRequestParser& parse, SweepProgress& progress, std::ostream& out,
                  std::ostream& err);

/// The command line a sweep records in its file: what determines the results (scenario, --set, --catalog),
/// not how the points were run (-o, -j, --shard, --resume), so that every way of running it gives one file.
std::string sweep_command_line(const SweepRequest& request);

/// `clustersim merge OUT SHARD...`: checks `out` against the shards (IoError), reads and combines them
/// (merge_sweep_files' DataError), refuses an incomplete set without `allow_partial` (DataError naming the
/// missing count), warns on `err` when the shards carry no fingerprint, writes `out` (IoError) and returns the
/// line to print: "merged N files, P points[ (partial: ...)]; wrote OUT".
std::string merge_sweep_shards(const std::filesystem::path& out, const std::vector<std::filesystem::path>& shards,
                               bool allow_partial, std::ostream& err);

/// `clustersim list-runs`: a header line, then one line per point: "index<TAB>seed<TAB>overrides".
std::string sweep_points_listing(const LoadedSweep& sweep);

}  // namespace clustersim::sim
