// Scenario loading (scenario.hpp): a load reads the document (loader.hpp), applies the --set overrides, checks
// schema_version, the structure and every key against the key table (scenario_params.cpp) for the document's
// kind (scenario_kind.hpp), runs the kind's rules (training_scenario.cpp, serving_scenario_rules.cpp) and builds
// the resolved scenario.
#include "sim/io/scenario.hpp"

#include <sstream>

#include "sim/io/loader.hpp"
#include "sim/io/scenario_kind.hpp"
#include "sim/io/serving_scenario_rules.hpp"
#include "sim/io/training_scenario.hpp"

namespace clustersim::sim {

namespace {

std::string format_what(const std::filesystem::path& file, int64_t line, int64_t column, const std::string& key,
                        const std::string& message) {
  std::ostringstream s;
  s << file.string() << ':' << line << ':' << column << ": key '" << key << "': " << message;
  return s.str();
}

}  // namespace

ScenarioError::ScenarioError(std::filesystem::path file, int64_t line, int64_t column, std::string key,
                             std::string message)
    : std::runtime_error(format_what(file, line, column, key, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      key_(std::move(key)) {}

struct ScenarioDocument::Impl {
  std::filesystem::path path;
  toml::table table;
};

ScenarioDocument ScenarioDocument::read(const std::filesystem::path& path) {
  detail::Loader loader(path);
  loader.parse();
  ScenarioDocument doc;
  doc.impl_ = std::make_shared<const Impl>(Impl{path, loader.take_document()});
  return doc;
}

const std::filesystem::path& ScenarioDocument::path() const {
  if (!impl_) throw std::logic_error("ScenarioDocument: not read");
  return impl_->path;
}

namespace {

Scenario load_training(detail::Loader& loader, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog, ResolvedText text = ResolvedText::keep) {
  detail::check_as(loader, overrides, catalog, detail::scenario_kind_named("training"));
  return detail::build_training_scenario(loader, text == ResolvedText::keep);
}

}  // namespace

std::string_view scenario_kind(const std::filesystem::path& path) {
  detail::Loader loader(path);
  loader.parse();
  for (const detail::ScenarioKind& k : detail::scenario_kinds()) {
    if (k.marker_table.empty() || loader.has_table(std::string(k.marker_table))) return k.name;
  }
  return detail::scenario_kinds().back().name;
}

bool is_serving_scenario(const std::filesystem::path& path) { return scenario_kind(path) == "serving"; }

ServingScenario load_serving_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                                      const models::Catalog& catalog) {
  detail::Loader loader(path);
  loader.parse();
  detail::check_as(loader, overrides, catalog, detail::scenario_kind_named("serving"));
  return detail::build_serving_scenario(loader);
}

Scenario load_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog) {
  detail::Loader loader(path);
  loader.parse();
  return load_training(loader, overrides, catalog);
}

Scenario load_scenario(const ScenarioDocument& document, const std::vector<std::string>& overrides,
                       const models::Catalog& catalog, ResolvedText text) {
  detail::Loader loader(document.path());
  loader.use(document.impl_->table);
  return load_training(loader, overrides, catalog, text);
}

}  // namespace clustersim::sim
