#include "sim/output/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
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

// ---- temporary files on signals ----------------------------------------------------------------------------
// A SIGINT, SIGTERM or SIGHUP while a temporary file exists would leave "<path>.tmp-<pid>" behind (issue 26,
// defect 16). The temporary files being written are kept in fixed slots that a signal handler can read; the
// handler removes them, restores the default action and re-raises, so the process still ends by the signal.
// The handler is installed only where the signal has its default action: a command with its own handling
// (the sweep's stop on SIGINT/SIGTERM) keeps it.

constexpr std::size_t kSlots = 16;
constexpr std::size_t kSlotBytes = 4096;
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler reads these flags");
std::atomic<bool> g_slot_taken[kSlots];   // a writer owns the slot
std::atomic<bool> g_slot_filled[kSlots];  // its path is complete: the handler may remove it
char g_slot_path[kSlots][kSlotBytes];

void remove_registered_temporaries() noexcept {
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (g_slot_filled[i].load()) ::unlink(g_slot_path[i]);  // async-signal-safe
  }
}

extern "C" void remove_temporaries_and_reraise(int signal_number) {
  remove_registered_temporaries();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(signal_number, &dfl, nullptr);
  ::raise(signal_number);  // delivered when the handler returns: the process ends by the signal
}

void install_cleanup_handlers() {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_handler = remove_temporaries_and_reraise;
    sigemptyset(&ours.sa_mask);
    ::sigaction(sig, &ours, nullptr);
  }
}

/// The slot holding `tmp` for the handler, released by its destructor; no slot (nothing registered) when all
/// are taken or the path is too long: then only the error paths remove the file.
class TemporaryRegistration {
 public:
  explicit TemporaryRegistration(const fs::path& tmp) {
    const std::string& text = tmp.native();
    if (text.size() >= kSlotBytes) return;
    for (std::size_t i = 0; i < kSlots; ++i) {
      bool expected = false;
      if (g_slot_taken[i].compare_exchange_strong(expected, true)) {
        std::memcpy(g_slot_path[i], text.c_str(), text.size() + 1);
        g_slot_filled[i].store(true);
        slot_ = i;
        break;
      }
    }
    install_cleanup_handlers();
  }
  TemporaryRegistration(const TemporaryRegistration&) = delete;
  TemporaryRegistration& operator=(const TemporaryRegistration&) = delete;
  ~TemporaryRegistration() {
    if (slot_ < kSlots) {
      g_slot_filled[slot_].store(false);
      g_slot_taken[slot_].store(false);
    }
  }

 private:
  std::size_t slot_ = kSlots;
};

}  // namespace

void remove_pending_temporaries() noexcept { remove_registered_temporaries(); }

void replace_atomically(const fs::path& path, const std::string& ctx,
                        const std::function<void(const fs::path& tmp)>& write) {
  if (path.filename().empty()) throw std::runtime_error(ctx + ": path has no file name");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  const TemporaryRegistration registration(tmp);
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
