// Reading an input file (scenario, trace, eviction trace, sidecar, sweep table) safely: only a regular file, with a
// size limit, so that a FIFO never blocks, a device is never read and an endless file is refused early.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

/// An input file that could not be read: not there, not a regular file (a directory, FIFO, device, socket), over
/// its size limit, or a read error. The message is a plain reason without the path ("is a FIFO (named pipe); inputs
/// must be regular files"), so that the caller can place it (a located scenario error, a trace line): 65.
struct InputFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The size limit of scenario and sidecar files: 16 MiB (the largest shipped scenario is under 8 KiB; a sweep's
/// sidecar holds one short line per point).
inline constexpr int64_t kMaxTextInputBytes = int64_t{16} << 20;
/// The size limit of request and eviction traces: 1 GiB (Azure's week-long 2023 code trace is 0.3 GB).
inline constexpr int64_t kMaxTraceInputBytes = int64_t{1} << 30;

/// Checks that `path` names a readable regular file (following symbolic links) of at most `max_bytes` bytes,
/// without opening anything that could block (a FIFO is refused by stat, before open). Throws InputFileError.
/// Returns the size in bytes.
int64_t check_input_file(const std::filesystem::path& path, int64_t max_bytes);

/// Reads the whole of `path` after check_input_file; a file that grows past `max_bytes` while it is read is refused
/// too. Throws InputFileError.
std::string read_input_file(const std::filesystem::path& path, int64_t max_bytes);

}  // namespace clustersim::sim
