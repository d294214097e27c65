"""Capacity planning: ``ct.plan`` (and ``clustertwin plan``), models/scenario/planner.h."""
from __future__ import annotations

import json
import math
import re
import sys
import time
from typing import Any, Callable, Mapping

from . import _core
from .api import ScenarioError

# Suffixes of counts as planners write them: 405B parameters, 15T tokens, 4M tokens per batch.
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_QUANTITY = re.compile(r"\s*([0-9][0-9_]*\.?[0-9_]*(?:e[+-]?[0-9]+)?)\s*([kmbgtp]?)\s*", re.IGNORECASE)


def quantity(value: Any, what: str) -> float:
    """A positive count from 405e9, 405B, 15T, 4M or 1.5e12 (suffixes K M B/G T P, any case);
    ScenarioError naming ``what`` otherwise."""
    if isinstance(value, bool):
        raise ScenarioError(f"{what}: got {value!r}, expected a number like 405e9 or 405B")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        m = _QUANTITY.fullmatch(str(value))
        if not m:
            raise ScenarioError(f"{what}: got {value!r}, expected a number like 405e9 or 405B "
                                "(suffixes K, M, B or G, T, P)")
        number = float(m.group(1).replace("_", "")) * _SUFFIX[m.group(2).lower()]
    if not (math.isfinite(number) and number > 0):
        raise ScenarioError(f"{what}: got {value!r}, expected a positive number like 405e9 or 405B")
    return number


def _progress_printer(stream=None) -> Callable[[int, int], None]:
    """Prints 'layouts done/total, elapsed, left' to stderr once the search has run 2 s, then
    every 2 s and at the end."""
    stream = stream or sys.stderr
    start = time.monotonic()
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic() - start
        if now < 2.0 or (now - last[0] < 2.0 and done < total):
            return
        last[0] = now
        left = now / done * (total - done) if done else math.nan
        stream.write(f"plan: {done}/{total} layouts, {now:.0f} s, about {left:.0f} s left\n")
        stream.flush()

    return report


def plan(params: Any = None, tokens: Any = None, days: float | None = None, gpu: str = "H100-SXM",
         model: str | Mapping[str, Any] | None = None, seq: int | None = None, batch_tokens: Any = 4e6,
         pue: float | None = None, threads: int = 0,
         progress: bool | Callable[[int, int], None] = False) -> dict:
    """GPUs, HBM, NIC bandwidth and power to train ``params`` parameters on ``tokens`` tokens in
    ``days`` days at 50/40/30% MFU, and the fastest layout the step model finds for the model.

    model: a preset name ("llama3-405b") or training_job.model keys (a preset with fields
    overridden, or a full shape); None = the dense preset or GPT-3 table shape nearest
    ``params``. params defaults to the model's active parameters. Counts accept 405B, 15T, 4M.
    pue: facility power = IT power x pue (None: not computed). progress: True prints progress
    on stderr, or a callable(done, total). Returns the plan as a dict (``warnings`` says when
    the model's parameters are more than 5% from ``params``).
    """
    n = quantity(params, "params") if params is not None else 0.0
    if tokens is None or days is None:
        raise ScenarioError("plan: tokens and days are required")
    d = quantity(tokens, "tokens")
    b = quantity(batch_tokens, "batch_tokens")
    if isinstance(model, str):
        model = {"preset": model}
    model_json = json.dumps(dict(model)) if model is not None else ""
    callback = _progress_printer() if progress is True else (progress or None)
    return json.loads(_core.plan(n, d, float(days), gpu, model_json, int(seq or 0), b, float(pue or 0.0), int(threads),
                                 callback))
