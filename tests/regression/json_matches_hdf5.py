"""`clustersim run --format json` and `clustersim collective --format json` against the HDF5 file the same
command writes: every /summary column of the results file is in the JSON object under the same name, with the
same values (floats exactly: the JSON holds the shortest text that reads back to the same double; NaN as null),
units and description, and stdout is nothing but the JSON object (it parses with json.loads, as
`python3 -m json.tool` does). A run's one row is scalars; the collective's rows and the sweep's points are
arrays, and the sweep's ranking lists the simulated points, those that fit first, each group by its objective.

Usage: json_matches_hdf5.py CLUSTERSIM SCENARIO... (a path with /sweeps/ is run as a sweep; run by CTest with
Debian's /usr/bin/python3 and h5py).
"""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py


def same(stored, got, where) -> None:
    """One HDF5 element against its JSON value."""
    if isinstance(stored, bytes):
        assert got == stored.decode(), (where, got, stored)
    elif isinstance(stored, float) or getattr(stored, "dtype", None) is not None and stored.dtype.kind == "f":
        if math.isnan(stored):
            assert got is None, (where, got)
        else:
            assert float(got) == float(stored), (where, got, stored)
    else:
        assert got == int(stored), (where, got, stored)


def compare(h5: Path, section: dict, scalar: bool, label: str) -> None:
    values, units, descriptions = (section[k] for k in ("values", "units", "descriptions"))
    with h5py.File(h5, "r") as f:
        summary = f["summary"]
        names = list(summary.keys())
        assert set(names) == set(values), (label, set(names) ^ set(values))
        for name in names:
            dataset = summary[name]
            got = values[name]
            if scalar:
                same(dataset[0], got, (label, name))
            else:
                assert len(got) == len(dataset), (label, name, len(got), len(dataset))
                for i, stored in enumerate(dataset[:]):
                    same(stored, got[i], (label, name, i))
            for attr, table in (("units", units), ("description", descriptions)):
                if attr in dataset.attrs:
                    text = dataset.attrs[attr]
                    assert table[name] == (text.decode() if isinstance(text, bytes) else text), (label, name, attr)
    print(f"{label}: {len(names)} columns match")


def check(binary: str, scenario: str, workdir: Path) -> None:
    h5 = workdir / (Path(scenario).stem + ".h5")
    done = subprocess.run([binary, "run", scenario, "--format", "json", "-o", str(h5)],
                          capture_output=True, text=True, check=True)
    doc = json.loads(done.stdout)
    assert doc["command"] == "run", doc["command"]
    compare(h5, doc["summary"], True, scenario)


def check_collective(binary: str, workdir: Path) -> None:
    h5 = workdir / "collective.h5"
    done = subprocess.run([binary, "collective", "--vm-size", "Standard_ND96isr_H100_v5", "--nodes", "2",
                           "--op", "all_reduce", "--min-bytes", "1K", "--max-bytes", "64M", "--step-factor", "4",
                           "--format", "json", "-o", str(h5)], capture_output=True, text=True, check=True)
    doc = json.loads(done.stdout)
    assert doc["command"] == "collective", doc["command"]
    compare(h5, doc["rows"], False, "collective all_reduce on 2 x ND H100 v5")


def check_sweep(binary: str, sweep: str, workdir: Path) -> None:
    h5 = workdir / "sweep.h5"
    done = subprocess.run([binary, "sweep", sweep, "-j", "2", "--format", "json", "-o", str(h5)],
                          capture_output=True, text=True, check=True)
    doc = json.loads(done.stdout)
    assert doc["command"] == "sweep", doc["command"]
    compare(h5, doc["points"], False, sweep)
    values = doc["points"]["values"]
    column = {"step_time": "step_time_s", "time_to_train": "time_to_train_mean_h",
              "cost_per_token": ("job_usd_per_million_tokens" if "job_usd_per_million_tokens" in values
                                 else "usd_per_million_tokens")}[doc["objective"]]
    step = dict(zip(values["run_index"], values["step_time_s"]))
    objective = dict(zip(values["run_index"], values[column]))
    fits = dict(zip(values["run_index"], values["status"]))
    ranking = doc["ranking"]
    assert len(ranking) == sum(1 for t in step.values() if t is not None), len(ranking)
    order = [(fits[i] != "ok", objective[i] is None, objective[i] or 0.0) for i in ranking]
    assert order == sorted(order), f"the ranking is not: those that fit first, each by {column}"


def main() -> None:
    binary, scenarios = sys.argv[1], sys.argv[2:]
    sweeps = [s for s in scenarios if "/sweeps/" in s]
    scenarios = [s for s in scenarios if s not in sweeps]
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in scenarios:
            check(binary, scenario, Path(tmp))
        check_collective(binary, Path(tmp))
        for sweep in sweeps:
            check_sweep(binary, sweep, Path(tmp))


if __name__ == "__main__":
    main()
