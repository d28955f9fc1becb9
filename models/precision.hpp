// Numeric precisions of training and the bytes each element takes.
#pragma once

#include <optional>
#include <string_view>

namespace clustersim::models {

/// Arithmetic precision of the math (GEMMs) of a training run.
/// fp8: GEMMs at the FP8 tensor-core rate, everything else in bf16 (Transformer Engine practice).
enum class Precision { fp32, tf32, fp16, bf16, fp8 };

/// Canonical lower-case name, as written in scenario files: "fp32" | "tf32" | "fp16" | "bf16" | "fp8".
std::string_view to_string(Precision p);
/// Parses the canonical name; std::nullopt for anything else.
std::optional<Precision> parse_precision(std::string_view name);
/// Bytes per element of activations and weights used in the math: 4 for fp32/tf32, 2 otherwise
/// (fp8 keeps bf16 activations and master weights; only GEMM inputs are cast).
double activation_bytes_per_element(Precision p);

}  // namespace clustersim::models
