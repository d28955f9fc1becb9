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
# Mixture-of-experts rows go to their own directory: `clustersim validate` predicts them with the overheads fitted
# on the dense rows and does not fit on them (the MoE kernel model has no parameter of its own; fitting the
# engines' CPU overhead on rows whose GPU kernels are a first model would let the overhead absorb that model's
# error).
OUT_MOE = os.path.join(ROOT, "scenarios", "validation-serving-moe")

# name -> (layers, hidden, heads, kv groups, ffn, vocab, context, source)
MODELS = {
    "llama3.1-8b": (32, 4096, 32, 8, 14336, 128256, 131072, "Llama 3.1 8B (Dubey et al. 2024, Table 3)"),
    "llama3.1-70b": (80, 8192, 64, 8, 28672, 128256, 131072, "Llama 3.1 70B (Dubey et al. 2024, Table 3)"),
    "llama3-70b": (80, 8192, 64, 8, 28672, 128256, 8192, "Llama 3 70B (Dubey et al. 2024, Table 3)"),
    "llama3.1-405b": (126, 16384, 128, 8, 53248, 128256, 131072, "Llama 3.1 405B (Dubey et al. 2024, Table 3)"),
    "llama3.3-70b": (80, 8192, 64, 8, 28672, 128256, 131072, "Llama 3.3 70B Instruct (the Llama 3.1 70B shape)"),
    "llama2-7b": (32, 4096, 32, 32, 11008, 32000, 4096, "Llama 2 7B (Touvron et al. 2023)"),
    "llama2-13b": (40, 5120, 40, 40, 13824, 32000, 4096, "Llama 2 13B (Touvron et al. 2023)"),
    "llama2-70b": (80, 8192, 64, 8, 28672, 32000, 4096, "Llama 2 70B (Touvron et al. 2023, 8 KV groups)"),
    "mixtral-8x7b": (32, 4096, 32, 8, 14336, 32000, 32768, "Mixtral 8x7B (Jiang et al. 2024, Table 1)"),
    "mixtral-8x22b": (56, 6144, 48, 8, 16384, 32768, 65536, "Mixtral 8x22B (mistralai/Mixtral-8x22B-v0.1 config.json)"),
}

# Mixture-of-experts models: name -> (routed experts, experts per token); each expert an MLP of the model's ffn.
MOE = {"mixtral-8x7b": (8, 2), "mixtral-8x22b": (8, 2)}

# Models with multi-latent attention and fine-grained experts (issue 30): name -> ([model] lines after the MoE
# keys), and their shape in MODELS (the kv-groups entry unused: MLA has none).
MODELS["deepseek-v3"] = (61, 7168, 128, 0, 18432, 129280, 163840,
                         "DeepSeek-V3 (DeepSeek-AI 2024, arXiv 2412.19437; deepseek-ai/DeepSeek-V3 config.json)")
MOE["deepseek-v3"] = (256, 8)
MLA_LINES = {
    "deepseek-v3": ["multi_latent_attention = true", "q_lora_rank = 1536", "kv_lora_rank = 512", "qk_head_dim = 128",
                    "qk_pos_emb_head_dim = 64", "v_head_dim = 128", "moe_ffn_hidden_size = 2048",
                    "moe_shared_expert_intermediate_size = 2048", "num_dense_layers_first = 3"],
}


def expert_parallel_of(row):
    """serving.expert_parallel, data_parallel_attention and redundant_experts from the tensor_parallel column
    ("1 (EP 32, DP attention, 32 redundant experts)"), or {} for a tensor-parallel row."""
    text = row["tensor_parallel"]
    m = re.search(r"EP (\d+)", text)
    if not m:
        return {}
    ep = {"expert_parallel": int(m.group(1)), "data_parallel_attention": "DP attention" in text}
    r = re.search(r"(\d+) redundant", text)
    if r:
        ep["redundant_experts"] = int(r.group(1))
    return ep


def model_of(name):
    n = name.lower()
    if "deepseek-v3" in n:
        return "deepseek-v3"
    if "mixtral 8x7b" in n:
        return "mixtral-8x7b"
    if "mixtral 8x22b" in n:
        return "mixtral-8x22b"
    if "3.1 8b" in n:
        return "llama3.1-8b"
    if "3.1 70b" in n:
        return "llama3.1-70b"
    if "3.1 405b" in n:
        return "llama3.1-405b"
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
    if "gb200" in g:
        return "Standard_ND128isr_NDR_GB200_v6"
    if "mi300x" in g:
        return "Standard_ND96isr_MI300X_v5"
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
    "e2e_latency_mean_s": "e2e_mean_s",
    # Per 8-GPU node, as SGLang's large-scale EP posts give them: converted in reference_of.
    "input_tokens_per_s_per_node": "requests_per_s",
    "output_tokens_per_s_per_node": "output_tokens_per_s_per_gpu",
}


def reference_of(row, w):
    """The [reference] value in the unit of METRICS[metric]: a per-node figure over 8 GPUs per node; a prefill-only
    row's input tokens per second per node as requests per second of the whole replica (each request one prompt)."""
    value = float(row["value"])
    if row["metric"] == "input_tokens_per_s_per_node":
        return value * int(row["gpus"]) / 8.0 / w["prompt_tokens"]
    if row["metric"] == "output_tokens_per_s_per_node":
        return value / 8.0
    return value

# Engines: the framework column -> the engine family.
def engine_of(framework):
    f = framework.lower()
    if "tensorrt" in f or "nim" in f:
        return "tensorrt-llm"
    if "lmdeploy" in f:
        return "lmdeploy"
    if "vllm" in f:
        return "vllm"
    raise ValueError("unknown engine " + framework)


# The engine release each source ran (serving.engine; models/serving/engine_profile.cpp names what each reproduces):
# source_id prefix -> (release, why).
RELEASES = [
    ("trtllm_perf_overview_v0.17", "tensorrt-llm-0.17", "the table states v0.17"),
    ("trtllm_perf_overview_online_v0.14", "tensorrt-llm-0.17", "the table states v0.14.0"),
    ("trtllm_perf_overview_v1.0_fp4", "tensorrt-llm-0.17",
     "the v1.0 docs' PyTorch backend has no release profile of its own; tensorrt-llm-0.17's structure (custom "
     "all-reduce, grouped-query attention kernels, GUARANTEED_NO_EVICT) is the nearest"),
    ("trtllm_performance_md_v0.6.1", "tensorrt-llm-0.6", "v0.6.1 throughput and v0.5 first-token tables"),
    ("trtllm_blog_h200_launch_v0.5", "tensorrt-llm-0.6", "the blog states v0.5.0"),
    ("trtllm_blog_llama70b_h200_v0.7a", "tensorrt-llm-0.17",
     "the blog states v0.7a, the release with the grouped-query MMHA/XQA kernels"),
    ("nim_llm_benchmarking_perf", "tensorrt-llm-0.17",
     "NIM 1.8.0's fp8 profiles are TensorRT-LLM engines of the v0.17 era (the NIM release does not name it)"),
    ("lmdeploy_a100_fp16_v0.1.0a1", "lmdeploy-0.1", "the table states v0.1.0a1"),
    ("vllm_buildkite", "vllm-0.6",
     "the pipeline's version is not stated; its Llama 3.1-era builds (2024 H2) are v0.5.4-v0.6.x, and at batch 8 "
     "the two differ by under 0.1 ms per step"),
    ("oci_mi300x", "vllm-0.6", "not stated; vLLM's release of October 2024 was v0.6.x"),
    ("dstack_mi300x", "vllm-0.6", "the log states 0.6.3.dev116"),
    ("sglang_bench_vllm060", "vllm-0.6", "the README states vLLM v0.6.0, run with --num-scheduler-steps 10"),
    ("vllm_pr16937_eagle", "vllm-v1-0.8",
     "the comment runs VLLM_USE_V1=1 on main of 2025-04-24 (the V1 engine), before PR #17211 put the EAGLE "
     "proposer in CUDA graphs"),
    ("vllm_pr1983_prefix_cache", "vllm-0.5",
     "the PR's branch (2023-12, vLLM v0.2.x) predates every vLLM release profile; vllm-0.5 (V0 engine, no chunked "
     "prefill, no multi-step) is the nearest"),
    ("sglang_large_scale_ep", "vllm-v1",
     "SGLang (no SGLang release profile on this branch): the V1-style engine, CUDA graphs and overlapped output "
     "processing, with the vllm family's fitted overheads"),
]


def release_of(row):
    for prefix, release, why in RELEASES:
        if row["source_id"].startswith(prefix):
            return release, why
    raise ValueError("no engine release for " + row["source_id"])


# Rows predicted and reported by `clustersim validate` but left out of its summaries and fits
# (reference.exclude_reason), by GPU: the part of the model they would test is not one the serving group can
# calibrate.
EXCLUDED_GPUS = {
    "mi300x": "MI300X: the collective model runs the tensor-parallel all-reduce as one ring over the Infinity Fabric "
              "mesh, one 64 GB/s link per hop (clustersim collective: 47 GB/s bus bandwidth at 256 MB, 24 GB/s at "
              "4 MB), not over the seven links per GPU that RCCL's channels use, and the catalog's MI300X memory "
              "bandwidth is an estimate; a network-model and catalog issue, reported here, not fitted",
}

# Rows predicted and reported by `clustersim validate` but left out of its summaries and fits
# (reference.exclude_reason), by GPU: the part of the model they would test is not one the serving group can
# calibrate.
EXCLUDED_GPUS = {
    "mi300x": "MI300X: the collective model runs the tensor-parallel all-reduce as one ring over the Infinity Fabric "
              "mesh, one 64 GB/s link per hop (clustersim collective: 47 GB/s bus bandwidth at 256 MB, 24 GB/s at "
              "4 MB), not over the seven links per GPU that RCCL's channels use, and the catalog's MI300X memory "
              "bandwidth is an estimate; a network-model and catalog issue, reported here, not fitted",
}

# Rows predicted and reported but left out of the summaries and fits, by source: an engine release without a
# profile of its own (run with the nearest one's) whose rows would otherwise calibrate another release's host work.
EXCLUDED_SOURCES = {
    "trtllm_perf_overview_v1.0_fp4":
        "TensorRT-LLM 1.0's PyTorch backend has no engine release profile (run with tensorrt-llm-0.17's), and the "
        "FP4 GEMM rate is GB200's FP4 peak at its fp8 measured fraction, not a measurement: reported here, not fitted, "
        "so that an assumed rate does not calibrate the TensorRT-LLM family's host work",
    "vllm_pr1983_prefix_cache":
        "vLLM v0.2.x (the PR's branch, 2023-12) predates every vLLM release profile (run with vllm-0.5's); its "
        "measured time per output token at 10 QPS (34 ms) is 36 % above the profile's (25 ms): reported here, not "
        "fitted",
}

SKIPPED = {
    "mlperf_inf_v4.1_nvidia": "the OpenOrca subset's prompt-length distribution is not in the sources at hand "
                              "(only its mean output, 294 tokens per sample, is)",
}


# Total memory of one GPU as NVML reports it (nvidia-smi's "Total" in MiB), which trtllm-bench's heuristic reads:
# H100 SXM5 80GB 81559 MiB, H200 SXM 143771 MiB, A100 SXM4 80GB 81920 MiB.
NVML_TOTAL_MIB = {"h100": 81559, "h200": 143771, "a100": 81920, "gb200": 189471}


def nvml_total_gib(gpu):
    g = gpu.lower()
    for key, mib in NVML_TOTAL_MIB.items():
        if key in g:
            return mib / 1024.0
    raise ValueError("no NVML memory size for " + gpu)


def param_count(model_key):
    """Parameters of a Llama-shaped model (untied embedding and LM head, gated MLP, two norms per layer; an MoE
    model's layers hold every expert and a router)."""
    layers, h, a, g, f, vocab, _, _ = MODELS[model_key]
    d = h // a
    experts = MOE.get(model_key, (1, 1))[0]
    per_layer = h * (a + 2 * g) * d + a * d * h + experts * 3 * h * f + 2 * h + (h * experts if experts > 1 else 0)
    return layers * per_layer + 2 * vocab * h + h


def trtllm_bench_build_limits(model_key, gpu, tp, fp8_weights, fp8_kv, isl, osl, fraction=0.95, weight_bytes=None):
    """(max_batch_size, max_num_tokens) that `trtllm-bench build` picks for a dataset of fixed lengths: the
    build heuristic of tensorrt_llm/bench/build/tuning.py (calc_engine_setting and finetune_setting, the
    version without the optimistic-tuning switch, TensorRT-LLM 0.16-0.18): the KV cache holds
    0.95 x (NVML total x GPUs - params x weight bytes) at 2 x layers x max(tp, kv heads) x head dim x KV bytes
    per token (GiB over GB, as the source mixes them); its requests of isl + osl tokens, capped at 4096, round
    up to a batch limit (to 32 under 256, to 128 under 1024, else to 256; at least 64), and that many requests
    times (1 + isl / osl) tokens, capped at 32768, round up to the token limit (to 256 under 4096, at least
    2048; to 512 under 8192; else to 1024)."""
    import math
    layers, h, a, g, _, _, _, _ = MODELS[model_key]
    byte_per_token = 2 * layers * max(tp, g) * (h // a) * (1 if fp8_kv else 2) / 1024 ** 3
    if weight_bytes is None:
        weight_bytes = 1 if fp8_weights else 2
    engine_gb = param_count(model_key) / 1000 ** 3 * weight_bytes
    available = nvml_total_gib(gpu) * tp - engine_gb
    requests = available * fraction / byte_per_token / (isl + osl)
    raw_bs = min(requests, 4096)
    raw_token = min(raw_bs * (1 + isl / osl), 32768)

    def round_up(x, bands, floor):
        """x rounded up to the step of the first band (upper limit, step) it is below, at least `floor`."""
        step = next(step for limit, step in bands if x < limit)
        return max(floor, step * math.ceil(x / step))

    max_bs = round_up(raw_bs, [(256, 32), (1024, 128), (math.inf, 256)], 64)
    max_token = round_up(raw_token, [(4096, 256), (8192, 512), (math.inf, 1024)], 2048)
    return max_bs, max_token


# ShareGPT as sglang.bench_serving samples it (sample_sharegpt_requests: a conversation's first prompt and its
# reference answer, prompts of 4 to 1,024 tokens, prompt + output at most 2,048): lognormal lengths truncated at
# those caps. The benchmarks state neither distribution, so the planner's assumption is written down here:
#   means: output 194.3 tokens, the benchmark's own offline rows (output token throughput / request throughput,
#          4,132.37 / 21.27 and 4,281.51 / 22.03 and 3,700.64 / 19.04 and 3,856.01 / 19.84 = 194.3, my arithmetic);
#          prompt 224.0 tokens, a published run of the same sampler and tokenizer (sgl-project/sglang issue #2805:
#          369,103 input and 326,408 generated tokens over 1,648 requests; the latter, 198.1, agrees with 194.3);
#   spread: the standard deviation of ln(length) of Azure's conversation trace (scenarios/serving/traces, computed
#          below): conversation lengths' spread, as no ShareGPT spread is published with the benchmark;
#   caps: the sampler's, prompt in [4, 1,024] and output in [4, 2,044] (the joint cap, prompt + output <= 2,048,
#          taken at its widest; outputs past 1,024 tokens are a fraction of a percent of the draws).
SHAREGPT_PROMPT_MEAN, SHAREGPT_OUTPUT_MEAN = 224.0, 194.3
SHAREGPT_PROMPT_CAP, SHAREGPT_OUTPUT_CAP = (4, 1024), (4, 2044)
AZURE_CONV_TRACE = os.path.join(ROOT, "scenarios", "serving", "traces", "AzureLLMInferenceTrace_conv.csv")


def log_sigma(column):
    """The standard deviation of ln(length) of one column of Azure's conversation trace (sample, n - 1)."""
    import math
    with open(AZURE_CONV_TRACE, newline="") as f:
        logs = [math.log(max(1, int(r[column]))) for r in csv.DictReader(f)]
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))


def truncated_lognormal_median(mean, sigma, low, high):
    """The whole-token median whose lognormal of `sigma`, truncated to [low, high], has the given mean: the
    truncated mean exp(mu + s^2 / 2) (Phi(zb - s) - Phi(za - s)) / (Phi(zb) - Phi(za)), z = (ln x - mu) / s,
    grows with mu; bisection on ln(median)."""
    import math
    phi = lambda z: 0.5 * math.erfc(-z / math.sqrt(2.0))

    def truncated_mean(mu):
        za, zb = (math.log(low) - mu) / sigma, (math.log(high) - mu) / sigma
        return math.exp(mu + sigma * sigma / 2) * (phi(zb - sigma) - phi(za - sigma)) / (phi(zb) - phi(za))

    lo, hi = math.log(low), math.log(high)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if truncated_mean(mid) < mean else (lo, mid)
    return round(math.exp(0.5 * (lo + hi)))


def sharegpt_lengths():
    """[workload] keys of ShareGPT as bench_serving samples it (the assumption above)."""
    s_in, s_out = log_sigma("ContextTokens"), log_sigma("GeneratedTokens")
    return {
        "prompt": "lognormal", "prompt_tokens": truncated_lognormal_median(SHAREGPT_PROMPT_MEAN, s_in, *SHAREGPT_PROMPT_CAP),
        "prompt_sigma": round(s_in, 3), "prompt_min": SHAREGPT_PROMPT_CAP[0], "prompt_max": SHAREGPT_PROMPT_CAP[1],
        "output": "lognormal", "output_tokens": truncated_lognormal_median(SHAREGPT_OUTPUT_MEAN, s_out, *SHAREGPT_OUTPUT_CAP),
        "output_sigma": round(s_out, 3), "output_min": SHAREGPT_OUTPUT_CAP[0], "output_max": SHAREGPT_OUTPUT_CAP[1],
    }


def workload(row):
    """The [workload] and [serving] limits the benchmark ran, and notes, or None with a reason."""
    src = row["source_id"]
    batch = row["concurrency_or_batch"]
    rate = row["request_rate"]
    serving = {}
    notes = []
    if src == "sglang_bench_vllm060":
        if not row["framework"].startswith("vLLM"):
            return None, "SGLang v0.3.0: no SGLang engine release profile yet"
        n = int(re.search(r"num_requests=(\d+)", batch).group(1))
        w = sharegpt_lengths()
        if rate.startswith("inf"):
            w.update(arrival="offline", requests=n)
        else:
            w.update(arrival="poisson", rate_per_s=float(rate), requests=n)
        # vLLM v0.6.0 as launched: --num-scheduler-steps 10 --max_model_len 4096; chunked prefill off (its default
        # under 32K of context, and multi-step's requirement in v0.6.0), so max_num_batched_tokens =
        # max(max_model_len, 2048) (vllm/config.py, SchedulerConfig); max_num_seqs 256 and gpu_memory_utilization
        # 0.9, the defaults.
        serving.update(scheduler_steps=10, chunked_prefill=False, max_num_batched_tokens=4096, max_model_len=4096)
        notes.append("sglang.bench_serving: %s; ShareGPT lengths as assumed in generate_serving_scenarios.py "
                     "(truncated lognormals: means 224 and 194.3 tokens, the spread of Azure's conversation trace)"
                     % ("all %d requests at once" % n if rate.startswith("inf")
                        else "%d requests, Poisson at %s per second" % (n, rate)))
        return (w, serving, notes), None
    if src.startswith("sglang_large_scale_ep"):
        per_device = int(re.search(r"(\d+) (?:tokens|sequences) per device", batch).group(1))
        ep = expert_parallel_of(row)["expert_parallel"]
        if row["metric"].startswith("input"):
            # Prefill only: 16 forward passes of per_device tokens on every GPU, each request one prompt.
            p = int(row["input_tokens"])
            per_pass = per_device * ep // p
            w = {"arrival": "offline", "requests": 16 * per_pass, "prompt_tokens": p, "output_tokens": 1}
            serving.update(max_num_seqs=per_pass, max_num_batched_tokens=per_device * ep)
            notes.append("prefill only: %d prompts of %d tokens at once, %d tokens per GPU per forward pass, one "
                         "token each (the first, sampled by the prefill)" % (w["requests"], p, per_device))
        else:
            # Decode only: a batch of per_device sequences on every GPU with prompts of 16 tokens (prefill
            # negligible) decoding 2,000 tokens: the cached context grows 16 -> 2016, a mean of ~1,000 tokens
            # (the source's 2,000: the latent reads per step are half the measured run's).
            w = {"arrival": "offline", "requests": per_device * ep, "prompt_tokens": 16, "output_tokens": 2000}
            serving.update(max_num_seqs=per_device * ep, max_num_batched_tokens=per_device * ep * 16)
            notes.append("decode only: %d sequences per GPU (%d in all) with 16-token prompts decoding 2,000 "
                         "tokens; the co-located engine cannot hold a decode-only pool at a fixed 2,000-token "
                         "context, so the mean context is ~1,000" % (per_device, per_device * ep))
        return (w, serving, notes), None
    if not row["input_tokens"].isdigit():
        return None, "the prompt lengths are a dataset's, not stated"
    # dstack's runs stop at EOS: the output column is the run's mean (its total generated tokens / requests).
    output = row["output_tokens"].split()[0]
    w = {"prompt_tokens": int(row["input_tokens"]), "output_tokens": int(output) if output.isdigit() else round(float(output))}
    m = re.search(r"num_requests=(\d+)", batch)
    if src.startswith("trtllm_perf_overview_v0") or src.startswith("trtllm_perf_overview_v1"):
        w.update(arrival="offline", requests=int(m.group(1)))
        # trtllm-bench build picks the engine's limits from the dataset's lengths (its heuristic, reproduced).
        precision, kv = precision_of(row)
        tp = int(row["tensor_parallel"].split()[0])
        # NVFP4 weights: 0.5625 bytes each (models/serving/inference_model.hpp, kNvfp4WeightBytes).
        max_bs, max_tokens = trtllm_bench_build_limits(model_of(row["model"]), row["gpu"], tp, precision == "fp8",
                                                       kv == "fp8", w["prompt_tokens"], w["output_tokens"],
                                                       weight_bytes=0.5625 if precision == "fp4" else None)
        serving.update(max_num_seqs=max_bs, max_num_batched_tokens=max_tokens, gpu_memory_utilization=0.95,
                       capacity_scheduler_policy="guaranteed_no_evict")
        notes.append("trtllm-bench throughput: every request queued at once; max batch %d and max tokens %d as "
                     "trtllm-bench build's heuristic picks them for these lengths (tensorrt_llm/bench/build/"
                     "tuning.py), the KV cache at kv_cache_free_gpu_mem_fraction 0.95, and the GUARANTEED_NO_EVICT "
                     "scheduler trtllm-bench throughput sets (tensorrt_llm/bench/benchmark/throughput.py: "
                     "scheduler_policy = IFBSchedulingPolicy.NO_EVICT)" % (max_bs, max_tokens))
    elif src.startswith("trtllm_perf_overview_online"):
        w["requests"] = 500
        if rate == "inf":
            w["arrival"] = "offline"
        else:
            w.update(arrival="poisson", rate_per_s=float(rate))
        notes.append("Triton tensorrtllm_backend, 500 requests; at QPS inf every request is sent at once; the "
                     "arrival process at a finite QPS is not stated (Poisson assumed)")
    elif src.startswith("trtllm_performance_md") or src.startswith("trtllm_blog") or src.startswith("lmdeploy"):
        b = int(re.search(r"batch (?:size )?(\d+)", batch).group(1))
        w.update(arrival="offline", requests=b)
        serving.update(max_num_seqs=b, chunked_prefill=False,
                       max_num_batched_tokens=max(8192, b * int(row["input_tokens"])))
        notes.append("static batching: the batch of %d prefilled at once, then decoded to the end" % b)
        if src.startswith("trtllm_performance_md") or src.startswith("trtllm_blog"):
            # gptSessionBenchmark allocates the KV cache its batch needs (batch x (input + output)), not a
            # fraction of the free memory: the published batch sizes are those that fit.
            serving["gpu_memory_utilization"] = 1.0
            notes.append("gptSessionBenchmark sizes the KV cache for its whole batch (all the free memory here)")
    elif src.startswith("nim"):
        c = int(re.search(r"concurrency (\d+)", batch).group(1))
        w.update(arrival="closed_loop", concurrency=c, requests=max(100, 10 * c))
        notes.append("genai-perf at fixed concurrency %d (closed loop); the request count is not stated: "
                     "10 x concurrency, at least 100, assumed" % c)
    elif src.startswith("vllm_pr16937_eagle"):
        n = int(m.group(1))
        w.update(arrival="offline", requests=n)
        serving.update(max_num_seqs=1)
        notes.append("LLM.generate with max_num_seqs 1: all %d prompts queued, run one at a time" % n)
    elif src.startswith("vllm_pr1983_prefix_cache"):
        # vLLM PR #1983's benchmark_serving runs: Poisson arrivals at the stated QPS; vLLM v0.2.x's defaults
        # (no chunked prefill, max_num_batched_tokens = max(max_model_len, 2048) = 4,096 for a 4,096-token model,
        # max_num_seqs 256, gpu_memory_utilization 0.9). The request count is not stated: 1,000, the
        # --num-prompts default of benchmarks/benchmark_serving.py at the time, assumed.
        w.update(arrival="poisson", rate_per_s=float(rate), requests=1000)
        serving.update(chunked_prefill=False, max_num_batched_tokens=4096)
        notes.append("benchmark_serving: Poisson arrivals at %s per second, 1,000 requests (the script's default; "
                     "not stated), every prompt one shared %s-token prefix and %s tokens of its own"
                     % (rate, row["system_prompt_tokens"], row["input_tokens"]))
    elif src.startswith("vllm") or (src.startswith("oci") and "fixed batch" in batch):
        b = int(re.search(r"batch (\d+)", batch).group(1))
        w.update(arrival="offline", requests=b)
        notes.append("benchmark_latency: one batch of %d prompts run to the end" % b)
    elif src.startswith("oci"):
        w.update(arrival="offline", requests=1000)
        notes.append("benchmark_throughput: every request queued at once; the request count is not stated: the "
                     "script's default, 1,000, assumed")
    elif src.startswith("dstack"):
        n = int(m.group(1))
        w.update(arrival="offline", requests=n)
        notes.append("benchmark_serving at request rate inf (its default): all %d requests sent at once; the outputs "
                     "stop at EOS, so every request is given the run's mean output, %s tokens" % (n, row["output_tokens"].split()[0]))
    else:
        return None, "no workload rule for " + src
    return (w, serving, notes), None


def chain_acceptance(tokens, acceptance_length):
    """The constant per-position acceptance a of a chain of `tokens` drafts whose mean tokens per verify step (the
    bonus token included) is `acceptance_length`: 1 + a + ... + a^k = L (Leviathan et al., ICML 2023), solved by
    bisection (the sum grows with a). The engines report L; the per-position rates behind it fall with the position,
    and a constant a with the same L gives the same expected tokens per step."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sum(mid ** i for i in range(tokens + 1)) < acceptance_length else (lo, mid)
    return round(0.5 * (lo + hi), 4)


def speculative_lines(row):
    """[serving] lines of speculative decoding from the optional columns speculative_method, speculative_tokens,
    speculative_acceptance_length (the source's mean tokens per verify step) and draft_layers; none when absent."""
    method = (row.get("speculative_method") or "").strip()
    if not method:
        return []
    k = int(row["speculative_tokens"])
    lines = ['speculative_method = "%s"' % method, "speculative_tokens = %d" % k,
             "speculative_acceptance = %s" % toml_value(chain_acceptance(k, float(row["speculative_acceptance_length"])))]
    if (row.get("draft_layers") or "").strip():
        lines.append("draft_layers = %d" % int(row["draft_layers"]))
    return lines


def precision_of(row):
    """serving.precision and kv_cache_dtype. An fp8 TensorRT-LLM engine whose KV cache the source leaves unstated
    has an fp8 cache: TensorRT-LLM's perf-overview (v0.17) states that its FP8 quantization also sets the KV cache
    to FP8 (NIM's fp8 profiles are TensorRT-LLM engines)."""
    p = row["precision"].lower()
    if p.startswith("fp4"):
        return "fp4", "fp8" if row["kv_cache_dtype"].lower().startswith("fp8") else "auto"
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
    engine, release_why = release_of(row)
    name = "%s-%02d" % (row["source_id"].replace("_", "-").replace(".", ""), index)
    # A TensorRT-LLM engine built for its benchmark's lengths (--max_input_len / --max_output_len) runs them even
    # past the model's trained context (the v0.7a blog runs Llama 2 70B at 128 + 4,096 tokens).
    if row["source_id"].startswith("trtllm_blog") or row["source_id"].startswith("trtllm_performance_md"):
        context = max(context, w["prompt_tokens"] + w["output_tokens"])
    context = limits.pop("max_model_len", context)  # a server launched with --max_model_len
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
    lines.append("# Engine: %s (%s)." % (engine, release_why))
    lines += [
        "schema_version = 1",
        'name = "%s"' % name,
        'description = "%s, %s TP %d on %s, %s in / %s out"' % (
            row["model"], precision, tp, row["gpu"],
            *(("%d" % w[k + "_tokens"]) if w.get(k, "fixed") == "fixed" else
              ("%s median %d" % (w[k], w[k + "_tokens"])) for k in ("prompt", "output"))),
        "",
        "[model]",
        "num_layers = %d" % layers,
        "hidden_size = %d" % hidden,
        "num_attention_heads = %d" % heads,
    ] + (["num_query_groups = %d" % groups] if model_key not in MLA_LINES else []) + [
        "ffn_hidden_size = %d" % ffn,
        "vocab_size = %d" % vocab,
        "seq_length = %d" % context,
        'mlp = "swiglu"',
    ] + (["num_experts = %d" % MOE[model_key][0], "moe_router_topk = %d" % MOE[model_key][1]]
         if model_key in MOE else []) + MLA_LINES.get(model_key, []) + [
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
    ep = expert_parallel_of(row)
    for k in ("expert_parallel", "data_parallel_attention", "redundant_experts"):
        if k in ep:
            lines.append("%s = %s" % (k, toml_value(ep[k])))
    gpus = int(row["gpus"])
    per_replica = ep["expert_parallel"] if ep.get("data_parallel_attention") else tp
    if gpus > per_replica:
        lines.append("replicas = %d" % (gpus // per_replica))
    for k in ("max_num_seqs", "max_num_batched_tokens", "chunked_prefill", "gpu_memory_utilization",
              "capacity_scheduler_policy", "scheduler_steps"):
        if k in limits:
            lines.append("%s = %s" % (k, toml_value(limits[k])))
    # Prefix caching (issue 30): optional columns; absent or empty, nothing is written.
    if row.get("prefix_caching"):
        lines.append("prefix_caching = %s" % row["prefix_caching"].strip().lower())
    if row.get("routing"):
        lines.append('routing = "%s"' % row["routing"].strip())
    lines += speculative_lines(row)
    lines += ["", "[workload]"]
    for k in ("arrival", "rate_per_s", "requests", "concurrency", "prompt", "prompt_tokens", "prompt_sigma",
              "prompt_min", "prompt_max", "output", "output_tokens", "output_sigma", "output_min", "output_max"):
        if k in w:
            lines.append("%s = %s" % (k, toml_value(w[k])))
    for k, kind in (("system_prompt_tokens", int), ("system_prompt_share", float), ("system_prompts", int),
                    ("turns", int), ("think_time_s", float)):
        if row.get(k):
            lines.append("%s = %s" % (k, toml_value(kind(row[k]))))
    lines += [
        "",
        "[reference]",
        'metric = "%s"' % metric,
        "value = %s" % toml_value(reference_of(row, w)),
        'dataset = "%s"' % row["source_id"],
        'source = "%s"' % (row["source"].replace('"', "'")),
    ] + ['exclude_reason = "%s"' % why for gpu, why in EXCLUDED_GPUS.items() if gpu in row["gpu"].lower()] + [
        'exclude_reason = "%s"' % EXCLUDED_SOURCES[row["source_id"]]
        for _ in [0] if row["source_id"] in EXCLUDED_SOURCES and "mi300x" not in row["gpu"].lower()]
    return (name, "\n".join(lines) + "\n"), None


def write_or_check(out, wanted, check):
    """Writes `wanted` (file name -> text) to `out`, removing stale scenarios; with `check`, lists differences."""
    existing = {f for f in os.listdir(out) if f.endswith(".toml")} if os.path.isdir(out) else set()
    if check:
        bad = sorted(set(existing) ^ set(wanted))
        for name, text in wanted.items():
            p = os.path.join(out, name)
            if os.path.exists(p) and open(p).read() != text:
                bad.append(name)
        for b in bad:
            print("differs: " + os.path.join(os.path.basename(out), b))
        return bool(bad)
    os.makedirs(out, exist_ok=True)
    for stale in existing - set(wanted):
        os.remove(os.path.join(out, stale))
    for name, text in wanted.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    wanted = {OUT: {}, OUT_MOE: {}}
    skipped = []
    for i, row in enumerate(rows, start=1):
        if row["source_id"] in SKIPPED:
            skipped.append((i, SKIPPED[row["source_id"]]))
            continue
        made, why = scenario(i, row)
        if made is None:
            skipped.append((i, why))
            continue
        wanted[OUT_MOE if model_of(row["model"]) in MOE else OUT][made[0] + ".toml"] = made[1]
    bad = [write_or_check(out, w, args.check) for out, w in wanted.items()]
    if args.check:
        return 1 if any(bad) else 0
    for out, w in wanted.items():
        print("%d scenarios written to %s" % (len(w), out))
    print("%d rows skipped:" % len(skipped))
    for i, why in skipped:
        print("  row %d: %s" % (i, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
