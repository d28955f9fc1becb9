#include "sim/validation/serving_validation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "models/hardware/catalog.hpp"
#include "sim/format.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/serving/serving_summary.hpp"

namespace clustersim::sim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kFixedPoints = std::size(ServingValidationSuite::kFixedGridMs);
constexpr size_t kPerSequencePoints = std::size(ServingValidationSuite::kPerSequenceGridUs);
constexpr size_t kGridPoints = kFixedPoints * kPerSequencePoints;

models::EngineOverhead grid_overhead(size_t point) {
  return {units::milliseconds(ServingValidationSuite::kFixedGridMs[point / kPerSequencePoints]),
          units::microseconds(ServingValidationSuite::kPerSequenceGridUs[point % kPerSequencePoints])};
}

/// The prediction of `sc`'s reference metric, with the engine's overhead replaced when `overhead` is given.
double predict(ServingScenario sc, const models::Catalog& catalog, const models::EngineOverhead* overhead) {
  if (overhead != nullptr) {
    sc.serving.engine_overhead_ms = overhead->fixed.value() * 1e3;
    sc.serving.engine_overhead_per_sequence_us = overhead->per_sequence.value() * 1e6;
  }
  const ServingRun run = run_serving_scenario(sc, catalog);
  return serving_metric(run.summary, sc.reference->metric, sc.serving.total_gpus());
}

/// Runs work(k) for k in [0, n) on up to `threads` threads (each k once; the caller writes slot k only).
template <typename Work>
void for_each_index(size_t n, int threads, const Work& work) {
  const size_t workers = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), n));
  auto run = [&](size_t w) {
    for (size_t k = w; k < n; k += workers) work(k);
  };
  if (workers == 1) {
    run(0);
    return;
  }
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) pool.emplace_back(run, w);
  for (std::thread& t : pool) t.join();
}

}  // namespace

double ServingValidationRow::relative_error() const { return predicted ? *predicted / measured - 1.0 : kNaN; }

bool ServingValidationRow::throughput() const { return metric.find("_per_s") != std::string::npos; }

std::string ServingErrorSummary::text() const {
  if (rows == 0 && failed == 0) return "no rows";
  std::string s = printf_string("mean |error| %.1f %%, max %.1f %%, RMS %.1f %%, %d of %d within 15 %%",
                                100.0 * mean_abs, 100.0 * max_abs, 100.0 * rms, within_15_percent, rows);
  if (failed > 0) s += printf_string(" (%d failed)", failed);
  return s;
}

ServingErrorSummary summarize_serving_rows(const std::vector<ServingValidationRow>& rows,
                                           const std::function<bool(const ServingValidationRow&)>& keep) {
  ServingErrorSummary s;
  double sum = 0, sum2 = 0;
  for (const ServingValidationRow& r : rows) {
    if (!r.modelled() || (keep && !keep(r))) continue;
    if (!r.predicted) {
      ++s.failed;
      continue;
    }
    const double e = std::abs(r.relative_error());
    ++s.rows;
    sum += e;
    sum2 += e * e;
    s.max_abs = std::max(s.max_abs, e);
    if (e <= 0.15) ++s.within_15_percent;
  }
  if (s.rows > 0) {
    s.mean_abs = sum / s.rows;
    s.rms = std::sqrt(sum2 / s.rows);
  }
  return s;
}

ServingValidationSuite ServingValidationSuite::load(const std::filesystem::path& directory,
                                                    const models::Catalog& catalog) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".toml") files.push_back(it->path());
  }
  if (ec) throw std::runtime_error("cannot read the serving validation directory " + directory.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  ServingValidationSuite suite;
  for (const std::filesystem::path& file : files) {
    ServingValidationRow row;
    row.file = file;
    row.name = file.stem().string();
    std::optional<ServingScenario> sc;
    try {
      sc = load_serving_scenario(file, {}, catalog);
      if (!sc->reference) throw std::runtime_error("no [reference] metric and value");
      row.dataset = sc->reference->dataset.empty() ? row.name : sc->reference->dataset;
      row.engine = sc->serving.engine;
      row.family = std::string(models::engine_profile(row.engine).family);
      row.device = catalog.vm_size(sc->serving.vm_size).device;
      row.metric = sc->reference->metric;
      row.measured = sc->reference->value;
      row.exclude_reason = sc->reference->exclude_reason;
    } catch (const std::exception& e) {
      row.error = e.what();
      sc.reset();
    }
    suite.scenarios_.push_back(std::move(sc));
    suite.rows_.push_back(std::move(row));
  }
  return suite;
}

std::vector<ServingValidationRow> ServingValidationSuite::evaluate(const models::Catalog& catalog, int threads,
                                                                   const EngineOverheads& overheads,
                                                                   const std::function<bool(size_t)>& select) const {
  std::vector<size_t> chosen;
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (!select || select(i)) chosen.push_back(i);
  }
  std::vector<ServingValidationRow> out(chosen.size());
  for_each_index(chosen.size(), threads, [&](size_t k) {
    const size_t i = chosen[k];
    ServingValidationRow row = rows_[i];
    if (scenarios_[i]) {
      try {
        const auto o = overheads.find(row.family);
        row.predicted = predict(*scenarios_[i], catalog, o == overheads.end() ? nullptr : &o->second);
      } catch (const std::exception& e) {
        row.error = e.what();
      }
    }
    out[k] = std::move(row);
  });
  return out;
}

std::vector<std::vector<double>> ServingValidationSuite::predict_grid(const models::Catalog& catalog,
                                                                      int threads) const {
  std::vector<std::vector<double>> grid(rows_.size(), std::vector<double>(kGridPoints, kNaN));
  const size_t n = rows_.size() * kGridPoints;
  for_each_index(n, threads, [&](size_t k) {
    const size_t i = k / kGridPoints, g = k % kGridPoints;
    if (!scenarios_[i] || !rows_[i].modelled()) return;
    try {
      const models::EngineOverhead o = grid_overhead(g);
      grid[i][g] = predict(*scenarios_[i], catalog, &o);
    } catch (const std::exception&) {
      // stays NaN: the row fails at this point
    }
  });
  return grid;
}

EngineFit ServingValidationSuite::fit(const std::vector<std::vector<double>>& grid, const std::string& family,
                                      const std::function<bool(const ServingValidationRow&)>& use) const {
  std::vector<size_t> used;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const ServingValidationRow& r = rows_[i];
    if (r.family == family && r.modelled() && scenarios_[i] && (!use || use(r))) used.push_back(i);
  }
  if (used.empty()) throw std::invalid_argument("no modelled serving row of engine family '" + family + "' to fit");
  size_t best = 0;
  double best_mean = std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < kGridPoints; ++g) {
    double sum = 0;
    for (size_t i : used) {
      const double p = grid[i][g];
      sum += std::isfinite(p) ? std::abs(p / rows_[i].measured - 1.0) : 1.0;  // a failure counts as 100 %
    }
    if (sum < best_mean - 1e-12) {  // strict: ties keep the earlier (smaller) overhead
      best_mean = sum;
      best = g;
    }
  }
  EngineFit f;
  f.family = family;
  f.overhead = grid_overhead(best);
  f.grid_point = best;
  std::vector<ServingValidationRow> fitted;
  for (size_t i : used) {
    ServingValidationRow r = rows_[i];
    if (std::isfinite(grid[i][best])) r.predicted = grid[i][best];
    fitted.push_back(std::move(r));
  }
  f.in_sample = summarize_serving_rows(fitted);
  return f;
}

std::vector<HeldOutServingDataset> leave_one_serving_dataset_out(const ServingValidationSuite& suite,
                                                                 const std::vector<std::vector<double>>& grid) {
  const std::vector<ServingValidationRow>& rows = suite.rows();
  std::vector<std::string> datasets;
  for (const ServingValidationRow& r : rows) {
    if (r.modelled() && r.error.empty() &&
        std::find(datasets.begin(), datasets.end(), r.dataset) == datasets.end()) {
      datasets.push_back(r.dataset);
    }
  }
  std::vector<HeldOutServingDataset> out;
  for (const std::string& held : datasets) {
    HeldOutServingDataset h;
    h.dataset = held;
    const auto others = [&held](const ServingValidationRow& r) { return r.dataset != held; };
    std::set<std::string> families;
    std::map<std::string, int> other_rows;
    for (const ServingValidationRow& r : rows) {
      if (!r.modelled() || !r.error.empty()) continue;
      if (r.dataset == held) families.insert(r.family);
      else ++other_rows[r.family];
    }
    // The donor for a family only the held-out dataset calibrates: the family with the most other rows.
    std::string donor;
    for (const auto& [family, n] : other_rows) {
      if (donor.empty() || n > other_rows[donor]) donor = family;
    }
    for (const std::string& family : families) {
      const std::string from = other_rows.count(family) != 0 ? family : donor;
      if (from.empty()) continue;  // no other dataset at all: nothing to predict with
      EngineFit f = suite.fit(grid, from, others);
      f.family = family;
      h.fits.push_back(f);
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const ServingValidationRow& r = rows[i];
      if (r.dataset != held) continue;
      ServingValidationRow p = r;
      for (const EngineFit& f : h.fits) {
        if (f.family == r.family && std::isfinite(grid[i][f.grid_point])) p.predicted = grid[i][f.grid_point];
      }
      h.rows.push_back(std::move(p));
    }
    h.summary = summarize_serving_rows(h.rows);
    out.push_back(std::move(h));
  }
  return out;
}

std::string format_serving_validation(const std::vector<ServingValidationRow>& rows) {
  std::ostringstream out;
  std::vector<std::string> datasets;
  for (const ServingValidationRow& r : rows) {
    if (std::find(datasets.begin(), datasets.end(), r.dataset) == datasets.end()) datasets.push_back(r.dataset);
  }
  out << printf_string("  %-38s %-17s %-18s %-28s %11s %11s %8s\n", "row", "engine", "device", "metric", "measured",
                       "predicted", "error");
  for (const std::string& d : datasets) {
    out << "  " << d << "\n";
    for (const ServingValidationRow& r : rows) {
      if (r.dataset != d) continue;
      if (!r.predicted) {
        out << printf_string("    %-36s failed: %s\n", r.name.c_str(), r.error.c_str());
        continue;
      }
      out << printf_string("    %-36s %-17s %-18s %-28s %11.4g %11.4g %+7.1f %%%s\n", r.name.c_str(), r.engine.c_str(),
                           r.device.c_str(), r.metric.c_str(), r.measured, *r.predicted, 100.0 * r.relative_error(),
                           r.modelled() ? "" : (" (excluded: " + r.exclude_reason + ")").c_str());
    }
    out << "    " << summarize_serving_rows(rows, [&d](const ServingValidationRow& r) { return r.dataset == d; }).text()
        << "\n";
  }
  std::set<std::string> engines;
  for (const ServingValidationRow& r : rows) engines.insert(r.engine);
  out << "  By engine release:\n";
  for (const std::string& e : engines) {
    out << printf_string("    %-17s ", e.c_str())
        << summarize_serving_rows(rows, [&e](const ServingValidationRow& r) { return r.engine == e; }).text() << "\n";
  }
  out << "  Throughput rows: "
      << summarize_serving_rows(rows, [](const ServingValidationRow& r) { return r.throughput(); }).text() << "\n";
  out << "  Latency rows:    "
      << summarize_serving_rows(rows, [](const ServingValidationRow& r) { return !r.throughput(); }).text() << "\n";
  out << "  All rows:        " << summarize_serving_rows(rows).text() << "\n";
  return out.str();
}

std::string format_serving_leave_one_out(const std::vector<HeldOutServingDataset>& held_out) {
  std::ostringstream out;
  std::vector<ServingValidationRow> all;
  for (const HeldOutServingDataset& h : held_out) {
    out << printf_string("  %-34s %7s: %s\n", h.dataset.c_str(), counted(h.summary.rows, "row").c_str(),
                         h.summary.text().c_str());
    for (const EngineFit& f : h.fits) {
      out << printf_string("    %-13s refitted: %.2f ms + %.0f us per sampled sequence\n", f.family.c_str(),
                           f.overhead.fixed.value() * 1e3, f.overhead.per_sequence.value() * 1e6);
    }
    all.insert(all.end(), h.rows.begin(), h.rows.end());
  }
  out << "  Every held-out row: " << summarize_serving_rows(all).text() << "\n";
  out << "  Throughput rows:    "
      << summarize_serving_rows(all, [](const ServingValidationRow& r) { return r.throughput(); }).text() << "\n";
  out << "  Latency rows:       "
      << summarize_serving_rows(all, [](const ServingValidationRow& r) { return !r.throughput(); }).text() << "\n";
  return out.str();
}

}  // namespace clustersim::sim
