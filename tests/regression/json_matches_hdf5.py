"""`clustersim run --format json` against the HDF5 file the same run writes: every /summary column of the
results file is in the JSON object under the same name, with the same value (floats exactly: the JSON holds the
shortest text that reads back to the same double; NaN as null), units and description, and stdout is nothing but
the JSON object (it parses with json.loads, as `python3 -m json.tool` does).

Usage: json_matches_hdf5.py CLUSTERSIM SCENARIO... (run by CTest with Debian's /usr/bin/python3 and h5py).
"""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py


def check(binary: str, scenario: str, workdir: Path) -> None:
    h5 = workdir / (Path(scenario).stem + ".h5")
    done = subprocess.run([binary, "run", scenario, "--format", "json", "-o", str(h5)],
                          capture_output=True, text=True, check=True)
    doc = json.loads(done.stdout)
    assert doc["command"] == "run", doc["command"]
    values, units, descriptions = (doc["summary"][k] for k in ("values", "units", "descriptions"))
    with h5py.File(h5, "r") as f:
        summary = f["summary"]
        names = list(summary.keys())
        assert set(names) == set(values), (scenario, set(names) ^ set(values))
        for name in names:
            dataset = summary[name]
            stored = dataset[0]
            got = values[name]
            if isinstance(stored, bytes):
                assert got == stored.decode(), (scenario, name, got, stored)
            elif dataset.dtype.kind == "f":
                if math.isnan(stored):
                    assert got is None, (scenario, name, got)
                else:
                    assert float(got) == float(stored), (scenario, name, got, stored)
            else:
                assert got == int(stored), (scenario, name, got, stored)
            attrs = dataset.attrs
            if "units" in attrs:
                unit = attrs["units"]
                assert units[name] == (unit.decode() if isinstance(unit, bytes) else unit), (scenario, name)
            if "description" in attrs:
                text = attrs["description"]
                assert descriptions[name] == (text.decode() if isinstance(text, bytes) else text), (scenario, name)
    print(f"{scenario}: {len(names)} columns match")


def main() -> None:
    binary, scenarios = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in scenarios:
            check(binary, scenario, Path(tmp))


if __name__ == "__main__":
    main()
