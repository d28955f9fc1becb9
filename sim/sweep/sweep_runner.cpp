#include "sim/sweep/sweep_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario_params.hpp"
#include "sim/run/run_scenario.hpp"
#include "sim/run/run_serving.hpp"
#include "sim/run/what_if.hpp"
#include "sim/sweep/distribution.hpp"

namespace clustersim::sim {

namespace {

void invalid(SweepRow& row, const std::string& why) {
  row.status = "invalid";
  row.reason = why;
  row.meta.reset();
  row.values.clear();
}

}  // namespace

SweepRowColumns::SweepRowColumns(std::vector<SweepValue>& values, std::shared_ptr<const SweepMetaList> last)
    : values_(values), last_(std::move(last)) {
  if (last_) values_.reserve(last_->size());
}

void SweepRowColumns::real(std::string_view name, std::string_view units, std::string_view description,
                           double value) {
  values_.emplace_back(value);
  meta(name, units, description, false);
}

void SweepRowColumns::integer(std::string_view name, std::string_view units, std::string_view description,
                              int64_t value) {
  values_.emplace_back(static_cast<double>(value));
  meta(name, units, description, false);
}

void SweepRowColumns::text(std::string_view name, std::string_view units, std::string_view description,
                           std::string_view value) {
  values_.emplace_back(std::string(value));
  meta(name, units, description, true);
}

void SweepRowColumns::column(SummaryColumn c) {
  const bool is_text = std::holds_alternative<std::vector<std::string>>(c.values);
  std::visit(
      [&](auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) {
          values_.emplace_back(v.empty() ? std::string() : std::move(v.front()));
        } else {
          values_.emplace_back(v.empty() ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(v.front()));
        }
      },
      c.values);
  meta(c.name, c.units, c.description, is_text);
}

std::shared_ptr<const SweepMetaList> SweepRowColumns::list() {
  if (!fresh_ && last_ && count_ == last_->size()) return last_;
  if (!fresh_) copy_matched();
  return std::make_shared<const SweepMetaList>(std::move(*fresh_));
}

void SweepRowColumns::meta(std::string_view name, std::string_view units, std::string_view description,
                           bool is_text) {
  if (!fresh_) {
    if (last_ && count_ < last_->size()) {
      const SweepColumnMeta& m = (*last_)[count_];
      if (m.is_string == is_text && m.name == name && m.units == units && m.description == description) {
        ++count_;
        return;
      }
    }
    copy_matched();
  }
  fresh_->push_back({std::string(name), std::string(units), std::string(description), is_text});
  ++count_;
}

void SweepRowColumns::copy_matched() {
  fresh_.emplace();
  if (last_) fresh_->assign(last_->begin(), last_->begin() + static_cast<std::ptrdiff_t>(count_));
}

LoadedSweep load_sweep(const std::filesystem::path& scenario, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog, int jobs) {
  LoadedSweep s;
  s.scenario = scenario;
  s.overrides = overrides;
  s.document = ScenarioDocument::read(scenario);
  if (is_serving_scenario(scenario)) {
    s.serving = load_serving_scenario(scenario, overrides, catalog);
  } else {
    s.base = load_scenario(s.document, overrides, catalog);
  }
  s.spec = read_sweep(scenario);
  if (!s.spec.auto_parallelism) {
    s.points = expand_sweep(s.spec, scenario, s.serving ? s.serving->seed : s.base.simulation.seed, catalog);
    return s;
  }
  // Layouts are enumerated for each grid point with the --set overrides in force.
  const SweepSpec grid{s.spec.axes, false};
  for (const SweepPoint& g : expand_sweep(grid, scenario, 0, catalog)) {
    std::vector<std::string> with_set = overrides;
    for (const std::string& o : g.overrides()) with_set.push_back(o);
    for (auto& layout : enumerate_layout_points(scenario, with_set, catalog, jobs)) {
      std::vector<SweptValue> o = g.values;
      o.insert(o.end(), layout.values.begin(), layout.values.end());
      const auto index = static_cast<int64_t>(s.points.size());
      s.points.push_back({index, sweep_point_seed(s.base.simulation.seed, index), std::move(o)});
      s.loaded.push_back(std::move(layout.scenario));
    }
  }
  return s;
}

Scenario SweepPointRunner::point_scenario(const SweepPoint& point, const std::vector<std::string>& overrides) const {
  // overrides: the sweep's --set, then simulation.seed, then the point's values (run below).
  const auto at = static_cast<size_t>(point.index);
  const bool screened = at < sweep_.loaded.size() && sweep_.loaded[at] && &sweep_.points[at] == &point;
  if (!screened || !sweep_.loaded[at]->what_if.empty()) {
    return load_scenario(sweep_.document, overrides, catalog_, ResolvedText::skip);  // a row does not print it
  }
  // The screening loaded it with the sweep's overrides and the point's values; the runner's load adds
  // simulation.seed before the point's values (so a swept simulation.seed wins), which sets that field only.
  Scenario sc = *sweep_.loaded[at];
  if (point.find("simulation.seed") == nullptr) sc.simulation.seed = point.seed;
  const auto set_options = static_cast<std::ptrdiff_t>(std::min(sweep_.overrides.size(), sc.overrides.size()));
  sc.overrides.insert(sc.overrides.begin() + set_options, overrides[sweep_.overrides.size()]);  // the seed's
  return sc;
}

SweepRow SweepPointRunner::run(const SweepPoint& point) {
  SweepRow row;
  row.index = point.index;
  row.seed = point.seed;
  std::vector<std::string> overrides = sweep_.overrides;
  overrides.push_back("simulation.seed=" + std::to_string(point.seed));
  for (const SweptValue& v : point.values) overrides.push_back(v.override_text());
  try {
    bool fits = true;
    std::string verdict;
    SweepRowColumns columns(row.values, last_meta_);
    if (sweep_.serving) {
      const ServingScenario sc = load_serving_scenario(sweep_.scenario, overrides, catalog_);
      for (SummaryColumn& c : serving_summary_columns(sc, run_serving_scenario(sc, catalog_))) {
        columns.column(std::move(c));
      }
    } else {
      const Scenario sc = point_scenario(point, overrides);
      const RunResult run = run_scenario(sc, catalog_, simulator_);
      write_run_summary_columns(sc, run, columns);
      if (!sc.what_if.empty()) {  // analysis.what_if: the point's what-if rows as columns
        WhatIfRequest request;
        request.enabled = true;
        request.only = sc.what_if;
        const TrainingWhatIf what_if =
            run_training_what_if(*plan_training_what_if(sc, catalog_, request), run.step, simulator_);
        for (SummaryColumn& c : what_if_point_columns(sc.what_if, what_if)) columns.column(std::move(c));
      }
      fits = run.step.memory.fits;
      verdict = run.step.memory.verdict;
    }
    // The columns' names, units and descriptions are nearly always the last point's: then the row shares that
    // list, compared in place, and no list is built.
    last_meta_ = columns.list();
    row.meta = last_meta_;
    row.status = fits ? "ok" : "out_of_memory";
    row.reason = fits ? std::string() : verdict;
  } catch (const ScenarioError& e) {
    invalid(row, e.what());
  } catch (const std::invalid_argument& e) {
    invalid(row, e.what());
  } catch (const std::out_of_range& e) {
    invalid(row, e.what());
  }
  return row;
}

std::vector<SweepRow> run_sweep(const LoadedSweep& sweep, const models::Catalog& catalog,
                                const std::vector<const SweepPoint*>& points, const SweepRunOptions& options) {
  std::vector<SweepRow> rows(points.size());
  for (SweepRow& r : rows) r.index = -1;
  const size_t target =
      options.limit >= 0 ? std::min(points.size(), static_cast<size_t>(options.limit)) : points.size();
  std::atomic<size_t> finished{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto clusters = options.clusters ? options.clusters : std::make_shared<ClusterCache>();
  GuidedScheduler scheduler(target, static_cast<size_t>(std::max(1, options.jobs)));
  const auto worker = [&] {
    try {
      SweepPointRunner runner(sweep, catalog, clusters);
      size_t begin = 0;
      size_t end = 0;
      while (!failed && scheduler.next(begin, end)) {
        for (size_t k = begin; k < end && !failed; ++k) {
          SweepRow row = runner.run(*points[k]);
          if (options.on_row) options.on_row(row);
          rows[k] = std::move(row);
          finished.fetch_add(1);
        }
      }
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failed.exchange(true)) failure = std::current_exception();
    }
  };
  const int jobs = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(std::max(1, options.jobs)), std::max<size_t>(1, target)));
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  if (options.progress) {
    while (finished.load() < target && !failed) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      options.progress(finished.load());
    }
  }
  for (auto& t : threads) t.join();
  if (failed) std::rethrow_exception(failure);
  return rows;
}

}  // namespace clustersim::sim
