"""node_kill and hang faults inside training steps (issue 19): the node's ranks stop, their
peers block in what needs them, and the job fails when the failure is detected: by the heartbeat
(recovery.detection) for a crash, or by the collective watchdog
(training_job.runtime.collective_timeout) counted from the first rank left waiting. The report
names where every rank waits (hang_diagnosis)."""
import copy

import pytest

from clustertwin import ScenarioError
from clustertwin.api import run
from clustertwin.cli import main

# 32 GPUs: TP 8 (a node), PP 2, DP 2; node 3 holds stage 1 of replica 1.
BASE = {"name": "node-faults",
        "cluster": {"gpu": "H100-SXM", "nodes": 4, "gpus_per_node": 8, "nics_per_node": 8, "nic": "400Gbps"},
        "network": {"mode": "flow"},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 2},
                         "micro_batch_size": 1, "global_batch_size": 16, "steps": 2},
        "recovery": {"detection": "60s"}}


def report(faults, mode="flow", **runtime):
    sc = copy.deepcopy(BASE)
    sc["network"]["mode"] = mode
    sc["faults"] = faults
    sc["training_job"]["runtime"] = runtime
    return run(sc).report


def healthy_step():
    return report([])["step_time_s"]


def test_a_hang_is_detected_exactly_at_the_collective_timeout():
    at = 0.5 * healthy_step()
    for timeout in (100.0, 300.0):
        r = report([{"kind": "hang", "node": 3, "at": f"{at}s"}], collective_timeout=f"{timeout}s")
        f = r["failure"]
        assert f["detected_by"] == "collective_timeout"
        assert f["first_wait_s"] >= at
        assert r["job_failed_at_s"] == pytest.approx(f["first_wait_s"] + timeout, rel=1e-12)
        assert {x["rank"] for x in r["hang_diagnosis"]["ranks"] if x["state"] == "hung"} == set(range(24, 32))


def test_a_crash_is_detected_by_the_heartbeat_or_the_watchdog_whichever_first():
    at = 0.5 * healthy_step()
    kill = [{"kind": "node_kill", "node": 3, "at": f"{at}s"}]
    r = report(kill)
    assert r["failure"]["detected_by"] == "heartbeat"
    assert r["job_failed_at_s"] == pytest.approx(at + 60.0, rel=1e-12)
    r = report(kill, collective_timeout="10s")
    assert r["failure"]["detected_by"] == "collective_timeout"
    assert r["job_failed_at_s"] == pytest.approx(r["failure"]["first_wait_s"] + 10.0, rel=1e-12)
    assert r["job_failed_at_s"] < at + 60.0


def test_the_diagnosis_names_who_waits_where_and_for_whom():
    r = report([{"kind": "node_kill", "node": 3, "at": f"{0.5 * healthy_step()}s"}])
    h = r["hang_diagnosis"]
    rows = h["ranks"]
    assert sorted(x["rank"] for x in rows) == list(range(32))
    assert {x["rank"] for x in rows if x["state"] == "killed"} == set(range(24, 32))
    assert h["root_cause_ranks"] == list(range(24, 32))
    assert h["cause"] == "ranks_never_arrived"
    waiting = [x for x in rows if x["state"] == "waiting"]
    assert len(waiting) == 24
    for x in waiting:
        assert x["waiting_in"] and x["missing_ranks"], x
        assert x["mismatched_ranks"] == []
        if x["group"] is not None:  # a collective: its group holds the rank and the missing ones
            members = set(h["process_groups"][x["group"]]["ranks"])
            assert x["rank"] in members and set(x["missing_ranks"]) <= members
            assert x["seq"] >= 0
    assert sum(p["count"] for p in h["where"]) == 24
    for key in ("step_time_s", "mfu", "reliability"):
        assert key not in r and key in r["not_computed"]


@pytest.mark.parametrize("mode", ["analytical", "packet"])
def test_node_faults_act_in_every_network_mode(mode):
    at = 0.5 * report([], mode)["step_time_s"]
    r = report([{"kind": "node_kill", "node": 1, "at": f"{at}s"}], mode)
    assert r["job_failed_at_s"] == pytest.approx(at + 60.0, rel=1e-12)
    assert {x["rank"] for x in r["hang_diagnosis"]["ranks"] if x["state"] == "killed"} == set(range(8, 16))


def test_two_nodes_stopped_the_first_detection_wins_and_both_are_named():
    step = healthy_step()
    r = report([{"kind": "hang", "node": 0, "at": f"{0.3 * step}s"},
                {"kind": "node_kill", "node": 3, "at": f"{0.6 * step}s"}])
    assert r["failure"]["detected_by"] == "heartbeat"
    assert r["job_failed_at_s"] == pytest.approx(0.6 * step + 60.0, rel=1e-12)
    states = {x["rank"]: x["state"] for x in r["hang_diagnosis"]["ranks"]}
    assert {g for g, s in states.items() if s == "hung"} == set(range(8))
    assert {g for g, s in states.items() if s == "killed"} == set(range(24, 32))


def test_the_same_fault_gives_the_same_report():
    faults = [{"kind": "node_kill", "node": 2, "at": f"{0.4 * healthy_step()}s"}]
    a, b = report(faults), report(faults)
    for r in (a, b):
        r.pop("sim")
    assert a == b


@pytest.mark.parametrize("faults, message", [
    ([{"kind": "node_kill"}], "faults[0].node: missing"),
    ([{"kind": "hang", "node": 1, "duration": "5s"}], "faults[0].duration"),
    ([{"kind": "node_kill", "node": 1, "at": "100s"}], "faults[0].at: got 100"),
    ([{"kind": "node_kill", "node": 1, "link": "node0.nic0-leaf0"}], "faults[0].link: not used by kind node_kill"),
])
def test_node_faults_that_could_not_act_are_errors(faults, message):
    with pytest.raises((ScenarioError, ValueError)) as e:
        report(faults)
    assert message in str(e.value)


def test_a_node_outside_the_job_is_an_error():
    sc = copy.deepcopy(BASE)
    sc["cluster"]["nodes"] = 5
    sc["faults"] = [{"kind": "node_kill", "node": 4, "at": "0.01s"}]
    with pytest.raises((ScenarioError, ValueError), match="faults\\[0\\].node: got 4, expected a node that runs"):
        run(sc)


def test_node_faults_outside_training_steps_are_errors():
    sc = {"name": "t", "cluster": {"nodes": 4}, "network": {"mode": "flow"},
          "traffic": {"pattern": "incast", "senders": 4, "bytes": "1MB"},
          "faults": [{"kind": "node_kill", "node": 1}]}
    with pytest.raises(ScenarioError, match="faults\\[0\\].kind: node_kill acts in training steps"):
        run(sc)


def test_the_cli_prints_the_failure_and_exits_zero(tmp_path, capsys):
    import json
    sc = copy.deepcopy(BASE)
    sc["faults"] = [{"kind": "hang", "node": 3, "at": f"{0.5 * healthy_step()}s"}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sc))
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "JOB FAILED at" in out and "collective_timeout" in out and "hang " in out
