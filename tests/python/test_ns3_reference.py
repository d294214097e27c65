"""Packet mode side by side with the ns-3 RDMA reference (HPCC SIGCOMM'19 model as carried by
ns-3-alibabacloud, driven by tools/ns3-reference/ct-ref.cc). The reference figures are recorded
in tests/data/ns3_reference/*.json by tools/ns3-reference/run_incast.py and run_fabric.py (the
reference is built outside the repository; see tools/ns3-reference/README.md). These tests
recompute the twin on the same configurations and seeds.

A twin figure passes when its median over the seeds is within the stated tolerance of the
reference's median, or inside the reference's own seed-to-seed range (some cases are bimodal in
both simulators: a 2:1 incast either marks a few packets or a hundred, depending on the first
ECN draws)."""
import json
import os
import statistics
import sys

import pytest

import clustertwin as ct

sys.path.insert(0, os.path.join("tools", "ns3-reference"))
from run_fabric import ring_allreduce_csv  # noqa: E402  (the same flows the reference ran)

INCAST = json.load(open("tests/data/ns3_reference/incast.json"))
FABRIC = json.load(open("tests/data/ns3_reference/fabric.json"))
PROFILE = {
    "hpcc-ns3-paper": {"network.dcqcn.profile": "hpcc-ns3-paper"},
    "hpcc-ns3": {"network.dcqcn.profile": "hpcc-ns3"},
    "connectx-nobc": {"network.dcqcn.profile": "connectx", "network.dcqcn.byte_counter": "1000TB",
                      "network.dcqcn.cnp_interval": "1ns", "network.dcqcn.initial_alpha": 1.0},
}


def close(twin_runs, ref_runs, key, tol):
    t = statistics.median(r[key] for r in twin_runs)
    ref = [r[key] for r in ref_runs]
    m = statistics.median(ref)
    ok = abs(t - m) <= tol * abs(m) or min(ref) <= t <= max(ref)
    return ok, f"{key}: twin median {t:.6g}, reference median {m:.6g} (range {min(ref):.6g} .. {max(ref):.6g}), tolerance {tol:.0%}"


def incast_twin(row):
    base = ct.load("tools/ns3-reference/incast.yaml")
    runs = []
    for seed in row["seeds"]:
        o = {"cluster.nodes": row["fan_in"] + 1, "traffic.fan_in": row["fan_in"], "seed": seed,
             "network.ecn.kmin": f"{row['kmin_kb']}KB", "network.ecn.kmax": f"{row['kmax_kb']}KB"}
        o.update(PROFILE[row["dcqcn"]])
        r = ct.run(base, overrides=o).report
        runs.append({"completion_s": r["traffic"]["completion_time_s"], "fct_p50_s": r["traffic"]["fct_p50_s"],
                     "cnps": r["network"]["cnps"], "max_queue_bytes": r["network"]["max_queue_bytes"],
                     "paused_s": r["network"]["pfc_paused_time_s"]})
    return runs


@pytest.mark.parametrize("row", [r for r in INCAST["rows"] if r["fan_in"] <= 16 and r["dcqcn"].startswith("hpcc-ns3")],
                         ids=lambda r: f"{r['fan_in']}to1-{r['dcqcn']}-K{r['kmin_kb']}")
def test_incast_matches_the_reference(row):
    twin, ref = incast_twin(row), row["reference_runs"]
    # Completion within 6%, FCT p50 within 5%, CNPs and the deepest queue within 25%; the 8:1
    # incast with the default parameter set (hpcc-ns3-paper, ECN 400/1600 KB at 100 Gb/s) within
    # 10% on completion, CNPs and queue, as issue 17 asks.
    default = (row["fan_in"], row["dcqcn"], row["kmin_kb"]) == (8, "hpcc-ns3-paper", 400)
    tol = {"completion_s": 0.06, "fct_p50_s": 0.05, "cnps": 0.10 if default else 0.25,
           "max_queue_bytes": 0.10 if default else 0.25}
    for key, t in tol.items():
        ok, what = close(twin, ref, key, t)
        assert ok, what
    assert all(r["paused_s"] == 0.0 for r in twin) and all(r["paused_s"] == 0.0 for r in ref)


def test_firmware_defaults_starve_the_incast_in_both():
    row = next(r for r in INCAST["rows"] if r["dcqcn"] == "connectx-nobc")
    twin, ref = incast_twin(row), row["reference_runs"]
    # Both collapse (under 10% of the bottleneck) and both are bimodal across seeds (about 38 or
    # 70 ms); the twin's median lies in the reference's range. (The median flow is not compared:
    # in this regime it finishes 38% sooner in the twin, docs/dcqcn.md.)
    assert max(row["ideal_s"] / r["completion_s"] for r in twin + ref) < 0.1
    for key in ("completion_s", "max_queue_bytes"):
        ok, what = close(twin, ref, key, 0.1)
        assert ok, what


def value(text):
    """A --set value as the CLI reads it: JSON when it parses (numbers), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def fabric_twin(row, tmp_path):
    base = ct.load("tools/ns3-reference/fabric.yaml")
    runs = []
    ring = "traffic.pattern=file" in row["sets"]
    for seed in row["seeds"][:1] if ring else row["seeds"]:  # the ring has no random draws
        o = {"seed": seed}
        if ring:
            ring_allreduce_csv(tmp_path / "ring.csv")
            o["traffic.flows_file"] = str(tmp_path / "ring.csv")
        for s in row["sets"]:
            k, v = s.split("=", 1)
            o[k] = value(v)
        r = ct.run(base, overrides=o).report
        t, nan = r["traffic"], float("nan")
        # the report's own short- and long-flow figures: the definitions run_fabric.metrics uses
        runs.append({"long_flow_gbps_mean": t.get("long_flow_gbps_mean", nan),
                     "short_fct_p50_s": t.get("short_fct_p50_s", nan), "short_fct_p99_s": t.get("short_fct_p99_s", nan),
                     "fct_p50_s": t["fct_p50_s"], "fct_p99_s": t["fct_p99_s"], "cnps": r["network"]["cnps"],
                     "completion_s": t["completion_time_s"]})
    return runs


@pytest.mark.parametrize("row", FABRIC["rows"], ids=lambda r: r["case"])
def test_fat_tree_traffic_matches_the_reference(row, tmp_path):
    twin = fabric_twin(row, tmp_path)
    ref = [x["reference"] for x in row["runs"]]
    if row["case"].startswith("ring"):
        # 2 x 127 dependent steps of 512 KiB: the all-reduce time and every step's flow within 2%.
        for key in ("completion_s", "fct_p50_s", "fct_p99_s"):
            ok, what = close(twin, ref, key, 0.02)
            assert ok, what
        assert twin[0]["cnps"] == 0 and all(r["cnps"] == 0 for r in ref)
        return
    # Each simulator hashes ECMP its own way, so the slowest flows of a permutation differ; the
    # mean long-flow throughput, the short-flow FCT and the CNPs are compared.
    tol = {"long_flow_gbps_mean": 0.10, "cnps": 0.25, "fct_p50_s": 0.15, "completion_s": 0.30}
    if row["case"].startswith("websearch"):
        tol.update({"short_fct_p50_s": 0.15, "short_fct_p99_s": 0.30})
    for key, t in tol.items():
        ok, what = close(twin, ref, key, t)
        assert ok, what
