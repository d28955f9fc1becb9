// Loader and validator of the hardware catalog (devices.toml, vm_sizes.toml). Schema: docs/catalog.md.
#include "models/hardware/catalog.hpp"

#include "models/compute/compute_model.hpp"
#include "models/compute/measured_attention.hpp"
#include "models/compute/measured_gemm.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#ifndef CLUSTERSIM_CATALOG_DIR
#define CLUSTERSIM_CATALOG_DIR "models/hardware/catalog"
#endif

namespace clustersim::models {
namespace {

namespace fs = std::filesystem;

// Keys each entry may hold; anything else is rejected with its location. Meaning and units: docs/catalog.md.
constexpr auto kDeviceKeys = std::to_array<std::string_view>({
    "kind",
    "source",
    "peak_fp32_tflops",
    "peak_tf32_tflops",
    "peak_fp16_tflops",
    "peak_bf16_tflops",
    "peak_fp8_tflops",
    "peak_fp4_tflops",
    "achievable_matmul_bf16_tflops",
    "achievable_matmul_fp8_tflops",
    "achievable_matmul_fp16_tflops",
    "flash_attention_2_tflops",
    "flash_attention_3_tflops",
    "gemm_table",
    "gemm_table_device",
    "attention_table",
    "attention_table_device",
    "memory_mib",
    "memory_source",
    "memory_part",
    "memory_bandwidth_tb_per_s",
    "achievable_memory_bandwidth_tb_per_s",
    "sm_count",
    "training_matmul_fraction",
    "training_memory_fraction",
    "calibration_group",
    "calibration_fallback",
    "fabric_gb_per_s_per_direction",
    "tdp_watts",
    "estimates",
});

constexpr auto kVmKeys = std::to_array<std::string_view>({
    "device",
    "devices_per_vm",
    "device_share",
    "vcpus",
    "ram_gib",
    "fabric",
    "infiniband_ports",
    "infiniband_port_gbps",
    "ethernet_gbps",
    "local_nvme_gib",
    "local_nvme_tib",
    "price_usd_per_hour",
    "price_source",
    "nvlink_domain_vms",
    "nccl_base_latency_us",
    "nccl_intra_step_latency_us",
    "nccl_ring_efficiency",
    "nccl_nvls_efficiency",
    "nccl_source",
    "next_size",
    "source",
    "estimates",
});

struct PeakKey {
  Precision precision;
  std::string_view key;
};
constexpr std::array<PeakKey, 5> kPeakKeys = {{
    {Precision::fp32, "peak_fp32_tflops"},
    {Precision::tf32, "peak_tf32_tflops"},
    {Precision::fp16, "peak_fp16_tflops"},
    {Precision::bf16, "peak_bf16_tflops"},
    {Precision::fp8, "peak_fp8_tflops"},
}};

constexpr std::array<IntraNodeFabric, 6> kFabrics = {
    IntraNodeFabric::nvswitch, IntraNodeFabric::nvlink_mesh,     IntraNodeFabric::nvlink_bridge,
    IntraNodeFabric::pcie,     IntraNodeFabric::infinity_fabric, IntraNodeFabric::none};

std::string format_number(double v) {
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc() ? std::string(buf.data(), end) : std::string("?");
}

std::string location(const std::string& file, const toml::source_position& pos) {
  return file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
}

std::string_view type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
  }
  return "an unknown value";
}

template <class Range>
std::string join(const Range& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

template <class Map>
std::string known_names(const Map& m) {
  std::string out;
  for (const auto& [name, value] : m) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? std::string("(none)") : out;
}

/// Reads one entry (a top-level table) of a catalog file. Every error names FILE:LINE:COL and the dotted key:
/// the key's own position when it is present, the entry's header when a required key is missing.
class EntryReader {
 public:
  EntryReader(std::string file, std::string name, const toml::table& table, std::span<const std::string_view> allowed)
      : file_(std::move(file)), name_(std::move(name)), table_(table) {
    for (auto&& [key, node] : table_) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
        fail(key.source(), key.str(), "unknown key; expected one of: " + join(allowed));
      }
    }
  }

  [[noreturn]] void fail(const toml::source_region& where, std::string_view key, const std::string& message) const {
    throw CatalogError(location(file_, where.begin) + ": key '" + name_ + "." + std::string(key) + "': " + message);
  }
  /// Error at the value of `key` (which must be present).
  [[noreturn]] void fail_at(std::string_view key, const std::string& message) const {
    const toml::node* n = table_.get(key);
    fail(n != nullptr ? n->source() : table_.source(), key, message);
  }
  [[noreturn]] void fail_missing(std::string_view key, const std::string& extra = {}) const {
    fail(table_.source(), key, "required key is missing" + extra);
  }

  [[nodiscard]] bool has(std::string_view key) const { return table_.get(key) != nullptr; }

  /// A finite number (TOML integer or float), or nullopt when absent.
  [[nodiscard]] std::optional<double> number(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::nullopt;
    if (!n->is_integer() && !n->is_floating_point()) {
      fail(n->source(), key, "expected a number, found " + std::string(type_name(n->type())));
    }
    const double v = n->value<double>().value_or(std::nan(""));
    if (!std::isfinite(v)) fail(n->source(), key, "must be a finite number, got " + format_number(v));
    return v;
  }
  [[nodiscard]] std::optional<double> optional_positive(std::string_view key) const {
    auto v = number(key);
    if (v && *v <= 0.0) fail_at(key, "must be positive, got " + format_number(*v));
    return v;
  }
  [[nodiscard]] std::optional<double> optional_non_negative(std::string_view key) const {
    auto v = number(key);
    if (v && *v < 0.0) fail_at(key, "must be zero or positive, got " + format_number(*v));
    return v;
  }
  [[nodiscard]] double positive(std::string_view key) const {
    auto v = optional_positive(key);
    if (!v) fail_missing(key);
    return *v;
  }

  /// A TOML integer (read exactly as int64) that fits an int, or nullopt when absent.
  [[nodiscard]] std::optional<int> integer(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::nullopt;
    const std::optional<int64_t> v = n->value_exact<int64_t>();
    if (!v) fail(n->source(), key, "expected an integer, found " + std::string(type_name(n->type())));
    if (*v > INT_MAX || *v < INT_MIN) fail(n->source(), key, "out of range: " + std::to_string(*v));
    return static_cast<int>(*v);
  }
  [[nodiscard]] int positive_count(std::string_view key) const {
    auto v = integer(key);
    if (!v) fail_missing(key);
    if (*v <= 0) fail_at(key, "must be a positive integer, got " + std::to_string(*v));
    return *v;
  }

  /// The `estimates` list: keys of this entry (each present, not "source" or "estimates" itself) whose values
  /// are estimates; empty when absent.
  [[nodiscard]] std::set<std::string> estimates() const {
    std::set<std::string> out;
    const toml::node* n = table_.get("estimates");
    if (n == nullptr) return out;
    const toml::array* list = n->as_array();
    if (list == nullptr) fail(n->source(), "estimates", "expected a list of keys, found " + std::string(type_name(n->type())));
    for (const toml::node& e : *list) {
      const auto* key = e.as_string();
      if (key == nullptr) fail(e.source(), "estimates", "expected a key name (a string), found " + std::string(type_name(e.type())));
      const std::string k = key->get();
      if (k == "estimates" || k == "source" || !table_.contains(k)) {
        fail(e.source(), "estimates", "'" + k + "' is not a number of this entry");
      }
      if (!out.insert(k).second) fail(e.source(), "estimates", "'" + k + "' is listed twice");
    }
    return out;
  }

  [[nodiscard]] std::string required_string(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) fail_missing(key);
    if (!n->is_string()) fail(n->source(), key, "expected a string, found " + std::string(type_name(n->type())));
    std::string s = n->value<std::string>().value_or("");
    if (s.empty()) fail(n->source(), key, "must not be empty");
    return s;
  }

 private:
  std::string file_;
  std::string name_;
  const toml::table& table_;
};

toml::table parse_catalog_file(const fs::path& path) {
  const std::string file = path.string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw CatalogError(file + ": cannot read catalog file (missing or not a regular file)");
  }
  try {
    return toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw CatalogError(location(file, e.source().begin) + ": TOML parse error: " + std::string(e.description()));
  }
}

/// The top-level entries of a catalog file in file order, each required to be a table.
std::vector<std::pair<std::string, const toml::table*>> entries(const std::string& file, const toml::table& doc,
                                                                std::string_view what) {
  std::vector<std::pair<const toml::key*, const toml::node*>> nodes;
  for (auto&& [key, node] : doc) nodes.emplace_back(&key, &node);
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.first->source().begin;
    const auto& pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  std::vector<std::pair<std::string, const toml::table*>> out;
  for (const auto& [key, node] : nodes) {
    const toml::table* t = node->as_table();
    if (t == nullptr) {
      throw CatalogError(location(file, key->source().begin) + ": key '" + std::string(key->str()) +
                         "': expected a table [" + std::string(key->str()) + "] describing a " + std::string(what) +
                         ", found " + std::string(type_name(node->type())));
    }
    out.emplace_back(std::string(key->str()), t);
  }
  if (out.empty()) throw CatalogError(file + ":1:1: no " + std::string(what) + " entries");
  return out;
}

/// One capacity per physical memory part: a device naming a memory_part an earlier device (file order) named
/// must state the same memory_mib; otherwise a CatalogError at its memory_mib.
void check_memory_part(const std::string& file, const toml::table& t, const DeviceSpec& d,
                       std::map<std::string, const DeviceSpec*>& first_of_part) {
  if (d.memory_part.empty()) return;
  const auto [it, inserted] = first_of_part.emplace(d.memory_part, &d);
  const DeviceSpec& first = *it->second;
  if (inserted || first.memory_capacity.value() == d.memory_capacity.value()) return;
  const EntryReader r(file, d.name, t, kDeviceKeys);
  r.fail_at("memory_mib", "memory_part '" + d.memory_part + "' is " +
                              format_number(first.memory_capacity.value() / (1024.0 * 1024.0)) + " MiB on " +
                              first.name + "; devices with the same memory part must state the same capacity");
}

DeviceSpec read_device(const std::string& file, const std::string& name, const toml::table& t) {
  const EntryReader r(file, name, t, kDeviceKeys);
  DeviceSpec d;
  d.name = name;

  const std::string kind = r.required_string("kind");
  if (kind == "gpu") {
    d.kind = DeviceKind::gpu;
  } else if (kind == "cpu") {
    d.kind = DeviceKind::cpu;
  } else {
    r.fail_at("kind", "expected \"gpu\" or \"cpu\", got \"" + kind + "\"");
  }
  d.source = r.required_string("source");

  for (const PeakKey& pk : kPeakKeys) {
    const auto v = pk.precision == Precision::fp32 ? std::optional<double>(r.positive(pk.key))
                                                   : r.optional_non_negative(pk.key);
    if (v && *v > 0.0) d.peak[pk.precision] = units::tflops_per_second(*v);
  }
  auto peak_tflops = [&d](Precision p) {
    auto it = d.peak.find(p);
    return it == d.peak.end() ? 0.0 : units::in_tflops_per_second(it->second);
  };

  if (const auto fp4 = r.optional_positive("peak_fp4_tflops")) {
    if (peak_tflops(Precision::fp8) <= 0.0) r.fail_at("peak_fp4_tflops", "the device has no peak_fp8_tflops");
    d.peak_fp4 = units::tflops_per_second(*fp4);
  }

  const double matmul = r.positive("achievable_matmul_bf16_tflops");
  const double sixteen_bit_peak = std::max(peak_tflops(Precision::bf16), peak_tflops(Precision::fp16));
  if (sixteen_bit_peak <= 0.0) {
    r.fail_at("achievable_matmul_bf16_tflops", "the device has neither peak_bf16_tflops nor peak_fp16_tflops");
  }
  if (matmul > sixteen_bit_peak) {
    r.fail_at("achievable_matmul_bf16_tflops",
              format_number(matmul) + " exceeds the 16-bit peak " + format_number(sixteen_bit_peak));
  }
  d.achievable_matmul_bf16 = units::tflops_per_second(matmul);

  if (const auto fp8 = r.optional_positive("achievable_matmul_fp8_tflops")) {
    const double fp8_peak = peak_tflops(Precision::fp8);
    if (fp8_peak <= 0.0) r.fail_at("achievable_matmul_fp8_tflops", "the device has no peak_fp8_tflops");
    if (*fp8 > fp8_peak) {
      r.fail_at("achievable_matmul_fp8_tflops",
                format_number(*fp8) + " exceeds peak_fp8_tflops " + format_number(fp8_peak));
    }
    d.achievable_matmul_fp8 = units::tflops_per_second(*fp8);
  }
  if (const auto fp16 = r.optional_positive("achievable_matmul_fp16_tflops")) {
    const double fp16_peak = peak_tflops(Precision::fp16);
    if (fp16_peak <= 0.0) r.fail_at("achievable_matmul_fp16_tflops", "the device has no peak_fp16_tflops");
    if (*fp16 > fp16_peak) {
      r.fail_at("achievable_matmul_fp16_tflops",
                format_number(*fp16) + " exceeds peak_fp16_tflops " + format_number(fp16_peak));
    }
    d.achievable_matmul_fp16 = units::tflops_per_second(*fp16);
  }

  // Measured FlashAttention forward + backward rates (optional; below the 16-bit peak).
  for (const auto& [key, field] : {std::pair{"flash_attention_2_tflops", &d.flash_attention_2},
                                   std::pair{"flash_attention_3_tflops", &d.flash_attention_3}}) {
    if (const auto rate = r.optional_positive(key)) {
      if (*rate > sixteen_bit_peak) {
        r.fail_at(key, format_number(*rate) + " exceeds the 16-bit peak " + format_number(sixteen_bit_peak));
      }
      *field = units::tflops_per_second(*rate);
    }
  }

  // One unit for every device: MiB as nvidia-smi / rocm-smi reports the total, with its source beside it.
  d.memory_capacity = units::mib(r.positive_count("memory_mib"));
  d.memory_quoted_in_gib = true;
  d.memory_source = r.required_string("memory_source");
  if (d.kind == DeviceKind::gpu || t.contains("memory_part")) d.memory_part = r.required_string("memory_part");

  const double bw = r.positive("memory_bandwidth_tb_per_s");
  const double triad = r.positive("achievable_memory_bandwidth_tb_per_s");
  if (triad > bw) {
    r.fail_at("achievable_memory_bandwidth_tb_per_s",
              format_number(triad) + " exceeds memory_bandwidth_tb_per_s " + format_number(bw));
  }
  d.memory_bandwidth = units::terabytes_per_second(bw);
  d.achievable_memory_bandwidth = units::terabytes_per_second(triad);

  d.sm_count = r.positive_count("sm_count");

  // Sustained-in-training fractions of the microbenchmark rates (docs/model.md "Calibration"); 1 when absent.
  for (const auto& [key, field] : {std::pair{"training_matmul_fraction", &d.training_matmul_fraction},
                                   std::pair{"training_memory_fraction", &d.training_memory_fraction}}) {
    if (const auto f = r.optional_positive(key)) {
      if (*f > 1.0) r.fail_at(key, format_number(*f) + " is above 1 (a fraction of the measured rate)");
      *field = *f;
    }
  }

  d.calibration_group = name;
  if (t.contains("calibration_group")) d.calibration_group = r.required_string("calibration_group");
  if (t.contains("calibration_fallback")) d.calibration_fallback = r.required_string("calibration_fallback");

  // GPUs must state their link to the intra-node fabric; the CPU device has none (0).
  const auto fabric = r.optional_positive("fabric_gb_per_s_per_direction");
  if (!fabric && d.kind == DeviceKind::gpu) r.fail_missing("fabric_gb_per_s_per_direction");
  d.fabric_bandwidth_per_direction = units::gigabytes_per_second(fabric.value_or(0.0));

  d.tdp_watts = r.positive("tdp_watts");
  d.estimates = r.estimates();

  // Measured GEMM kernel times (models/compute/measured_gemm.hpp): the file, relative to the catalog directory,
  // and the device it was measured on (this one unless named). Read and checked here; the correction surface is
  // built once every device is known (Catalog::load).
  if (t.contains("gemm_table")) {
    d.gemm_table = r.required_string("gemm_table");
    d.gemm_table_device = t.contains("gemm_table_device") ? r.required_string("gemm_table_device") : name;
  } else if (t.contains("gemm_table_device")) {
    r.fail_at("gemm_table_device", "names the device of a gemm_table, and the entry has no gemm_table");
  }
  if (t.contains("attention_table")) {
    d.attention_table_file = r.required_string("attention_table");
    d.attention_table_device =
        t.contains("attention_table_device") ? r.required_string("attention_table_device") : name;
  } else if (t.contains("attention_table_device")) {
    r.fail_at("attention_table_device", "names the device of an attention_table, and the entry has no attention_table");
  }
  return d;
}

VmSize read_vm(const std::string& file, const std::string& name, const toml::table& t,
               const std::map<std::string, DeviceSpec>& devices, const std::map<std::string, int>& vm_names) {
  const EntryReader r(file, name, t, kVmKeys);
  VmSize v;
  v.name = name;

  v.device = r.required_string("device");
  if (devices.find(v.device) == devices.end()) {
    r.fail_at("device", "unknown device '" + v.device + "'; known devices: " + known_names(devices));
  }
  v.devices_per_vm = r.positive_count("devices_per_vm");
  if (const auto share = r.number("device_share")) {
    if (*share <= 0.0 || *share > 1.0) r.fail_at("device_share", "must be in (0, 1], got " + format_number(*share));
    v.device_share = *share;
  }
  v.vcpus = r.positive_count("vcpus");
  v.ram = units::gib(r.positive("ram_gib"));

  const std::string fabric = r.required_string("fabric");
  const auto* known = std::find_if(kFabrics.begin(), kFabrics.end(),
                                   [&fabric](IntraNodeFabric f) { return to_string(f) == fabric; });
  if (known == kFabrics.end()) {
    std::vector<std::string_view> names;
    for (IntraNodeFabric f : kFabrics) names.push_back(to_string(f));
    r.fail_at("fabric", "unknown fabric '" + fabric + "'; expected one of: " + join(names));
  }
  v.fabric = *known;
  if (v.devices_per_vm > 1 && v.fabric == IntraNodeFabric::none) {
    r.fail_at("fabric", "a VM with " + std::to_string(v.devices_per_vm) + " devices needs an intra-node fabric");
  }
  if (v.devices_per_vm == 1 && v.fabric != IntraNodeFabric::none) {
    r.fail_at("fabric", "a VM with one device has no intra-node fabric: use \"none\"");
  }
  if (v.fabric == IntraNodeFabric::nvlink_bridge && v.devices_per_vm % 2 != 0) {
    r.fail_at("fabric", "an NVLink bridge joins pairs of GPUs, but the VM has " + std::to_string(v.devices_per_vm));
  }

  const int ports = r.integer("infiniband_ports").value_or(0);
  if (ports < 0) r.fail_at("infiniband_ports", "must be zero or positive, got " + std::to_string(ports));
  const auto port_gbps = r.optional_positive("infiniband_port_gbps");
  if (ports > 0 && !port_gbps) r.fail_missing("infiniband_port_gbps", " (infiniband_ports > 0)");
  if (ports == 0 && port_gbps) r.fail_at("infiniband_port_gbps", "given without infiniband_ports > 0");
  v.infiniband_ports = ports;
  v.infiniband_port_rate = units::gigabits_per_second(port_gbps.value_or(0.0));

  v.ethernet_bandwidth = units::gigabits_per_second(r.positive("ethernet_gbps"));

  const auto nvme_gib = r.optional_positive("local_nvme_gib");
  const auto nvme_tib = r.optional_positive("local_nvme_tib");
  if (nvme_gib && nvme_tib) r.fail_at("local_nvme_tib", "give local_nvme_gib or local_nvme_tib, not both");
  v.local_nvme = nvme_tib ? units::gib(*nvme_tib * 1024.0) : units::gib(nvme_gib.value_or(0.0));

  v.price_usd_per_hour = r.optional_positive("price_usd_per_hour");
  if (t.contains("price_source")) {
    if (!v.price_usd_per_hour) r.fail_at("price_source", "given without price_usd_per_hour");
    v.price_source = r.required_string("price_source");
  }
  if (const auto domain = r.integer("nvlink_domain_vms")) {
    if (*domain < 1) r.fail_at("nvlink_domain_vms", "must be a positive integer, got " + std::to_string(*domain));
    if (*domain > 1 && v.fabric != IntraNodeFabric::nvswitch) {
      r.fail_at("nvlink_domain_vms", "an NVLink domain beyond one VM needs fabric \"nvswitch\"");
    }
    v.nvlink_domain_vms = *domain;
  }
  if (const auto us = r.optional_positive("nccl_base_latency_us")) v.nccl.base_latency = units::microseconds(*us);
  if (const auto us = r.optional_positive("nccl_intra_step_latency_us")) {
    v.nccl.intra_step_latency = units::microseconds(*us);
  }
  for (const char* key : {"nccl_ring_efficiency", "nccl_nvls_efficiency"}) {
    if (const auto eff = r.optional_positive(key)) {
      if (*eff > 1.0) r.fail_at(key, "an efficiency must be in (0, 1], got " + format_number(*eff));
      (std::string_view(key) == "nccl_ring_efficiency" ? v.nccl.ring_efficiency : v.nccl.nvls_efficiency) = *eff;
    }
  }
  if (t.contains("nccl_source")) v.nccl.source = r.required_string("nccl_source");
  if (t.contains("next_size")) {
    v.next_size = r.required_string("next_size");
    if (v.next_size == name) r.fail_at("next_size", "names this VM size itself");
    if (vm_names.count(v.next_size) == 0) {
      r.fail_at("next_size", "unknown VM size '" + v.next_size + "'; known VM sizes: " + known_names(vm_names));
    }
  }
  v.source = r.required_string("source");
  v.estimates = r.estimates();
  return v;
}

/// Builds each measured GEMM table's correction surface once, on the roofline of the device it was measured on
/// at that device's measured rates, and gives it to every device that names the table. Throws CatalogError
/// naming the file and device on an unreadable table, an unknown or table-less measuring device.
void attach_gemm_tables(const std::string& devices_file, const fs::path& directory,
                        std::map<std::string, DeviceSpec>& devices) {
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const MeasuredGemmCorrection>> built;
  for (auto& [name, d] : devices) {
    if (d.gemm_table.empty()) continue;
    const auto where = devices_file + ": device '" + name + "': ";
    const auto on = devices.find(d.gemm_table_device);
    if (on == devices.end()) {
      throw CatalogError(where + "gemm_table_device: unknown device '" + d.gemm_table_device + "'");
    }
    auto& correction = built[{d.gemm_table, d.gemm_table_device}];
    if (!correction) {
      const DeviceSpec& measured_on = on->second;
      std::vector<GemmMeasurement> rows;
      try {
        rows = read_gemm_table((directory / d.gemm_table).string());
      } catch (const std::runtime_error& e) {
        throw CatalogError(where + "gemm_table: " + e.what());
      }
      const units::FlopsPerSecond rate = measured_on.achievable_matmul_bf16;
      const units::BytesPerSecond bandwidth = measured_on.achievable_memory_bandwidth;
      const int64_t sms = measured_on.sm_count;
      correction = std::make_shared<const MeasuredGemmCorrection>(
          rows,
          [&](int64_t m, int64_t n, int64_t k) {
            return ComputeModel::roofline_gemm_time({m, n, k, 1}, sms, rate, bandwidth, 2.0, 2.0);
          },
          d.gemm_table + " (measured on " + d.gemm_table_device + ")");
    }
    d.gemm_correction = correction;
  }
  std::map<std::string, std::shared_ptr<const MeasuredAttention>> attention;
  for (auto& [name, d] : devices) {
    if (d.attention_table_file.empty()) continue;
    const auto where = devices_file + ": device '" + name + "': ";
    const auto on = devices.find(d.attention_table_device);
    if (on == devices.end()) {
      throw CatalogError(where + "attention_table_device: unknown device '" + d.attention_table_device + "'");
    }
    auto& table = attention[d.attention_table_file];
    if (!table) {
      try {
        table = std::make_shared<const MeasuredAttention>(
            read_attention_table((directory / d.attention_table_file).string()),
            d.attention_table_file + " (measured on " + d.attention_table_device + ")");
      } catch (const std::runtime_error& e) {
        throw CatalogError(where + "attention_table: " + e.what());
      }
    }
    d.attention_table = table;
    d.attention_table_clock_ratio = d.achievable_matmul_bf16 / on->second.achievable_matmul_bf16;
  }
}

}  // namespace

units::FlopsPerSecond DeviceSpec::peak_for(Precision p) const {
  auto it = peak.find(p);
  if (it == peak.end() || it->second.value() <= 0.0) {
    std::vector<std::string_view> supported;
    for (const auto& [prec, rate] : peak) {
      if (rate.value() > 0.0) supported.push_back(to_string(prec));
    }
    throw std::out_of_range("device '" + name + "' has no " + std::string(to_string(p)) +
                            " mode (supported: " + join(supported) + ")");
  }
  return it->second;
}

Catalog::Catalog(std::map<std::string, DeviceSpec> devices, std::map<std::string, VmSize> vm_sizes)
    : devices_(std::move(devices)), vm_sizes_(std::move(vm_sizes)) {
  for (const auto& [name, vm] : vm_sizes_) {
    if (devices_.find(vm.device) == devices_.end()) {
      throw CatalogError("VM size '" + name + "': unknown device '" + vm.device +
                         "'; known devices: " + known_names(devices_));
    }
  }
}

Catalog Catalog::load(const std::filesystem::path& directory) {
  const fs::path devices_path = directory / "devices.toml";
  const fs::path vms_path = directory / "vm_sizes.toml";
  const std::string devices_file = devices_path.string();
  const std::string vms_file = vms_path.string();

  const toml::table devices_doc = parse_catalog_file(devices_path);
  std::map<std::string, DeviceSpec> devices;
  std::map<std::string, const DeviceSpec*> first_of_part;  // memory_part -> the first device (file order) naming it
  for (const auto& [name, table] : entries(devices_file, devices_doc, "device")) {
    const DeviceSpec& d = devices.emplace(name, read_device(devices_file, name, *table)).first->second;
    check_memory_part(devices_file, *table, d, first_of_part);
  }

  attach_gemm_tables(devices_file, directory, devices);

  const toml::table vms_doc = parse_catalog_file(vms_path);
  std::map<std::string, VmSize> vms;
  const auto vm_entries = entries(vms_file, vms_doc, "VM size");
  std::map<std::string, int> vm_names;  // every size of the file, for next_size (which may name a later one)
  for (const auto& [name, table] : vm_entries) vm_names.emplace(name, 0);
  for (const auto& [name, table] : vm_entries) {
    vms.emplace(name, read_vm(vms_file, name, *table, devices, vm_names));
  }

  // Optional: prediction bands from the validation suite, keyed "GROUP/FAMILY" ("*" for any).
  const fs::path bands_path = directory / "prediction_uncertainty.toml";
  std::error_code ec;
  if (fs::is_regular_file(bands_path, ec)) {
    const std::string bands_file = bands_path.string();
    const toml::table bands_doc = parse_catalog_file(bands_path);
    static constexpr auto kBandKeys =
        std::to_array<std::string_view>({"rms_relative_error", "max_relative_error", "rows"});
    for (const auto& [key, table] : entries(bands_file, bands_doc, "prediction band")) {
      const EntryReader r(bands_file, key, *table, kBandKeys);
      const auto slash = key.find('/');
      const auto second = slash == std::string::npos ? std::string::npos : key.find('/', slash + 1);
      const std::string workload = second == std::string::npos ? std::string() : key.substr(second + 1);
      if (slash == std::string::npos || slash == 0 || second == std::string::npos || second == slash + 1 ||
          (workload != "dense" && workload != "context-parallel" && workload != "moe")) {
        throw CatalogError(bands_file + ": key '" + key +
                           "': expected \"GROUP/FAMILY/WORKLOAD\" (\"*\" for any group or family; workload "
                           "dense, context-parallel or moe)");
      }
      PredictionBand band;
      band.rms_relative_error = r.positive("rms_relative_error");
      band.max_relative_error = r.positive("max_relative_error");
      band.rows = r.positive_count("rows");
      band.scope = key;
      const std::string group = key.substr(0, slash), family_workload = key.substr(slash + 1);
      for (auto& [name, device] : devices) {
        if (group == "*") {
          device.prediction_bands.emplace("suite:" + family_workload, band);
        } else if (device.calibration_group == group) {
          device.prediction_bands[family_workload] = band;
        }
      }
    }
  }
  return Catalog(std::move(devices), std::move(vms));
}

std::optional<PredictionBand> DeviceSpec::prediction_band(const std::string& framework_family,
                                                          const std::string& workload) const {
  // No published training run on a CPU exists in the validation suite: the GPU suite's errors say nothing about a
  // CPU's estimated rates, so a CPU has no band.
  if (kind == DeviceKind::cpu) return std::nullopt;
  const std::string w = "/" + workload;
  for (const std::string& key : {framework_family + w, "*" + w, "suite:" + framework_family + w, "suite:*" + w}) {
    if (auto it = prediction_bands.find(key); it != prediction_bands.end()) return it->second;
  }
  return std::nullopt;
}

std::filesystem::path Catalog::default_directory(const std::filesystem::path& installed_directory) {
  const char* env = std::getenv("CLUSTERSIM_CATALOG_DIR");
  if (env != nullptr && *env != '\0') return std::filesystem::path(env);
  std::error_code ec;
  if (!installed_directory.empty() && fs::is_regular_file(installed_directory / "devices.toml", ec)) {
    return installed_directory;
  }
  return std::filesystem::path(CLUSTERSIM_CATALOG_DIR);
}

const DeviceSpec& Catalog::device(const std::string& name) const {
  auto it = devices_.find(name);
  if (it == devices_.end()) {
    throw std::out_of_range("unknown device '" + name + "'; known devices: " + known_names(devices_));
  }
  return it->second;
}

const VmSize& Catalog::vm_size(const std::string& name) const {
  auto it = vm_sizes_.find(name);
  if (it == vm_sizes_.end()) {
    throw std::out_of_range("unknown VM size '" + name + "'; known VM sizes: " + known_names(vm_sizes_));
  }
  return it->second;
}

int64_t VmSize::domain_vms(int64_t nodes, std::optional<int64_t> vms_per_domain) const {
  if (vms_per_domain) return *vms_per_domain;
  return std::max<int64_t>(1, std::min<int64_t>(nvlink_domain_vms, nodes));
}

int64_t VmSize::domain_gpus(int64_t nodes, std::optional<int64_t> vms_per_domain) const {
  return devices_per_vm * domain_vms(nodes, vms_per_domain);
}

std::string VmSize::domain_use_problem(int64_t vms_per_domain) const {
  if (vms_per_domain >= 1 && vms_per_domain <= nvlink_domain_vms) return {};
  const std::string got = ", got " + std::to_string(vms_per_domain);
  if (nvlink_domain_vms == 1) {
    return "must be 1: " + name + " has no NVLink domain beyond one VM" + got;
  }
  return "must be from 1 to " + std::to_string(nvlink_domain_vms) + ", the VMs of one NVLink domain of " + name +
         " (" + std::to_string(nvlink_domain_vms * devices_per_vm) + " GPUs)" + got;
}

std::string VmSize::domain_problem(int64_t nodes, std::optional<int64_t> vms_per_domain,
                                   const std::vector<int64_t>& zone_nodes) const {
  if (vms_per_domain) {
    if (std::string why = domain_use_problem(*vms_per_domain); !why.empty()) {
      return "VMs per NVLink domain " + why;
    }
  }
  const int64_t domain = domain_vms(nodes, vms_per_domain);
  if (domain == 1) return {};
  const bool whole = domain == nvlink_domain_vms;
  const std::string what = std::to_string(domain) + " VMs per NVLink domain of " + name + " (" +
                           std::to_string(domain * devices_per_vm) + " GPUs" +
                           (whole ? "" : "; " + std::to_string(domain) + " of each domain's " +
                                             std::to_string(nvlink_domain_vms) + " VMs") +
                           ")";
  if (nodes % domain != 0) return std::to_string(nodes) + " VMs are not whole domains of " + what;
  for (const int64_t z : zone_nodes) {
    if (z % domain != 0) {
      return "a zone of " + std::to_string(z) + " VMs is not whole domains of " + what + "; a domain never spans zones";
    }
  }
  return {};
}

std::string_view to_string(IntraNodeFabric f) {
  switch (f) {
    case IntraNodeFabric::nvswitch: return "nvswitch";
    case IntraNodeFabric::nvlink_mesh: return "nvlink_mesh";
    case IntraNodeFabric::nvlink_bridge: return "nvlink_bridge";
    case IntraNodeFabric::pcie: return "pcie";
    case IntraNodeFabric::infinity_fabric: return "infinity_fabric";
    case IntraNodeFabric::none: return "none";
  }
  return "?";
}

std::string_view to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::gpu: return "gpu";
    case DeviceKind::cpu: return "cpu";
  }
  return "?";
}

}  // namespace clustersim::models
