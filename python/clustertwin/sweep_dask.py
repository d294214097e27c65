"""The ``dask`` backend of ``sweep``: points run as tasks on a dask.distributed cluster.

With ``client=`` the sweep uses that cluster (its workers must import clustertwin, e.g.
started with PYTHONPATH=<repo>/python). Otherwise a LocalCluster of ``workers`` processes
with one thread each is started for the sweep and closed after it; its workers get this
package's directory on PYTHONPATH (through ``distributed.nanny.pre-spawn-environ``, which
the nanny also writes into this process's environment) and its scheduler gives up on a task
at the first worker death (``allowed-failures`` 0), so the retry below is the only one.

Results come back to this process, which records each point as it finishes (the caller
writes the database). At most one task per live worker thread is in flight (the scheduler's
thread count is read again every POLL_S and right after a worker died), so every task a worker
holds is running:
a worker that dies takes only its running point with it. That point is submitted once more,
when a thread is free; if a worker dies on it again it is recorded as failed, with an error
saying so.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

POLL_S = 0.5  # how often the worker count is looked at again while points run
WORKER_WAIT_S = 120  # how long to wait for a worker when none is there
Record = Callable[[int, dict], None]


def run_on_dask(run_point: Callable[[str, Mapping[str, Any]], dict], doc: str,
                todo: Sequence[tuple[int, Mapping[str, Any]]], record: Record,
                client: Any = None, workers: int = 1) -> None:
    """Runs ``run_point(doc, overrides)`` for every (index, overrides) of ``todo``; calls record(index, point)."""
    with _client(client, workers) as c:
        _drive(c, run_point, doc, todo, record)


def _worker_environ() -> dict:
    import dask

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    paths = [PACKAGE_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


@contextmanager
def _client(client: Any, workers: int) -> Iterator[Any]:
    if client is not None:
        yield client
        return
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.nanny.pre-spawn-environ": _worker_environ()}):
        # Every listener on loopback: the scheduler, the workers and their HTTP servers (which
        # take the worker's host when no dashboard address is given), and the scheduler's
        # dashboard. ":0" would listen on every interface of a shared login node.
        cluster = LocalCluster(n_workers=max(1, int(workers)), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address="127.0.0.1:0",
                               worker_dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        with Client(cluster) as c:
            yield c
    finally:
        cluster.close()


class _LiveThreads:
    """The scheduler's count of worker threads, asked again after POLL_S or when told a worker died."""

    def __init__(self, client: Any):
        self.client = client
        self.asked = -float("inf")
        self.count = 0

    def __call__(self) -> int:
        if time.monotonic() - self.asked >= POLL_S:
            self.count = sum(self.client.nthreads().values())
            self.asked = time.monotonic()
        return self.count

    def forget(self) -> None:
        self.asked = -float("inf")


def _drive(client: Any, run_point: Callable, doc: str, todo: Sequence[tuple[int, Mapping[str, Any]]],
           record: Record) -> None:
    """Keeps at most one task per live worker thread in flight; records points as they finish."""
    from distributed import wait

    queue = deque((index, overrides, 0) for index, overrides in todo)
    running: dict[Any, tuple[int, Mapping[str, Any], int, float]] = {}
    live_threads = _LiveThreads(client)

    def submit(index: int, overrides: Mapping[str, Any], attempt: int) -> None:
        future = client.submit(run_point, doc, overrides, key=f"clustertwin-sweep-{uuid.uuid4().hex}")
        running[future] = (index, overrides, attempt, time.perf_counter())

    def fill() -> None:
        free = live_threads() - len(running)
        while queue and free > 0:
            submit(*queue.popleft())
            free -= 1

    try:
        while queue or running:
            fill()
            if not running:
                _wait_for_a_worker(client)
                live_threads.forget()
                continue
            try:
                done, _ = wait(list(running), timeout=POLL_S, return_when="FIRST_COMPLETED")
            except (TimeoutError, asyncio.TimeoutError):
                continue
            finished = []
            for future in done:
                index, overrides, attempt, started = running.pop(future)
                point = _outcome(future, attempt, time.perf_counter() - started)
                if point is None:
                    queue.appendleft((index, overrides, attempt + 1))
                    live_threads.forget()
                else:
                    finished.append((index, point))
            fill()  # the freed threads get their next point before the database is written
            for index, point in finished:
                record(index, point)
    finally:
        if running:
            client.cancel(list(running))


def _wait_for_a_worker(client: Any) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except (TimeoutError, asyncio.TimeoutError):
        raise RuntimeError(f"dask: no worker joined the cluster within {WORKER_WAIT_S} s") from None


def _outcome(future: Any, attempt: int, wall_s: float) -> dict | None:
    """The point a finished future holds; None when its worker died on the first attempt."""
    from distributed.scheduler import KilledWorker

    try:
        return future.result()
    except KilledWorker as e:
        if attempt == 0:
            return None
        worker = getattr(getattr(e, "last_worker", None), "address", "a worker")
        return {"report": {}, "wall_s": wall_s, "final": True,
                "error": f"KilledWorker: the worker process died while running this point, twice "
                         f"(retried once; last on {worker})"}
    except ImportError as e:
        raise RuntimeError(f"dask workers cannot import clustertwin ({e}); start them with "
                           f"PYTHONPATH={PACKAGE_ROOT}") from e
    except Exception as e:  # noqa: BLE001 - a lost task is that point's error; a resumed sweep retries it
        return {"report": {}, "error": f"{type(e).__name__}: {e}", "wall_s": wall_s, "final": False}
