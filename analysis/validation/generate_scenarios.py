#!/usr/bin/python3
"""Write one validation scenario per published row of the tables in scenarios/validation/published/.

Each dataset below reads its CSV (a transcription of a public table, headed by its source) and turns every row
into a scenario TOML under scenarios/validation/, named <dataset>-<row id>.toml, with a header that cites the
row and states every assumption. The scenarios carry what the published recipe ran (framework, model, layout,
batch, precision, recompute, compile/fused kernels, overlaps) and the cluster it ran on; no per-row tuning.

The scenarios are committed; the test tests/validation (GeneratedScenarios) checks that this script reproduces
them byte for byte, so a change to a CSV or to a rule here shows up in the diff of the scenarios.

Usage: /usr/bin/python3 analysis/validation/generate_scenarios.py [--check]
  --check   compare with the committed files instead of writing; exit 1 on a difference
"""
import argparse
import csv
import io
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLISHED = os.path.join(ROOT, "scenarios", "validation", "published")
OUT = os.path.join(ROOT, "scenarios", "validation")

# Model shapes: name -> (layers, hidden, heads, kv groups, ffn, vocab, mlp, position, dropout, tied, source).
MODELS = {
    "llama3.1-8b": (32, 4096, 32, 8, 14336, 128256, "swiglu", "rope", 0.0, False,
                    "Llama 3.1 8B (Dubey et al. 2024, Table 3; torchtitan llama3 '8B')"),
    "llama3-8b": (32, 4096, 32, 8, 14336, 128256, "swiglu", "rope", 0.0, False,
                  "Llama 3 8B (Dubey et al. 2024, Table 3; torchtitan llama3 '8B')"),
    "llama3.1-70b": (80, 8192, 64, 8, 28672, 128256, "swiglu", "rope", 0.0, False,
                     "Llama 3.1 70B (Dubey et al. 2024, Table 3)"),
    "llama3-70b": (80, 8192, 64, 8, 28672, 128256, "swiglu", "rope", 0.0, False,
                   "Llama 3 70B (Dubey et al. 2024, Table 3)"),
    "llama3.1-405b": (126, 16384, 128, 8, 53248, 128256, "swiglu", "rope", 0.0, False,
                      "Llama 3.1 405B (Dubey et al. 2024, Table 3)"),
    "llama2-13b": (40, 5120, 40, 40, 13824, 32000, "swiglu", "rope", 0.0, False,
                   "Llama 2 13B (Touvron et al. 2023; torchtitan llama2 '13B')"),
    "llama2-70b": (80, 8192, 64, 8, 28672, 32000, "swiglu", "rope", 0.0, False,
                   "Llama 2 70B (Touvron et al. 2023, grouped-query attention with 8 groups)"),
    "llama2-7b": (32, 4096, 32, 32, 11008, 32000, "swiglu", "rope", 0.0, False,
                  "Llama 2 7B (Touvron et al. 2023)"),
    # NeMo GPT-3 configs (NeMo-Framework-Launcher conf/training/gpt3/{5b,20b,175b}.yaml): GeLU, learned positions,
    # hidden dropout 0.1, tied embeddings; the GPT-2 BPE vocabulary padded as Megatron does (51200).
    "gpt3-5b": (24, 4096, 32, 32, 16384, 51200, "gelu", "learned", 0.1, True,
                "NeMo GPT-3 5B (launcher gpt3/5b.yaml: 24 layers, hidden 4096, 32 heads)"),
    "gpt3-20b": (44, 6144, 48, 48, 24576, 51200, "gelu", "learned", 0.1, True,
                 "NeMo GPT-3 20B (launcher gpt3/20b.yaml: 44 layers, hidden 6144, 48 heads)"),
    "gpt3-175b": (96, 12288, 96, 96, 49152, 51200, "gelu", "learned", 0.1, True,
                  "GPT-3 175B (Brown et al. 2020; launcher gpt3/175b_fp8_performance.yaml)"),
    # Nemotron (launcher conf/training/nemotron/*.yaml; Nemotron-4 340B report): squared-ReLU MLP (two GEMMs, not
    # gated: modelled as the GeLU MLP), RoPE, no dropout, untied embeddings, 256k SentencePiece vocabulary.
    "nemotron-8b": (32, 4096, 32, 32, 16384, 256000, "gelu", "rope", 0.0, False,
                    "Nemotron-3 8B (launcher nemotron_8b.yaml)"),
    "nemotron-22b": (40, 6144, 48, 48, 24576, 256000, "gelu", "rope", 0.0, False,
                     "Nemotron 22B (launcher nemotron_22b.yaml: 40 layers, 6144, 48 heads, ffn 24576)"),
    "nemotron-340b": (96, 18432, 96, 8, 73728, 256000, "gelu", "rope", 0.0, False,
                      "Nemotron-4 340B (NVIDIA 2024 report: 96 layers, 18432, 96 heads, 8 KV groups, ffn 73728)"),
}

# Mixture-of-experts models: (layers, hidden, heads, kv groups, kv_channels, experts, top-k, expert ffn, vocab,
# source). SwiGLU experts, RoPE, no dropout, untied embeddings, no shared expert, every layer MoE.
MOE_MODELS = {
    "qwen3-30b-a3b": (48, 2048, 32, 4, 128, 128, 8, 768, 151936,
                      "Qwen3-30B-A3B (Megatron-MoE-ModelZoo model_configs/benchmarking/Qwen3-30B-A3B.yaml)"),
    "qwen3-235b-a22b": (94, 4096, 64, 4, 128, 128, 8, 1536, 151936,
                        "Qwen3-235B-A22B (Megatron-MoE-ModelZoo model_configs/benchmarking/Qwen3-235B-A22B.yaml)"),
}


def read_csv(name):
    """The rows of a published CSV (its '#' header lines skipped)."""
    with open(os.path.join(PUBLISHED, name)) as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("".join(lines))))


def toml_value(v):
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return '"' + str(v) + '"'


def render(header, tables):
    """A scenario: comment header lines, then root keys and tables (dicts of key -> value; None omitted)."""
    out = ["# " + line if line else "#" for line in header]
    for table, keys in tables:
        if table:
            out.append("")
            out.append("[" + table + "]")
        for key, value in keys.items():
            if value is None:
                continue
            comment = ""
            if isinstance(value, tuple):
                value, comment = value
                comment = "  # " + comment
            out.append(f"{key} = {toml_value(value)}{comment}")
    return "\n".join(out) + "\n"


def dgx_h100_cluster(gpus):
    """The [cluster] of a run on DGX-H100 nodes (8 H100, NVSwitch, 8 x 400 Gb/s NDR InfiniBand): the node design of
    Standard_ND96isr_H100_v5, on a rail-optimized fabric (NVIDIA DGX SuperPOD reference architecture)."""
    return ("cluster", {"vm_size": "Standard_ND96isr_H100_v5", "nodes": gpus // 8, "fabric": "rail_optimized"})


def model_table(name, seq):
    layers, hidden, heads, kv, ffn, vocab, mlp, position, dropout, tied, _ = MODELS[name]
    return {
        "num_layers": layers, "hidden_size": hidden, "num_attention_heads": heads, "num_query_groups": kv,
        "ffn_hidden_size": ffn, "vocab_size": vocab, "seq_length": seq, "mlp": mlp,
        "position_embedding": position, "dropout": dropout, "tie_embeddings": tied,
    }


# ----------------------------------------------------------------------------------------------- torchtitan

def torchtitan(rows_out):
    """pytorch/torchtitan docs/performance.md: FSDP2 (and TP, PP, CP) on H100 96 GB 500 W and on A100 80 GB."""
    for r in read_csv("torchtitan_fsdp2.csv"):
        h100 = r["gpu"].startswith("H100")
        gpus = int(r["gpus"])
        fsdp, tp, pp, cp = (int(r[k]) for k in ("fsdp", "tp", "pp", "cp"))
        # Context-parallel rows stay in their source's dataset (leave-one-source-out holds the source out whole);
        # the validation report groups them by workload.
        dataset = "torchtitan-h100" if h100 else "torchtitan-a100"
        seq, local = int(r["seq"]), int(r["local_batch"])
        model = r["model"]
        assumptions = []
        # Activation checkpointing: torchtitan's options (parallelize_llama.py _apply_ac_to_transformer_block).
        ac = r["act_ckpt"]
        recompute, recompute_layers = "none", None
        if ac in ("selective", "selective-op"):
            recompute = "selective_op"
            assumptions.append("'selective' is torchtitan's default selective_ac_option = \"op\" (train_configs "
                               "llama3_8b.toml): matmul and attention outputs saved except every second matmul")
        elif ac == "selective-layer":
            recompute = "full"
            recompute_layers = MODELS[model][0] // 2
            assumptions.append("selective layer checkpointing, every 2nd block (selective_ac_option = \"2\"): "
                               f"{recompute_layers} of {MODELS[model][0]} layers fully recomputed")
        elif ac == "full":
            recompute = "full"
        compiled = r["compile"] == "yes"
        fp8 = r["float8"] == "yes"
        microbatches = 1
        micro = local
        virtual = 1
        if pp > 1:
            # torchtitan (Dec 2024) pipeline_parallel_microbatches defaults to the pipeline degree; looped
            # (interleaved) schedules put 2 stages on each rank.
            microbatches = pp
            micro = local // microbatches
            virtual = 2 if r["schedule"] == "interleaved-1f1b" else 1
            assumptions.append(f"pipeline microbatches = pp = {pp} (torchtitan's default), so {micro} sequences "
                               f"each; {'2 stages per rank (looped schedule)' if virtual == 2 else '1 stage per rank'}")
        data = fsdp
        exclude = None
        if cp > 1:
            assumptions.append("context parallelism as torchtitan runs it: PyTorch context_parallel with "
                               "load-balanced causal sharding and context_parallel_rotate_method = \"allgather\" "
                               "(the default); FSDP shards over dp_shard x cp")
        global_batch = local * data
        vm = "Meta_GrandTeton_H100_96GB" if h100 else "Standard_ND96amsr_A100_v4"
        header = [
            f"Validation, torchtitan FSDP2 performance table, row {r['id']}: {model} on {gpus} "
            f"{'H100 96 GB HBM2e (500 W)' if h100 else 'A100-SXM4-80GB'}.",
            "Source: pytorch/torchtitan docs/performance.md "
            + ("(commit eaea6f6, benchmarks of Dec 2024: torch 1963fc8, torchao eab345c, torchtitan 9dec370)"
               if h100 else "(commit 0413364, 64 A100 80GB)")
            + "; scenarios/validation/published/torchtitan_fsdp2.csv.",
            f"Layout: FSDP {fsdp} x TP {tp} x PP {pp} x CP {cp}; local batch {local} (global {global_batch}), "
            f"sequence {seq}; activation checkpointing '{ac}'; torch.compile {'on' if compiled else 'off'}; "
            f"Float8 {'on' if fp8 else 'off'}; async TP {r['async_tp'] or 'no'}.",
            "Framework fsdp2 (torchtitan): bf16 parameters, fp32 reduce-scatter, per-block fully_shard, the last "
            "block not resharded;",
            "compile -> kernel_fusion 'compiled' (Inductor fuses each transformer block's element-wise chains), "
            "eager otherwise; Float8 -> precision fp8 (torchao float8 linears).",
        ]
        if h100:
            header.append("Hardware: Meta Grand Teton, 8 H100 per host with NVLink, 96 GB HBM2e at 2.4 TB/s, the "
                          "500 W power limit, 400 Gb/s RDMA per GPU (catalog Meta_GrandTeton_H100_96GB).")
        else:
            header.append("Hardware: 64 A100 80GB; the cluster is not described: modelled as ND96amsr_A100_v4 "
                          "nodes (DGX A100 design, 8 x 200 Gb/s HDR InfiniBand).")
        header += ["Assumption: " + a for a in assumptions]
        header.append("Compared metric: tokens_per_s_per_gpu (the table's TPS/GPU, read at iteration 90 on H100).")
        name = f"{dataset}-{r['id'].replace('h100-', '').replace('a100-', '')}"
        tables = [
            ("", {"schema_version": 1, "name": "validation-" + name,
                  "description": f"{model}, torchtitan FSDP2 row {r['id']} ({gpus} GPUs)"}),
            ("model", model_table(model, seq)),
            ("training", {
                "framework": "fsdp2", "global_batch_size": global_batch, "micro_batch_size": micro,
                "precision": "fp8" if fp8 else "bf16", "activation_recompute": recompute,
                "recompute_num_layers": recompute_layers, "flash_attention": True,
                "kernel_fusion": "compiled" if compiled else "eager",
            }),
            ("parallelism", {
                "tensor": tp, "context": cp if cp > 1 else None, "pipeline": pp, "data": data,
                "virtual_stages": virtual if virtual > 1 else None,
                "sequence_parallel": True if tp > 1 else None,
                "tp_comm_overlap": True if r["async_tp"] == "yes" and tp > 1 else None,
                "overlap_p2p_comm": True if pp > 1 else None,
            }),
            ("cluster", {"vm_size": vm, "nodes": gpus // 8}),
            ("reference", {
                "tokens_per_s_per_gpu": float(r["tps_per_gpu"]), "dataset": dataset,
                "source": ("pytorch/torchtitan docs/performance.md (Dec 2024), " if h100 else
                           "pytorch/torchtitan docs/performance.md (64 A100), ") + f"row {r['id']}",
                "exclude_reason": exclude,
            }),
        ]
        rows_out[name] = render(header, tables)


# --------------------------------------------------------------------------------------------------- NeMo

def nemo(rows_out):
    """NVIDIA NeMo / Megatron-Bridge performance summaries: FP8 pre-training on DGX-H100 (Megatron-Core)."""
    for r in read_csv("nemo_h100.csv"):
        gpus, tp, pp, cp, vp = (int(r[k]) for k in ("gpus", "tp", "pp", "cp", "vp"))
        if gpus % 8 != 0:
            # A 4-GPU run does not fill a DGX node. Listed in docs/validation.md.
            continue
        model, seq = r["model"], int(r["seq"])
        gbs, mbs = int(r["gbs"]), int(r["mbs"])
        data = gpus // (tp * cp * pp)
        release = r["release"]
        nemo2 = release >= "25"
        dataset = "nemo-2-h100" if nemo2 else "nemo-24-h100"  # context-parallel rows too (see torchtitan)
        recompute = "selective" if model == "gpt3-175b" and not nemo2 else "none"
        assumptions = [
            "the recipe's software settings (header) as the nemo framework profile sets them: Transformer Engine, "
            "its fused attention, distributed optimizer with overlapped reduce-scatter and all-gather, "
            "TP communication overlap, overlapped p2p with interleaving; FP8 for the linear layers",
            "gradient reduction in bf16 (distributed_fused_adam grad_sync_dtype: bf16 in the performance configs)"
            if not nemo2 else "gradient reduction in bf16, as in NeMo's performance recipes",
        ]
        if recompute == "selective":
            assumptions.append("selective recompute of the core attention (launcher gpt3/175b_fp8_performance.yaml)")
        if cp > 1:
            assumptions.append("context parallelism as Megatron-Core runs it by default: ring attention with "
                               "point-to-point K/V exchange (--cp-comm-type p2p) and load-balanced causal chunks")
        # Which attention kernel Transformer Engine ran: TE's backend selection prefers cuDNN's fused attention on
        # Hopper ("Disabling FlashAttention to give FusedAttention preference on Hopper+ for performance reasons",
        # transformer_engine/pytorch/attention get_attention_backend), the nemo profile's cudnn. NeMo 24.03.01 is
        # built on NGC PyTorch 24.03 with Transformer Engine 1.4, from before that preference: its DotProductAttention
        # ran flash-attn 2 where it was installed.
        early_te = release < "24.07"
        if early_te:
            assumptions.append("NeMo 24.03.01's Transformer Engine 1.4 runs FlashAttention-2 (flash-attn) for "
                               "causal bf16 attention: its preference for cuDNN fused attention on Hopper came later "
                               "(attention_kernel flash2)")
        name = f"{dataset}-{r['id']}"
        header = [
            f"Validation, NeMo performance summary ({'Megatron-Bridge' if release >= '25.09' else 'NeMo'} "
            f"{release}), row {r['id']}: {model} on {gpus} H100 (DGX-H100), FP8.",
            "Source: " + ("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md" if release >= "25.09"
                          else "NVIDIA NeMo Framework user guide, performance summary (NeMo 25.02)" if nemo2
                          else "NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07 / 24.03.01)")
            + "; scenarios/validation/published/nemo_h100.csv.",
            f"Layout: TP {tp}" + (f" x CP {cp}" if cp > 1 else "") + f" x PP {pp} x DP {data}"
            + (f", {vp} virtual stages" if vp > 1 else "")
            + f"; global batch {gbs}, micro batch {mbs}, sequence {seq}.",
            "Hardware: DGX-H100 (8 x H100 SXM5 80 GB, NVSwitch, 8 x 400 Gb/s NDR InfiniBand): the node design of "
            "Standard_ND96isr_H100_v5 (rail-optimized fabric, as DGX SuperPODs are built).",
        ] + ["Assumption: " + a for a in assumptions] + [
            "Compared metric: tokens_per_s_per_gpu (the table's Tokens / sec / GPU)."]
        tables = [
            ("", {"schema_version": 1, "name": "validation-" + name,
                  "description": f"{model}, NeMo {release} DGX-H100 row {r['id']} ({gpus} GPUs)"}),
            ("model", model_table(model, seq)),
            ("training", {
                "framework": "nemo", "global_batch_size": gbs, "micro_batch_size": mbs, "precision": "fp8",
                "activation_recompute": recompute, "grad_reduce_dtype": "bf16",
                "attention_kernel": "flash2" if early_te else None,
            }),
            ("parallelism", {
                "tensor": tp, "context": cp if cp > 1 else None, "pipeline": pp, "data": data,
                "virtual_stages": vp if vp > 1 else None, "sequence_parallel": True if tp > 1 else None,
            }),
            dgx_h100_cluster(gpus),
            ("reference", {
                "tokens_per_s_per_gpu": float(r["tokens_per_s_per_gpu"]), "dataset": dataset,
                "source": ("Megatron-Bridge performance summary " if release >= "25.09" else "NeMo performance summary ")
                + f"{release}, DGX-H100, row {r['id']}",
            }),
        ]
        rows_out[name] = render(header, tables)


def moe_model_table(model, seq):
    layers, hidden, heads, kv, channels, experts, topk, expert_ffn, vocab, _ = MOE_MODELS[model]
    return {
        "num_layers": layers, "hidden_size": hidden, "num_attention_heads": heads, "num_query_groups": kv,
        "kv_channels": channels, "vocab_size": vocab, "seq_length": seq, "mlp": "swiglu",
        "position_embedding": "rope", "dropout": 0.0, "tie_embeddings": False, "num_experts": experts,
        "moe_router_topk": topk, "moe_ffn_hidden_size": expert_ffn,
    }


def megatron_bridge_moe(rows_out):
    """Megatron-Bridge performance summaries: MoE pre-training on DGX-H100, force-balanced and dropless."""
    for r in read_csv("megatron_bridge_moe.csv"):
        gpus, tp, pp, cp, vp, ep, etp = (int(r[k]) for k in ("gpus", "tp", "pp", "cp", "vp", "ep", "etp"))
        model, seq = r["model"], int(r["seq"])
        gbs, mbs = int(r["gbs"]), int(r["mbs"])
        data = gpus // (tp * cp * pp)
        release = r["release"]
        dataset = "nemo-2-h100"  # Megatron-Bridge, as the dense rows of these summaries
        name = f"{dataset}-{r['id']}"
        header = [
            f"Validation, Megatron-Bridge performance summary {release}, row {r['id']}: {model} (mixture of "
            f"experts) on {gpus} H100 (DGX-H100), FP8.",
            "Source: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary"
            + ("-archive.md" if release >= "26" else ".md") + "; scenarios/validation/published/megatron_bridge_moe.csv.",
            f"Model: {MOE_MODELS[model][-1]}; every layer MoE, no shared expert; qk-layernorm not modelled.",
            f"Layout: TP {tp} x PP {pp} x DP {data}, {vp} virtual stages, EP {ep} x ETP {etp} folded over TP x DP; "
            f"global batch {gbs}, micro batch {mbs}, sequence {seq}.",
            "Hardware: DGX-H100 (8 x H100 SXM5 80 GB, NVSwitch, 8 x 400 Gb/s NDR InfiniBand): the node design of "
            "Standard_ND96isr_H100_v5 (rail-optimized fabric).",
            "Assumption: the summaries' force-balanced routing (moe_router_load_balancing = \"forced\"), "
            + (f"token dropping at capacity factor {r['capacity_factor']}" if r["capacity_factor"] else "dropless"),
            "Assumption: the nemo framework profile's settings; the alltoall token dispatcher with grouped GEMM, no "
            "shared-expert overlap and no recompute (the recipes' flags are not printed in the summary)",
            "Assumption: gradient reduction in bf16, as in NeMo's performance recipes",
            "Recipe: fused router kernels (Megatron-Bridge scripts/performance qwen3 configs set "
            "cfg.model.moe_router_fusion = True from 25.09 on)"
            + ("; token dropping pads every expert to its capacity (megatron/bridge/training/utils/moe_token_drop.py, "
               "apply_moe_token_drop: moe_pad_expert_input_to_capacity=True)" if r["capacity_factor"] else ""),
        ]
        # The H100 Qwen3-235B presets of the dropless releases overlap the all-to-all with the 1F1B partner pass
        # (Megatron-Bridge scripts/performance/configs/qwen/qwen3_workload_base_configs.py,
        # QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1: moe_a2a_overlap=True; V2, global batch 8192 as the 26.02
        # row, inherits it). The 25.09 token-drop preset did not (qwen3_235b_a22b_llm_pretrain.py of 25.09).
        a2a_overlap = model == "qwen3-235b-a22b" and not r["capacity_factor"]
        if a2a_overlap:
            header.append("Recipe: moe_a2a_overlap (the H100 presets QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1/V2 "
                          "of scripts/performance/configs/qwen/qwen3_workload_base_configs.py)")
        header.append("Compared metric: tokens_per_s_per_gpu (the table's Tokens / sec / GPU).")
        tables = [
            ("", {"schema_version": 1, "name": "validation-" + name,
                  "description": f"{model}, Megatron-Bridge {release} DGX-H100 row {r['id']} ({gpus} GPUs)"}),
            ("model", moe_model_table(model, seq)),
            ("training", {
                "framework": "nemo", "global_batch_size": gbs, "micro_batch_size": mbs, "precision": "fp8",
                "activation_recompute": "none", "grad_reduce_dtype": "bf16", "moe_router_load_balancing": "forced",
                "moe_expert_capacity_factor": float(r["capacity_factor"]) if r["capacity_factor"] else None,
                "moe_pad_expert_input_to_capacity": True if r["capacity_factor"] else None,
                "moe_router_fusion": True, "moe_a2a_overlap": True if a2a_overlap else None,
            }),
            ("parallelism", {
                "tensor": tp, "context": cp if cp > 1 else None, "pipeline": pp, "data": data,
                "virtual_stages": vp if vp > 1 else None, "sequence_parallel": True if tp > 1 else None,
                "expert": ep, "expert_tensor": etp if etp > 1 else None,
            }),
            dgx_h100_cluster(gpus),
            ("reference", {
                "tokens_per_s_per_gpu": float(r["tokens_per_s_per_gpu"]), "dataset": dataset,
                "source": f"Megatron-Bridge performance summary {release}, DGX-H100, row {r['id']}",
            }),
        ]
        rows_out[name] = render(header, tables)


def deepseek_v3_model_table(seq):
    """DeepSeek-V3's shapes (arXiv 2412.19437 Sec. 4.2; inference/configs/config_671B.json): 61 layers, the
    first 3 dense, h 7168, 128 MLA heads, 256 routed experts of 2048 and one shared, top-8."""
    return {
        "num_layers": 61, "hidden_size": 7168, "num_attention_heads": 128, "multi_latent_attention": True,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64,
        "v_head_dim": 128, "ffn_hidden_size": 18432, "vocab_size": 129280, "seq_length": seq, "mlp": "swiglu",
        "position_embedding": "rope", "dropout": 0.0, "tie_embeddings": False, "num_experts": 256,
        "moe_router_topk": 8, "moe_ffn_hidden_size": 2048, "moe_shared_expert_intermediate_size": 2048,
        "num_dense_layers_first": 3,
    }


def dgxc_deepseek_v3(rows_out):
    """DGX Cloud benchmarking recipes: DeepSeek-V3 671B BF16 pre-training on DGX-H100 (NeMo 2, 25.04)."""
    for r in read_csv("dgxc_deepseek_v3.csv"):
        gpus, tp, pp, ep = (int(r[k]) for k in ("gpus", "tp", "pp", "ep"))
        seq, gbs, mbs = int(r["seq"]), int(r["gbs"]), int(r["mbs"])
        data = gpus // (tp * pp)
        dataset = "dgxc-h100"
        name = f"{dataset}-deepseek-v3-{r['id']}"
        header = [
            f"Validation, NVIDIA DGX Cloud benchmarking recipe (dgxc-benchmarking, NeMo 25.04.01), row {r['id']}: "
            f"DeepSeek-V3 671B on {gpus} H100 (DGX-H100), BF16.",
            "Source: NVIDIA/dgxc-benchmarking deepseek_v3/pretraining/README.md and launch.sh; "
            "scenarios/validation/published/dgxc_deepseek_v3.csv.",
            "Model: DeepSeek-V3 (MLA, 256 routed experts + 1 shared, top-8, first 3 layers dense) with the "
            "recipe's one multi-token-prediction module (mtp_num_layers=1) on the last stage.",
            f"Layout: TP {tp} x PP {pp} x DP {data} with sequence parallelism, EP {ep} folded over TP x DP; global "
            f"batch {gbs}, micro batch {mbs}, sequence {seq}; the perf script's stages: 64 // pp - 1 layers on "
            "the first, 64 // pp - 2 on the last, 64 // pp on the others.",
            "Hardware: DGX-H100 (8 x H100 SXM5 80 GB, NVSwitch, 8 x 400 Gb/s NDR InfiniBand): the node design of "
            "Standard_ND96isr_H100_v5 (rail-optimized fabric).",
            "Assumption: the release's token-drop callback: alltoall dispatcher, capacity factor 1.0 padded to "
            "capacity (every expert runs its mean share; NeMo 2 MegatronTokenDropCallback's default "
            "moe_pad_expert_input_to_capacity=True), aux-loss balancing; no router fusion (Megatron-Core 0.14, later)",
            "Settings: selective recompute of the MLA up-projections only (recompute_modules mla_up_proj); "
            "gradient reduction in bf16",
            "Compared metric: tokens_per_s_per_gpu (total tokens/s over the GPUs).",
        ]
        tables = [
            ("", {"schema_version": 1, "name": "validation-" + name,
                  "description": f"DeepSeek-V3 671B BF16, DGX Cloud recipe row {r['id']} ({gpus} H100)"}),
            ("model", dict(deepseek_v3_model_table(seq), mtp_num_layers=1)),
            ("training", {
                "framework": "nemo", "global_batch_size": gbs, "micro_batch_size": mbs, "precision": "bf16",
                "activation_recompute": "selective", "recompute_modules": ["mla_up_proj"],
                "grad_reduce_dtype": "bf16", "moe_router_load_balancing": "aux_loss",
                "moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": True,
            }),
            ("parallelism", {
                "tensor": tp, "pipeline": pp, "data": data, "sequence_parallel": True if tp > 1 else None,
                "expert": ep, "first_stage_layers": 64 // pp - 1, "last_stage_layers": 64 // pp - 2,
            }),
            dgx_h100_cluster(gpus),
            ("reference", {
                "tokens_per_s_per_gpu": float(r["tokens_per_s_per_gpu"]), "dataset": dataset,
                "source": f"NVIDIA dgxc-benchmarking DeepSeek-V3 pre-training README, BF16 {gpus} GPUs "
                          f"({r['step_time_s']} s per step)",
            }),
        ]
        rows_out[name] = render(header, tables)


def megatron_moe_modelzoo(rows_out):
    """Megatron-MoE-ModelZoo best practices: Qwen3-235B-A22B on 256 H100 with DeepEP, with and without the
    1F1B all-to-all overlap."""
    for r in read_csv("megatron_moe_modelzoo.csv"):
        tp, pp, vp, ep = (int(r[k]) for k in ("tp", "pp", "vp", "ep"))
        gpus, seq, gbs = 256, 4096, 2048
        data = gpus // (tp * pp)
        overlap = r["a2a_overlap"] == "true"
        dataset = "modelzoo-h100"
        name = f"{dataset}-qwen3-235b-{r['id']}"
        header = [
            f"Validation, Megatron-MoE-ModelZoo best practice, Qwen3-235B-A22B row {r['id']}: 256 H100, BF16.",
            "Source: yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md; "
            "scenarios/validation/published/megatron_moe_modelzoo.csv.",
            f"Model: {MOE_MODELS['qwen3-235b-a22b'][-1]}; every layer MoE, no shared expert; qk-layernorm not "
            "modelled.",
            f"Layout: TP {tp} x PP {pp} x DP {data}, {vp} virtual stages, EP {ep} folded over TP x DP; global batch "
            f"{gbs}, micro batch 1, sequence {seq}.",
            "Hardware: H100 SXM nodes with NVLink 4 and 8 x 50 GB/s InfiniBand: the node design of "
            "Standard_ND96isr_H100_v5 (rail-optimized fabric).",
            "Settings: the flex dispatcher (DeepEP), real routing with aux-loss balancing, "
            + ("the 1F1B all-to-all overlap, " if overlap else "")
            + ("selective recompute of the pre-norms and the experts' activation (recompute_modules layernorm, "
               "moe_act)" if r["recompute"] == "selective" else "no recompute"),
            "Assumption: the megatron-core framework profile (distributed optimizer, overlapped gradient reduction "
            "and parameter gather); gradient reduction in fp32",
            "Compared metric: step_time_s.",
        ]
        tables = [
            ("", {"schema_version": 1, "name": "validation-" + name,
                  "description": f"Qwen3-235B-A22B, Megatron-MoE-ModelZoo row {r['id']} (256 H100)"}),
            ("model", moe_model_table("qwen3-235b-a22b", seq)),
            ("training", {
                "framework": "megatron-core", "global_batch_size": gbs, "micro_batch_size": 1,
                "precision": "bf16", "activation_recompute": r["recompute"],
                "recompute_modules": ["layernorm", "moe_act"] if r["recompute"] == "selective" else None,
                "moe_token_dispatcher": "flex",
                "moe_router_load_balancing": "aux_loss", "moe_a2a_overlap": True if overlap else None,
            }),
            ("parallelism", {
                "tensor": tp, "pipeline": pp, "data": data, "virtual_stages": vp,
                "sequence_parallel": True if tp > 1 else None, "expert": ep,
            }),
            dgx_h100_cluster(gpus),
            ("reference", {
                "step_time_s": float(r["step_time_s"]), "dataset": dataset,
                "source": f"Megatron-MoE-ModelZoo Qwen3 best practice, H100 row {r['id']} "
                          f"({r['model_tflops_per_gpu']} TFLOP/s per GPU)",
            }),
        ]
        rows_out[name] = render(header, tables)


DATASETS = [torchtitan, nemo, megatron_bridge_moe, dgxc_deepseek_v3, megatron_moe_modelzoo]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed scenarios")
    args = parser.parse_args()
    scenarios = {}
    for dataset in DATASETS:
        dataset(scenarios)
    differing = []
    for name, text in sorted(scenarios.items()):
        path = os.path.join(OUT, name + ".toml")
        if args.check:
            old = open(path).read() if os.path.exists(path) else None
            if old != text:
                differing.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    if args.check:
        for path in differing:
            print("differs from the generator:", path)
        return 1 if differing else 0
    print(f"wrote {len(scenarios)} scenarios to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
