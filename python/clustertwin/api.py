"""Python API over the C++ engine: scenarios as dicts, runs as reports and tables."""
from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import _core

ScenarioError = _core.ScenarioError


def _parameter_doc() -> str:
    lines = ["Scenario keys (kind, default):", ""]
    for p in _core.parameters():
        default = "required" if p["default"] is None else p["default"]
        lines.append(f"  {p['path']} ({p['kind']}, {default}): {p['doc']}")
    return "\n".join(lines)


class Scenario:
    """A scenario document (the dict form of a JSON/YAML scenario file)."""

    def __init__(self, data: Mapping[str, Any] | str, source: str | None = None):
        if isinstance(data, str):
            data = json.loads(_core.parse_document(data))
        self.data: dict[str, Any] = copy.deepcopy(dict(data))
        self.source = source

    def to_json(self) -> str:
        return json.dumps(self.data)

    def validate(self, overrides: Mapping[str, Any] | None = None) -> None:
        """Raises ScenarioError naming every bad key, value and expectation."""
        _core.validate(self.to_json(), json.dumps(dict(overrides or {})))

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Scenario":
        out = Scenario(self.data, self.source)
        for path, value in overrides.items():
            node = out.data
            keys = path.split(".")
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = value
        return out

    def __repr__(self) -> str:
        return f"Scenario({self.data.get('name', 'unnamed')!r}, source={self.source!r})"


Scenario.__doc__ = (Scenario.__doc__ or "") + "\n\n" + _parameter_doc()


def load(path: str | os.PathLike) -> Scenario:
    """Reads a JSON or YAML scenario file."""
    path = os.fspath(path)
    return Scenario(json.loads(_core.read_document(path)), source=path)


def schema() -> dict:
    """JSON Schema of scenario files, generated from the parameter table."""
    return json.loads(_core.schema())


@dataclass
class Result:
    """One run: the report dict, plus tables as pandas DataFrames when pandas is present."""

    report: dict
    trace_path: str | None = None
    _tables: dict = field(default_factory=dict, repr=False)

    def _table(self, key: str):
        import pandas as pd  # deferred: the CLI does not need pandas

        if key not in self._tables:
            self._tables[key] = pd.DataFrame(self.report.get("tables", {}).get(key, []))
        return self._tables[key]

    @property
    def timeline(self):
        return self._table("timeline")

    @property
    def links(self):
        return self._table("links")

    @property
    def queues(self):
        return self._table("queues")

    @property
    def ranks(self):
        return self._table("ranks")

    @property
    def collectives(self):
        """Collectives of one step (``frames.collectives_frame``): op, group_size, bytes, count, time_s, busbw_gbps."""
        from .frames import collectives_frame

        return collectives_frame(self.report)

    @property
    def breakdown(self):
        """Step-time breakdown (``frames.breakdown_frame``): component, seconds, fraction."""
        from .frames import breakdown_frame

        return breakdown_frame(self.report)

    def to_chrome_trace(self, path: str | os.PathLike) -> str:
        """Copies the Chrome/Perfetto trace written by ``run(..., trace=...)`` to ``path``; returns ``path``.

        Nothing is rerun: a Result made without ``trace=`` has no trace and raises ValueError.
        """
        import shutil

        if not self.trace_path or not os.path.exists(self.trace_path):
            raise ValueError("to_chrome_trace: this run wrote no trace; run it with trace='file.json'")
        path = os.fspath(path)
        if os.path.abspath(path) != os.path.abspath(self.trace_path):
            shutil.copyfile(self.trace_path, path)
        return path


def run(scenario: Scenario | Mapping[str, Any] | str, overrides: Mapping[str, Any] | None = None,
        trace: str | None = None) -> Result:
    """Runs a scenario (releasing the GIL) and returns its Result."""
    if isinstance(scenario, (str, os.PathLike)) and os.path.exists(os.fspath(scenario)):
        scenario = load(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = Scenario(scenario)
    report = json.loads(_core.run(scenario.to_json(), json.dumps(dict(overrides or {})), trace or ""))
    return Result(report=report, trace_path=trace)
