"""Tests of clustersim_analysis on small HDF5 files written with h5py after docs/hdf5-schema.md."""

import json
import os
import subprocess
import sys

import h5py
import matplotlib
import numpy as np
import pandas as pd
import pytest

import clustersim_analysis as ca

matplotlib.use("Agg")
STR = h5py.string_dtype("utf-8")

BREAKDOWN = ["compute_time_s", "exposed_tp_comm_s", "exposed_pp_comm_s", "exposed_dp_comm_s", "bubble_time_s",
             "optimizer_time_s"]


def _column(group, name, values, units, description="test column"):
    values = list(values)
    if values and isinstance(values[0], str):
        ds = group.create_dataset(name, data=np.array(values, dtype=object), dtype=STR)
    else:
        ds = group.create_dataset(name, data=np.asarray(values))
    ds.attrs["units"] = units
    ds.attrs["description"] = description
    return ds


def _root_attrs(f, command_line="clustersim run x.toml"):
    f.attrs["software_version"] = "0.1.0"
    f.attrs["git_sha"] = "abc1234"
    f.attrs["schema_version"] = np.int64(1)
    f.attrs["command_line"] = command_line
    f.attrs["seed"] = np.uint64(42)
    f.attrs["scenario_toml"] = 'name = "test"\n'


@pytest.fixture
def run_file(tmp_path):
    """A `clustersim run` file: two runs, stages and replications of run 0."""
    path = tmp_path / "run.h5"
    with h5py.File(path, "w") as f:
        _root_attrs(f)
        s = f.create_group("summary")
        _column(s, "scenario", ["one-zone", "two-zones"], "")
        _column(s, "tensor_parallel", np.array([8, 8], dtype=np.int64), "1")
        _column(s, "pipeline_parallel", np.array([4, 4], dtype=np.int64), "1")
        _column(s, "data_parallel", np.array([2, 2], dtype=np.int64), "1")
        parts = [[10.0, 2.0, 0.1, 0.5, 1.0, 0.05], [10.0, 2.0, 1.1, 0.9, 1.0, 0.05]]
        for k, col in enumerate(BREAKDOWN):
            _column(s, col, [p[k] for p in parts], "s")
        _column(s, "step_time_s", [sum(p) for p in parts], "s")
        _column(s, "memory_capacity_bytes", [80e9, 80e9], "B")
        _column(s, "cost_mean_usd", [100.0, 90.0], "USD")
        _column(s, "time_to_train_mean_h", [10.0, 12.0], "h")
        _column(s, "cross_zone_penalty", [np.nan, 0.15], "1")
        st = f.create_group("runs/0/stages")
        st.attrs["description"] = "per pipeline stage"
        _column(st, "stage", np.arange(4, dtype=np.int64), "1")
        for col in BREAKDOWN:
            _column(st, col, [1.0, 1.0, 1.0, 1.0], "s")
        for col, v in [("weights_bytes", 10e9), ("gradients_bytes", 10e9), ("optimizer_bytes", 20e9),
                       ("activations_bytes", 15e9)]:
            _column(st, col, [v] * 4, "B")
        _column(st, "total_memory_bytes", [60e9, 58e9, 57e9, 56e9], "B")
        rep = f.create_group("runs/0/replications")
        rep.attrs["description"] = "per replication"
        _column(rep, "replication", np.arange(3, dtype=np.int64), "1")
        _column(rep, "wall_time_s", [3600.0, 3700.0, 3650.0], "s")
        _column(rep, "cost_usd", [10.0, 11.0, 10.5], "USD")
    return path


def _sweep_file(path, tensor, pipeline, step):
    n = len(step)
    with h5py.File(path, "w") as f:
        _root_attrs(f, "clustersim sweep s.toml")
        s = f.create_group("summary")
        names = ["run_index", "seed", "status", "reason", "parallelism_tensor", "parallelism_pipeline",
                 "step_time_s", "peak_memory_bytes"]
        kinds = ["index", "index", "index", "index", "parameter", "parameter", "result", "result"]
        _column(s, "run_index", np.arange(n, dtype=np.int64), "1")
        _column(s, "seed", np.arange(n, dtype=np.int64) * 7 + 1, "1")
        status = ["ok" if np.isfinite(v) else "invalid" for v in step]
        _column(s, "status", status, "")
        _column(s, "reason", ["" if x == "ok" else "bad layout" for x in status], "")
        _column(s, "parallelism_tensor", np.asarray(tensor, dtype=float), "GPUs")
        _column(s, "parallelism_pipeline", np.asarray(pipeline, dtype=float), "stages")
        _column(s, "step_time_s", np.asarray(step, dtype=float), "s")
        _column(s, "peak_memory_bytes", np.full(n, 50e9), "B")
        c = f.create_group("sweep/columns")
        _column(c, "name", names, "")
        _column(c, "kind", kinds, "")
    return path


@pytest.fixture
def grid_sweep(tmp_path):
    t, p = np.meshgrid([1, 2, 4], [1, 2], indexing="ij")
    step = (10.0 / t + p).ravel()
    step[1] = np.nan  # one invalid point
    return _sweep_file(tmp_path / "grid.h5", t.ravel(), p.ravel(), step)


@pytest.fixture
def ragged_sweep(tmp_path):
    return _sweep_file(tmp_path / "ragged.h5", [1, 2, 2, 4], [1, 1, 2, 1], [5.0, 4.0, 3.0, 2.0])


def _check_axes(fig):
    assert isinstance(fig, matplotlib.figure.Figure)
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert axes
    for ax in axes:
        assert ax.get_xlabel(), "x axis without label"
        assert ax.get_ylabel(), "y axis without label"
        assert ax.get_title(), "axes without title"
    return axes[0]


def test_load_summary_decodes_strings_and_units(run_file):
    df = ca.load_summary(run_file)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 2
    assert list(df["scenario"]) == ["one-zone", "two-zones"]
    assert isinstance(df["scenario"][0], str)
    assert df["tensor_parallel"].dtype == np.int64
    assert df.attrs["units"]["step_time_s"] == "s"
    assert df.attrs["units"]["scenario"] == ""
    assert df.attrs["units"]["memory_capacity_bytes"] == "B"
    assert df.attrs["descriptions"]["step_time_s"] == "test column"
    assert np.isnan(df["cross_zone_penalty"][0])
    assert df["step_time_s"][1] == pytest.approx(15.05)


def test_load_stages_and_replications(run_file):
    st = ca.load_stages(run_file)
    assert list(st["stage"]) == [0, 1, 2, 3]
    assert st.attrs["units"]["total_memory_bytes"] == "B"
    assert st.attrs["description"] == "per pipeline stage"
    rep = ca.load_replications(run_file, run=0)
    assert len(rep) == 3
    assert rep.attrs["units"]["cost_usd"] == "USD"
    with pytest.raises(KeyError):
        ca.load_stages(run_file, run=1)


def test_metadata(run_file):
    meta = ca.metadata(run_file)
    assert meta["schema_version"] == 1
    assert meta["seed"] == 42
    assert meta["git_sha"] == "abc1234"
    assert isinstance(meta["scenario_toml"], str)


def test_sweep_summary_order_and_roles(ragged_sweep):
    df = ca.load_summary(ragged_sweep)
    assert list(df.columns[:4]) == ["run_index", "seed", "status", "reason"]
    assert ca.swept_columns(df) == ["parallelism_tensor", "parallelism_pipeline"]
    assert df.attrs["roles"]["step_time_s"] == "result"


def test_sweep_xarray_grid(grid_sweep):
    ds = ca.load_sweep_xarray(grid_sweep)
    assert ds.attrs["grid"] == 1
    assert dict(ds.sizes) == {"parallelism_tensor": 3, "parallelism_pipeline": 2}
    assert ds["step_time_s"].attrs["units"] == "s"
    assert ds["parallelism_tensor"].attrs["units"] == "GPUs"
    v = ds["step_time_s"].sel(parallelism_tensor=4.0, parallelism_pipeline=2.0).item()
    assert v == pytest.approx(4.5)
    assert np.isnan(ds["step_time_s"].sel(parallelism_tensor=1.0, parallelism_pipeline=2.0).item())
    assert ds["status"].sel(parallelism_tensor=1.0, parallelism_pipeline=2.0).item() == "invalid"


def test_sweep_xarray_not_a_grid(ragged_sweep, run_file):
    ds = ca.load_sweep_xarray(ragged_sweep)
    assert ds.attrs["grid"] == 0
    assert list(ds.sizes) == ["run_index"]
    assert "parallelism_tensor" in ds.coords
    ds2 = ca.load_sweep_xarray(run_file)
    assert list(ds2.sizes) == ["row"]


def test_plot_step_breakdown(run_file):
    df = ca.load_summary(run_file)
    fig = ca.plot_step_breakdown(df)
    ax = _check_axes(fig)
    assert "(s)" in ax.get_ylabel()
    heights = {}
    for patch in ax.patches:
        heights.setdefault(round(patch.get_x(), 3), 0.0)
        heights[round(patch.get_x(), 3)] += patch.get_height()
    assert sorted(heights.values()) == pytest.approx(sorted(df["step_time_s"]))


def test_plot_step_breakdown_counts_every_part():
    """A MoE stage's exposed all-to-all, CP exchange and host waits are bars too: the bars reach the step time;
    a part zero in every bar stays out of the legend; each part has its critical-path colour."""
    stages = pd.DataFrame({"stage": [0, 1], "compute_time_s": [10.0, 5.0], "exposed_ep_comm_s": [0.0, 6.0],
                           "exposed_cp_comm_s": [0.5, 0.5], "exposed_host_s": [0.0, 0.25],
                           "exposed_tp_comm_s": [0.0, 0.0], "bubble_time_s": [4.0, 3.25],
                           "optimizer_time_s": [0.5, 0.0]})
    fig = ca.plot_step_breakdown(stages, labels=["stage 0", "stage 1"], horizontal=False)
    ax = fig.axes[0]
    heights = {}
    for patch in ax.patches:
        heights[round(patch.get_x(), 3)] = heights.get(round(patch.get_x(), 3), 0.0) + patch.get_height()
    assert sorted(heights.values()) == pytest.approx([15.0, 15.0])
    handles, labels = ax.get_legend_handles_labels()
    assert labels == ["compute", "exposed CP comm", "exposed EP comm (all-to-all)", "waiting on the host",
                      "pipeline bubble", "optimizer"]
    colours = {label: color for _, label, color in ca.CRITICAL_PATH_PARTS}
    assert matplotlib.colors.to_hex(handles[2].patches[0].get_facecolor()) == colours["exposed EP comm (all-to-all)"]


def test_plot_sweep_heatmap(grid_sweep):
    df = ca.load_summary(grid_sweep)
    fig = ca.plot_sweep_heatmap(df, "parallelism_tensor", "parallelism_pipeline", "step_time_s")
    ax = _check_axes(fig)
    assert "(GPUs)" in ax.get_xlabel()
    assert "(stages)" in ax.get_ylabel()
    assert len(fig.axes) == 2 and "(s)" in fig.axes[1].get_ylabel()


def test_pareto(run_file):
    df = ca.load_summary(run_file)
    assert list(ca.pareto_front(df, "time_to_train_mean_h", "cost_mean_usd")) == [True, True]
    df2 = pd.DataFrame({"t": [1.0, 2.0, 3.0, 2.5], "c": [3.0, 1.0, 2.0, 0.5]})
    assert list(ca.pareto_front(df2, "t", "c")) == [True, True, False, True]
    fig = ca.plot_pareto(df, "time_to_train_mean_h", "cost_mean_usd")
    ax = _check_axes(fig)
    assert "(h)" in ax.get_xlabel() and "(USD)" in ax.get_ylabel()


def test_plot_memory(run_file):
    st = ca.load_stages(run_file)
    fig = ca.plot_memory(st, 80e9)
    ax = _check_axes(fig)
    assert "GiB" in ax.get_ylabel()
    tops = {}
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2)
        tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
    assert tops[0] == pytest.approx(60e9 / 1024**3)
    assert any(abs(line.get_ydata()[0] - 80e9 / 1024**3) < 1e-9 for line in ax.get_lines())


def test_plot_timeline(tmp_path):
    events = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "stage 0 (GPUs 0-7)"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "stage 1 (GPUs 8-15)"}},
        {"name": "F mb 0", "cat": "compute", "ph": "X", "ts": 0.0, "dur": 1000.0, "pid": 1, "tid": 1},
        {"name": "send", "cat": "p2p", "ph": "X", "ts": 1000.0, "dur": 100.0, "pid": 1, "tid": 2},
        {"name": "F mb 0", "cat": "compute", "ph": "X", "ts": 1100.0, "dur": 1000.0, "pid": 2, "tid": 3},
        {"name": "grad sync", "cat": "dp_sync", "ph": "X", "ts": 2100.0, "dur": 500.0, "pid": 2, "tid": 4},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"otherData": {"time_unit": "us"}, "traceEvents": events}))
    fig = ca.plot_timeline(path)
    ax = _check_axes(fig)
    assert "(s)" in ax.get_xlabel()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "stage 0 compute" in labels and "stage 1 DP sync" in labels
    assert ax.get_xlim()[1] >= 2600e-6


def test_import_keeps_the_backend():
    """Importing the package chooses no matplotlib backend (a notebook's inline one must survive the import); a
    fresh interpreter, as this module already set Agg."""
    code = ("import matplotlib; matplotlib.use('svg'); import matplotlib.pyplot; import clustersim_analysis; "
            "print(matplotlib.get_backend())")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "svg"
