"""A simulated run as time series in the OpenMetrics text format, so that Prometheus's own
``promtool tsdb create-blocks-from openmetrics`` backfills it into a real TSDB and a dashboard
shows the twin beside the cluster under the same metric names.

    clustertwin run SCENARIO --out DIR [--metrics-interval 10s] [--metrics-start 1735689600]
    ct.write_openmetrics(result.report, "metrics.om", interval_s=10)

Timestamps are simulated time: job start (t = 0) at ``start_unix`` (default 2025-01-01T00:00Z,
fixed so that the same scenario and seed give the same file). The campaign timeline (training,
checkpoint saves, failure detection, restarts) comes from the report's ``campaign_phases``
table; step-level figures (step time per simulated rank, throughput, MFU, link utilisation)
are the simulated step's, reported while the job trains. Metric names and their meaning:
``METRICS`` below and docs/metrics.md. Not exported as series: packet-mode PFC and ECN counts
(they cover the simulated window only and stay in report.json's network section).
"""
from __future__ import annotations

import bisect
import math
import os

DEFAULT_START_UNIX = 1735689600  # 2025-01-01T00:00:00Z
MAX_SAMPLES = 20_000_000  # refuse a file of more samples than this (an interval far too fine)

# name: (type, unit, help)
METRICS = {
    "clustertwin_it_power_watts": ("gauge", "watts", "IT power of the job's GPUs, hosts and switches"),
    "clustertwin_facility_power_watts": ("gauge", "watts", "facility power (IT power x PUE)"),
    "clustertwin_job_phase": ("gauge", "", "1 for the phase the job is in (train, save, detect, restart), else 0"),
    "clustertwin_failures": ("counter", "", "job interruptions detected since the start"),
    "clustertwin_checkpoint_saves": ("counter", "", "checkpoint saves started since the start"),
    "clustertwin_tokens_per_second": ("gauge", "", "training throughput of the whole job (0 while not training)"),
    "clustertwin_mfu_ratio": ("gauge", "ratio", "model FLOP utilisation of the simulated step (0 while not training)"),
    "clustertwin_step_time_seconds": ("gauge", "seconds", "step time of each simulated rank (while training)"),
    "clustertwin_link_utilization_ratio": ("gauge", "ratio", "utilisation of the busiest links in the step "
                                                             "(0 while not training)"),
}


def _fmt(v: float) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if v == 0:
        return "0"
    return f"{v:.9g}"


def _labels(d: dict[str, str]) -> str:
    if not d:
        return ""
    esc = {k: str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') for k, v in d.items()}
    return "{" + ",".join(f'{k}="{v}"' for k, v in esc.items()) + "}"


def _phases(report: dict) -> list[dict]:
    phases = list(report.get("tables", {}).get("campaign_phases", []))
    if not phases:
        return [{"phase": "train", "t_s": 0.0, "it_w": report.get("power", {}).get("cluster_mean_w", 0.0)}]
    return phases


def write_openmetrics(report: dict, path: str | os.PathLike, interval_s: float = 10.0,
                      start_unix: float = DEFAULT_START_UNIX, duration_s: float | None = None) -> int:
    """Writes the run's time series to ``path`` (ending in '# EOF'); returns the sample count.
    ``duration_s``: how much simulated time to cover (default: the campaign's, else one step)."""
    if not (isinstance(interval_s, (int, float)) and math.isfinite(interval_s) and interval_s > 0):
        raise ValueError(f"metrics interval: got {interval_s!r}, expected a positive number of seconds")
    if not (isinstance(start_unix, (int, float)) and math.isfinite(start_unix) and start_unix >= 0):
        raise ValueError(f"metrics start: got {start_unix!r}, expected a Unix time in seconds")
    phases = _phases(report)
    campaign = report.get("reliability", {}).get("campaign", {}).get("duration_s")
    step = float(report.get("step_time_s") or 0.0)
    end = float(duration_s if duration_s is not None else (campaign or max(step, interval_s)))
    times = [p["t_s"] for p in phases]
    pue = float(report.get("power", {}).get("pue", 1.0) or 1.0)
    scenario = {"scenario": report.get("name", "scenario")}
    ranks = report.get("tables", {}).get("ranks", [])
    links = report.get("tables", {}).get("links", [])
    names = sorted({p["phase"] for p in phases} | {"train"})
    n_steps = int(end // interval_s) + 1
    per_step = 6 + len(names) + len(ranks) + len(links)
    if n_steps * per_step > MAX_SAMPLES:
        raise ValueError(f"metrics interval {interval_s} s over {end:.0f} s of simulated time would write about "
                         f"{n_steps * per_step:,} samples (limit {MAX_SAMPLES:,}); choose a coarser --metrics-interval")
    # cumulative counts of phase starts, for the counters
    saves = [0] * len(phases)
    fails = [0] * len(phases)
    for i, p in enumerate(phases):
        saves[i] = (saves[i - 1] if i else 0) + (p["phase"] == "save")
        fails[i] = (fails[i - 1] if i else 0) + (p["phase"] == "detect")
    # OpenMetrics wants each series' samples together: metric -> labels -> lines, in time order.
    series: dict[str, dict[str, list[str]]] = {m: {} for m in METRICS}
    tokens = float(report.get("tokens_per_s") or 0.0)
    mfu = float(report.get("mfu") or 0.0)
    lab = _labels(scenario)
    phase_labels = {name: _labels({**scenario, "phase": name}) for name in names}
    rank_labels = [(_labels({**scenario, "gpu": str(r["gpu"])}), float(r["step_time_s"])) for r in ranks]
    link_labels = [(_labels({**scenario, "link": link["link"]}), float(link["utilization"])) for link in links]
    samples = 0
    ts = ""

    def add(metric: str, value: float, labels: str = lab) -> None:
        nonlocal samples
        series[metric].setdefault(labels, []).append(
            f"{metric}{'_total' if METRICS[metric][0] == 'counter' else ''}{labels} {_fmt(value)} {ts}")
        samples += 1

    for k in range(n_steps):
        t = k * interval_s
        i = max(0, bisect.bisect_right(times, t) - 1)
        p = phases[i]
        ts = f"{start_unix + t:.3f}"
        training = p["phase"] == "train"
        add("clustertwin_it_power_watts", float(p.get("it_w", 0.0)))
        add("clustertwin_facility_power_watts", float(p.get("it_w", 0.0)) * pue)
        for name in names:
            add("clustertwin_job_phase", 1.0 if p["phase"] == name else 0.0, phase_labels[name])
        add("clustertwin_failures", float(fails[i]))
        add("clustertwin_checkpoint_saves", float(saves[i]))
        add("clustertwin_tokens_per_second", tokens if training else 0.0)
        add("clustertwin_mfu_ratio", mfu if training else 0.0)
        if training:
            for labels, step_s in rank_labels:
                add("clustertwin_step_time_seconds", step_s, labels)
        for labels, utilization in link_labels:
            add("clustertwin_link_utilization_ratio", utilization if training else 0.0, labels)
    tmp = os.fspath(path) + ".tmp"
    with open(tmp, "w") as f:
        for metric, by_labels in series.items():
            if not by_labels:
                continue
            kind, unit, doc = METRICS[metric]
            f.write(f"# TYPE {metric} {kind}\n")
            if unit:
                f.write(f"# UNIT {metric} {unit}\n")
            f.write(f"# HELP {metric} {doc} (ClusterTwin, simulated).\n")
            for lines in by_labels.values():
                f.write("\n".join(lines))
                f.write("\n")
        f.write("# EOF\n")
    os.replace(tmp, path)
    return samples


__all__ = ["DEFAULT_START_UNIX", "METRICS", "write_openmetrics"]
