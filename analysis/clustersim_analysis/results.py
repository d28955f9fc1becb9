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
    "load_sweep_xarray",
    "metadata",
    "swept_columns",
]


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
        if group not in f:
            raise KeyError(f"{os.fspath(path)}: no group /{group}")
        return _read_group(f[group])


def load_summary(path: str | os.PathLike) -> pd.DataFrame:
    """/summary as a DataFrame: one row per run (or sweep point), strings decoded to str.

    df.attrs["units"] maps column -> units ("1" dimensionless, "" for labels), df.attrs["descriptions"]
    column -> description; for sweep files df.attrs["roles"] maps column -> index / parameter / result.
    """
    with h5py.File(path, "r") as f:
        df = _read_group(f["summary"])
        df = _order_summary(f, df)
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
