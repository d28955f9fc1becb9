#include "sim/output/step_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/step_program.hpp"
#include "sim/format.hpp"
#include "sim/io/scenario.hpp"
#include "sim/step/step_simulation.hpp"

namespace clustersim::sim {

namespace {

std::string schedule_text(const Scenario& sc) {
  if (sc.parallelism.virtual_stages > 1) {
    return "interleaved 1F1B (" + counted(sc.parallelism.virtual_stages, "virtual stage") + ")";
  }
  std::string s = sc.schedule == models::PipelineSchedule::gpipe ? "GPipe" : "1F1B";
  if (sc.parallelism.zero_stage > 0) s += ", ZeRO-" + std::to_string(sc.parallelism.zero_stage);
  return s;
}

/// The report's variability lines: the slowest GPU's compute factor, the step's p50 and p99 against the step
/// at nominal speed, and where each number comes from.
std::string variability_text(const StepVariability& v, const StepReport& r, uint64_t seed) {
  const double nominal = v.nominal_step_time.value();
  std::string out = printf_string(
      "variability slowest of %s on %s computes x%.3f on average (p50 x%.3f, p99 x%.3f); P(a slow VM) %.1f %%\n",
      counted(v.vms * v.gpus_per_vm, "GPU").c_str(), counted(v.vms, "VM").c_str(), v.factor_mean, v.factor_p50,
      v.factor_p99, 100.0 * v.probability_any_slow_vm);
  const std::string drawn =
      v.drawn ? printf_string(", one draw of every GPU, seed %llu", static_cast<unsigned long long>(seed)) : "";
  out += printf_string("            step p50 %.3f s, p99 %.3f s; %.3f s at nominal speed (step time %+.1f %%%s)\n",
                       v.step_time_p50.value(), v.step_time_p99.value(), nominal,
                       100.0 * (r.step_time.value() / nominal - 1.0), drawn.c_str());
  out += printf_string("            sources: GPU spread sigma %.1f %% (%s); slow VMs %.2g %% at x%.2f (%s)\n",
                       100.0 * v.spec.gpu_compute_cv, v.spec.gpu_compute_cv_source.c_str(),
                       100.0 * v.spec.slow_vm_fraction, v.spec.slow_vm_factor, v.spec.slow_vm_source.c_str());
  return out;
}

/// What the other stages on the critical path were doing: the three longest waits, one line each (the stage, its
/// time, the kinds that make up a tenth or more of it), then the rest in one line.
std::string waits_text(const CriticalPath& path, double step) {
  std::vector<const StageWait*> waits;
  for (const StageWait& w : path.waits) waits.push_back(&w);
  std::stable_sort(waits.begin(), waits.end(), [](const StageWait* a, const StageWait* b) { return a->time > b->time; });
  std::string out;
  const size_t shown = std::min<size_t>(3, waits.size());
  for (size_t i = 0; i < shown; ++i) {
    const StageWait& w = *waits[i];
    std::string doing;
    const std::pair<const char*, units::Seconds> kinds[] = {{"compute", w.compute},
                                                            {"TP comm", w.tp_comm},
                                                            {"CP K/V", w.cp_comm},
                                                            {"expert all-to-all", w.ep_comm},
                                                            {"host issue", w.host},
                                                            {"ZeRO-3 DP comm", w.dp_comm}};
    for (const auto& [name, t] : kinds) {
      if (t.value() < 0.1 * w.time.value()) continue;
      doing += printf_string("%s%s %.0f %%", doing.empty() ? "" : ", ", name, 100.0 * t.value() / w.time.value());
    }
    out += printf_string("    %-32s %9.3f s  %5.1f %%  (%s)\n", ("on stage " + std::to_string(w.stage)).c_str(),
                         w.time.value(), 100.0 * w.time.value() / step, doing.c_str());
  }
  if (waits.size() > shown) {
    double rest = 0.0;
    std::vector<int64_t> stages;
    for (size_t i = shown; i < waits.size(); ++i) {
      rest += waits[i]->time.value();
      stages.push_back(waits[i]->stage);
    }
    std::sort(stages.begin(), stages.end());
    out += printf_string("    %-32s %9.3f s  %5.1f %%\n",
                         ("on stages " + stage_ranges(stages)).c_str(), rest, 100.0 * rest / step);
  }
  return out;
}

}  // namespace

std::string cross_zone_traffic(const models::ZoneCrossings& c) {
  std::string out;
  auto add = [&](bool on, const char* what) {
    if (!on) return;
    if (!out.empty()) out += ", ";
    out += what;
  };
  add(c.tensor_parallel, "tensor-parallel all-reduce");
  add(c.pipeline, "pipeline send/recv");
  add(c.data_parallel, "data-parallel gradient all-reduce");
  return out;
}

std::optional<ReferenceComparison> compare_with_reference(const Scenario& scenario, const StepReport& report) {
  if (!scenario.reference) return std::nullopt;
  const ReferenceConfig& ref = *scenario.reference;
  ReferenceComparison c;
  c.source = ref.source;
  if (ref.tflops_per_gpu) {
    c = {"tflops_per_gpu", "TFLOP/s", *ref.tflops_per_gpu, report.tflops_per_gpu, 0.0, ref.source};
  } else if (ref.step_time_s) {
    c = {"step_time_s", "s", *ref.step_time_s, report.step_time.value(), 0.0, ref.source};
  } else if (ref.tokens_per_s_per_gpu) {
    c = {"tokens_per_s_per_gpu", "tokens/s", *ref.tokens_per_s_per_gpu, report.tokens_per_s_per_gpu, 0.0, ref.source};
  } else if (ref.mfu) {
    c = {"mfu", "1", *ref.mfu, report.mfu, 0.0, ref.source};
  } else {
    return std::nullopt;
  }
  c.relative_error = c.predicted / c.measured - 1.0;
  return c;
}

std::string format_step_summary(const Scenario& sc, const models::Catalog& catalog, const StepReport& r,
                                const StepReport* one_zone) {
  const models::VmSize& vm = catalog.vm_size(sc.cluster.vm_size);
  const auto& par = sc.parallelism;
  std::ostringstream out;
  out << report_header(sc.name, sc.description, sc.overrides);
  // NVLink domains that span VMs (GB200 NVL72 racks): how many, and how many VMs of each the job uses.
  const int64_t domain = vm.domain_vms(sc.cluster.nodes, sc.cluster.vms_per_nvlink_domain);
  const int64_t domain_count = sc.cluster.nodes / domain;
  const std::string domains =
      domain > 1 ? "; " + counted(domain_count, "NVLink domain") + " of " + counted(domain, "VM") : std::string();
  out << printf_string("cluster     %lld x %s (%lld x %s%s)\n", static_cast<long long>(sc.cluster.nodes),
                       vm.name.c_str(), static_cast<long long>(r.gpus), vm.device.c_str(), domains.c_str());
  out << printf_string("layout      %s, micro batch %lld, %s, %s, recompute %s, %s\n",
                       models::layout_text(par).c_str(), static_cast<long long>(sc.training.micro_batch_size),
                       counted(r.microbatches, "microbatch", "microbatches").c_str(), schedule_text(sc).c_str(),
                       std::string(models::to_string(sc.training.activation_recompute)).c_str(),
                       std::string(models::to_string(sc.training.precision)).c_str());
  const double step = r.step_time.value();
  const CriticalPath& path = r.pipeline.critical_path;
  const size_t stages = r.pipeline.stages.size();
  if (stages > 1) {
    out << printf_string("step time   %.3f s   on the critical path (stage %lld's pace, %s)\n", step,
                         static_cast<long long>(path.home_stage),
                         path.end_stage == path.home_stage
                             ? "and it ends the step"
                             : ("stage " + std::to_string(path.end_stage) + " ends the step").c_str());
  } else {
    out << printf_string("step time   %.3f s   on the critical path\n", step);
  }
  auto line = [&](const char* what, units::Seconds s) {
    out << printf_string("  %-34s %9.3f s  %5.1f %%\n", what, s.value(), 100.0 * s.value() / step);
  };
  line("compute", path.compute);
  const units::Seconds gemm = path.compute - path.attention - path.memory_bound;
  line("  GEMMs", gemm);
  if (path.attention.value() > 0.0) line("  attention kernels", path.attention);
  line("  memory-bound kernels", path.memory_bound);
  line("tensor-parallel comm (exposed)", path.tp_comm);
  if (sc.parallelism.context > 1) line("context-parallel K/V (exposed)", path.cp_comm);
  if (sc.model.moe()) line("expert dispatch/combine (exposed)", path.ep_comm);
  if (sc.model.moe() || path.host.value() > 0.0) line("host (CPU) issue (GPU idle)", path.host);
  line("pipeline comm (exposed)", path.pp_comm);
  if (stages > 1) {
    line("waiting on other stages (bubble)", path.pipeline_wait);
    out << waits_text(path, step);
  }
  line("data-parallel grad sync (exposed)", path.dp_comm);
  line("optimizer", path.optimizer);
  out << "bottleneck  " << r.bottleneck.text << "\n";
  // A CPU VM's device is its CPU (one per VM): say so, and that its rates are estimates.
  const bool cpu = catalog.device(vm.device).kind == models::DeviceKind::cpu;
  const char* per = cpu ? "per CPU" : "per GPU";
  out << printf_string("throughput  %.1f TFLOP/s %s (counts recomputation), %.1f model TFLOP/s %s\n",
                       r.tflops_per_gpu, per, r.model_tflops_per_gpu, per);
  out << printf_string("            MFU %.1f %%, HFU %.1f %% of %s peak\n", 100.0 * r.mfu, 100.0 * r.hfu,
                       std::string(models::to_string(sc.training.precision)).c_str());
  if (cpu) {
    out << "            estimate: the CPU's matmul rate and memory bandwidth are datasheet arithmetic "
           "(models/hardware/catalog/devices.toml), not measured training\n";
  }
  if (!r.memory.stages.empty()) {
    out << printf_string("memory      peak %.1f GiB %s on stage %lld of %.1f GiB: %s\n",
                         units::in_gib(r.memory.peak), per, static_cast<long long>(r.memory.peak_stage),
                         units::in_gib(r.memory.capacity), r.memory.fits ? "fits" : "OUT OF MEMORY");
    if (!r.memory.fits) out << "            " << r.memory.verdict << "\n";
  }
  if (const auto& band = r.prediction_band) {
    out << printf_string("uncertainty %.3f - %.3f s: +- %.1f %% (RMS), up to %.1f %%, of %s "
                         "predicted with their source left out (%s)\n",
                         step * (1.0 - band->rms_relative_error), step * (1.0 + band->rms_relative_error),
                         100.0 * band->rms_relative_error, 100.0 * band->max_relative_error,
                         counted(band->rows, "published run").c_str(),
                         band->scope.c_str());
  } else if (cpu) {
    out << "uncertainty unknown: no published training run on a CPU validates this device's estimated rates\n";
  }
  if (const auto& v = r.variability) out << variability_text(*v, r, sc.simulation.seed);
  if (auto c = compare_with_reference(sc, r)) {
    out << printf_string("reference   %s = %.4g %s measured, %.4g predicted: %+.1f %%  (%s)\n", c->metric.c_str(),
                         c->measured, c->units.c_str(), c->predicted, 100.0 * c->relative_error, c->source.c_str());
  }
  if (one_zone != nullptr) {
    std::string zones;
    for (const auto& z : sc.cluster.zones) {
      zones += (zones.empty() ? "" : ", ") + z.name + ": " + std::to_string(z.nodes);
    }
    const std::string crossing = cross_zone_traffic(r.crosses_zones);
    out << printf_string("cross-zone  %s (%s nodes): %.3f s per step vs %.3f s in one zone: penalty %+.1f %%\n",
                         counted(static_cast<int64_t>(sc.cluster.zones.size()), "zone").c_str(), zones.c_str(),
                         r.step_time.value(), one_zone->step_time.value(),
                         100.0 * (r.step_time / one_zone->step_time - 1.0));
    out << "            crossing the zone boundary: " << (crossing.empty() ? "nothing" : crossing) << "\n";
  }
  return out.str();
}

std::vector<SummaryColumn> critical_path_wait_columns(const StepReport& r) {
  const std::vector<StageWait>& waits = r.pipeline.critical_path.waits;
  auto column = [&](std::string name, std::string description, units::Seconds StageWait::*part) {
    std::vector<double> v;
    for (const StageWait& w : waits) v.push_back((w.*part).value());
    return SummaryColumn{std::move(name), "s", std::move(description), std::move(v)};
  };
  std::vector<int64_t> stage;
  for (const StageWait& w : waits) stage.push_back(w.stage);
  std::vector<SummaryColumn> cols;
  cols.push_back({"stage", "1", "pipeline rank the critical path waited on", std::move(stage)});
  cols.push_back(column("time_s", "that stage's passes on the critical path (their sum is /summary/bubble_time_s)",
                        &StageWait::time));
  cols.push_back(column("compute_time_s", "of time_s: its compute kernels", &StageWait::compute));
  cols.push_back(column("exposed_tp_comm_s", "of time_s: its tensor-parallel communication", &StageWait::tp_comm));
  cols.push_back(column("exposed_cp_comm_s", "of time_s: its context-parallel K/V exchange", &StageWait::cp_comm));
  cols.push_back(column("exposed_ep_comm_s", "of time_s: its MoE dispatch and combine", &StageWait::ep_comm));
  cols.push_back(column("exposed_host_s", "of time_s: its GPU idle waiting on the host", &StageWait::host));
  cols.push_back(column("exposed_dp_comm_s", "of time_s: ZeRO-3 traffic inside its passes", &StageWait::dp_comm));
  return cols;
}

std::string format_stage_table(const StepReport& r) {
  std::string out = "stages      each stage's own time (s): busy in its passes, then idle and tail; each row sums to "
                    "the step\n";
  out += printf_string("  %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "stage", "compute", "TP comm", "CP K/V",
                       "EP a2a", "host", "PP comm", "bubble", "DP sync", "optimizer", "finish");
  for (size_t k = 0; k < r.pipeline.stages.size(); ++k) {
    const StageBreakdown& s = r.pipeline.stages[k];
    out += printf_string("  %5zu %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f%s\n", k, s.compute.value(),
                         s.tp_comm.value(), s.cp_comm.value(), s.ep_comm.value(), s.host.value(), s.pp_exposed.value(),
                         s.bubble.value(), s.grad_sync.value(), s.optimizer.value(), s.finish.value(),
                         static_cast<int64_t>(k) == r.pipeline.critical_path.home_stage ? "  (the critical path's pace)"
                                                                                         : "");
  }
  return out;
}

double training_usd_per_million_tokens(const Scenario& sc, std::optional<double> price_usd_per_hour,
                                       double step_time_s) {
  const double tokens_per_step =
      static_cast<double>(sc.training.global_batch_size) * static_cast<double>(sc.model.seq_length);
  return price_usd_per_hour ? *price_usd_per_hour * static_cast<double>(sc.cluster.nodes) * step_time_s / 3600.0 /
                                  tokens_per_step * 1e6
                            : std::numeric_limits<double>::quiet_NaN();
}

void write_step_summary_columns(const Scenario& sc, const StepReport& r, const StepReport* one_zone,
                                SummaryColumnSink& out) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto ref = compare_with_reference(sc, r);
  out.text("scenario", "", "scenario name", sc.name);
  out.text("vm_size", "", "VM size", sc.cluster.vm_size);
  out.integer("nodes", "1", "VMs", sc.cluster.nodes);
  out.integer("gpus", "1", "GPUs", r.gpus);
  for (const models::LayoutDimension* d : models::layout_dimensions_as_written()) {
    out.integer(d->column, "1", d->description, sc.parallelism.*d->size);
  }
  out.integer("microbatches", "1", "microbatches per pipeline per step", r.microbatches);
  out.real("step_time_s", "s", "time of one optimizer step", r.step_time.value());
  const double band = r.prediction_band ? r.prediction_band->rms_relative_error : nan;
  out.real("step_time_band", "1",
           "RMS relative error of held-out published runs of this GPU group and framework family "
           "(leave-one-source-out); NaN if the catalog has none",
           band);
  out.real("step_time_low_s", "s", "step_time_s x (1 - step_time_band)", r.step_time.value() * (1.0 - band));
  out.real("step_time_high_s", "s", "step_time_s x (1 + step_time_band)", r.step_time.value() * (1.0 + band));
  const std::optional<StepVariability>& v = r.variability;
  out.real("step_time_p50_s", "s",
           "median step time with variability on (the step at the slowest GPU's median compute factor); "
           "NaN with it off",
           v ? v->step_time_p50.value() : nan);
  out.real("step_time_p99_s", "s",
           "99th-percentile step time with variability on (the step at the slowest GPU's 99th-percentile "
           "compute factor); NaN with it off",
           v ? v->step_time_p99.value() : nan);
  out.real("nominal_step_time_s", "s",
           "with variability on, the step with every GPU at its nominal speed; NaN with it off",
           v ? v->nominal_step_time.value() : nan);
  out.real("slowest_gpu_factor", "1",
           "with variability on, the expected compute-time factor of the job's slowest GPU; NaN with it off",
           v ? v->factor_mean : nan);
  // The step's critical path by kind (sim/step/critical_path.hpp): the parts sum to step_time_s.
  const CriticalPath& path = r.pipeline.critical_path;
  out.real("compute_time_s", "s", "compute kernels on the critical path (its home stage's)",
           path.compute.value());
  out.real("attention_time_s", "s", "of compute_time_s: fused attention kernels", path.attention.value());
  out.real("memory_bound_time_s", "s", "of compute_time_s: memory-bound kernels (the rest is GEMMs)",
           path.memory_bound.value());
  out.real("exposed_tp_comm_s", "s", "tensor-parallel communication on the critical path, not hidden",
           path.tp_comm.value());
  out.real("exposed_cp_comm_s", "s",
           "context-parallel K/V exchange on the critical path, not hidden by attention (and the "
           "attention's slowdown beside it)",
           path.cp_comm.value());
  out.real("exposed_ep_comm_s", "s",
           "MoE dispatch and combine (all-to-all) on the critical path, not hidden by compute",
           path.ep_comm.value());
  out.real("exposed_host_s", "s",
           "GPU idle on the critical path waiting on the host to issue kernels (after MoE host "
           "synchronisations)",
           path.host.value());
  out.real("expert_imbalance", "1",
           "the busiest expert-parallel rank's routed tokens over the mean (1 for dense models)",
           r.expert_imbalance);
  out.real("exposed_pp_comm_s", "s", "pipeline transfers on the critical path", path.pp_comm.value());
  out.real("exposed_dp_comm_s", "s",
           "data-parallel communication on the critical path: gradient sync past the last backward, "
           "ZeRO parameter all-gathers",
           path.dp_comm.value());
  out.real("bubble_time_s", "s",
           "pipeline bubble: other stages' passes on the critical path (fill, drain, imbalance)",
           path.pipeline_wait.value());
  out.real("optimizer_time_s", "s", "optimizer step on the critical path", path.optimizer.value());
  out.integer("critical_path_stage", "1",
              "the critical path's home stage: the stage it spends the most pass time on", path.home_stage);
  out.text("bottleneck", "", "the largest part of the critical path, where and on which resource", r.bottleneck.text);
  out.real("bottleneck_share", "1", "the bottleneck's share of the step time", r.bottleneck.share);
  out.real("tflops_per_gpu", "TFLOP/s", "achieved TFLOP/s per GPU counting recomputation (Megatron)",
           r.tflops_per_gpu);
  out.real("model_tflops_per_gpu", "TFLOP/s", "model TFLOP/s per GPU (no recomputation)",
           r.model_tflops_per_gpu);
  out.real("tokens_per_s_per_gpu", "tokens/s", "training tokens per second per GPU", r.tokens_per_s_per_gpu);
  out.real("usd_per_million_tokens", "USD/Mtoken",
           "on-demand VM cost of one million training tokens at this step time, no interruptions; NaN "
           "without a price",
           training_usd_per_million_tokens(sc, sc.cluster.vm_price_usd_per_hour, r.step_time.value()));
  out.real("mfu", "1", "model FLOPs utilisation of the datasheet peak", r.mfu);
  out.real("hfu", "1", "hardware FLOPs utilisation of the datasheet peak", r.hfu);
  out.text("reference_metric", "", "metric of the [reference] measurement, empty if none",
           ref ? std::string_view(ref->metric) : std::string_view());
  const std::string_view ref_units = ref ? std::string_view(ref->units) : std::string_view();
  out.real("reference_value", ref_units, "published measurement, NaN if none", ref ? ref->measured : nan);
  out.real("predicted_value", ref_units, "prediction of the reference metric, NaN if none", ref ? ref->predicted : nan);
  out.real("reference_error", "1", "predicted / measured - 1, NaN if none", ref ? ref->relative_error : nan);
  const bool has_memory = !r.memory.stages.empty();
  out.real("peak_memory_bytes", "B", "memory per GPU of the most loaded stage",
           has_memory ? r.memory.peak.value() : nan);
  out.integer("peak_memory_stage", "1", "pipeline stage with the most memory per GPU",
              r.memory.peak_stage);
  out.real("memory_capacity_bytes", "B", "the GPU's memory capacity, compared against",
           has_memory ? r.memory.capacity.value() : nan);
  out.integer("fits_in_memory", "1", "1 if every stage fits in GPU memory, 0 for out of memory",
              r.memory.fits ? 1 : 0);
  out.integer("zones", "1", "availability zones the nodes are split over",
              std::max<int64_t>(1, static_cast<int64_t>(sc.cluster.zones.size())));
  out.real("one_zone_step_time_s", "s", "step time of the same job in one zone, NaN for one zone",
           one_zone ? one_zone->step_time.value() : nan);
  out.real("cross_zone_penalty", "1", "step time / one-zone step time - 1, NaN for one zone",
           one_zone ? r.step_time / one_zone->step_time - 1.0 : nan);
  out.text("cross_zone_traffic", "", "communication crossing a zone boundary, comma-separated; empty if none",
           cross_zone_traffic(r.crosses_zones));
}

std::vector<SummaryColumn> step_summary_columns(const Scenario& sc, const StepReport& r, const StepReport* one_zone) {
  SummaryColumnList list;
  write_step_summary_columns(sc, r, one_zone, list);
  return std::move(list.columns);
}

std::vector<SummaryColumn> stage_columns(const StepReport& r) {
  const std::vector<StageBreakdown>& stages = r.pipeline.stages;
  auto column = [&](std::string name, std::string units, std::string description, auto value) {
    std::vector<double> v;
    v.reserve(stages.size());
    for (const StageBreakdown& s : stages) v.push_back(value(s));
    return SummaryColumn{std::move(name), std::move(units), std::move(description), std::move(v)};
  };
  const double step = r.step_time.value();
  std::vector<int64_t> index(stages.size());
  for (std::size_t k = 0; k < stages.size(); ++k) index[k] = static_cast<int64_t>(k);
  std::vector<SummaryColumn> cols;
  cols.push_back({"stage", "1", "pipeline rank", std::move(index)});
  cols.push_back(column("compute_time_s", "s", "compute kernels of all passes",
                        [](const StageBreakdown& s) { return s.compute.value(); }));
  cols.push_back(column("exposed_tp_comm_s", "s", "tensor-parallel communication inside the passes",
                        [](const StageBreakdown& s) { return s.tp_comm.value(); }));
  cols.push_back(column("exposed_cp_comm_s", "s", "context-parallel K/V exchange inside the passes, not hidden",
                        [](const StageBreakdown& s) { return s.cp_comm.value(); }));
  cols.push_back(column("exposed_ep_comm_s", "s", "MoE dispatch and combine inside the passes, not hidden",
                        [](const StageBreakdown& s) { return s.ep_comm.value(); }));
  cols.push_back(column("exposed_host_s", "s", "GPU idle inside the passes, waiting on the host to issue kernels",
                        [](const StageBreakdown& s) { return s.host.value(); }));
  cols.push_back(column("exposed_pp_comm_s", "s",
                        "what pipeline transfers cost the step, taken out of the stage's idle time",
                        [](const StageBreakdown& s) { return s.pp_exposed.value(); }));
  cols.push_back(column("bubble_time_s", "s", "idle waiting on other stages (warm-up, drain, imbalance, tail)",
                        [](const StageBreakdown& s) { return s.bubble.value(); }));
  cols.push_back(column("exposed_dp_comm_s", "s",
                        "data-parallel gradient sync (and ZeRO parameter all-gather) not hidden by compute",
                        [](const StageBreakdown& s) { return s.grad_sync.value(); }));
  cols.push_back(column("optimizer_time_s", "s", "optimizer step",
                        [](const StageBreakdown& s) { return s.optimizer.value(); }));
  cols.push_back(column("finish_time_s", "s", "when the stage's last work (optimizer or ZeRO parameter all-gather) ended",
                        [](const StageBreakdown& s) { return s.finish.value(); }));
  if (r.memory.stages.size() == stages.size()) {
    auto memory = [&](std::string name, std::string description, auto value) {
      std::vector<double> v;
      for (const auto& m : r.memory.stages) v.push_back(value(m));
      cols.push_back(SummaryColumn{std::move(name), "B", std::move(description), std::move(v)});
    };
    memory("weights_bytes", "16-bit (or fp32) weights per GPU", [](const auto& m) { return m.weights.value(); });
    memory("gradients_bytes", "gradients per GPU", [](const auto& m) { return m.gradients.value(); });
    memory("optimizer_bytes", "optimizer states per GPU", [](const auto& m) { return m.optimizer_states.value(); });
    memory("activations_bytes", "stored activations per GPU at the stage's peak",
           [](const auto& m) { return m.activations.value(); });
    memory("total_memory_bytes", "all of it with transients and the framework reserve",
           [](const auto& m) { return m.total().value(); });
  }
  cols.push_back(column("tflops", "TFLOP/s", "math of one GPU of the stage (counts recomputation) over the step time",
                        [step](const StageBreakdown& s) {
                          return step > 0.0 ? s.flops.value() / step * 1e-12 : std::numeric_limits<double>::quiet_NaN();
                        }));
  return cols;
}

}  // namespace clustersim::sim
