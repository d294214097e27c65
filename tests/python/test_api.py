import json
import subprocess
import sys

import pytest

import clustertwin as ct

ROOT_LAUNCHER = "./clustertwin"


def test_load_and_validate_default():
    sc = ct.load("scenarios/default.json")
    sc.validate()
    assert sc.data["cluster"]["nodes"] == 1280


def test_bad_value_names_key_and_expectation():
    sc = ct.load("scenarios/default.json").with_overrides({"cluster.nic": 400})
    with pytest.raises(ct.ScenarioError) as e:
        sc.validate()
    assert "cluster.nic" in str(e.value) and "400Gbps" in str(e.value)


def test_unknown_key_is_an_error():
    with pytest.raises(ct.ScenarioError, match="did you mean"):
        ct.Scenario({"cluster": {"nodes": 2, "nicss_per_node": 8}, "traffic": {"pattern": "incast"}}).validate()


def test_schema_lists_every_section():
    s = ct.schema()
    for section in ["cluster", "network", "training_job", "traffic", "trace", "faults", "failures", "recovery"]:
        assert section in s["properties"]


def test_scenario_docstring_comes_from_the_table():
    assert "cluster.fabric.switch_radix" in ct.Scenario.__doc__


FAST = {"network.mode": "analytical"}  # folds the identical replicas: milliseconds


def test_run_default_report_is_deterministic():
    a = ct.run(ct.load("scenarios/default.json"), overrides=FAST).report
    b = ct.run(ct.load("scenarios/default.json"), overrides=FAST).report
    a.pop("sim"), b.pop("sim")
    assert a == b
    assert a["memory"]["fits"] is True
    assert 0.2 < a["mfu"] < 0.7
    for key in ["step_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s", "tokens_per_s_per_gpu",
                "breakdown", "memory", "collectives", "network", "ranks"]:
        assert key in a, key
    rel = a["reliability"]
    assert 0.5 < rel["goodput"] < 1.0 and rel["interruptions"] > 0
    assert abs(rel["optimal_checkpoint_interval_s"] - rel["young_daly_interval_s"]) < 0.05 * rel["young_daly_interval_s"]
    assert a["storage"]["checkpoint_bytes"] > 14 * 174e9
    total = sum(a["breakdown"].values())
    assert abs(total - a["step_time_s"]) < 1e-6 * a["step_time_s"]


def test_flow_mode_small_cluster_and_tables(tmp_path):
    sc = ct.Scenario({
        "cluster": {"nodes": 8},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "global_batch_size": 32,
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 4}},
        "recovery": {"hot_spares": 0},
    })
    r = ct.run(sc, trace=str(tmp_path / "trace.json"))
    assert r.report["sim"]["events"] > 0
    assert len(r.ranks) == 64
    assert set(["gpu", "step_time_s", "compute_s", "slow"]) <= set(r.ranks.columns)
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert any(e.get("name") == "forward" for e in trace["traceEvents"])


def test_throttled_gpu_is_flagged_slow():
    sc = ct.Scenario({
        "cluster": {"nodes": 4},
        "network": {"mode": "analytical"},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "global_batch_size": 32,
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 2}},
        "faults": [{"kind": "gpu_throttle", "rank": 17, "factor": 0.8}],
        "recovery": {"hot_spares": 0},
    })
    report = ct.run(sc).report
    assert report["ranks"]["slow_ranks"] == [17]
    kvs = report["ranks"]["keep_vs_swap"]
    assert kvs["step_time_with_slow_s"] > kvs["step_time_without_slow_s"]
    assert kvs["break_even_steps"] > 0


def test_cli_run_json_and_errors(tmp_path):
    out = subprocess.run([ROOT_LAUNCHER, "run", "scenarios/default.json", "--set", "network.mode=analytical",
                          "--json", "--out", str(tmp_path)],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["cluster"]["gpus"] == 10240
    assert (tmp_path / "report.json").exists()
    with open(tmp_path / "fabric_links.csv") as f:
        header, first = f.readline().strip().split(","), f.readline().strip().split(",")
    assert header == ["link", "src_tier", "src_index", "dst_tier", "dst_index", "plane", "bytes", "utilization"]
    assert first[:4] == ["0", "0", "0", "1"]  # NIC 0's uplink to its leaf
    bad = subprocess.run([ROOT_LAUNCHER, "run", "scenarios/default.json", "--set", "network.mode=quantum"],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "network.mode" in bad.stderr and "analytical" in bad.stderr


def test_cli_schema_is_json():
    out = subprocess.run([ROOT_LAUNCHER, "schema"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["title"] == "ClusterTwin scenario"


def test_cli_plan_gives_three_cases_and_a_layout():
    out = subprocess.run([ROOT_LAUNCHER, "plan", "--params", "7e9", "--tokens", "100e9", "--days", "10", "--json"],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    gpus = [result["cases"][c]["gpus"] for c in ["optimistic", "base", "conservative"]]
    assert gpus[0] <= gpus[1] <= gpus[2]
    # 6 N D / (T x peak x MFU), rounded up to whole 8-GPU nodes
    expected = 6 * 7e9 * 100e9 / (10 * 86400 * 989.4e12 * 0.4)
    assert expected <= gpus[1] < expected + 8
    best = result["layout"]["best"]
    assert best is not None and 0.2 < best["mfu"] < 0.8
    bad = subprocess.run([ROOT_LAUNCHER, "plan", "--params", "-1", "--tokens", "1e9", "--days", "1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--params" in bad.stderr


def test_cli_nccl_tests_table():
    out = subprocess.run([ROOT_LAUNCHER, "nccl-tests", "scenarios/default.json", "--op", "all_gather", "--nodes", "2",
                          "--maxbytes", "1MiB"], capture_output=True, text=True, check=True)
    assert "busbw" in out.stdout and "Avg bus bandwidth" in out.stdout


def test_ecn_tuning_sweep_marks_the_pareto_front():
    from clustertwin.frames import pareto

    df = ct.sweep(ct.load("scenarios/ecn-tuning-incast.yaml"),
                  grid={"network.ecn.kmax": ["400KB", "1600KB"], "network.ecn.pmax": [0.05, 1.0]},
                  overrides={"network.dcqcn.profile": "hpcc-ns3"}, workers=2)
    assert len(df) == 4 and df["error"].isna().all()
    assert (df["network.dropped_packets"] == 0).all()  # lossless class under PFC
    front = pareto(df, minimize=["traffic.short_fct_p99_s", "network.pfc_paused_time_s"],
                   maximize=["traffic.long_flow_gbps_mean"])
    assert front.any()
    # with fast-reacting DCQCN the thresholds set the standing queue: marking early and hard
    # (kmax 400KB, pmax 1) shortens the short flows' tail at least twofold against a deep,
    # gently marked queue (kmax 1600KB, pmax 0.05)
    short = df.set_index(["network.ecn.kmax", "network.ecn.pmax"])["traffic.short_fct_p99_s"]
    assert short[("1600KB", 0.05)] >= 2 * short[("400KB", 1.0)]
    # a dominated point: worse on every objective than some other point
    toy = df.iloc[:2].copy()
    toy["traffic.short_fct_p99_s"] = [1.0, 2.0]
    toy["network.pfc_paused_time_s"] = [1.0, 2.0]
    toy["traffic.long_flow_gbps_mean"] = [2.0, 1.0]
    assert list(pareto(toy, ["traffic.short_fct_p99_s", "network.pfc_paused_time_s"],
                       ["traffic.long_flow_gbps_mean"])) == [True, False]


def test_pfc_storm_scenario_is_detected_with_its_victims():
    sc = ct.load("scenarios/pfc-storm.yaml")
    r = ct.run(sc).report
    storms = r["network"]["pfc_storms"]
    assert len(storms) == 1 and storms[0]["port"] == "leaf0->node0.nic0"
    assert abs(storms[0]["detected_s"] - storms[0]["start_s"] - 0.020) < 1e-6
    # the pause spreads up the Clos and stalls flows that never go to the stormed NIC
    assert r["network"]["max_pause_hops"] >= 2
    assert r["network"]["victim_flows"] > 0
    assert all(v["dst_gpu"] != 0 for v in r["network"]["victims"])
    assert r["network"]["dropped_packets"] == 0
    calm = ct.run(sc, overrides={"faults": []}).report
    assert calm["network"]["victim_flows"] == 0 and not calm["network"]["pfc_storms"]

def test_websearch_flows_follow_the_distribution_and_the_load():
    sc = ct.load("tools/ns3-reference/fabric.yaml")
    o = {"traffic.pattern": "websearch", "traffic.load": 0.4, "traffic.duration": "20ms", "network.mode": "analytical"}
    r = ct.run(sc, overrides=o).report
    flows = r["tables"]["flows"]
    assert len(flows) == r["traffic"]["flows"] > 1000
    assert all(0 <= f["start_s"] < 20e-3 and f["src_gpu"] != f["dst_gpu"] for f in flows)
    # offered load: bytes over (window x GPUs x NIC rate), within 15% of 0.4 for ~1,900 flows of
    # a heavy-tailed distribution; the mean size within 15% of the CDF's 1.71 MB
    sizes = [f["bytes"] for f in flows]
    assert abs(sum(sizes) * 8 / (20e-3 * 32 * 100e9) / 0.4 - 1) < 0.15
    assert abs(sum(sizes) / len(sizes) / 1.71e6 - 1) < 0.15
    assert ct.run(sc, overrides=o).report["tables"]["flows"] == flows  # same seed, same flows
    assert ct.run(sc, overrides=dict(o, seed=2)).report["tables"]["flows"] != flows
    h = ct.run(sc, overrides=dict(o, **{"traffic.pattern": "hadoop"})).report["tables"]["flows"]
    assert len(h) > 5 * len(flows)  # mean 126 KB: many more, smaller flows at the same load
    assert r["traffic"]["short_flows"] > 0 and r["traffic"]["short_slowdown_p50"] >= 1.0


def test_background_incast_reports_the_long_flows(tmp_path):
    sc = ct.load("tools/ns3-reference/fabric.yaml")
    o = {"traffic.pattern": "websearch", "traffic.load": 0.2, "traffic.duration": "200us",
         "traffic.background": "incast", "traffic.fan_in": 4, "traffic.size": "2MiB"}
    r = ct.run(sc, overrides=o).report
    first = r["tables"]["flows"][:4]
    assert [(f["src_gpu"], f["dst_gpu"], f["bytes"], f["start_s"]) for f in first] == \
        [(g, 0, 2 << 20, 0.0) for g in (1, 2, 3, 4)]
    assert r["traffic"]["long_flows"] == 4 and 0 < r["traffic"]["long_flow_gbps_mean"] <= 100
    none = ct.run(sc, overrides=dict(o, **{"traffic.background": "none"})).report
    assert len(none["tables"]["flows"]) == len(r["tables"]["flows"]) - 4


def test_flows_file_runs_its_flows_and_names_bad_rows(tmp_path):
    sc = ct.load("tools/ns3-reference/fabric.yaml")
    good = tmp_path / "flows.csv"
    good.write_text("src_gpu,dst_gpu,bytes,start_s\n0,5,100000,0\n3,9,2000000,0.0001\n")
    r = ct.run(sc, overrides={"traffic.pattern": "file", "traffic.flows_file": str(good)}).report
    rows = r["tables"]["flows"]
    assert [(f["src_gpu"], f["dst_gpu"], f["bytes"]) for f in rows] == [(0, 5, 100000), (3, 9, 2000000)]
    assert all(f["fct_s"] > 0 for f in rows) and r["traffic"]["flows"] == 2
    # a chain: the second flow starts 10 us after the first is delivered
    chain = tmp_path / "chain.csv"
    chain.write_text("src_gpu,dst_gpu,bytes,start_s,after\n0,5,100000,0,-1\n5,9,100000,0.00001,0\n")
    rows = ct.run(sc, overrides={"traffic.pattern": "file", "traffic.flows_file": str(chain)}).report["tables"]["flows"]
    assert abs(rows[1]["started_s"] - (rows[0]["started_s"] + rows[0]["fct_s"] + 1e-5)) < 1e-9
    for body, needle in [("h\n0,1,10,0,0\n", "earlier flow"), ("h\n0,1,10,0,x\n", "[,after]"),
                         ("h\n0,0,10,0\n", "line 2"), ("h\n0,99,10,0\n", "0 .. 31"),
                         ("h\n0,1,-5,0\n", "positive"), ("h\n0,1,5\n", "expected src_gpu,dst_gpu,bytes,start_s"),
                         ("h\n", "no flows")]:
        bad = tmp_path / "bad.csv"
        bad.write_text(body)
        with pytest.raises(ct.ScenarioError, match="traffic.flows_file") as e:
            ct.run(sc, overrides={"traffic.pattern": "file", "traffic.flows_file": str(bad)})
        assert needle in str(e.value)
    with pytest.raises(ct.ScenarioError, match="traffic.flows_file"):
        ct.run(sc, overrides={"traffic.pattern": "file"})


def test_packet_mode_training_step_agrees_with_flow_mode():
    # One step of a 64-GPU slice (TP 8, PP 2, DP 4), every collective and pipeline transfer as
    # MTU packets through the switches, against the flow backend: within 2%.
    o = {"training_job.model.layers": 2, "training_job.global_batch_size": 8}
    packet = ct.run("scenarios/packet-slice-step.yaml", overrides=o).report
    flow = ct.run("scenarios/packet-slice-step.yaml", overrides=dict(o, **{"network.mode": "flow"})).report
    assert abs(packet["step_time_s"] / flow["step_time_s"] - 1) < 0.02
    net = packet["network"]
    assert net["packets_delivered"] > 0 and net["dropped_packets"] == 0 and net["max_queue_bytes"] > 0
    assert "network.ecn_marked_fraction" not in packet.get("not_computed", {})
    assert "network.ecn_marked_fraction" in flow["not_computed"] and "cnps" not in flow["network"]


def test_trace_replay_in_packet_mode_takes_the_scenarios_packet_keys():
    # The network keys of the scenario reach a trace replay in packet mode (MTU here: a quarter
    # of the MTU, four times the packets) and the report carries the packet-mode figures.
    runs = {mtu: ct.run("scenarios/trace-chakra-allreduce.yaml",
                        overrides={"network.mode": "packet", "network.mtu": mtu}).report for mtu in ("4KiB", "1KiB")}
    assert runs["1KiB"]["network"]["packets_delivered"] == 4 * runs["4KiB"]["network"]["packets_delivered"] > 0
    assert runs["4KiB"]["network"]["dropped_packets"] == 0


@pytest.mark.parametrize("key,value", [
    ("network.dcqcn.profile", "hpcc-ns3"), ("network.dcqcn.g", 0.05), ("network.dcqcn.initial_alpha", 0.2),
    ("network.dcqcn.alpha_period", "5us"), ("network.dcqcn.rate_reduce_period", "8us"),
    ("network.dcqcn.min_dec_factor", 0.9), ("network.dcqcn.min_rate", "40Gbps"), ("network.dcqcn.clamp_target", "yes"),
    ("network.dcqcn.increase_period", "10us"), ("network.dcqcn.byte_counter", "64KiB"),
    ("network.dcqcn.fast_recovery_steps", 4), ("network.dcqcn.rai", "2Gbps"), ("network.dcqcn.rhai", "10Gbps"),
    ("network.dcqcn.cnp_interval", "20us"), ("network.ecn.mark_on", "enqueue"), ("network.ecn.kmin", "50KB"),
    ("network.ecn.kmax", "3MB"), ("network.pfc.alpha", 0.005), ("network.congestion_control", "none")])
def test_every_packet_key_changes_an_incast(key, value):
    # An 8:1 incast of 4 MiB flows in packet mode (tools/ns3-reference/incast.yaml with the
    # default DCQCN set and ECN scaled with speed): each key moves its completion, CNPs, queue
    # or pauses.
    base = {"network.dcqcn.profile": "hpcc-ns3-paper", "network.ecn.kmin": "0B", "network.ecn.kmax": "0B"}
    figures = lambda r: (r["traffic"]["completion_time_s"], r["network"]["cnps"], r["network"]["max_queue_bytes"],
                         r["network"]["pfc_pause_frames"])
    sc = ct.load("tools/ns3-reference/incast.yaml")
    before = figures(ct.run(sc, overrides=base).report)
    after = figures(ct.run(sc, overrides=dict(base, **{key: value})).report)
    assert after != before, f"{key}={value} changed nothing: {before}"


def test_flow_solve_quantum_stays_within_its_bound_of_the_exact_solver():
    # network.solve_quantum delays a rate change by up to one quantum: on the default model on
    # 1,024 GPUs (16 replicas of TP 8 x PP 8) the step of the default quantum stays within 0.2%
    # of the exact solver's (tools/quantum_error.py measures the larger scenarios; docs/performance.md).
    sc = ct.load("scenarios/default.json")
    over = {"cluster.nodes": 128, "training_job.parallelism.data_parallel": 16,
            "training_job.global_batch_size": 24 * 16, "recovery.hot_spares": 0, "network.mode": "flow"}
    exact = ct.run(sc, overrides={**over, "network.solve_quantum": "0s"}).report
    default = ct.run(sc, overrides=over).report
    assert default["step_time_s"] == pytest.approx(exact["step_time_s"], rel=2e-3)
    assert default["sim"]["events"] < exact["sim"]["events"]  # the quantum is what saves the work


def _ring_on_fat_tree(layers: int, hidden: int, heads: int, ffn_hidden: int, **extra) -> dict:
    """Overrides of the default scenario: one data-parallel ring of 256 single-GPU ranks on 32
    nodes of a 3-tier fat tree of radix-16 switches, with a model of the given shape."""
    return {"cluster.nodes": 32, "cluster.fabric.topology": "fat_tree", "cluster.fabric.switch_radix": 16,
            "training_job.parallelism.pipeline_parallel": 1, "training_job.parallelism.tensor_parallel": 1,
            "training_job.parallelism.data_parallel": 256, "training_job.global_batch_size": 256,
            "training_job.model.layers": layers, "training_job.model.hidden": hidden,
            "training_job.model.heads": heads, "training_job.model.kv_heads": heads,
            "training_job.model.ffn_hidden": ffn_hidden, "recovery.hot_spares": 0, **extra}


def test_dmodk_routing_removes_the_hash_collisions_of_ecmp_in_both_modes():
    # cluster.fabric.routing: 256 single-GPU data-parallel ranks on a 3-tier fat tree of radix-16
    # switches. Their ring's neighbour exchange is a shift permutation: ECMP's hash makes some
    # of its flows share an uplink (within the one ring: both modes see it); InfiniBand's
    # destination-mod-k routes share none, so the gradient all-reduce runs at the NICs' rate.
    sc = ct.load("scenarios/default.json")
    over = _ring_on_fat_tree(layers=8, hidden=2048, heads=16, ffn_hidden=8192)
    for mode in ("analytical", "flow"):
        dp = {r: ct.run(sc, overrides={**over, "network.mode": mode, "cluster.fabric.routing": r}).report
              ["breakdown"]["exposed_dp_comm_s"] for r in ("ecmp", "dmodk")}
        assert dp["dmodk"] < 0.5 * dp["ecmp"], (mode, dp)
    with pytest.raises(ValueError, match="cluster.fabric.routing"):
        ct.run(sc, overrides={**over, "cluster.fabric.routing": "ospf"})


def test_queue_pairs_per_connection_spread_ecmp_collisions_in_every_mode():
    # network.qps_per_connection (NCCL_IB_QPS_PER_CONNECTION): the same 256-rank ring on ECMP,
    # each connection on 16 queue pairs hashed onto their own uplinks: the collisions of one QP
    # per connection mostly vanish, in analytical, flow and packet mode alike; under
    # destination-mod-k routing (one path per destination) the key changes nothing.
    sc = ct.load("scenarios/default.json")
    over = _ring_on_fat_tree(layers=2, hidden=1024, heads=8, ffn_hidden=4096,
                             **{"training_job.model.vocab": 1024, "training_job.steps": 1})
    for mode in ("analytical", "flow", "packet"):
        dp = {q: ct.run(sc, overrides={**over, "network.mode": mode, "network.qps_per_connection": q}).report
              ["breakdown"]["exposed_dp_comm_s"] for q in (1, 16)}
        assert dp[16] < 0.8 * dp[1], (mode, dp)
    dmodk = {**over, "cluster.fabric.routing": "dmodk", "network.mode": "flow"}
    assert (ct.run(sc, overrides={**dmodk, "network.qps_per_connection": 16}).report["step_time_s"]
            == ct.run(sc, overrides=dmodk).report["step_time_s"])
    for bad in (0, 129):
        with pytest.raises(ValueError, match="network.qps_per_connection"):
            ct.run(sc, overrides={**over, "network.qps_per_connection": bad})
