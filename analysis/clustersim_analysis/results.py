"""Loaders for clustersim results files (HDF5 schema version 1, docs/hdf5-schema.md)."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pandas as pd

__all__ = [
    "load_summary",
    "load_stages",
    "load_replications",
    "load_table",
    "read_what_if",
    "load_sweep_xarray",
    "MissingGroupError",
    "metadata",
    "swept_columns",
]


class MissingGroupError(KeyError):
    """A results file without the group asked for. str() is the plain message ("FILE: no group /NAME ..."),
    not KeyError's quoted repr; a KeyError, so `except KeyError` still catches it."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _require_group(f: h5py.File, path: str | os.PathLike, group: str, hint: str = "") -> h5py.Group:
    """f[group], or MissingGroupError naming the file and the group (and what writes it, when hint is given)."""
    if group not in f or not isinstance(f[group], h5py.Group):
        raise MissingGroupError(f"{os.fspath(path)}: no group /{group}" + (f" ({hint})" if hint else ""))
    return f[group]


def _decode(value):
    """An attribute or string value as str (h5py may give bytes or numpy scalars)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read_column(ds: h5py.Dataset) -> np.ndarray:
    if h5py.check_string_dtype(ds.dtype) is not None:
        return np.asarray(ds.asstr()[()], dtype=object)
    return ds[()]


def _read_group(group: h5py.Group) -> pd.DataFrame:
    """A group of equal-length 1-D columns as a DataFrame; units and descriptions in df.attrs."""
    columns = {}
    units = {}
    descriptions = {}
    for name, ds in group.items():
        if not isinstance(ds, h5py.Dataset):
            continue
        columns[name] = _read_column(ds)
        units[name] = _decode(ds.attrs.get("units", ""))
        descriptions[name] = _decode(ds.attrs.get("description", ""))
    df = pd.DataFrame(columns)
    df.attrs["units"] = units
    df.attrs["descriptions"] = descriptions
    if "description" in group.attrs:
        df.attrs["description"] = _decode(group.attrs["description"])
    return df


def _order_summary(f: h5py.File, df: pd.DataFrame) -> pd.DataFrame:
    """Put a sweep file's columns in the documented order (/sweep/columns); roles in df.attrs."""
    if "sweep/columns/name" not in f or "sweep/columns/kind" not in f:
        return df
    names = list(f["sweep/columns/name"].asstr()[()])
    kinds = list(f["sweep/columns/kind"].asstr()[()])
    order = [n for n in names if n in df.columns] + [c for c in df.columns if c not in names]
    attrs = dict(df.attrs)
    df = df[order]
    df.attrs.update(attrs)
    df.attrs["roles"] = dict(zip(names, kinds))
    return df


def load_table(path: str | os.PathLike, group: str) -> pd.DataFrame:
    """Any column group of the file (e.g. "summary", "runs/0/stages") as a DataFrame."""
    with h5py.File(path, "r") as f:
        return _read_group(_require_group(f, path, group))


def load_summary(path: str | os.PathLike) -> pd.DataFrame:
    """/summary as a DataFrame: one row per run (or sweep point), strings decoded to str.

    df.attrs["units"] maps column -> units ("1" dimensionless, "" for labels), df.attrs["descriptions"]
    column -> description; for sweep files df.attrs["roles"] maps column -> index / parameter / result.
    """
    with h5py.File(path, "r") as f:
        df = _read_group(_require_group(f, path, "summary"))
        df = _order_summary(f, df)
    return df


# /what_if's documented column order (training, then serving); other columns follow in file order.
_WHAT_IF_ORDER = [
    "perturbation", "description",
    "step_time_s", "step_time_change",
    "ttft_p99_s", "ttft_p99_change", "tpot_p99_s", "tpot_p99_change", "output_tokens_per_s",
    "usd_per_million_tokens", "usd_per_million_tokens_change",
    "rank_step_time", "rank_ttft", "rank_cost",
]


def read_what_if(path: str | os.PathLike) -> pd.DataFrame:
    """/what_if (`clustersim run --what-if`) as a DataFrame: one row per perturbation, row 0 the baseline.

    Training columns: perturbation, description (str), step_time_s (s), step_time_change (1: step / baseline
    step - 1), usd_per_million_tokens (USD), usd_per_million_tokens_change (1), rank_step_time, rank_cost (int64:
    the perturbation's rank by step time and by cost per token, 0 for the baseline). Serving: ttft_p99_s, ttft_p99_change, tpot_p99_s, tpot_p99_change,
    output_tokens_per_s, usd_per_million_tokens(_change), rank_ttft, rank_cost. Columns in that order, rows in
    file order. df.attrs: "units", "descriptions" (as load_summary), "kind" ("training" when step_time_change
    is present, "serving" when ttft_p99_change is, else ""), "scenario" (/summary's first scenario, or "").

    Raises MissingGroupError (a KeyError) naming the file when it has no /what_if group (a run without
    --what-if), and OSError when the file cannot be opened.
    """
    with h5py.File(path, "r") as f:
        group = _require_group(f, path, "what_if", "written by `clustersim run --what-if`")
        df = _read_group(group)
        scenario = ""
        if "summary/scenario" in f and len(f["summary/scenario"]) > 0:
            scenario = _decode(f["summary/scenario"].asstr()[0])
    order = [c for c in _WHAT_IF_ORDER if c in df.columns] + [c for c in df.columns if c not in _WHAT_IF_ORDER]
    attrs = dict(df.attrs)
    df = df[order]
    df.attrs.update(attrs)
    df.attrs["kind"] = ("training" if "step_time_change" in df.columns
                        else "serving" if "ttft_p99_change" in df.columns else "")
    df.attrs["scenario"] = scenario
    return df


def load_stages(path: str | os.PathLike, run: int = 0) -> pd.DataFrame:
    """/runs/<run>/stages: one row per pipeline stage (timing breakdown and memory per GPU)."""
    return load_table(path, f"runs/{int(run)}/stages")


def load_replications(path: str | os.PathLike, run: int = 0) -> pd.DataFrame:
    """/runs/<run>/replications: one row per Monte Carlo replication of a [job]."""
    return load_table(path, f"runs/{int(run)}/replications")


def metadata(path: str | os.PathLike) -> dict:
    """The root attributes (software_version, git_sha, schema_version, command_line, seed, scenario_toml)."""
    with h5py.File(path, "r") as f:
        return {k: _decode(v) for k, v in f.attrs.items()}


def swept_columns(df: pd.DataFrame) -> list[str]:
    """The swept-parameter columns of a sweep summary (role "parameter"), in file order."""
    roles = df.attrs.get("roles", {})
    return [c for c in df.columns if roles.get(c) == "parameter"]


def _is_grid(df: pd.DataFrame, params: list[str]) -> bool:
    if not params or len(df) == 0:
        return False
    keys = df[params]
    if keys.isna().any().any() or keys.duplicated().any():
        return False
    size = 1
    for c in params:
        size *= keys[c].nunique()
    return size == len(df)


def load_sweep_xarray(path: str | os.PathLike):
    """/summary as an xarray Dataset.

    For a grid sweep (every combination of the swept values present exactly once) the swept columns are the
    dimensions (coordinates) and every other column a data variable over them. Otherwise (a zip, a layout
    search with parallelism = "auto", a plain run file) the dimension is run_index (or row), and the swept
    columns are non-dimension coordinates along it. Units and descriptions are in each variable's attrs.
    """
    import xarray as xr

    df = load_summary(path)
    units = df.attrs.get("units", {})
    descriptions = df.attrs.get("descriptions", {})
    params = swept_columns(df)
    if _is_grid(df, params):
        ds = xr.Dataset.from_dataframe(df.set_index(params))
    else:
        index = "run_index" if "run_index" in df.columns else None
        frame = df.set_index(index) if index else df.rename_axis("row")
        ds = xr.Dataset.from_dataframe(frame)
        ds = ds.set_coords([p for p in params if p in ds.variables])
    for name in ds.variables:
        if name in units:
            ds[name].attrs["units"] = units[name]
        if name in descriptions:
            ds[name].attrs["description"] = descriptions[name]
    ds.attrs.update({k: v for k, v in metadata(path).items() if isinstance(v, (str, int, float))})
    ds.attrs["grid"] = int(_is_grid(df, params))
    return ds
