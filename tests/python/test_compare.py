"""clustertwin compare / ct.compare_nccl_tests: real nccl-tests output beside the twin, and the
host that explains a shortfall across pair runs."""
import json
import os
import subprocess

import pytest

import clustertwin as ct
from clustertwin import _core
from clustertwin.compare import parse_nccl_tests

CLI = ["./clustertwin"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "scenarios", "default.json")


def _scenario():
    return ct.load(DEFAULT).with_overrides({"network.mode": "analytical"})


def nccl_tests_log(hosts, rows, op="all_reduce"):
    """A log in the real tool's layout (nccl-tests 2.13 all_reduce_perf -b 1M -e 1G -f 2 -g 1,
    one process per GPU): header, one '#  Rank' line per GPU, the table, the footer."""
    lines = [f"# Collective test starting: {op}_perf",
             "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
             "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    rank = 0
    for h in hosts:
        for d in range(8):
            lines.append(f"#  Rank {rank:2d} Group  0 Pid {4000 + rank:6d} on {h:>10} device  {d} [0x{16 + d:02x}] "
                         "NVIDIA H100 80GB HBM3")
            rank += 1
    lines += ["#", "#                                                              out-of-place                       "
              "in-place          ",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
              "busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
              "(GB/s)       "]
    n = 8 * len(hosts)
    for size, busbw in rows:
        algbw = busbw * n / (2 * (n - 1))
        t = size / (algbw * 1e3)
        lines.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {t:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0  "
                     f"{t:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0")
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {sum(b for _, b in rows) / len(rows):.3f}", "#",
              ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def healthy_rows():
    # The twin's own 2-node table stands in for a healthy measurement.
    table = _core.nccl_tests(_scenario().to_json(), "{}", "all_reduce", [2], "1MiB", "1GiB")
    return [(r["size"], r["busbw"]) for r in parse_nccl_tests(table)[0].rows]


def test_parses_the_real_layout_and_the_twins(healthy_rows):
    log = parse_nccl_tests(nccl_tests_log(["gpu-node-01", "gpu-node-02"], healthy_rows), "x.log")[0]
    assert log.op == "all_reduce" and log.hosts == ["gpu-node-01", "gpu-node-02"] and log.ranks == 16
    assert log.nodes == 2 and [r["size"] for r in log.rows] == [s for s, _ in healthy_rows]
    with pytest.raises(ValueError, match="empty.log: no nccl-tests result rows"):
        parse_nccl_tests("# nothing here\n", "empty.log")


def test_a_degraded_host_is_localised_from_pair_runs(tmp_path, healthy_rows):
    slow = [(s, b * 0.55 if s >= 8 << 20 else b) for s, b in healthy_rows]  # one NIC at about half rate
    pairs = {("gpu-node-01", "gpu-node-02"): healthy_rows, ("gpu-node-03", "gpu-node-04"): healthy_rows,
             ("gpu-node-05", "gpu-node-06"): slow, ("gpu-node-01", "gpu-node-05"): slow,
             ("gpu-node-02", "gpu-node-06"): healthy_rows}
    paths = []
    for (a, b), rows in pairs.items():
        p = tmp_path / f"all_reduce_{a[-2:]}_{b[-2:]}.log"
        p.write_text(nccl_tests_log([a, b], rows))
        paths.append(p)
    rows, candidates = ct.compare_nccl_tests(_scenario(), paths)
    assert set(rows["log"]) == {p.name for p in paths}
    healthy = rows[rows["log"] == "all_reduce_01_02.log"]
    assert not healthy["short"].any() and healthy["ratio"].between(0.99, 1.01).all()
    bad = rows[rows["log"] == "all_reduce_05_06.log"]
    assert bad[bad["size"] >= 8 << 20]["short"].all() and not bad[bad["size"] < 8 << 20]["short"].any()
    top = candidates[candidates["confidence"] == 1.0]  # the host and its eight NIC cables (which rail: a tie)
    assert set(top["candidate"]) == {"gpu-node-05"} | {f"node5.nic{r}-leaf{r}" for r in range(8)}
    assert candidates[candidates["candidate"] == "gpu-node-06"]["confidence"].iloc[0] < 0.5


def test_cli_compare_prints_a_table_writes_csv_and_refuses_what_it_cannot_read(tmp_path, healthy_rows):
    good = tmp_path / "all_reduce_perf.log"
    good.write_text(nccl_tests_log(["n1", "n2"], healthy_rows))
    csv = tmp_path / "cmp.csv"
    out = subprocess.run(CLI + ["compare", DEFAULT, "--nccl-tests", str(good), "--csv", str(csv), "--set",
                                "network.mode=analytical"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "measured" in out.stdout and "twin" in out.stdout and "1073741824" in out.stdout
    assert csv.read_text().startswith("log,op,nodes,hosts,size,measured_busbw,twin_busbw,ratio,short")
    anon = tmp_path / "run.txt"  # no collective name and no rank lines
    anon.write_text("\n".join(line for line in nccl_tests_log(["n1", "n2"], healthy_rows).splitlines()
                              if "Rank" not in line and "_perf" not in line))
    bad = subprocess.run(CLI + ["compare", DEFAULT, "--nccl-tests", str(anon)], capture_output=True, text=True)
    assert bad.returncode == 2 and "pass --op" in bad.stderr and "Traceback" not in bad.stderr
    ok = subprocess.run(CLI + ["compare", DEFAULT, "--nccl-tests", str(anon), "--op", "all_reduce", "--nodes", "2",
                               "--set", "network.mode=analytical"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def test_step_logs_flag_slow_ranks_by_the_median_rule_and_against_the_twin(tmp_path):
    from clustertwin.compare import read_step_log, slow_ranks
    lines = ["rank,step,time_ms"]
    for step in range(1, 6):
        for rank in range(8):
            t = 2100.0 + rank  # healthy ranks within 0.4% of each other
            if rank == 5:
                t *= 1.25  # one straggler
            lines.append(f"{rank},{step},{t}")
    csv = tmp_path / "steps.csv"
    csv.write_text("\n".join(lines) + "\n")
    steps = read_step_log(csv)
    assert len(steps) == 40 and steps["time_s"].iloc[0] == pytest.approx(2.1)
    table = slow_ranks(steps)
    assert list(table[table["flagged"]]["rank"]) == [5]
    assert table.set_index("rank").loc[5, "slow_steps"] == 5
    # against the twin: every rank 20% over an expected 1.75 s step is slow for an unmodelled reason
    vs_twin = slow_ranks(steps, expected_step_s=1.75)
    assert vs_twin["over_twin"].all() and vs_twin["flagged"].all()
    # a Megatron-LM log with torchrun rank prefixes
    meg = tmp_path / "train.log"
    meg.write_text("\n".join(
        f"[rank{r}]: [2025-01-01 00:00:0{s}] iteration        {s}/    1000 | consumed samples: {128 * s} | "
        f"elapsed time per iteration (ms): {2100 + (400 if r == 2 else 0)}.0 | learning rate: 3.0E-04 |"
        for s in range(1, 4) for r in range(4)) + "\n")
    m = read_step_log(meg)
    assert sorted(m["rank"].unique()) == [0, 1, 2, 3] and m["step"].max() == 3
    assert list(slow_ranks(m).query("flagged")["rank"]) == [2]
    bad = tmp_path / "bad.csv"
    bad.write_text("rank,time\n0,1\n")
    with pytest.raises(ValueError, match="bad.csv: columns step, time_s missing"):
        read_step_log(bad)


def test_cli_compare_step_log(tmp_path):
    csv = tmp_path / "steps.csv"
    csv.write_text("rank,step,time_s\n" + "".join(f"{r},{s},{2.5 if r == 3 else 2.1}\n"
                                                  for s in range(3) for r in range(4)))
    out = subprocess.run(CLI + ["compare", DEFAULT, "--step-log", str(csv), "--set", "network.mode=analytical"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "the twin expects 2.201 s per step" in out.stdout and "# 1 rank(s) flagged" in out.stdout
    assert "14% over the twin's step" in out.stdout
    none = subprocess.run(CLI + ["compare", DEFAULT], capture_output=True, text=True)
    assert none.returncode == 2 and "--nccl-tests LOG... or --step-log FILE" in none.stderr


TWO_TIER = {"name": "two-tier", "cluster": {"gpu": "H100-SXM", "nodes": 32, "gpus_per_node": 8, "nics_per_node": 8,
                                            "nic": "400Gbps",
                                            "fabric": {"topology": "rail_optimized", "tiers": 2, "switch_radix": 32}},
            "network": {"mode": "analytical"}, "traffic": {"pattern": "collective"}}


def test_a_degraded_leaf_is_localised_over_pairs_and_groups(tmp_path, healthy_rows):
    # Radix 32, 2 tiers: nodes 0-15 hang off leaf0-leaf7 (one leaf per rail), nodes 16-31 off
    # leaf8-leaf15; all leaves reach all 8 spines. One bad leaf of the second group (any rail)
    # slows every run that includes a node of 16-31.
    slow = [(s, b * 0.55) for s, b in healthy_rows]
    runs = {(0, 1): False, (2, 17): True, (16, 17): True, (18, 30): True, (3, 4): False, (5, 20): True,
            (6, 7): False, (8, 9, 10, 11): False, (21, 22, 23, 24): True}
    paths = []
    for nodes, bad in runs.items():
        p = tmp_path / ("all_reduce_" + "_".join(map(str, nodes)) + ".log")
        p.write_text(nccl_tests_log([f"gpu-node-{n:02d}" for n in nodes], slow if bad else healthy_rows))
        paths.append(p)
    _, cand = ct.compare_nccl_tests(ct.Scenario(TWO_TIER), paths)
    top = cand[cand["confidence"] == 1.0]
    # The eight leaves of nodes 16-31 explain every short run and no healthy one; an all-rail
    # all-reduce cannot tell which rail's leaf it is (a tie, said as such).
    assert set(top["candidate"]) == {f"leaf{k}" for k in range(8, 16)} and set(top["kind"]) == {"switch"}
    spines = cand[(cand["kind"] == "switch") & cand["candidate"].str.startswith("spine")]
    assert len(spines) == 8 and (spines["confidence"] == 0.4).all()  # 2 of 5 short runs cross the spines
    links = cand[cand["kind"] == "link"]  # cables, as 'a-b' (the link fault syntax)
    cables = links[links["candidate"].str.startswith("leaf")]  # leaf-spine
    assert len(cables) == 16 * 8 and (cables["confidence"] == 0.4).all()
    assert "leaf9-spine3" in set(cables["candidate"])
    nic = links[links["candidate"].str.startswith("node17.")]  # in 2 of 5 short runs
    assert len(nic) == 8 and (nic["confidence"] == 0.4).all()
    assert cand[cand["candidate"] == "gpu-node-17"]["confidence"].iloc[0] == 0.4
    # Explicit host -> node mapping (names without numbers), and what happens without one.
    names = {f"gpu-node-{n:02d}": n for nodes in runs for n in nodes}
    _, same = ct.compare_nccl_tests(ct.Scenario(TWO_TIER), paths, host_nodes=names)
    assert list(same["candidate"]) == list(cand["candidate"])
    with pytest.raises(ValueError, match="host_nodes: no node for host gpu-node-00"):
        ct.compare_nccl_tests(ct.Scenario(TWO_TIER), paths, host_nodes={"x": 1})
    from clustertwin.compare import localise
    anon = [(parse_nccl_tests(nccl_tests_log(["alpha", "beta"], healthy_rows))[0], False),
            (parse_nccl_tests(nccl_tests_log(["alpha", "gamma"], slow))[0], True)]
    only_hosts = localise(anon, ct.Scenario(TWO_TIER))
    assert set(only_hosts["kind"]) <= {"host", "path"} and "does not end in a node number" in only_hosts.attrs["switches"]
    with pytest.raises(ValueError, match="nodes: got node 40, expected 0-31"):
        _core.fabric_switches(ct.Scenario(TWO_TIER).to_json(), "{}", [0, 40])
    assert _core.fabric_switches(ct.Scenario(TWO_TIER).to_json(), "{}", [3]) == ([], [])  # one node: NVLink
    # The CLI ranks the same, and takes the mapping as --hosts FILE.
    sc = tmp_path / "two_tier.json"
    import json
    sc.write_text(json.dumps(TWO_TIER))
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps(names))
    out = subprocess.run(CLI + ["compare", str(sc), "--nccl-tests", *map(str, paths), "--hosts", str(hosts)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "switch leaf8 " in out.stdout and "confidence 1.00" in out.stdout


FLOW_TWO_TIER = {**TWO_TIER, "network": {"mode": "flow"}, "recovery": {"hot_spares": 0},
                 "training_job": {"model": {"preset": "llama3-8b"}, "global_batch_size": 256,
                                  "parallelism": {"tensor_parallel": 8, "data_parallel": 32}}}
FLOW_TWO_TIER.pop("traffic")


def test_a_degraded_nic_link_is_localised_end_to_end(tmp_path):
    """The twin with one NIC cable at a quarter of its rate plays the cluster: its pair and group
    runs (nccl-tests --node-list) become logs in the real tool's format, compared with the healthy
    twin; the cable's host and its NIC cables explain every short run and no healthy one."""
    degraded = {**FLOW_TWO_TIER, "faults": [{"kind": "link_degrade", "link": "node17.nic1-leaf9", "factor": 0.25}]}
    runs = [(2, 17), (3, 18), (16, 17), (0, 1), (5, 20), (4, 30), (6, 7), (9, 25), (17, 24, 26, 28)]
    paths = []
    for nodes in runs:
        df = ct.nccl_tests(ct.Scenario(degraded), minbytes="1M", maxbytes="1G", node_list=nodes)
        p = tmp_path / ("all_reduce_" + "_".join(map(str, nodes)) + ".log")
        p.write_text(nccl_tests_log([f"gpu-node-{n:02d}" for n in nodes], list(zip(df.size_bytes, df.busbw_GBps))))
        paths.append(p)
    rows, cand = ct.compare_nccl_tests(ct.Scenario(FLOW_TWO_TIER), paths)
    short = set(rows[rows["short"]]["log"])
    assert short == {"all_reduce_2_17.log", "all_reduce_16_17.log", "all_reduce_17_24_26_28.log"}
    top = cand[cand["confidence"] == 1.0]
    # Which of node 17's eight NICs cannot be told from all-rail runs: a tie, and the host.
    assert set(top["candidate"]) == {f"node17.nic{r}-leaf{8 + r}" for r in range(8)} | {"gpu-node-17"}
    assert cand.iloc[0]["kind"] == "link" and "leaf9" not in set(top["candidate"])


def test_nccl_tests_node_list_and_faults_are_checked():
    sc = ct.Scenario(FLOW_TWO_TIER)
    healthy = ct.nccl_tests(sc, minbytes="1G", maxbytes="1G", node_list=[16, 17])
    assert list(healthy["nodes"]) == [2]
    slow = ct.nccl_tests(sc.with_overrides({"faults": [{"kind": "link_degrade", "link": "node17.nic1-leaf9",
                                                         "factor": 0.25}]}), minbytes="1G", maxbytes="1G",
                         node_list=[16, 17])
    assert slow["busbw_GBps"].iloc[0] < 0.5 * healthy["busbw_GBps"].iloc[0]
    with pytest.raises(ValueError, match=r"--node-list: got node 40, expected 0..31"):
        ct.nccl_tests(sc, node_list=[1, 40])
    with pytest.raises(ValueError, match="--node-list: node 3 given twice"):
        ct.nccl_tests(sc, node_list=[3, 3])
    timed = sc.with_overrides({"faults": [{"kind": "link_degrade", "link": "leaf9-spine3", "factor": 0.5,
                                           "at": "1s"}]})
    with pytest.raises(ValueError, match=r"faults\[0\]: nccl-tests applies link faults to the whole table"):
        ct.nccl_tests(timed)
    throttled = sc.with_overrides({"faults": [{"kind": "gpu_throttle", "rank": 3, "factor": 0.5}]})
    with pytest.raises(ValueError, match=r"faults\[0\].kind: gpu_throttle does not act in nccl-tests"):
        ct.nccl_tests(throttled)
    out = subprocess.run(CLI + ["nccl-tests", "-", "--node-list", "16-17", "-b", "1G", "-e", "1G"],
                         input=json.dumps(FLOW_TWO_TIER), capture_output=True, text=True)
    assert out.returncode in (0, 2)  # '-' may not be a path the CLI reads; the flag itself must parse
