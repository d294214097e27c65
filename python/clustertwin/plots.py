"""Matplotlib figures of runs and sweeps (Agg canvas; pyplot's global state is not touched).

    fig = plots.breakdown_bars(df)               # stacked step-time breakdown per sweep point
    fig = plots.mfu_vs(df, "training_job.micro_batch_size")   # one line per other grid value
    fig = plots.heatmap(df, "training_job.parallelism.tensor_parallel",
                        "training_job.parallelism.pipeline_parallel")  # MFU grid, OOM cells marked
    fig = plots.pareto_scatter(df, "traffic.fct_p99_s", "network.pfc_paused_time_s", front=on_front)
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


def heatmap(df: pd.DataFrame, x: str, y: str, value: str = "mfu", facet: str | None = None,
            fits: str | None = "memory.fits", path: str | os.PathLike | None = None,
            title: str | None = None, figsize=None) -> Figure:
    """``value`` (MFU in %) over two grid keys, one panel per value of ``facet``.

    Cells whose ``fits`` column is False are hatched and marked "OOM" with, below it, the value
    the layout would reach with enough memory (the engine still simulates it); they are left
    out of the colour scale and of the best cell. Cells with an ``error`` are marked "invalid";
    the best cell of each panel is outlined.
    """
    import numpy as np
    from matplotlib.patches import Rectangle

    scale = 100.0 if value in ("mfu", "hfu") else 1.0
    facets = list(dict.fromkeys(df[facet].tolist())) if facet else [None]
    def axis(col):  # numbers ascending, anything else ("50KB", "100KB") in grid order
        values = list(dict.fromkeys(df[col].tolist()))
        return sorted(values) if pd.api.types.is_numeric_dtype(df[col]) else values

    xs, ys = axis(x), axis(y)
    vals = pd.to_numeric(df[value], errors="coerce") * scale
    feasible = vals
    if fits and fits in df.columns:
        feasible = vals.where(df[fits].map(lambda f: f is None or bool(f)))
    vmin, vmax = (float(np.nanmin(feasible)), float(np.nanmax(feasible))) if feasible.notna().any() else (0.0, 1.0)
    fig = _figure(figsize or (3.6 * len(facets) + 1.2, 3.4))
    axes = fig.subplots(1, len(facets), squeeze=False)[0]
    image = None
    for ax, fv in zip(axes, facets):
        part = df if facet is None else df[df[facet] == fv]
        grid = np.full((len(ys), len(xs)), np.nan)
        marks = {}
        for idx, row in part.iterrows():
            i, j = ys.index(row[y]), xs.index(row[x])
            err = row.get("error") if "error" in part.columns else None
            if isinstance(err, str) and err:
                marks[(i, j)] = "invalid"
            elif fits and fits in part.columns and row[fits] is not None and not bool(row[fits]):
                v = vals.loc[idx]
                marks[(i, j)] = "OOM" if pd.isna(v) else f"OOM\n({v:.3g})"
            else:
                grid[i, j] = vals.loc[idx]
        image = ax.imshow(np.ma.masked_invalid(grid), origin="lower", cmap="viridis", vmin=vmin, vmax=vmax,
                          aspect="auto")
        for i in range(len(ys)):
            for j in range(len(xs)):
                if (i, j) in marks:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.85", edgecolor="0.5",
                                           hatch="//", lw=0.5))
                    ax.text(j, i, marks[(i, j)], ha="center", va="center", fontsize="small", color="0.2")
                elif not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize="small",
                            color="white" if grid[i, j] < (vmin + vmax) / 2 else "black")
        if np.isfinite(grid).any():
            bi, bj = np.unravel_index(np.nanargmax(grid), grid.shape)
            ax.add_patch(Rectangle((bj - 0.5, bi - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [str(v) for v in ys])
        ax.set_xlabel(x.rsplit(".", 1)[-1])
        ax.set_ylabel(y.rsplit(".", 1)[-1])
        if facet is not None:
            ax.set_title(f"{facet.rsplit('.', 1)[-1]}={fv}", fontsize="medium")
    if image is not None:
        fig.colorbar(image, ax=list(axes), label=f"{value.upper()} (%)" if scale == 100.0 else value)
    fig.suptitle(title or f"{value} by {x.rsplit('.', 1)[-1]} x {y.rsplit('.', 1)[-1]}")
    return _finish(fig, path)


def pareto_scatter(df: pd.DataFrame, x: str, y: str, front: pd.Series | str = "pareto",
                   label_by: list[str] | None = None, xscale: float = 1.0, yscale: float = 1.0,
                   xlabel: str | None = None, ylabel: str | None = None,
                   path: str | os.PathLike | None = None, title: str | None = None, figsize=(6.5, 4.5)) -> Figure:
    """Scatter of two objectives with the Pareto front highlighted and joined.

    front     a boolean Series (``frames.pareto``) or the name of such a column.
    label_by  grid columns whose values label the front's points (default: the sweep's grid).
    xscale, yscale multiply the plotted values (e.g. 1e3 for milliseconds).
    """
    df = _ok(df)
    on = (df[front] if isinstance(front, str) else front.reindex(df.index)).fillna(False).astype(bool)
    fig = _figure(figsize)
    ax = fig.subplots()
    rest = df[~on]
    ax.scatter((rest[x] * xscale).tolist(), (rest[y] * yscale).tolist(), color="0.6", label="dominated")
    best = df[on].sort_values(x, kind="stable")
    ax.plot((best[x] * xscale).tolist(), (best[y] * yscale).tolist(), color="C3", marker="o", ms=7,
            label="Pareto front")
    keys = list(label_by if label_by is not None else df.attrs.get("grid", []))
    if keys:
        labels = point_labels(best, keys, names=False)
        for (_, row), text in zip(best.iterrows(), labels):
            ax.annotate(text, (row[x] * xscale, row[y] * yscale), textcoords="offset points", xytext=(5, 5),
                        fontsize="x-small", color="C3")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.set_title(title or "Pareto front")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _finish(fig, path)


__all__ = ["breakdown_bars", "heatmap", "mfu_vs", "pareto_scatter", "point_labels"]
