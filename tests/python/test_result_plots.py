"""Result.plot_*: every figure of one run draws its data, and says what is missing otherwise."""
import pytest

import clustertwin as ct

SMALL = {
    "cluster": {"nodes": 8},
    "network": {"mode": "analytical"},
    "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                     "global_batch_size": 32,
                     "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 4}},
    "failures": {"profile": "llama3", "rate_scale": 50},
    "recovery": {"hot_spares": 0},
    "campaign": {"repeats": 4},
}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    trace = tmp_path_factory.mktemp("plots") / "step.json"
    return ct.run(ct.Scenario(SMALL), trace=str(trace))


def drawn(fig):
    ax = fig.axes[0]
    return len(ax.patches) + len(ax.lines) + len(ax.collections)


@pytest.mark.parametrize("name", ["plot_timeline", "plot_breakdown", "plot_memory", "plot_links", "plot_power",
                                  "plot_rank_times", "plot_interval_curve", "plot_campaign_power"])
def test_each_plot_draws_and_writes_a_png(result, name, tmp_path):
    path = tmp_path / f"{name}.png"
    fig = getattr(result, name)(path=path)
    assert drawn(fig) > 0
    assert path.stat().st_size > 1000


def test_timeline_has_one_row_per_rank_and_stream(result):
    fig = result.plot_timeline(ranks=2)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels and all(lbl.startswith(("GPU 0", "GPU 1")) for lbl in labels)


def test_missing_data_is_a_clear_error():
    bare = ct.run(ct.Scenario({**SMALL, "failures": {}}))
    with pytest.raises(ValueError, match="nothing can fail"):
        bare.plot_interval_curve()
    with pytest.raises(ValueError, match="no timeline"):
        ct.run("scenarios/ecn-tuning-incast.yaml", overrides={"network.mode": "flow"}).plot_timeline()


def test_timeline_table_matches_the_chrome_trace(result, tmp_path):
    # Without a trace file the timeline comes from Result.timeline (numpy columns, no copy).
    t = result.timeline
    assert not result.arrays["timeline"]["start_s"].flags.owndata
    assert list(t.columns) == ["gpu", "stream", "kind", "category", "step", "start_s", "seconds", "end_s"]
    assert set(t["stream"]) <= {"compute", "p2p", "dp"} and (t["seconds"] >= 0).all()
    # The same instructions as the Chrome trace of the same run.
    import json
    with open(result.trace_path) as f:
        timed = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    assert len(timed) == len(t)
    assert sorted(round(e["dur"], 3) for e in timed) == sorted(round(s * 1e6, 3) for s in t["seconds"])
    bare = ct.run(ct.Scenario(SMALL))
    fig = bare.plot_timeline(ranks=2, path=tmp_path / "tl.png")
    assert drawn(fig) > 0 and len(fig.axes[0].get_yticklabels()) >= 2


def test_packet_storm_queue_series_shows_the_pause_spreading(tmp_path):
    storm = ct.run("scenarios/pfc-storm.yaml")
    q = storm.queues
    assert len(q) > 100 and set(q.columns) == {"t_s", "queued_bytes", "max_queue_bytes", "paused_queues"}
    assert q["t_s"].is_monotonic_increasing
    assert q["paused_queues"].max() > 5  # the storm's pause tree
    calm = ct.run(ct.load("scenarios/pfc-storm.yaml").with_overrides({"faults": []})).queues
    assert calm["paused_queues"].max() < q["paused_queues"].max()
    fig = storm.plot_queues(path=tmp_path / "q.png")
    assert len(fig.axes) == 2 and drawn(fig) > 0
    with pytest.raises(ValueError, match="packet"):
        ct.run(ct.Scenario(SMALL)).plot_queues()


def test_fabric_link_arrays_are_zero_copy_and_complete(result, tmp_path):
    arrays = result.arrays["fabric_links"]
    util = arrays["utilization"]
    # numpy views of the simulator's buffers: no copy, kept alive by a capsule.
    assert not util.flags.owndata and util.base is not None
    n = len(arrays["link"])
    assert all(len(v) == n for v in arrays.values())
    assert list(arrays["link"]) == list(range(n))
    df = result.fabric_links
    assert ((df.src_tier - df.dst_tier).abs() == 1).all()  # every cable joins adjacent tiers
    nics = df[df.src_tier == 0]
    assert sorted(nics.src_index) == list(range(8 * 8))  # 8 nodes x 8 NICs, one uplink each
    assert ((df.utilization >= 0) & (df.utilization <= 1)).all() and df.utilization.max() > 0
    # The busiest fabric link agrees with the report's top links (the same LinkStats).
    fabric_top = [l["utilization"] for l in result.report["network"]["top_links"]
                  if "nvlink" not in l["link"] and "pcie" not in l["link"]]
    if fabric_top:
        assert df.utilization.max() == pytest.approx(max(fabric_top), rel=1e-12)
    fig = result.plot_link_heatmap(path=tmp_path / "heat.png")
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == df.assign(t=df[["src_tier", "dst_tier"]].min(axis=1)).t.nunique()
    assert images[0].images[0].get_array().shape == (8, 8)  # nodes x rails
    assert (tmp_path / "heat.png").stat().st_size > 1000
    # Traffic studies and trace replays carry the table too; a Result without one says so.
    incast = ct.run("scenarios/ecn-tuning-incast.yaml", overrides={"network.mode": "flow"}).fabric_links
    assert incast.utilization.max() > 0.5  # the incast's victim downlink
    assert len(ct.run("scenarios/trace-chakra-allreduce.yaml").fabric_links) > 0
    with pytest.raises(ValueError, match="no fabric link table"):
        ct.Result(report={}).plot_link_heatmap()
