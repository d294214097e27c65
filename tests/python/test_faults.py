"""faults[]: every accepted kind acts where it is accepted, and is an error elsewhere (issue 19).

link_degrade and slow_receiver change link rates inside training steps (flow and packet
modes), link_down and switch_down fail links in flow mode (network/capacity_faults.h); node_kill
and hang stop ranks (test_node_faults.py); keys a kind does not use are errors."""
import copy

import pytest

from clustertwin import ScenarioError
from clustertwin.api import run
from clustertwin.cli import main

BASE = {"name": "faults", "cluster": {"gpu": "H100-SXM", "nodes": 4, "gpus_per_node": 8, "nics_per_node": 8,
                                      "nic": "400Gbps"},
        "network": {"mode": "flow"},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 1, "data_parallel": 4},
                         "micro_batch_size": 1, "global_batch_size": 32, "steps": 2}}
LINK = "node0.nic0-leaf0"  # rail 0 of node 0: one of the 8 rail rings of the DP collectives


def report(faults, mode="flow"):
    sc = copy.deepcopy(BASE)
    sc["network"]["mode"] = mode
    sc["faults"] = faults
    return run(sc).report


def degrade(factor, link=LINK, **timing):
    return {"kind": "link_degrade", "link": link, "factor": factor, **timing}


def test_a_degraded_rail_link_slows_its_ring_by_the_closed_form():
    # DP all-gather / reduce-scatter: 8 rail rings per step, one crosses the degraded link.
    # A bandwidth-bound ring runs at its slowest link, so the mean over the 8 rings is
    # base x (7 + 1/f) / 8 (the latency terms do not scale: within 1%).
    base = {(c["op"], c["count"]): c["time_s"] for c in report([])["collectives"]}
    for f in (0.5, 0.25):
        for c in report([degrade(f)])["collectives"]:
            expected = base[(c["op"], c["count"])] * (7 + 1 / f) / 8
            assert c["time_s"] == pytest.approx(expected, rel=0.01), (f, c)


def test_degrade_acts_in_flow_and_packet_mode_and_faults_on_a_link_multiply():
    for mode in ("flow", "packet"):
        healthy = report([], mode)["step_time_s"]
        slow = report([degrade(0.25)], mode)["step_time_s"]
        assert slow > 1.3 * healthy, mode
    one = report([degrade(0.25)])["step_time_s"]
    two = report([degrade(0.5), degrade(0.5)])["step_time_s"]
    assert two == pytest.approx(one, rel=1e-9)
    # One direction ("a->b") is a subset of both ("a-b").
    up = report([degrade(0.25, "node0.nic0->leaf0")])["step_time_s"]
    assert report([])["step_time_s"] < up <= one


def test_a_fault_acts_only_in_its_window():
    healthy = report([])["step_time_s"]
    permanent = report([degrade(0.25, at="0.18s")])["step_time_s"]
    window = report([degrade(0.25, at="0.18s", duration="30ms")])["step_time_s"]
    # Step 2 runs from about 0.10 s to 0.21 s; its DP collectives at the end see the fault.
    assert healthy < window < permanent


def test_a_slow_receiver_slows_the_links_into_its_nics():
    healthy = report([])["step_time_s"]
    all_nics = report([{"kind": "slow_receiver", "node": 1, "factor": 0.5}])["step_time_s"]
    one_nic = report([{"kind": "slow_receiver", "node": 1, "nic": 0, "factor": 0.5}])["step_time_s"]
    assert healthy < one_nic <= all_nics


SPINE_BASE = {"name": "link-down", "cluster": {"gpu": "H100-SXM", "nodes": 4, "gpus_per_node": 8, "nics_per_node": 8,
                                              "nic": "400Gbps",
                                              "fabric": {"topology": "fat_tree", "tiers": 2, "switch_radix": 8}},
              "network": {"mode": "flow"},
              "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                               "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 1, "data_parallel": 4},
                               "micro_batch_size": 1, "global_batch_size": 32, "steps": 2}}


def spine_report(faults, **network):
    sc = copy.deepcopy(SPINE_BASE)
    sc["faults"] = faults
    sc["network"].update(network)
    return run(sc).report


def test_a_link_down_before_the_step_reroutes_and_one_mid_transfer_costs_a_retransmission():
    healthy = spine_report([])
    busy = max(healthy["network"]["top_links"], key=lambda l: l["utilization"])["link"]
    uplink = next(l["link"] for l in healthy["network"]["top_links"] if "spine" in l["link"])
    a, b = uplink.split("->")
    # Down from time zero: every transfer routes around it, no stall, ECMP has other uplinks.
    rerouted = spine_report([{"kind": "link_down", "link": f"{a}-{b}"}])
    assert rerouted["step_time_s"] < healthy["step_time_s"] + 0.5
    # Down while the DP collectives of step 2 cross it: the transfers on it lose their packets
    # and wait one retransmission timeout (NCCL_IB_TIMEOUT 20: 4.29 s) before resuming. The
    # first of a few instants from 1.75 step times back (the run ends at about 1.86) at which
    # the failure cuts a transfer the step waits for: which one depends on the solver's timing
    # to the microsecond (network.solve_quantum).
    for frac in (1.75, 1.72, 1.7, 1.66, 1.64, 1.6, 1.56):
        at = healthy["step_time_s"] * frac
        mid = spine_report([{"kind": "link_down", "link": f"{a}-{b}", "at": f"{at}s"}])
        if mid["network"]["transfers"]["cut_by_failures"] >= 1 and mid["step_time_s"] > healthy["step_time_s"] + 1:
            break
    stall = mid["step_time_s"] - healthy["step_time_s"]
    assert 0.95 * 4.295 <= stall < 4.295 + healthy["step_time_s"], (stall, busy)
    # Nothing lost or counted twice: every transfer started is delivered, with all its bytes,
    # and the ones the failure cut are reported, each resumed once.
    t = mid["network"]["transfers"]
    assert t["started"] == t["delivered"] and t["in_flight_at_end"] == 0
    assert t["delivered_bytes"] == pytest.approx(t["started_bytes"], rel=1e-9)
    assert t["cut_by_failures"] >= 1 and t["resumed_after_retransmission"] == t["cut_by_failures"]
    assert 0 < t["cut_bytes_left"] < t["started_bytes"]
    assert rerouted["network"]["transfers"]["cut_by_failures"] == 0  # down before anything crossed it
    shorter = spine_report([{"kind": "link_down", "link": f"{a}-{b}", "at": f"{at}s"}],
                           rdma_retransmit_timeout="0.5s")
    assert 0.95 * 0.5 <= shorter["step_time_s"] - healthy["step_time_s"] < 0.5 + healthy["step_time_s"]


def test_a_spine_switch_down_fails_all_its_links():
    healthy = spine_report([])
    uplink = next(l["link"] for l in healthy["network"]["top_links"] if "spine" in l["link"])
    spine = next(end for end in uplink.split("->") if end.startswith("spine"))
    # From time zero: the other spines carry everything.
    assert spine_report([{"kind": "switch_down", "switch": spine}])["step_time_s"] < 1.5 * healthy["step_time_s"]
    # Mid-collective: the transfers through it wait one retransmission timeout.
    at = healthy["step_time_s"] * 1.75
    stall = spine_report([{"kind": "switch_down", "switch": spine, "at": f"{at}s"}])["step_time_s"] - healthy["step_time_s"]
    assert 0.95 * 4.295 <= stall < 4.295 + healthy["step_time_s"]
    # A leaf is the only way out of its NICs: the communicator errors out and the job fails.
    dead_leaf = spine_report([{"kind": "switch_down", "switch": "leaf0", "at": "0.15s"}])
    assert dead_leaf["failure"]["detected_by"] == "communicator_error"
    assert dead_leaf["job_failed_at_s"] >= 0.15 + 4.294967
    with pytest.raises(ValueError, match="faults\\[0\\].switch: got 'nope'"):
        spine_report([{"kind": "switch_down", "switch": "nope"}])


def test_a_nic_with_its_only_uplink_down_fails_the_job():
    # Its transfers in flight wait one retransmission timeout (4.295 s), find no path, and the
    # communicator aborts: the job fails then, and the report says where every rank stood.
    r = spine_report([{"kind": "link_down", "link": "node0.nic0-leaf0", "at": "0.15s"}])
    f = r["failure"]
    assert f["detected_by"] == "communicator_error"
    assert 0.15 + 4.294967 <= r["job_failed_at_s"] <= 0.15 + 4.294967 + 0.2
    assert "path" in f["communicator_error"]["message"] and "node0.nic0" in f["communicator_error"]["message"]
    assert "step_time_s" in r["not_computed"] and "hang_diagnosis" in r


@pytest.mark.parametrize("faults, message", [
    ([degrade(0.5, "nope->x")], "faults[0].link: got 'nope->x', expected a link of the topology"),
    ([degrade(0.5, at="100s")], "faults[0].at: got 100"),
    ([{"kind": "link_down", "link": LINK, "factor": 0.5}], "faults[0].factor: not used by kind link_down"),
    ([{"kind": "switch_down"}], "faults[0].switch: missing"),
    ([{"kind": "link_down", "link": LINK, "switch": "leaf0"}], "faults[0].switch: not used by kind link_down"),
    ([{"kind": "gpu_throttle", "rank": 3, "factor": 0.5, "at": "1s"}], "faults[0].at"),
    ([{"kind": "gpu_throttle", "rank": 3, "factor": 0.5, "link": LINK}], "faults[0].link: not used by kind gpu_throttle"),
    ([{"kind": "pause_storm", "node": 0, "nic": 0}], "faults[0].kind: pause_storm acts in traffic studies"),
])
def test_faults_that_would_not_act_are_errors(faults, message):
    with pytest.raises((ScenarioError, ValueError)) as e:
        report(faults)
    assert message in str(e.value)


def test_analytical_mode_rejects_link_faults(tmp_path):
    sc = copy.deepcopy(BASE)
    sc["network"]["mode"] = "analytical"
    sc["faults"] = [degrade(0.5)]
    path = tmp_path / "s.json"
    import json
    path.write_text(json.dumps(sc))
    assert main(["run", str(path)]) == 2
    with pytest.raises(ScenarioError, match="network.mode analytical"):
        run(sc)


def test_a_dual_homed_nic_survives_its_uplink_failure():
    # cluster.fabric.nic_uplinks: 2 cables every NIC to two leaves (two planes, half rate each):
    # the transfers on the dead uplink wait one retransmission timeout and resume on the other
    # port, and the job goes on; with one uplink the same failure fails the job.
    sc = copy.deepcopy(SPINE_BASE)
    sc["cluster"]["fabric"] = {"topology": "rail_optimized", "tiers": 2, "switch_radix": 16}
    single = run(dict(sc, faults=[{"kind": "link_down", "link": "node0.nic0-leaf0", "at": "0.15s"}])).report
    assert single["failure"]["detected_by"] == "communicator_error"
    sc["cluster"]["fabric"]["nic_uplinks"] = 2
    healthy = run(sc).report
    # NCCL's channels use both ports: a healthy dual-homed NIC moves as much as a single 400G port.
    assert healthy["step_time_s"] == pytest.approx(run(dict(sc, faults=[])).report["step_time_s"])
    single_healthy = copy.deepcopy(sc)
    single_healthy["cluster"]["fabric"]["nic_uplinks"] = 1
    assert healthy["step_time_s"] == pytest.approx(run(single_healthy).report["step_time_s"], rel=1e-6)
    dual = run(dict(sc, faults=[{"kind": "link_down", "link": "node0.nic0-leaf0.plane0", "at": "0.15s"}])).report
    assert "job_failed_at_s" not in dual
    assert healthy["step_time_s"] < dual["step_time_s"] < healthy["step_time_s"] + 4.295 + 0.2
    bad = copy.deepcopy(sc)
    bad["cluster"]["fabric"]["topology"] = "fat_tree"
    with pytest.raises(ScenarioError, match="cluster.fabric.nic_uplinks: got 2, expected 1 with topology fat_tree"):
        run(bad)
