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


def _twin_busbw(scenario, op: str, nodes: int, sizes: list[int], overrides: dict | None,
                node_list: list[int] | None = None) -> dict[int, float]:
    """The twin's busbw per size, on the run's own nodes when they are known (node_list), else
    on the first ``nodes`` nodes."""
    sc = scenario.to_json() if hasattr(scenario, "to_json") else json.dumps(scenario)
    lo, hi = min(sizes), max(sizes)
    chosen = node_list or []
    table = _core.nccl_tests(sc, json.dumps(overrides or {}), op, [nodes], f"{lo}B", f"{hi}B", 2, 0, "float", "sum",
                             chosen)
    out = {}
    for log in parse_nccl_tests(table, "twin"):
        for r in log.rows:
            out[r["size"]] = r["busbw"]
    missing = [s for s in sizes if s not in out]
    for s in missing:  # sizes off the doubling ladder: ask for each
        one = _core.nccl_tests(sc, json.dumps(overrides or {}), op, [nodes], f"{s}B", f"{s}B", 2, 0, "float", "sum",
                               chosen)
        out[s] = parse_nccl_tests(one, "twin")[0].rows[0]["busbw"]
    return out


def compare_nccl_tests(scenario, logs: Iterable[str | os.PathLike], op: str | None = None,
                       nodes: int | None = None, threshold: float = 0.10, min_size: int = 1 << 20,
                       overrides: dict | None = None, host_nodes: dict[str, int] | None = None):
    """Measured (real nccl-tests output files) against the twin on the scenario's cluster.
    Returns (rows, candidates) DataFrames; see the module docstring. A log whose collective or
    node count cannot be read needs ``op`` / ``nodes``. Sizes below ``min_size`` (latency-bound,
    where launch overheads differ) are listed but never flagged. ``host_nodes`` maps the logs'
    host names to the scenario's node indices, so that the switches of the fabric become
    candidates too (``localise``); without it, host names ending in distinct numbers are taken
    as those node indices."""
    import pandas as pd
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold: got {threshold}, expected a fraction in (0, 1)")
    if op is not None and op not in OPS:
        raise ValueError(f"op: got {op!r}, expected one of {', '.join(OPS)}")
    rows, runs = [], []
    twins: dict[tuple, dict[int, float]] = {}  # pair runs repeat the same collective, nodes and sizes
    parsed = []
    for path in logs:
        path = os.fspath(path)
        with open(path, errors="replace") as f:
            text = f.read()
        parsed += [(path, log) for log in parse_nccl_tests(text, os.path.basename(path))]
    # The twin runs each log's own nodes when the host names map to nodes (a fabric that is not
    # uniform, or a faulted scenario, gives different nodes different bandwidth).
    all_hosts = sorted({h for _, log in parsed for h in log.hosts})
    node_of = _node_map(all_hosts, host_nodes, _node_count(scenario))[0] if all_hosts else None
    for path, log in parsed:
        the_op = op or log.op
        if the_op is None:
            raise ValueError(f"{path}: the collective is not printed in the log; pass --op")
        n = nodes or log.nodes
        if n is None:
            raise ValueError(f"{path}: no '#  Rank ... on HOST' lines to count nodes; pass --nodes")
        sizes = tuple(r["size"] for r in log.rows)
        own = [node_of[h] for h in log.hosts] if node_of and len(log.hosts) == n else None
        key = (the_op, n, sizes, tuple(own) if own else None)
        if key not in twins:
            twins[key] = _twin_busbw(scenario, the_op, n, list(sizes), overrides, own)
        twin = twins[key]
        short_any = False
        for r in log.rows:
            ratio = r["busbw"] / twin[r["size"]] if twin[r["size"]] > 0 else float("nan")
            short = bool(r["size"] >= min_size and ratio < 1.0 - threshold)
            short_any |= short
            rows.append({"log": log.name, "op": the_op, "nodes": n, "hosts": ",".join(log.hosts),
                         "size": r["size"], "measured_busbw": r["busbw"], "twin_busbw": twin[r["size"]],
                         "ratio": ratio, "short": short})
        runs.append((log, short_any))
    return pd.DataFrame(rows), localise(runs, scenario, host_nodes, overrides)


def _node_count(scenario) -> int | None:
    data = scenario.data if hasattr(scenario, "data") else scenario
    nodes = data.get("cluster", {}).get("nodes") if isinstance(data, dict) else None
    return nodes if isinstance(nodes, int) else None


def _node_map(hosts: list[str], host_nodes: dict[str, int] | None,
              node_count: int | None = None) -> tuple[dict[str, int] | None, str]:
    """Host name -> node index: the mapping given, or the numbers the names end in when every
    name ends in one, no two share it and all are nodes of the scenario. (None, why) when the
    names do not map; a mapping given that misses a host or names no node is an error."""
    if host_nodes is not None:
        missing = [h for h in hosts if h not in host_nodes]
        if missing:
            raise ValueError(f"host_nodes: no node for host {', '.join(missing[:5])}"
                             + (" ..." if len(missing) > 5 else ""))
        beyond = [h for h in hosts if node_count is not None and not 0 <= int(host_nodes[h]) < node_count]
        if beyond:
            raise ValueError(f"host_nodes: {beyond[0]} -> {host_nodes[beyond[0]]}, expected a node 0..{node_count - 1}")
        return {h: int(host_nodes[h]) for h in hosts}, ""
    nums = {}
    for h in hosts:
        m = re.search(r"(\d+)$", h.split(".")[0])
        if not m:
            return None, f"host {h!r} does not end in a node number; pass host_nodes (--hosts FILE)"
        nums[h] = int(m.group(1))
    if len(set(nums.values())) != len(nums):
        return None, "two hosts end in the same number; pass host_nodes (--hosts FILE)"
    beyond = [h for h, n in nums.items() if node_count is not None and n >= node_count]
    if beyond:
        return None, (f"host {beyond[0]!r} ends in {nums[beyond[0]]}, not a node of the scenario's {node_count}; "
                      "pass host_nodes (--hosts FILE)")
    return nums, ""


def localise(runs: list[tuple[NcclTestsLog, bool]], scenario=None, host_nodes: dict[str, int] | None = None,
             overrides: dict | None = None):
    """Hosts, and with a scenario the fabric's switches and switch-to-switch cables ("a-b"),
    ranked by how well 'this one is slow' explains which runs fall short: confidence = share of short runs that include it x share
    of healthy runs that do not (1 = in every short run and no healthy one). A run includes a
    switch or cable when a collective among its hosts can cross it (every one on a shortest path
    between two of its nodes' NICs on the same rail, ECMP's choices included). Runs over two
    hosts that are both cleared elsewhere name the path between them (a link or switch on it).
    Ties are real: all-rail runs cannot tell one rail's switch from another's; single-rail runs
    (NCCL_IB_HCA) can. ``candidates.attrs["switches"]`` says why switches are not ranked when
    they are not."""
    import pandas as pd
    short = [log for log, s in runs if s]
    good = [log for log, s in runs if not s]
    hosts = sorted({h for log, _ in runs for h in log.hosts})
    members: dict[str, tuple[str, list[int]]] = {}  # candidate -> (kind, indices of runs including it)
    for i, (log, _) in enumerate(runs):
        for h in log.hosts:
            members.setdefault(h, ("host", []))[1].append(i)
    why_not = "no scenario given"
    if scenario is not None and hosts:
        node_of, why_not = _node_map(hosts, host_nodes, _node_count(scenario))
        if node_of is not None:
            sc = scenario.to_json() if hasattr(scenario, "to_json") else json.dumps(scenario)
            over = json.dumps(overrides or {})
            for i, (log, _) in enumerate(runs):
                switches, cables = _core.fabric_switches(sc, over, sorted({node_of[h] for h in log.hosts}))
                for kind, names in (("switch", switches), ("link", cables)):
                    for name in names:
                        members.setdefault(name, (kind, []))[1].append(i)
    is_short = [s for _, s in runs]
    out = []
    if short and hosts:
        for name, (kind, idx) in members.items():
            n_short = sum(is_short[i] for i in idx)
            n_good = len(idx) - n_short
            conf = n_short / len(short) * (1.0 - (n_good / len(good) if good else 0.0))
            if conf > 0:
                out.append({"candidate": name, "kind": kind, "confidence": conf, "short_runs": n_short,
                            "healthy_runs": n_good})
        cleared = {h for log in good for h in log.hosts}
        for log in short:
            if len(log.hosts) == 2 and set(log.hosts) <= cleared:
                out.append({"candidate": f"{log.hosts[0]}<->{log.hosts[1]}", "kind": "path", "confidence": 1.0,
                            "short_runs": 1, "healthy_runs": 0})
    cols = ["candidate", "kind", "confidence", "short_runs", "healthy_runs"]
    df = pd.DataFrame(out, columns=cols)
    order = {"switch": 0, "link": 1, "path": 2, "host": 3}  # on a tie, the wider explanation first
    df = df.assign(_k=df["kind"].map(order)).sort_values(["confidence", "_k", "candidate"],
                                                         ascending=[False, True, True])
    df = df.drop(columns="_k").reset_index(drop=True)
    df.attrs["switches"] = "" if any(k == "switch" for k, _ in members.values()) or not hosts else why_not
    return df




# Per-rank step times measured on the cluster.
_MEGATRON_ITER = re.compile(r"iteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([\d.]+)")
_RANK_PREFIX = re.compile(r"^\s*\[(?:rank|default)(\d+)\]:?")


def read_step_log(path: str | os.PathLike):
    """Per-rank step times of a real run as a DataFrame (rank, step, time_s), from a CSV or JSON
    file of rank, step and time_s (or time_ms), or a Megatron-LM log: 'iteration N/ M | ...
    elapsed time per iteration (ms): X' lines, attributed to the rank of torchrun's '[rankK]:' /
    '[defaultK]:' line prefix (rank -1 when the line has none: Megatron prints it on one rank for
    the whole job). Raises ValueError naming the file when nothing can be read."""
    import pandas as pd
    path = os.fspath(path)
    name = os.path.basename(path)
    with open(path, errors="replace") as f:
        text = f.read()
    stripped = text.lstrip()
    frame = None
    megatron = "elapsed time per iteration" in text  # its '[rankK]:' prefixes are not JSON
    if not megatron and stripped.startswith(("[", "{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}: not valid JSON ({e.msg} at line {e.lineno})") from None
        frame = pd.DataFrame(data["steps"] if isinstance(data, dict) and "steps" in data else data)
    elif not megatron:
        from io import StringIO
        try:
            frame = pd.read_csv(StringIO(text))
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
            raise ValueError(f"{name}: not a CSV of rank, step, time_s ({str(e).splitlines()[0]})") from None
    if frame is not None:
        cols = {c.lower().strip(): c for c in frame.columns}
        if "time_s" not in cols and "time_ms" in cols:
            frame["time_s"] = frame[cols["time_ms"]] / 1e3
            cols["time_s"] = "time_s"
        missing = [c for c in ("rank", "step", "time_s") if c not in cols]
        if missing:
            raise ValueError(f"{name}: columns {', '.join(missing)} missing (expected rank, step, time_s or time_ms)")
        out = pd.DataFrame({"rank": frame[cols["rank"]].astype(int), "step": frame[cols["step"]].astype(int),
                            "time_s": frame[cols["time_s"]].astype(float)})
    else:
        rows = []
        for line in text.splitlines():
            m = _MEGATRON_ITER.search(line)
            if m:
                r = _RANK_PREFIX.match(line)
                rows.append({"rank": int(r.group(1)) if r else -1, "step": int(m.group(1)),
                             "time_s": float(m.group(2)) / 1e3})
        out = pd.DataFrame(rows, columns=["rank", "step", "time_s"])
    if out.empty:
        raise ValueError(f"{name}: no step times (a rank,step,time_s table or Megatron 'iteration ... elapsed time "
                         "per iteration (ms)' lines)")
    if not (out["time_s"] > 0).all():
        bad = out[~(out["time_s"] > 0)].iloc[0]
        raise ValueError(f"{name}: rank {bad['rank']} step {bad['step']}: time {bad['time_s']} s is not positive")
    return out.sort_values(["step", "rank"]).reset_index(drop=True)


def slow_ranks(steps, expected_step_s: float | None = None, threshold: float = 0.10):
    """Ranks that are slow in a measured run: per step, a rank more than ``threshold`` over the
    step's median across ranks (the usual 10%-over-median rule); and, with the twin's expected
    step time, a rank whose median step exceeds it by more than ``threshold`` (slow for a reason
    the twin does not model). One row per rank: median_s, slow_steps, share_slow, over_median,
    over_twin, flagged."""
    import pandas as pd
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold: got {threshold}, expected a fraction in (0, 1)")
    df = steps.copy()
    df["step_median_s"] = df.groupby("step")["time_s"].transform("median")
    df["slow"] = df["time_s"] > (1.0 + threshold) * df["step_median_s"]
    g = df.groupby("rank")
    out = pd.DataFrame({"median_s": g["time_s"].median(), "slow_steps": g["slow"].sum().astype(int),
                        "steps": g["time_s"].size()})
    out["share_slow"] = out["slow_steps"] / out["steps"]
    out["over_median"] = out["share_slow"] >= 0.5
    if expected_step_s is not None:
        out["twin_step_s"] = expected_step_s
        out["over_twin"] = out["median_s"] > (1.0 + threshold) * expected_step_s
    else:
        out["over_twin"] = False
    out["flagged"] = out["over_median"] | out["over_twin"]
    return out.reset_index().sort_values(["flagged", "median_s"], ascending=[False, False]).reset_index(drop=True)


__all__ = ["NcclTestsLog", "OPS", "compare_nccl_tests", "localise", "nccl_size", "nccl_tests", "parse_nccl_tests", "read_step_log", "slow_ranks"]


def nccl_size(text: str | int) -> str:
    """nccl-tests' size syntax (8, 1K, 64M, 8G: K, M, G, T are powers of 1024) as our byte
    string ('64MiB'); other forms ('64MiB', '1GB') pass through for the loader to check."""
    if isinstance(text, int) and not isinstance(text, bool):
        return f"{text}B"
    m = re.fullmatch(r"\s*(\d+)\s*([KkMmGgTt]?)\s*", str(text))
    if not m:
        return str(text)
    unit = {"": "B", "k": "KiB", "m": "MiB", "g": "GiB", "t": "TiB"}[m.group(2).lower()]
    return f"{m.group(1)}{unit}"


def nccl_tests(scenario, op: str = "all_reduce", nodes: Iterable[int] | int = (2,), minbytes: str | int = "8",
               maxbytes: str | int = "8G", stepfactor: int = 2, stepbytes: str | int | None = None,
               datatype: str = "float", redop: str = "sum", overrides: dict | None = None,
               node_list: Iterable[int] | None = None):
    """nccl-tests on the twin as a DataFrame, one row per node count and size: nodes, ranks, op,
    size_bytes, count, type, redop, root, time_us, algbw_GBps, busbw_GBps, algorithm.

    node_list: run on these nodes (in rank order) instead of the first ``nodes``. The scenario's
    link faults (link_degrade, slow_receiver, link_down, switch_down at 0 s with no duration)
    act on the whole table; other fault kinds are refused.

    The arguments are nccl-tests' flags: minbytes / maxbytes (-b / -e; 8, 1K, 64M, 8G as
    powers of 1024, or '64MiB'), stepfactor (-f) or stepbytes (-i, a fixed increment instead),
    datatype (-d) and redop (-o); op is the collective (all_reduce, all_gather,
    reduce_scatter, all_to_all, broadcast). The data type and reduction change counts and
    columns, not times (the twin moves bytes; NCCL reduces every type at link speed).
    """
    import pandas as pd
    from .api import _as_scenario

    sc = _as_scenario(scenario)
    counts = [nodes] if isinstance(nodes, int) else list(nodes)
    chosen = [int(n) for n in node_list] if node_list is not None else []
    if chosen and (nodes == (2,) or nodes == 2) and len(chosen) != 2:
        counts = [len(chosen)]
    step = 0
    if stepbytes is not None:
        step = _bytes(nccl_size(stepbytes))
    rows = json.loads(_core.nccl_tests_rows(sc.to_json(), json.dumps(overrides or {}), op, counts,
                                            nccl_size(minbytes), nccl_size(maxbytes), int(stepfactor), int(step),
                                            datatype, redop, chosen))
    return pd.DataFrame(rows, columns=["nodes", "ranks", "op", "size_bytes", "count", "type", "redop", "root",
                                       "time_us", "algbw_GBps", "busbw_GBps", "algorithm"])


def _bytes(text: str) -> int:
    """'1MiB' -> 1048576 (the forms nccl_size writes: B, KiB, MiB, GiB, TiB)."""
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB|TiB)", text)
    if not m:
        from .api import ScenarioError
        raise ScenarioError(f"stepbytes: got {text!r}, expected a size like 1M or 1048576")
    return int(m.group(1)) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m.group(2)]
