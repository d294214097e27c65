"""Many parallel layouts of one cluster, evaluated against one build of it (issue 23).

    df = ct.evaluate_layouts(sc, grid={"training_job.parallelism.tensor_parallel": [4, 8],
                                       "training_job.parallelism.pipeline_parallel": [4, 8, 16]})

A layout changes only ``training_job.*`` keys (parallelism, micro-batch, batch, runtime): the
cluster's topology and routing tables are built once and every layout's step runs against them,
in parallel on oneTBB threads inside the engine (the GIL is released). Each row carries the
figures ``ct.run`` reports for that layout (step time, MFU, throughput, the time breakdown) and
its memory (the most loaded stage, whether every stage fits), to the last bit; row i is layout i
at any thread count. What a row leaves out, against ``ct.run``: the reliability campaign,
storage, power and the report's tables. Run the layout you choose for those.
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from . import _core
from .api import Scenario, load
from .sweep_sampling import grid_points

RESULT_COLUMNS = ["error", "gpus", "fits", "peak_memory_gib", "step_time_s", "mfu", "hfu", "tflops_per_gpu",
                  "tokens_per_s", "tokens_per_s_per_gpu", "compute_s", "exposed_tp_comm_s", "exposed_pp_comm_s",
                  "exposed_dp_comm_s", "bubble_s", "optimizer_s", "other_s", "straggler_s", "events"]


def evaluate_layouts(scenario: Scenario | Mapping[str, Any] | str | os.PathLike,
                     layouts: Sequence[Mapping[str, Any]] | None = None, *,
                     grid: Mapping[str, Any] | None = None, overrides: Mapping[str, Any] | None = None,
                     threads: int = 0):
    """One row per layout of ``scenario``: its overrides, then the step figures and memory.

    scenario   a Scenario, a scenario dict, or the path of a scenario file.
    layouts    a list of {"training_job.key.path": value} override mappings, one per layout.
    grid       or/and {"training_job.key.path": [values...]}: every combination (last key
               varying fastest), after ``layouts``.
    overrides  applied to the scenario before any layout (any key, e.g. network.mode).
    threads    engine threads; 0 = every core. The rows do not depend on it.

    A layout the engine refuses (a batch the layout cannot split, an unknown value) gets its
    reason in ``error`` and no figures; a key outside ``training_job`` in a layout, or a bad base
    scenario, raises ScenarioError naming it before anything runs. Returns a pandas DataFrame.
    """
    import pandas as pd

    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"evaluate_layouts: got threads={threads!r}, expected a whole number >= 0")
    if isinstance(scenario, (str, os.PathLike)) and os.path.exists(os.fspath(scenario)):
        scenario = load(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = Scenario(scenario)
    if overrides:
        scenario = scenario.with_overrides(overrides)
    rows = [dict(lay) for lay in (layouts or [])] + (grid_points(grid) if grid else [])
    if not rows:
        raise ValueError("evaluate_layouts: give layouts=[{key.path: value}, ...] and/or grid={key.path: [values]}")
    results = json.loads(_core.evaluate_layouts(scenario.to_json(), json.dumps(rows), threads))
    keys: list[str] = []
    for lay in rows:
        keys.extend(k for k in lay if k not in keys)
    df = pd.DataFrame([{**{k: lay.get(k) for k in keys}, **{c: res.get(c) for c in RESULT_COLUMNS}}
                       for lay, res in zip(rows, results)], columns=keys + RESULT_COLUMNS)
    df.attrs.update(layouts=keys, scenario=str(scenario.data.get("name", "unnamed")))
    return df
