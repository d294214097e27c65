#!/usr/bin/python3
"""Error and cost of the flow solver's quantum (network.solve_quantum) against the exact solver.

    /usr/bin/python3 tools/quantum_error.py [--quanta 0us,10us,20us,50us,100us] [--scenarios NAME,...] [--markdown]

Runs each scenario in flow mode once per quantum (as `./clustertwin run --force`, a process
each) and prints its step time, the error against the exact solver (quantum 0), the events and
the user CPU seconds. A benchmark, never a test: it takes about ten minutes on a 2-core machine.

Scenarios:
  default     scenarios/default.json (10,240 H100, GPT-3 175B, TP 8 PP 8 DP 156)
  seed-10k    scenarios/seed-10k.yaml (8,192 H100, Llama-3-70B-class, TP 8 PP 8 DP 128, 8K tokens)
  scale-N     the default model on N GPUs (N / 64 replicas of TP 8 x PP 8, 24 sequences each)
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_runs import print_table, scale_sets, timed_run  # noqa: E402


def scenario(name: str) -> tuple[str, dict]:
    if name == "default":
        return os.path.join(ROOT, "scenarios", "default.json"), {}
    if name == "seed-10k":
        return os.path.join(ROOT, "scenarios", "seed-10k.yaml"), {}
    if name.startswith("scale-"):
        return os.path.join(ROOT, "scenarios", "default.json"), scale_sets(int(name.split("-", 1)[1]))
    sys.exit(f"unknown scenario {name!r}: default, seed-10k or scale-N")


def run(name: str, quantum: str) -> dict:
    path, sets = scenario(name)
    r = timed_run(ROOT, path, {**sets, "network.mode": "flow", "network.solve_quantum": quantum}, force=True)
    return {"step_s": r["report"]["step_time_s"], "events": r["report"]["sim"]["events"], "user_s": r["user_s"],
            "rss_mib": r["rss_mib"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quanta", default="0us,10us,20us,50us,100us")
    p.add_argument("--scenarios", default="scale-1024,scale-4096,default,seed-10k")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    quanta = [q.strip() for q in a.quanta.split(",") if q.strip()]
    if not quanta or quanta[0] not in ("0", "0s", "0us"):
        p.error("--quanta: the first quantum must be 0 (the exact solver every error is measured against)")
    rows = []
    for name in [s.strip() for s in a.scenarios.split(",") if s.strip()]:
        exact = None
        for q in quanta:
            r = run(name, q)
            exact = exact or r
            err = r["step_s"] / exact["step_s"] - 1.0
            rows.append([name, q, f"{r['step_s']:.6f}", f"{100 * err:+.3f}%", str(r["events"]), f"{r['user_s']:.1f}",
                         f"{exact['user_s'] / r['user_s']:.2f}x", f"{r['rss_mib']:.0f}"])
            print(" ".join(rows[-1]), file=sys.stderr, flush=True)
    head = ["scenario", "quantum", "step s", "error vs exact", "events", "user s", "speed vs exact", "peak MiB"]
    print_table(head, rows, a.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
