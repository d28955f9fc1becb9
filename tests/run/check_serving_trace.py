"""A serving run's Chrome trace (clustersim run S.toml --trace T.json; issue 30): valid JSON (json.load, as
Perfetto and chrome://tracing read it), one complete event per engine iteration (as many as /summary/iterations),
each track's events disjoint and in time order; with --trace-every N, iterations 0, N, 2N, ...

usage: check_serving_trace.py CLUSTERSIM SCENARIO.toml [--set ...]"""
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict


def run(clustersim, scenario, extra, trace):
    out = subprocess.run([clustersim, "run", scenario, "--format", "json", "--trace", trace] + extra,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["summary"]["values"]["iterations"]


def main():
    clustersim, scenario, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        iterations = run(clustersim, scenario, extra, trace)
        with open(trace) as f:
            doc = json.load(f)
        events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        assert len(events) == iterations, (len(events), iterations)
        assert doc["otherData"]["iterations"] == iterations
        assert sorted(e["args"]["iteration"] for e in events) == list(range(iterations))
        tracks = defaultdict(list)
        for e in events:
            assert e["dur"] >= 0 and e["args"]["sequences"] >= 1, e
            tracks[e["tid"]].append((e["ts"], e["dur"]))
        for tid, spans in tracks.items():
            for (a, da), (b, _) in zip(spans, spans[1:]):
                assert b >= a + da - 1e-3, (tid, a, da, b)  # disjoint, in order (to the microsecond's decimals)
        names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
        assert len(names) == len(tracks), (names, len(tracks))
        iterations7 = run(clustersim, scenario, extra + ["--trace-every", "7"], trace)
        with open(trace) as f:
            kept = [e["args"]["iteration"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
        assert iterations7 == iterations and kept == list(range(0, iterations, 7)), (len(kept), iterations)
        print(f"{scenario}: {iterations} iterations, {len(tracks)} tracks; every 7th: {len(kept)} events")


if __name__ == "__main__":
    main()
