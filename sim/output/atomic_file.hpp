// Atomic replacement of an output file: everything clustersim writes appears whole or not at all.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace clustersim::sim {

/// Writes `path` atomically: `write(tmp)` fills "<path>.tmp-<pid>" in the same directory, which is then
/// fsync'd and renamed over `path`, and the directory is fsync'd (EINVAL from a file system that cannot fsync a
/// directory is tolerated). If `write` or any step throws, the temporary file is removed (best effort) and the
/// exception propagates; nothing appears at `path`. Errors of the system calls are std::runtime_error whose
/// message starts with `context` and names the call. A failure of the final directory fsync is reported after
/// the file is already in place. While the temporary file exists, SIGINT, SIGTERM and SIGHUP (where they have
/// their default action) remove it before the process ends by the signal.
void replace_atomically(const std::filesystem::path& path, const std::string& context,
                        const std::function<void(const std::filesystem::path& tmp)>& write);

/// Removes every temporary file that replace_atomically is writing now (unlink(2) only: async-signal-safe).
/// For a command's own signal handler (which replace_atomically leaves in place) that ends the process.
void remove_pending_temporaries() noexcept;

/// Writes `text` to `path` atomically (replace_atomically with a plain write).
void write_text_atomically(const std::filesystem::path& path, const std::string& text, const std::string& context);

}  // namespace clustersim::sim
