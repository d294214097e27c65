"""Capacity planning (ct.plan, clustertwin plan): the model that was asked for, counts with
suffixes, figures that follow from one simulated throughput, IT and facility power, errors."""
import json
import os
import subprocess

import pytest

import clustertwin as ct
from clustertwin.planning import quantity

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAUNCHER = os.path.join(ROOT, "clustertwin")
H100_PEAK = 989.4e12  # gpu_catalog.cpp, H100-SXM dense BF16


def _cli(*args):
    return subprocess.run([LAUNCHER, "plan", *args], capture_output=True, text=True)


@pytest.mark.parametrize("text, value", [("405B", 405e9), ("405b", 405e9), ("15T", 15e12), ("4M", 4e6),
                                         ("1.5e12", 1.5e12), ("70e9", 70e9), ("2G", 2e9), ("8k", 8e3), (7e9, 7e9)])
def test_quantities_read_as_planners_write_them(text, value):
    assert quantity(text, "params") == pytest.approx(value)


@pytest.mark.parametrize("text", ["405X", "", "-1", "0", "B", "nan", True])
def test_bad_quantities_name_the_flag(text):
    with pytest.raises(ct.ScenarioError, match="params"):
        quantity(text, "params")


def test_405b_plans_the_llama_3_shape_not_an_invented_one():
    p = ct.plan("405B", "15T", 54, model=None, threads=1)
    m = p["model"]
    assert (m["layers"], m["hidden"], m["heads"], m["kv_heads"]) == (126, 16384, 128, 8)
    assert "llama3-405b" in m["source"] and p["warnings"] == []
    assert p["training_flops"] == pytest.approx(6 * 405e9 * 15e12)


def test_a_preset_alone_sets_n_and_the_figures_follow_from_one_throughput():
    p = ct.plan(tokens="100B", days=20, model="llama3-8b", seq=2048, threads=2)
    m, lay = p["model"], p["layout"]
    assert p["inputs"]["params"] == m["active_parameters"] and m["seq_length"] == 2048
    best = lay["best"]
    assert best is not None and lay["layouts_simulated"] > 0
    used = best["tensor_parallel"] * best["pipeline_parallel"] * best["data_parallel"]
    assert best["gpus_used"] == used <= lay["cluster_gpus"] == p["cases"]["base"]["gpus"]
    # days and the deadline's GPUs come from the simulated tokens/s, and 6ND MFU from the same number
    assert lay["days"] == pytest.approx(100e9 / (best["tokens_per_s_per_gpu"] * used) / 86400)
    needed = 100e9 / (20 * 86400) / best["tokens_per_s_per_gpu"]
    assert needed <= lay["gpus_for_deadline"] < needed + 8 and lay["gpus_for_deadline"] % 8 == 0
    assert best["mfu_6nd"] == pytest.approx(6 * m["active_parameters"] * best["tokens_per_s_per_gpu"] / H100_PEAK)
    # the layout's batch stays within 25% of the 4M tokens asked for
    tokens = best["global_batch_size"] * 2048
    assert abs(tokens / 4e6 - 1) <= 0.25


def test_same_plan_at_any_thread_count():
    one = ct.plan("7B", "100B", 10, threads=1)
    two = ct.plan("7B", "100B", 10, threads=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_batch_tokens_change_the_layout_search():
    small = ct.plan("7B", "100B", 10, batch_tokens="1M", threads=2)["layout"]
    large = ct.plan("7B", "100B", 10, batch_tokens="8M", threads=2)["layout"]
    assert small["batch_tokens"] == 1e6 and large["batch_tokens"] == 8e6
    s, l = small["best"]["global_batch_size"], large["best"]["global_batch_size"]
    assert l > 4 * s


def test_shape_far_from_params_is_a_warning():
    p = ct.plan("70B", "100B", 10, model={"preset": "llama3-8b", "layers": 16}, threads=2)
    assert p["model"]["layers"] == 16 and "with fields overridden" in p["model"]["source"]
    assert len(p["warnings"]) == 1 and "--params 70B" in p["warnings"][0]
    # the cases use --params, not the shape
    assert p["training_flops"] == pytest.approx(6 * 70e9 * 100e9)


def test_pue_adds_facility_power_and_it_power_is_labelled():
    p = ct.plan("7B", "100B", 10, pue=1.25, threads=2)
    for case in p["cases"].values():
        assert case["facility_power_w"] == pytest.approx(1.25 * case["power_w"])
    assert p["power_basis"].startswith("IT power")
    assert all(c["facility_power_w"] is None for c in ct.plan("7B", "100B", 10, threads=2)["cases"].values())


def test_progress_callback_reaches_the_total():
    seen = []
    ct.plan("7B", "100B", 10, threads=2, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] and all(a <= b for a, b in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_bad_models_name_the_key():
    with pytest.raises(ct.ScenarioError, match=r"model\.hiden: unknown key \(did you mean 'model\.hidden'"):
        ct.plan(tokens="1T", days=3, model={"preset": "llama3-8b", "hiden": 3})
    with pytest.raises(ct.ScenarioError, match="model.preset: got 'llama9'"):
        ct.plan(tokens="1T", days=3, model="llama9")
    with pytest.raises(ct.ScenarioError, match="--params: missing"):
        ct.plan(tokens="1T", days=3)


def test_cli_text_and_errors():
    out = _cli("--model", "llama3-8b", "--seq", "2048", "--tokens", "100B", "--days", "20", "--pue", "1.2", "--quiet")
    assert out.returncode == 0, out.stderr
    assert "preset llama3-8b" in out.stdout and "IT MW" in out.stdout and "facility MW" in out.stdout
    assert "best layout" in out.stdout and "days on these GPUs" in out.stdout and out.stderr == ""
    far = _cli("--params", "70B", "--model", "llama3-8b", "--tokens", "1T", "--days", "20", "--quiet")
    assert far.returncode == 0 and "warning: the model has 8.03B" in far.stdout
    bad = _cli("--params", "405X", "--tokens", "1T", "--days", "3")
    assert bad.returncode == 2 and "--params" in bad.stderr and "405B" in bad.stderr
    none = _cli("--tokens", "1T", "--days", "3")
    assert none.returncode == 2 and "--params: missing" in none.stderr and "Traceback" not in none.stderr
    pue = _cli("--params", "7B", "--tokens", "1T", "--days", "3", "--pue", "9")
    assert pue.returncode == 2 and "--pue: got 9" in pue.stderr
