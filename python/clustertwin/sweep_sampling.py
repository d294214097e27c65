"""The points of a sweep: a cartesian grid, random draws, or both.

Axes and their values:

- ``grid={"a.b": [1, 2, 4]}``: every combination of the grid values (last key fastest).
- ``random={"c.d": DIST}``: ``samples`` draws, each key drawn independently from its
  distribution. DIST is a list of values (a uniform choice among them), a Distribution
  (``choice``, ``uniform``, ``loguniform``, ``randint`` below) or the same as text, as the
  CLI's ``--random`` takes it: ``"choice:1,2,4"``, ``"uniform:0.05,0.5"``,
  ``"loguniform:20KB,400KB"``, ``"randint:1,8"``. Bounds may carry a unit; both bounds of
  one axis carry the same unit and the draws are written with it (``"137.21KB"``).

``points()`` combines them: a grid alone gives its product; a grid with ``samples=N`` and no
random keys gives N distinct grid points chosen at random (kept in grid order); random keys
give N draws, and with a grid too every grid point is paired with the same N draws (grid
outer, draws inner), so grid values are compared on identical random settings. Everything
random comes from ``random.Random(seed)`` in a fixed order: one seed, one list of points.
"""
from __future__ import annotations

import abc
import itertools
import json
import math
import random as _random
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .api import ScenarioError

_NUMBER_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


class Distribution(abc.ABC):
    """A random axis: ``draw(rng)`` gives one value, ``probes()`` the values worth validating."""

    @abc.abstractmethod
    def draw(self, rng: _random.Random) -> Any:
        """One value, drawn with ``rng``."""

    @abc.abstractmethod
    def probes(self) -> list:
        """Values that stand for every draw when checking the key's type and unit."""


@dataclass(frozen=True)
class Choice(Distribution):
    """One of ``values``, each equally likely."""

    values: tuple

    def draw(self, rng: _random.Random) -> Any:
        return rng.choice(self.values)

    def probes(self) -> list:
        return list(self.values)


@dataclass(frozen=True)
class Uniform(Distribution):
    """A real number in [low, high], uniform (or uniform in log space with ``log=True``).

    With a ``unit`` ("KB", "us", "Gbps") the draw is the text ``f"{x:.6g}{unit}"``.
    """

    low: float
    high: float
    unit: str = ""
    log: bool = False

    def draw(self, rng: _random.Random) -> Any:
        if self.log:
            x = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            x = rng.uniform(self.low, self.high)
        return self._value(x)

    def probes(self) -> list:
        middle = math.sqrt(self.low * self.high) if self.log else (self.low + self.high) / 2
        return [self._value(x) for x in (self.low, middle, self.high)]

    def _value(self, x: float) -> Any:
        return f"{x:.6g}{self.unit}" if self.unit else float(x)


@dataclass(frozen=True)
class RandInt(Distribution):
    """An integer in [low, high] (both included), each equally likely."""

    low: int
    high: int

    def draw(self, rng: _random.Random) -> Any:
        return rng.randint(self.low, self.high)

    def probes(self) -> list:
        return [self.low, self.high]


def choice(*values: Any) -> Choice:
    """A uniform choice among ``values``."""
    if not values:
        raise ValueError("choice: give at least one value")
    return Choice(tuple(values))


def uniform(low: float | str, high: float | str) -> Uniform:
    """Uniform in [low, high]; bounds may be quantities with one unit, like "50KB", "400KB"."""
    lo, hi, unit = _bounds("uniform", low, high)
    return Uniform(lo, hi, unit)


def loguniform(low: float | str, high: float | str) -> Uniform:
    """Log-uniform in [low, high] (low > 0); bounds may be quantities with one unit."""
    lo, hi, unit = _bounds("loguniform", low, high)
    if lo <= 0:
        raise ValueError(f"loguniform: got low = {low!r}, expected a bound above 0")
    return Uniform(lo, hi, unit, log=True)


def randint(low: int, high: int) -> RandInt:
    """An integer in [low, high], both included."""
    if isinstance(low, bool) or isinstance(high, bool) or not isinstance(low, int) or not isinstance(high, int):
        raise ValueError(f"randint: got {low!r}, {high!r}, expected two integers")
    if low > high:
        raise ValueError(f"randint: got {low}, {high}, expected low <= high")
    return RandInt(low, high)


def _bounds(kind: str, low: Any, high: Any) -> tuple[float, float, str]:
    lo, lo_unit = _split_quantity(kind, low)
    hi, hi_unit = _split_quantity(kind, high)
    if lo_unit != hi_unit:
        raise ValueError(f"{kind}: got {low!r}, {high!r}, expected both bounds in the same unit")
    if not lo < hi:
        raise ValueError(f"{kind}: got {low!r}, {high!r}, expected low < high")
    return lo, hi, lo_unit


def _split_quantity(kind: str, value: Any) -> tuple[float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), ""
    match = _NUMBER_WITH_UNIT.match(value) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"{kind}: got bound {value!r}, expected a number, optionally with a unit like '50KB'")
    return float(match.group(1)), match.group(2)


_RANGES = {"uniform": uniform, "loguniform": loguniform, "randint": randint}


def parse_value(text: str) -> Any:
    """A CLI value: JSON when it parses (1, 2.5, true, "x", [1,2]), otherwise the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def distribution(key: str, spec: Any) -> Distribution:
    """The Distribution of random axis ``key`` from a Distribution, a list of values or a text spec.

    Raises ScenarioError naming the key and the spec when it is not one of those.
    """
    if isinstance(spec, Distribution):
        return spec
    if isinstance(spec, (list, tuple)) and spec:
        return Choice(tuple(spec))
    kind, sep, args = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or (kind != "choice" and kind not in _RANGES):
        raise ScenarioError(f"sweep random {key}: got {spec!r}, expected a non-empty list of values or one of "
                            f"'choice:V1,V2,...', 'uniform:LOW,HIGH', 'loguniform:LOW,HIGH', 'randint:LOW,HIGH'")
    values = [parse_value(v.strip()) for v in args.split(",")] if args.strip() else []
    try:
        if kind == "choice":
            return choice(*values)
        if len(values) != 2:
            raise ValueError(f"{kind}: got {len(values)} bounds, expected LOW,HIGH")
        return _RANGES[kind](*values)
    except ValueError as e:
        raise ScenarioError(f"sweep random {key}: {spec!r}: {e}") from None


def random_args(pairs: Sequence[str] | None) -> dict[str, str]:
    """CLI ``--random KEY=DIST`` arguments -> {key: DIST text}; DIST is parsed by ``distribution``."""
    out = {}
    for pair in pairs or []:
        key, sep, spec = pair.partition("=")
        if not sep or not key:
            raise ScenarioError(f"--random {pair!r}: expected KEY.PATH=DIST, "
                                "like a.b=choice:1,2,4 or a.b=uniform:0.1,0.5")
        out[key] = spec
    return out


def grid_points(grid: Mapping[str, Any]) -> list[dict]:
    """The cartesian product of a grid, as override dicts, last key varying fastest."""
    keys = list(grid)
    values = [as_list(grid[k]) for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def as_list(v: Any) -> list:
    """A grid axis as a list: lists, tuples and ranges as they are; a scalar is a one-value axis."""
    if isinstance(v, (list, tuple, range)):
        return list(v)
    return [v]


def draws(random: Mapping[str, Distribution], samples: int, rng: _random.Random) -> list[dict]:
    """``samples`` override dicts, each drawing every key of ``random`` in order."""
    return [{key: dist.draw(rng) for key, dist in random.items()} for _ in range(samples)]


def points(grid: Mapping[str, Any] | None, random: Mapping[str, Any] | None, samples: int | None,
           seed: int) -> list[dict]:
    """The override dicts of a sweep, in row order (see the module docstring)."""
    grid = dict(grid or {})
    dists = {key: distribution(key, spec) for key, spec in (random or {}).items()}
    if not grid and not dists:
        raise ValueError("sweep: give a non-empty grid={key.path: [values]} and/or random={key.path: distribution}")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise ValueError(f"sweep: got samples={samples!r}, expected a positive integer")
    if dists and samples is None:
        raise ValueError("sweep: random keys need samples=N, the number of draws")
    empty = [key for key, values in grid.items() if not as_list(values)]
    if empty:
        raise ValueError(f"sweep: grid axis {', '.join(empty)} has no values")
    both = sorted(set(grid) & set(dists))
    if both:
        raise ValueError(f"sweep: {', '.join(both)} in both grid and random; give each key once")
    rng = _random.Random(seed)
    grid_part = grid_points(grid)
    if not dists:
        if samples is None or samples >= len(grid_part):
            return grid_part
        return [grid_part[i] for i in sorted(rng.sample(range(len(grid_part)), samples))]
    drawn = draws(dists, samples, rng)
    return [{**g, **d} for g in grid_part for d in drawn]


def point_count(grid: Mapping[str, Any] | None, random: Mapping[str, Any] | None, samples: int | None) -> int:
    """How many points ``points`` would give, without making them (for the cost estimate)."""
    product = 1
    for values in (grid or {}).values():
        product *= len(as_list(values))
    if not random:
        return product if samples is None else min(product, samples)
    return product * (samples or 0)


def axis_probes(grid: Mapping[str, Any] | None, random: Mapping[str, Any] | None) -> dict[str, list]:
    """Every value worth validating per swept key: each grid value, each choice, range bounds and middle."""
    out = {key: as_list(values) for key, values in (grid or {}).items()}
    for key, spec in (random or {}).items():
        out[key] = distribution(key, spec).probes()
    return out
