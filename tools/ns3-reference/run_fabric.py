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
way). And a ring all-reduce over 128 hosts (16 leaves, radix 16) as dependent flows: 2 x 127
steps, each rank sending a 512 KiB chunk to the next once it has received the previous step's
chunk (64 MiB per rank), the same flows in both simulators. Flow completion is when the last
byte reaches the receiving NIC in both (the reference's MacRx, not its last ACK).
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
    "ring-allreduce-128": ["traffic.pattern=file", "cluster.nodes=128", "cluster.fabric.switch_radix=16"],
}
RING_HOSTS = 128
RING_BYTES = 64 << 20


def ring_allreduce_csv(path, n=RING_HOSTS, per_rank=RING_BYTES):
    """Ring all-reduce as dependent flows: step k of rank i (i -> i+1) waits for step k-1 of i-1."""
    chunk = per_rank // n
    with open(path, "w") as f:
        f.write("src_gpu,dst_gpu,bytes,start_s,after\n")
        for k in range(2 * (n - 1)):
            for i in range(n):
                after = -1 if k == 0 else (k - 1) * n + (i - 1) % n
                f.write(f"{i},{(i + 1) % n},{chunk},0,{after}\n")
NS3_CFG = {"CC_MODE": 1, "PACKET_PAYLOAD_SIZE": 4096, "KMIN_KB": 100, "KMAX_KB": 400, "PMAX": 0.2,
           "BUFFER_MB": 64, "L2_CHUNK_SIZE": 4000, "L2_ACK_INTERVAL": 1, "ACK_HIGH_PRIO": 1,
           "QLEN_SAMPLE_US": 1, "EWMA_GAIN": 1 / 256, "ALPHA_RESUME_INTERVAL": 1,
           "RATE_DECREASE_INTERVAL": 4, "RP_TIMER": 300, "FAST_RECOVERY_TIMES": 1, "RATE_AI": "20Mb/s",
           "RATE_HAI": "200Mb/s", "MIN_RATE": "1000Mb/s", "CLAMP_TARGET_RATE": 0, "STOP_S": 1.0}


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
    if "traffic.pattern=file" in sets:
        ring_allreduce_csv(out + ".csv")
        cmd += ["--set", f"traffic.flows_file={out}.csv"]
    for s in sets:
        cmd += ["--set", s]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    rows = r["tables"]["flows"]
    bg_n = 8 if "traffic.background=incast" in sets else 0
    twin_flows = [(f["src_gpu"], f["dst_gpu"], f["bytes"], f["started_s"], f["fct_s"], i < bg_n)
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
    with open(out + ".flows", "w") as f:
        f.write(f"{len(rows)}\n")
        for fl in rows:
            f.write(f"{fl['src_gpu']} {fl['dst_gpu']} 3 {fl['bytes']} {fl['start_s']:.9f} {fl.get('after', -1)}\n")
    with open(out + ".cfg", "w") as f:
        for k, v in dict(NS3_CFG, RNG_RUN=seed).items():
            f.write(f"{k} {v}\n")
    subprocess.run([ct_ref, out + ".cfg", out + ".topo", out + ".flows", out], check=True, capture_output=True)
    summ = {}
    for line in open(out + ".summary"):
        p = line.split()
        if p[0] != "queue":
            summ[p[0]] = float(p[1])
    # Columns: src dst bytes start fct_at_last_ack cnps fct_at_receiver flow_index.
    ref_flows = []
    for line in open(out + ".fct"):
        s, d, b, st, _, _, rx_fct, idx = line.split()
        ref_flows.append((int(s), int(d), int(b), float(st), float(rx_fct), int(idx) < bg_n))
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
