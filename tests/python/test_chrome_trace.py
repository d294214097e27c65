"""The Chrome / Perfetto trace (issue 22): which GPUs it shows, args on every slice, flow arrows
for pipeline sends, counter tracks (IT power; NIC load in flow mode), and a run that is the same
with or without it."""
import json

import pytest

import clustertwin as ct

FLOW = {
    "name": "trace-test",
    "cluster": {"gpu": "H100-SXM", "nodes": 8, "gpus_per_node": 8, "nics_per_node": 8, "nic": "400Gbps"},
    "network": {"mode": "flow"},
    "recovery": {"hot_spares": 0},
    "training_job": {"model": {"preset": "llama3-8b", "layers": 8}, "global_batch_size": 32, "micro_batch_size": 1,
                     "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 4, "data_parallel": 2}, "steps": 2},
}


def events(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


@pytest.fixture(scope="module")
def flow_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    return ct.run(ct.Scenario(FLOW), trace=str(path)), events(path)


def test_default_gpus_are_one_per_stage_and_the_first_tp_group(flow_trace):
    result, ev = flow_trace
    gpus = {e["pid"] for e in ev if e["ph"] == "X"}
    # rank = tp + 8 (dp + 2 pp): the first TP group is GPUs 0-7, stage s starts at 16 s.
    assert gpus == set(range(8)) | {16, 32, 48}
    assert set(result.timeline["gpu"]) == gpus
    names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[48].endswith("(stage 3)") and names[64] == "cluster"


def test_every_slice_has_its_args(flow_trace):
    _, ev = flow_trace
    by_name = {}
    for e in ev:
        if e["ph"] == "X":
            by_name.setdefault(e["name"], e)
    fwd = by_name["forward"]["args"]
    assert {"step", "microbatch", "chunk"} <= set(fwd)
    send = by_name["pp_send"]["args"]
    assert send["bytes"] > 0 and send["peer_gpu"] in {0, 16, 32, 48}
    coll = next(e for e in ev if e["ph"] == "X" and e["name"].startswith("dp_"))["args"]
    assert coll["group_ranks"] == 2 and coll["bytes"] > 0


def test_pipeline_sends_are_flow_arrows_between_traced_stages(flow_trace):
    _, ev = flow_trace
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    # 2 steps x 16 micro-batches x (3 forward + 3 backward boundaries) between the traced TP-0 ranks
    assert len(starts) == 2 * 16 * 6
    for k, s in starts.items():
        f = ends[k]
        assert s["tid"] == 1 and f["tid"] == 0 and f["ts"] >= s["ts"]
        assert abs((f["pid"] - s["pid"])) == 16  # neighbouring stages


def test_counter_tracks_power_and_nic_load(flow_trace):
    result, ev = flow_trace
    power = [e for e in ev if e["ph"] == "C" and e["name"] == "IT power MW"]
    assert len(power) > 100 and all(e["pid"] == 64 for e in power)
    watts = [e["args"]["value"] * 1e6 for e in power]
    p = result.report["power"]  # 100 us buckets of the last step; the track has 1 ms means of the run
    assert p["idle_w"] * 0.999 <= min(watts) and max(watts) <= p["cluster_peak_w"] * 1.0001
    assert max(watts) >= p["cluster_mean_w"]
    nic = [e for e in ev if e["ph"] == "C" and e["name"] == "NIC Gb/s"]
    assert {e["pid"] for e in nic} == set(range(8)) | {16, 32, 48}
    peak = max(max(e["args"]["tx"], e["args"]["rx"]) for e in nic)
    assert 100 < peak <= 400 * 1.0001  # a 400G NIC, loaded by the pipeline and DP traffic


def test_the_trace_does_not_change_the_run(flow_trace):
    result, _ = flow_trace
    # A traced run runs every rank (network.fold_rails does not fold it): so does this one.
    bare = ct.run(ct.Scenario(FLOW), overrides={"network.fold_rails": "no"})
    assert bare.report["step_time_s"] == result.report["step_time_s"]
    assert bare.report["sim"]["events"] == result.report["sim"]["events"]
    assert result.report["ranks"]["fold"] == "none"
    # Untraced, the same scenario folds its rails (each rail its own leaf here: the same step).
    folded = ct.run(ct.Scenario(FLOW))
    assert folded.report["ranks"]["fold"] == "rails"
    assert folded.report["step_time_s"] == pytest.approx(result.report["step_time_s"], rel=1e-12)


def test_chosen_gpus(tmp_path):
    path = tmp_path / "t.json"
    r = ct.run(ct.Scenario(FLOW), trace=str(path), trace_gpus=[9, 63])
    assert {e["pid"] for e in events(path) if e["ph"] == "X"} == {9, 63}
    assert set(r.timeline["gpu"]) == {9, 63}


def test_bad_gpu_choices_are_named():
    with pytest.raises(ValueError, match=r"trace_gpus: got GPU 64, expected GPUs the run simulates"):
        ct.run(ct.Scenario(FLOW), trace_gpus=[3, 64])
    analytical = ct.Scenario(FLOW).with_overrides({"network.mode": "analytical"})
    with pytest.raises(ValueError, match="folds identical ranks"):
        ct.run(analytical, trace_gpus=[1])
    for bad in ([], "0,1", [-1], [True], [1.5]):
        with pytest.raises(ValueError, match="trace_gpus"):
            ct.run(ct.Scenario(FLOW), trace_gpus=bad)


def test_cli_trace_gpus(tmp_path, capsys):
    from clustertwin.cli import main
    sc = tmp_path / "s.json"
    sc.write_text(json.dumps(FLOW))
    assert main(["run", str(sc), "--quiet", "--out", str(tmp_path / "o"), "--trace-gpus", "0-1,48"]) == 0
    assert {e["pid"] for e in events(tmp_path / "o" / "trace.json") if e["ph"] == "X"} == {0, 1, 48}
    assert main(["run", str(sc), "--quiet", "--trace-gpus", "0"]) == 2
    assert "--out" in capsys.readouterr().err
