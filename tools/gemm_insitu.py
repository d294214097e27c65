#!/usr/bin/python3
"""GEMM kernels of a profiled training step against the calibrated kernel model.

Reads a PyTorch profiler (Kineto) trace, pairs each GEMM kernel with the aten::mm / addmm /
bmm that launched it (by External id) and compares the measured duration with the model's
GEMM time (compute_model.h, constants parsed from calibration_h200.cpp). Prints the sums and
the largest shapes. Usage: tools/gemm_insitu.py [TRACE.json.gz] (default: the H200 fixture).
"""
import collections
import gzip
import json
import math
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
H200 = {"sms": 132, "peak": 989.4e12, "hbm": 4.8e12}  # gpu_catalog.cpp, H200-SXM


def calibration():
    text = open(os.path.join(ROOT, "models/hardware/calibration_h200.cpp")).read()
    return {k: float(v) for k, v in re.findall(r"c\.gemm\.(\w+) = ([0-9.eE+-]+);", text)}


def model_time(c, m, n, k, count):
    tiles = math.ceil(m / c["tile_m"]) * math.ceil(n / c["tile_n"]) * count
    waves = math.ceil(tiles / H200["sms"])
    util = m * n * count / (waves * H200["sms"] * c["tile_m"] * c["tile_n"])
    flops = 2.0 * m * n * k * count
    eff = c["eff_max"] * util ** c["wave_gamma"] * k / (k + c["k_half"]) * (
        1 - c["throttle_delta"] * flops / (flops + c["throttle_flops"]))
    t_c = flops / (H200["peak"] * eff)
    t_m = 2.0 * (m * k + k * n + m * n) * count / (H200["hbm"] * c["mem_eff"])
    p, top = c["overlap_p"], max(c["launch_s"], t_c, t_m)
    return top * sum((x / top) ** p for x in (c["launch_s"], t_c, t_m)) ** (1 / p)


def shape(op):
    dims = op["args"]["Input Dims"]
    if op["name"] == "aten::mm":
        (m, k), (_, n) = dims[0], dims[1]
        return m, n, k, 1
    if op["name"] == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return m, n, k, 1
    (b, m, k), (_, _, n) = dims[0], dims[1]
    return m, n, k, b


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests/data/traces/kineto/kineto_gpt1.3b_h200.json.gz")
    opener = gzip.open if path.endswith(".gz") else open
    events = json.load(opener(path))["traceEvents"]
    ops = {}
    for e in events:
        if e.get("cat") == "cpu_op" and e["name"] in ("aten::mm", "aten::addmm", "aten::bmm"):
            ops.setdefault(e["args"]["External id"], e)
    c = calibration()
    rows = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for e in events:
        op = ops.get(e.get("args", {}).get("External id")) if e.get("cat") == "kernel" else None
        if op is None:
            continue
        key = shape(op)
        r = rows[key]
        r[0] += 1
        r[1] += e["dur"] * 1e-6
        r[2] += model_time(c, *key)
    n = sum(r[0] for r in rows.values())
    meas = sum(r[1] for r in rows.values())
    mod = sum(r[2] for r in rows.values())
    print(f"{n} GEMM kernels: measured {meas * 1e3:.1f} ms, model {mod * 1e3:.1f} ms ({100 * (mod / meas - 1):+.1f}%)")
    print(f"{'M':>6} {'N':>6} {'K':>6} {'count':>5} {'calls':>5} {'ms/call':>8} {'TFLOP/s':>8} {'model':>7}")
    for (m, nn, k, b), (calls, t, tm) in sorted(rows.items(), key=lambda x: -x[1][1])[:12]:
        print(f"{m:6d} {nn:6d} {k:6d} {b:5d} {calls:5d} {t / calls * 1e3:8.3f} {2 * m * nn * k * b * calls / t / 1e12:8.0f} "
              f"{100 * (tm / t - 1):+6.1f}%")


if __name__ == "__main__":
    main()
