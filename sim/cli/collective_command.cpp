#include "sim/cli/collective_command.hpp"
#include "sim/cli/catalog_directory.hpp"
#include "sim/errors.hpp"
#include "sim/run/collective_benchmark.hpp"
#include "sim/run/exit_status.hpp"

#include <boost/program_options.hpp>

#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/units.hpp"
#include "sim/output/json.hpp"
#include "sim/output/output_path.hpp"

namespace clustersim::sim {

namespace {

namespace po = boost::program_options;

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

/// The command line: the benchmark, and where the catalog is and the file goes.
struct Options {
  CollectiveBenchmark bench;
  std::string catalog_dir;
  std::optional<std::string> output;
  bool json = false;  ///< --format json: the rows as one JSON object on stdout
};

/// The most VMs --nodes takes: cluster.nodes' bound (2^14, sim/io/scenario_params.cpp). The topology's routing
/// tables grow as nodes^2: 13 s at 2^14 ND H100 v5 VMs, 64 s at 2^15.
constexpr int64_t kMaxCollectiveNodes = 16384;

po::options_description options_description() {
  po::options_description options("clustersim collective --vm-size VM [options]");
  options.add_options()("help,h", "show this help")
      ("vm-size", po::value<std::string>(), "VM size (catalog key), e.g. Standard_ND96isr_H100_v5 (required)")
      ("nodes", po::value<int64_t>()->default_value(1), "VMs in the cluster, 1 to 16384")
      ("op", po::value<std::string>()->default_value("all_reduce"),
       "collective: all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv or ring_shift")
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
      ("vms-per-nvlink-domain", po::value<int64_t>(),
       "VMs of each NVLink domain the cluster uses (16 of a GB200 NVL72 rack's 18); default: whole domains")
      ("zones", po::value<std::string>(),
       "availability zones, name:nodes,name:nodes in node order; the counts must sum to --nodes")
      ("inter-zone-latency-ms", po::value<double>()->default_value(1.0), "one-way latency between zones, ms")
      ("inter-zone-gbps", po::value<double>(),
       "inter-zone bandwidth per node, Gbit/s; default: the VM's front-end Ethernet rate")
      ("catalog", po::value<std::string>(), "hardware catalog directory")
      ("output,o", po::value<std::string>(), "also write the sweep to this HDF5 file (atomically)")
      ("format", po::value<std::string>()->default_value("text"),
       "stdout: text (the nccl-tests table) or json (the rows: the HDF5 columns' names, values and units)");
  return options;
}

/// Parses and checks everything that does not need the catalog. Throws UsageError.
Options parse_options(const po::variables_map& vm) {
  Options o;
  CollectiveBenchmark& p = o.bench;
  if (!vm.count("vm-size")) throw UsageError("missing --vm-size");
  p.vm_size = vm["vm-size"].as<std::string>();
  o.catalog_dir = vm.count("catalog") ? vm["catalog"].as<std::string>()
                                      : cli::default_catalog_directory().string();
  p.nodes = vm["nodes"].as<int64_t>();
  if (p.nodes < 1) throw UsageError("--nodes must be at least 1");
  if (p.nodes > kMaxCollectiveNodes) {
    throw UsageError("--nodes must be at most " + std::to_string(kMaxCollectiveNodes) +
                     " (cluster.nodes' bound: the routing tables grow as nodes^2)");
  }

  const std::string op = vm["op"].as<std::string>();
  const auto parsed_op = models::parse_collective_op(op);
  if (!parsed_op) {
    throw UsageError("--op: unknown collective '" + op +
                     "' (all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv, ring_shift)");
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
  p.topology.fabric = *parsed_fabric;
  p.topology.oversubscription = vm["oversubscription"].as<double>();
  if (!(p.topology.oversubscription >= 1.0) || p.topology.oversubscription > 1e6) {
    throw UsageError("--oversubscription must be at least 1");
  }
  p.topology.fat_tree_radix = vm["fat-tree-radix"].as<int>();
  if (const std::string why = models::fat_tree_radix_error(p.topology.fat_tree_radix); !why.empty()) {
    throw UsageError("--fat-tree-radix " + why);
  }
  if (vm.count("vms-per-nvlink-domain")) {
    p.topology.vms_per_nvlink_domain = vm["vms-per-nvlink-domain"].as<int64_t>();
    if (*p.topology.vms_per_nvlink_domain < 1) throw UsageError("--vms-per-nvlink-domain must be at least 1");
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
  if (vm.count("output")) o.output = vm["output"].as<std::string>();
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") throw UsageError("--format must be text or json, got '" + format + "'");
  o.json = format == "json";
  return o;
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
    Options o = parse_options(vm);
    CollectiveBenchmark& p = o.bench;
    if (o.output) check_output_path(*o.output, {}, "-o");  // before the benchmark runs (issue 26)
    const std::vector<CollectiveTimingRow> rows = run_collective_benchmark(p, models::Catalog::load(o.catalog_dir));
    if (o.json) {
      std::cout << "{\"command\": \"collective\", \"rows\": " << columns_json(collective_summary_columns(p, rows), false)
                << "}\n";
    } else {
      std::cout << format_collective_table(p, rows);
    }
    if (o.output) {
      write_collective_file(*o.output, p, rows, command_line);
      (o.json ? std::cerr : std::cout) << "# wrote " << *o.output << "\n";
    }
    return 0;
  }, help_hint);
}

}  // namespace clustersim::sim
