#!/usr/bin/python3
"""How far a rail-folded flow replay (network.fold_rails auto) lands from every rank's.

    /usr/bin/python3 tools/fold_error.py [--large] [--markdown]

Runs each scenario in flow mode twice, with network.fold_rails no (every rank) and auto (the
first GPU of every tensor-parallel group, its siblings' routes on shared links), in this
process, and prints the step times, their gap, events and wall time. --large adds the default
10,240-GPU scenario and its 16,384-GPU variant (about 30 s more). A benchmark, not a test: the
tolerance the tests hold (tests/python/test_rail_fold.py) comes from these gaps.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
import clustertwin as ct  # noqa: E402

SMALL = {"name": "rails", "cluster": {"gpu": "H100-SXM", "nodes": 16, "gpus_per_node": 8, "nics_per_node": 8,
                                      "nic": "400Gbps"},
         "network": {"mode": "flow"},
         "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                          "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 8},
                          "micro_batch_size": 1, "global_batch_size": 64, "steps": 2}}


def variant(nodes: int, fabric: dict, tp: int, pp: int) -> dict:
    sc = copy.deepcopy(SMALL)
    sc["cluster"]["nodes"] = nodes
    sc["cluster"]["fabric"] = fabric
    sc["training_job"]["parallelism"] = {"tensor_parallel": tp, "pipeline_parallel": pp,
                                         "data_parallel": nodes * 8 // (tp * pp)}
    return sc


CASES = [
    ("16 nodes, one leaf per rail, TP 8", SMALL, {}),
    ("32 nodes, 3 tiers of 16-port switches, TP 8", variant(32, {"tiers": 3, "switch_radix": 16}, 8, 4), {}),
    ("32 nodes, 3 tiers of 16-port switches, TP 4", variant(32, {"tiers": 3, "switch_radix": 16}, 4, 4), {}),
    ("32 nodes, 2:1 fat tree, TP 8",
     variant(32, {"topology": "fat_tree", "tiers": 2, "switch_radix": 64, "oversubscription": 2}, 8, 4), {}),
]
LARGE = [
    ("default, 10,240 H100 (TP 8, PP 8, DP 156)", os.path.join(ROOT, "scenarios/default.json"), {}),
    ("default model on 16,384 H100 (DP 256)", os.path.join(ROOT, "scenarios/default.json"),
     {"cluster.nodes": 2048, "training_job.parallelism.data_parallel": 256,
      "training_job.global_batch_size": 6144, "recovery.hot_spares": 0}),
]


def one(sc, overrides: dict, fold: str) -> tuple[dict, float]:
    t = time.perf_counter()
    r = ct.run(sc, overrides={**overrides, "network.mode": "flow", "network.fold_rails": fold}).report
    return r, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = []
    for label, sc, over in CASES + (LARGE if args.large else []):
        full, t_full = one(sc, over, "no")
        fold, t_fold = one(sc, over, "auto")
        assert fold["ranks"]["fold"] == "rails", label
        rows.append((label, full["step_time_s"], fold["step_time_s"], fold["step_time_s"] / full["step_time_s"] - 1,
                     full["sim"]["events"], fold["sim"]["events"], t_full, t_fold))
    head = ("scenario", "every rank s", "folded s", "gap", "events", "folded events", "wall s", "folded wall s")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for label, a, b, gap, ea, eb, ta, tb in rows:
        cells = (label, f"{a:.7g}", f"{b:.7g}", f"{100 * gap:+.3f}%", f"{ea:,}", f"{eb:,}", f"{ta:.2f}", f"{tb:.2f}")
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
