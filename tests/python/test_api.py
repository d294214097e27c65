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


def test_run_default_report_is_deterministic():
    a = ct.run(ct.load("scenarios/default.json")).report
    b = ct.run(ct.load("scenarios/default.json")).report
    a.pop("sim"), b.pop("sim")
    assert a == b
    assert a["memory"]["fits"] is True


def test_cli_run_json_and_errors(tmp_path):
    out = subprocess.run([ROOT_LAUNCHER, "run", "scenarios/default.json", "--json", "--out", str(tmp_path)],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["cluster"]["gpus"] == 10240
    assert (tmp_path / "report.json").exists()
    bad = subprocess.run([ROOT_LAUNCHER, "run", "scenarios/default.json", "--set", "network.mode=quantum"],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "network.mode" in bad.stderr and "analytical" in bad.stderr


def test_cli_schema_is_json():
    out = subprocess.run([ROOT_LAUNCHER, "schema"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["title"] == "ClusterTwin scenario"
