#include "sim/cli/validate_command.hpp"
#include "sim/cli/catalog_directory.hpp"

#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/output/atomic_file.hpp"
#include "sim/output/output_path.hpp"
#include "sim/validation/serving_validation.hpp"
#include "sim/validation/validation.hpp"
#include "sim/validation/validation_report.hpp"

namespace po = boost::program_options;

namespace clustersim::sim {

namespace {

ServingValidationSuite load_serving_suite(const std::filesystem::path& dir, const models::Catalog& catalog) {
  try {
    return ServingValidationSuite::load(dir, catalog);
  } catch (const std::runtime_error& e) {
    throw DataError(e.what());
  }
}

/// The serving group: its rows with the engines' catalog overheads; with --fit the overheads fitted on the whole
/// group; with --leave-one-out the leave-one-source-out check (docs/serving.md, "Validation"). Then the
/// mixture-of-experts rows, predicted with those overheads and never fitted on.
void run_serving_group(const po::variables_map& vm, const models::Catalog& catalog, int jobs) {
  const std::filesystem::path source(CLUSTERSIM_SOURCE_DIR);
  const std::filesystem::path dir = vm.count("serving") ? std::filesystem::path(vm["serving"].as<std::string>())
                                                        : source / "scenarios" / "validation-serving";
  const std::filesystem::path moe_dir = vm.count("serving-moe")
                                            ? std::filesystem::path(vm["serving-moe"].as<std::string>())
                                            : source / "scenarios" / "validation-serving-moe";
  const ServingValidationSuite suite = load_serving_suite(dir, catalog);
  const std::vector<ServingValidationRow> rows = suite.evaluate(catalog, jobs);
  std::cout << "\nServing group: " << rows.size() << " published serving measurements in " << dir.string()
            << " (engine overheads: models/serving/engine_profile.cpp)\n"
            << format_serving_validation(rows);
  if (!vm.count("fit") && !vm.count("leave-one-out")) return;
  const std::vector<std::vector<double>> grid = suite.predict_grid(catalog, jobs);
  if (vm.count("fit")) {
    std::set<std::string> families;
    for (const ServingValidationRow& r : suite.rows()) {
      if (r.modelled() && r.error.empty()) families.insert(r.family);
    }
    std::cout << "\nEngine families' overheads fitted on the whole serving group:\n";
    for (const std::string& e : families) {
      const EngineFit f = suite.fit(grid, e);
      std::printf("  %-13s %.2f ms + %.0f us per sampled sequence: %s\n", e.c_str(), f.overhead.fixed.value() * 1e3,
                  f.overhead.per_sequence.value() * 1e6, f.in_sample.text().c_str());
    }
  }
  if (vm.count("leave-one-out")) {
    std::cout << "\nServing, leave one source out (refit the engine families without the dataset, predict it):\n"
              << format_serving_leave_one_out(leave_one_serving_dataset_out(suite, grid));
  }
  if (!std::filesystem::is_directory(moe_dir)) return;
  const ServingValidationSuite moe = load_serving_suite(moe_dir, catalog);
  std::cout << "\nMixture-of-experts serving rows: " << moe.size() << " published measurements in "
            << moe_dir.string() << ", predicted with the engines' overheads above (not fitted on)\n"
            << format_serving_validation(moe.evaluate(catalog, jobs));
}

}  // namespace

int run_validate_command(const std::vector<std::string>& args) {
  po::options_description options("clustersim validate [DIR] [options]");
  options.add_options()("help,h", "show this help")
      ("jobs,j", po::value<int>()->default_value(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
       "threads")
      ("fit", "refit every calibration group's training fractions on the whole suite and print them")
      ("leave-one-out", "leave-one-source-out: refit without each dataset, predict it")
      ("write-uncertainty", po::value<std::string>(),
       "with --leave-one-out: write the prediction bands (the catalog's prediction_uncertainty.toml) to this file")
      ("serving", po::value<std::string>(),
       "the serving group's scenarios (default: scenarios/validation-serving)")
      ("serving-moe", po::value<std::string>(),
       "the mixture-of-experts serving rows, predicted and never fitted on (default: "
       "scenarios/validation-serving-moe)")
      ("no-serving", "leave out the serving group")
      ("catalog", po::value<std::string>(), "hardware catalog directory");
  po::options_description hidden;
  hidden.add_options()("directory", po::value<std::string>(), "validation scenarios");
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("directory", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::ostringstream o;
    o << options;
    throw UsageError(std::string(e.what()) + "\n" + o.str());
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 1) throw UsageError("--jobs must be >= 1");
  if (vm.count("write-uncertainty") && !vm.count("leave-one-out")) {
    throw UsageError("--write-uncertainty needs --leave-one-out");
  }
  // Before the minutes of fitting: the bands' file must be writable (not a device, a directory, a missing one).
  if (vm.count("write-uncertainty")) {
    check_output_path(vm["write-uncertainty"].as<std::string>(), {}, "--write-uncertainty");
  }
  const models::Catalog catalog = models::Catalog::load(
      vm.count("catalog") ? vm["catalog"].as<std::string>() : cli::default_catalog_directory().string());
  const std::filesystem::path dir = vm.count("directory")
                                        ? std::filesystem::path(vm["directory"].as<std::string>())
                                        : std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / "validation";
  ValidationSuite suite;
  try {
    suite = ValidationSuite::load(dir, catalog);
  } catch (const std::runtime_error& e) {
    throw DataError(e.what());
  }
  const std::vector<ValidationRow> rows = suite.evaluate(catalog, jobs);
  std::cout << "Validation suite: " << rows.size() << " published runs in " << dir.string() << "\n";
  std::cout << format_validation_rows(rows);
  std::cout << "\nBy GPU group and framework (modelled rows):\n" << format_validation_by_group(rows);
  if (vm.count("fit")) {
    std::set<std::string> groups;
    for (const ValidationRow& r : suite.rows()) {
      if (r.calibrates() && !r.calibration_group.empty()) groups.insert(r.calibration_group);
    }
    std::cout << "\nTraining fractions fitted on the whole suite (catalog: models/hardware/catalog/devices.toml):\n";
    for (const std::string& g : groups) {
      const CalibrationFit f = suite.fit(catalog, g, jobs);
      std::printf("  %-18s matmul %.2f, memory %.2f: %s (%d evaluations)\n", g.c_str(), f.fractions.matmul,
                  f.fractions.memory, f.in_sample.text().c_str(), f.evaluations);
    }
  }
  if (vm.count("leave-one-out")) {
    const std::vector<HeldOutDataset> held_out = leave_one_dataset_out(suite, catalog, jobs);
    std::cout << "\nLeave one source out (refit without the dataset, predict it):\n" << format_leave_one_out(held_out);
    if (vm.count("write-uncertainty")) {
      const std::filesystem::path path(vm["write-uncertainty"].as<std::string>());
      try {
        write_text_atomically(path, format_prediction_uncertainty(held_out), "clustersim validate");
      } catch (const std::runtime_error& e) {
        throw IoError(e.what());
      }
      std::cout << "\nprediction bands written to " << path.string() << "\n";
    }
  }
  if (!vm.count("no-serving")) run_serving_group(vm, catalog, jobs);
  return 0;
}

}  // namespace clustersim::sim
