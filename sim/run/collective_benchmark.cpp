#include "sim/run/collective_benchmark.hpp"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/units.hpp"
#include "sim/errors.hpp"
#include "sim/format.hpp"
#include "sim/version.hpp"

namespace clustersim::sim {

namespace {


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
      out += printf_string("\\u%04x", static_cast<unsigned>(u));
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
  std::string s = ec == std::errc() ? std::string(buffer, end) : printf_string("%.17g", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string algorithm_name(const CollectiveBenchmark& p) {
  return p.algorithm ? std::string(models::to_string(*p.algorithm)) : std::string("auto");
}

std::string collective_parameters_toml(const CollectiveBenchmark& p) {
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
    << "inter_zone_gbps = " << toml_float(p.inter_zone_gbps) << "\n";
  if (p.topology.vms_per_nvlink_domain) t << "vms_per_nvlink_domain = " << *p.topology.vms_per_nvlink_domain << "\n";
  t << "zones = [";
  for (size_t i = 0; i < p.topology.zones.size(); ++i) {
    const auto& z = p.topology.zones[i];
    t << (i ? ", " : "") << "{ name = " << toml_string(z.name) << ", nodes = " << z.nodes << " }";
  }
  t << "]\n";
  return t.str();
}

std::vector<SummaryColumn> collective_summary_columns(const CollectiveBenchmark& p, const std::vector<CollectiveTimingRow>& rows) {
  std::vector<int64_t> bytes, crosses;
  std::vector<double> time, algbw, busbw;
  std::vector<std::string> algorithm, protocol;
  for (const CollectiveTimingRow& r : rows) {
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

std::string format_collective_table(const CollectiveBenchmark& p, const std::vector<CollectiveTimingRow>& rows) {
  const bool zoned = !p.topology.zones.empty();
  std::string fabric(models::to_string(p.topology.fabric));
  if (p.topology.fabric != models::FabricKind::single_switch) {
    fabric += printf_string(" (radix %d, oversubscription %g)", p.topology.fat_tree_radix, p.topology.oversubscription);
  }
  std::string zones = "none";
  if (zoned) {
    zones = zones_text(p.topology.zones) +
            printf_string(" (inter-zone %g ms, %g Gb/s per node)", units::in_milliseconds(p.topology.inter_zone_latency),
                   p.inter_zone_gbps);
  }
  const std::string group = p.op == models::CollectiveOp::send_recv
                                ? printf_string("ranks 0 -> %lld", static_cast<long long>(p.gpus - 1))
                                : printf_string("ranks 0..%lld", static_cast<long long>(p.gpus - 1));
  std::string out;
  out += printf_string("# clustersim collective: op %s, vm %s, nodes %lld, gpus %lld (%s), algorithm %s\n",
                std::string(models::to_string(p.op)).c_str(), p.vm_size.c_str(), static_cast<long long>(p.nodes),
                static_cast<long long>(p.gpus), group.c_str(), algorithm_name(p).c_str());
  const std::string domains =
      p.topology.vms_per_nvlink_domain
          ? ", NVLink domains of " + counted(*p.topology.vms_per_nvlink_domain, "VM")
          : std::string();
  out += printf_string("# fabric %s, zones %s%s\n", fabric.c_str(), zones.c_str(), domains.c_str());
  out += "#\n";
  out += printf_string("# %10s  %12s  %8s  %10s  %8s  %8s  %20s%s\n", "size", "count", "type", "time", "algbw", "busbw",
                "algorithm/protocol", zoned ? "  crosses zones" : "");
  out += printf_string("# %10s  %12s  %8s  %10s  %8s  %8s\n", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
  double busbw_sum = 0.0;
  for (const CollectiveTimingRow& r : rows) {
    const std::string how = r.algorithm + "/" + r.protocol;
    out += printf_string("%12lld  %12lld  %8s  %10.2f  %8.2f  %8.2f  %20s", static_cast<long long>(r.bytes),
                  static_cast<long long>(r.bytes / 4), "float", r.time_s * 1e6, r.algbw, r.busbw, how.c_str());
    if (zoned) out += printf_string("  %13s", r.crosses_zones ? "yes" : "no");
    out += "\n";
    busbw_sum += r.busbw;
  }
  out += printf_string("# Avg bus bandwidth    : %.3f GB/s\n", rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
  return out;
}

std::vector<CollectiveTimingRow> run_collective_benchmark(CollectiveBenchmark& p, const models::Catalog& catalog) {
  p.topology.nodes = p.nodes;
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

  {
    std::vector<int64_t> zone_nodes;
    for (const models::ZoneSpec& z : p.topology.zones) zone_nodes.push_back(z.nodes);
    if (const std::string why = vm.domain_problem(p.nodes, p.topology.vms_per_nvlink_domain, zone_nodes);
        !why.empty()) {
      throw DataError((p.topology.vms_per_nvlink_domain ? "--nodes / --vms-per-nvlink-domain: " : "--nodes: ") + why);
    }
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

  std::vector<CollectiveTimingRow> rows;
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
    CollectiveTimingRow r;
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

void write_collective_file(const std::filesystem::path& path, const CollectiveBenchmark& b,
                           const std::vector<CollectiveTimingRow>& rows, const std::string& command_line) {
  RunMetadata meta;
  meta.software_version = software_version();
  meta.git_sha = git_sha();
  meta.command_line = command_line;
  meta.seed = 0;
  meta.scenario_toml = collective_parameters_toml(b);
  try {
    write_results_file(path, meta, collective_summary_columns(b, rows));
  } catch (const std::exception& e) {
    throw IoError(e.what());
  }
}

}  // namespace clustersim::sim
