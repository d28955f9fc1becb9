"""Tests of the what-if reader, the tornado chart and the critical-path bar (issue 29) on small HDF5 files
written with h5py after the /what_if and /summary schema (docs/hdf5-schema.md)."""

import h5py
import matplotlib
import numpy as np
import pandas as pd
import pytest

import clustersim_analysis as ca

matplotlib.use("Agg")
STR = h5py.string_dtype("utf-8")

# The critical-path parts of the step; they sum to step_time_s (attention and memory-bound are parts of compute).
PARTS = ["compute_time_s", "exposed_tp_comm_s", "exposed_cp_comm_s", "exposed_ep_comm_s", "exposed_host_s",
         "exposed_pp_comm_s", "exposed_dp_comm_s", "optimizer_time_s", "bubble_time_s"]


def _write_group(group, columns, units):
    """columns: name -> values (str values become UTF-8 string datasets); units: name -> units attribute."""
    for name, values in columns.items():
        values = list(values)
        if values and isinstance(values[0], str):
            ds = group.create_dataset(name, data=np.array(values, dtype=object), dtype=STR)
        else:
            ds = group.create_dataset(name, data=np.asarray(values))
        ds.attrs["units"] = units.get(name, "")
        ds.attrs["description"] = f"test column {name}"


def _summary(f, rows):
    """/summary from a list of dicts (one per run)."""
    columns = {k: [r[k] for r in rows] for k in rows[0]}
    _write_group(f.create_group("summary"), columns, {k: "s" for k in columns if k.endswith("_s")})


TRAINING_ROWS = [
    # perturbation, description, step_time_s, usd_per_million_tokens
    ("baseline", "the scenario as written", 20.0, 2.00),
    ("gpu_matmul_x1.5", "GPU matmul rate x1.5", 16.0, 1.70),
    ("hbm_bandwidth_x1.5", "HBM bandwidth x1.5", 19.0, 1.95),
    ("nvlink_x2", "NVLink bandwidth x2", 19.8, 1.99),
    ("nic_x2", "scale-out NIC bandwidth x2", 13.0, 1.40),
    ("latency_x0.5", "network latency x0.5", 19.9, 2.00),
    ("no_pipeline_bubble", "no pipeline bubble", 17.5, 1.75),
    ("next_vm_size", "next VM size: ND H200 v5", 21.0, 2.60),
]


def _ranks(values):
    order = np.argsort(values[1:], kind="stable")
    ranks = np.zeros(len(values), dtype=np.int64)
    ranks[1 + order] = np.arange(1, len(values))
    return ranks


@pytest.fixture
def training_file(tmp_path):
    path = tmp_path / "train.h5"
    names, descriptions, step, usd = (list(c) for c in zip(*TRAINING_ROWS))
    step, usd = np.array(step), np.array(usd)
    with h5py.File(path, "w") as f:
        row = {"scenario": "gpt3-test", "step_time_s": 20.0, "compute_time_s": 12.0, "attention_time_s": 2.0,
               "memory_bound_time_s": 1.0, "exposed_tp_comm_s": 1.5, "exposed_cp_comm_s": 0.0,
               "exposed_ep_comm_s": 0.0, "exposed_host_s": 0.0, "exposed_pp_comm_s": 0.5,
               "exposed_dp_comm_s": 1.0, "optimizer_time_s": 0.25, "bubble_time_s": 4.75,
               "bottleneck": "bottleneck: GEMMs on the GPUs, 45 % of the step"}
        _summary(f, [row])
        _write_group(f.create_group("what_if"), {
            "perturbation": names, "description": descriptions, "step_time_s": step,
            "step_time_change": step / step[0] - 1, "usd_per_million_tokens": usd,
            "usd_per_million_tokens_change": usd / usd[0] - 1, "rank_step_time": _ranks(step),
            "rank_cost": _ranks(usd)},
            {"step_time_s": "s", "step_time_change": "1", "usd_per_million_tokens": "USD/Mtoken",
             "usd_per_million_tokens_change": "1", "rank_step_time": "1", "rank_cost": "1"})
    return path


@pytest.fixture
def serving_file(tmp_path):
    path = tmp_path / "serve.h5"
    ttft = np.array([0.80, 0.50, 0.85, 0.40, np.nan])
    tpot = np.array([0.030, 0.029, 0.020, 0.031, 0.025])
    usd = np.array([1.0, 1.25, 0.9, 0.8, 1.1])
    with h5py.File(path, "w") as f:
        _summary(f, [{"scenario": "llama-serving", "step_time_s": np.nan}])
        _write_group(f.create_group("what_if"), {
            "perturbation": ["baseline", "plus_1_replica", "fp8_kv_cache", "tp_x2", "next_vm_size"],
            "description": ["as written", "+1 replica", "fp8 KV cache", "tensor parallel x2", "next VM size"],
            "ttft_p99_s": ttft, "ttft_p99_change": ttft / ttft[0] - 1, "tpot_p99_s": tpot,
            "tpot_p99_change": tpot / tpot[0] - 1, "output_tokens_per_s": [1e4, 1.2e4, 1.1e4, 1.3e4, 1e4],
            "usd_per_million_tokens": usd, "usd_per_million_tokens_change": usd / usd[0] - 1,
            "rank_ttft": np.array([0, 2, 3, 1, 4], dtype=np.int64), "rank_cost": _ranks(usd)},
            {"ttft_p99_s": "s", "ttft_p99_change": "1", "tpot_p99_s": "s", "tpot_p99_change": "1",
             "output_tokens_per_s": "tokens/s", "usd_per_million_tokens": "USD/Mtoken",
             "usd_per_million_tokens_change": "1"})
    return path


def _bars(ax):
    """The tornado's bars, top to bottom: (tick label, width in %)."""
    labels = [t.get_text() for t in ax.get_yticklabels()]
    patches = sorted(ax.patches, key=lambda p: p.get_y())
    widths = [p.get_width() for p in patches]
    ticks = ax.get_yticks()
    by_y = dict(zip(np.round(ticks, 6), labels))
    named = [(by_y[round(p.get_y() + p.get_height() / 2, 6)], w) for p, w in zip(patches, widths)]
    return named if ax.yaxis_inverted() else named[::-1]


def test_read_what_if_training(training_file):
    df = ca.read_what_if(training_file)
    assert list(df.columns) == ["perturbation", "description", "step_time_s", "step_time_change",
                                "usd_per_million_tokens", "usd_per_million_tokens_change", "rank_step_time",
                                "rank_cost"]
    assert len(df) == len(TRAINING_ROWS)
    assert df["perturbation"][0] == "baseline" and isinstance(df["description"][1], str)
    assert df["rank_step_time"].dtype == np.int64 and df["rank_step_time"][0] == 0
    assert df["step_time_change"][4] == pytest.approx(13.0 / 20.0 - 1)
    assert df.attrs["units"]["step_time_s"] == "s"
    assert df.attrs["units"]["step_time_change"] == "1"
    assert df.attrs["kind"] == "training"
    assert df.attrs["scenario"] == "gpt3-test"


def test_read_what_if_serving(serving_file):
    df = ca.read_what_if(serving_file)
    assert list(df.columns[:4]) == ["perturbation", "description", "ttft_p99_s", "ttft_p99_change"]
    assert df.attrs["kind"] == "serving"
    assert df.attrs["units"]["output_tokens_per_s"] == "tokens/s"


def test_missing_groups_name_the_file_and_the_group(tmp_path):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        _summary(f, [{"scenario": "x", "step_time_s": 1.0}])
    with pytest.raises(ca.MissingGroupError) as err:
        ca.read_what_if(path)
    message = str(err.value)
    assert message.startswith(f"{path}: no group /what_if")
    assert "--what-if" in message
    with pytest.raises(KeyError, match="no group /runs/0/stages"):  # still a KeyError
        ca.load_stages(path)
    empty = tmp_path / "empty.h5"
    h5py.File(empty, "w").close()
    with pytest.raises(KeyError) as err:
        ca.load_summary(empty)
    assert str(err.value) == f"{empty}: no group /summary"


def test_tornado_sorts_by_magnitude_without_the_baseline(training_file):
    df = ca.read_what_if(training_file)
    fig = ca.tornado(df)
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert "(%)" in ax.get_xlabel()
    bars = _bars(ax)
    names = [b[0] for b in bars]
    assert "baseline" not in names
    assert len(bars) == len(TRAINING_ROWS) - 1
    widths = [b[1] for b in bars]
    assert [abs(w) for w in widths] == sorted((abs(w) for w in widths), reverse=True)
    assert names[0] == "nic_x2" and widths[0] == pytest.approx(-35.0)
    assert dict(bars)["next_vm_size"] == pytest.approx(5.0)
    texts = [t.get_text() for t in ax.texts]
    assert "13 s (-35.0 %)" in texts and "21 s (+5.0 %)" in texts
    assert "baseline: 20 s" in ax.get_title() and "gpt3-test" in ax.get_title()
    assert any(np.allclose(line.get_xdata(), 0.0) for line in ax.get_lines())  # the line at 0


def test_tornado_serving_skips_nan_and_formats_ms(serving_file):
    df = ca.read_what_if(serving_file)
    fig = ca.tornado(df)  # serving: ttft_p99_change by default
    ax = fig.axes[0]
    names = [b[0] for b in _bars(ax)]
    assert names == ["tp_x2", "plus_1_replica", "fp8_kv_cache"]  # next_vm_size's TTFT is NaN: left out
    assert "400 ms (-50.0 %)" in [t.get_text() for t in ax.texts]
    assert "baseline: 800 ms" in ax.get_title()
    assert ax.get_xlabel() == "TTFT p99 change vs baseline (%)"
    fig = ca.tornado(df, metric="usd_per_million_tokens_change", labels="description")
    labels = [b[0] for b in _bars(fig.axes[0])]
    assert labels[0] == "+1 replica" and len(labels) == 4
    assert "1.25 USD/Mtoken (+25.0 %)" in [t.get_text() for t in fig.axes[0].texts]
    assert "0.900 USD/Mtoken (-10.0 %)" in [t.get_text() for t in fig.axes[0].texts]
    assert "baseline: 1.000 USD/Mtoken" in fig.axes[0].get_title()
    with pytest.raises(KeyError, match="step_time_change"):
        ca.tornado(df, metric="step_time_change")


def test_tornado_of_a_frame_without_units():
    """A what-if table built by hand (no df.attrs): the units come from the column names."""
    df = pd.DataFrame({"perturbation": ["baseline", "a", "b"], "ttft_p99_s": [2.0, 1.5, 2.5],
                       "ttft_p99_change": [0.0, -0.25, 0.25]})
    texts = [t.get_text() for t in ca.tornado(df).axes[0].texts]
    assert texts == ["1.5 s (-25.0 %)", "2.5 s (+25.0 %)"]


def test_tornado_into_given_axes(training_file):
    df = ca.read_what_if(training_file)
    fig, (left, right) = matplotlib.pyplot.subplots(1, 2)
    assert ca.tornado(df, ax=right) is fig
    assert not left.patches and len(right.patches) == len(TRAINING_ROWS) - 1


def _widths_per_bar(ax):
    sums = {}
    for p in ax.patches:
        y = round(p.get_y() + p.get_height() / 2, 6)
        sums[y] = sums.get(y, 0.0) + p.get_width()
    return [sums[k] for k in sorted(sums)]


def test_critical_path_bar_one_run(training_file):
    row = ca.load_summary(training_file).iloc[0]
    fig = ca.critical_path_bar(row)
    ax = fig.axes[0]
    assert ax.get_title() and "(s)" in ax.get_xlabel() and ax.get_ylabel()
    assert _widths_per_bar(ax) == pytest.approx([20.0])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    # compute splits into GEMMs 9, attention 2, memory-bound 1; zero parts (CP, EP, host) are left out
    assert legend[:3] == ["compute: GEMMs: 9 s (45.0 %)", "compute: attention: 2 s (10.0 %)",
                          "compute: memory-bound: 1 s (5.0 %)"]
    assert not any("CP" in t or "EP" in t or "host" in t for t in legend)
    assert "waiting on other stages: 4.75 s (23.8 %)" in legend
    assert "bottleneck: GEMMs" in ax.get_title()
    assert "9 s\n45 %" in [t.get_text() for t in ax.texts]
    assert not ax.get_lines()  # parts sum to the step: no step_time_s tick


def test_critical_path_bar_several_runs_fixed_colours():
    parts = {"compute_time_s": [10.0, 5.0, 7.0], "exposed_ep_comm_s": [0.0, 6.0, 0.0],
             "exposed_tp_comm_s": [1.0, 1.0, 1.0], "bubble_time_s": [2.0, 3.0, 0.0],
             "optimizer_time_s": [0.5, 0.5, 0.5]}
    df = pd.DataFrame(dict(scenario=["dense", "moe", "tiny"], **parts))
    df["step_time_s"] = sum(np.array(v) for v in parts.values())
    fig = ca.critical_path_bar(df)
    ax = fig.axes[0]
    assert _widths_per_bar(ax) == pytest.approx(list(df["step_time_s"]))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["dense", "moe", "tiny"]
    colours = {label: color for _, label, color in ca.CRITICAL_PATH_PARTS}
    handles, labels = ax.get_legend_handles_labels()
    assert labels == ["compute", "exposed TP comm", "exposed EP comm (all-to-all)", "optimizer",
                      "waiting on other stages"]
    for handle, label in zip(handles, labels):
        assert matplotlib.colors.to_hex(handle.patches[0].get_facecolor()) == colours[label]
    no_compute_split = ca.critical_path_bar(df.drop(columns="scenario"), labels=["a", "b", "c"])
    assert [t.get_text() for t in no_compute_split.axes[0].get_yticklabels()] == ["a", "b", "c"]


def test_critical_path_bar_marks_a_step_the_parts_miss():
    df = pd.DataFrame({"scenario": ["new", "old"], "compute_time_s": [9.0, 8.0], "bubble_time_s": [1.0, 1.0],
                       "step_time_s": [10.0, 10.0]})
    ax = ca.critical_path_bar(df).axes[0]
    assert _widths_per_bar(ax) == pytest.approx([10.0, 9.0])
    assert [line.get_xdata()[0] for line in ax.get_lines()] == [10.0]
    assert ax.get_legend_handles_labels()[1].count("step_time_s") == 1
