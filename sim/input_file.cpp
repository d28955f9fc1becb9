#include "sim/input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace clustersim::sim {

namespace {

std::string size_text(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (int64_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string too_large(int64_t max_bytes) {
  return "is larger than the " + size_text(max_bytes) + " an input file may have";
}

}  // namespace

int64_t check_input_file(const std::filesystem::path& path, int64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw InputFileError("does not exist");
    throw InputFileError(std::string("cannot be read: ") + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) throw InputFileError("is a directory, not a file");
  if (S_ISFIFO(st.st_mode)) throw InputFileError("is a FIFO (named pipe); inputs must be regular files");
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) throw InputFileError("is a device; inputs must be regular files");
  if (!S_ISREG(st.st_mode)) throw InputFileError("is not a regular file");
  if (static_cast<int64_t>(st.st_size) > max_bytes) throw InputFileError(too_large(max_bytes));
  return static_cast<int64_t>(st.st_size);
}

std::string read_input_file(const std::filesystem::path& path, int64_t max_bytes) {
  check_input_file(path, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(std::string("cannot be opened: ") + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) throw InputFileError(too_large(max_bytes));
  }
  if (in.bad()) throw InputFileError("could not be read to its end");
  return text;
}

}  // namespace clustersim::sim
