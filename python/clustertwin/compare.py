"""The twin beside the cluster: real nccl-tests output against the twin's prediction for the
same collective, node count and sizes, and from several runs over node groups, the hosts (or
host pairs) that explain a shortfall.

    rows, candidates = ct.compare_nccl_tests(sc, ["pair_01_02.log", "pair_03_04.log"])

``rows``: one row per log and size (measured and predicted out-of-place bus bandwidth, their
ratio, whether the measurement falls short of the twin by more than ``threshold``).
``candidates``: hosts ranked by how well "this host is slow" explains which logs fall short
(with two or more logs).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Iterable

from . import _core

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
                  r"(?:\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+))?\s*$")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)")
_OP_NAMES = {"all_reduce": "all_reduce", "allreduce": "all_reduce", "all_gather": "all_gather",
             "allgather": "all_gather", "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
             "alltoall": "all_to_all", "all_to_all": "all_to_all", "broadcast": "broadcast"}


@dataclass
class NcclTestsLog:
    """One nccl-tests run: its collective, ranks, hosts and table rows."""
    name: str
    op: str | None
    hosts: list[str] = field(default_factory=list)
    ranks: int = 0
    nodes: int | None = None
    rows: list[dict] = field(default_factory=list)


def _op_from(text: str) -> str | None:
    m = re.search(r"([a-z_]+?)_perf", text)
    if m and m.group(1) in _OP_NAMES:
        return _OP_NAMES[m.group(1)]
    m = re.search(r"ClusterTwin (\w+),", text)
    return _OP_NAMES.get(m.group(1)) if m else None


def parse_nccl_tests(text: str, name: str = "log") -> list[NcclTestsLog]:
    """Every table in nccl-tests output (the real tool's, or the twin's): sizes from its rows,
    hosts from its '#  Rank ... on HOST device D' lines, the collective from the command or
    '*_perf' name when it is printed. Raises ValueError naming the log when no row is found."""
    logs: list[NcclTestsLog] = []
    current: NcclTestsLog | None = None
    op = _op_from(name)
    hosts: list[str] = []
    for line in text.splitlines():
        if "_perf" in line or "ClusterTwin" in line:
            op = _op_from(line) or op
        m = _RANK.match(line)
        if m:
            hosts.append(m.group(2))
            continue
        m = re.match(r"^#\s*(\d+) nodes x (\d+) GPUs", line)
        if m:
            current = None
            nodes_hdr = int(m.group(1))
            logs.append(NcclTestsLog(name, op, nodes=nodes_hdr))
            continue
        m = _ROW.match(line)
        if m:
            if current is None:
                current = logs[-1] if logs and not logs[-1].rows else None
                if current is None:
                    current = NcclTestsLog(name, op)
                    logs.append(current)
                current.hosts, current.ranks = list(dict.fromkeys(hosts)), len(hosts)
                if current.nodes is None and current.hosts:
                    current.nodes = len(current.hosts)
                current.op = current.op or op
            g = m.groups()
            current.rows.append({"size": int(g[0]), "count": int(g[1]), "type": g[2], "redop": g[3],
                                 "root": int(g[4]), "time_us": float(g[5]), "algbw": float(g[6]),
                                 "busbw": float(g[7]),
                                 "inplace_busbw": float(g[11]) if g[11] is not None else None})
        elif line.startswith("#") and current is not None and current.rows:
            current = None
            hosts = []
    if not logs or not any(log.rows for log in logs):
        raise ValueError(f"{name}: no nccl-tests result rows (size count type redop root time algbw busbw ...)")
    return [log for log in logs if log.rows]


def _twin_busbw(scenario, op: str, nodes: int, sizes: list[int], overrides: dict | None) -> dict[int, float]:
    sc = scenario.to_json() if hasattr(scenario, "to_json") else json.dumps(scenario)
    lo, hi = min(sizes), max(sizes)
    table = _core.nccl_tests(sc, json.dumps(overrides or {}), op, [nodes], f"{lo}B", f"{hi}B")
    out = {}
    for log in parse_nccl_tests(table, "twin"):
        for r in log.rows:
            out[r["size"]] = r["busbw"]
    missing = [s for s in sizes if s not in out]
    for s in missing:  # sizes off the doubling ladder: ask for each
        one = _core.nccl_tests(sc, json.dumps(overrides or {}), op, [nodes], f"{s}B", f"{s}B")
        out[s] = parse_nccl_tests(one, "twin")[0].rows[0]["busbw"]
    return out


def compare_nccl_tests(scenario, logs: Iterable[str | os.PathLike], op: str | None = None,
                       nodes: int | None = None, threshold: float = 0.10, min_size: int = 1 << 20,
                       overrides: dict | None = None):
    """Measured (real nccl-tests output files) against the twin on the scenario's cluster.
    Returns (rows, candidates) DataFrames; see the module docstring. A log whose collective or
    node count cannot be read needs ``op`` / ``nodes``. Sizes below ``min_size`` (latency-bound,
    where launch overheads differ) are listed but never flagged."""
    import pandas as pd
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold: got {threshold}, expected a fraction in (0, 1)")
    if op is not None and op not in OPS:
        raise ValueError(f"op: got {op!r}, expected one of {', '.join(OPS)}")
    rows, runs = [], []
    for path in logs:
        path = os.fspath(path)
        with open(path, errors="replace") as f:
            text = f.read()
        for log in parse_nccl_tests(text, os.path.basename(path)):
            the_op = op or log.op
            if the_op is None:
                raise ValueError(f"{path}: the collective is not printed in the log; pass --op")
            n = nodes or log.nodes
            if n is None:
                raise ValueError(f"{path}: no '#  Rank ... on HOST' lines to count nodes; pass --nodes")
            twin = _twin_busbw(scenario, the_op, n, [r["size"] for r in log.rows], overrides)
            short_any = False
            for r in log.rows:
                ratio = r["busbw"] / twin[r["size"]] if twin[r["size"]] > 0 else float("nan")
                short = bool(r["size"] >= min_size and ratio < 1.0 - threshold)
                short_any |= short
                rows.append({"log": log.name, "op": the_op, "nodes": n, "hosts": ",".join(log.hosts),
                             "size": r["size"], "measured_busbw": r["busbw"], "twin_busbw": twin[r["size"]],
                             "ratio": ratio, "short": short})
            runs.append((log, short_any))
    return pd.DataFrame(rows), localise(runs)


def localise(runs: list[tuple[NcclTestsLog, bool]]):
    """Hosts ranked by how well 'this host is slow' explains which runs fall short: confidence =
    share of short runs that include the host x share of healthy runs that do not (1 = in every
    short run and no healthy one). Runs over two hosts that are both cleared elsewhere name the
    path between them instead (a link or switch on it)."""
    import pandas as pd
    short = [log for log, s in runs if s]
    good = [log for log, s in runs if not s]
    hosts = sorted({h for log, _ in runs for h in log.hosts})
    out = []
    if short and hosts:
        for h in hosts:
            in_short = sum(h in log.hosts for log in short) / len(short)
            in_good = sum(h in log.hosts for log in good) / len(good) if good else 0.0
            conf = in_short * (1.0 - in_good)
            if conf > 0:
                out.append({"candidate": h, "kind": "host", "confidence": conf,
                            "short_runs": sum(h in log.hosts for log in short),
                            "healthy_runs": sum(h in log.hosts for log in good)})
        cleared = {h for log in good for h in log.hosts}
        for log in short:
            if len(log.hosts) == 2 and set(log.hosts) <= cleared:
                out.append({"candidate": f"{log.hosts[0]}<->{log.hosts[1]}", "kind": "path", "confidence": 1.0,
                            "short_runs": 1, "healthy_runs": 0})
    cols = ["candidate", "kind", "confidence", "short_runs", "healthy_runs"]
    df = pd.DataFrame(out, columns=cols)
    return df.sort_values(["confidence", "candidate"], ascending=[False, True]).reset_index(drop=True)


__all__ = ["NcclTestsLog", "OPS", "compare_nccl_tests", "localise", "parse_nccl_tests"]
