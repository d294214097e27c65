"""Reports as long-format pandas DataFrames (one observation per row), ready for plotting.

Every function takes a report dict or a ``Result``:

    breakdown_frame(r)     component, seconds, fraction (of the step time)
    collectives_frame(r)   op, group_size, bytes, count, time_s, busbw_gbps
    links_frame(r)         link, src, dst, bytes, utilization (busiest first)
    ranks_frame(r)         gpu, step_time_s, compute_s, slow, ... (simulated ranks)
    breakdown_long(df)     a sweep DataFrame's breakdown.* columns melted: point, component, seconds
"""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

BREAKDOWN = ["compute_s", "exposed_tp_comm_s", "exposed_pp_comm_s", "exposed_dp_comm_s", "bubble_s",
             "optimizer_s", "other_s", "straggler_s"]


def _report(r: Any) -> Mapping[str, Any]:
    return r.report if hasattr(r, "report") else r


def _ordered(keys) -> list[str]:
    """Breakdown components in DESIGN.md order, unknown ones after."""
    keys = list(keys)
    return [k for k in BREAKDOWN if k in keys] + [k for k in keys if k not in BREAKDOWN]


def breakdown_frame(report) -> pd.DataFrame:
    """Step-time breakdown: one row per component (name without ``_s``), seconds and fraction."""
    rep = _report(report)
    b = rep.get("breakdown", {}) or {}
    step = rep.get("step_time_s") or sum(b.values()) or None
    rows = [{"component": k[:-2] if k.endswith("_s") else k, "seconds": b[k],
             "fraction": (b[k] / step) if step else None} for k in _ordered(b)]
    return pd.DataFrame(rows, columns=["component", "seconds", "fraction"])


def collectives_frame(report) -> pd.DataFrame:
    """Collectives of one step: op, group_size, bytes, count, time_s, busbw_gbps."""
    rows = _report(report).get("collectives", []) or []
    cols = ["op", "group_size", "bytes", "count", "time_s", "busbw_gbps"]
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=cols)
    return df[[c for c in cols if c in df.columns] + [c for c in df.columns if c not in cols]]


def links_frame(report) -> pd.DataFrame:
    """Link loads, busiest first: link, src, dst (split at ``->``), bytes, utilization.

    Reads ``tables.links`` when present, else ``network.top_links``.
    """
    rep = _report(report)
    rows = rep.get("tables", {}).get("links") or rep.get("network", {}).get("top_links") or []
    df = pd.DataFrame(rows)
    cols = ["link", "src", "dst", "bytes", "utilization"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    if "link" in df.columns:
        ends = df["link"].astype(str).str.split("->", n=1, expand=True)
        df["src"] = ends[0]
        df["dst"] = ends[1] if ends.shape[1] > 1 else None
    if "utilization" in df.columns:
        df = df.sort_values("utilization", ascending=False, kind="stable").reset_index(drop=True)
    return df[[c for c in cols if c in df.columns] + [c for c in df.columns if c not in cols]]


def ranks_frame(report) -> pd.DataFrame:
    """Per-rank step and compute times of the simulated ranks (``tables.ranks``), by gpu."""
    rows = _report(report).get("tables", {}).get("ranks") or []
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["gpu", "step_time_s", "compute_s", "slow"])
    lead = [c for c in ["gpu", "step_time_s", "compute_s", "slow"] if c in df.columns]
    df = df[lead + [c for c in df.columns if c not in lead]]
    return df.sort_values("gpu", kind="stable").reset_index(drop=True) if "gpu" in df.columns else df


MEMORY_ITEMS = ["weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "embedding_bytes",
                "logits_loss_bytes", "temporary_bytes"]


def memory_frame(report) -> pd.DataFrame:
    """Memory per pipeline stage (``memory.stages``), one row per stage: the items that make up
    the allocated peak, then allocated, reserved, CUDA context, NCCL, total and margin bytes, and
    whether this stage is the peak one. Empty without a training job."""
    mem = _report(report).get("memory", {}) or {}
    df = pd.DataFrame(mem.get("stages", []) or [])
    if df.empty:
        return pd.DataFrame(columns=["stage"] + MEMORY_ITEMS)
    df["peak"] = df["stage"] == mem.get("peak_stage")
    lead = ["stage"] + [c for c in MEMORY_ITEMS if c in df.columns]
    return df[lead + [c for c in df.columns if c not in lead]].reset_index(drop=True)


def point_labels(df: pd.DataFrame, by: list[str] | None = None, names: bool = True) -> list[str]:
    """One label per sweep row from its grid values: ``micro_batch_size=1 virtual_pipeline=2``,
    or with ``names=False`` just the values: ``1/2``."""
    by = list(by if by is not None else df.attrs.get("grid", []))
    if not by:
        return [str(i) for i in df.index]
    if not names:
        return ["/".join(str(row[k]) for k in by) for _, row in df[by].iterrows()]
    return [" ".join(f"{k.rsplit('.', 1)[-1]}={row[k]}" for k in by) for _, row in df[by].iterrows()]


def breakdown_long(df: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """A sweep frame's ``breakdown.*`` columns melted to point, label, component, seconds."""
    cols = _ordered(c[len("breakdown."):] for c in df.columns if c.startswith("breakdown."))
    wide = pd.DataFrame({c[:-2] if c.endswith("_s") else c: df["breakdown." + c].to_numpy() for c in cols})
    wide.insert(0, "label", point_labels(df, by))
    wide.insert(0, "point", range(len(df)))
    return wide.melt(id_vars=["point", "label"], var_name="component", value_name="seconds")


def pareto(df: pd.DataFrame, minimize=(), maximize=()) -> pd.Series:
    """True for the rows on the Pareto front: no other row is at least as good on every
    objective and strictly better on one. Rows with a missing objective are never on it."""
    cols = list(minimize) + list(maximize)
    values = df[cols].astype(float).copy()
    for c in maximize:
        values[c] = -values[c]  # everything minimised from here on
    ok = values.notna().all(axis=1)
    v = values.to_numpy()
    front = []
    for i in range(len(v)):
        if not ok.iloc[i]:
            front.append(False)
            continue
        dominated = False
        for j in range(len(v)):
            if j != i and ok.iloc[j] and (v[j] <= v[i]).all() and (v[j] < v[i]).any():
                dominated = True
                break
        front.append(not dominated)
    return pd.Series(front, index=df.index, name="pareto")
