"""Matplotlib figures of one run (``Result.plot_*`` calls these; Agg canvas, no pyplot state).

    r = ct.run(sc, trace="step.json")
    r.plot_timeline()           # compute / p2p / collective bars of the first ranks
    r.plot_breakdown()          # stacked step-time breakdown
    r.plot_links(top=20)        # utilization of the busiest links
    r.plot_link_heatmap()       # every fabric link: NIC uplinks by node x rail, switch tiers
    r.plot_power()              # cluster power over the step, idle draw and facility scale
    r.plot_rank_times()         # per-rank step times, slow ranks (>= 10% over the median) marked
    r.plot_interval_curve()     # goodput versus checkpoint interval, closed form and simulated
    r.plot_queues()             # packet mode: queued bytes, deepest queue, paused queues over time
    r.plot_campaign_power()     # IT power over one simulated campaign: stalls, failures, restarts

Each returns the Figure and writes a PNG when ``path`` is given. A figure whose data the run
did not produce (no trace, no reliability section) raises ValueError saying what is missing.
"""
from __future__ import annotations

import os
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from .plots import _figure, _finish, breakdown_bars


def _need(report: dict, key: str, why: str) -> Any:
    if key not in report:
        raise ValueError(f"this run has no '{key}' in its report: {why}")
    return report[key]


def timeline(result, ranks: int = 8, path: str | os.PathLike | None = None, figsize=(10, 4.5)) -> Figure:
    """Bars of the instructions of GPUs 0..ranks-1 (``Result.timeline``), one row per GPU and stream."""
    df = result.timeline
    if df.empty:
        raise ValueError("this run has no timeline (training steps and trace replays have one)")
    gpus = sorted(g for g in df["gpu"].unique() if g < ranks)
    df = df[df["gpu"].isin(gpus)]
    rows = sorted({(g, s) for g, s in zip(df["gpu"], df["stream"])}, key=lambda x: (gpus.index(x[0]), x[1] != "compute", x[1]))
    row_of = {key: i for i, key in enumerate(rows)}
    cats = [c for c in df["category"].cat.categories if (df["category"] == c).any()]
    fig = _figure(figsize)
    ax = fig.add_subplot()
    for k, cat in enumerate(cats):
        sel = df[df["category"] == cat]
        ax.barh([row_of[(g, s)] for g, s in zip(sel["gpu"], sel["stream"])], sel["seconds"] * 1e3,
                left=sel["start_s"] * 1e3, height=0.8, color=f"C{k % 10}", label=cat)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"GPU {g}: {s}" for g, s in rows], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(f"{result.report.get('name', '')}: GPUs below {ranks} ({len(gpus)} simulated)")
    ax.legend(fontsize="small", ncols=min(len(cats), 4), loc="lower right")
    return _finish(fig, path)


def breakdown(result, path: str | os.PathLike | None = None, figsize=(5, 4.5)) -> Figure:
    """The step-time breakdown of this run as one stacked bar."""
    _need(result.report, "breakdown", "only training steps have a breakdown")
    return breakdown_bars(result.report, path=path, figsize=figsize)


def memory(result, path: str | os.PathLike | None = None, figsize=(8, 4.5)) -> Figure:
    """Memory per pipeline stage as stacked bars (GiB): the allocated items, the allocator's
    fragmentation, the CUDA context and NCCL, against the GPU's capacity; the peak stage marked."""
    from .frames import MEMORY_ITEMS, memory_frame

    _need(result.report, "memory", "only training jobs report memory")
    df = memory_frame(result.report)
    gib = 2.0 ** 30
    parts = [(c.replace("_bytes", "").replace("_", " "), df[c]) for c in MEMORY_ITEMS if c in df.columns]
    parts.append(("fragmentation", df["reserved_bytes"] - df["allocated_bytes"]))
    parts.append(("CUDA context + NCCL", df["cuda_context_bytes"] + df["nccl_bytes"]))
    fig = _figure(figsize)
    ax = fig.add_subplot()
    bottom = [0.0] * len(df)
    for label, values in parts:
        heights = (values / gib).tolist()
        ax.bar(df["stage"], heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights)]
    capacity = result.report["memory"]["capacity_bytes"] / gib
    ax.axhline(capacity, color="red", lw=1)
    ax.text(df["stage"].iloc[-1] + 0.4, capacity, f"HBM {capacity:.0f} GiB ", va="bottom", ha="right", color="red", fontsize="small")
    peak = result.report["memory"]["peak_stage"]
    ax.annotate("peak", (peak, bottom[list(df["stage"]).index(peak)]), ha="center", va="bottom", fontsize="small")
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"memory per GPU ({result.report['memory'].get('stack', '')})")
    ax.legend(fontsize="x-small", ncol=2)
    return _finish(fig, path)


def links(result, top: int = 20, path: str | os.PathLike | None = None, figsize=(8, 4.5)) -> Figure:
    """Utilization of the ``top`` busiest links (the run's ``links`` table)."""
    df = result.links
    if df.empty or "utilization" not in df:
        raise ValueError("this run reported no link table (training steps and traffic studies do)")
    df = df.sort_values("utilization", ascending=False).head(top)
    fig = _figure(figsize)
    ax = fig.add_subplot()
    ax.barh(range(len(df)), df["utilization"] * 100, color="C0")
    ax.set_yticks(range(len(df)))
    ax.set_yticklabels(df["link"], fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("utilization over the step (%)")
    ax.set_xlim(0, 100)
    ax.set_title(f"busiest {len(df)} links")
    return _finish(fig, path)


_TIER = {0: "NIC", 1: "leaf", 2: "spine", 3: "core"}


def link_heatmap(result, path: str | os.PathLike | None = None, figsize=None) -> Figure:
    """Utilization of every fabric link (``Result.fabric_links``), one heatmap per tier boundary.

    NIC <-> leaf: one cell per NIC, rows are nodes and columns rails (the busier direction).
    Switch tiers: rows are the lower switches, columns the upper ones; a cell is the busiest
    direction of the cables joining the pair (all planes together). Hot rails, nodes or
    spines show as bright rows or columns.
    """
    import numpy as np

    df = result.fabric_links
    if df.empty:
        raise ValueError("this run has no fabric link table (ct.run gives one for training steps, traffic studies "
                         "and trace replays)")
    nodes = int(result.report.get("cluster", {}).get("nodes", 0))
    lower = np.minimum(df["src_tier"].to_numpy(), df["dst_tier"].to_numpy())
    upper = np.maximum(df["src_tier"].to_numpy(), df["dst_tier"].to_numpy())
    low_index = np.where(df["src_tier"] <= df["dst_tier"], df["src_index"], df["dst_index"])
    high_index = np.where(df["src_tier"] <= df["dst_tier"], df["dst_index"], df["src_index"])
    util = df["utilization"].to_numpy()
    tiers = sorted(set(zip(lower.tolist(), upper.tolist())))
    vmax = max(1.0, 100 * float(util.max()))  # one colour scale for every panel
    fig = _figure(figsize or (4.2 * len(tiers) + 1, 4.6))
    axes = fig.subplots(1, len(tiers), squeeze=False)[0]
    image = None
    for ax, (lo, hi) in zip(axes, tiers):
        pick = (lower == lo) & (upper == hi)
        rows, cols, u = low_index[pick], high_index[pick], util[pick]
        if lo == 0 and nodes > 0:  # NIC id = node x nics_per_node + rail
            per_node = max(1, (int(rows.max()) + 1) // nodes)
            rows, cols = rows // per_node, rows % per_node
            ax.set_xlabel("rail")
            ax.set_ylabel("node")
        else:
            ax.set_xlabel(f"{_TIER.get(hi, hi)} switch")
            ax.set_ylabel(f"{_TIER.get(lo, lo)} switch")
        grid = np.zeros((int(rows.max()) + 1, int(cols.max()) + 1))
        np.maximum.at(grid, (rows, cols), u)
        image = ax.imshow(grid * 100, aspect="auto", interpolation="nearest", cmap="magma", vmin=0, vmax=vmax)
        ax.set_title(f"{_TIER.get(lo, lo)} <-> {_TIER.get(hi, hi)}: max {u.max():.0%}", fontsize="medium")
    fig.colorbar(image, ax=list(axes), label="utilization over the step (%)")
    return _finish(fig, path)


def power(result, path: str | os.PathLike | None = None, figsize=(8, 4)) -> Figure:
    """Cluster IT power over the simulated step, with the idle draw the cluster falls to when
    the job stops (checkpoint stall, failure, restart); the right axis shows facility power."""
    p = _need(result.report, "power", "only training steps have a power timeline")
    series = pd.DataFrame(result.report.get("tables", {}).get("power", []))
    if series.empty:
        raise ValueError("this run has no power table")
    fig = _figure(figsize)
    ax = fig.add_subplot()
    ax.plot(series["t_s"], series["cluster_w"] / 1e6, color="C0", label="IT power")
    ax.axhline(p["idle_w"] / 1e6, color="C3", ls="--", label=f"job stopped: {p['idle_w'] / 1e6:.2f} MW")
    ax.axhline(p["cluster_mean_w"] / 1e6, color="0.4", ls=":", label=f"step mean: {p['cluster_mean_w'] / 1e6:.2f} MW")
    ax.set_xlabel("time in the step (s)")
    ax.set_ylabel("IT power (MW)")
    pue = p.get("pue", 1.0)
    right = ax.secondary_yaxis("right", functions=(lambda w: w * pue, lambda w: w / pue))
    right.set_ylabel(f"facility power (MW, PUE {pue:g})")
    ax.set_ylim(0, max(series["cluster_w"]) / 1e6 * 1.1)
    ax.legend(fontsize="small", loc="lower right")
    ax.set_title("cluster power over one step")
    return _finish(fig, path)


def rank_times(result, path: str | os.PathLike | None = None, figsize=(7, 4)) -> Figure:
    """Histogram of per-rank step (or compute) times; slow ranks (>= 10% over the median) in red."""
    df = result.ranks
    if df.empty:
        raise ValueError("this run has no per-rank table")
    col = "compute_s" if "compute_s" in df else "step_time_s"
    fig = _figure(figsize)
    ax = fig.add_subplot()
    slow = df["slow"] if "slow" in df else pd.Series(False, index=df.index)
    ax.hist(df.loc[~slow, col], bins=50, color="C0", label="ranks")
    if slow.any():
        ax.hist(df.loc[slow, col], bins=20, color="C3", label=f"slow ranks ({int(slow.sum())})")
    median = df[col].median()
    ax.axvline(1.1 * median, color="C3", ls="--", label="median + 10%")
    ax.set_xlabel(f"{col.replace('_s', '')} per rank (s)")
    ax.set_ylabel("ranks")
    ax.legend(fontsize="small")
    return _finish(fig, path)


def queues(result, path: str | os.PathLike | None = None, figsize=(8, 4.5)) -> Figure:
    """Packet mode: bytes queued in the fabric, the deepest queue, and paused egress queues over time."""
    df = result.queues
    if df.empty:
        raise ValueError("no queue time series: only network.mode=packet traffic studies sample queues")
    fig = _figure(figsize)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(df["t_s"] * 1e3, df["queued_bytes"] / 2**20, color="C0", label="all egress queues")
    top.plot(df["t_s"] * 1e3, df["max_queue_bytes"] / 2**20, color="C1", label="deepest queue")
    top.set_ylabel("queued (MiB)")
    top.legend(fontsize="small")
    bottom.step(df["t_s"] * 1e3, df["paused_queues"], where="post", color="C3")
    bottom.set_ylabel("paused queues")
    bottom.set_xlabel("time (ms)")
    top.set_title(f"{result.report.get('name', '')}: queues and PFC pauses")
    return _finish(fig, path)


def campaign_power(result, path: str | os.PathLike | None = None, figsize=(9, 3.5)) -> Figure:
    """IT power of one simulated campaign (replica 0): the step's mean while training, the idle
    draw during checkpoint stalls, detection, waits, health checks and restarts."""
    df = pd.DataFrame(result.report.get("tables", {}).get("campaign_phases", []))
    if df.empty:
        raise ValueError("no campaign timeline: only training jobs with a checkpoint interval simulate a campaign")
    end = result.report["reliability"]["campaign"]["duration_s"]
    t = list(df["t_s"] / 3600) + [end / 3600]
    w = list(df["it_w"] / 1e6) + [df["it_w"].iloc[-1] / 1e6]
    fig = _figure(figsize)
    ax = fig.add_subplot()
    ax.step(t, w, where="post", color="C0", lw=0.8)
    for _, row in df[df["phase"] == "detect"].iterrows():
        ax.axvline(row["t_s"] / 3600, color="C3", lw=0.6, alpha=0.6)
    ax.set_xlabel("campaign time (h); red: failures")
    ax.set_ylabel("IT power (MW)")
    ax.set_ylim(0, max(w) * 1.1)
    p = result.report.get("power", {})
    ax.set_title(f"campaign power: {p.get('job_stops_per_day', 0):.0f} job stops a day "
                 f"({p.get('failure_stops_per_day', 0):.1f} failures), each a {p.get('stop_swing_w', 0) / 1e6:.2f} MW swing")
    return _finish(fig, path)


def interval_curve(result, path: str | os.PathLike | None = None, figsize=(7, 4)) -> Figure:
    """Goodput versus checkpoint interval: closed form, simulated campaign (95% bars), optima."""
    rel = _need(result.report, "reliability", "only training jobs have a reliability section")
    if "interval_curve" not in rel:
        raise ValueError("no interval curve: nothing can fail in this scenario (failures.* are all 0)")
    curve = pd.DataFrame(rel["interval_curve"])
    fig = _figure(figsize)
    ax = fig.add_subplot()
    ax.plot(curve["interval_s"], curve["goodput"] * 100, marker="o", label="closed form")
    if "simulated_goodput" in curve:
        ax.errorbar(curve["interval_s"], curve["simulated_goodput"] * 100,
                    yerr=1.96 * curve["simulated_stderr"] * 100, marker="s", ls="none", capsize=3,
                    label="simulated campaign")
    for label, key, color, ls in [("simulated optimum", "simulated_optimal_interval_s", "C1", "-"),
                                  ("Young/Daly", "young_daly_interval_s", "C2", "--"),
                                  ("configured", "checkpoint_interval_s", "0.4", "-.")]:
        if rel.get(key):
            ax.axvline(rel[key], color=color, ls=ls, label=f"{label}: {rel[key]:.0f} s")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (s)")
    ax.set_ylabel("goodput (%)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _finish(fig, path)
