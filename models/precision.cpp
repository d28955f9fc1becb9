#include "models/precision.hpp"

namespace clustersim::models {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8}) {
    if (to_string(p) == name) return p;
  }
  return std::nullopt;
}

double activation_bytes_per_element(Precision p) {
  return (p == Precision::fp32 || p == Precision::tf32) ? 4.0 : 2.0;
}

}  // namespace clustersim::models
