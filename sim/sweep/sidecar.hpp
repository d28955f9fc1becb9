// A sweep's rows as text: the row codec (the form in which MPI ranks send rows to rank 0) and the sidecar file
// FILE.h5.partial that makes a killed sweep resumable (docs/sweeps.md, "Resuming"; docs/scale-out.md).
//
// Sidecar format: text, one record a line, fields separated by tabs, with \\, \t, \n, \r escaped:
//   clustersim-sweep-partial <TAB> 2 <TAB> then per part: NAME, HASH    first line: the sweep's fingerprint by
//                                                     content (sim/sweep/fingerprint.hpp), the shard a part too
//   M <TAB> ID <TAB> then per column: NAME, TYPE (d|s), UNITS, DESCRIPTION     a list of result columns
//   R <TAB> INDEX <TAB> SEED <TAB> STATUS <TAB> REASON <TAB> META-ID (-1: none) <TAB> VALUE...   a finished point
// Appended and flushed after every point; a last line without its newline (a killed write) is ignored. Doubles
// are written as their shortest round-trip text, so a row read back is bit-identical to the row written.
// Reading checks every field: column names [a-z0-9_]+, types d|s, status ok|invalid|out_of_memory (ok and
// out_of_memory with columns), integers; an error names the file and line (DataError, exit 65).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sweep/fingerprint.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace clustersim::sim {

/// Shortest round-trip text of a double ("nan", "-nan", "inf", "-inf" for the special values; a NaN keeps its
/// sign so that a resumed row is written with the same bytes).
std::string number_text(double v);
/// The inverse of number_text (and any decimal or exponent form std::from_chars reads); nullopt otherwise.
std::optional<double> parse_number(std::string_view text);
/// `s` with \\, tab, newline and carriage return escaped as \\\\, \\t, \\n, \\r.
std::string escape(std::string_view s);
/// The fields of one line split at tabs, each unescaped.
std::vector<std::string> split_tabs(std::string_view line);
/// 64-bit FNV-1a of `s` (the sweep fingerprint's hash; stable across platforms).
uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL);

/// Rows as text records, the sidecar's "M" and "R" lines: each list of result columns is written once, as an M
/// line with an id, before the first row that uses it; rows refer to it by that id.
class RowEncoder {
 public:
  /// The lines of `r` (an M line when its columns are new to this stream, then its R line), each ending in a
  /// newline.
  std::string encode(const SweepRow& r);
  /// Records that `meta` is already in the stream with `id` (the column lists of a resumed sidecar).
  void known(const std::shared_ptr<const SweepMetaList>& meta, int64_t id);

 private:
  std::map<const SweepMetaList*, int64_t> ids_;
  std::vector<std::shared_ptr<const SweepMetaList>> keep_;  ///< keeps the keys of ids_ alive
  int64_t next_ = 0;
};

/// Reads the lines a RowEncoder wrote, in order. `where` (a file name, a rank) begins its error messages.
class RowDecoder {
 public:
  explicit RowDecoder(std::string where) : where_(std::move(where)) {}
  /// One line without its newline: an M line (recorded; returns nullopt) or an R line (returns its row; its
  /// columns are the shared list of the M line it names). Throws DataError ("WHERE:LINE: reason" when
  /// `line_number` > 0) when the line is malformed: an unknown record, a column name not [a-z0-9_]+, a type not
  /// d|s, a status not ok|invalid|out_of_memory, a non-integer index, seed or id, an unknown column list, a
  /// value that is not a number in a number column.
  std::optional<SweepRow> decode(std::string_view line, int64_t line_number = 0);
  /// The column lists read so far, by id.
  const std::map<int64_t, std::shared_ptr<const SweepMetaList>>& metas() const { return metas_; }

 private:
  std::string where_;
  std::map<int64_t, std::shared_ptr<const SweepMetaList>> metas_;
};

/// The sidecar FILE.h5.partial of a running sweep: every finished row appended and flushed.
class Sidecar {
 public:
  /// Checks one resumed row (its point exists, its seed is the point's); returns "" or why it is wrong.
  using RowCheck = std::function<std::string(const SweepRow&)>;
  /// Opens `path` for appending: fresh (truncated, header written) or, with `resume`, after reading its
  /// finished rows into `done` (by index; the file read with read_input_file, at most kMaxTraceInputBytes).
  /// Throws DataError naming the path (and line) when it is not a regular readable file, belongs to another
  /// sweep (its fingerprint differs: the message names each changed part, "the scenario changed since the
  /// sidecar was written"), is malformed or a row fails `check`; IoError when it cannot be written.
  Sidecar(std::filesystem::path path, const std::vector<FingerprintPart>& fingerprint, bool resume,
          std::map<int64_t, SweepRow>& done, const RowCheck& check = {});
  ~Sidecar();
  Sidecar(const Sidecar&) = delete;
  Sidecar& operator=(const Sidecar&) = delete;

  /// Appends `r` and flushes. Thread-safe. Throws IoError.
  void append(const SweepRow& r);
  /// Closes and deletes the sidecar (the results file is complete).
  void remove();

 private:
  void write(const std::string& text);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  RowEncoder encoder_;
};

}  // namespace clustersim::sim
