#!/usr/bin/python3
"""Golden reports: every shipped scenario's report (and every row of the accuracy command) as
the engine gives them now, kept in tests/golden/ so that a change meant to be behaviour-neutral
(a refactor) is checked against them by tests/python/test_golden.py, event counts included.

    /usr/bin/python3 tools/golden.py            # compare, print the differences
    /usr/bin/python3 tools/golden.py --update   # rewrite tests/golden/ after an intended change

Wall-clock figures (sim.wall_s, sim.events_per_s) are left out.
"""
import argparse
import glob
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
GOLDEN = os.path.join(ROOT, "tests", "golden")
VOLATILE = {("sim", "wall_s"), ("sim", "events_per_s")}


def scenarios():
    return sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json")) + glob.glob(os.path.join(ROOT, "scenarios", "*.yaml")))


def strip(report):
    report = json.loads(json.dumps(report))
    for section, key in VOLATILE:
        report.get(section, {}).pop(key, None)
    return report


def current():
    """{golden file name: document} as the engine gives them now."""
    import clustertwin as ct

    out = {}
    for path in scenarios():
        out[os.path.basename(path) + ".json"] = strip(ct.run(path).report)
    rows, _ = ct.accuracy(mode="analytical")
    out["accuracy.json"] = json.loads(rows.to_json(orient="records"))
    return out


def diff(a, b, path="", out=None, rel=1e-9):
    """Differences between two JSON documents: numbers within `rel`, everything else exact."""
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'missing now' if k not in b else 'new'}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out, rel)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items, now {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out, rel)
    elif isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        if a != b:
            out.append(f"{path}: {a!r}, now {b!r}")
    elif isinstance(a, int) and isinstance(b, int):
        if a != b:
            out.append(f"{path}: {a}, now {b}")
    elif not (math.isclose(a, b, rel_tol=rel, abs_tol=1e-300) or (math.isnan(a) and math.isnan(b))):
        out.append(f"{path}: {a!r}, now {b!r}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    docs = current()
    if a.update:
        os.makedirs(GOLDEN, exist_ok=True)
        for name, doc in docs.items():
            with open(os.path.join(GOLDEN, name), "w") as f:
                json.dump(doc, f, indent=0, sort_keys=True)
                f.write("\n")
        print(f"{len(docs)} golden files written to {GOLDEN}")
        return 0
    bad = 0
    for name, doc in docs.items():
        with open(os.path.join(GOLDEN, name)) as f:
            d = diff(json.load(f), doc)
        for line in d[:20]:
            print(f"{name}{line}")
        bad += len(d)
    print("golden reports: " + ("identical" if not bad else f"{bad} differences"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
