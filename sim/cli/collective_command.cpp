#include "sim/cli/collective_command.hpp"
#include "sim/errors.hpp"
#include "sim/run/exit_status.hpp"

#include <boost/program_options.hpp>

#include <charconv>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"
#include "models/units.hpp"
#include "sim/output/results_file.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

namespace {

namespace po = boost::program_options;


__attribute__((format(printf, 1, 2))) std::string strf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0U, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, args);
  va_end(args);
  return s;
}

/// "1024", "1K", "64M", "8G" (binary multiples, either case) as bytes; nullopt for anything else or for a value
/// that does not fit in int64.
std::optional<int64_t> parse_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) return std::nullopt;
  int64_t multiplier = 1;
  const std::string_view suffix = text.substr(digits);
  if (suffix == "K" || suffix == "k") {
    multiplier = int64_t{1} << 10;
  } else if (suffix == "M" || suffix == "m") {
    multiplier = int64_t{1} << 20;
  } else if (suffix == "G" || suffix == "g") {
    multiplier = int64_t{1} << 30;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (value > std::numeric_limits<int64_t>::max() / multiplier) return std::nullopt;
  return value * multiplier;
}

int64_t size_option(const po::variables_map& vm, const char* name) {
  const std::string text = vm[name].as<std::string>();
  const auto bytes = parse_size(text);
  if (!bytes) {
    throw UsageError(std::string("--") + name + ": '" + text +
                     "' is not a size (an integer with an optional K, M or G suffix, binary: 1K = 1024)");
  }
  if (*bytes < 1) throw UsageError(std::string("--") + name + " must be at least 1 byte");
  return *bytes;
}

/// "name:nodes,name:nodes" as zone specs: names non-empty and distinct, node counts positive integers.
std::vector<models::ZoneSpec> parse_zones(const std::string& text) {
  const std::string hint = " (expected name:nodes,name:nodes, e.g. --zones a:2,b:2)";
  std::vector<models::ZoneSpec> zones;
  std::set<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw UsageError("--zones: '" + item + "' is not name:nodes" + hint);
    }
    models::ZoneSpec zone;
    zone.name = item.substr(0, colon);
    const std::string count = item.substr(colon + 1);
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), zone.nodes);
    if (count.empty() || ec != std::errc() || end != count.data() + count.size() || zone.nodes < 1) {
      throw UsageError("--zones: zone '" + zone.name + "' has node count '" + count +
                       "', not a positive integer" + hint);
    }
    if (!names.insert(zone.name).second) throw UsageError("--zones: zone '" + zone.name + "' appears twice");
    zones.push_back(std::move(zone));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return zones;
}

std::string zones_text(const std::vector<models::ZoneSpec>& zones) {
  std::string s;
  for (const auto& z : zones) {
    if (!s.empty()) s += ',';
    s += z.name + ":" + std::to_string(z.nodes);
  }
  return s;
}

/// A TOML basic string.
std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += strf("\\u%04x", static_cast<unsigned>(u));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// A TOML float: the shortest round-trip form, always with a '.' or an exponent.
std::string toml_float(double v) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  std::string s = ec == std::errc() ? std::string(buffer, end) : strf("%.17g", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

struct Parameters {
  std::string catalog_dir;
  std::string vm_size;
  int64_t nodes = 1;
  int64_t gpus = 0;  ///< resolved
  models::CollectiveOp op = models::CollectiveOp::all_reduce;
  std::optional<models::CollectiveAlgorithm> algorithm;  ///< nullopt: auto
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
  int64_t step_factor = 2;
  models::TopologyConfig topology;
  double inter_zone_gbps = 0.0;  ///< resolved (the VM's Ethernet rate unless given), Gbit/s per node
  std::optional<std::string> output;
};

struct Row {
  int64_t bytes = 0;
  double time_s = 0.0;
  double algbw = 0.0;  ///< GB/s
  double busbw = 0.0;  ///< GB/s
  std::string algorithm;
  std::string protocol;
  bool crosses_zones = false;
};

std::string algorithm_name(const Parameters& p) {
  return p.algorithm ? std::string(models::to_string(*p.algorithm)) : std::string("auto");
}

/// The collective's parameters as TOML (the file's scenario_toml attribute).
std::string parameters_toml(const Parameters& p) {
  std::ostringstream t;
  t << "# clustersim collective\n"
    << "vm_size = " << toml_string(p.vm_size) << "\n"
    << "nodes = " << p.nodes << "\n"
    << "gpus = " << p.gpus << "\n"
    << "op = " << toml_string(models::to_string(p.op)) << "\n"
    << "algorithm = " << toml_string(algorithm_name(p)) << "\n"
    << "min_bytes = " << p.min_bytes << "\n"
    << "max_bytes = " << p.max_bytes << "\n"
    << "step_factor = " << p.step_factor << "\n"
    << "fabric = " << toml_string(models::to_string(p.topology.fabric)) << "\n"
    << "oversubscription = " << toml_float(p.topology.oversubscription) << "\n"
    << "fat_tree_radix = " << p.topology.fat_tree_radix << "\n"
    << "inter_zone_latency_ms = " << toml_float(units::in_milliseconds(p.topology.inter_zone_latency)) << "\n"
    << "inter_zone_gbps = " << toml_float(p.inter_zone_gbps) << "\n"
    << "zones = [";
  for (size_t i = 0; i < p.topology.zones.size(); ++i) {
    const auto& z = p.topology.zones[i];
    t << (i ? ", " : "") << "{ name = " << toml_string(z.name) << ", nodes = " << z.nodes << " }";
  }
  t << "]\n";
  return t.str();
}

std::vector<SummaryColumn> summary_columns(const Parameters& p, const std::vector<Row>& rows) {
  std::vector<int64_t> bytes, crosses;
  std::vector<double> time, algbw, busbw;
  std::vector<std::string> algorithm, protocol;
  for (const Row& r : rows) {
    bytes.push_back(r.bytes);
    time.push_back(r.time_s);
    algbw.push_back(r.algbw);
    busbw.push_back(r.busbw);
    algorithm.push_back(r.algorithm);
    protocol.push_back(r.protocol);
    crosses.push_back(r.crosses_zones ? 1 : 0);
  }
  const size_t n = rows.size();
  return {
      {"bytes", "B", "message size S per rank (the op's buffer, as nccl-tests' size column)", std::move(bytes)},
      {"time_s", "s", "time of one collective", std::move(time)},
      {"algbw_gb_per_s", "GB/s", "algorithm bandwidth: bytes / time_s / 1e9", std::move(algbw)},
      {"busbw_gb_per_s", "GB/s", "bus bandwidth: algbw times nccl-tests' factor for the op and group size",
       std::move(busbw)},
      {"algorithm", "", "algorithm that was timed (the fastest, or the forced one)", std::move(algorithm)},
      {"protocol", "", "NCCL protocol of that time: LL or Simple", std::move(protocol)},
      {"crosses_zones", "1", "1 if some transfer crosses an availability-zone link, else 0", std::move(crosses)},
      {"vm_size", "", "VM size (catalog key)", std::vector<std::string>(n, p.vm_size)},
      {"nodes", "1", "VMs in the cluster", std::vector<int64_t>(n, p.nodes)},
      {"gpus", "1", "ranks in the group (0..gpus-1; send_recv: 0 to gpus-1)", std::vector<int64_t>(n, p.gpus)},
      {"op", "", "collective operation", std::vector<std::string>(n, std::string(models::to_string(p.op)))},
  };
}

std::string format_table(const Parameters& p, const std::vector<Row>& rows) {
  const bool zoned = !p.topology.zones.empty();
  std::string fabric(models::to_string(p.topology.fabric));
  if (p.topology.fabric != models::FabricKind::single_switch) {
    fabric += strf(" (radix %d, oversubscription %g)", p.topology.fat_tree_radix, p.topology.oversubscription);
  }
  std::string zones = "none";
  if (zoned) {
    zones = zones_text(p.topology.zones) +
            strf(" (inter-zone %g ms, %g Gb/s per node)", units::in_milliseconds(p.topology.inter_zone_latency),
                   p.inter_zone_gbps);
  }
  const std::string group = p.op == models::CollectiveOp::send_recv
                                ? strf("ranks 0 -> %lld", static_cast<long long>(p.gpus - 1))
                                : strf("ranks 0..%lld", static_cast<long long>(p.gpus - 1));
  std::string out;
  out += strf("# clustersim collective: op %s, vm %s, nodes %lld, gpus %lld (%s), algorithm %s\n",
                std::string(models::to_string(p.op)).c_str(), p.vm_size.c_str(), static_cast<long long>(p.nodes),
                static_cast<long long>(p.gpus), group.c_str(), algorithm_name(p).c_str());
  out += strf("# fabric %s, zones %s\n", fabric.c_str(), zones.c_str());
  out += "#\n";
  out += strf("# %10s  %12s  %8s  %10s  %8s  %8s  %20s%s\n", "size", "count", "type", "time", "algbw", "busbw",
                "algorithm/protocol", zoned ? "  crosses zones" : "");
  out += strf("# %10s  %12s  %8s  %10s  %8s  %8s\n", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
  double busbw_sum = 0.0;
  for (const Row& r : rows) {
    const std::string how = r.algorithm + "/" + r.protocol;
    out += strf("%12lld  %12lld  %8s  %10.2f  %8.2f  %8.2f  %20s", static_cast<long long>(r.bytes),
                  static_cast<long long>(r.bytes / 4), "float", r.time_s * 1e6, r.algbw, r.busbw, how.c_str());
    if (zoned) out += strf("  %13s", r.crosses_zones ? "yes" : "no");
    out += "\n";
    busbw_sum += r.busbw;
  }
  out += strf("# Avg bus bandwidth    : %.3f GB/s\n", rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
  return out;
}

po::options_description options_description() {
  po::options_description options("clustersim collective --vm-size VM [options]");
  options.add_options()("help,h", "show this help")
      ("vm-size", po::value<std::string>(), "VM size (catalog key), e.g. Standard_ND96isr_H100_v5 (required)")
      ("nodes", po::value<int64_t>()->default_value(1), "VMs in the cluster")
      ("op", po::value<std::string>()->default_value("all_reduce"),
       "collective: all_reduce, reduce_scatter, all_gather, all_to_all, broadcast or send_recv")
      ("algorithm", po::value<std::string>()->default_value("auto"),
       "auto (the fastest, as NCCL's tuner picks), ring, tree, hierarchical, nvls or direct")
      ("min-bytes", po::value<std::string>()->default_value("1K"),
       "smallest message size per rank: bytes, or with a K, M or G suffix (binary: 1K = 1024)")
      ("max-bytes", po::value<std::string>()->default_value("8G"), "largest message size per rank (as --min-bytes)")
      ("step-factor", po::value<int64_t>()->default_value(2),
       "multiply the size by this from one row to the next (nccl-tests -f), >= 2")
      ("gpus", po::value<int64_t>(),
       "ranks in the group, 0..N-1 (send_recv: rank 0 sends to N-1); default: every GPU of the cluster")
      ("fabric", po::value<std::string>()->default_value("fat_tree"),
       "inter-node fabric: single_switch, fat_tree or rail_optimized")
      ("oversubscription", po::value<double>()->default_value(1.0), "leaf down/up capacity ratio, >= 1")
      ("fat-tree-radix", po::value<int>()->default_value(64), "network switch ports (even, >= 2)")
      ("zones", po::value<std::string>(),
       "availability zones, name:nodes,name:nodes in node order; the counts must sum to --nodes")
      ("inter-zone-latency-ms", po::value<double>()->default_value(1.0), "one-way latency between zones, ms")
      ("inter-zone-gbps", po::value<double>(),
       "inter-zone bandwidth per node, Gbit/s; default: the VM's front-end Ethernet rate")
      ("catalog", po::value<std::string>(), "hardware catalog directory")
      ("output,o", po::value<std::string>(), "also write the sweep to this HDF5 file (atomically)");
  return options;
}

/// Parses and checks everything that does not need the catalog. Throws UsageError.
Parameters parse_options(const po::variables_map& vm) {
  Parameters p;
  if (!vm.count("vm-size")) throw UsageError("missing --vm-size");
  p.vm_size = vm["vm-size"].as<std::string>();
  p.catalog_dir = vm.count("catalog") ? vm["catalog"].as<std::string>()
                                      : models::Catalog::default_directory().string();
  p.nodes = vm["nodes"].as<int64_t>();
  if (p.nodes < 1) throw UsageError("--nodes must be at least 1");

  const std::string op = vm["op"].as<std::string>();
  const auto parsed_op = models::parse_collective_op(op);
  if (!parsed_op) {
    throw UsageError("--op: unknown collective '" + op +
                     "' (all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv)");
  }
  p.op = *parsed_op;
  const std::string algorithm = vm["algorithm"].as<std::string>();
  if (algorithm != "auto") {
    p.algorithm = models::parse_collective_algorithm(algorithm);
    if (!p.algorithm) {
      throw UsageError("--algorithm: unknown algorithm '" + algorithm + "' (auto, ring, tree, hierarchical, nvls, direct)");
    }
  }

  p.min_bytes = size_option(vm, "min-bytes");
  p.max_bytes = size_option(vm, "max-bytes");
  if (p.min_bytes > p.max_bytes) throw UsageError("--min-bytes is larger than --max-bytes");
  p.step_factor = vm["step-factor"].as<int64_t>();
  if (p.step_factor < 2) throw UsageError("--step-factor must be at least 2");

  if (vm.count("gpus")) {
    p.gpus = vm["gpus"].as<int64_t>();
    if (p.gpus < 2) throw UsageError("--gpus must be at least 2 (a collective needs two ranks)");
  }

  const std::string fabric = vm["fabric"].as<std::string>();
  const auto parsed_fabric = models::parse_fabric_kind(fabric);
  if (!parsed_fabric) {
    throw UsageError("--fabric: unknown fabric '" + fabric + "' (single_switch, fat_tree, rail_optimized)");
  }
  p.topology.nodes = p.nodes;
  p.topology.fabric = *parsed_fabric;
  p.topology.oversubscription = vm["oversubscription"].as<double>();
  if (!(p.topology.oversubscription >= 1.0) || p.topology.oversubscription > 1e6) {
    throw UsageError("--oversubscription must be at least 1");
  }
  p.topology.fat_tree_radix = vm["fat-tree-radix"].as<int>();
  if (p.topology.fat_tree_radix < 2 || p.topology.fat_tree_radix % 2 != 0) {
    throw UsageError("--fat-tree-radix must be even and at least 2");
  }
  if (vm.count("zones")) {
    p.topology.zones = parse_zones(vm["zones"].as<std::string>());
    int64_t sum = 0;
    for (const auto& z : p.topology.zones) sum += z.nodes;
    if (sum != p.nodes) {
      throw UsageError("--zones: the zones hold " + std::to_string(sum) + " nodes but --nodes is " +
                       std::to_string(p.nodes));
    }
  }
  const double latency_ms = vm["inter-zone-latency-ms"].as<double>();
  if (!(latency_ms >= 0.0) || latency_ms > 1e9) throw UsageError("--inter-zone-latency-ms must be at least 0");
  p.topology.inter_zone_latency = units::milliseconds(latency_ms);
  if (vm.count("inter-zone-gbps")) {
    p.inter_zone_gbps = vm["inter-zone-gbps"].as<double>();
    if (!(p.inter_zone_gbps > 0.0) || p.inter_zone_gbps > 1e12) throw UsageError("--inter-zone-gbps must be positive");
    p.topology.inter_zone_bandwidth_per_node =
        units::to_bytes_per_second(units::gigabits_per_second(p.inter_zone_gbps));
  }
  if (vm.count("output")) p.output = vm["output"].as<std::string>();
  return p;
}

/// Builds the cluster and times the sweep. Throws DataError (or CatalogError, std::invalid_argument,
/// std::out_of_range from the models, all bad data).
std::vector<Row> sweep(Parameters& p) {
  const models::Catalog catalog = models::Catalog::load(p.catalog_dir);
  const auto vm_it = catalog.vm_sizes().find(p.vm_size);
  if (vm_it == catalog.vm_sizes().end()) {
    std::string known;
    for (const auto& [name, unused] : catalog.vm_sizes()) known += (known.empty() ? "" : ", ") + name;
    throw DataError("unknown VM size '" + p.vm_size + "' (known: " + known + ")");
  }
  const models::VmSize& vm = vm_it->second;
  const models::DeviceSpec& device = catalog.device(vm.device);
  if (!p.topology.inter_zone_bandwidth_per_node) p.inter_zone_gbps = vm.ethernet_bandwidth.value() / 1e9;

  const int64_t cluster_gpus = p.nodes * vm.devices_per_vm;
  if (p.gpus == 0) {
    p.gpus = cluster_gpus;
    if (p.gpus < 2) {
      throw DataError("the cluster has " + std::to_string(cluster_gpus) + " GPU (" + std::to_string(p.nodes) +
                      " x " + p.vm_size + "); a collective needs at least 2: use more --nodes");
    }
  } else if (p.gpus > cluster_gpus) {
    throw DataError("--gpus " + std::to_string(p.gpus) + " is more than the cluster's " +
                    std::to_string(cluster_gpus) + " GPUs (" + std::to_string(p.nodes) + " x " + p.vm_size + " with " +
                    std::to_string(vm.devices_per_vm) + " each)");
  }

  const models::Topology topology = models::build_topology(vm, device, p.topology);
  const models::CollectiveModel model(topology, models::CollectiveConstants::for_vm(vm));
  models::CommPattern pattern;
  if (p.op == models::CollectiveOp::send_recv) {
    pattern.groups.push_back({0, p.gpus - 1});
  } else {
    std::vector<int64_t> group;
    for (int64_t r = 0; r < p.gpus; ++r) group.push_back(r);
    pattern.groups.push_back(std::move(group));
  }
  const double factor = models::bus_bandwidth_factor(p.op, p.gpus);

  std::vector<Row> rows;
  for (int64_t size = p.min_bytes;;) {
    models::CollectiveTiming t;
    try {
      t = model.time(p.op, pattern, units::Bytes(static_cast<double>(size)), p.algorithm);
    } catch (const std::invalid_argument& e) {
      if (p.algorithm) {
        throw DataError("--algorithm " + algorithm_name(p) + " does not apply to " +
                        std::string(models::to_string(p.op)) + " on " + std::to_string(p.gpus) + " GPUs of " +
                        std::to_string(p.nodes) + " x " + p.vm_size + " (" + e.what() + ")");
      }
      throw;
    }
    Row r;
    r.bytes = size;
    r.time_s = t.time.value();
    r.algbw = r.time_s > 0.0 ? static_cast<double>(size) / r.time_s / 1e9 : 0.0;
    r.busbw = r.algbw * factor;
    r.algorithm = std::string(models::to_string(t.algorithm));
    r.protocol = std::string(models::to_string(t.protocol));
    r.crosses_zones = t.crosses_zones;
    rows.push_back(std::move(r));
    if (size > p.max_bytes / p.step_factor) break;
    size *= p.step_factor;
  }
  return rows;
}

}  // namespace

int run_collective_command(const std::vector<std::string>& args, const std::string& command_line) {
  const po::options_description options = options_description();
  const char* const help_hint = "\n(see 'clustersim collective --help')";
  return exit_status_of("collective", [&]() -> int {
    po::variables_map vm;
    try {
      const po::positional_options_description no_positionals;  // so that a stray argument is an error
      po::store(po::command_line_parser(args).options(options).positional(no_positionals).run(), vm);
      po::notify(vm);
    } catch (const po::error& e) {
      throw UsageError(e.what());
    }
    if (vm.count("help")) {
      std::cout << options;
      return 0;
    }
    Parameters p = parse_options(vm);
    const std::vector<Row> rows = sweep(p);
    std::cout << format_table(p, rows);
    if (p.output) {
      RunMetadata meta;
      meta.software_version = software_version();
      meta.git_sha = git_sha();
      meta.command_line = command_line;
      meta.seed = 0;
      meta.scenario_toml = parameters_toml(p);
      try {
        write_results_file(*p.output, meta, summary_columns(p, rows));
      } catch (const std::exception& e) {
        throw IoError(e.what());
      }
      std::cout << "# wrote " << *p.output << "\n";
    }
    return 0;
  }, help_hint);
}

}  // namespace clustersim::sim
