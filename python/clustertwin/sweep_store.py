"""The SQLite store of a sweep: one row per finished point, written as the point finishes.

Table ``sweep``: ``key`` (scenario name, a hash of the scenario document and the engine build,
and the canonical JSON of the point's overrides: ``point_key``; the
primary key), ``scenario``, ``overrides`` (canonical JSON), ``row_json`` (the point as the
sweep keeps it), ``created`` (Unix time the row was written), then one column per report
scalar plus ``error`` and ``wall_s``, added as new names appear. Every row is committed on
its own, so a process killed mid-sweep loses at most the points that were still running.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

TABLE = "sweep"


def canonical(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal overrides give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def engine_version() -> str:
    """SHA-256 of the compiled engine (``_core``): any change to the model changes it."""
    global _ENGINE
    if _ENGINE is None:
        from . import _core

        with open(_core.__file__, "rb") as f:
            _ENGINE = hashlib.sha256(f.read()).hexdigest()[:16]
    return _ENGINE


_ENGINE: str | None = None


def point_key(name: str, overrides: Mapping[str, Any], scenario: str = "") -> str:
    """The resume key of a point: scenario name + a hash of the whole scenario document and the
    engine version + canonical JSON of its overrides. Editing the scenario file, or rebuilding
    the engine, gives new keys, so stored rows computed for the old ones are not reused."""
    digest = hashlib.sha256((scenario + "\0" + engine_version()).encode()).hexdigest()[:16]
    return f"{name} {digest} {canonical(overrides)}"


class SweepStore:
    """Append-only SQLite store of finished points: one column per field plus the row as JSON."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        # Several processes may share one file: WAL lets readers run beside a writer, every
        # write is one BEGIN IMMEDIATE transaction (the write lock taken before anything is
        # read), and a writer waits up to a minute for another's lock instead of failing.
        self.conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        # Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
        # locked" at once, without its busy timeout, while another process does the same:
        # retry for as long as a writer would wait.
        deadline = time.monotonic() + 60.0
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        with self._transaction():
            self.conn.execute(f'CREATE TABLE IF NOT EXISTS "{TABLE}" (key TEXT PRIMARY KEY, scenario TEXT, '
                              f'overrides TEXT, row_json TEXT, created REAL)')
            self.columns = self._read_columns()

    def _read_columns(self) -> set[str]:
        return {r[1] for r in self.conn.execute(f'PRAGMA table_info("{TABLE}")')}

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def done(self, keys: Iterable[str]) -> dict[str, dict]:
        """The stored points among ``keys``: {key: point}."""
        wanted = set(keys)
        rows = self.conn.execute(f'SELECT key, row_json FROM "{TABLE}"')
        return {key: json.loads(row) for key, row in rows if key in wanted}

    def add(self, key: str, scenario: str, overrides: Mapping[str, Any], point: dict) -> None:
        """Writes one finished point and commits. The columns are read again inside the write
        transaction, so a column another process added meanwhile is not added twice."""
        fields = {**point["report"], "error": point["error"], "wall_s": point["wall_s"]}
        with self._transaction():
            if any(name not in self.columns for name in fields):
                self.columns = self._read_columns()
            for name, value in fields.items():
                if name not in self.columns:
                    kind = "REAL" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
                    self.conn.execute(f'ALTER TABLE "{TABLE}" ADD COLUMN {_q(name)} {kind}')
                    self.columns.add(name)
            cols = ["key", "scenario", "overrides", "row_json", "created", *fields]
            vals = [key, scenario, canonical(overrides), json.dumps(point), time.time(),
                    *(_sql_value(v) for v in fields.values())]
            self.conn.execute(f'INSERT OR REPLACE INTO "{TABLE}" ({", ".join(_q(c) for c in cols)}) '
                              f'VALUES ({", ".join("?" * len(cols))})', vals)

    def close(self) -> None:
        self.conn.close()


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_value(v: Any) -> Any:
    if v is None or isinstance(v, (int, float, str)):
        return v
    return canonical(v)
