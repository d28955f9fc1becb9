#include "sim/output/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace clustersim::sim {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_errno(const std::string& ctx, const std::string& call, int err) {
  throw std::runtime_error(ctx + ": " + call + " failed: " + std::strerror(err));
}

/// fsync(2) of a file or directory opened read-only.
void fsync_path(const fs::path& p, int extra_flags, const std::string& ctx, bool tolerate_einval) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | extra_flags);
  if (fd < 0) throw_errno(ctx, "open(\"" + p.string() + "\")", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as they allow.
  if (rc != 0 && !(tolerate_einval && err == EINVAL)) throw_errno(ctx, "fsync(\"" + p.string() + "\")", err);
}

}  // namespace

void replace_atomically(const fs::path& path, const std::string& ctx,
                        const std::function<void(const fs::path& tmp)>& write) {
  if (path.filename().empty()) throw std::runtime_error(ctx + ": path has no file name");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  try {
    write(tmp);
    fsync_path(tmp, 0, ctx, false);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw_errno(ctx, "rename(\"" + tmp.string() + "\", \"" + path.string() + "\")", errno);
    }
  } catch (...) {
    ::unlink(tmp.c_str());  // best effort (never a directory); the original error is the one reported
    throw;
  }
  // The file is in place now; a failure here means the rename may not survive a crash.
  fsync_path(dir, O_DIRECTORY, ctx, true);
}

void write_text_atomically(const fs::path& path, const std::string& text, const std::string& ctx) {
  replace_atomically(path, ctx, [&](const fs::path& tmp) {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) throw_errno(ctx, "open(\"" + tmp.string() + "\")", errno);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        throw_errno(ctx, "write(\"" + tmp.string() + "\")", err);
      }
      done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) throw_errno(ctx, "close(\"" + tmp.string() + "\")", errno);
  });
}

}  // namespace clustersim::sim
