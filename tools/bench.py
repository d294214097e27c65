#!/usr/bin/python3
"""Speed of the twin where users wait (issue 23): a benchmark, never a timed test.

    /usr/bin/python3 tools/bench.py [--against OTHER_CHECKOUT] [--flow] [--flow-scale N,N,...] [--repeat 5] [--markdown]

Measures, in this checkout (and in OTHER_CHECKOUT, a built checkout of another commit, side by
side in the same run, so that machines that differ still give a ratio):

  analytical-10k   scenarios/default.json (10,240 H100) in network.mode analytical, in process:
                   best wall of --repeat runs, events, events/s
  sweep            the layouts of the default cluster a user sweeps (TP x PP x micro-batch x
                   interleaving that divide the model and fit the batch), each a full analytical
                   run in process: layouts per second
  sweep-batch      every layout of the default job (TP, PP, interleaving, micro-batch, DP using at
                   least half the cluster: 471), through ct.evaluate_layouts (one build of the cluster,
                   oneTBB threads): on one thread (sweep-batch-1thread) and on every core
  sweep-1000       the issue's measure: 1,000 layouts (those above, then those at twice the batch)
                   in one call on every core: best and median of --repeat calls
  scale-N          the default model on N GPUs (1,024 / 4,096 / 16,384 / 65,536 / 102,400 H100,
                   DP grown), analytical, one run each: wall, events, and the growth exponent of
                   wall against GPUs
  flow-10k         (--flow) the default scenario as `./clustertwin run` in flow mode, as a
                   process: wall, events, events/s, peak RSS (about 22 s per checkout here)
  flow-scale-N     (--flow-scale N,N,...) the scale-N model in flow mode, as a process each:
                   wall, events, events/s, peak RSS, and the growth exponent of wall against GPUs
                   (rails folded, network.fold_rails auto: 1,024: 0.5 s, 16,384: 3.4 s, 65,536: 24 s,
                   102,400: 50 s here; every rank: 102,400 in 5.6 min)

Each checkout runs in its own Python process (its own _core module), so two commits never mix.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_runs import print_table, scale_sets, timed_run  # noqa: E402

# Runs inside the checkout under test: prints one JSON object.
PROBE = r'''
import json, math, sys, time
sys.path.insert(0, sys.argv[1] + "/python")
import clustertwin as ct
repeat = int(sys.argv[2])
default = ct.load(sys.argv[1] + "/scenarios/default.json")
out = {}

def timed(sc, over):
    t = time.perf_counter()
    r = ct.run(sc, overrides=over).report
    return time.perf_counter() - t, r

over = {"network.mode": "analytical"}
timed(default, over)
best, rep = min((timed(default, over) for _ in range(repeat)), key=lambda x: x[0])
out["analytical-10k"] = {"wall_s": best, "events": rep["sim"]["events"], "step_time_s": rep["step_time_s"]}

layouts = []
for tp in (4, 8):
    for pp in (4, 8, 12, 16):
        for v in (1, 2, 3):
            for mb in (1, 2):
                if 96 % (pp * v):
                    continue
                dp = 9984 // (tp * pp)  # the default job: 9,984 of the 10,240 GPUs
                if dp < 1 or 3744 % (mb * dp):
                    continue
                layouts.append({"network.mode": "analytical", "training_job.parallelism.tensor_parallel": tp,
                                "training_job.parallelism.pipeline_parallel": pp,
                                "training_job.parallelism.virtual_pipeline": v,
                                "training_job.parallelism.data_parallel": dp,
                                "training_job.micro_batch_size": mb})
t = time.perf_counter()
ok = 0
for lay in layouts:
    try:
        ct.run(default, overrides=lay)
        ok += 1
    except ValueError:
        pass
wall = time.perf_counter() - t
out["sweep"] = {"layouts": len(layouts), "ran": ok, "wall_s": wall, "layouts_per_s": len(layouts) / wall}

if hasattr(ct, "evaluate_layouts"):
    # Every TP x PP x interleaving x micro-batch x DP of the default job that divides the
    # model and the batch and uses at least half of the cluster (smaller DP means thousands of
    # micro-batches per replica: a different workload), through one batch call against one
    # build of the cluster: once on one thread, once on every core.
    def candidates(gbs, batch_key=False):
        cands = []
        for tp in (1, 2, 4, 8):
            for pp in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48):
                for v in (1, 2, 3, 4):
                    for mb in (1, 2, 4):
                        for dp in range(1, 10240 // (tp * pp) + 1):
                            if tp * pp * dp < 5120 or 96 % (pp * v) or gbs % (mb * dp) or (
                                    v > 1 and (gbs // (mb * dp)) % pp):
                                continue
                            cands.append({"training_job.parallelism.tensor_parallel": tp,
                                          "training_job.parallelism.pipeline_parallel": pp,
                                          "training_job.parallelism.virtual_pipeline": v,
                                          **({"training_job.global_batch_size": gbs} if batch_key else {}),
                                          "training_job.parallelism.data_parallel": dp,
                                          "training_job.micro_batch_size": mb})
        return cands
    cands = candidates(3744)
    fixed = {"network.mode": "analytical"}
    for name, threads in (("sweep-batch-1thread", 1), ("sweep-batch", 0)):
        t = time.perf_counter()
        df = ct.evaluate_layouts(default, cands, overrides=fixed, threads=threads)
        wall = time.perf_counter() - t
        out[name] = {"layouts": len(cands), "ran": int(df["error"].isna().sum()), "wall_s": wall,
                     "layouts_per_s": len(cands) / wall}
    # The issue's measure: 1,000 layouts of the 10,240-GPU cluster in one call on every core
    # (pandas already imported): the candidates above, then the first of those at twice the
    # batch (7,488 sequences: twice the micro-batches per replica); best of --repeat calls.
    thousand = (candidates(3744, True) + candidates(7488, True))[:1000]
    walls = []
    for _ in range(repeat):
        t = time.perf_counter()
        df = ct.evaluate_layouts(default, thousand, overrides=fixed, threads=0)
        walls.append(time.perf_counter() - t)
    out["sweep-1000"] = {"layouts": len(thousand), "ran": int(df["error"].isna().sum()), "wall_s": min(walls),
                         "layouts_per_s": len(thousand) / min(walls),
                         "median_layouts_per_s": len(thousand) / sorted(walls)[len(walls) // 2]}

for gpus in (1024, 4096, 16384, 65536, 102400):
    nodes = gpus // 8
    dp = nodes // 8  # TP 8 x PP 8 per replica
    sc = {**default.data}
    cl = {**sc["cluster"], "nodes": nodes}
    sc = ct.Scenario({**sc, "cluster": cl})
    o = {"network.mode": "analytical", "recovery.hot_spares": 0, "training_job.parallelism.data_parallel": dp,
         "training_job.global_batch_size": 24 * dp}
    w, r = timed(sc, o)
    out[f"scale-{gpus}"] = {"wall_s": w, "events": r["sim"]["events"], "gpus": gpus}
print(json.dumps(out))
'''


def probe(checkout: str, repeat: int) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, checkout, str(repeat)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{checkout}: the probe failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def flow(checkout: str) -> dict:
    r = timed_run(checkout, os.path.join(checkout, "scenarios", "default.json"))
    return {"wall_s": r["wall_s"], "events": r["report"]["sim"]["events"],
            "events_per_s": r["report"]["sim"]["events_per_s"], "peak_rss_mib": r["rss_mib"]}


def flow_scale(checkout: str, gpus: int) -> dict:
    """The scale-N model in flow mode, as `./clustertwin run --force` (the estimate refuses the
    largest without it)."""
    r = timed_run(checkout, os.path.join(checkout, "scenarios", "default.json"), scale_sets(gpus), force=True)
    return {"wall_s": r["wall_s"], "events": r["report"]["sim"]["events"], "gpus": gpus, "peak_rss_mib": r["rss_mib"]}


def exponent(res: dict, prefix: str = "scale-") -> float | None:
    pts = [(v["gpus"], v["wall_s"]) for k, v in res.items() if k.startswith(prefix)]
    if len(pts) < 2:
        return None
    xs = [math.log(g) for g, _ in pts]
    ys = [math.log(w) for _, w in pts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--against", metavar="CHECKOUT", help="another built checkout, measured in the same run")
    p.add_argument("--flow", action="store_true", help="also the default scenario in flow mode (~22 s each)")
    p.add_argument("--flow-scale", metavar="N,N,...", default="",
                   help="also the scale-N model in flow mode at these GPU counts (multiples of 64), e.g. 1024,4096,16384")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    checkouts = [ROOT] + ([os.path.abspath(a.against)] if a.against else [])
    try:
        flow_gpus = [int(x) for x in a.flow_scale.split(",") if x.strip()]
    except ValueError:
        p.error(f"--flow-scale: got {a.flow_scale!r}, expected GPU counts like 1024,4096")
    if any(g < 64 or g % 64 for g in flow_gpus):
        p.error(f"--flow-scale: got {a.flow_scale!r}, expected multiples of 64 (TP 8 x PP 8 replicas)")
    results = []
    for c in checkouts:
        res = probe(c, a.repeat)
        if a.flow:
            res["flow-10k"] = flow(c)
        for g in flow_gpus:
            res[f"flow-scale-{g}"] = flow_scale(c, g)
        res["exponent"] = exponent(res)
        res["flow_exponent"] = exponent(res, "flow-scale-")
        results.append(res)
    keys = [k for k in results[0] if k not in ("exponent", "flow_exponent")]
    head = ["measure", "this: wall s", "events", "rate"] + (["other: wall s", "ratio other/this"] if a.against else [])
    rows = []
    for k in keys:
        r = results[0][k]
        median = f", median {r['median_layouts_per_s']:.1f}" if "median_layouts_per_s" in r else ""
        rate = (f"{r['layouts_per_s']:.1f} layouts/s{median} ({r['ran']} of {r['layouts']} fit and ran)"
                if "layouts_per_s" in r else
                f"{r['events'] / r['wall_s']:.3g} events/s" if r.get("wall_s") else "")
        extra = f"; peak {r['peak_rss_mib']:.0f} MiB" if "peak_rss_mib" in r else ""
        row = [k, f"{r['wall_s']:.4g}", str(r.get("events", r.get("layouts", ""))), rate + extra]
        if a.against:
            o = results[1].get(k)
            row += [f"{o['wall_s']:.4g}", f"{o['wall_s'] / r['wall_s']:.2f}x"] if o else ["(not there)", ""]
        rows.append(row)
    print_table(head, rows, a.markdown, width=18)
    for i, res in enumerate(results):
        e = res["exponent"]
        if e is not None:
            print(f"{'this' if i == 0 else 'other'}: analytical wall grows as GPUs^{e:.2f} from 1,024 to 102,400 GPUs")
        e = res["flow_exponent"]
        if e is not None:
            print(f"{'this' if i == 0 else 'other'}: flow wall grows as GPUs^{e:.2f} over {a.flow_scale} GPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
