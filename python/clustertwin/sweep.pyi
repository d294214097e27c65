"""Type stubs of clustertwin.sweep: parameter sweeps over grids and random draws."""
import os
from typing import Any, Callable, Literal, Mapping, Sequence

import pandas as pd

from .api import ScenarioLike
from .sweep_sampling import RandomSpec
from .sweep_sampling import grid_points as grid_points
from .sweep_store import canonical as canonical
from .sweep_store import point_key as point_key

__all__ = ["sweep", "flatten", "grid_points", "point_key", "canonical"]

LEADING: list[str]
SKIPPED: set[str]
BACKENDS: tuple[str, ...]

def flatten(report: Mapping[str, Any]) -> dict[str, Any]: ...
def sweep(scenario: ScenarioLike, grid: Mapping[str, Sequence[Any] | Any] | None = ..., workers: int = ...,
          db: str | os.PathLike[str] | None = ..., overrides: Mapping[str, Any] | None = ...,
          progress: bool | Callable[[int, int], None] | None = ..., *,
          random: Mapping[str, RandomSpec] | None = ..., samples: int | None = ..., seed: int = ...,
          backend: Literal["threads", "dask"] = ..., client: Any = ...) -> pd.DataFrame: ...
