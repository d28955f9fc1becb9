#include "sim/validation/validation.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "models/hardware/catalog.hpp"
#include "models/parallelism/framework_behaviour.hpp"
#include "sim/step/step_simulation.hpp"

namespace clustersim::sim {

namespace fs = std::filesystem;

void ErrorSummary::add(const ValidationRow& row) {
  if (!row.comparison) {
    ++failed;
    return;
  }
  const double e = std::abs(row.comparison->relative_error);
  const double n = rows;
  mean_abs = (mean_abs * n + e) / (n + 1.0);
  rms = std::sqrt((rms * rms * n + e * e) / (n + 1.0));
  max_abs = std::max(max_abs, e);
  ++rows;
}

std::string ErrorSummary::text() const {
  char buffer[160];
  if (rows == 0) {
    std::snprintf(buffer, sizeof buffer, "no predictions");
  } else {
    std::snprintf(buffer, sizeof buffer, "mean |error| %.1f %%, max %.1f %%, RMS %.1f %% over %d row%s", 100.0 * mean_abs,
                  100.0 * max_abs, 100.0 * rms, rows, rows == 1 ? "" : "s");
  }
  std::string out = buffer;
  if (failed > 0) out += ", " + std::to_string(failed) + " without a prediction";
  return out;
}

ErrorSummary summarize(const std::vector<ValidationRow>& rows, const std::function<bool(const ValidationRow&)>& keep) {
  ErrorSummary s;
  for (const ValidationRow& row : rows) {
    if (!row.modelled()) continue;
    if (keep && !keep(row)) continue;
    s.add(row);
  }
  return s;
}

ValidationSuite ValidationSuite::load(const fs::path& directory, const models::Catalog& catalog) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  if (ec) throw std::runtime_error("cannot read the validation directory " + directory.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  ValidationSuite suite;
  suite.clusters_ = std::make_shared<ClusterCache>();
  for (const fs::path& file : files) {
    Entry entry;
    ValidationRow row;
    row.file = file;
    row.name = file.stem().string();
    try {
      Scenario sc = load_scenario(file, {}, catalog);
      const models::VmSize& vm = catalog.vm_size(sc.cluster.vm_size);
      row.device = vm.device;
      row.calibration_group = catalog.device(vm.device).calibration_group;
      row.framework = std::string(models::to_string(sc.training.framework));
      row.gpus = sc.parallelism.gpus();
      row.workload = models::validation_workload(sc.model, sc.parallelism);
      if (sc.reference) {
        row.dataset = sc.reference->dataset;
        row.source = sc.reference->source;
        row.exclude_reason = sc.reference->exclude_reason;
      }
      if (!sc.reference) {
        entry.load_error = "the scenario has no [reference]";
      } else if (row.dataset.empty()) {
        entry.load_error = "the scenario's [reference] has no dataset";
      }
      entry.scenario = std::move(sc);
    } catch (const std::exception& e) {
      entry.load_error = e.what();
    }
    suite.entries_.push_back(std::move(entry));
    suite.rows_.push_back(std::move(row));
  }
  return suite;
}

std::vector<ValidationRow> ValidationSuite::evaluate(const models::Catalog& catalog, int threads,
                                                     const std::function<bool(size_t)>& select) const {
  std::vector<size_t> chosen;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!select || select(i)) chosen.push_back(i);
  }
  std::vector<ValidationRow> out(chosen.size());
  auto work = [&](size_t worker, size_t workers) {
    StepSimulator simulator(clusters_);
    simulator.set_record_spans(false);
    for (size_t k = worker; k < chosen.size(); k += workers) {
      const size_t i = chosen[k];
      ValidationRow row = rows_[i];
      const Entry& entry = entries_[i];
      if (!entry.load_error.empty()) {
        row.error = entry.load_error;
      } else {
        try {
          const Scenario& sc = *entry.scenario;
          const models::VmSize& vm = catalog.vm_size(sc.cluster.vm_size);
          const StepReport report =
              simulator.simulate(step_setup_of(sc, catalog), vm, catalog.device(vm.device), network_setup_of(sc));
          row.comparison = compare_with_reference(sc, report);
          if (!row.comparison) row.error = "the scenario's [reference] has no metric";
        } catch (const std::exception& e) {
          row.error = e.what();
        }
      }
      out[k] = std::move(row);
    }
  };
  const size_t workers = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), chosen.size()));
  if (workers == 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (size_t w = 0; w < workers; ++w) pool.emplace_back(work, w, workers);
    for (std::thread& t : pool) t.join();
  }
  return out;
}

models::Catalog with_fractions(const models::Catalog& catalog, const std::string& group, TrainingFractions fractions) {
  std::map<std::string, models::DeviceSpec> devices = catalog.devices();
  for (auto& [name, device] : devices) {
    if (device.calibration_group != group) continue;
    device.training_matmul_fraction = fractions.matmul;
    device.training_memory_fraction = fractions.memory;
  }
  return models::Catalog(std::move(devices), catalog.vm_sizes());
}

namespace {

constexpr double kLowest = 0.3;  // no GPU sustains less than this share of its microbenchmark rates in training
constexpr double kHighest = 1.0;

TrainingFractions clamp(TrainingFractions f) {
  return {std::clamp(f.matmul, kLowest, kHighest), std::clamp(f.memory, kLowest, kHighest)};
}

}  // namespace

CalibrationFit ValidationSuite::fit(const models::Catalog& catalog, const std::string& group, int threads,
                                    const std::function<bool(const ValidationRow&)>& use) const {
  std::vector<bool> chosen(rows_.size(), false);
  int count = 0;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const ValidationRow& r = rows_[i];
    if (r.calibration_group != group || !r.calibrates() || !entries_[i].load_error.empty()) continue;
    if (use && !use(r)) continue;
    chosen[i] = true;
    ++count;
  }
  if (count == 0) throw std::invalid_argument("calibration: no modelled row of group '" + group + "' to fit");
  CalibrationFit fit;
  fit.group = group;
  // Objective: mean |error|; a row without a prediction counts as 100 % off.
  auto objective = [&](TrainingFractions f, ErrorSummary* summary) {
    ++fit.evaluations;
    const auto rows = evaluate(with_fractions(catalog, group, f), threads, [&](size_t i) { return chosen[i]; });
    ErrorSummary s;
    for (const ValidationRow& r : rows) s.add(r);
    if (summary != nullptr) *summary = s;
    return (s.mean_abs * s.rows + 1.0 * s.failed) / static_cast<double>(s.rows + s.failed);
  };
  // Nelder-Mead on the two fractions from the group's current values (Lagarias et al. 1998 coefficients).
  TrainingFractions start{1.0, 1.0};
  for (const auto& [name, device] : catalog.devices()) {
    if (device.calibration_group == group) {
      start = {device.training_matmul_fraction, device.training_memory_fraction};
      break;
    }
  }
  std::array<TrainingFractions, 3> x = {clamp(start), clamp({start.matmul - 0.05, start.memory}),
                                        clamp({start.matmul, start.memory - 0.05})};
  std::array<double, 3> fx{};
  for (size_t i = 0; i < 3; ++i) fx[i] = objective(x[i], nullptr);
  constexpr int kMaxEvaluations = 60;
  constexpr double kTolerance = 0.002;  // simplex edge, in fraction units
  while (fit.evaluations < kMaxEvaluations) {
    std::array<size_t, 3> order = {0, 1, 2};
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fx[a] < fx[b]; });
    const TrainingFractions best = x[order[0]], mid = x[order[1]], worst = x[order[2]];
    const double size = std::max({std::abs(best.matmul - worst.matmul), std::abs(best.memory - worst.memory),
                                  std::abs(best.matmul - mid.matmul), std::abs(best.memory - mid.memory)});
    if (size < kTolerance) break;
    const TrainingFractions centre{(best.matmul + mid.matmul) / 2.0, (best.memory + mid.memory) / 2.0};
    auto along = [&](double t) {
      return clamp({centre.matmul + t * (worst.matmul - centre.matmul), centre.memory + t * (worst.memory - centre.memory)});
    };
    const TrainingFractions reflected = along(-1.0);
    const double fr = objective(reflected, nullptr);
    if (fr < fx[order[0]]) {
      const TrainingFractions expanded = along(-2.0);
      const double fe = objective(expanded, nullptr);
      if (fe < fr) {
        x[order[2]] = expanded, fx[order[2]] = fe;
      } else {
        x[order[2]] = reflected, fx[order[2]] = fr;
      }
      continue;
    }
    if (fr < fx[order[1]]) {
      x[order[2]] = reflected, fx[order[2]] = fr;
      continue;
    }
    const bool outside = fr < fx[order[2]];
    const TrainingFractions contracted = along(outside ? -0.5 : 0.5);
    const double fc = objective(contracted, nullptr);
    if (fc < (outside ? fr : fx[order[2]])) {
      x[order[2]] = contracted, fx[order[2]] = fc;
      continue;
    }
    for (size_t i : {order[1], order[2]}) {  // shrink towards the best
      x[i] = clamp({(x[i].matmul + best.matmul) / 2.0, (x[i].memory + best.memory) / 2.0});
      fx[i] = objective(x[i], nullptr);
    }
  }
  const size_t best = static_cast<size_t>(std::min_element(fx.begin(), fx.end()) - fx.begin());
  // Report fractions to 0.01: the precision they are written into the catalog with.
  fit.fractions = {std::round(x[best].matmul * 100.0) / 100.0, std::round(x[best].memory * 100.0) / 100.0};
  objective(fit.fractions, &fit.in_sample);
  return fit;
}

std::vector<HeldOutDataset> leave_one_dataset_out(const ValidationSuite& suite, const models::Catalog& catalog,
                                                  int threads) {
  std::vector<std::string> datasets;
  for (const ValidationRow& r : suite.rows()) {
    if (r.modelled() && !r.dataset.empty() &&
        std::find(datasets.begin(), datasets.end(), r.dataset) == datasets.end()) {
      datasets.push_back(r.dataset);
    }
  }
  std::vector<HeldOutDataset> out;
  for (const std::string& dataset : datasets) {
    HeldOutDataset held;
    held.dataset = dataset;
    std::set<std::string> groups;
    for (const ValidationRow& r : suite.rows()) {
      if (r.dataset == dataset && r.modelled()) groups.insert(r.calibration_group);
    }
    models::Catalog refitted = catalog;
    auto others = [&](const ValidationRow& r) { return r.dataset != dataset; };
    for (const std::string& group : groups) {
      std::map<std::string, int> other_rows;  // modelled rows outside the held-out dataset, per group
      for (const ValidationRow& r : suite.rows()) {
        if (r.calibrates() && r.dataset != dataset) ++other_rows[r.calibration_group];
      }
      std::string from = group;
      if (other_rows[group] == 0) {
        // Nothing else calibrates this group: it takes the fractions fitted to the largest other group (the
        // catalog's own values were fitted with the held-out rows in them).
        // The catalog may name the nearest group (calibration_fallback) for a device of this group.
        from.clear();
        for (const auto& [name, device] : catalog.devices()) {
          if (device.calibration_group == group && !device.calibration_fallback.empty() &&
              other_rows[device.calibration_fallback] > 0) {
            from = device.calibration_fallback;
          }
        }
        int most = 0;
        for (const auto& [g, n] : other_rows) {
          if (from.empty() && n > most) most = n, from = g;
        }
        if (from.empty()) continue;
      }
      CalibrationFit fit = suite.fit(catalog, from, threads, others);
      fit.group = group == from ? group : group + " (from " + from + ")";
      refitted = with_fractions(refitted, group, fit.fractions);
      held.fits.push_back(fit);
    }
    const std::vector<ValidationRow>& all = suite.rows();
    held.rows = suite.evaluate(refitted, threads, [&](size_t i) { return all[i].dataset == dataset; });
    held.summary = summarize(held.rows);
    out.push_back(std::move(held));
  }
  return out;
}

}  // namespace clustersim::sim
