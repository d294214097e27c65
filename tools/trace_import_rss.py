"""Peak memory of a trace import against the trace's size (issue 20).

Builds Kineto traces of k copies of the profiled H200 step (tests/data/traces/kineto: each copy's
events shifted past the previous, so the importer reads every event and replays the last step),
runs `clustertwin run` on each in a fresh process, and prints the JSON size, the process's peak
RSS (getrusage of the child), the RSS of the same command on the 1-copy trace, and the ratio of
the growth to the growth in bytes.

    /usr/bin/python3 tools/trace_import_rss.py [--copies 1,4,16,32] [--dir /tmp/ct_rss]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TRACE = os.path.join(ROOT, "tests", "data", "traces", "kineto", "kineto_gpt1.3b_h200.json.gz")


def build(copies: int, path: str) -> int:
    with gzip.open(TRACE) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    times = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(times) - min(times) + 1000.0
    out = []
    for k in range(copies):
        for e in events:
            e2 = dict(e)
            if isinstance(e2.get("ts"), (int, float)):
                e2["ts"] = e2["ts"] + k * span
            out.append(e2)
    doc["traceEvents"] = out
    with open(path, "w") as f:
        json.dump(doc, f)
    return os.path.getsize(path)


def peak_rss(trace: str, workdir: str) -> int:
    scenario = os.path.join(workdir, "scenario.json")
    with open(scenario, "w") as f:
        json.dump({"name": "rss", "cluster": {"gpu": "H200-SXM", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1},
                   "network": {"mode": "analytical"}, "trace": {"format": "kineto", "path": trace}}, f)
    code = ("import resource, sys; from clustertwin.cli import main; rc = main(['run', sys.argv[1], '--json']);"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    r = subprocess.run(["/usr/bin/python3", "-c", code, scenario], cwd=ROOT, env=env, capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        sys.exit(f"run failed: {r.stderr[-2000:]}")
    return int(r.stderr.strip().splitlines()[-1]) * 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", default="1,4,16,32")
    ap.add_argument("--dir", default="/tmp/ct_rss")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rows = []
    for copies in [int(c) for c in args.copies.split(",")]:
        path = os.path.join(args.dir, f"kineto_x{copies}.json")
        size = build(copies, path)
        rows.append((copies, size, peak_rss(path, args.dir)))
        os.remove(path)
    base_size, base_rss = rows[0][1], rows[0][2]
    print(f"{'copies':>6} {'JSON MB':>9} {'peak RSS MB':>12} {'RSS growth / JSON growth':>25}")
    for copies, size, rss in rows:
        ratio = (rss - base_rss) / (size - base_size) if size > base_size else float("nan")
        print(f"{copies:>6} {size / 1e6:>9.1f} {rss / 1e6:>12.1f} {ratio:>25.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
