import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

import clustertwin as ct
from clustertwin import frames

sweep_mod = sys.modules["clustertwin.sweep"]  # the module; ct.sweep is the function

ROOT_LAUNCHER = "./clustertwin"
MBS = "training_job.micro_batch_size"
KMIN = "network.ecn.kmin"


def small(mode="analytical", name="small-sweep"):
    """4 nodes (32 GPUs), an 8-layer model: milliseconds per point."""
    return ct.Scenario({
        "name": name,
        "cluster": {"nodes": 4},
        "network": {"mode": mode},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "global_batch_size": 32,
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 2}},
        "recovery": {"hot_spares": 0},
    })


def same(a, b):
    pd.testing.assert_frame_equal(a.drop(columns="wall_s"), b.drop(columns="wall_s"))


def test_grid_order_size_and_columns():
    grid = {MBS: [1, 2, 4], KMIN: ["50KB", "100KB"]}
    df = ct.sweep(small(), grid)
    assert len(df) == 6
    assert list(df.columns[:2]) == [MBS, KMIN]
    assert list(df.columns[-2:]) == ["error", "wall_s"]
    assert df[[MBS, KMIN]].values.tolist() == [[1, "50KB"], [1, "100KB"], [2, "50KB"], [2, "100KB"],
                                               [4, "50KB"], [4, "100KB"]]
    assert df.attrs["grid"] == [MBS, KMIN]
    for col in ["step_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s_per_gpu", "breakdown.compute_s",
                "breakdown.bubble_s", "memory.peak_bytes", "memory.fits", "network.max_link_utilization"]:
        assert col in df.columns, col
    assert list(df.columns[2:4]) == ["step_time_s", "mfu"]
    assert df["error"].isna().all() and (df["wall_s"] >= 0).all()
    # each row is the run of its overrides
    one = ct.run(small(), overrides={MBS: 2, KMIN: "100KB"}).report
    assert df.loc[3, "mfu"] == one["mfu"] and df.loc[3, "breakdown.compute_s"] == one["breakdown"]["compute_s"]
    # a bigger micro-batch halves the number of micro-batches: a longer bubble share, different step time
    assert df.loc[0, "step_time_s"] != df.loc[4, "step_time_s"]


def test_invalid_point_gives_an_error_row_not_an_exception():
    df = ct.sweep(small(), {KMIN: ["50KB", 5, "100KB"], MBS: [1]})
    assert len(df) == 3
    assert df["error"].isna().tolist() == [True, False, True]
    assert "network.ecn.kmin" in df.loc[1, "error"] and "64MiB" in df.loc[1, "error"]
    assert pd.isna(df.loc[1, "mfu"]) and df.loc[0, "mfu"] > 0
    typo = ct.sweep(small(), {"training_job.micro_batch_sise": [1]})
    assert "micro_batch_sise" in typo.loc[0, "error"]


def test_fixed_overrides_and_traffic_columns():
    sc = ct.Scenario({"name": "incast", "cluster": {"nodes": 4},
                      "traffic": {"pattern": "incast", "fan_in": 3, "size": "1MiB"}, "recovery": {"hot_spares": 0}})
    df = ct.sweep(sc, {"traffic.size": ["256KiB", "1MiB"]}, overrides={"network.mode": "flow"})
    for col in ["traffic.completion_time_s", "traffic.fct_p99_s", "traffic.goodput_gbps", "traffic.flows"]:
        assert col in df.columns, col
    assert df["error"].isna().all()
    assert df.loc[0, "traffic.completion_time_s"] < df.loc[1, "traffic.completion_time_s"]


def test_workers_do_not_change_the_result():
    grid = {MBS: [1, 2, 4], KMIN: ["50KB", 7, "100KB"]}
    one = ct.sweep(small(), grid, workers=1)
    two = ct.sweep(small(), grid, workers=2)
    same(one, two)
    assert one["error"].notna().sum() == 3
    # one small flow-mode grid too (a real event simulation per point)
    flow_grid = {MBS: [1, 2], KMIN: ["50KB", "100KB"]}
    same(ct.sweep(small("flow"), flow_grid, workers=1), ct.sweep(small("flow"), flow_grid, workers=2))


def test_db_resume_skips_done_points(tmp_path, monkeypatch):
    db = tmp_path / "sweep.sqlite"
    first = ct.sweep(small(), {MBS: [1, 2], KMIN: ["50KB", 5]}, db=db)
    assert first["error"].notna().sum() == 2
    calls = []
    real = sweep_mod._run_point
    monkeypatch.setattr(sweep_mod, "_run_point", lambda doc, o: calls.append(dict(o)) or real(doc, o))
    grid = {MBS: [1, 2, 4], KMIN: ["50KB", 5]}
    resumed = ct.sweep(small(), grid, db=db, workers=2)
    assert sorted(c[MBS] for c in calls) == [4, 4]  # only the new points ran
    monkeypatch.setattr(sweep_mod, "_run_point", real)
    same(resumed, ct.sweep(small(), grid))  # stored rows read back exactly
    assert resumed.loc[:3, "wall_s"].tolist() == first["wall_s"].tolist()
    with sqlite3.connect(db) as conn:
        rows = conn.execute('SELECT scenario, overrides, mfu, error FROM sweep ORDER BY overrides').fetchall()
    assert len(rows) == 6 and {r[0] for r in rows} == {"small-sweep"}
    assert sum(r[3] is not None for r in rows) == 3 and all(r[2] > 0 for r in rows if r[3] is None)
    # another scenario name is another key: nothing is skipped
    calls.clear()
    monkeypatch.setattr(sweep_mod, "_run_point", lambda doc, o: calls.append(dict(o)) or real(doc, o))
    ct.sweep(small(name="other"), {MBS: [1]}, db=db)
    assert len(calls) == 1


def test_point_key_is_canonical():
    assert sweep_mod.point_key("s", {"b": 1, "a": "x"}) == sweep_mod.point_key("s", {"a": "x", "b": 1})
    assert sweep_mod.point_key("s", {"a": 1}) != sweep_mod.point_key("t", {"a": 1})


def test_frames_of_a_report():
    r = ct.run(small())
    b = frames.breakdown_frame(r)
    assert b["component"].tolist()[0] == "compute" and "bubble" in b["component"].tolist()
    assert abs(b["seconds"].sum() - r.report["step_time_s"]) < 1e-9 * r.report["step_time_s"]
    assert abs(b["fraction"].sum() - 1) < 1e-9
    c = frames.collectives_frame(r.report)
    assert list(c.columns[:6]) == ["op", "group_size", "bytes", "count", "time_s", "busbw_gbps"] and len(c) > 0
    links = frames.links_frame(r)
    assert {"link", "src", "dst", "utilization"} <= set(links.columns)
    assert links["utilization"].is_monotonic_decreasing
    pairs = links[links["link"].str.contains("->")]
    assert len(pairs) > 0 and (pairs["src"] + "->" + pairs["dst"] == pairs["link"]).all()
    ranks = frames.ranks_frame(r)
    assert list(ranks.columns[:4]) == ["gpu", "step_time_s", "compute_s", "slow"] and len(ranks) == len(r.ranks)
    assert frames.collectives_frame({}).empty and frames.ranks_frame({}).empty


def test_plots_write_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    from clustertwin import plots

    df = ct.sweep(small(), {MBS: [1, 2, 4], KMIN: ["50KB", 5]})
    long = frames.breakdown_long(df)
    assert set(long["component"]) >= {"compute", "bubble"} and long["point"].nunique() == 6
    for fig, name in [(plots.breakdown_bars(df, path=tmp_path / "bars.png"), "bars.png"),
                      (plots.mfu_vs(df, MBS, path=tmp_path / "mfu.png"), "mfu.png"),
                      (plots.breakdown_bars(ct.run(small()), path=tmp_path / "one.png"), "one.png")]:
        assert fig.axes
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # error rows are left out: 3 valid points, one line per kmin value that ran
    lines = plots.mfu_vs(df, MBS).axes[0].get_lines()
    assert len(lines) == 1 and len(lines[0].get_xdata()) == 3


def test_cli_sweep_prints_grid_columns(tmp_path):
    out = subprocess.run([ROOT_LAUNCHER, "sweep", "scenarios/default.json", "--set", "network.mode=analytical",
                          "--set", "cluster.nodes=32", "--set", "training_job.parallelism.data_parallel=4",
                          "--set", "training_job.global_batch_size=256",
                          "--grid", f"{MBS}=1,2", "--grid", "training_job.parallelism.virtual_pipeline=1,3",
                          "--workers", "2"], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert MBS in lines[0] and "training_job.parallelism.virtual_pipeline" in lines[0] and "mfu" in lines[0]
    assert len(lines) == 5
    csv = tmp_path / "out.csv"
    bad = subprocess.run([ROOT_LAUNCHER, "sweep", "scenarios/default.json", "--set", "network.mode=analytical",
                          "--grid", f"{KMIN}=50KB,5", "--csv", str(csv), "--db", str(tmp_path / "s.sqlite")],
                         capture_output=True, text=True)
    assert bad.returncode == 0 and "1 of 2 points failed" in bad.stderr
    df = pd.read_csv(csv)
    assert df[KMIN].tolist() == ["50KB", "5"] and df["error"].isna().tolist() == [True, False]
    usage = subprocess.run([ROOT_LAUNCHER, "sweep", "scenarios/default.json", "--grid", "nokey"],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "--grid" in usage.stderr
