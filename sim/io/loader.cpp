// The scenario loader's mechanics (loader.hpp): parsing, --set overrides, the key table's checks and defaults,
// located errors.
#include "sim/io/loader.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "sim/input_file.hpp"
#include "sim/io/closest_names.hpp"
#include "sim/io/framework_profiles.hpp"
#include "sim/io/scenario_kind.hpp"
#include "sim/io/toml_limits.hpp"

namespace clustersim::sim::detail {

namespace {

constexpr std::string_view kSetFile = "--set";

std::string_view node_type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
  }
  return "?";
}

std::string_view expected_name(ParamType t) {
  switch (t) {
    case ParamType::integer: return "an integer";
    case ParamType::number: return "a number";
    case ParamType::string: return "a string";
    case ParamType::boolean: return "a boolean";
    case ParamType::zone_list: return "an array of tables";
    case ParamType::string_list: return "an array of strings";
    case ParamType::number_list: return "an array of numbers";
  }
  return "?";
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

/// Keys of table `table` in the parameter table, in order, comma separated.
std::string known_keys_of(std::string_view table) {
  std::string out;
  for (const auto& p : detail::scenario_params()) {
    if (p.table() != table) continue;
    if (!out.empty()) out += ", ";
    out += p.leaf();
  }
  return out;
}

std::string known_tables() {
  std::string out;
  for (const auto& t : detail::scenario_tables()) {
    if (t.name.empty()) continue;
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

/// For a syntax error on `line` (1-based) of `text`: "table.key" when that line reads `key = ...` (table from
/// the last `[table]` header above it), else "". Best effort; the parser has given up, so this reads lines.
std::string nearest_key(const std::string& text, uint64_t line) {
  std::istringstream in(text);
  std::string current_table;
  std::string row;
  for (uint64_t n = 1; n <= line && std::getline(in, row); ++n) {
    const std::string t = trim(row);
    if (n < line) {
      if (t.size() > 2 && t.front() == '[' && t[1] != '[') {
        const auto close = t.find(']');
        if (close != std::string::npos) current_table = trim(std::string_view(t).substr(1, close - 1));
      }
      continue;
    }
    const auto eq = t.find('=');
    if (eq == std::string::npos || t.front() == '[' || t.front() == '#') return {};
    const std::string key = trim(std::string_view(t).substr(0, eq));
    if (key.empty() || key.find_first_of("\"' \t") != std::string::npos) return {};
    return current_table.empty() ? key : current_table + "." + key;
  }
  return {};
}

std::string join_key(std::string_view table, std::string_view leaf) {
  return table.empty() ? std::string(leaf) : std::string(table) + "." + std::string(leaf);
}

}  // namespace

void Loader::parse() {
  std::string text;
  try {
    text = read_input_file(path_, kMaxTextInputBytes);
  } catch (const InputFileError& e) {
    fail("", Loc{path_, 0, 0}, std::string("cannot open the scenario file: it ") + e.what());
  }
  if (const auto v = check_toml_limits(text)) fail("", Loc{path_, v->line, v->column}, v->message);
  try {
    doc_ = toml::parse(text, path_.string());
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    fail(nearest_key(text, b.line), Loc{path_, static_cast<int64_t>(b.line), static_cast<int64_t>(b.column)},
         "TOML syntax error: " + std::string(e.description()));
  }
}

bool Loader::has_table(const std::string& name) const {
  const toml::node* n = doc_.get(name);
  return n != nullptr && n->is_table();
}

void Loader::apply_overrides(const std::vector<std::string>& overrides) {
  for (size_t i = 0; i < overrides.size(); ++i) {
    const std::string& text = overrides[i];
    const auto line = static_cast<int64_t>(i + 1);
    const Loc key_loc{std::filesystem::path(kSetFile), line, 1};
    const auto eq = text.find('=');
    const std::string key = trim(std::string_view(text).substr(0, eq));
    if (eq == std::string::npos || key.empty()) {
      fail(key, key_loc, "expected KEY=VALUE, got '" + text + "'");
    }
    const ParamSpec* spec = detail::find_param(key);
    if (spec == nullptr) fail(key, key_loc, "unknown key" + suggestion_for_override(key));

    const std::string_view raw_view = std::string_view(text).substr(eq + 1);
    const auto value_offset = raw_view.find_first_not_of(" \t");
    const std::string raw = trim(raw_view);
    const Loc value_loc{std::filesystem::path(kSetFile), line,
                        static_cast<int64_t>(eq + 2 + (value_offset == std::string_view::npos ? 0 : value_offset))};

    // The value as TOML ("4", "true", "\"x\"", "[1, 2]"); anything else, or a non-string for a string key,
    // is taken as the bare string. "v = " is 4 bytes before the value's column.
    if (const auto v = check_toml_limits("v = " + raw)) {
      fail(key, Loc{value_loc.file, line, value_loc.column + v->column - 5}, v->message);
    }
    toml::table parsed;
    bool as_toml = false;
    try {
      parsed = toml::parse("v = " + raw, std::string(kSetFile));
      as_toml = parsed.size() == 1 && parsed.contains("v");
    } catch (const toml::parse_error&) {
      as_toml = false;
    }
    if (as_toml && spec->type == ParamType::string && !parsed["v"].is_string()) as_toml = false;

    toml::table* target = &doc_;
    const std::string table{spec->table()};
    if (!table.empty()) {
      toml::node* node = doc_.get(table);
      if (node == nullptr) {
        doc_.insert(table, toml::table{});
        node = doc_.get(table);
        overrides_.emplace(table, Override{key_loc, key + "=" + raw});
      }
      target = node->as_table();
      if (target == nullptr) {
        fail(table, node_loc(*node), "expected a table, got " + std::string(node_type_name(node->type())));
      }
    }
    const std::string leaf{spec->leaf()};
    if (as_toml) {
      parsed["v"].node()->visit([&](const auto& v) { target->insert_or_assign(leaf, v); });
    } else {
      target->insert_or_assign(leaf, raw);
    }
    overrides_.insert_or_assign(key, Override{value_loc, key + "=" + raw});
    set_options_.push_back(key + "=" + raw);
  }
}

void Loader::check_schema_version() { check_param(*detail::find_param("schema_version"), nullptr); }

void Loader::check_structure(const ScenarioKind& kind) {
  for (const auto& [k, node] : doc_) {
    const std::string key{k.str()};
    if (const auto* t = detail::find_table(key); t != nullptr && !key.empty()) {
      const toml::table* tbl = node.as_table();
      if (tbl == nullptr) {
        fail(key, value_loc_of(key, node), "expected a table, got " + std::string(node_type_name(node.type())));
      }
      if (!kind.takes_table(key)) {
        const std::string option = set_option(key);
        std::string message{option.empty() ? kind.foreign_table_message : kind.foreign_set_message};
        message.replace(message.find("{table}"), 7, key);
        if (!option.empty()) message = "--set " + option + ": " + message;
        fail(key, key_loc_of(key, k), std::move(message));
      }
      if (key == "sweep") continue;  // read by sim/sweep (read_sweep), not part of one run
      for (const auto& entry : *tbl) {
        const std::string dotted = join_key(key, entry.first.str());
        if (detail::find_param(dotted) == nullptr) {
          fail(dotted, key_loc_of(dotted, entry.first),
               "unknown key (keys of [" + key + "]: " + known_keys_of(key) + ")");
        }
        if (const std::string_view why = kind.foreign_key_message(dotted); !why.empty()) {
          fail(dotted, key_loc_of(dotted, entry.first), std::string(why));
        }
      }
    } else if (detail::find_param(key) == nullptr) {
      fail(key, key_loc_of(key, k),
           std::string(node.is_table() ? "unknown table" : "unknown key") + " (top-level keys: " +
               known_keys_of("") + "; tables: " + known_tables() + ")");
    }
  }
  for (const auto& t : detail::scenario_tables()) {
    const bool required =
        std::find(kind.required_tables.begin(), kind.required_tables.end(), t.name) != kind.required_tables.end();
    if (!t.name.empty() && required && doc_.get(std::string(t.name)) == nullptr) {
      fail(std::string(t.name), Loc{path_, 1, 1}, "required table is missing");
    }
  }
}

void Loader::check_params(const ScenarioKind& kind) {
  for (const auto& p : detail::scenario_params()) {
    if (kind.takes_table(p.table()) && kind.foreign_key_message(p.key).empty()) check_param(p, &kind);
  }
}

std::string Loader::resolved_text() const {
  std::ostringstream text;
  text << toml::toml_formatter{resolved_, toml::format_flags::allow_unicode_strings |
                                              toml::format_flags::indentation};
  std::string out = text.str();
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

void Loader::fail(std::string key, const Loc& loc, std::string message) {
  throw ScenarioError(loc.file, loc.line, loc.column, std::move(key), std::move(message));
}

void Loader::fail_at(const std::string& dotted, std::string message) const {
  fail(dotted, loc_of(dotted), std::move(message));
}

Loc Loader::node_loc(const toml::node& node) const {
  const auto& src = node.source();
  if (src.begin.line == 0) return Loc{path_, 1, 1};
  return Loc{path_, static_cast<int64_t>(src.begin.line), static_cast<int64_t>(src.begin.column)};
}

/// A value's position: its --set option, else its place in the file.
Loc Loader::value_loc_of(const std::string& dotted, const toml::node& node) const {
  if (auto it = overrides_.find(dotted); it != overrides_.end()) return it->second.loc;
  return node_loc(node);
}

/// A key's position (for unknown keys): the key itself in the file.
Loc Loader::key_loc_of(const std::string& dotted, const toml::key& key) const {
  if (auto it = overrides_.find(dotted); it != overrides_.end()) return it->second.loc;
  const auto& src = key.source();
  if (src.begin.line == 0) return Loc{path_, 1, 1};
  return Loc{path_, static_cast<int64_t>(src.begin.line), static_cast<int64_t>(src.begin.column)};
}

Loc Loader::table_loc(std::string_view table) const {
  if (table.empty()) return Loc{path_, 1, 1};
  const std::string name{table};
  if (auto it = overrides_.find(name); it != overrides_.end()) return it->second.loc;
  if (const toml::node* n = doc_.get(name)) return node_loc(*n);
  return Loc{path_, 1, 1};
}

std::string Loader::set_option(std::string_view dotted) const {
  const auto it = overrides_.find(dotted);
  return it == overrides_.end() ? std::string{} : it->second.option;
}

const toml::node* Loader::find_node(std::string_view table, std::string_view leaf) const {
  if (table.empty()) return doc_.get(leaf);
  const toml::node* t = doc_.get(table);
  if (t == nullptr || !t->is_table()) return nullptr;
  return t->as_table()->get(leaf);
}

Loc Loader::loc_of(const std::string& dotted) const {
  const auto dot = dotted.find('.');
  const std::string table = dot == std::string::npos ? std::string{} : dotted.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  if (const toml::node* n = find_node(table, leaf)) return value_loc_of(dotted, *n);
  return table_loc(table);
}

void Loader::check_param(const ParamSpec& p, const ScenarioKind* kind) {
  const std::string key{p.key};
  const std::string table{p.table()};
  const std::string leaf{p.leaf()};
  if (!table.empty() && doc_.get(table) == nullptr) {
    // The whole optional table is absent: defaults still apply, required keys do not; nor do they when the
    // kind says the table means nothing without another that is absent too ([reliability] without [job]).
    const std::string_view parent = kind == nullptr ? std::string_view{} : kind->defaults_need(table);
    if (p.need == Need::defaulted && (parent.empty() || doc_.get(parent) != nullptr)) set_default(p);
    return;
  }
  const toml::node* node = find_node(table, leaf);
  if (node == nullptr) {
    switch (p.need) {
      case Need::required: fail(key, table_loc(table), "required key is missing");
      case Need::defaulted: set_default(p); return;
      case Need::derived:
      case Need::optional: set_framework_default(p); return;
    }
    return;
  }
  // The value's position, for a message: found only when a check fails (a load checks hundreds of keys).
  const auto loc = [&] { return value_loc_of(key, *node); };
  const auto got_type = [&] {
    std::string g = "got " + std::string(node_type_name(node->type()));
    if (node->is_integer()) g += " " + std::to_string(node->as_integer()->get());
    if (node->is_floating_point()) g += " " + detail::format_number(node->as_floating_point()->get());
    return g;
  };
  const auto wrong_type = [&] {
    fail(key, loc(), "expected " + std::string(expected_name(p.type)) + ", " + got_type());
  };
  const auto out_of_range = [&](const std::string& got) {
    std::string message = "must be " + detail::allowed_text(p) + ", got " + got;
    if (!p.bound_reason.empty()) message.append(" (bound: ").append(p.bound_reason).append(")");
    fail(key, loc(), std::move(message));
  };
  switch (p.type) {
    case ParamType::integer: {
      const auto v = node->value_exact<int64_t>();
      if (!node->is_integer() || !v) wrong_type();
      if (*v < p.min_int || *v > p.max_int) out_of_range(std::to_string(*v));
      set(key, *v);
      break;
    }
    case ParamType::number: {
      if (!node->is_number()) wrong_type();
      const double v = node->is_integer() ? static_cast<double>(node->as_integer()->get())
                                          : node->as_floating_point()->get();
      if (!std::isfinite(v)) fail(key, loc(), "must be a finite number, got " + detail::format_number(v));
      const bool lo_ok = p.lo_open ? v > p.lo : v >= p.lo;
      const bool hi_ok = p.hi_open ? v < p.hi : v <= p.hi;
      if (!lo_ok || !hi_ok) out_of_range(detail::format_number(v));
      set(key, v);
      break;
    }
    case ParamType::string: {
      if (!node->is_string()) wrong_type();
      const std::string v = node->as_string()->get();
      if (!p.choices.empty() && std::find(p.choices.begin(), p.choices.end(), v) == p.choices.end()) {
        out_of_range("'" + v + "'");
      }
      if (p.non_empty && v.empty()) out_of_range("an empty string");
      set(key, v);
      break;
    }
    case ParamType::boolean: {
      if (!node->is_boolean()) wrong_type();
      set(key, node->as_boolean()->get());
      break;
    }
    case ParamType::string_list: {
      const toml::array* items = node->as_array();
      if (items == nullptr) wrong_type();
      toml::array canonical;
      std::set<std::string> seen;
      for (const toml::node& item : *items) {
        if (!item.is_string()) {
          fail(key, loc(), "expected strings, got " + std::string(node_type_name(item.type())));
        }
        const std::string v = item.as_string()->get();
        if (std::find(p.choices.begin(), p.choices.end(), v) == p.choices.end()) {
          fail(key, loc(), "must be " + detail::allowed_text(p) + ", got '" + v + "'");
        }
        if (!seen.insert(v).second) fail(key, loc(), "'" + v + "' is given twice");
        canonical.push_back(v);
      }
      set_node(key, canonical);
      break;
    }
    case ParamType::number_list: {
      const toml::array* items = node->as_array();
      if (items == nullptr || items->empty()) wrong_type();
      toml::array canonical;
      for (const toml::node& item : *items) {
        if (!item.is_number()) fail(key, loc(), "expected numbers, got " + std::string(node_type_name(item.type())));
        const double v = item.is_integer() ? static_cast<double>(item.as_integer()->get())
                                           : item.as_floating_point()->get();
        const bool ok = std::isfinite(v) && (p.lo_open ? v > p.lo : v >= p.lo) && (p.hi_open ? v < p.hi : v <= p.hi);
        if (!ok) out_of_range(detail::format_number(v));
        canonical.push_back(v);
      }
      set_node(key, canonical);
      break;
    }
    case ParamType::zone_list: {
      const toml::array* zones = node->as_array();
      if (zones == nullptr || zones->empty()) wrong_type();
      toml::array canonical;
      std::set<std::string> names;
      for (const toml::node& z : *zones) {
        const toml::table* zone = z.as_table();
        if (zone == nullptr) fail(key, node_loc(z), "expected a table {name, nodes}, got " +
                                                        std::string(node_type_name(z.type())));
        for (const auto& [k, v] : *zone) {
          if (k.str() != "name" && k.str() != "nodes") {
            fail(key + "." + std::string(k.str()), key_loc_of(key, k), "unknown key (keys of a zone: name, nodes)");
          }
        }
        const toml::node* name = zone->get("name");
        const toml::node* count = zone->get("nodes");
        if (name == nullptr) fail(key + ".name", node_loc(z), "required key is missing");
        if (count == nullptr) fail(key + ".nodes", node_loc(z), "required key is missing");
        if (!name->is_string() || name->as_string()->get().empty()) {
          fail(key + ".name", node_loc(*name), "expected a non-empty string");
        }
        const auto n = count->value_exact<int64_t>();
        if (!count->is_integer() || !n || *n < 1) fail(key + ".nodes", node_loc(*count), "expected an integer >= 1");
        if (!names.insert(name->as_string()->get()).second) {
          fail(key + ".name", node_loc(*name), "zone '" + name->as_string()->get() + "' is given twice");
        }
        canonical.push_back(toml::table{{"name", name->as_string()->get()}, {"nodes", *n}});
      }
      set_node(key, canonical);
      break;
    }
  }
}

namespace {

/// `d`'s value parsed as a TOML literal (the document "v = " + value), once per process: a sweep loads
/// the scenario once per candidate layout, and each load sets the profile's defaults (the same parse of the same
/// text, so the same node). The tables are never changed nor erased once inserted (std::map nodes do not move),
/// so the reference stays valid and is only read, outside the lock.
const toml::table& parsed_framework_default(const detail::FrameworkDefault& d) {
  static std::mutex mutex;
  static std::map<const detail::FrameworkDefault*, toml::table> parsed;
  std::lock_guard lock(mutex);
  auto it = parsed.find(&d);
  if (it == parsed.end()) it = parsed.emplace(&d, toml::parse("v = " + std::string(d.value))).first;
  return it->second;
}

}  // namespace

/// The framework profile's default of `p`, when training.framework (checked before the keys it sets) has one.
bool Loader::set_framework_default(const ParamSpec& p) {
  if (p.key == "training.framework") return false;
  const toml::node* f = resolved_node("training.framework");
  if (f == nullptr) return false;
  const auto* d = detail::find_framework_default(f->as_string()->get(), p.key);
  if (d == nullptr) return false;
  // The profile's TOML literal for the key, its parse made once.
  parsed_framework_default(*d)["v"].node()->visit([&](const auto& v) { set_node(std::string(p.key), v); });
  return true;
}

void Loader::set_default(const ParamSpec& p) {
  if (set_framework_default(p)) return;
  // Every default parsed once per process (a sweep loads the scenario once per point).
  static const std::map<std::string_view, toml::table, std::less<>> defaults = [] {
    std::map<std::string_view, toml::table, std::less<>> m;
    for (const ParamSpec& q : detail::scenario_params()) {
      if (q.need == Need::defaulted) m.emplace(q.key, toml::parse("v = " + std::string(q.default_text)));
    }
    return m;
  }();
  defaults.find(p.key)->second["v"].node()->visit([&](const auto& v) { set_node(std::string(p.key), v); });
}

// string_view keys: the rules ask with literals, and a std::string of a literal past 15 characters allocates.
const toml::node* Loader::resolved_node(std::string_view dotted) const {
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos) return resolved_.get(dotted);
  const toml::table* t = resolved_table(dotted.substr(0, dot));
  return t == nullptr ? nullptr : t->get(dotted.substr(dot + 1));
}

const toml::table* Loader::resolved_table(std::string_view table) const {
  const toml::node* n = resolved_.get(table);
  return n == nullptr ? nullptr : n->as_table();
}

std::optional<double> Loader::get_optional_double(std::string_view dotted) const {
  const toml::node* n = resolved_node(dotted);
  if (n == nullptr) return std::nullopt;
  return n->value<double>();
}

int64_t Loader::checked_mul(int64_t a, int64_t b, const std::string& key) const {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    fail_at(key, "too large: " + std::to_string(a) + " × " + std::to_string(b) + " overflows a 64-bit integer");
  }
  return r;
}

std::string Loader::suggestion_for_override(const std::string& key) const {
  std::vector<std::string> names;
  for (const auto& p : detail::scenario_params()) names.emplace_back(p.key);
  return " (closest: " + closest_names(key, names, 3) + ")";
}

}  // namespace clustersim::sim::detail
