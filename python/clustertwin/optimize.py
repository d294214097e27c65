"""Search for the best point of a discrete space of scenario overrides under constraints.

    df = ct.optimize(sc, space={"training_job.parallelism.tensor_parallel": [1, 2, 4, 8],
                                "training_job.parallelism.pipeline_parallel": [1, 2, 4, 8],
                                "training_job.micro_batch_size": [1, 2, 4]},
                     objective="mfu", constraints={"memory.fits": ("==", True)},
                     overrides={"training_job.parallelism.data_parallel": 0})
    best = df[df["best"]].iloc[0]

Method (greedy coordinate search, steepest ascent without restarts): each axis is an ordered
list of values. From the start point (``start``, or every axis at its middle value) the
search evaluates every neighbour one step away along one axis, moves to the best feasible
neighbour that improves the objective; where none does, it also polls the diagonal
neighbours (one step along two axes at once: layouts often need TP and micro-batch to move
together to stay divisible), and stops at a point none of those improves on, or after
``max_evals`` evaluations. A point is feasible when it ran without error and meets
every constraint ``column: (op, value)`` with op one of ==, !=, <, <=, >, >=. An infeasible
start is allowed: until a feasible point is found, the search moves to the best feasible
neighbour, or else to a neighbour it has not stood on yet. The result can be a local optimum; ``exhaustive=True``
evaluates the whole grid instead (the reference the greedy search can be checked against).

Returns the search trace as a DataFrame, one row per evaluated point in evaluation order:
``eval`` (0, 1, ...), ``round`` (the move it belongs to), one column per axis, the objective
column, ``feasible``, ``error``, every other report scalar, and ``best`` (True on the best
feasible point). Every axis value is checked before anything runs (as ``sweep`` does).
"""
from __future__ import annotations

import operator
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Sequence

from .api import Scenario, ScenarioError
from .sweep import _as_scenario, _run_point
from .sweep_check import check_sweep
from .sweep_store import canonical

_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}


def _check_args(space: Mapping[str, Sequence[Any]], constraints: Mapping[str, Any], start, max_evals: int) -> None:
    if not isinstance(space, Mapping) or not space:
        raise ValueError("optimize: space must be a non-empty {key.path: [values]} mapping")
    for key, values in space.items():
        if not isinstance(values, (list, tuple, range)) or len(values) == 0:
            raise ValueError(f"optimize: space[{key!r}] must be a non-empty list of values, got {values!r}")
    for column, rule in constraints.items():
        if not (isinstance(rule, (list, tuple)) and len(rule) == 2 and rule[0] in _OPS):
            raise ValueError(f"optimize: constraint {column!r} must be (op, value) with op in "
                             f"{', '.join(_OPS)}, got {rule!r}")
    for key, value in (start or {}).items():
        if key not in space:
            raise ValueError(f"optimize: start key {key!r} is not an axis of the space")
        if canonical(value) not in {canonical(v) for v in space[key]}:
            raise ValueError(f"optimize: start {key} = {value!r} is not one of its values {list(space[key])!r}")
    if max_evals < 1:
        raise ValueError(f"optimize: max_evals must be at least 1, got {max_evals}")


def _feasible(row: Mapping[str, Any], constraints: Mapping[str, Any], objective: str) -> bool:
    if row.get("error") is not None or row.get(objective) is None:
        return False
    for column, (op, value) in constraints.items():
        got = row.get(column)
        if got is None or not _OPS[op](got, value):
            return False
    return True


def optimize(scenario: Scenario | Mapping[str, Any] | str | os.PathLike, space: Mapping[str, Sequence[Any]],
             objective: str = "mfu", maximize: bool = True, constraints: Mapping[str, Any] | None = None,
             overrides: Mapping[str, Any] | None = None, start: Mapping[str, Any] | None = None,
             max_evals: int = 200, workers: int = 1, exhaustive: bool = False):
    """Greedy coordinate search (or the whole grid) for the best feasible point; see the module doc."""
    import itertools

    import pandas as pd

    constraints = dict(constraints or {})
    _check_args(space, constraints, start, max_evals)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"optimize: got workers={workers!r}, expected a whole number >= 1")
    sc = _as_scenario(scenario)
    doc = sc.to_json()
    base = dict(overrides or {})
    axes = {k: list(v) for k, v in space.items()}
    check_sweep(doc, base, axes)
    keys = list(axes)
    better = operator.gt if maximize else operator.lt

    rows: list[dict] = []
    seen: dict[tuple, dict] = {}

    def evaluate(points: list[tuple], round_no: int) -> None:
        fresh = [p for p in dict.fromkeys(points) if p not in seen][: max(0, max_evals - len(rows))]
        overrides_of = [{**base, **{k: axes[k][i] for k, i in zip(keys, p)}} for p in fresh]
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(fresh) or 1))) as pool:
            results = list(pool.map(lambda o: _run_point(doc, o), overrides_of))
        for p, result in zip(fresh, results):
            row = {"eval": len(rows), "round": round_no, **{k: axes[k][i] for k, i in zip(keys, p)},
                   **result["report"], "error": result["error"], "wall_s": result["wall_s"]}
            row["feasible"] = _feasible(row, constraints, objective)
            rows.append(row)
            seen[p] = row

    def score(p: tuple) -> tuple[bool, float]:
        row = seen[p]
        return row["feasible"], row.get(objective) if row["feasible"] else 0.0

    if exhaustive:
        evaluate(list(itertools.product(*(range(len(axes[k])) for k in keys))), 0)
    else:
        current = tuple(
            [canonical(v) for v in axes[k]].index(canonical(start[k])) if start and k in start else (len(axes[k]) - 1) // 2
            for k in keys)
        evaluate([current], 0)
        visited = {current}
        round_no = 0
        while len(rows) < max_evals:
            round_no += 1
            neighbours = _around(current, keys, axes)
            evaluate(neighbours, round_no)
            cur_ok, cur_val = score(current)
            candidates = [n for n in neighbours if n in seen and score(n)[0]]
            if not cur_ok:  # no feasible point yet: take the best feasible neighbour, or explore
                if not candidates:
                    candidates = [n for n in neighbours if n in seen and n not in visited]
                    if not candidates:
                        break
                    current = candidates[0]
                    visited.add(current)
                    continue
            else:
                candidates = [n for n in candidates if better(score(n)[1], cur_val)]
                if not candidates:  # poll the diagonals before calling it a local optimum
                    diagonals = _diagonals(current, keys, axes)
                    evaluate(diagonals, round_no)
                    candidates = [n for n in diagonals if n in seen and score(n)[0] and better(score(n)[1], cur_val)]
                    if not candidates:
                        break
            best_next = candidates[0]
            for n in candidates[1:]:
                if better(score(n)[1], score(best_next)[1]):
                    best_next = n
            current = best_next
            visited.add(current)

    df = pd.DataFrame(rows)
    if df.empty:
        raise ScenarioError("optimize: no point was evaluated")
    if objective not in df.columns:  # no point produced it (all failed, or a wrong column name)
        df[objective] = None
    ok = df[df["feasible"]]
    df["best"] = False
    if not ok.empty:
        idx = ok[objective].idxmax() if maximize else ok[objective].idxmin()
        df.loc[idx, "best"] = True
    lead = ["eval", "round", *keys, objective, "feasible", "best", "error"]
    df = df[lead + [c for c in df.columns if c not in lead]]
    df.attrs.update({"space": keys, "objective": objective, "maximize": maximize,
                     "constraints": constraints, "evaluations": len(df)})
    return df


def _around(p: tuple, keys: list[str], axes: Mapping[str, list]) -> list[tuple]:
    out = []
    for a, k in enumerate(keys):
        for step in (-1, 1):
            i = p[a] + step
            if 0 <= i < len(axes[k]):
                out.append(p[:a] + (i,) + p[a + 1:])
    return out


def _diagonals(p: tuple, keys: list[str], axes: Mapping[str, list]) -> list[tuple]:
    out = []
    for a in range(len(keys)):
        for b in range(a + 1, len(keys)):
            for sa in (-1, 1):
                for sb in (-1, 1):
                    i, j = p[a] + sa, p[b] + sb
                    if 0 <= i < len(axes[keys[a]]) and 0 <= j < len(axes[keys[b]]):
                        q = list(p)
                        q[a], q[b] = i, j
                        out.append(tuple(q))
    return out
