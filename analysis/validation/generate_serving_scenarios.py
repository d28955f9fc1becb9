#!/usr/bin/python3
"""Write one serving validation scenario per modelled row of analysis/validation/serving_benchmarks.csv.

Every row of the CSV (a published serving measurement with its settings, read from the cited file; see
serving_benchmarks.md) becomes scenarios/validation-serving/<source>-<row>.toml: the model's shape, the GPU's
Azure VM size (the same HGX board), the engine's limits as the benchmark ran them, the workload as the benchmark
sent it (offline: every request at once; a Poisson stream at the stated rate; a closed loop at the stated
concurrency; a static batch), and a [reference] with the metric and its value. Rows whose workload the sources
do not pin down are listed in SKIPPED with the reason, and are not written.

The scenarios are committed; the test generated_serving_scenarios (tests/analysis) runs this script with --check,
which compares its output with them byte for byte.

Usage: /usr/bin/python3 analysis/validation/generate_serving_scenarios.py [--check]
"""
import argparse
import csv
import io
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSV = os.path.join(ROOT, "analysis", "validation", "serving_benchmarks.csv")
OUT = os.path.join(ROOT, "scenarios", "validation-serving")

# name -> (layers, hidden, heads, kv groups, ffn, vocab, context, source)
MODELS = {
    "llama3.1-8b": (32, 4096, 32, 8, 14336, 128256, 131072, "Llama 3.1 8B (Dubey et al. 2024, Table 3)"),
    "llama3.1-70b": (80, 8192, 64, 8, 28672, 128256, 131072, "Llama 3.1 70B (Dubey et al. 2024, Table 3)"),
    "llama3-70b": (80, 8192, 64, 8, 28672, 128256, 8192, "Llama 3 70B (Dubey et al. 2024, Table 3)"),
    "llama3.3-70b": (80, 8192, 64, 8, 28672, 128256, 131072, "Llama 3.3 70B Instruct (the Llama 3.1 70B shape)"),
    "llama2-7b": (32, 4096, 32, 32, 11008, 32000, 4096, "Llama 2 7B (Touvron et al. 2023)"),
    "llama2-13b": (40, 5120, 40, 40, 13824, 32000, 4096, "Llama 2 13B (Touvron et al. 2023)"),
    "llama2-70b": (80, 8192, 64, 8, 28672, 32000, 4096, "Llama 2 70B (Touvron et al. 2023, 8 KV groups)"),
}


def model_of(name):
    n = name.lower()
    if "3.1 8b" in n:
        return "llama3.1-8b"
    if "3.1 70b" in n:
        return "llama3.1-70b"
    if "3.3 70b" in n:
        return "llama3.3-70b"
    if "llama 3 70b" in n:
        return "llama3-70b"
    if "13b" in n:
        return "llama2-13b"
    if "70b" in n:
        return "llama2-70b"
    if "7b" in n:
        return "llama2-7b"
    raise ValueError("unknown model " + name)


def vm_of(gpu):
    g = gpu.lower()
    if "h200" in g:
        return "Standard_ND96isr_H200_v5"
    if "h100" in g:
        return "Standard_ND96isr_H100_v5"
    if "a100" in g:
        return "Standard_ND96amsr_A100_v4"
    raise ValueError("unknown GPU " + gpu)


# The CSV's metric -> (reference.metric, note). The *_unspecified_* statistics are compared with the mean, the
# statistic their benchmark clients (genai-perf, gptSessionBenchmark) print.
METRICS = {
    "output_tokens_per_s": "output_tokens_per_s",
    "output_tokens_per_s_per_gpu": "output_tokens_per_s_per_gpu",
    "requests_per_s": "requests_per_s",
    "ttft_mean_ms": "ttft_mean_ms",
    "ttft_unspecified_ms": "ttft_mean_ms",
    "ttft_median_ms": "ttft_p50_ms",
    "ttft_p99_ms": "ttft_p99_ms",
    "itl_mean_ms": "tpot_mean_ms",
    "itl_unspecified_ms": "tpot_mean_ms",
    "itl_median_ms": "tpot_p50_ms",
    "tpot_median_ms": "tpot_p50_ms",
    "e2e_latency_median_s": "e2e_p50_s",
}

# Engines: the framework column -> serving.engine.
def engine_of(framework):
    f = framework.lower()
    if "tensorrt" in f or "nim" in f:
        return "tensorrt-llm"
    if "lmdeploy" in f:
        return "lmdeploy"
    if "vllm" in f:
        return "vllm"
    raise ValueError("unknown engine " + framework)


SKIPPED = {
    "mlperf_inf_v4.1_nvidia": "the OpenOrca subset's prompt-length distribution is not in the sources at hand "
                              "(only its mean output, 294 tokens per sample, is)",
}


def workload(row):
    """The [workload] and [serving] limits the benchmark ran, and notes, or None with a reason."""
    src = row["source_id"]
    batch = row["concurrency_or_batch"]
    rate = row["request_rate"]
    serving = {}
    notes = []
    if not row["input_tokens"].isdigit():
        return None, "the prompt lengths are a dataset's, not stated"
    w = {"prompt_tokens": int(row["input_tokens"]), "output_tokens": int(row["output_tokens"])}
    m = re.search(r"num_requests=(\d+)", batch)
    if src.startswith("trtllm_perf_overview_v0"):
        w.update(arrival="offline", requests=int(m.group(1)))
        # trtllm-bench's build heuristics pick the engine's limits; the doc does not publish them. Assumed: the
        # executor's default max_num_tokens 8192 and a batch limit the KV cache binds first.
        serving.update(max_num_seqs=4096, max_num_batched_tokens=8192, gpu_memory_utilization=0.95)
        notes.append("trtllm-bench throughput: every request queued at once; max batch and max tokens are the "
                     "build heuristics' (not published): assumed 4096 sequences and 8192 tokens, the KV cache at "
                     "kv_cache_free_gpu_mem_fraction 0.95")
    elif src.startswith("trtllm_perf_overview_online"):
        w["requests"] = 500
        if rate == "inf":
            w["arrival"] = "offline"
        else:
            w.update(arrival="poisson", rate_per_s=float(rate))
        notes.append("Triton tensorrtllm_backend, 500 requests; at QPS inf every request is sent at once; the "
                     "arrival process at a finite QPS is not stated (Poisson assumed)")
    elif src.startswith("trtllm_performance_md") or src.startswith("lmdeploy"):
        b = int(re.search(r"batch (?:size )?(\d+)", batch).group(1))
        w.update(arrival="offline", requests=b)
        serving.update(max_num_seqs=b, chunked_prefill=False,
                       max_num_batched_tokens=max(8192, b * int(row["input_tokens"])))
        notes.append("static batching: the batch of %d prefilled at once, then decoded to the end" % b)
    elif src.startswith("nim"):
        c = int(re.search(r"concurrency (\d+)", batch).group(1))
        w.update(arrival="closed_loop", concurrency=c, requests=max(100, 10 * c))
        notes.append("genai-perf at fixed concurrency %d (closed loop); the request count is not stated: "
                     "10 x concurrency, at least 100, assumed" % c)
    elif src.startswith("vllm"):
        b = int(re.search(r"batch (\d+)", batch).group(1))
        w.update(arrival="offline", requests=b)
        notes.append("benchmark_latency: one batch of %d prompts run to the end" % b)
    else:
        return None, "no workload rule for " + src
    return (w, serving, notes), None


def precision_of(row):
    """serving.precision and kv_cache_dtype. An fp8 TensorRT-LLM engine whose KV cache the source leaves unstated
    has an fp8 cache: TensorRT-LLM's perf-overview (v0.17) states that its FP8 quantization also sets the KV cache
    to FP8 (NIM's fp8 profiles are TensorRT-LLM engines)."""
    p = row["precision"].lower()
    if p.startswith("fp8"):
        kv_text = row["kv_cache_dtype"].lower()
        kv = "fp8" if kv_text.startswith("fp8") else "auto"
        if kv_text.startswith("not stated") and engine_of(row["framework"]) == "tensorrt-llm":
            kv = "fp8"
        return "fp8", kv
    if p.startswith("fp16"):
        return "fp16", "auto"
    return "bf16", "auto"


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return repr(v)
    return str(v)


def scenario(index, row):
    model_key = model_of(row["model"])
    layers, hidden, heads, groups, ffn, vocab, context, model_source = MODELS[model_key]
    made, why = workload(row)
    if made is None:
        return None, why
    w, limits, notes = made
    metric = METRICS[row["metric"]]
    tp = int(row["tensor_parallel"].split()[0])
    precision, kv = precision_of(row)
    engine = engine_of(row["framework"])
    name = "%s-%02d" % (row["source_id"].replace("_", "-").replace(".", ""), index)
    lines = [
        "# Serving validation row %d of analysis/validation/serving_benchmarks.csv (written by" % index,
        "# analysis/validation/generate_serving_scenarios.py; do not edit).",
        "# Source: %s" % row["source"],
        "#   %s" % row["url_or_path"],
        "# Framework: %s %s on %s x %s, TP %d; %s." % (row["framework"], row["framework_version"], row["gpus"],
                                                       row["gpu"], tp, model_source),
        "# Measured: %s = %s %s." % (row["metric"], row["value"], row["units"]),
        "# Row: %s" % row["notes"],
    ]
    for n in notes:
        lines.append("# Workload: " + n + ".")
    lines += [
        "schema_version = 1",
        'name = "%s"' % name,
        'description = "%s, %s TP %d on %s, %s in / %s out"' % (row["model"], precision, tp, row["gpu"],
                                                               row["input_tokens"], row["output_tokens"]),
        "",
        "[model]",
        "num_layers = %d" % layers,
        "hidden_size = %d" % hidden,
        "num_attention_heads = %d" % heads,
        "num_query_groups = %d" % groups,
        "ffn_hidden_size = %d" % ffn,
        "vocab_size = %d" % vocab,
        "seq_length = %d" % context,
        'mlp = "swiglu"',
        'position_embedding = "rope"',
        "dropout = 0.0",
        "tie_embeddings = false",
        "",
        "[serving]",
        'vm_size = "%s"' % vm_of(row["gpu"]),
        "tensor = %d" % tp,
        'precision = "%s"' % precision,
        'kv_cache_dtype = "%s"' % kv,
        'engine = "%s"' % engine,
    ]
    gpus = int(row["gpus"])
    if gpus > tp:
        lines.append("replicas = %d" % (gpus // tp))
    for k in ("max_num_seqs", "max_num_batched_tokens", "chunked_prefill", "gpu_memory_utilization"):
        if k in limits:
            lines.append("%s = %s" % (k, toml_value(limits[k])))
    lines += ["", "[workload]"]
    for k in ("arrival", "rate_per_s", "requests", "concurrency", "prompt_tokens", "output_tokens"):
        if k in w:
            lines.append("%s = %s" % (k, toml_value(w[k])))
    lines += [
        "",
        "[reference]",
        'metric = "%s"' % metric,
        "value = %s" % toml_value(float(row["value"])),
        'dataset = "%s"' % row["source_id"],
        'source = "%s"' % (row["source"].replace('"', "'")),
    ]
    return (name, "\n".join(lines) + "\n"), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    wanted = {}
    skipped = []
    for i, row in enumerate(rows, start=1):
        if row["source_id"] in SKIPPED:
            skipped.append((i, SKIPPED[row["source_id"]]))
            continue
        made, why = scenario(i, row)
        if made is None:
            skipped.append((i, why))
            continue
        wanted[made[0] + ".toml"] = made[1]
    existing = {f for f in os.listdir(OUT) if f.endswith(".toml")} if os.path.isdir(OUT) else set()
    if args.check:
        bad = sorted(set(existing) ^ set(wanted))
        for name, text in wanted.items():
            p = os.path.join(OUT, name)
            if os.path.exists(p) and open(p).read() != text:
                bad.append(name)
        for b in bad:
            print("differs: " + b)
        return 1 if bad else 0
    os.makedirs(OUT, exist_ok=True)
    for stale in existing - set(wanted):
        os.remove(os.path.join(OUT, stale))
    for name, text in wanted.items():
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)
    print("%d scenarios written to %s; %d rows skipped:" % (len(wanted), OUT, len(skipped)))
    for i, why in skipped:
        print("  row %d: %s" % (i, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
