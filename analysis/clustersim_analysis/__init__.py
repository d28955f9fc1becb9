"""clustersim_analysis: load clustersim HDF5 results (docs/hdf5-schema.md) into pandas/xarray and plot them.

Run with Debian's Python (/usr/bin/python3) and its python3-h5py, -numpy, -pandas, -matplotlib, -xarray.
"""

from .results import (
    load_summary,
    load_stages,
    load_replications,
    load_table,
    read_what_if,
    load_sweep_xarray,
    MissingGroupError,
    metadata,
    swept_columns,
)
from .plots import (
    plot_step_breakdown,
    plot_sweep_heatmap,
    plot_pareto,
    plot_memory,
    plot_timeline,
    pareto_front,
    BREAKDOWN_COLUMNS,
    CRITICAL_PATH_PARTS,
    critical_path_bar,
    tornado,
)

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
    "plot_step_breakdown",
    "plot_sweep_heatmap",
    "plot_pareto",
    "plot_memory",
    "plot_timeline",
    "pareto_front",
    "BREAKDOWN_COLUMNS",
    "CRITICAL_PATH_PARTS",
    "critical_path_bar",
    "tornado",
]
