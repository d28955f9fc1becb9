#include "sim/sweep/fingerprint.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <system_error>
#include <toml++/toml.h>

#include "sim/input_file.hpp"
#include "sim/sweep/sidecar.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

namespace fs = std::filesystem;

std::string hex64(uint64_t h) {
  char text[32];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

namespace {

/// FNV-1a of the bytes of `path` (a regular file of at most `max_bytes`), read in chunks; of "unreadable: REASON"
/// when it cannot be read.
uint64_t file_hash(const fs::path& path, int64_t max_bytes, uint64_t h = 0xcbf29ce484222325ULL) {
  try {
    check_input_file(path, max_bytes);
  } catch (const InputFileError& e) {
    return fnv1a(std::string("unreadable: ") + e.what(), h);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fnv1a("unreadable: cannot open", h);
  std::string chunk(1 << 16, '\0');
  int64_t total = 0;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = in.gcount();
    if (got <= 0) break;
    total += got;
    if (total > max_bytes) return fnv1a("unreadable: grew past its size limit", h);
    h = fnv1a(std::string_view(chunk.data(), static_cast<size_t>(got)), h);
  }
  return h;
}

/// The string value of the dotted `key` in the TOML text `toml_text`, or "" when absent or not a string.
std::string string_key(const std::string& toml_text, std::string_view key) {
  try {
    const toml::table doc = toml::parse(toml_text);
    if (const auto v = doc.at_path(key).value<std::string>()) return *v;
  } catch (const toml::parse_error&) {
  }
  return {};
}

}  // namespace

std::vector<FingerprintPart> sweep_fingerprint(const LoadedSweep& sweep, const fs::path& catalog_directory) {
  std::vector<FingerprintPart> parts;
  const auto add = [&parts](std::string name, uint64_t h) { parts.push_back({std::move(name), hex64(h)}); };
  add("scenario", file_hash(sweep.scenario, kMaxTextInputBytes));
  std::string set;
  for (const std::string& o : sweep.overrides) set += o + "\n";
  add("set", fnv1a(set));
  // The [sweep] table as read: objective, layout search, then each axis's keys and values.
  std::string table = std::string(to_string(sweep.spec.objective)) + (sweep.spec.objective_given ? "!" : "") +
                      (sweep.spec.auto_parallelism ? " auto" : "") + "\n";
  for (const SweepAxis& a : sweep.spec.axes) {
    for (const std::string& k : a.keys) table += k + " ";
    table += "=";
    for (const auto& row : a.values) {
      for (const ScalarValue& v : row) table += " " + toml_literal(v);
      table += ";";
    }
    table += "\n";
  }
  add("sweep", fnv1a(table));
  // The traces: the base scenario's (with --set) and every swept value, resolved as the loader resolves them.
  const fs::path dir = sweep.scenario.parent_path();
  for (const auto& [key, label] : {std::pair<std::string_view, std::string_view>{"workload.trace", "request trace"},
                                   {"reliability.spot_eviction_trace", "eviction trace"}}) {
    std::set<std::string> values;
    if (std::string v = string_key(sweep.resolved_toml(), key); !v.empty()) values.insert(std::move(v));
    for (const SweepPoint& p : sweep.points) {
      for (const SweptValue& v : p.values) {
        if (v.key == key && std::holds_alternative<std::string>(v.value)) values.insert(std::get<std::string>(v.value));
      }
    }
    for (const std::string& v : values) {
      add(std::string(label) + " '" + v + "'", file_hash(dir / v, kMaxTraceInputBytes));
    }
  }
  // The catalog: every regular file under its directory, by relative path.
  std::map<std::string, fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(catalog_directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      files.emplace(it->path().lexically_relative(catalog_directory).generic_string(), it->path());
    }
  }
  uint64_t catalog = fnv1a(ec ? "unreadable: " + ec.message() : std::string());
  for (const auto& [rel, path] : files) catalog = file_hash(path, kMaxTraceInputBytes, fnv1a(rel + "\n", catalog));
  add("catalog", catalog);
  add("engine", fnv1a(std::string(software_version()) + " " + git_sha()));
  std::string points;
  for (const SweepPoint& p : sweep.points) {
    points += std::to_string(p.index) + " " + std::to_string(p.seed);
    for (const std::string& o : p.overrides()) points += " " + o;
    points += "\n";
  }
  add("points", fnv1a(points));
  return parts;
}

std::string describe_fingerprint_change(const std::vector<FingerprintPart>& was,
                                        const std::vector<FingerprintPart>& now, const std::string& since) {
  const auto what = [](const std::string& name) -> std::string {
    if (name == "scenario") return "the scenario";
    if (name == "set") return "the --set overrides";
    if (name == "sweep") return "the [sweep] table";
    if (name == "catalog") return "the hardware catalog";
    if (name == "engine") return "the clustersim version";
    if (name == "points") return "the sweep's points";
    if (name == "shard") return "the shard (--shard)";
    return "the " + name;
  };
  std::map<std::string, std::string> before, after;
  for (const auto& p : was) before[p.name] = p.hash;
  for (const auto& p : now) after[p.name] = p.hash;
  std::vector<std::string> changed;
  // In the order of `now`, then the parts only `was` has.
  for (const auto& p : now) {
    const auto it = before.find(p.name);
    if (it == before.end()) {
      changed.push_back(what(p.name) + " is new " + since);
    } else if (it->second != p.hash) {
      changed.push_back(what(p.name) + " changed " + since);
    }
  }
  for (const auto& p : was) {
    if (!after.count(p.name)) changed.push_back(what(p.name) + " is no longer read " + since);
  }
  // "points" changes with almost any other part: name it only alone.
  if (changed.size() > 1) {
    changed.erase(std::remove(changed.begin(), changed.end(), what("points") + " changed " + since), changed.end());
  }
  std::string out;
  for (size_t i = 0; i < changed.size(); ++i) out += (i == 0 ? "" : "; ") + changed[i];
  return out;
}

}  // namespace clustersim::sim
