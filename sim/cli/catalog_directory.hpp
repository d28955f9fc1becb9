// Where the command line looks for the hardware catalog when --catalog is not given (README "Install").
#pragma once

#include <filesystem>

namespace clustersim::cli {

/// The installed catalog beside the running executable: <directory of /proc/self/exe>/
/// CLUSTERSIM_CATALOG_FROM_BINDIR ("../share/clustersim/catalog" for the GNU layout of `make install` and the
/// .deb), lexically normalised. Empty when the executable's path cannot be read (no /proc); whether the directory
/// exists is not checked here. Never throws.
[[nodiscard]] std::filesystem::path installed_catalog_directory();

/// The default of --catalog: models::Catalog::default_directory(installed_catalog_directory()), that is
/// CLUSTERSIM_CATALOG_DIR, else the installed catalog beside the executable, else the source tree's.
[[nodiscard]] std::filesystem::path default_catalog_directory();

}  // namespace clustersim::cli
