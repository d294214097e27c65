"""Python API over the C++ engine: scenarios as dicts, runs as reports and tables."""
from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from . import _core

ScenarioError = _core.ScenarioError
InputLimitError = _core.InputLimitError


def limits() -> dict[str, dict[str, Any]]:
    """The input limits of this process (sim/input_limits.h): {name: {default, value, unit, what}}.
    Every input (scenario, YAML aliases, trace files and their events, rank files, other input
    files) is checked against them while it is read; a breach is an error naming the file, the
    limit, the size seen and how to raise it."""
    return {e["name"]: {k: v for k, v in e.items() if k != "name"} for e in _core.input_limits()}


def set_limit(name: str, value: int) -> None:
    """Raises (or lowers) one input limit for this process, e.g. ``set_limit("trace_bytes", 8 << 30)``
    (CLI: ``--limit trace_bytes=8GiB``). ValueError for an unknown name or a value below 1."""
    _core.set_input_limit(name, int(value))


def _parameter_doc() -> str:
    lines = ["Scenario keys (kind, default):", ""]
    for p in _core.parameters():
        default = "required" if p["default"] is None else p["default"]
        lines.append(f"  {p['path']} ({p['kind']}, {default}): {p['doc']}")
    return "\n".join(lines)


class Scenario:
    """A scenario document (the dict form of a JSON/YAML scenario file)."""

    def __init__(self, data: Mapping[str, Any] | str, source: str | None = None):
        if isinstance(data, str):
            data = json.loads(_core.parse_document(data))
        self.data: dict[str, Any] = copy.deepcopy(dict(data))
        self.source = source

    def to_json(self) -> str:
        return json.dumps(self.data)

    def validate(self, overrides: Mapping[str, Any] | None = None) -> None:
        """Raises ScenarioError naming every bad key, value and expectation."""
        _core.validate(self.to_json(), json.dumps(dict(overrides or {})))

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Scenario":
        out = Scenario(self.data, self.source)
        for path, value in overrides.items():
            node = out.data
            keys = path.split(".")
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = value
        return out

    def __repr__(self) -> str:
        return f"Scenario({self.data.get('name', 'unnamed')!r}, source={self.source!r})"


Scenario.__doc__ = (Scenario.__doc__ or "") + "\n\n" + _parameter_doc()


def load(path: str | os.PathLike) -> Scenario:
    """Reads a JSON or YAML scenario file."""
    path = os.fspath(path)
    return Scenario(json.loads(_core.read_document(path)), source=path)


def schema() -> dict:
    """JSON Schema of scenario files, generated from the parameter table."""
    return json.loads(_core.schema())


# Names of replay::Stream, InstrKind and Category codes (models/replay/step_program.h).
_CODES = _core.timeline_codes()
_STREAMS, _KINDS, _CATEGORIES = _CODES["stream"], _CODES["kind"], _CODES["category"]


@dataclass
class Result:
    """One run: the report dict, plus tables as pandas DataFrames when pandas is present.

    ``arrays`` holds the tables too large for the report as numpy arrays that own the
    simulator's buffers (no copy): ``arrays["fabric_links"]`` (training steps) has one entry
    per fabric link direction -- ``link``, ``src_tier``, ``src_index``, ``dst_tier``,
    ``dst_index``, ``plane``, ``bytes``, ``utilization`` (tier 0 is a NIC, index its nic_id).
    """

    report: dict
    trace_path: str | None = None
    arrays: dict = field(default_factory=dict, repr=False)
    _tables: dict = field(default_factory=dict, repr=False)

    def _table(self, key: str):
        import pandas as pd  # deferred: the CLI does not need pandas

        if key not in self._tables:
            self._tables[key] = pd.DataFrame(self.report.get("tables", {}).get(key, []))
        return self._tables[key]

    @property
    def timeline(self):
        """Every timed instruction of the traced ranks (``run(trace_gpus=...)``; by default one
        per pipeline stage and the first TP group, the first 16 ranks of a trace replay):
        gpu, stream, kind, category, step, start_s, seconds, end_s. Built from
        ``arrays["timeline"]``; empty when the run has none (traffic studies)."""
        import pandas as pd

        cols = self.arrays.get("timeline")
        if not cols:
            return self._table("timeline")
        df = pd.DataFrame(cols)
        df["stream"] = df["stream"].map(lambda k: _STREAMS[k] if k < len(_STREAMS) else f"collectives{k - 3}")
        df["kind"] = pd.Categorical.from_codes(df["kind"], _KINDS)
        df["category"] = pd.Categorical.from_codes(df["category"], _CATEGORIES)
        df["end_s"] = df["start_s"] + df["seconds"]
        return df

    @property
    def links(self):
        return self._table("links")

    @property
    def queues(self):
        return self._table("queues")

    @property
    def ranks(self):
        return self._table("ranks")

    @property
    def fabric_links(self):
        """Every fabric link direction (``arrays["fabric_links"]``) as a DataFrame; empty when the run has none."""
        import pandas as pd

        return pd.DataFrame(self.arrays.get("fabric_links", {}))

    @property
    def collectives(self):
        """Collectives of one step (``frames.collectives_frame``): op, group_size, bytes, count, time_s, busbw_gbps."""
        from .frames import collectives_frame

        return collectives_frame(self.report)

    @property
    def breakdown(self):
        """Step-time breakdown (``frames.breakdown_frame``): component, seconds, fraction."""
        from .frames import breakdown_frame

        return breakdown_frame(self.report)

    def plot_timeline(self, ranks: int = 8, path: str | os.PathLike | None = None):
        """Bars of the instructions of GPUs 0..ranks-1 (``Result.timeline``), one row per GPU and stream."""
        from . import result_plots

        return result_plots.timeline(self, ranks=ranks, path=path)

    def plot_breakdown(self, path: str | os.PathLike | None = None):
        """The step-time breakdown as one stacked bar."""
        from . import result_plots

        return result_plots.breakdown(self, path=path)

    def plot_memory(self, path: str | os.PathLike | None = None):
        """Memory per pipeline stage as stacked bars against the GPU's capacity (``frames.memory_frame``)."""
        from . import result_plots

        return result_plots.memory(self, path=path)

    def plot_links(self, top: int = 20, path: str | os.PathLike | None = None):
        """Utilization of the ``top`` busiest links."""
        from . import result_plots

        return result_plots.links(self, top=top, path=path)

    def plot_link_heatmap(self, path: str | os.PathLike | None = None):
        """Utilization of every fabric link as heatmaps: NIC uplinks by node and rail, then switch-to-switch links by tier."""
        from . import result_plots

        return result_plots.link_heatmap(self, path=path)

    def plot_power(self, path: str | os.PathLike | None = None):
        """Cluster power over the step, the idle draw of a stopped job, facility power on the right."""
        from . import result_plots

        return result_plots.power(self, path=path)

    def plot_rank_times(self, path: str | os.PathLike | None = None):
        """Histogram of per-rank times with the slow ranks (>= 10% over the median) marked."""
        from . import result_plots

        return result_plots.rank_times(self, path=path)

    def plot_queues(self, path: str | os.PathLike | None = None):
        """Packet mode: queued bytes, the deepest queue and the paused egress queues over time."""
        from . import result_plots

        return result_plots.queues(self, path=path)

    def plot_campaign_power(self, path: str | os.PathLike | None = None):
        """IT power over one simulated campaign: checkpoint stalls, failures and restarts."""
        from . import result_plots

        return result_plots.campaign_power(self, path=path)

    def plot_interval_curve(self, path: str | os.PathLike | None = None):
        """Goodput versus checkpoint interval: closed form, simulated campaign, Young/Daly."""
        from . import result_plots

        return result_plots.interval_curve(self, path=path)

    def to_chrome_trace(self, path: str | os.PathLike) -> str:
        """Copies the Chrome/Perfetto trace written by ``run(..., trace=...)`` to ``path``; returns ``path``.

        Nothing is rerun: a Result made without ``trace=`` has no trace and raises ValueError.
        """
        import shutil

        if not self.trace_path or not os.path.exists(self.trace_path):
            raise ValueError("to_chrome_trace: this run wrote no trace; run it with trace='file.json'")
        path = os.fspath(path)
        if os.path.abspath(path) != os.path.abspath(self.trace_path):
            shutil.copyfile(self.trace_path, path)
        return path


def run(scenario: Scenario | Mapping[str, Any] | str, overrides: Mapping[str, Any] | None = None,
        trace: str | None = None, progress: bool = False, trace_gpus: Iterable[int] | None = None) -> Result:
    """Runs a scenario (releasing the GIL) and returns its Result.

    trace      a path: write the Chrome / Perfetto trace there (open it in ui.perfetto.dev).
    trace_gpus the GPUs the trace and ``Result.timeline`` show. Default: one rank per pipeline
               stage (TP rank 0 of the first data-parallel replica) and the whole first TP
               group; trace replays: the first 16 ranks. Each must be simulated: an analytical
               run folds identical ranks, so it can trace only the GPUs it keeps (the error
               lists them; network.mode flow simulates every GPU).
    progress   True: once the run has lasted 5 s, a line on stderr every 5 s with the events
               done of the estimated total (``estimate``), events per second and the time left.

    The trace has one process per traced GPU (rows: compute, pipeline p2p, data-parallel
    collectives), every slice with its args (step, micro-batch, chunk, bytes, peer GPU, group
    size), flow arrows from each pipeline send to the receiver's next pass, the cluster's IT
    power as a counter track, and in flow and packet mode each traced GPU's NIC load (tx/rx
    Gb/s, 1 ms samples).
    """
    if isinstance(scenario, (str, os.PathLike)) and os.path.exists(os.fspath(scenario)):
        scenario = load(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = Scenario(scenario)
    doc, over = scenario.to_json(), json.dumps(dict(overrides or {}))
    if progress:
        _core.progress_start(json.loads(_core.estimate(doc, over))["events"])
    try:
        gpus = _trace_gpus(trace_gpus)
        text, arrays = _core.run(doc, over, trace or "", True, gpus)
    finally:
        if progress:
            _core.progress_stop()
    return Result(report=json.loads(text), trace_path=trace, arrays=arrays)


def _trace_gpus(gpus: Iterable[int] | None) -> list[int]:
    if gpus is None:
        return []
    if isinstance(gpus, (str, bytes)):
        raise ValueError(f"trace_gpus: got {gpus!r}, expected a list of GPU indices")
    out = []
    for g in gpus:
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < 2 ** 31:
            raise ValueError(f"trace_gpus: got {g!r}, expected GPU indices (integers >= 0)")
        out.append(g)
    if not out:
        raise ValueError("trace_gpus: got an empty list, expected at least one GPU (None = the default choice)")
    return out


def estimate(scenario: Scenario | Mapping[str, Any] | str, overrides: Mapping[str, Any] | None = None) -> dict:
    """What ``run`` would cost, before running: {"events", "memory_bytes", "wall_s", "basis"}
    on the reference machine (2 cores; models/scenario/cost_estimate.h, its error in
    docs/estimates.md). Raises ScenarioError for a scenario ``run`` would refuse."""
    if isinstance(scenario, (str, os.PathLike)) and os.path.exists(os.fspath(scenario)):
        scenario = load(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = Scenario(scenario)
    return json.loads(_core.estimate(scenario.to_json(), json.dumps(dict(overrides or {}))))


def layer_kernels(scenario: Scenario | Mapping[str, Any] | str, overrides: Mapping[str, Any] | None = None):
    """Where a micro-batch's compute time goes: every kernel of one transformer layer (layer
    ``transformer``; an MoE model's leading dense layers, ``model.moe.dense_layers``, are one
    ``dense_transformer`` layer more), the output layer (final norm, logits, loss) and the
    embedding, per micro-batch and TP rank, as the step
    model times them on the calibrated compute model. A pandas DataFrame: layer, pass (forward,
    recompute, backward), name, kind (gemm, attention, elementwise), flops, bytes (element-wise
    HBM traffic), seconds, and tflops (flops / seconds / 1e12). An attention kernel's flops
    follow the model-FLOPs convention, 4 b h s s_kv d forward (8 backward) over the full square,
    not halved for causality, so a causal kernel's tflops is twice the rate its kernel runs at.
    Collectives are not kernels of the compute model: see ``run(...).breakdown``."""
    import pandas as pd

    scenario = _as_scenario(scenario)
    rows = json.loads(_core.layer_kernels(scenario.to_json(), json.dumps(dict(overrides or {}))))
    df = pd.DataFrame(rows, columns=["layer", "pass", "name", "kind", "flops", "bytes", "seconds"])
    df["tflops"] = (df["flops"] / df["seconds"].where(df["seconds"] > 0) / 1e12).fillna(0.0)
    return df


def drill(scenario: Scenario | Mapping[str, Any] | str | os.PathLike, kill: int, at: str | float,
          hang: bool = False, overrides: Mapping[str, Any] | None = None) -> dict:
    """The kill-a-node drill (models/scenario/drill.h): node ``kill`` crashes (or, with
    ``hang``, stops issuing work) at ``at`` (a duration such as "30s", or seconds) after the job
    started. Returns the timeline: phases (train, detect, [wait_for_repair], [health_check],
    restart, restore, replay, steady), rto_s beside closed_form_rto_s, lost work and GPU-hours."""
    sc = _as_scenario(scenario)
    at_text = f"{at!r}s" if isinstance(at, (int, float)) else str(at)
    return json.loads(_core.drill(sc.to_json(), json.dumps(dict(overrides or {})), int(kill), at_text, bool(hang)))


def _as_scenario(scenario: Scenario | Mapping[str, Any] | str | os.PathLike) -> Scenario:
    if isinstance(scenario, (str, os.PathLike)):
        return load(scenario)
    return scenario if isinstance(scenario, Scenario) else Scenario(scenario)


def export_chakra(scenario: Scenario | Mapping[str, Any] | str | os.PathLike, out_dir: str | os.PathLike,
                  overrides: Mapping[str, Any] | None = None) -> dict:
    """Writes the scenario's generated training step as Chakra execution traces.

    One ``<name>.<rank>.et`` per rank (``name`` from the scenario's ``name``) and
    ``comm_group.json`` (ASTRA-sim's communicator groups) go into ``out_dir``, which must not
    hold .et files yet. The program is the one ``run`` replays (all ``training_job.steps``,
    every rank, never folded), so ``run(load_trace(out_dir, cluster=...))`` on the same
    cluster and network reproduces ``run(scenario)["step_time_s"]``. Returns a summary: files,
    ranks, steps, nodes by type, bytes.
    """
    sc = _as_scenario(scenario)
    return json.loads(_core.export_chakra(sc.to_json(), json.dumps(dict(overrides or {})), os.fspath(out_dir)))


def _chakra_ranks(path: str) -> int:
    ranks = [f for f in os.listdir(path) if f.endswith(".et")]
    if not ranks:
        raise ValueError(f"load_trace: {path}: no <name>.<rank>.et files")
    return len(ranks)


def _kineto_files(path: str) -> list[str]:
    return [f for f in os.listdir(path) if f.endswith((".json", ".json.gz"))]


def load_trace(path: str | os.PathLike, format: str | None = None, execution_trace: str | os.PathLike | None = None,
               cluster: Mapping[str, Any] | None = None, name: str | None = None) -> Scenario:
    """A Scenario that replays a recorded step: ``ct.run(ct.load_trace(path))``.

    ``format`` is guessed from ``path`` when not given: a directory of ``<name>.<rank>.et``
    files is ``"chakra"``; a ``.json`` or ``.json.gz`` file, or a directory of them (one
    Kineto trace per rank of a torch.distributed job, NCCL collectives replayed on the
    fabric), ``"kineto"``. ``execution_trace`` (a PyTorch execution trace of the same step)
    goes with a single Kineto file only. ``cluster`` is
    the scenario's cluster section; by default the smallest one of the default hardware that
    holds the trace's ranks (8 GPUs per node; a single-rank trace gets a one-GPU node). Paths
    are stored absolute, so the scenario runs from any directory.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_trace: {path}: no such file or directory")
    if format is None:
        if os.path.isdir(path):
            format = "kineto" if _kineto_files(path) and not any(f.endswith(".et") for f in os.listdir(path)) \
                else "chakra"
        elif path.endswith((".json", ".json.gz")):
            format = "kineto"
        else:
            raise ValueError(f"load_trace: cannot tell the format of {path} (a directory of .et files is chakra, "
                             "a .json or .json.gz file kineto); pass format=")
    if format not in ("chakra", "kineto"):
        raise ValueError(f"load_trace: format {format!r}: expected 'chakra' or 'kineto'")
    trace: dict[str, Any] = {"format": format, "path": path}
    if format == "chakra":
        if not os.path.isdir(path):
            raise ValueError(f"load_trace: {path}: a Chakra trace is a directory of <name>.<rank>.et files")
        if execution_trace is not None:
            raise ValueError("load_trace: execution_trace goes with a Kineto trace, not a Chakra one")
        ranks = _chakra_ranks(path)
    else:
        ranks = 1
        if os.path.isdir(path):
            ranks = len(_kineto_files(path))
            if not ranks:
                raise ValueError(f"load_trace: {path}: no .json or .json.gz Kineto traces (one per rank)")
            if execution_trace is not None:
                raise ValueError("load_trace: execution_trace goes with a single Kineto file, not a directory of ranks")
        if execution_trace is not None:
            trace["execution_trace"] = os.path.abspath(os.fspath(execution_trace))
    if cluster is None:
        per_node = min(8, ranks)
        cluster = {"nodes": -(-ranks // per_node), "gpus_per_node": per_node, "nics_per_node": per_node}
    base = os.path.basename(path.rstrip(os.sep))
    for suffix in (".gz", ".json"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    data = {"name": name or base or "trace", "cluster": copy.deepcopy(dict(cluster)), "trace": trace}
    return Scenario(data, source=path)


def calibrate(trace: str | os.PathLike, out: str | os.PathLike | None = None, gpu: str | None = None,
              execution_trace: str | os.PathLike | None = None) -> dict:
    """Fits the compute model to the kernels of a profiled step and writes a GPU file.

    ``trace`` is a PyTorch profiler (Kineto) trace; ``execution_trace`` the PyTorch execution
    trace of the same step (operator shapes and outputs; without it only Kineto's
    record_shapes inputs are used). ``gpu`` is the base catalog GPU (default: from the
    trace's device name). The file (``out``) is what the scenario key ``cluster.gpu_file``
    reads. Returns its content (base_gpu, calibration, fit errors per family, provenance)
    plus ``wall_s``.
    """
    return json.loads(_core.calibrate(os.fspath(trace), os.fspath(out) if out is not None else "", gpu or "",
                                      os.fspath(execution_trace) if execution_trace is not None else ""))
