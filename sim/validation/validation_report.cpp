#include "sim/validation/validation_report.hpp"

#include <cstdio>
#include <algorithm>
#include <map>
#include <tuple>
#include <stdexcept>
#include <utility>

#include "models/parallelism/framework_behaviour.hpp"
#include "sim/format.hpp"

namespace clustersim::sim {

namespace {

std::string shortened(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string row_line(const ValidationRow& r) {
  std::string line = printf_string("  %-46s %-16s %-16s %6lld ", shortened(r.name, 46).c_str(),
                                   shortened(r.device, 16).c_str(), r.framework.c_str(),
                                   static_cast<long long>(r.gpus));
  if (!r.comparison) return line + "ERROR  " + shortened(r.error, 100) + "\n";
  const ReferenceComparison& c = *r.comparison;
  line += printf_string("%-20s %10.4g %10.4g %+8.1f%%", c.metric.c_str(), c.measured, c.predicted,
                        100.0 * c.relative_error);
  if (!r.modelled()) line += "  (excluded: " + shortened(r.exclude_reason, 80) + ")";
  return line + "\n";
}

}  // namespace

std::string format_validation_rows(const std::vector<ValidationRow>& rows) {
  std::vector<std::string> datasets;
  for (const ValidationRow& r : rows) {
    if (std::find(datasets.begin(), datasets.end(), r.dataset) == datasets.end()) datasets.push_back(r.dataset);
  }
  std::string out;
  for (const std::string& dataset : datasets) {
    // The dataset's citation: what its rows' sources have in common, up to the last comma ("Narayanan et
    // al., SC'21, Table 2" of "..., Table 2, row 9 (PTD-P)").
    std::string source;
    bool first = true;
    for (const ValidationRow& r : rows) {
      if (r.dataset != dataset || r.source.empty()) continue;
      if (first) {
        source = r.source;
        first = false;
        continue;
      }
      size_t n = 0;
      while (n < source.size() && n < r.source.size() && source[n] == r.source[n]) ++n;
      source.resize(n);
    }
    if (const auto comma = source.rfind(','); comma != std::string::npos && comma + 1 < source.size() &&
                                              source.find(',') != comma) {
      source.resize(comma);
    }
    out += "\n" + (dataset.empty() ? std::string("(no dataset)") : dataset) + (source.empty() ? "" : ": " + source) +
           "\n";
    out += printf_string("  %-46s %-16s %-16s %6s %-20s %10s %10s %9s\n", "scenario", "GPU", "framework", "GPUs",
                         "metric", "measured", "predicted", "error");
    for (const ValidationRow& r : rows) {
      if (r.dataset == dataset) out += row_line(r);
    }
    out += "  " + summarize(rows, [&](const ValidationRow& r) { return r.dataset == dataset; }).text() + "\n";
  }
  out += "\nOverall (modelled rows): " + summarize(rows).text() + "\n";
  // Per workload: the dense rows calibrate the model; the others check it (ValidationRow::calibrates).
  for (const char* workload : {"dense", "context-parallel", "moe"}) {
    const ErrorSummary w = summarize(rows, [&](const ValidationRow& r) { return r.workload == workload; });
    if (w.rows > 0) out += printf_string("  %-17s %s\n", (std::string(workload) + ":").c_str(), w.text().c_str());
  }
  return out;
}

std::string format_validation_by_group(const std::vector<ValidationRow>& rows) {
  std::map<std::tuple<std::string, std::string, std::string>, ErrorSummary> groups;
  for (const ValidationRow& r : rows) {
    if (r.modelled()) groups[{r.calibration_group, r.framework, r.workload}].add(r);
  }
  std::string out = printf_string("  %-18s %-18s %-18s %s\n", "GPU group", "framework", "workload", "errors");
  for (const auto& [key, summary] : groups) {
    const auto& [group, framework, workload] = key;
    out += printf_string("  %-18s %-18s %-18s %s\n", group.c_str(), framework.c_str(), workload.c_str(),
                         summary.text().c_str());
  }
  return out;
}

std::string format_leave_one_out(const std::vector<HeldOutDataset>& held_out) {
  std::string out = printf_string("  %-30s %-52s %s\n", "held-out dataset", "refitted (matmul, memory)", "errors");
  for (const HeldOutDataset& h : held_out) {
    std::string fits;
    for (const CalibrationFit& f : h.fits) {
      if (!fits.empty()) fits += "; ";
      fits += printf_string("%s %.2f, %.2f", f.group.c_str(), f.fractions.matmul, f.fractions.memory);
    }
    if (fits.empty()) fits = "(catalog values)";
    out += printf_string("  %-30s %-52s %s\n", h.dataset.c_str(), shortened(fits, 52).c_str(), h.summary.text().c_str());
  }
  out += "  every held-out row: " + leave_one_out_summary(held_out).text() + "\n";
  // The same held-out rows by workload and by GPU group, framework and workload: the figures that count.
  std::vector<ValidationRow> rows;
  for (const HeldOutDataset& h : held_out) rows.insert(rows.end(), h.rows.begin(), h.rows.end());
  for (const char* workload : {"dense", "context-parallel", "moe"}) {
    const ErrorSummary w = summarize(rows, [&](const ValidationRow& r) { return r.workload == workload; });
    if (w.rows > 0) out += printf_string("    %-17s %s\n", (std::string(workload) + ":").c_str(), w.text().c_str());
  }
  out += "\nLeave one source out, by GPU group, framework and workload:\n" + format_validation_by_group(rows);
  return out;
}

ErrorSummary leave_one_out_summary(const std::vector<HeldOutDataset>& held_out) {
  ErrorSummary all;
  for (const HeldOutDataset& h : held_out) {
    for (const ValidationRow& r : h.rows) {
      if (r.modelled()) all.add(r);
    }
  }
  return all;
}

std::string format_prediction_uncertainty(const std::vector<HeldOutDataset>& held_out) {
  std::map<std::string, ErrorSummary> bands;
  for (const HeldOutDataset& h : held_out) {
    for (const ValidationRow& r : h.rows) {
      if (!r.modelled()) continue;
      const auto framework = models::parse_framework(r.framework);
      if (!framework) throw std::invalid_argument("prediction uncertainty: unknown framework '" + r.framework + "'");
      const std::string family = models::framework_family(*framework);
      const std::string w = "/" + r.workload;
      for (const std::string& key : {r.calibration_group + "/" + family + w, r.calibration_group + "/*" + w,
                                     "*/" + family + w, "*/*" + w}) {
        bands[key].add(r);
      }
    }
  }
  std::string out =
      "# Prediction bands: the errors of published runs predicted with their source left out (leave-one-source-out\n"
      "# refit of the training fractions), per calibration group, framework family (\"*\": any) and workload\n"
      "# (dense, context-parallel, moe). The step report shows step_time x (1 +- rms_relative_error) for the run's\n"
      "# group, family and workload (docs/validation.md).\n"
      "# Generated by `clustersim validate --leave-one-out --write-uncertainty`; do not edit by hand.\n";
  for (const auto& [key, summary] : bands) {
    if (summary.rows == 0) continue;
    out += printf_string("\n[\"%s\"]\nrms_relative_error = %.4f\nmax_relative_error = %.4f\nrows = %d\n", key.c_str(),
                         summary.rms, summary.max_abs, summary.rows);
  }
  return out;
}

}  // namespace clustersim::sim
