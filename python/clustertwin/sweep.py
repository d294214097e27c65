"""Parameter sweeps: one run per point, over a cartesian grid and/or random draws of scenario keys.

    df = ct.sweep(sc, grid={"network.ecn.kmin": ["50KB", "100KB"],
                            "training_job.micro_batch_size": [1, 2]}, workers=2)
    df = ct.sweep(sc, grid={"training_job.micro_batch_size": [1, 2]},
                  random={"network.ecn.kmin": "loguniform:20KB,400KB", "network.ecn.pmax": [0.05, 0.2, 1.0]},
                  samples=50, seed=1, backend="dask", workers=4, db="runs.sqlite", progress=True)

Points (``sweep_sampling``): a grid alone is its cartesian product (last key fastest); a grid
with ``samples=N`` and no random keys is N of its points chosen at random, in grid order;
``random={key: distribution}`` gives N draws (a list of values is a uniform choice; text specs
``choice:1,2,4``, ``uniform:LOW,HIGH``, ``loguniform:LOW,HIGH``, ``randint:LOW,HIGH``, bounds
with or without a unit) and with a grid too every grid point is paired with the same N draws.
The points depend only on the arguments and ``seed``; points with equal overrides run once.

Before any point runs, every distinct value of every swept key (each grid value, each choice,
the bounds and middle of a range) and every fixed override is checked against the scenario
schema (``sweep_check``): an unknown key or a value of the wrong type or unit raises
ScenarioError naming the key path, the value and what was expected. Rules across keys (the
layout must divide the GPUs, ...) can hold at some points only: a point that breaks one gets
an ``error`` row and the sweep goes on.

Backends: ``"threads"`` runs points on ``workers`` threads of this process (the engine
releases the GIL); ``"dask"`` runs them on a dask.distributed cluster (``client=`` an existing
distributed.Client, or a LocalCluster of ``workers`` one-thread processes made for the sweep;
``sweep_dask``). The result does not depend on the backend or the number of workers. The
LocalCluster's workers are spawned processes: a script using it needs the usual
``if __name__ == "__main__":`` guard.

Rows come in point order. Columns: one per swept key (grid keys, then random keys), then the
report's scalars flattened with dots (``step_time_s``, ``mfu``, ``breakdown.compute_s``,
``memory.fits``, ``traffic.fct_p99_s`` ...), then ``error`` (None, or why the point failed) and
``wall_s`` (the point's wall-clock time). ``df.attrs``: ``grid`` (every swept key), ``random``
(the random keys), ``seed``, ``scenario`` and ``resumed`` (points read back from ``db``).

With ``db="file.sqlite"`` (``sweep_store``) each point is written to table ``sweep`` as soon as
it finishes, whatever the backend, and points already there (the same scenario document, the
same engine build and the same overrides: ``sweep_store.point_key``) are read back instead of
run again, and ``df.attrs["resumed"]`` says how many: a sweep killed at any moment resumes where
it stopped, and a sweep of an edited scenario or a rebuilt engine runs again. Points whose overrides break a rule, and points whose worker process
died twice (dask), are stored with their error; other exceptions are shown but not stored,
so a resumed sweep runs them again.

``progress=True`` draws a progress line on stderr (points done/total, points/s, ETA;
``progress.ProgressLine``); a callable ``progress(done, total)`` is called instead.

From the shell (``cli.cmd_sweep``), the same sweep; ``--random`` takes the text specs,
``--scheduler ADDRESS`` runs on an existing dask scheduler, the progress line is on by default
when stderr is a terminal:

    ./clustertwin sweep SCENARIO [--set KEY=VALUE ...] [--grid KEY=V1,V2,... ...]
        [--random KEY=DIST ... --samples N] [--seed S] [--backend threads|dask | --scheduler ADDRESS]
        [--workers N] [--db FILE] [--csv OUT] [--progress | --no-progress]
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, Mapping, Sequence

from . import _core
from .api import Scenario, ScenarioError, load
from .progress import ProgressLine
from .sweep_check import check_sweep
from .sweep_sampling import axis_probes, grid_points, points
from .sweep_store import SweepStore, canonical, point_key

__all__ = ["sweep", "flatten", "grid_points", "point_key", "canonical"]

# Report scalars shown first, in this order; every other scalar follows in report order.
LEADING = ["step_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s", "tokens_per_s_per_gpu"]
# Report keys that are not results of the point (or not deterministic).
SKIPPED = {"name", "seed", "tables", "not_computed", "sim.wall_s", "sim.events_per_s"}
BACKENDS = ("threads", "dask")


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


def _run_point(doc: str, overrides: Mapping[str, Any]) -> dict:
    """One point -> {"report": flat scalars, "error": str|None, "wall_s": float, "final": bool}.

    Runs in a worker thread or a dask worker process. ``final`` says whether the outcome is
    the point's for good (stored in the database) or may differ on a rerun (not stored).
    """
    t0 = time.perf_counter()
    try:
        report = json.loads(_core.run(doc, json.dumps(dict(overrides)), "", False)[0])
        return {"report": flatten(report), "error": None, "wall_s": time.perf_counter() - t0, "final": True}
    except ScenarioError as e:  # a rule across keys: deterministic, so a resumed sweep keeps it
        return {"report": {}, "error": str(e), "wall_s": time.perf_counter() - t0, "final": True}
    except Exception as e:  # noqa: BLE001 - one bad point must not kill the sweep; retried on resume
        return {"report": {}, "error": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - t0,
                "final": False}


def _as_scenario(scenario: Scenario | Mapping[str, Any] | str | os.PathLike) -> Scenario:
    if isinstance(scenario, (str, os.PathLike)) and os.path.exists(os.fspath(scenario)):
        return load(scenario)
    if isinstance(scenario, Scenario):
        return scenario
    return Scenario(scenario)


def _progress_callback(progress: bool | Callable[[int, int], None] | None) -> Callable[[int, int], None] | None:
    if progress is True:
        return ProgressLine("sweep")
    return progress or None


def _run_threads(run_point: Callable, doc: str, todo: list[tuple[int, dict]], record: Callable[[int, dict], None],
                 workers: int) -> None:
    if workers == 1 or len(todo) <= 1:
        for index, overrides in todo:
            record(index, run_point(doc, overrides))
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, len(todo)))
    try:
        futures = {pool.submit(run_point, doc, overrides): index for index, overrides in todo}
        for future in as_completed(futures):  # the database is written from this thread only
            record(futures[future], future.result())
    finally:  # on an exception (Ctrl-C included) the points not started yet are dropped
        pool.shutdown(wait=True, cancel_futures=True)


class _Run:
    """The distinct points of one sweep, their results so far, and where each result goes."""

    def __init__(self, name: str, merged: list[dict], store: SweepStore | None,
                 progress: Callable[[int, int], None] | None, doc: str = ""):
        self.name = name
        self.keys = [point_key(name, m, doc) for m in merged]
        self.unique = list(dict.fromkeys(self.keys))
        self.overrides = dict(zip(self.keys, merged))
        self.store = store
        self.progress = progress
        self.results: dict[str, dict] = store.done(self.unique) if store is not None else {}
        self.resumed = len(self.results)

    def todo(self) -> list[tuple[int, dict]]:
        return [(i, self.overrides[k]) for i, k in enumerate(self.unique) if k not in self.results]

    def record(self, index: int, point: dict) -> None:
        key = self.unique[index]
        self.results[key] = point
        if self.store is not None and point["final"]:
            self.store.add(key, self.name, self.overrides[key], point)
        self.tick()

    def tick(self) -> None:
        if self.progress:
            self.progress(len(self.results), len(self.unique))


def sweep(scenario: Scenario | Mapping[str, Any] | str | os.PathLike,
          grid: Mapping[str, Sequence[Any] | Any] | None = None,
          workers: int = 1, db: str | os.PathLike | None = None,
          overrides: Mapping[str, Any] | None = None,
          progress: bool | Callable[[int, int], None] | None = None, *,
          random: Mapping[str, Any] | None = None, samples: int | None = None, seed: int = 0,
          backend: str = "threads", client: Any = None):
    """Runs ``scenario`` at every point of a grid and/or random draws of overrides; one row per point.

    scenario   a Scenario, a scenario dict, or the path of a scenario file.
    grid       {"key.path": [values...]}: the cartesian product; a scalar is a one-value axis.
    workers    threads (backend "threads") or LocalCluster processes (backend "dask").
    db         SQLite file: each finished point is written at once, points already stored
               (same scenario name + overrides) are read back, not run again (resume).
    overrides  fixed overrides applied at every point (swept values win on the same key).
    progress   True: a progress line on stderr; or a callable(done, total).
    random     {"key.path": distribution}: a list of values, a ``sweep_sampling`` Distribution
               or a text spec ("choice:1,2,4", "uniform:0.1,0.5", "loguniform:20KB,400KB",
               "randint:1,8"); needs ``samples``.
    samples    random draws (with ``random``), or how many grid points to pick at random.
    seed       seed of every random choice: the same seed gives the same points.
    backend    "threads" (default) or "dask".
    client     a distributed.Client to run on (backend "dask"); default: a LocalCluster.

    Raises ScenarioError before running anything when a swept or fixed key is unknown or a
    value has the wrong type or unit; ValueError for a malformed sweep (no axes, bad samples,
    unknown backend). Returns a pandas DataFrame (see the module docstring).
    """
    import pandas as pd

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"sweep: got workers={workers!r}, expected a whole number >= 1")
    if backend not in BACKENDS:
        raise ValueError(f"sweep: got backend={backend!r}, expected one of {', '.join(BACKENDS)}")
    if client is not None and backend != "dask":
        raise ValueError("sweep: client= runs on dask; pass backend='dask' with it")
    scenario = _as_scenario(scenario)
    base = dict(overrides or {})
    rows = points(grid, random, samples, seed)
    doc = scenario.to_json()
    check_sweep(doc, base, axis_probes(grid, random))
    merged = [{**base, **p} for p in rows]
    name = str(scenario.data.get("name", "unnamed"))

    store = SweepStore(db) if db is not None else None
    bar = _progress_callback(progress)
    try:
        run = _Run(name, merged, store, bar, doc)
        _execute(run, doc, backend, workers, client)
    finally:
        if store is not None:
            store.close()
        if isinstance(bar, ProgressLine):
            bar.close()
    swept = list(grid or {}) + list(random or {})
    df = _frame(pd, swept, rows, [run.results[k] for k in run.keys])
    df.attrs.update(grid=swept, random=list(random or {}), seed=seed, scenario=name, resumed=run.resumed)
    return df


def _execute(run: _Run, doc: str, backend: str, workers: int, client: Any) -> None:
    run.tick()
    todo = run.todo()
    if backend == "dask":
        from .sweep_dask import run_on_dask

        run_on_dask(_run_point, doc, todo, run.record, client=client, workers=workers)
    else:
        _run_threads(_run_point, doc, todo, run.record, workers)


def _frame(pd, swept: list[str], rows: list[dict], results: list[dict]):
    report_cols: dict[str, None] = {}
    for r in results:
        for c in r["report"]:
            report_cols.setdefault(c, None)
    lead = [c for c in LEADING if c in report_cols]
    rest = [c for c in report_cols if c not in LEADING and c not in swept]
    columns = swept + lead + rest + ["error", "wall_s"]
    table = []
    for p, r in zip(rows, results):
        row = {**r["report"], **p, "error": r["error"], "wall_s": r["wall_s"]}
        table.append([row.get(c) for c in columns])
    return pd.DataFrame(table, columns=columns)
