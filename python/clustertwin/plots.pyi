"""Type stubs of clustertwin.plots: matplotlib figures of runs and sweeps."""
import os
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from .frames import point_labels as point_labels

__all__ = ["breakdown_bars", "heatmap", "mfu_vs", "pareto_scatter", "point_labels"]

def breakdown_bars(data: Any, by: list[str] | None = ..., path: str | os.PathLike[str] | None = ...,
                   title: str | None = ..., figsize: tuple[float, float] = ...) -> Figure: ...
def mfu_vs(df: pd.DataFrame, x: str, y: str = ..., hue: list[str] | str | None = ...,
           path: str | os.PathLike[str] | None = ..., title: str | None = ...,
           figsize: tuple[float, float] = ...) -> Figure: ...
def heatmap(df: pd.DataFrame, x: str, y: str, value: str = ..., facet: str | None = ...,
            fits: str | None = ..., path: str | os.PathLike[str] | None = ..., title: str | None = ...,
            figsize: tuple[float, float] | None = ...) -> Figure: ...
def pareto_scatter(df: pd.DataFrame, x: str, y: str, front: pd.Series | str = ..., label_by: list[str] | None = ...,
                   xscale: float = ..., yscale: float = ..., xlabel: str | None = ..., ylabel: str | None = ...,
                   path: str | os.PathLike[str] | None = ..., title: str | None = ...,
                   figsize: tuple[float, float] = ...) -> Figure: ...
