"""Checks a sweep's keys and values against the scenario schema before any point runs.

The engine's loader converts every key first (unknown keys, wrong types, missing units,
out-of-range values) and only then checks rules across keys (the layout divides the GPUs,
the batch divides into micro-batches, ...). A sweep rejects only the first kind: a value that
is wrong on its own is wrong at every point, while a cross-key rule may hold at some points
and not at others, so those stay per-point errors.

The first kind alone comes from the loader's table walk (``_core.conversion_problems``). A problem is
blamed on swept value ``key = value`` when the baseline (scenario + fixed overrides) does not
have it, or when it names ``key`` itself (the value replaced whatever the baseline held).
Each distinct value of each key is probed once.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from . import _core
from .api import ScenarioError
from .sweep_store import canonical

def conversion_problems(doc: str, overrides: Mapping[str, Any]) -> set[str]:
    """The loader's conversion problems of ``doc`` with ``overrides`` (cross-key rules not run)."""
    try:
        return {p.strip() for p in _core.conversion_problems(doc, json.dumps(dict(overrides)))}
    except ScenarioError as e:  # a document or override that does not parse at all
        lines = str(e).splitlines()
        if lines and lines[0].strip() == "invalid scenario:":
            return {line.strip() for line in lines[1:] if line.strip()}
        return {str(e).strip()}


def _names(problem: str, key: str) -> bool:
    return any(problem.startswith(key + mark) for mark in (":", ".", "["))


def _blamed(doc: str, base: Mapping[str, Any], baseline: set[str], key: str, value: Any) -> list[str]:
    found = conversion_problems(doc, {**base, key: value})
    return sorted(p for p in found if p not in baseline or _names(p, key))


def check_sweep(doc: str, overrides: Mapping[str, Any], axes: Mapping[str, list]) -> None:
    """Raises ScenarioError listing every swept or fixed ``key = value`` the loader rejects.

    doc        the scenario as JSON text.
    overrides  fixed overrides applied at every point.
    axes       {key.path: [values to check]}; equal values (as canonical JSON) are checked once.
    """
    bad: list[str] = []
    untouched = conversion_problems(doc, {})
    for key, value in overrides.items():
        bad += _report("fixed override", key, value, _blamed(doc, {}, untouched, key, value))
    baseline = conversion_problems(doc, overrides)
    for key, values in axes.items():
        seen: set[str] = set()
        for value in values:
            if canonical(value) in seen:
                continue
            seen.add(canonical(value))
            bad += _report("swept", key, value, _blamed(doc, overrides, baseline, key, value))
    if bad:
        raise ScenarioError("sweep: rejected before running any point:\n  " + "\n  ".join(bad))


def _report(role: str, key: str, value: Any, problems: list[str]) -> list[str]:
    return [f"{role} {key} = {json.dumps(value)}: {p}" for p in problems]
