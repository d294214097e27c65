#!/usr/bin/python3
"""Every public trace we can obtain, imported and replayed: the issue-21 campaign table.

    /usr/bin/python3 tools/trace_campaign.py [--mirrors DIR] [--scratch DIR] [--markdown]

The traces come from snapshots of public repositories (fetched with the tool library's `fetch`
into --mirrors, default /work/.mirror; nothing is copied into this repository), pinned to the
commits below, and are extracted into --scratch (default /tmp/trace_campaign):

  facebookresearch/HolisticTraceAnalysis  tests/data            every .json / .json.gz
  facebookresearch/param                  et_replay/tests/inputs Kineto files, execution
                                                                 traces (alone and with their
                                                                 Kineto pair), the DLRM ranks
  pytorch/kineto (before tb_plugin's      tb_plugin/samples, tb_plugin/test/gpu_metrics_input.json
  removal)
  mlcommons/chakra                        tests/data/*.tar.gz    the feeder test trace, a JSON dump
  astra-sim/astra-sim                     examples/**/*.et       every <name>.<rank>.et set, and
                                          runs/example (f5d4ddd) resnet50_DataParallel

Each attempt is `ct.run(ct.load_trace(...))` on the default hardware for its ranks. A row says
whether it replayed, the replayed step, the measured span the importer found (Kineto: the
chosen ProfilerStep's span; Chakra traces carry no measured span), and for a refusal the
message. Nothing here is fitted; the table is for the closing note and docs.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import clustertwin as ct  # noqa: E402

SOURCES = {  # mirror directory name -> (commit, paths to extract)
    "facebookresearch+HolisticTraceAnalysis": ("f4d0062c38", ["tests/data"]),
    "facebookresearch+param": ("1e115ffc62", ["et_replay/tests/inputs"]),
    "pytorch+kineto": ("94979607^", ["tb_plugin/samples", "tb_plugin/test/gpu_metrics_input.json"]),
    "mlcommons+chakra": ("21585d8f2d", ["tests/data"]),
    "astra-sim+astra-sim": ("518bd513ae", ["examples"]),
}
RESNET_COMMIT = "f5d4ddd"  # astra-sim's 2023 runs/example


ABSENT: list[str] = []  # blobs the snapshot lists but does not hold (its largest files)


def checkout(git: str, commit: str, paths: list[str], out: str) -> None:
    """The files under `paths` at `commit`, written below `out` (a snapshot has no work tree)."""
    listing = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", commit, "--", *paths],
                             capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        _, kind, sha = meta.split()
        if kind != "blob":
            continue
        blob = subprocess.run(["git", "--git-dir", git, "cat-file", "blob", sha], capture_output=True)
        if blob.returncode != 0:
            ABSENT.append(path)
            continue
        dest = os.path.join(out, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(blob.stdout)


def extract(mirrors: str, scratch: str) -> None:
    for name, (commit, paths) in SOURCES.items():
        git = os.path.join(mirrors, name, "repo")
        if not os.path.isdir(git):
            sys.exit(f"{git}: missing; fetch github:{name.replace('+', '/')} first")
        checkout(git, commit, paths, os.path.join(scratch, name))
    checkout(os.path.join(mirrors, "astra-sim+astra-sim", "repo"), RESNET_COMMIT, ["runs/example/workload"],
             os.path.join(scratch, "astra-sim-2023"))
    for packed in glob.glob(os.path.join(scratch, "**", "*.tar.gz"), recursive=True):
        dest = packed + ".extracted"
        if not os.path.isdir(dest):
            os.makedirs(dest)
            with tarfile.open(packed) as t:
                t.extractall(dest)


def is_execution_trace(path: str) -> bool:
    import gzip
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False
    return '"schema"' in head and '"nodes"' in head and "traceEvents" not in head


def attempt(label: str, **kwargs) -> dict:
    row = {"trace": label, "imported": "no", "replayed_s": None, "measured_s": None, "note": ""}
    try:
        sc = ct.load_trace(**kwargs)
        r = ct.run(sc).report
    except Exception as e:  # a refusal: its message is the result (less the paths the row names)
        msg = " ".join(str(e).split()).removeprefix("invalid scenario: ")
        for p in (kwargs.get("path"), kwargs.get("execution_trace")):
            if p:
                msg = msg.replace(os.path.abspath(p) + ": ", "").replace(os.path.abspath(p), os.path.basename(p))
        row["note"] = msg
        return row
    row["imported"] = "yes"
    row["replayed_s"] = r["step_time_s"]
    t = r.get("trace", {})
    k = t.get("kineto") or {}
    if k:
        row["measured_s"] = k.get("measured_step_s")
        busy = k.get("gpu_busy_fraction")
        step = k.get("profiler_step")
        row["note"] = f"step {'whole' if step is None else step}" + (
            f"; GPU busy {100 * busy:.1f}%" if busy is not None else "")
        if busy is not None and busy < 0.5:
            row["note"] += " (idle warning)"
        nccl = [w for w in k.get("warnings", []) if "NCCL kernels" in w]
        if nccl:
            row["note"] += "; " + nccl[0].split(" (")[0]
    elif "kineto_ranks" in t:
        kr = t["kineto_ranks"]
        row["measured_s"] = kr.get("measured_step_s")
        row["note"] = (f"{kr.get('collectives')} collectives and {kr.get('point_to_point')} transfers simulated, "
                       f"{kr.get('nccl_kept_measured')} NCCL kernels kept at measured time")
        said = [w for w in kr.get("warnings", []) if w.startswith("nothing of the step")]
        if said:
            row["note"] += "; says: " + said[0][:80]
    elif "chakra" in t:
        c = t["chakra"]
        row["note"] = ", ".join(f"{k} {v}" for k, v in c.items() if isinstance(v, (int, float)) and k != "ranks")[:120]
    if "execution_trace" in t:
        g = t["execution_trace"]
        row["note"] = f"execution trace: {g.get('ops_matched')} operators matched; " + row["note"]
    return row


def campaign(scratch: str) -> list[dict]:
    rows = []
    hta = os.path.join(scratch, "facebookresearch+HolisticTraceAnalysis", "tests", "data")
    param = os.path.join(scratch, "facebookresearch+param", "et_replay", "tests", "inputs")
    for path in sorted(glob.glob(os.path.join(hta, "**", "*.json*"), recursive=True)):
        if path.endswith((".json", ".json.gz")):
            rel = os.path.relpath(path, scratch)
            rows.append(attempt(rel + (" (execution trace alone)" if is_execution_trace(path) else ""), path=path))
    simple = os.path.join(hta, "execution_trace")
    et = glob.glob(os.path.join(simple, "*et*.json*"))
    kin = glob.glob(os.path.join(simple, "benchmark_simple_add_trace.json.gz"))
    if et and kin:
        rows.append(attempt(os.path.relpath(kin[0], scratch) + " + ET", path=kin[0], execution_trace=et[0]))
    for kineto_name, et_name in (("linear_kineto.json.gz", "linear_et.json.gz"),
                                 ("resnet_kineto.json.gz", "resnet_et.json.gz")):
        k, e = os.path.join(param, kineto_name), os.path.join(param, et_name)
        rows.append(attempt(os.path.relpath(k, scratch), path=k))
        rows.append(attempt(os.path.relpath(k, scratch) + " + ET", path=k, execution_trace=e))
    for e in sorted(glob.glob(os.path.join(param, "**", "*et*.json*"), recursive=True)):
        if e.endswith((".json", ".json.gz")) and is_execution_trace(e):
            rows.append(attempt(os.path.relpath(e, scratch) + " (execution trace alone)", path=e))
    for d in sorted(glob.glob(os.path.join(param, "dlrm_kineto.tar.gz.extracted", "**"), recursive=True)):
        if os.path.isdir(d) and glob.glob(os.path.join(d, "*.json*")):
            rows.append(attempt(os.path.relpath(d, scratch) + " (per-rank directory)", path=d))
    tb = os.path.join(scratch, "pytorch+kineto", "tb_plugin")
    for path in sorted(glob.glob(os.path.join(tb, "**", "*.json*"), recursive=True)):
        rows.append(attempt(os.path.relpath(path, scratch), path=path))
    sets = {}
    for et_file in glob.glob(os.path.join(scratch, "**", "*.et"), recursive=True):
        sets.setdefault(os.path.dirname(et_file), 0)
        sets[os.path.dirname(et_file)] += 1
    for d, n in sorted(sets.items()):
        rows.append(attempt(os.path.relpath(d, scratch) + f" ({n} .et files)", path=d, format="chakra"))
    for path in sorted(glob.glob(os.path.join(scratch, "mlcommons+chakra", "**", "*.json"), recursive=True)):
        rows.append(attempt(os.path.relpath(path, scratch) + " (Chakra JSON dump)", path=path))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mirrors", default="/work/.mirror")
    p.add_argument("--scratch", default="/tmp/trace_campaign")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    a = p.parse_args()
    extract(a.mirrors, a.scratch)
    rows = campaign(a.scratch)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)

    def num(x):
        return "" if x is None else f"{x:.4g}"
    if a.markdown:
        print("| trace | imported | replayed step s | measured span s | step, share busy, or why not |")
        print("| --- | --- | ---: | ---: | --- |")
        for r in rows:
            print(f"| {r['trace']} | {r['imported']} | {num(r['replayed_s'])} | {num(r['measured_s'])} | "
                  f"{r['note'][:420]} |")
    else:
        for r in rows:
            print(f"{r['trace'][-72:]:<72} {r['imported']:<3} {num(r['replayed_s']):>10} {num(r['measured_s']):>10}  "
                  f"{r['note'][:150]}")
    ok = sum(r["imported"] == "yes" for r in rows)
    print(f"\n{len(rows)} attempts: {ok} replayed, {len(rows) - ok} refused (each with its message)")
    if ABSENT:
        print(f"{len(ABSENT)} files listed by the snapshots but not held (too large to store): "
              + ", ".join(ABSENT[:8]) + (" ..." if len(ABSENT) > 8 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
