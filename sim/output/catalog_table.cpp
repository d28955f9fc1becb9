#include "sim/output/catalog_table.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/hardware/catalog.hpp"

namespace clustersim::sim {
namespace {

using models::Catalog;
using models::Precision;

/// `x` rounded to `significant` digits, printed in the shortest form ("15.7", "0.0512", "1307.4").
std::string compact(double x, int significant = 5) {
  if (x == 0.0 || !std::isfinite(x)) return x == 0.0 ? "0" : "?";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(x))));
  const double scale = std::pow(10.0, significant - 1 - magnitude);
  const double rounded = std::round(x * scale) / scale;
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), rounded);
  return ec == std::errc() ? std::string(buf.data(), end) : std::string("?");
}

/// Columns of text, left-aligned when `left`, else right-aligned, two spaces apart, with a dashed rule under
/// the header.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool left = false;
  };
  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  [[nodiscard]] std::string render() const {
    std::vector<size_t> width(columns_.size(), 0);
    for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].header.size();
    for (const auto& row : rows_) {
      for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    std::string out;
    auto line = [&](const std::vector<std::string>& cells) {
      std::string text;
      for (size_t c = 0; c < columns_.size(); ++c) {
        const std::string& cell = c < cells.size() ? cells[c] : std::string();
        const std::string pad(width[c] - cell.size(), ' ');
        if (c > 0) text += "  ";
        text += columns_[c].left ? cell + pad : pad + cell;
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text + '\n';
    };
    std::vector<std::string> header;
    std::vector<std::string> rule;
    for (size_t c = 0; c < columns_.size(); ++c) {
      header.push_back(columns_[c].header);
      rule.emplace_back(width[c], '-');
    }
    line(header);
    line(rule);
    for (const auto& row : rows_) line(row);
    return out;
  }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

std::string peak_cell(const models::DeviceSpec& d, Precision p) {
  auto it = d.peak.find(p);
  return it == d.peak.end() || it->second.value() <= 0.0 ? "-" : compact(units::in_tflops_per_second(it->second));
}

std::string memory_cell(const models::DeviceSpec& d) {
  return d.memory_quoted_in_gib ? compact(units::in_gib(d.memory_capacity)) + " GiB"
                                : compact(d.memory_capacity.value() * 1e-9) + " GB";
}

std::string devices_cell(const models::VmSize& v) {
  if (v.device_share < 1.0) {
    const double denominator = 1.0 / v.device_share;
    const std::string share = std::fabs(denominator - std::round(denominator)) < 1e-9
                                  ? "1/" + compact(std::round(denominator))
                                  : compact(v.device_share, 3);
    return (v.devices_per_vm == 1 ? share : std::to_string(v.devices_per_vm) + " x " + share) + " x " + v.device;
  }
  return std::to_string(v.devices_per_vm) + " x " + v.device;
}

std::string disk_cell(units::Bytes b) {
  if (b.value() <= 0.0) return "-";
  const double gib = units::in_gib(b);
  const double tib = gib / 1024.0;
  return tib >= 1.0 && std::fabs(tib - std::round(tib)) < 1e-9 ? compact(tib) + " TiB" : compact(gib) + " GiB";
}

std::string price_cell(const std::optional<double>& price) {
  if (!price) return "-";
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.2f", *price);
  return buf.data();
}

/// `cell` marked "~" when `key` is among the entry's estimates.
std::string marked(std::string cell, const std::set<std::string>& estimates, std::string_view key) {
  if (cell != "-" && estimates.count(std::string(key)) != 0) cell += "~";
  return cell;
}

/// `text` as lines of at most `width` columns (a longer word stands alone), the first indented by 2 spaces and
/// the others by 6.
std::string wrapped(const std::string& text, size_t width) {
  std::string out;
  std::string line = "  ";
  bool first_word = true;
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (!first_word && line.size() + 1 + w.size() > width) {
      out += line + "\n";
      line = "      ";
      first_word = true;
    }
    line += (first_word ? "" : " ") + w;
    first_word = false;
  }
  return out + line + "\n";
}

/// Which kernel classes run from a measured table ("gemm", "attention"; "~" when the table was measured on a
/// sibling and carried over as an estimate), "-" when every rate is a roofline with the fitted fractions.
std::string kernels_cell(const models::DeviceSpec& d) {
  std::string cell;
  if (d.gemm_correction) cell = marked("gemm", d.estimates, "gemm_table");
  if (d.attention_table) cell += (cell.empty() ? "" : "+") + marked("attention", d.estimates, "attention_table");
  return cell.empty() ? "-" : cell;
}

}  // namespace

std::string format_catalog_table(const models::Catalog& catalog) {
  TextTable devices({{"device", true},
                     {"kind", true},
                     {"fp32", false},
                     {"tf32", false},
                     {"fp16", false},
                     {"bf16", false},
                     {"fp8", false},
                     {"fp4", false},
                     {"matmul", false},
                     {"memory", false},
                     {"mem TB/s", false},
                     {"triad TB/s", false},
                     {"SMs", false},
                     {"fabric GB/s/dir", false},
                     {"TDP W", false},
                     {"training", true},
                     {"kernels", true}});
  for (const auto& [name, d] : catalog.devices()) {
    const std::set<std::string>& e = d.estimates;
    devices.add({name,
                 std::string(models::to_string(d.kind)),
                 marked(peak_cell(d, Precision::fp32), e, "peak_fp32_tflops"),
                 marked(peak_cell(d, Precision::tf32), e, "peak_tf32_tflops"),
                 marked(peak_cell(d, Precision::fp16), e, "peak_fp16_tflops"),
                 marked(peak_cell(d, Precision::bf16), e, "peak_bf16_tflops"),
                 marked(peak_cell(d, Precision::fp8), e, "peak_fp8_tflops"),
                 d.peak_fp4 ? marked(compact(units::in_tflops_per_second(*d.peak_fp4)), e, "peak_fp4_tflops") : "-",
                 marked(compact(units::in_tflops_per_second(d.achievable_matmul_bf16)), e,
                        "achievable_matmul_bf16_tflops"),
                 marked(memory_cell(d), e, d.memory_quoted_in_gib ? "memory_gib" : "memory_gb"),
                 marked(compact(d.memory_bandwidth.value() * 1e-12), e, "memory_bandwidth_tb_per_s"),
                 marked(compact(d.achievable_memory_bandwidth.value() * 1e-12), e,
                        "achievable_memory_bandwidth_tb_per_s"),
                 marked(std::to_string(d.sm_count), e, "sm_count"),
                 d.fabric_bandwidth_per_direction.value() > 0.0
                     ? marked(compact(units::in_gigabytes_per_second(d.fabric_bandwidth_per_direction)), e,
                              "fabric_gb_per_s_per_direction")
                     : "-",
                 marked(compact(d.tdp_watts), e, "tdp_watts"),
                 d.training_matmul_fraction == 1.0 && d.training_memory_fraction == 1.0
                     ? "-"
                     : (e.count("training_matmul_fraction") != 0 ? "estimate" : "fitted"),
                 kernels_cell(d)});
  }

  TextTable vms({{"VM size", true},
                 {"devices", true},
                 {"vCPUs", false},
                 {"RAM", false},
                 {"fabric", true},
                 {"InfiniBand", false},
                 {"Ethernet Gb/s", false},
                 {"local disk", false},
                 {"$/h", false}});
  for (const auto& [name, v] : catalog.vm_sizes()) {
    const std::set<std::string>& e = v.estimates;
    const std::string ib = v.infiniband_ports > 0 ? std::to_string(v.infiniband_ports) + "x" +
                                                        compact(v.infiniband_port_rate.value() * 1e-9) + " Gb/s"
                                                  : "-";
    std::string devices_text = devices_cell(v);
    if (v.nvlink_domain_vms > 1) {
      devices_text += " (NVLink domain: " + std::to_string(v.nvlink_domain_vms) + " VMs, " +
                      std::to_string(v.nvlink_domain_vms * v.devices_per_vm) + " GPUs)";
    }
    vms.add({name,
             devices_text,
             marked(std::to_string(v.vcpus), e, "vcpus"),
             marked(compact(units::in_gib(v.ram)) + " GiB", e, "ram_gib"),
             std::string(models::to_string(v.fabric)),
             marked(ib, e, "infiniband_port_gbps"),
             marked(compact(v.ethernet_bandwidth.value() * 1e-9), e, "ethernet_gbps"),
             disk_cell(v.local_nvme),
             price_cell(v.price_usd_per_hour)});
  }

  // Where every entry's numbers come from.
  std::string sources = "Sources (docs/catalog.md; each number's own source is beside it in the catalog files)\n";
  for (const auto& [name, d] : catalog.devices()) sources += wrapped(name + ": " + d.source, 116);
  for (const auto& [name, v] : catalog.vm_sizes()) {
    std::string text = name + ": " + v.source;
    if (!v.price_source.empty()) text += "; price: " + v.price_source;
    if (!v.nccl.source.empty()) text += "; NCCL: " + v.nccl.source;
    sources += wrapped(text, 116);
  }

  return "Devices (dense peak TFLOP/s per precision, '-' = no such mode; matmul = achievable bf16 matmul TFLOP/s;\n"
         "mem = datasheet, triad = measured or estimated achievable memory bandwidth; training = the sustained-\n"
         "in-training fractions, fitted to published runs or estimated; kernels = the kernel classes timed from\n"
         "measured tables (catalog kernels/: 16-bit GEMMs, fused attention), the fractions scaling only the rest;\n"
         "'~' = an estimate, no measurement or datasheet gives it; every other number is a datasheet value or a\n"
         "measurement)\n" +
         devices.render() + "\nVM sizes (price: pay-as-you-go Linux East US, '-' = unknown; '~' = an estimate)\n" +
         vms.render() + "\n" + sources;
}

}  // namespace clustersim::sim
