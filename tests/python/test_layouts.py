"""ct.evaluate_layouts: many layouts against one build of the cluster (issue 23). Each row must
carry exactly what ct.run reports for that layout, at any thread count."""
import copy
import math
import os

import pytest

import clustertwin as ct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIGURES = ["step_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s", "tokens_per_s_per_gpu"]
BREAKDOWN = ["compute_s", "exposed_tp_comm_s", "exposed_pp_comm_s", "exposed_dp_comm_s", "bubble_s", "optimizer_s",
             "other_s", "straggler_s"]

SMALL = {"name": "layouts", "cluster": {"gpu": "H100-SXM", "nodes": 8, "gpus_per_node": 8, "nics_per_node": 8,
                                        "nic": "400Gbps"},
         "network": {"mode": "flow"},
         "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                          "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 1, "data_parallel": 8},
                          "micro_batch_size": 1, "global_batch_size": 64, "steps": 2}}


def default_layouts():
    """Layouts of the default 10,240-GPU job (9,984 GPUs used), valid and invalid."""
    out = []
    for tp, pp, v, mb in ((8, 16, 1, 1), (8, 8, 2, 1), (4, 16, 1, 2), (8, 4, 3, 1), (4, 8, 1, 1), (8, 12, 2, 2)):
        out.append({"training_job.parallelism.tensor_parallel": tp, "training_job.parallelism.pipeline_parallel": pp,
                    "training_job.parallelism.virtual_pipeline": v,
                    "training_job.parallelism.data_parallel": 9984 // (tp * pp), "training_job.micro_batch_size": mb})
    return out


def assert_row_is_run(row, report):
    for key in FIGURES:
        assert row[key] == report[key], key
    for key in BREAKDOWN:
        assert row[key] == report["breakdown"][key], key
    assert row["fits"] == report["memory"]["fits"]
    assert row["peak_memory_gib"] == report["memory"]["peak_bytes"] / 2**30
    assert row["events"] == report["sim"]["events"]


def test_rows_equal_one_run_per_layout_analytical_10k():
    sc = ct.load(os.path.join(ROOT, "scenarios", "default.json"))
    layouts = default_layouts()
    df = ct.evaluate_layouts(sc, layouts, overrides={"network.mode": "analytical"}, threads=2)
    assert len(df) == len(layouts)
    ran = 0
    for lay, (_, row) in zip(layouts, df.iterrows()):
        try:
            report = ct.run(sc, overrides={"network.mode": "analytical", **lay}).report
        except ct.ScenarioError as e:
            assert isinstance(row["error"], str) and row["error"] in str(e)
            assert math.isnan(row["step_time_s"])
            continue
        assert row["error"] is None
        assert_row_is_run(row, report)
        ran += 1
    assert 2 <= ran < len(layouts)  # both kinds are exercised


def test_rows_equal_runs_in_flow_mode_and_with_a_link_fault():
    # Flow mode shares the cluster too; a link fault gets a cluster of its own (it changes the
    # topology during the run) and still gives run's figures.
    layouts = [{"training_job.parallelism.pipeline_parallel": pp, "training_job.parallelism.data_parallel": 8 // pp}
               for pp in (1, 2, 4)]
    for faults in ([], [{"kind": "link_degrade", "link": "node0.nic0-leaf0", "factor": 0.5}]):
        sc = copy.deepcopy(SMALL)
        sc["faults"] = faults
        df = ct.evaluate_layouts(sc, layouts, threads=2)
        for lay, (_, row) in zip(layouts, df.iterrows()):
            assert row["error"] is None
            assert_row_is_run(row, ct.run(sc, overrides=lay).report)


def test_same_rows_at_any_thread_count():
    sc = ct.load(os.path.join(ROOT, "scenarios", "default.json"))
    grid = {"training_job.parallelism.tensor_parallel": [4, 8], "training_job.parallelism.pipeline_parallel": [8, 16],
            "training_job.parallelism.virtual_pipeline": [1],
            "training_job.parallelism.data_parallel": [78, 156, 312]}
    one = ct.evaluate_layouts(sc, grid=grid, overrides={"network.mode": "analytical"}, threads=1)
    two = ct.evaluate_layouts(sc, grid=grid, overrides={"network.mode": "analytical"}, threads=2)
    assert len(one) == 12
    assert one.equals(two)
    assert one["error"].isna().sum() >= 1  # the grid has layouts that use all 9,984 GPUs


def test_a_key_outside_training_job_is_refused_by_name():
    with pytest.raises(ct.ScenarioError, match=r"layouts\[1\]\.cluster\.nodes: a layout may only change training_job"):
        ct.evaluate_layouts(SMALL, [{"training_job.micro_batch_size": 1}, {"cluster.nodes": 4}])


def test_bad_values_are_a_row_error_or_a_clear_raise():
    df = ct.evaluate_layouts(SMALL, [{"training_job.parallelism.tensor_parallel": 3},
                                     {"training_job.parallelism.tensor_parallel": 8}])
    assert "tensor_parallel" in df["error"][0]
    assert df["error"][1] is None and df["step_time_s"][1] > 0
    with pytest.raises(ValueError, match="threads"):
        ct.evaluate_layouts(SMALL, [{}], threads=-1)
    with pytest.raises(ValueError, match="layouts"):
        ct.evaluate_layouts(SMALL)


def test_analytical_steps_after_the_second_repeat_it():
    """Without contention or perturbation (the replica fold) at most two steps are simulated: the
    second is the steady step every later one repeats. One step is the cold one; flow mode runs
    every step asked for."""
    sc = ct.Scenario(copy.deepcopy(SMALL))
    runs = {st: ct.run(sc, overrides={"network.mode": "analytical", "training_job.steps": st}).report
            for st in (1, 2, 3, 7)}
    for st in (3, 7):
        assert runs[st]["step_time_s"] == runs[2]["step_time_s"]
        assert runs[st]["sim"]["events"] == runs[2]["sim"]["events"]
        assert any(a.startswith(f"training_job.steps: 2 of the {st} steps simulated") for a in runs[st]["assumptions"])
    assert not any(a.startswith("training_job.steps") for a in runs[2]["assumptions"])
    assert runs[1]["step_time_s"] != runs[2]["step_time_s"]
    assert runs[1]["sim"]["events"] < runs[2]["sim"]["events"]
    flow = {st: ct.run(sc, overrides={"training_job.steps": st}).report for st in (2, 3)}
    assert flow[3]["sim"]["events"] > flow[2]["sim"]["events"]
    # Kernel jitter perturbs every rank: no fold, every step simulated.
    slow = {st: ct.run(sc, overrides={"network.mode": "analytical", "training_job.steps": st,
                                      "cluster.variability.kernel_jitter_cv": 0.02}).report for st in (2, 3)}
    assert slow[3]["sim"]["events"] > slow[2]["sim"]["events"]
