// Build identity, written into every results file.
#pragma once

namespace clustersim::sim {
/// Semantic version of clustersim (CMake project version).
const char* software_version();
/// `git describe --always --dirty` of the source tree at configure time, or "unknown".
const char* git_sha();
}  // namespace clustersim::sim
