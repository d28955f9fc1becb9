#include "sim/output/job_report.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "sim/format.hpp"
#include "sim/io/scenario.hpp"
#include "sim/job/job_simulation.hpp"

namespace clustersim::sim {

namespace {

std::string line(const char* format, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

std::string hours_text(double h) {
  return h < 48.0 ? line("%.1f h", h) : line("%.1f days", h / 24.0);
}

}  // namespace

std::string format_job_summary(const Scenario& sc, const JobStatistics& j, const JobStatistics* on_demand) {
  const JobConfig& cfg = *sc.job;
  std::ostringstream out;
  out << line("job         %s, %s, %s VMs%s\n", counted(cfg.steps, "step").c_str(),
              counted(j.replications, "replication").c_str(), cfg.spot ? "spot" : "on-demand",
              cfg.spot ? line(" (eviction rate %.1f %%/h per VM)", 100.0 * cfg.spot_eviction_rate_per_hour).c_str()
                       : "");
  if (!j.feasible) {
    out << "  infeasible       " << j.infeasible_reason << "\n";
    return out.str();
  }
  out << line("  time to train    mean %s   p50 %s   p90 %s   p99 %s\n", hours_text(j.mean_hours).c_str(),
              hours_text(j.p50_hours).c_str(), hours_text(j.p90_hours).c_str(), hours_text(j.p99_hours).c_str());
  out << line("  cost             mean $%.0f   p50 $%.0f   p90 $%.0f   p99 $%.0f\n", j.mean_cost_usd, j.p50_cost_usd,
              j.p90_cost_usd, j.p99_cost_usd);
  out << line("  goodput (ETTR)   %.1f %%   interruptions %.1f   lost %.0f GPU-hours\n", 100.0 * j.mean_goodput,
              j.mean_interruptions, j.mean_lost_gpu_hours);
  out << line("  checkpoints      every %.1f min of training (Young %.1f min, Daly %.1f min)\n",
              j.checkpoint_interval.value() / 60.0, j.young_interval.value() / 60.0, j.daly_interval.value() / 60.0);
  if (on_demand != nullptr && !on_demand->feasible) {
    out << "  on demand        infeasible: " << on_demand->infeasible_reason << "\n";
  } else if (on_demand != nullptr) {
    out << line("  spot vs on-demand: %s vs %s, $%.0f vs $%.0f: spot %s %.0f %% and %s %.0f %%\n",
                hours_text(j.mean_hours).c_str(), hours_text(on_demand->mean_hours).c_str(), j.mean_cost_usd,
                on_demand->mean_cost_usd, j.mean_hours >= on_demand->mean_hours ? "takes" : "saves",
                100.0 * std::abs(j.mean_hours / on_demand->mean_hours - 1.0),
                j.mean_cost_usd <= on_demand->mean_cost_usd ? "saves" : "costs",
                100.0 * std::abs(1.0 - j.mean_cost_usd / on_demand->mean_cost_usd));
  }
  return out.str();
}

std::vector<SummaryColumn> job_summary_columns(const Scenario& sc, const JobStatistics& j, const JobStatistics* od) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto real = [](std::string name, std::string units, std::string description, double v) {
    return SummaryColumn{std::move(name), std::move(units), std::move(description), std::vector<double>{v}};
  };
  std::vector<SummaryColumn> c;
  c.push_back({"job_feasible", "1", "1 if the job finishes within the 100-year horizon; else 0 and NaN statistics",
               std::vector<int64_t>{j.feasible ? 1 : 0}});
  c.push_back({"job_infeasible_reason", "", "why the job cannot finish; empty when job_feasible = 1",
               std::vector<std::string>{j.infeasible_reason}});
  c.push_back({"job_steps", "1", "optimizer steps to train", std::vector<int64_t>{sc.job->steps}});
  c.push_back({"job_replications", "1", "Monte Carlo replications", std::vector<int64_t>{j.replications}});
  c.push_back({"job_spot", "1", "1 if the job runs on spot VMs", std::vector<int64_t>{sc.job->spot ? 1 : 0}});
  c.push_back(real("time_to_train_mean_h", "h", "mean wall time to train", j.mean_hours));
  c.push_back(real("time_to_train_p50_h", "h", "median wall time to train", j.p50_hours));
  c.push_back(real("time_to_train_p90_h", "h", "90th percentile wall time to train", j.p90_hours));
  c.push_back(real("time_to_train_p99_h", "h", "99th percentile wall time to train", j.p99_hours));
  c.push_back(real("cost_mean_usd", "USD", "mean cost (VMs, checkpoint storage, egress)", j.mean_cost_usd));
  c.push_back(real("cost_p50_usd", "USD", "median cost", j.p50_cost_usd));
  c.push_back(real("cost_p90_usd", "USD", "90th percentile cost", j.p90_cost_usd));
  c.push_back(real("cost_p99_usd", "USD", "99th percentile cost", j.p99_cost_usd));
  // Mean cost over the tokens the job trains: steps x sequences x tokens per sequence.
  const double trained_tokens = static_cast<double>(sc.job->steps) *
                                static_cast<double>(sc.training.global_batch_size) *
                                static_cast<double>(sc.model.seq_length);
  c.push_back(real("job_usd_per_million_tokens", "USD/Mtoken",
                   "mean cost (cost_mean_usd, interruptions and spot prices included) per million trained tokens",
                   j.mean_cost_usd / trained_tokens * 1e6));
  c.push_back(real("goodput", "1", "effective training time ratio: surviving work / wall time", j.mean_goodput));
  c.push_back(real("interruptions_mean", "1", "mean interruptions per run", j.mean_interruptions));
  c.push_back(real("lost_gpu_hours_mean", "GPU h", "mean GPU-hours of work lost to interruptions",
                   j.mean_lost_gpu_hours));
  c.push_back(real("checkpoint_interval_s", "s", "checkpoint interval used (training time)",
                   j.checkpoint_interval.value()));
  c.push_back(real("young_interval_s", "s", "Young's interval sqrt(2 C M)", j.young_interval.value()));
  c.push_back(real("daly_interval_s", "s", "Daly's interval", j.daly_interval.value()));
  c.push_back(real("on_demand_time_to_train_mean_h", "h", "the same job on demand: mean time, NaN unless spot",
                   od != nullptr && od->feasible ? od->mean_hours : nan));
  c.push_back(real("on_demand_cost_mean_usd", "USD", "the same job on demand: mean cost, NaN unless spot",
                   od != nullptr && od->feasible ? od->mean_cost_usd : nan));
  return c;
}

std::vector<SummaryColumn> replication_columns(const JobStatistics& j) {
  std::vector<double> wall, productive, lost, checkpoint, down, vm_hours, cost, goodput;
  std::vector<int64_t> index, interruptions, evictions, failures, checkpoints;
  for (size_t i = 0; i < j.runs.size(); ++i) {
    const JobReplication& r = j.runs[i];
    index.push_back(static_cast<int64_t>(i));
    wall.push_back(r.wall_time.value());
    productive.push_back(r.productive_time.value());
    lost.push_back(r.lost_time.value());
    checkpoint.push_back(r.checkpoint_time.value());
    down.push_back(r.downtime.value());
    vm_hours.push_back(r.vm_hours);
    cost.push_back(r.cost_usd);
    goodput.push_back(r.goodput());
    interruptions.push_back(r.interruptions);
    evictions.push_back(r.evictions);
    failures.push_back(r.failures);
    checkpoints.push_back(r.checkpoints);
  }
  std::vector<SummaryColumn> c;
  c.push_back({"replication", "1", "replication index (its seed derives from the base seed and this)", index});
  c.push_back({"wall_time_s", "s", "start to last step", wall});
  c.push_back({"productive_time_s", "s", "steps x step time that survived", productive});
  c.push_back({"lost_time_s", "s", "work lost to interruptions", lost});
  c.push_back({"checkpoint_time_s", "s", "training stalled by checkpoints", checkpoint});
  c.push_back({"downtime_s", "s", "detection, re-provisioning, restart and reload", down});
  c.push_back({"vm_hours", "VM h", "billed VM-hours", vm_hours});
  c.push_back({"cost_usd", "USD", "VMs, checkpoint storage and egress", cost});
  c.push_back({"goodput", "1", "productive / wall time", goodput});
  c.push_back({"interruptions", "1", "interruptions", interruptions});
  c.push_back({"evictions", "1", "spot evictions", evictions});
  c.push_back({"failures", "1", "failures", failures});
  c.push_back({"checkpoints", "1", "checkpoints written", checkpoints});
  return c;
}

}  // namespace clustersim::sim
