#include "sim/output/output_path.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <system_error>

#include "sim/errors.hpp"

namespace clustersim::sim {

namespace fs = std::filesystem;

namespace {

/// Why an existing non-regular file cannot be an output.
std::string kind_reason(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory: return "is a directory";
    case fs::file_type::block:
    case fs::file_type::character: return "is a device";
    case fs::file_type::fifo: return "is a FIFO";
    case fs::file_type::socket: return "is a socket";
    default: return "is not a regular file";
  }
}

}  // namespace

void check_output_path(const fs::path& path, const std::vector<InputFile>& inputs, const std::string& what) {
  const auto refuse = [&](const std::string& reason) {
    throw IoError("cannot write " + what + " '" + path.string() + "': " + reason);
  };
  if (path.empty() || path.filename().empty() || path.filename() == "." || path.filename() == "..") {
    refuse("has no file name");
  }
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows a symbolic link to what it names
  if (fs::exists(status) && !fs::is_regular_file(status)) refuse(kind_reason(status.type()));
  if (fs::exists(status)) {
    for (const InputFile& input : inputs) {
      std::error_code eq;
      if (fs::equivalent(path, input.path, eq) && !eq) refuse("is " + input.role);
    }
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::file_status dir_status = fs::status(dir, ec);
  if (!fs::exists(dir_status)) refuse("directory '" + dir.string() + "' does not exist");
  if (!fs::is_directory(dir_status)) refuse("'" + dir.string() + "' is not a directory");
  // The temporary file is created in the directory and renamed over the path: both need write and search.
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    refuse("directory '" + dir.string() + "' is not writable (" + std::strerror(errno) + ")");
  }
}

void check_standard_output() {
  // std::cout writes through stdout's buffer (synchronised with stdio): flush that first, while errno still
  // tells why it fails (flushing std::cout first would fail the same way and lose the reason).
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  std::cout.flush();
  if (flushed && !std::ferror(stdout) && std::cout.good()) return;
  std::clearerr(stdout);
  std::cout.clear();
  throw IoError(std::string("cannot write standard output: ") +
                (err != 0 ? std::strerror(err) : "a write failed"));
}

}  // namespace clustersim::sim
