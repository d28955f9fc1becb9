#include "sim/step/executor_buffers.hpp"

namespace clustersim::sim::executor_detail {

TimelineBuffers& timeline_buffers() {
  thread_local TimelineBuffers buffers;
  return buffers;
}

DependencyScratch& dependency_scratch() {
  thread_local DependencyScratch scratch;
  return scratch;
}

}  // namespace clustersim::sim::executor_detail
