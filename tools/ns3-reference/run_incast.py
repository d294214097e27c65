#!/usr/bin/python3
"""Runs N:1 incasts in the ns-3 RDMA reference (ct-ref, see README.md) and in ClusterTwin's
packet mode on the same configuration, and prints/stores both.

    /usr/bin/python3 tools/ns3-reference/run_incast.py --ct-ref PATH/ns3.36.1-ct-ref-optimized \
        --out tests/data/ns3_reference/incast.json

Every case: one switch, N senders and one receiver on 100 Gb/s links with 500 ns propagation,
4 MiB per sender (RDMA write), 4096 B payload per packet, 64 MiB shared buffer, PFC with the
dynamic threshold alpha = 1/8, ECN marking on dequeue. Each case runs with seeds 1-5 in both
simulators (ECN marking draws); the tables compare the medians.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import reference_data

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The reference's DCQCN (rdma-hw.cc, Mellanox version) per ClusterTwin profile. hpcc-ns3 is
# HPCC's run.py "dcqcn" at 100 Gb/s; connectx-nobc is the ConnectX firmware defaults minus what
# the reference cannot express (no byte counter, a CNP per marked packet, initial alpha 1).
NS3_DCQCN = {
    "hpcc-ns3-paper": {"EWMA_GAIN": 1 / 256, "ALPHA_RESUME_INTERVAL": 50, "RATE_DECREASE_INTERVAL": 50,
                       "RP_TIMER": 55, "FAST_RECOVERY_TIMES": 1, "RATE_AI": "20Mb/s",
                       "RATE_HAI": "200Mb/s", "MIN_RATE": "1000Mb/s", "CLAMP_TARGET_RATE": 0},
    "hpcc-ns3": {"EWMA_GAIN": 1 / 256, "ALPHA_RESUME_INTERVAL": 1, "RATE_DECREASE_INTERVAL": 4,
                 "RP_TIMER": 300, "FAST_RECOVERY_TIMES": 1, "RATE_AI": "20Mb/s",
                 "RATE_HAI": "200Mb/s", "MIN_RATE": "1000Mb/s", "CLAMP_TARGET_RATE": 0},
    "connectx-nobc": {"EWMA_GAIN": 5 / 1024, "ALPHA_RESUME_INTERVAL": 1, "RATE_DECREASE_INTERVAL": 4,
                      "RP_TIMER": 300, "FAST_RECOVERY_TIMES": 1, "RATE_AI": "5Mb/s",
                      "RATE_HAI": "50Mb/s", "MIN_RATE": "1Mb/s", "CLAMP_TARGET_RATE": 0},
}
CT_DCQCN = {
    "hpcc-ns3-paper": ["network.dcqcn.profile=hpcc-ns3-paper"],
    "hpcc-ns3": ["network.dcqcn.profile=hpcc-ns3"],
    "connectx-nobc": ["network.dcqcn.profile=connectx", "network.dcqcn.byte_counter=1000TB",
                      "network.dcqcn.cnp_interval=1ns", "network.dcqcn.initial_alpha=1"],
}

CASES = [(n, prof, kmin, kmax) for prof in ("hpcc-ns3",) for n in (2, 4, 8, 16, 32)
         for (kmin, kmax) in ((100, 400),)] + [
    (8, "hpcc-ns3", 400, 1600), (16, "hpcc-ns3", 400, 1600), (8, "connectx-nobc", 100, 400)] + [
    (n, "hpcc-ns3-paper", 400, 1600) for n in (2, 4, 8, 16, 32)]


SEEDS = (1, 2, 3, 4, 5)
METRICS = ("completion_s", "fct_p50_s", "cnps", "pause_frames", "paused_s", "max_queue_bytes")


def ns3_case(ct_ref, n, prof, kmin, kmax, tmp, seed):
    base = os.path.join(tmp, f"i{n}_{prof}_{kmin}_{seed}")
    with open(base + ".topo", "w") as f:
        f.write(f"{n + 2} 1 {n + 1}\n{n + 1}\n")
        for h in range(n + 1):
            f.write(f"{h} {n + 1} 100Gbps 500ns\n")
    with open(base + ".flows", "w") as f:
        f.write(f"{n}\n")
        for h in range(1, n + 1):
            f.write(f"{h} 0 3 4194304 0\n")
    cfg = {"CC_MODE": 1, "PACKET_PAYLOAD_SIZE": 4096, "KMIN_KB": kmin, "KMAX_KB": kmax,
           "PMAX": 0.2, "BUFFER_MB": 64, "L2_CHUNK_SIZE": 4000, "L2_ACK_INTERVAL": 1,
           "ACK_HIGH_PRIO": 1, "QLEN_SAMPLE_US": 1, "RNG_RUN": seed}
    cfg.update(NS3_DCQCN[prof])
    with open(base + ".cfg", "w") as f:
        for k, v in cfg.items():
            f.write(f"{k} {v}\n")
    subprocess.run([ct_ref, base + ".cfg", base + ".topo", base + ".flows", base],
                   check=True, capture_output=True)
    fct = sorted(float(line.split()[6]) for line in open(base + ".fct"))  # last byte at the receiver
    summ = {}
    queues = []
    for line in open(base + ".summary"):
        p = line.split()
        if p[0] == "queue":
            queues.append((int(p[4]), float(p[6])))
        else:
            summ[p[0]] = float(p[1])
    maxq, meanq = max(queues)
    return {"completion_s": fct[-1], "fct_p50_s": fct[len(fct) // 2], "cnps": int(summ["cnp_acks"]),
            "pause_frames": int(summ["pause_frames"]), "paused_s": summ["paused_s"],
            "max_queue_bytes": maxq}


def ct_case(n, prof, kmin, kmax, seed):
    sets = ["cluster.nodes=%d" % (n + 1), "cluster.gpus_per_node=1", "cluster.nics_per_node=1",
            "cluster.nic=100Gbps", "cluster.fabric.switch_radix=128", "network.ecn.kmin=%dKB" % kmin,
            "network.ecn.kmax=%dKB" % kmax, "network.ecn.mark_on=dequeue",
            "traffic.fan_in=%d" % n, "seed=%d" % seed] + CT_DCQCN[prof]
    cmd = [os.path.join(ROOT, "clustertwin"), "run", os.path.join(HERE, "incast.yaml"), "--json"]
    for s in sets:
        cmd += ["--set", s]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {"completion_s": r["traffic"]["completion_time_s"], "fct_p50_s": r["traffic"]["fct_p50_s"],
            "cnps": r["network"]["cnps"], "pause_frames": r["network"]["pfc_pause_frames"],
            "paused_s": r["network"]["pfc_paused_time_s"], "max_queue_bytes": r["network"]["max_queue_bytes"]}


def median(runs):
    return {k: statistics.median(r[k] for r in runs) for k in METRICS}


def main():
    a = reference_data.arguments(__doc__)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for (n, prof, kmin, kmax) in CASES:
            ref_runs = [ns3_case(a.ct_ref, n, prof, kmin, kmax, tmp, s) for s in SEEDS]
            twin_runs = [ct_case(n, prof, kmin, kmax, s) for s in SEEDS]
            ref, twin = median(ref_runs), median(twin_runs)
            ideal = n * 4194304 * 8 / 100e9
            rows.append({"fan_in": n, "dcqcn": prof, "kmin_kb": kmin, "kmax_kb": kmax,
                         "ideal_s": ideal, "seeds": list(SEEDS), "reference": ref, "twin": twin,
                         "reference_runs": ref_runs, "twin_runs": twin_runs})
            d = lambda k: (twin[k] - ref[k]) / ref[k] * 100 if ref[k] else float("nan")
            print(f"{n:2d}:1 {prof:13s} K {kmin}/{kmax} KB | ref {ref['completion_s']*1e3:7.3f} ms "
                  f"({ideal / ref['completion_s'] * 100:5.1f}% busy) twin {twin['completion_s']*1e3:7.3f} ms "
                  f"({d('completion_s'):+5.1f}%) | p50 {d('fct_p50_s'):+5.1f}% | CNPs {ref['cnps']} vs "
                  f"{twin['cnps']} ({d('cnps'):+5.1f}%) | max queue {ref['max_queue_bytes']} vs "
                  f"{twin['max_queue_bytes']} ({d('max_queue_bytes'):+5.1f}%) | pauses {ref['pause_frames']} vs "
                  f"{twin['pause_frames']}, paused {ref['paused_s']*1e3:.3f} vs {twin['paused_s']*1e3:.3f} ms", flush=True)
    if a.out:
        reference_data.write(a.out, rows, "run_incast.py")

if __name__ == "__main__":
    sys.exit(main())
