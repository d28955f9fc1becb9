// Text rendering of the hardware catalog for `clustersim catalog`.
#pragma once

#include <string>

namespace clustersim::models {
class Catalog;
}

namespace clustersim::sim {

/// Two aligned plain-text tables, devices then VM sizes, each row in catalog (name) order:
///  - devices: name, kind, dense peak TFLOP/s for fp32/tf32/fp16/bf16/fp8 ("-" where unsupported), achievable
///    bf16 matmul TFLOP/s, memory ("80 GB" or "64 GiB", as the source quotes it), datasheet and measured (triad)
///    memory TB/s, SMs (CUs, cores), fabric GB/s per direction ("-" for none), TDP W;
///  - VM sizes: name, devices ("8 x H100-SXM5-80GB", "1/6 x A10"), vCPUs, RAM GiB, intra-node fabric,
///    InfiniBand ("8x400 Gb/s" or "-"), Ethernet Gb/s, local disk, price $/h ("-" where unknown).
/// Numbers print with at most 5 significant digits; the text ends with a newline.
std::string format_catalog_table(const models::Catalog& catalog);

}  // namespace clustersim::sim
