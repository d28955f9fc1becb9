// The --catalog default: the executable's own path (Linux /proc/self/exe) and the installed layout.
#include "sim/cli/catalog_directory.hpp"

#include "models/hardware/catalog.hpp"

#include <system_error>

#ifndef CLUSTERSIM_CATALOG_FROM_BINDIR
#define CLUSTERSIM_CATALOG_FROM_BINDIR "../share/clustersim/catalog"
#endif

namespace clustersim::cli {

std::filesystem::path installed_catalog_directory() {
  std::error_code ec;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || executable.empty()) return {};
  return (executable.parent_path() / CLUSTERSIM_CATALOG_FROM_BINDIR).lexically_normal();
}

std::filesystem::path default_catalog_directory() {
  return models::Catalog::default_directory(installed_catalog_directory());
}

}  // namespace clustersim::cli
