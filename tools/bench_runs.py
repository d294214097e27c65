"""Shared by tools/bench.py and tools/quantum_error.py: the scale-N scenario, one timed
`./clustertwin run` as its own process, and the result table (plain or markdown)."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def scale_sets(gpus: int) -> dict:
    """The scale-N model: the default scenario's GPT-3 175B on N GPUs, N / 64 replicas of TP 8 x
    PP 8 with 24 sequences each and no hot spares."""
    if gpus < 64 or gpus % 64:
        sys.exit(f"scale-{gpus}: expected a multiple of 64 GPUs (TP 8 x PP 8 replicas)")
    dp = gpus // 64
    return {"cluster.nodes": gpus // 8, "training_job.parallelism.data_parallel": dp,
            "training_job.global_batch_size": 24 * dp, "recovery.hot_spares": 0}


def timed_run(checkout: str, scenario: str, sets: dict | None = None, force: bool = False) -> dict:
    """`clustertwin run SCENARIO --json` in CHECKOUT under /usr/bin/time: the report, wall and
    user CPU seconds and the peak resident set (MiB). Exits naming the run when it fails."""
    cmd = ["/usr/bin/time", "-f", "%e %U %M", os.path.join(checkout, "clustertwin"), "run", scenario, "--quiet",
           "--json"] + (["--force"] if force else [])
    for k, v in (sets or {}).items():
        cmd += ["--set", f"{k}={v}"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=checkout)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd[3:])}: the run failed:\n{r.stderr[-2000:]}")
    wall, user, rss_kib = r.stderr.strip().splitlines()[-1].split()
    return {"report": json.loads(r.stdout), "wall_s": float(wall), "user_s": float(user),
            "rss_mib": int(rss_kib) / 1024}


def print_table(head: list[str], rows: list[list[str]], markdown: bool, width: int = 0) -> None:
    """Markdown, or columns separated by tabs (width 0) or right-aligned to `width`."""
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    for row in [head] + rows:
        print("  ".join(f"{c:>{width}}" for c in row) if width else "\t".join(row))
