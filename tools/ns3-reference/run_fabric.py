#!/usr/bin/python3
"""Runs flows on a 2-tier fat tree in ClusterTwin's packet mode and in the ns-3 RDMA reference
(ct-ref, see README.md) with the same topology and the same flows (the twin's report lists its
flows; they are replayed in the reference), and prints/stores both.

    /usr/bin/python3 tools/ns3-reference/run_fabric.py --ct-ref PATH/ns3.36.1-ct-ref-optimized \
        --out tests/data/ns3_reference/fabric.json

Cases (tools/ns3-reference/fabric.yaml: 32 hosts, 8 leaves, 100 Gb/s, hpcc-ns3 DCQCN, ECN
100/400 KB on dequeue): a random permutation of 4 MiB flows; web-search flows (DCTCP paper's
sizes) at 50% load for 500 us; web-search at 30% load with an 8:1 incast of 4 MiB flows behind.
Seeds 1-3 (the flows and the ECN draws change with the seed; each simulator hashes ECMP its own
way). The reference measures a flow when its last ACK returns; its completion times are
corrected by the ACK's return propagation (500 ns per link) to compare with the twin's delivery
time.
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

import reference_data

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEEDS = (1, 2, 3)
CASES = {
    "permutation-4MiB": ["traffic.pattern=permutation", "traffic.size=4MiB"],
    "websearch-50pct": ["traffic.pattern=websearch", "traffic.load=0.5", "traffic.duration=500us"],
    "websearch-30pct+incast": ["traffic.pattern=websearch", "traffic.load=0.3", "traffic.duration=500us",
                               "traffic.background=incast", "traffic.fan_in=8", "traffic.size=4MiB"],
}
NS3_CFG = {"CC_MODE": 1, "PACKET_PAYLOAD_SIZE": 4096, "KMIN_KB": 100, "KMAX_KB": 400, "PMAX": 0.2,
           "BUFFER_MB": 64, "L2_CHUNK_SIZE": 4000, "L2_ACK_INTERVAL": 1, "ACK_HIGH_PRIO": 1,
           "QLEN_SAMPLE_US": 1, "EWMA_GAIN": 1 / 256, "ALPHA_RESUME_INTERVAL": 1,
           "RATE_DECREASE_INTERVAL": 4, "RP_TIMER": 300, "FAST_RECOVERY_TIMES": 1, "RATE_AI": "20Mb/s",
           "RATE_HAI": "200Mb/s", "MIN_RATE": "1000Mb/s", "CLAMP_TARGET_RATE": 0, "STOP_S": 1.0}
LINK_S = 500e-9


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))] if v else float("nan")


def metrics(flows, cnps, pauses, paused_s):
    """flows: (src, dst, bytes, start, fct, background)."""
    fct = [f[4] for f in flows]
    short = [f[4] for f in flows if f[2] < 100_000 and not f[5]]
    bg = [f for f in flows if f[5]]
    long_ = bg if bg else [f for f in flows if f[2] >= 1_000_000]
    return {"completion_s": max(f[3] + f[4] for f in flows) - min(f[3] for f in flows),
            "fct_p50_s": q(fct, 0.5), "fct_p99_s": q(fct, 0.99),
            "short_fct_p50_s": q(short, 0.5), "short_fct_p99_s": q(short, 0.99),
            "long_flow_gbps_mean": statistics.mean(f[2] * 8e-9 / f[4] for f in long_) if long_ else float("nan"),
            "cnps": cnps, "pause_frames": pauses, "paused_s": paused_s, "flows": len(flows)}


def run_case(ct_ref, name, sets, seed, tmp):
    out = os.path.join(tmp, f"{name}-{seed}")
    cmd = [os.path.join(ROOT, "clustertwin"), "run", os.path.join(HERE, "fabric.yaml"), "--out", out, "--json",
           "--set", f"seed={seed}"]
    for s in sets:
        cmd += ["--set", s]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    rows = r["tables"]["flows"]
    bg_n = 8 if "traffic.background=incast" in sets else 0
    twin_flows = [(f["src_gpu"], f["dst_gpu"], f["bytes"], f["start_s"], f["fct_s"], i < bg_n)
                  for i, f in enumerate(rows)]
    twin = metrics(twin_flows, r["network"]["cnps"], r["network"]["pfc_pause_frames"],
                   r["network"]["pfc_paused_time_s"])
    # Topology from the twin's link table: tier 0 = hosts, 1 = leaves, 2 = spines.
    links = [row for row in csv.DictReader(open(os.path.join(out, "fabric_links.csv")))
             if int(row["src_tier"]) < int(row["dst_tier"])]
    count = {}
    for row in links:
        for t, i in ((row["src_tier"], row["src_index"]), (row["dst_tier"], row["dst_index"])):
            count[int(t)] = max(count.get(int(t), 0), int(i) + 1)
    base = {0: 0, 1: count[0], 2: count[0] + count[1]}
    nid = lambda t, i: base[int(t)] + int(i)
    n_nodes = sum(count.values())
    with open(out + ".topo", "w") as f:
        f.write(f"{n_nodes} {n_nodes - count[0]} {len(links)}\n")
        f.write(" ".join(str(i) for i in range(count[0], n_nodes)) + "\n")
        for row in links:
            f.write(f"{nid(row['src_tier'], row['src_index'])} {nid(row['dst_tier'], row['dst_index'])} 100Gbps 500ns\n")
    leaf = {}
    for row in links:
        if row["src_tier"] == "0":
            leaf[int(row["src_index"])] = int(row["dst_index"])
    with open(out + ".flows", "w") as f:
        f.write(f"{len(rows)}\n")
        for fl in rows:
            f.write(f"{fl['src_gpu']} {fl['dst_gpu']} 3 {fl['bytes']} {fl['start_s']:.9f}\n")
    with open(out + ".cfg", "w") as f:
        for k, v in dict(NS3_CFG, RNG_RUN=seed).items():
            f.write(f"{k} {v}\n")
    subprocess.run([ct_ref, out + ".cfg", out + ".topo", out + ".flows", out], check=True, capture_output=True)
    summ = {}
    for line in open(out + ".summary"):
        p = line.split()
        if p[0] != "queue":
            summ[p[0]] = float(p[1])
    # Match reference flows to the twin's by (src, dst, bytes, start) order of appearance.
    ref_flows = []
    for line in open(out + ".fct"):
        s, d, b, st, fct, _ = line.split()
        hops = 2 if leaf[int(s)] == leaf[int(d)] else 4
        ref_flows.append((int(s), int(d), int(b), float(st), float(fct) - hops * LINK_S, False))
    if bg_n:
        bg_keys = {(f[0], f[1], f[2]) for f in twin_flows[:bg_n]}
        ref_flows = [f[:5] + ((f[0], f[1], f[2]) in bg_keys and f[3] == 0.0,) for f in ref_flows]
    ref = metrics(ref_flows, int(summ["cnp_acks"]), int(summ["pause_frames"]), summ["paused_s"])
    return twin, ref


def main():
    a = reference_data.arguments(__doc__)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, sets in CASES.items():
            runs = [run_case(a.ct_ref, name, sets, s, tmp) for s in SEEDS]
            keys = runs[0][0].keys()
            twin = {k: statistics.median(r[0][k] for r in runs) for k in keys}
            ref = {k: statistics.median(r[1][k] for r in runs) for k in keys}
            rows.append({"case": name, "sets": sets, "seeds": list(SEEDS), "reference": ref, "twin": twin,
                         "runs": [{"twin": t, "reference": r} for t, r in runs]})
            print(f"{name}:")
            for k in keys:
                d = (twin[k] - ref[k]) / ref[k] * 100 if ref[k] else float("nan")
                print(f"   {k:22s} ref {ref[k]:12.6g}  twin {twin[k]:12.6g}  ({d:+6.1f}%)", flush=True)
    if a.out:
        reference_data.write(a.out, rows, "run_fabric.py")

if __name__ == "__main__":
    sys.exit(main())
