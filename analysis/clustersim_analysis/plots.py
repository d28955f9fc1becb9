"""Plots of clustersim results. Every function returns a matplotlib Figure, with a title and every axis
labelled with its units; save it with fig.savefig(path), show it with plt.show() (or as a notebook cell's value).

The module chooses no backend: matplotlib picks the inline one in a Jupyter kernel and Agg where there is no
display. A headless script or test that must not open windows sets MPLBACKEND=Agg in its own environment."""

from __future__ import annotations

import json
import os

import matplotlib
import matplotlib.colors
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

__all__ = [
    "BREAKDOWN_COLUMNS",
    "plot_step_breakdown",
    "plot_sweep_heatmap",
    "plot_pareto",
    "pareto_front",
    "plot_memory",
    "plot_timeline",
    "CRITICAL_PATH_PARTS",
    "critical_path_bar",
    "tornado",
]

# The parts of the step's critical path (/summary, docs/hdf5-schema.md), left to right, each with its legend
# label and a fixed colour: the same part has the same colour in every figure. They sum to step_time_s.
# Compute splits into GEMMs (compute_time_s - attention_time_s - memory_bound_time_s), attention and
# memory-bound kernels when those columns are present.
CRITICAL_PATH_PARTS = [
    ("compute_time_s", "compute", "#1f77b4"),
    ("exposed_tp_comm_s", "exposed TP comm", "#ff7f0e"),
    ("exposed_cp_comm_s", "exposed CP comm", "#bcbd22"),
    ("exposed_ep_comm_s", "exposed EP comm (all-to-all)", "#d62728"),
    ("exposed_host_s", "waiting on the host", "#8c564b"),
    ("exposed_pp_comm_s", "exposed PP comm", "#2ca02c"),
    ("exposed_dp_comm_s", "exposed DP comm", "#9467bd"),
    ("optimizer_time_s", "optimizer", "#e377c2"),
    ("bubble_time_s", "waiting on other stages", "#7f7f7f"),
]

# The components of step_time_s per run or per stage (plot_step_breakdown), bottom to top, with legend labels;
# each is drawn in its CRITICAL_PATH_PARTS colour.
BREAKDOWN_COLUMNS = [
    ("compute_time_s", "compute"),
    ("exposed_tp_comm_s", "exposed TP comm"),
    ("exposed_cp_comm_s", "exposed CP comm"),
    ("exposed_ep_comm_s", "exposed EP comm (all-to-all)"),
    ("exposed_host_s", "waiting on the host"),
    ("exposed_pp_comm_s", "exposed PP comm"),
    ("exposed_dp_comm_s", "exposed DP comm"),
    ("bubble_time_s", "pipeline bubble"),
    ("optimizer_time_s", "optimizer"),
]
_PART_COLOURS = {col: color for col, _, color in CRITICAL_PATH_PARTS}

_GIB = 1024.0**3


def _units(df: pd.DataFrame, column: str, default: str = "") -> str:
    return df.attrs.get("units", {}).get(column, default)


def _axis_label(df: pd.DataFrame, column: str, name: str | None = None) -> str:
    """'name (units)'; dimensionless columns get '(1)', labels none."""
    unit = _units(df, column)
    name = name or _pretty(column)
    return f"{name} ({unit})" if unit else name


def _pretty(column: str) -> str:
    """A column name without its unit suffix, underscores as spaces (step_time_s -> step time)."""
    for suffix in ("_s", "_bytes", "_usd", "_h"):
        if column.endswith(suffix):
            column = column[: -len(suffix)]
            break
    return column.replace("_", " ")


def _run_labels(df: pd.DataFrame, labels=None) -> list[str]:
    if labels is not None:
        if isinstance(labels, str):
            return [str(v) for v in df[labels]]
        return [str(v) for v in labels]
    layout = ["tensor_parallel", "pipeline_parallel", "data_parallel"]
    if all(c in df.columns for c in layout) and df[layout].notna().all().all():
        out = []
        for _, r in df.iterrows():
            s = f"TP{int(r.tensor_parallel)} PP{int(r.pipeline_parallel)} DP{int(r.data_parallel)}"
            if "parallelism_virtual_stages" in df.columns and pd.notna(r.parallelism_virtual_stages):
                s += f" v{int(r.parallelism_virtual_stages)}"
            if "training_micro_batch_size" in df.columns and pd.notna(r.training_micro_batch_size):
                s += f" mb{int(r.training_micro_batch_size)}"
            out.append(s)
        if len(set(out)) == len(out):
            return out
    if "scenario" in df.columns and df["scenario"].nunique() == len(df):
        return [str(v) for v in df["scenario"]]
    if "run_index" in df.columns:
        return [f"run {int(v)}" for v in df["run_index"]]
    return [f"run {i}" for i in range(len(df))]


def plot_step_breakdown(df: pd.DataFrame, labels=None, title: str | None = None, horizontal: bool | None = None,
                        category_label: str = "run"):
    """Stacked bars of step time per run: compute, exposed TP / CP / EP comm, waiting on the host, exposed PP /
    DP comm, bubble, optimizer (s); each part in its CRITICAL_PATH_PARTS colour, parts zero in every bar left out.

    labels: a column name or a list of bar labels (default: the layout, the scenario or the run index).
    category_label: the label of the bars' axis (e.g. "pipeline stage" for a stages table).
    """
    names = _run_labels(df, labels)
    if horizontal is None:
        horizontal = len(df) > 6
    n = len(df)
    if horizontal:
        fig, ax = plt.subplots(figsize=(9, max(3.0, 0.35 * n + 1.5)))
    else:
        fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * n + 2), 5))
    pos = np.arange(n)
    base = np.zeros(n)
    for col, label in BREAKDOWN_COLUMNS:
        if col not in df.columns:
            continue
        vals = np.nan_to_num(df[col].to_numpy(dtype=float))
        if not np.any(vals):  # a part that is zero in every bar stays out of the legend
            continue
        if horizontal:
            ax.barh(pos, vals, left=base, label=label, color=_PART_COLOURS[col])
        else:
            ax.bar(pos, vals, bottom=base, label=label, color=_PART_COLOURS[col])
        base += vals
    unit = _units(df, "step_time_s", "s") or "s"
    if horizontal:
        ax.set_yticks(pos, names)
        ax.invert_yaxis()
        ax.set_xlabel(f"step time ({unit})")
        ax.set_ylabel(category_label)
    else:
        ax.set_xticks(pos, names, rotation=20 if n > 3 else 0, ha="right" if n > 3 else "center")
        ax.set_ylabel(f"step time ({unit})")
        ax.set_xlabel(category_label)
    ax.set_title(title or "Step time breakdown per run")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="x" if horizontal else "y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_sweep_heatmap(df: pd.DataFrame, x: str, y: str, value: str, agg: str = "min", title: str | None = None,
                       cmap: str = "viridis_r"):
    """Heatmap of `value` over the sweep's (x, y) values; several points in a cell are reduced with `agg`
    (default min: e.g. the best layout for each tensor x pipeline pair). Empty cells (invalid points) are blank."""
    data = df[[x, y, value]].dropna(subset=[value])
    table = data.pivot_table(index=y, columns=x, values=value, aggfunc=agg)
    table = table.sort_index().sort_index(axis=1)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * table.shape[1] + 3), max(4.0, 0.6 * table.shape[0] + 2)))
    masked = np.ma.masked_invalid(table.to_numpy(dtype=float))
    im = ax.imshow(masked, cmap=cmap, aspect="auto", origin="lower")
    ax.set_xticks(np.arange(table.shape[1]), [_fmt(v) for v in table.columns])
    ax.set_yticks(np.arange(table.shape[0]), [_fmt(v) for v in table.index])
    ax.set_xlabel(_axis_label(df, x))
    ax.set_ylabel(_axis_label(df, y))
    for i in range(table.shape[0]):
        for j in range(table.shape[1]):
            v = masked[i, j]
            if v is not np.ma.masked:
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8,
                        color=_text_color(im, v))
    cbar = fig.colorbar(im, ax=ax)
    cbar.set_label(_axis_label(df, value))
    ax.set_title(title or f"{_pretty(value)} ({agg} per cell) by {_pretty(x)} and {_pretty(y)}")
    fig.tight_layout()
    return fig


def _text_color(im, v) -> str:
    r, g, b, _ = im.cmap(im.norm(v))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def pareto_front(df: pd.DataFrame, time_col: str, cost_col: str) -> pd.Series:
    """Boolean mask of the rows no other row beats on both time and cost (both minimised)."""
    t = df[time_col].to_numpy(dtype=float)
    c = df[cost_col].to_numpy(dtype=float)
    ok = ~(np.isnan(t) | np.isnan(c))
    mask = np.zeros(len(df), dtype=bool)
    for i in np.flatnonzero(ok):
        dominated = ok & (t <= t[i]) & (c <= c[i]) & ((t < t[i]) | (c < c[i]))
        mask[i] = not dominated.any()
    return pd.Series(mask, index=df.index, name="pareto")


def plot_pareto(df: pd.DataFrame, time_col: str, cost_col: str, labels=None, title: str | None = None):
    """Time-vs-cost scatter of every run with the Pareto front (no run both faster and cheaper) highlighted."""
    front = pareto_front(df, time_col, cost_col).to_numpy()
    t = df[time_col].to_numpy(dtype=float)
    c = df[cost_col].to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.scatter(t[~front], c[~front], color="0.6", label="dominated", zorder=2)
    order = np.argsort(t[front])
    ax.plot(t[front][order], c[front][order], "o-", color="tab:red", label="Pareto front", zorder=3)
    names = _run_labels(df, labels) if labels is not None or len(df) <= 12 else None
    if names:
        for xi, yi, s in zip(t, c, names):
            if np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(s, (xi, yi), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xlabel(_axis_label(df, time_col))
    ax.set_ylabel(_axis_label(df, cost_col))
    ax.set_title(title or f"{_pretty(cost_col)} vs {_pretty(time_col)}: Pareto front")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers: the unit is in the label, no "1e6" offset
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"))
    fig.tight_layout()
    return fig


_MEMORY_COLUMNS = [
    ("weights_bytes", "weights"),
    ("gradients_bytes", "gradients"),
    ("optimizer_bytes", "optimizer states"),
    ("activations_bytes", "activations"),
]


def plot_memory(stages_df: pd.DataFrame, capacity_bytes: float, title: str | None = None):
    """Memory per GPU of each pipeline stage, stacked (weights, gradients, optimizer states, activations, and
    the rest of total_memory_bytes: transients and framework reserve), against the GPU's HBM capacity (GiB)."""
    n = len(stages_df)
    stages = stages_df["stage"].to_numpy() if "stage" in stages_df.columns else np.arange(n)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * n + 3), 5))
    base = np.zeros(n)
    colors = plt.get_cmap("tab10").colors
    for i, (col, label) in enumerate(_MEMORY_COLUMNS):
        if col not in stages_df.columns:
            continue
        vals = np.nan_to_num(stages_df[col].to_numpy(dtype=float)) / _GIB
        ax.bar(stages, vals, bottom=base, label=label, color=colors[i])
        base += vals
    if "total_memory_bytes" in stages_df.columns:
        rest = np.nan_to_num(stages_df["total_memory_bytes"].to_numpy(dtype=float)) / _GIB - base
        rest = np.clip(rest, 0.0, None)
        ax.bar(stages, rest, bottom=base, label="transients + reserve", color=colors[4])
        base += rest
    cap = float(capacity_bytes) / _GIB
    ax.axhline(cap, color="tab:red", linestyle="--", label=f"HBM capacity {cap:.1f} GiB")
    ax.set_xlabel("pipeline stage (1)")
    ax.set_ylabel("memory per GPU (GiB)")
    ax.set_xticks(stages)
    ax.set_ylim(0, max(cap, float(base.max()) if n else 0.0) * 1.15)
    ax.set_title(title or "Memory per GPU by pipeline stage vs HBM")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


_TRACE_CATEGORIES = [
    ("compute", "compute", "tab:blue"),
    ("tp_comm", "TP comm", "tab:orange"),
    ("p2p", "p2p", "tab:green"),
    ("dp_sync", "DP sync", "tab:red"),
    ("optimizer", "optimizer", "tab:purple"),
]


def plot_timeline(trace_json_path: str | os.PathLike, categories=None, title: str | None = None,
                  time_range_s: tuple[float, float] | None = None):
    """Gantt chart of a Chrome trace written by `clustersim run --trace`: one row per (stage, category)
    (compute, TP comm, p2p, DP sync, optimizer) over the step, time in seconds."""
    with open(trace_json_path) as fh:
        trace = json.load(fh)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    unit = (trace.get("otherData", {}) if isinstance(trace, dict) else {}).get("time_unit", "us")
    scale = {"us": 1e-6, "ns": 1e-9, "ms": 1e-3, "s": 1.0}.get(unit, 1e-6)
    stage_names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            stage_names[e["pid"]] = e.get("args", {}).get("name", f"pid {e['pid']}")
    wanted = [c for c in _TRACE_CATEGORIES if categories is None or c[0] in categories]
    spans = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        spans.setdefault((e["pid"], e.get("cat", "")), []).append((e["ts"] * scale, e.get("dur", 0.0) * scale))
    present = [c for c in wanted if any(k[1] == c[0] for k in spans)]
    pids = sorted({k[0] for k in spans} | set(stage_names))
    lane = len(present) + 1
    fig, ax = plt.subplots(figsize=(11, max(3.0, 0.22 * lane * len(pids) + 1.5)))
    yticks, ylabels = [], []
    for si, pid in enumerate(pids):
        for ci, (cat, label, color) in enumerate(present):
            y = si * lane + ci
            bars = spans.get((pid, cat), [])
            if time_range_s is not None:
                lo, hi = time_range_s
                bars = [(s, d) for s, d in bars if s + d >= lo and s <= hi]
            if bars:
                ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=color, linewidth=0)
            yticks.append(y)
            name = stage_names.get(pid, f"stage {pid - 1}").split(" (")[0]
            ylabels.append(f"{name} {label}")
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=color, label=label) for _, label, color in present]
    ax.set_yticks(yticks, ylabels, fontsize=6 if len(yticks) > 20 else 8)
    ax.invert_yaxis()
    if time_range_s is not None:
        ax.set_xlim(*time_range_s)
    ax.set_xlabel("time from the start of the step (s)")
    ax.set_ylabel("pipeline stage and track")
    ax.set_title(title or "Step timeline per pipeline stage")
    ax.legend(handles=handles, fontsize="small", loc="upper right", ncol=len(present))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


_COMPUTE_SPLIT = [
    ("gemm", "compute: GEMMs", "#1f77b4"),
    ("attention_time_s", "compute: attention", "#4a9fd8"),
    ("memory_bound_time_s", "compute: memory-bound", "#9ecae1"),
]


def _critical_path_segments(df: pd.DataFrame, split_compute: bool) -> list[tuple[str, str, np.ndarray]]:
    """(label, colour, seconds per row) for each part present in df, in CRITICAL_PATH_PARTS order."""
    segments = []
    for col, label, color in CRITICAL_PATH_PARTS:
        if col not in df.columns:
            continue
        vals = np.nan_to_num(df[col].to_numpy(dtype=float))
        parts = [c for c in ("attention_time_s", "memory_bound_time_s") if c in df.columns]
        if col == "compute_time_s" and split_compute and parts:
            sub = {c: np.nan_to_num(df[c].to_numpy(dtype=float)) for c in parts}
            gemm = vals - sum(sub.values())
            for key, sub_label, sub_color in _COMPUTE_SPLIT:
                if key == "gemm":
                    segments.append((sub_label, sub_color, np.clip(gemm, 0.0, None)))
                elif key in sub:
                    segments.append((sub_label, sub_color, sub[key]))
            continue
        segments.append((label, color, vals))
    return segments


def _bar_labels(df: pd.DataFrame, labels) -> list[str]:
    if labels is None and "scenario" in df.columns:
        return [str(v) for v in df["scenario"]]
    return _run_labels(df, labels)


def critical_path_bar(runs, labels=None, title: str | None = None, ax=None, split_compute: bool = True):
    """The step's critical path as one stacked horizontal bar per run: compute (GEMMs, attention,
    memory-bound), exposed TP / CP / EP / PP / DP communication, waiting on the host, optimizer, and waiting on
    other stages (the pipeline bubble), in seconds, each segment labelled with its seconds and % of the step
    where it is wide enough.

    runs: a /summary row (pandas Series, e.g. load_summary(path).iloc[0]) or a DataFrame of rows (one bar
    each, top to bottom in row order, labelled by `labels`: a column name or list; default the scenario).
    Every part keeps its colour (CRITICAL_PATH_PARTS); a part that is zero in every bar is left out of the bars
    and the legend. One run: the legend gives each part's seconds and %, and the title its `bottleneck` line
    when the row has one. A bar whose parts differ from step_time_s by over 0.1 % draws a black tick at
    step_time_s (files written before the critical-path breakdown, issue 29).
    ax: draw into these axes (default a new figure). Returns the Figure.
    """
    df = runs.to_frame().T.infer_objects() if isinstance(runs, pd.Series) else runs
    if isinstance(runs, pd.Series):
        df.attrs = dict(runs.attrs)
    n = len(df)
    names = _bar_labels(df, labels)
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, max(2.4, 0.55 * n + 1.8)))
    else:
        fig = ax.figure
    segments = [s for s in _critical_path_segments(df, split_compute) if np.any(s[2] > 0)]
    total = np.sum([s[2] for s in segments], axis=0) if segments else np.zeros(n)
    step = df["step_time_s"].to_numpy(dtype=float) if "step_time_s" in df.columns else total
    pos = np.arange(n)
    left = np.zeros(n)
    widest = float(np.nanmax(total)) if n and np.isfinite(total).any() else 0.0
    for label, color, vals in segments:
        share = np.divide(vals, total, out=np.zeros(n), where=total > 0)
        legend = f"{label}: {vals[0]:.3g} s ({100 * share[0]:.1f} %)" if n == 1 else label
        bars = ax.barh(pos, vals, left=left, color=color, label=legend, edgecolor="white", linewidth=0.5)
        for bar, v, p in zip(bars, vals, share):
            if v > 0 and v >= 0.07 * widest:
                ax.text(bar.get_x() + v / 2, bar.get_y() + bar.get_height() / 2, f"{v:.3g} s\n{100 * p:.0f} %",
                        ha="center", va="center", fontsize=7, color=_ink(color))
        left += vals
    missed = [i for i in range(n) if np.isfinite(step[i]) and abs(total[i] - step[i]) > 1e-3 * max(step[i], 1e-30)]
    for k, i in enumerate(missed):
        ax.plot([step[i], step[i]], [i - 0.45, i + 0.45], color="black", linewidth=2,
                label="step_time_s" if k == 0 else None)
    unit = _units(df, "step_time_s", "s") or "s"
    ax.set_yticks(pos, names)
    ax.invert_yaxis()
    ax.set_xlabel(f"time on the critical path of the step ({unit})")
    ax.set_ylabel("scenario" if labels is None and "scenario" in df.columns else "run")
    if title is None:
        title = "Critical path of the step" if n != 1 else f"Critical path of the step: {names[0]}"
        if n == 1 and "bottleneck" in df.columns and str(df["bottleneck"].iloc[0]):
            title += f"\n{df['bottleneck'].iloc[0]}"
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    return fig


def _ink(color) -> str:
    """Black or white text, whichever reads on a bar of `color`."""
    r, g, b, _ = matplotlib.colors.to_rgba(color)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _what_if_value_column(df: pd.DataFrame, metric: str) -> str | None:
    """The absolute column of a relative one: step_time_change -> step_time_s, usd_per_million_tokens_change
    -> usd_per_million_tokens."""
    stem = metric[: -len("_change")] if metric.endswith("_change") else metric
    for col in (stem + "_s", stem):
        if col in df.columns and col != metric:
            return col
    return None


def _unit_from_name(column: str) -> str:
    """The unit a column's name implies, for frames without df.attrs["units"]: *_s -> s,
    usd_per_million_tokens -> USD/Mtoken, other usd_* -> USD."""
    if column.endswith("_s"):
        return "s"
    if column.startswith("usd_per_million_tokens"):
        return "USD/Mtoken"
    return "USD" if column.startswith("usd_") else ""


def _format_value(v: float, unit: str, digits: int = 3) -> str:
    """'21.3 s', '850 ms', '1.60 USD/Mtoken', '0.121 USD/Mtoken': `digits` significant digits (money keeps
    its trailing zeros)."""
    if not np.isfinite(v):
        return "n/a"
    if unit.startswith("USD"):
        return f"{v:,.0f} {unit}" if abs(v) >= 10**digits else f"{v:#.{digits}g} {unit}"
    if unit == "s" and 0 < abs(v) < 1:
        return f"{v * 1e3:.{digits}g} ms"
    return f"{v:.{digits}g} {unit}".rstrip()


def _metric_name(column: str) -> str:
    """A what-if column as words, acronyms in capitals: ttft_p99_change -> TTFT p99 change."""
    words = _pretty(column).split(" ")
    return " ".join(w.upper() if w in ("ttft", "tpot", "usd") else w for w in words)


def tornado(df: pd.DataFrame, metric: str | None = None, labels: str = "perturbation", title: str | None = None,
            ax=None):
    """Tornado chart of a what-if table (read_what_if): one horizontal bar per perturbation, its relative
    change of `metric` against the baseline in %, largest |change| on top; the baseline row (perturbation
    "baseline", else row 0) and rows whose change is NaN are left out. Each bar is labelled with the metric's
    absolute value (e.g. "21.3 s") and its change; green where the metric went down (faster, cheaper), red
    where it went up. A vertical line marks 0; the title names the scenario and the baseline's value (4 digits).

    metric: a relative column (units "1"): "step_time_change" (training, the default there),
    "ttft_p99_change" (serving's default), "tpot_p99_change", "usd_per_million_tokens_change".
    labels: the column naming each bar ("perturbation" or "description").
    ax: draw into these axes (default a new figure). Returns the Figure.
    Raises KeyError naming the column when metric is not in df.
    """
    if metric is None:
        metric = "step_time_change" if "step_time_change" in df.columns else "ttft_p99_change"
    if metric not in df.columns:
        raise KeyError(f"what-if table has no column {metric!r} (columns: {', '.join(map(str, df.columns))})")
    names = df["perturbation"].astype(str) if "perturbation" in df.columns else pd.Series(
        [str(i) for i in range(len(df))], index=df.index)
    is_base = (names == "baseline").to_numpy()
    if not is_base.any() and len(df):
        is_base[0] = True
    base = df[is_base].iloc[0] if is_base.any() else None
    rows = df[~is_base]
    change = rows[metric].to_numpy(dtype=float)
    keep = np.isfinite(change)
    rows, change = rows[keep], change[keep]
    order = np.argsort(-np.abs(change), kind="stable")
    rows, change = rows.iloc[order], 100.0 * change[order]
    value_col = _what_if_value_column(df, metric)
    unit = (_units(df, value_col, "") or _unit_from_name(value_col)) if value_col else ""
    n = len(rows)
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, max(2.5, 0.4 * n + 1.6)))
    else:
        fig = ax.figure
    pos = np.arange(n)
    colors = ["tab:green" if c < 0 else "tab:red" for c in change]
    ax.barh(pos, change, color=colors)
    ax.axvline(0.0, color="black", linewidth=1)
    bar_names = [str(v) for v in (rows[labels] if labels in rows.columns else names[~is_base][keep].iloc[order])]
    ax.set_yticks(pos, bar_names)
    ax.invert_yaxis()
    span = float(np.max(np.abs(change))) if n else 1.0
    span = span if span > 0 else 1.0
    for y, c, (_, row) in zip(pos, change, rows.iterrows()):
        text = f"{c:+.1f} %"
        if value_col:
            text = f"{_format_value(float(row[value_col]), unit)} ({text})"
        ax.text(c + (0.02 * span if c >= 0 else -0.02 * span), y, text, va="center",
                ha="left" if c >= 0 else "right", fontsize=8)
    ax.set_xlim(min(0.0, float(change.min()) if n else 0.0) - 0.45 * span,
                max(0.0, float(change.max()) if n else 0.0) + 0.45 * span)
    ax.set_xlabel(f"{_metric_name(metric)} vs baseline (%)")
    ax.set_ylabel(labels if labels in df.columns else "perturbation")
    if title is None:
        what = _metric_name(metric[: -len("_change")] if metric.endswith("_change") else metric)
        scenario = df.attrs.get("scenario", "")
        title = f"What if: {what} with one change at a time" + (f", {scenario}" if scenario else "")
        if base is not None and value_col:
            title += f"\nbaseline: {_format_value(float(base[value_col]), unit, digits=4)}"
    ax.set_title(title, fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    return fig
