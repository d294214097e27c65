"""ct.optimize: greedy layout search against the exhaustive grid, constraints, bad input."""
import pytest

import clustertwin as ct

SC = {
    "cluster": {"nodes": 8},
    "network": {"mode": "analytical"},
    "training_job": {"model": {"layers": 16, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                     "global_batch_size": 64,
                     "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 1, "data_parallel": 0}},
    "recovery": {"hot_spares": 0},
}
SPACE = {"training_job.parallelism.tensor_parallel": [1, 2, 4, 8],
         "training_job.parallelism.pipeline_parallel": [1, 2, 4, 8],
         "training_job.micro_batch_size": [1, 2, 4]}
FITS = {"memory.fits": ("==", True)}


def test_greedy_search_finds_the_grid_best_with_fewer_runs():
    grid = ct.optimize(SC, SPACE, objective="mfu", constraints=FITS, exhaustive=True)
    assert len(grid) == 4 * 4 * 3
    greedy = ct.optimize(SC, SPACE, objective="mfu", constraints=FITS)
    assert len(greedy) < len(grid)
    best = greedy[greedy["best"]].iloc[0]
    assert best["feasible"] and best["memory.fits"]
    assert best["mfu"] == greedy.loc[greedy["feasible"], "mfu"].max()
    # This space has one peak: the greedy search reaches the grid's best.
    assert best["mfu"] == pytest.approx(grid.loc[grid["best"], "mfu"].iloc[0])
    assert list(greedy["eval"]) == list(range(len(greedy)))
    assert greedy["round"].is_monotonic_increasing


def test_constraints_and_minimizing():
    df = ct.optimize(SC, SPACE, objective="step_time_s", maximize=False,
                     constraints={**FITS, "training_job.parallelism.tensor_parallel": ("<=", 2)}, exhaustive=True)
    best = df[df["best"]].iloc[0]
    assert best["training_job.parallelism.tensor_parallel"] <= 2
    ok = df[df["feasible"]]
    assert best["step_time_s"] == ok["step_time_s"].min()
    assert not df.loc[df["training_job.parallelism.tensor_parallel"] > 2, "feasible"].any()


@pytest.mark.parametrize("kwargs, match", [
    ({"space": {"training_job.parallelism.tensor_paralel": [1, 2]}}, "tensor_paralel"),
    ({"space": {"training_job.micro_batch_size": ["two"]}}, "micro_batch_size"),
    ({"space": {"training_job.micro_batch_size": []}}, "non-empty"),
    ({"space": SPACE, "constraints": {"mfu": (">>", 0.3)}}, "op in"),
    ({"space": SPACE, "start": {"training_job.micro_batch_size": 3}}, "not one of its values"),
])
def test_bad_search_input_is_rejected_before_running(kwargs, match):
    with pytest.raises((ValueError, ct.ScenarioError), match=match):
        ct.optimize(SC, **kwargs)
