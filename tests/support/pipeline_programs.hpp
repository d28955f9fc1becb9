// Step programs for executor tests: communication-free pipelines with closed-form timelines.
#pragma once

#include <cstdint>

#include "models/parallelism/schedule.hpp"
#include "models/parallelism/step_program.hpp"

namespace clustersim::testing {

/// Every stage costs tf per forward and tb per backward of compute (s), split evenly over its v model chunks;
/// `p2p` (s) per pipeline transfer. `slow_stage` (if >= 0) takes `factor` times as long.
inline models::StepProgram uniform_program(models::PipelineSchedule schedule, int64_t p, int64_t m, double tf,
                                           double tb, double p2p = 0.0, int64_t v = 1, int64_t slow_stage = -1,
                                           double factor = 1.0) {
  models::StepProgram program;
  program.microbatches = m;
  program.virtual_stages = v;
  for (int64_t k = 0; k < p; ++k) {
    models::StageProgram s;
    s.order = models::stage_order(schedule, k, p, m, v);
    const double f = k == slow_stage ? factor : 1.0;
    for (int64_t c = 0; c < v; ++c) {
      models::PassCost fw, bw;
      fw.compute = units::seconds(f * tf / static_cast<double>(v));
      bw.compute = units::seconds(f * tb / static_cast<double>(v));
      s.forward.push_back(fw);
      s.backward.push_back(bw);
    }
    program.stages.push_back(s);
  }
  program.p2p_forward = units::seconds(p2p);
  program.p2p_backward = units::seconds(p2p);
  return program;
}

}  // namespace clustersim::testing
