"""The kill-a-node drill (issue 19, models/scenario/drill.h): the job's timeline from a node's
crash to steady throughput, beside the reliability model's closed form."""
import copy
import json

import pytest

from clustertwin import ScenarioError, drill
from clustertwin.cli import main

# 32 GPUs on 4 of 5 nodes (one hot spare); checkpoints every 4 steps, synchronous, on the
# front-end storage network (no flush on the compute fabric).
BASE = {"name": "drill",
        "cluster": {"gpu": "H100-SXM", "nodes": 5, "gpus_per_node": 8, "nics_per_node": 8, "nic": "400Gbps"},
        "network": {"mode": "flow"},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 2},
                         "micro_batch_size": 1, "global_batch_size": 16, "steps": 2,
                         "checkpoint": {"interval_steps": 4, "async_save": False}},
        "recovery": {"detection": "60s", "restart": "600s", "repair": "24h"}}


def scenario(**changes):
    sc = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = sc
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return sc


def phases(result):
    return {p["phase"]: p for p in result["phases"]}


def test_the_deterministic_drill_equals_its_closed_form():
    probe = drill(BASE, kill=3, at="0s")
    step, save = probe["step_time_s"], probe["checkpoint"]["save_s"]
    cycle = 4 * step + save
    at = 2 * cycle + 1.5 * step  # in the second step after the second checkpoint
    r = drill(BASE, kill=3, at=f"{at!r}s")
    assert r["killed_during"] == "step" and r["detected_by"] == "heartbeat"
    assert r["checkpoint"]["restored_step"] == 8 and r["steps_done_at_kill"] == 9
    assert r["lost_steps"] == 1
    assert r["lost_work_s"] == pytest.approx(1.5 * step, rel=1e-9)
    expected = 60 + 600 + r["checkpoint"]["restore_s"] + 1.5 * step
    assert r["rto_s"] == pytest.approx(expected, rel=1e-9)
    assert r["closed_form_rto_s"] == pytest.approx(r["rto_s"], rel=1e-9)
    # The phases tile the time from the kill to steady throughput.
    ph = r["phases"]
    assert [p["phase"] for p in ph] == ["train", "detect", "restart", "restore", "replay", "steady"]
    for a, b in zip(ph, ph[1:]):
        assert b["start_s"] == pytest.approx(a["end_s"], rel=1e-12)
    assert phases(r)["steady"]["start_s"] - at == pytest.approx(r["rto_s"], rel=1e-12)
    assert r["gpu_hours_lost"] == pytest.approx(r["rto_s"] * 32 / 3600, rel=1e-12)


def test_without_a_spare_the_job_waits_for_the_repair():
    sc = scenario(cluster__nodes=4)
    r = drill(sc, kill=1, at="0.1s")
    assert r["hot_spares"] == 0
    wait = phases(r)["wait_for_repair"]
    assert wait["end_s"] == pytest.approx(0.1 + 86400, rel=1e-12)
    assert r["closed_form"]["repair_wait_s"] == pytest.approx(86400 - 60)
    assert r["closed_form_rto_s"] == pytest.approx(r["rto_s"], rel=1e-9)


def test_a_kill_during_an_asynchronous_flush_restores_the_previous_checkpoint():
    sc = scenario(training_job__checkpoint__async_save=True)
    probe = drill(sc, kill=3, at="0s")
    step, save, flush = probe["step_time_s"], probe["checkpoint"]["save_s"], probe["checkpoint"]["flush_s"]
    assert flush > 0
    second_save_end = 2 * (4 * step + save)  # flushes are shorter than a cycle here
    assert flush < 4 * step
    during = drill(sc, kill=3, at=f"{second_save_end + 0.5 * flush!r}s")
    assert during["killed_during"] == "checkpoint_flush"
    assert during["checkpoint"]["not_durable_step"] == 8
    assert during["checkpoint"]["restored_step"] == 4  # nothing newer is claimed
    assert during["lost_steps"] == 4
    assert during["closed_form_rto_s"] == pytest.approx(during["rto_s"], rel=1e-9)
    after = drill(sc, kill=3, at=f"{second_save_end + 1.5 * flush!r}s")
    assert after["checkpoint"]["restored_step"] == 8 and after["checkpoint"]["not_durable_step"] is None
    assert after["rto_s"] < during["rto_s"]


def test_a_hang_is_noticed_by_the_collective_timeout_only():
    sc = scenario(training_job__runtime={"collective_timeout": "300s"})
    r = drill(sc, kill=2, at="0.05s", hang=True)
    assert r["kill"]["kind"] == "hang" and r["detected_by"] == "collective_timeout"
    step = r["step_time_s"]
    # The watchdog counts from when the first survivor entered what it never left, which may
    # be a receive posted shortly before the hang.
    assert 300 - step < r["detection_s"] < 300 + step
    assert r["closed_form"]["detection_s"] == 300
    assert abs(r["rto_vs_closed_form"]) < step / r["rto_s"] + 1e-9


@pytest.mark.parametrize("kwargs, message", [
    ({"kill": 9, "at": "1s"}, "--kill: got 9"),
    ({"kill": 4, "at": "1s"}, "--kill/--at: --kill.node: got 4, expected a node that runs ranks"),
    ({"kill": 1, "at": "soon"}, "--at: got 'soon'"),
])
def test_drill_inputs_are_checked(kwargs, message):
    with pytest.raises((ScenarioError, ValueError)) as e:
        drill(BASE, **kwargs)
    assert message in str(e.value)


def test_a_scenario_with_faults_is_refused():
    sc = scenario(faults=[{"kind": "node_kill", "node": 1}])
    with pytest.raises(ScenarioError, match="faults: the drill injects its own kill"):
        drill(sc, kill=1, at="1s")


def test_the_cli_prints_the_timeline(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(BASE))
    assert main(["drill", str(path), "--kill", "3", "--at", "0.2s"]) == 0
    out = capsys.readouterr().out
    assert "RTO" in out and "closed form" in out and "restore" in out
    assert main(["drill", str(path), "--kill", "3", "--at", "0.2s", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rto_s"] > 660
