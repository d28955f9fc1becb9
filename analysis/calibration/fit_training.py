#!/usr/bin/python3
"""Fit a device's sustained-in-training fractions (catalog keys training_matmul_fraction and
training_memory_fraction) to published training runs, and cross-validate the fit between papers.

What is fitted (models/compute/compute_model.hpp, docs/model.md "Calibration"):
  R_mm  = measured matmul maximum (MAMF, hardware.csv) * training_matmul_fraction
  BW    = measured stream-triad bandwidth (hardware.csv) * training_memory_fraction
Two numbers per device type, the same for every scenario: how much of a microbenchmark's best case the
GEMMs and the memory-bound kernels of a real training step sustain (sustained clocks under the step's power
draw; framework kernels with reductions and RNG against a streaming triad).

Method: every modelled row of scenarios/validation/ on the device (DeepSpeed ZeRO-3 rows, which the model
does not cover, are skipped) is run by `clustersim run --catalog TMP` on a grid of the two fractions; the
fit minimises the mean absolute % error, ties broken by the max. Leave-one-paper-out: fit on the rows of all
papers but one, report the error on the held-out paper's rows, so the calibration is seen to carry over
between software generations (Megatron-LM 2021 vs 2022) rather than to fit one table.

Usage: /usr/bin/python3 analysis/calibration/fit_training.py [--binary build/sim/cli/clustersim]
         [--device A100-SXM4-80GB] [--step 0.01]
Prints the grid optimum, its per-row errors and the cross-validation table. Needs only the standard library.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = re.compile(r"^reference .* predicted: ([-+][0-9.]+) %", re.M)


def rows_for(device_vms):
    """Validation scenarios on one of `device_vms`, without the rows the model does not cover."""
    out = []
    folder = os.path.join(ROOT, "scenarios", "validation")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".toml") or "zero3" in name:
            continue
        text = open(os.path.join(folder, name)).read()
        vm = re.search(r'^vm_size = "([^"]+)"', text, re.M).group(1)
        if vm in device_vms:
            out.append(os.path.join(folder, name))
    return out


def paper_of(path):
    base = os.path.basename(path)
    return "Korthikanti 2022" if base.startswith("korthikanti") else "Megatron SC'21"


def vms_of(catalog, device):
    text = open(os.path.join(catalog, "vm_sizes.toml")).read()
    vms, current = set(), None
    for line in text.splitlines():
        m = re.match(r'^\["?([^"\]]+)"?\]', line)
        if m:
            current = m.group(1)
        m = re.match(r'^device = "([^"]+)"', line)
        if m and current and m.group(1) == device:
            vms.add(current)
    return vms


def write_catalog(source, target, device, matmul, memory):
    """Copy of the catalog with the device's two fractions set."""
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        shutil.copy(os.path.join(source, name), os.path.join(target, name))
    path = os.path.join(target, "devices.toml")
    lines, out, inside = open(path).read().splitlines(), [], False
    for line in lines:
        if re.match(r"^\[", line):
            inside = line.strip() == f'["{device}"]'
            out.append(line)
            if inside:
                out.append(f"training_matmul_fraction = {matmul}")
                out.append(f"training_memory_fraction = {memory}")
            continue
        if inside and re.match(r"^training_(matmul|memory)_fraction\s*=", line):
            continue
        out.append(line)
    open(path, "w").write("\n".join(out) + "\n")


def errors(binary, catalog, rows):
    def one(path):
        run = subprocess.run([binary, "run", path, "--catalog", catalog], capture_output=True, text=True)
        m = REFERENCE.search(run.stdout)
        if run.returncode != 0 or not m:
            sys.exit(f"fit_training: {path}: {run.stderr.strip() or 'no reference line'}")
        return float(m.group(1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(one, rows))


def score(errs):
    a = [abs(e) for e in errs]
    return (sum(a) / len(a), max(a))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "sim", "cli", "clustersim"))
    parser.add_argument("--device", default="A100-SXM4-80GB")
    parser.add_argument("--step", type=float, default=0.01)
    parser.add_argument("--matmul", default="0.80:1.00", help="range lo:hi of training_matmul_fraction")
    parser.add_argument("--memory", default="0.70:1.00", help="range lo:hi of training_memory_fraction")
    args = parser.parse_args()

    source = os.path.join(ROOT, "models", "hardware", "catalog")
    rows = rows_for(vms_of(source, args.device))
    if not rows:
        sys.exit(f"fit_training: no validation rows on {args.device}")

    def grid(spec):
        lo, hi = (float(x) for x in spec.split(":"))
        n = int(round((hi - lo) / args.step))
        return [round(lo + i * args.step, 4) for i in range(n + 1)]

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mm in grid(args.matmul):
            for mem in grid(args.memory):
                cat = os.path.join(tmp, f"{mm}-{mem}")
                write_catalog(source, cat, args.device, mm, mem)
                results[(mm, mem)] = errors(args.binary, cat, rows)
                shutil.rmtree(cat)

    papers = sorted({paper_of(r) for r in rows})
    idx = {p: [i for i, r in enumerate(rows) if paper_of(r) == p] for p in papers}

    def best(subset):
        return min(results, key=lambda k: score([results[k][i] for i in subset]))

    every = list(range(len(rows)))
    fit = best(every)
    print(f"{args.device}: {len(rows)} rows, grid step {args.step}")
    print(f"fit on all rows: training_matmul_fraction = {fit[0]}, training_memory_fraction = {fit[1]}")
    for i, r in enumerate(rows):
        print(f"  {os.path.basename(r)[:-5]:<52} {results[fit][i]:+6.1f} %")
    m, x = score(results[fit])
    print(f"  mean |error| {m:.1f} %, max {x:.1f} %")
    if (1.0, 1.0) in results:
        m1, x1 = score(results[(1.0, 1.0)])
        print(f"uncalibrated (1, 1): mean |error| {m1:.1f} %, max {x1:.1f} %")
    print("leave one paper out (fit on the others, error on the held-out paper's rows):")
    print(f"  {'held out':<18} {'fit matmul':>10} {'fit memory':>10} {'held-out mean':>14} {'held-out max':>13}")
    for p in papers:
        train = [i for i in every if i not in idx[p]]
        k = best(train)
        hm, hx = score([results[k][i] for i in idx[p]])
        print(f"  {p:<18} {k[0]:>10} {k[1]:>10} {hm:>13.1f}% {hx:>12.1f}%")


if __name__ == "__main__":
    main()
