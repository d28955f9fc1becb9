#!/usr/bin/python3
"""Extract the measured kernel tables the compute model reads from Vidur's operator profiles.

Source: Microsoft Vidur (Agrawal et al., "Vidur: A Large-Scale Simulation Framework for LLM Inference",
MLSys 2024), data/profiling/compute/{a100,h100}/<org>/<model>/mlp.csv at commit 7d47513 (2024-11-19), MIT
licence (models/hardware/catalog/kernels/LICENSE.vidur). Copied to the project's shared data as
shared/data/vidur_profiling/; run this script against that folder:

    /usr/bin/python3 analysis/calibration/extract_vidur_tables.py ../shared/data/vidur_profiling

It writes models/hardware/catalog/kernels/gemm_{a100,h100}.csv: one row per distinct GEMM shape (M tokens,
N output features, K input features, 16-bit inputs, cuBLAS through torch.nn.Linear) and M in a log-spaced
subset of the measured token counts, with the median kernel time in microseconds (the median over Vidur's
repetitions, then the median over the models that share the shape). The GEMMs of one decoder layer per
tensor-parallel rank: the fused QKV projection (N = (a + 2 g) d / t, K = h), the output projection (N = h,
K = a d / t), the gate+up projection (N = 2 f / t, or f / t without gating, K = h) and the down projection
(N = h, K = f / t). The script is deterministic: same input, same bytes.
"""
import csv
import glob
import os
import statistics
import sys

# Token counts kept: powers of two and 1.5x powers of two (the measured grid holds every multiple of 8 up to
# 4,096; the compute model interpolates between these in log M).
KEPT_M = sorted({1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096})
OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


def shapes(row):
    t = int(row["num_tensor_parallel_workers"])
    h, a, g = int(row["n_embd"]), int(row["n_head"]), int(row["n_kv_head"])
    f, d = int(row["n_expanded_embd"]), int(row["n_embd"]) // int(row["n_head"])
    gated = row["use_gated_mlp"].strip() == "True"
    return {
        "attn_pre_proj": ((a + 2 * g) * d // t, h),
        "attn_post_proj": (h, a * d // t),
        "mlp_up_proj": ((2 if gated else 1) * f // t, h),
        "mlp_down_proj": (h, f // t),
    }


def extract(root, gpu):
    times = {}  # (m, n, k) -> {model: [median ms]}
    for path in sorted(glob.glob(os.path.join(root, gpu, "*", "*", "mlp.csv"))):
        model = os.path.basename(os.path.dirname(path))
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                m = int(row["num_tokens"])
                if m not in KEPT_M:
                    continue
                for op, (n, k) in shapes(row).items():
                    value = row.get(f"time_stats.{op}.median", "")
                    if value in ("", "nan"):
                        continue
                    times.setdefault((m, n, k), {}).setdefault(model, []).append(float(value))
    out = []
    for (m, n, k), per_model in sorted(times.items()):
        medians = [statistics.median(v) for v in per_model.values()]
        out.append((m, n, k, statistics.median(medians) * 1e3, len(per_model)))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/vidur_profiling"
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(here, "..", "..", "models", "hardware", "catalog", "kernels")
    for gpu, device in (("a100", "A100-SXM4-80GB"), ("h100", "H100-SXM5-80GB")):
        rows = extract(root, gpu)
        path = os.path.join(dest, f"gemm_{gpu}.csv")
        with open(path, "w", newline="") as f:
            f.write(f"# Measured GEMM kernel times on {device}, 16-bit inputs (torch.nn.Linear -> cuBLAS), one GPU.\n")
            f.write("# Source: Microsoft Vidur (Agrawal et al., MLSys 2024) data/profiling/compute/"
                    f"{gpu}/*/*/mlp.csv, commit 7d47513 (2024-11-19), MIT licence (LICENSE.vidur).\n")
            f.write("# Extracted by analysis/calibration/extract_vidur_tables.py: median kernel time over Vidur's "
                    "repetitions, then over the models sharing the shape.\n")
            f.write("# m: tokens (rows of the activation), n: output features, k: input features; time_us: "
                    "microseconds; models: how many models measured the shape.\n")
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["m", "n", "k", "time_us", "models"])
            for m, n, k, us, count in rows:
                w.writerow([m, n, k, f"{us:.3f}", count])
        print(f"{path}: {len(rows)} rows")


if __name__ == "__main__":
    main()
