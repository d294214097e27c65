"""Parameter sweeps: one run per point of a cartesian grid of scenario overrides.

    df = ct.sweep(sc, grid={"network.ecn.kmin": ["50KB", "100KB"],
                            "training_job.micro_batch_size": [1, 2]}, workers=2)

Rows come in grid order (itertools.product over the grid keys in the order given, the last
key varying fastest), whatever the number of workers. Columns: one per grid key (its value),
then the report's scalars flattened with dots (``step_time_s``, ``mfu``,
``breakdown.compute_s``, ``memory.fits``, ``traffic.fct_p99_s`` ...), then ``error`` (None,
or the ScenarioError message of a point whose overrides are invalid) and ``wall_s`` (the
point's wall-clock time in this process). With ``db="file.sqlite"`` every finished point is
appended to the table ``sweep`` and points already there (same scenario name and the same
overrides, as canonical JSON) are read back instead of run again.
"""
from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Iterable, Mapping, Sequence

from . import _core
from .api import Scenario, ScenarioError, load

# Report scalars shown first, in this order; every other scalar follows in report order.
LEADING = ["step_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s", "tokens_per_s_per_gpu"]
# Report keys that are not results of the point (or not deterministic).
SKIPPED = {"name", "seed", "tables", "not_computed", "sim.wall_s", "sim.events_per_s"}
TABLE = "sweep"


def grid_points(grid: Mapping[str, Any]) -> list[dict]:
    """The cartesian product of a grid, as override dicts, last key varying fastest."""
    keys = list(grid)
    values = [_as_list(grid[k]) for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _as_list(v: Any) -> list:
    if isinstance(v, (list, tuple, range)):
        return list(v)
    return [v]  # a scalar (including a string) is a one-value axis


def flatten(report: Mapping[str, Any]) -> dict:
    """The report's scalars (numbers, booleans, strings) as {"a.b.c": value}; lists are left out."""
    out: dict[str, Any] = {}

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = prefix + key
            if path in SKIPPED:
                continue
            if isinstance(value, Mapping):
                walk(value, path + ".")
            elif value is None or isinstance(value, (bool, int, float, str)):
                out[path] = value

    walk(report, "")
    lead = {k: out.pop(k) for k in LEADING if k in out}
    return {**lead, **out}


def point_key(name: str, overrides: Mapping[str, Any]) -> str:
    """The resume key of a point: scenario name + canonical JSON of its overrides."""
    return name + " " + canonical(overrides)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _run_point(doc: str, overrides: Mapping[str, Any]) -> dict:
    """One grid point -> {"report": flat scalars, "error": str|None, "wall_s": float, "final": bool}."""
    t0 = time.perf_counter()
    try:
        report = json.loads(_core.run(doc, json.dumps(dict(overrides)), ""))
        return {"report": flatten(report), "error": None, "wall_s": time.perf_counter() - t0, "final": True}
    except ScenarioError as e:  # invalid overrides: deterministic, so a resumed sweep keeps it
        return {"report": {}, "error": str(e), "wall_s": time.perf_counter() - t0, "final": True}
    except Exception as e:  # noqa: BLE001 - one bad point must not kill the sweep; retried on resume
        return {"report": {}, "error": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - t0,
                "final": False}


class _Db:
    """Append-only SQLite store of finished points: one column per field plus the row as JSON."""

    def __init__(self, path: str | os.PathLike):
        self.conn = sqlite3.connect(os.fspath(path))
        self.conn.execute(f'CREATE TABLE IF NOT EXISTS "{TABLE}" (key TEXT PRIMARY KEY, scenario TEXT, '
                          f'overrides TEXT, row_json TEXT, created REAL)')
        self.columns = {r[1] for r in self.conn.execute(f'PRAGMA table_info("{TABLE}")')}
        self.conn.commit()

    def done(self, keys: Iterable[str]) -> dict[str, dict]:
        out = {}
        for key in keys:
            hit = self.conn.execute(f'SELECT row_json FROM "{TABLE}" WHERE key = ?', (key,)).fetchone()
            if hit:
                out[key] = json.loads(hit[0])
        return out

    def add(self, key: str, scenario: str, overrides: Mapping[str, Any], point: dict) -> None:
        fields = {**point["report"], "error": point["error"], "wall_s": point["wall_s"]}
        for name, value in fields.items():
            if name not in self.columns:
                kind = "REAL" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
                self.conn.execute(f'ALTER TABLE "{TABLE}" ADD COLUMN "{_quote(name)}" {kind}')
                self.columns.add(name)
        cols = ["key", "scenario", "overrides", "row_json", "created", *fields]
        vals = [key, scenario, canonical(overrides), json.dumps(point), time.time(),
                *(_sql_value(v) for v in fields.values())]
        self.conn.execute(f'INSERT OR REPLACE INTO "{TABLE}" ({", ".join(_q(c) for c in cols)}) '
                          f'VALUES ({", ".join("?" * len(cols))})', vals)
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()


def _quote(name: str) -> str:
    return name.replace('"', '""')


def _q(name: str) -> str:
    return f'"{_quote(name)}"'


def _sql_value(v: Any) -> Any:
    if v is None or isinstance(v, (int, float, str)):
        return v
    return canonical(v)


def sweep(scenario: Scenario | Mapping[str, Any] | str, grid: Mapping[str, Sequence[Any]],
          workers: int = 1, db: str | os.PathLike | None = None,
          overrides: Mapping[str, Any] | None = None, progress=None):
    """Runs every point of ``grid`` (a cartesian product of override values) on ``scenario``.

    scenario   a Scenario, a scenario dict, or the path of a scenario file.
    grid       {"key.path": [values...]}; a scalar value is a one-value axis.
    workers    points run in parallel on this many threads (the engine releases the GIL);
               the result does not depend on it.
    db         SQLite file: finished points are appended to table ``sweep`` and points already
               stored (same scenario name + overrides) are not run again (resume).
    overrides  fixed overrides applied to every point (grid values win on the same key).
    progress   optional callable(done, total) called as points finish.

    Returns a pandas DataFrame, one row per grid point, in grid order; ``df.attrs["grid"]``
    holds the grid keys.
    """
    import pandas as pd

    if isinstance(scenario, (str, os.PathLike)) and os.path.exists(os.fspath(scenario)):
        scenario = load(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = Scenario(scenario)
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError("sweep: grid must be a non-empty {key.path: [values]} mapping")
    keys = list(grid)
    points = grid_points(grid)
    base = dict(overrides or {})
    merged = [{**base, **p} for p in points]
    name = str(scenario.data.get("name", "unnamed"))
    point_keys = [point_key(name, m) for m in merged]
    doc = scenario.to_json()

    store = _Db(db) if db is not None else None
    try:
        results: list[dict | None] = [None] * len(points)
        if store is not None:
            done = store.done(point_keys)
            for i, k in enumerate(point_keys):
                if k in done:
                    results[i] = done[k]
        todo = [i for i, r in enumerate(results) if r is None]
        finished = len(points) - len(todo)
        if progress:
            progress(finished, len(points))

        def record(i: int, point: dict) -> None:
            nonlocal finished
            results[i] = point
            if store is not None and point["final"]:
                store.add(point_keys[i], name, merged[i], point)
            finished += 1
            if progress:
                progress(finished, len(points))

        workers = max(1, int(workers or 1))
        if workers == 1 or len(todo) <= 1:
            for i in todo:
                record(i, _run_point(doc, merged[i]))
        else:
            with ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
                futures = {pool.submit(_run_point, doc, merged[i]): i for i in todo}
                for f in as_completed(futures):  # the db is written from this thread only
                    record(futures[f], f.result())
    finally:
        if store is not None:
            store.close()

    report_cols: dict[str, None] = {}
    for r in results:
        for c in r["report"]:
            report_cols.setdefault(c, None)
    lead = [c for c in LEADING if c in report_cols]
    rest = [c for c in report_cols if c not in LEADING and c not in keys]
    columns = keys + lead + rest + ["error", "wall_s"]
    rows = []
    for p, r in zip(points, results):
        row = {**r["report"], **p, "error": r["error"], "wall_s": r["wall_s"]}
        rows.append([row.get(c) for c in columns])
    df = pd.DataFrame(rows, columns=columns)
    df.attrs["grid"] = keys
    df.attrs["scenario"] = name
    return df
