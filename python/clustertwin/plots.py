"""Matplotlib figures of runs and sweeps (Agg canvas; pyplot's global state is not touched).

    fig = plots.breakdown_bars(df)               # stacked step-time breakdown per sweep point
    fig = plots.mfu_vs(df, "training_job.micro_batch_size")   # one line per other grid value
    fig.savefig("mfu.png")                       # or pass path="mfu.png"

Each function returns the Figure (Jupyter shows it inline) and writes a PNG when ``path`` is
given. Rows with an ``error`` are left out.
"""
from __future__ import annotations

import os
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .frames import breakdown_frame, breakdown_long, point_labels


def _figure(figsize) -> Figure:
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _finish(fig: Figure, path: str | os.PathLike | None, dpi: int = 120) -> Figure:
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)
    return fig


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    if "error" in df.columns:
        keep = df["error"].isna()
        out = df[keep].reset_index(drop=True)
        out.attrs = dict(df.attrs)
        return out
    return df


def breakdown_bars(data: Any, by: list[str] | None = None, path: str | os.PathLike | None = None,
                   title: str | None = None, figsize=(8, 4.5)) -> Figure:
    """Stacked bar of the step-time breakdown, one bar per sweep point (or one for a report).

    data  a sweep DataFrame (``breakdown.*`` columns), a report dict or a Result.
    by    grid columns that label the bars (default: ``df.attrs["grid"]``).
    """
    xlabel = None
    if isinstance(data, pd.DataFrame):
        data = _ok(data)
        long = breakdown_long(data, by)
        keys = list(by if by is not None else data.attrs.get("grid", []))
        if keys:  # ticks show the values, the axis label names the keys
            ticks = point_labels(data, keys, names=False)
            long["label"] = long["point"].map(lambda i: ticks[i])
            xlabel = " / ".join(k.rsplit(".", 1)[-1] for k in keys)
    else:
        b = breakdown_frame(data)
        long = pd.DataFrame({"point": 0, "label": str(getattr(data, "report", data).get("name", "run")),
                             "component": b["component"], "seconds": b["seconds"]})
    fig = _figure(figsize)
    ax = fig.subplots()
    labels = long.drop_duplicates("point").sort_values("point")["label"].tolist()
    x = list(range(len(labels)))
    bottom = [0.0] * len(labels)
    for component, part in long.groupby("component", sort=False):
        heights = part.sort_values("point")["seconds"].fillna(0.0).tolist()
        ax.bar(x, heights, bottom=bottom, label=component)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for i, total in enumerate(bottom):
        if not total > 0:  # no step time: the point did not fit in memory (or was not computed)
            ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize="small")
    if len(x) < 3:  # keep one or two bars from filling the axes
        ax.set_xlim(-1.5, len(x) + 0.5)
    ax.set_xticks(x)
    long_ticks = sum(len(s) for s in labels) > 60
    ax.set_xticklabels(labels, rotation=30 if long_ticks else 0, ha="right" if long_ticks else "center")
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel("step time (s)")
    ax.set_title(title or "step-time breakdown")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, path)


def mfu_vs(df: pd.DataFrame, x: str, y: str = "mfu", hue: list[str] | str | None = None,
           path: str | os.PathLike | None = None, title: str | None = None, figsize=(6, 4)) -> Figure:
    """``y`` (default MFU, in %) against the swept parameter ``x``, one line per value of ``hue``.

    hue  grid columns that split the lines (default: the other grid keys of the sweep).
    """
    df = _ok(df)
    if hue is None:
        hue = [k for k in df.attrs.get("grid", []) if k != x]
    elif isinstance(hue, str):
        hue = [hue]
    scale = 100.0 if y in ("mfu", "hfu") else 1.0
    fig = _figure(figsize)
    ax = fig.subplots()
    groups = df.groupby(hue if len(hue) > 1 else hue[0], sort=False) if hue else [((), df)]
    for key, part in groups:
        if pd.api.types.is_numeric_dtype(part[x]):
            part = part.sort_values(x, kind="stable")  # else keep grid order ("50KB" before "100KB")
        key = key if isinstance(key, tuple) else (key,)
        label = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in zip(hue, key)) or None
        ax.plot(part[x].tolist(), (part[y] * scale).tolist(), marker="o", label=label)
    ax.set_xlabel(x.rsplit(".", 1)[-1])
    ax.set_ylabel(f"{y.upper()} (%)" if scale == 100.0 else y)
    ax.set_title(title or f"{y} vs {x.rsplit('.', 1)[-1]}")
    ax.grid(True, alpha=0.3)
    if hue:
        ax.legend(fontsize="small")
    return _finish(fig, path)


__all__ = ["breakdown_bars", "mfu_vs", "point_labels"]
