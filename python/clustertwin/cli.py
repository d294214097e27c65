"""Command line: ./clustertwin run|sweep|validate|schema ... (DESIGN.md "Command line")."""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import sqlite3
import sys

from . import _core
from .api import ScenarioError, load, run


def _overrides(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ScenarioError(f"--set {pair!r}: expected KEY.PATH=VALUE")
        key, raw = pair.split("=", 1)
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _count(text: str) -> int:
    """argparse type of every count flag: a whole number >= 1 (1e3 and 1_000 read as 1000)."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a whole number >= 1") from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a whole number >= 1")
    return int(value)


def _quantity(text: str) -> float:
    """argparse type of --params / --tokens / --batch-tokens: 405e9, 405B, 15T, 4M."""
    from .planning import quantity

    try:
        return quantity(text, "value")
    except ScenarioError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive number like 405e9 or 405B "
                                         "(suffixes K, M, B or G, T, P)") from None


def _limit(text: str) -> tuple[str, int]:
    """--limit NAME=VALUE: one input limit (sim/input_limits.h); VALUE may carry KiB/MiB/GiB."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected NAME=VALUE (names: {', '.join(_limit_names())})")
    name, raw = text.split("=", 1)
    if name not in _limit_names():
        raise argparse.ArgumentTypeError(f"unknown limit {name!r}, expected one of {', '.join(_limit_names())}")
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "K": 1e3, "M": 1e6, "G": 1e9}
    scale = 1
    for suffix, factor in units.items():
        if raw.endswith(suffix):
            raw, scale = raw[: -len(suffix)], factor
            break
    try:
        value = float(raw) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"--limit {text!r}: expected a number (optionally with KiB, MiB, GiB)") from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"--limit {text!r}: expected a whole number >= 1")
    return name, int(value)


def _limit_names() -> list[str]:
    return [entry["name"] for entry in _core.input_limits()]


def _writable(path: str, flag: str) -> None:
    """Fails before any work when an output path cannot be written (exit 2, naming the flag)."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise ScenarioError(f"{flag} {path}: is a directory, expected a file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ScenarioError(f"{flag} {path}: directory {parent} does not exist")
    # A real open, not os.access (root passes access checks that writes then fail). No
    # exists-then-create step: two runs probing the same new path at once (two sweeps sharing a
    # --db) must not trip over each other's probe file.
    try:
        try:
            open(path, "r+b").close()  # an existing file: leaves the content as it is
        except FileNotFoundError:  # a new file: probe the directory with a file of our own
            with tempfile.NamedTemporaryFile(dir=parent, prefix=".clustertwin-probe-"):
                pass
    except OSError as e:
        raise ScenarioError(f"{flag} {path}: cannot be written ({e.strerror})") from None


MAX_WALL_S = 3600.0  # runs estimated longer are refused unless --force


def _available_memory() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 0.0


PROCESS_START_S = 0.25  # of an estimate's wall time, paid once per process, not per sweep point


def _wall(est: dict, points: int, workers: int) -> float:
    if points <= 1:
        return est["wall_s"]
    return PROCESS_START_S + max(est["wall_s"] - PROCESS_START_S, 0.0) * points / max(1, min(workers, points))


def _estimate_line(est: dict, points: int = 1, workers: int = 1) -> str:
    wall = _wall(est, points, workers)
    what = f"{points} points x " if points > 1 else ""
    return (f"estimate: {what}about {est['events']:.3g} events, {est['memory_bytes'] / 2**30:.2g} GiB, "
            f"{wall:.3g} s on the reference 2-core machine ({est['basis']})")


def _check_cost(est: dict, args, points: int = 1, workers: int = 1) -> None:
    """Prints the estimate when the run will take a while; refuses one above the limits unless --force."""
    wall = _wall(est, points, workers)
    line = _estimate_line(est, points, workers)
    if wall > 5.0 and not args.quiet:
        print(line, file=sys.stderr)
    if args.force:
        return
    have = _available_memory()
    if wall > MAX_WALL_S:
        raise ScenarioError(f"{line}: above the {MAX_WALL_S:.0f} s limit; pass --force to run it anyway, "
                            "or reduce the work (network.mode analytical, fewer GPUs, steps or points)")
    if have > 0 and est["memory_bytes"] > have:
        raise ScenarioError(f"{line}: more memory than this machine has available ({have / 2**30:.1f} GiB); "
                            "pass --force to try anyway")


def _fmt(value, unit="", scale=1.0, digits=4):
    if value is None:
        return "n/a"
    return f"{value * scale:.{digits}g}{unit}"


def _print_summary(report: dict) -> None:
    print(f"scenario   {report.get('name')}  ({report['cluster']['gpus']} x {report['cluster']['gpu']})")
    job_nodes, nodes = report.get("reliability", {}).get("job_nodes"), report["cluster"].get("nodes")
    if job_nodes is not None and nodes and job_nodes < nodes:
        print(f"spares     {nodes - job_nodes} of {nodes} nodes are not in the job: hot spares "
              "(recovery.hot_spares) and what the layout leaves over")
    if "step_time_s" in report:
        print(f"step time  {_fmt(report['step_time_s'], ' s')}")
        print(f"MFU        {_fmt(report.get('mfu'), ' %', 100, 3)}   HFU {_fmt(report.get('hfu'), ' %', 100, 3)}")
        print(f"TFLOP/s    {_fmt(report.get('tflops_per_gpu'))} per GPU")
        print(f"tokens/s   {_fmt(report.get('tokens_per_s'))}  ({_fmt(report.get('tokens_per_s_per_gpu'))} per GPU)")
        b = report.get("breakdown", {})
        if b:
            print("breakdown  " + "  ".join(f"{k[:-2]}={v:.4g}s" for k, v in b.items()))
    if "memory" in report:
        m = report["memory"]
        margin = m.get("margin_bytes", 0) / 2**30
        print(f"memory     {m['peak_bytes'] / 2**30:.1f} GiB of {m['capacity_bytes'] / 2**30:.1f} GiB"
              f" (stage {m.get('peak_stage', 0)}, {m.get('stack', '')}) -> "
              + ("fits only as the allocator releases its cache (reserved at capacity; live tensors "
                 f"{m['allocated_bytes'] / 2**30:.1f} GiB)" if m['fits'] and m.get('allocator_at_capacity') else
                 f"fits, {margin:.1f} GiB free" if m['fits'] else
                 f"DOES NOT FIT by {-margin:.1f} GiB (the step below is what it would do with enough memory)"))
    if "power" in report:
        p = report["power"]
        print(f"power      IT mean {p['cluster_mean_w'] / 1e6:.2f} MW, peak {p['cluster_peak_w'] / 1e6:.2f} MW, "
              f"stopped {p['idle_w'] / 1e6:.2f} MW; facility {p['facility_mean_w'] / 1e6:.2f} MW (PUE {p['pue']:g}); "
              f"rack peak {p['rack_peak_w'] / 1e3:.1f} kW of {p['rack_limit_w'] / 1e3:.1f} kW")
    rel = report.get("reliability", {})
    if "goodput" in rel:
        mtbf = rel.get("mtbf_s")
        print(f"goodput    {rel['goodput']:.2%} over {rel['campaign']['duration_s'] / 86400:.3g} days "
              f"({rel['interruptions']:.1f} interruptions, MTBF {mtbf / 3600 if mtbf else float('inf'):.2f} h, "
              f"RTO {rel['rto_s']:.0f} s, {rel['lost_gpu_hours']:.0f} GPU-hours lost)")
        if "simulated_optimal_interval_s" in rel:
            print(f"checkpoint every {rel['checkpoint_interval_s']:.0f} s; optimum simulated "
                  f"{rel['simulated_optimal_interval_s']:.0f} s, Young/Daly {rel['young_daly_interval_s']:.0f} s")
    if "traffic" in report:
        t = report["traffic"]
        print("traffic    " + "  ".join(f"{k}={v:.4g}" for k, v in t.items() if isinstance(v, (int, float))))
    tr = report.get("trace", {})
    for section in ("kineto", "kineto_ranks"):
        if section in tr:
            k = tr[section]
            if section == "kineto":
                step = k.get("profiler_step")
                print(f"trace      {'ProfilerStep#' + str(step) if step is not None else 'the whole profile'}: "
                      f"measured {k['measured_step_s']:.6g} s, GPU busy {k['gpu_busy_fraction']:.1%}")
            for w in k.get("warnings", []):
                print(f"warning    {w}")
    if "job_failed_at_s" in report:
        f = report.get("failure", {})
        print(f"JOB FAILED at {report['job_failed_at_s']:.6g} s, detected by {f.get('detected_by')} "
              f"(first rank left waiting at {f.get('first_wait_s', 0):.6g} s)")
    if "hang_diagnosis" in report:
        h = report["hang_diagnosis"]
        print(f"hang       {h['summary']}")
        for place in h["where"][:5]:
            where = (place["waiting_in"] or "nothing entered") + f" of step {place['step']}"
            if place["seq"] is not None:
                where += f" (seq {place['seq']}, {place['group_count']} group(s))"
            print(f"           {place['count']:>6} rank(s) in {where}, waiting for {place['missing_count']} rank(s) "
                  f"{place['missing_ranks'][:8]}")
    not_computed = report.get("not_computed", {})
    if "job_failed_at_s" in report:  # one line for the step figures the failure left out
        keys = [k for k, why in not_computed.items() if why.startswith("the job failed")]
        if keys:
            print(f"not computed: {', '.join(keys)}: {not_computed[keys[0]]}")
        not_computed = {k: v for k, v in not_computed.items() if k not in keys}
    for key, why in not_computed.items():
        print(f"not computed: {key}: {why}")
    s = report.get("sim", {})
    print(f"sim        {s.get('events', 0)} events in {s.get('wall_s', 0):.3f} s"
          f" ({s.get('events_per_s', 0):.3g} events/s)")


def _seconds(text: str) -> float:
    """A positive duration with its unit ('10s', '500ms', '1min'), read as scenario keys read it."""
    try:
        value = _core.parse_duration_seconds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive duration")
    return value


def _index_list(text: str) -> list[int]:
    """--trace-gpus / --node-list: comma-separated indices, ranges allowed (0-7,64)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise argparse.ArgumentTypeError(f"got {part!r} in {text!r}, expected indices or ranges like 0-7,64")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi - lo > 65535:
            raise argparse.ArgumentTypeError(f"got the range {part!r}, expected at most 65,536 indices")
        out.extend(range(lo, hi + 1))
    return out


def cmd_run(args) -> int:
    sc = load(args.scenario)
    trace = None
    if args.trace_gpus is not None and not args.out:
        raise ScenarioError("--trace-gpus: the trace is written with --out DIR (DIR/trace.json); add --out")
    if args.out:
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise ScenarioError(f"--out {args.out}: exists and is not a directory")
        os.makedirs(args.out, exist_ok=True)
        if not os.access(args.out, os.W_OK):
            raise ScenarioError(f"--out {args.out}: not writable")
        trace = os.path.join(args.out, "trace.json")
    overrides = _overrides(args.set)
    est = json.loads(_core.estimate(sc.to_json(), json.dumps(overrides)))
    _check_cost(est, args)
    if not args.quiet:
        _core.progress_start(est["events"])
    try:
        result = run(sc, overrides=overrides, trace=trace, trace_gpus=args.trace_gpus)
    finally:
        if not args.quiet:
            _core.progress_stop()
    if args.out:
        with open(os.path.join(args.out, "report.json"), "w") as f:
            json.dump(result.report, f, indent=1)
        _write_csvs(result.report, args.out)
        _write_array_csvs(result.arrays, args.out)
        from .metrics import write_openmetrics
        write_openmetrics(result.report, os.path.join(args.out, "metrics.om"), interval_s=args.metrics_interval,
                          start_unix=args.metrics_start)
    if args.json:
        json.dump(result.report, sys.stdout)
        sys.stdout.write("\n")
    else:
        _print_summary(result.report)
    return 0


def _write_array_csvs(arrays: dict, out: str) -> None:
    """The column tables (``Result.arrays``, e.g. fabric_links) as CSV, one row per entry."""
    import csv

    for name, columns in arrays.items():
        if not columns:
            continue
        with open(os.path.join(out, f"{name}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(list(columns))
            w.writerows(zip(*(c.tolist() for c in columns.values())))


def _write_csvs(report: dict, out: str) -> None:
    import csv

    for name, rows in report.get("tables", {}).items():
        if not rows:
            continue
        with open(os.path.join(out, f"{name}.csv"), "w", newline="") as f:
            fields = list(dict.fromkeys(k for row in rows for k in row))  # optional fields blank
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)


def _value(raw: str):
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _grid(pairs: list[str]) -> dict:
    """--grid a.b=1,2,4 -> {"a.b": [1, 2, 4]}; a JSON list (--grid 'a.b=[[1,2],[3]]') is taken whole."""
    grid = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ScenarioError(f"--grid {pair!r}: expected KEY.PATH=VALUE,VALUE,...")
        key, raw = pair.split("=", 1)
        whole = _value(raw) if raw.lstrip().startswith("[") else None
        grid[key] = whole if isinstance(whole, list) else [_value(v) for v in raw.split(",")]
    return grid


SWEEP_SHOWN = ["step_time_s", "mfu", "tflops_per_gpu", "tokens_per_s_per_gpu", "memory.fits",
               "network.max_link_utilization", "traffic.completion_time_s", "traffic.fct_p99_s",
               "traffic.goodput_gbps", "network.pfc_paused_time_s", "network.pfc_pause_frames",
               "network.ecn_marked_fraction", "network.dropped_packets"]


def _constraint(text: str) -> tuple[str, tuple]:
    """'memory.fits==true' -> ("memory.fits", ("==", True)); operators ==, !=, <=, >=, <, >."""
    for op in ("==", "!=", "<=", ">=", "<", ">"):
        if op in text:
            column, raw = text.split(op, 1)
            return column.strip(), (op, _value(raw.strip()))
    raise ScenarioError(f"--constraint {text!r}: expected COLUMN OP VALUE with OP one of ==, !=, <=, >=, <, >")


def cmd_optimize(args) -> int:
    from .optimize import optimize

    if args.csv:
        _writable(args.csv, "--csv")
    space = _grid(args.axis)
    if not space:
        raise ScenarioError("optimize: give at least one --axis KEY.PATH=V1,V2,...")
    constraints = dict(_constraint(c) for c in args.constraint or [])
    df = optimize(load(args.scenario), space, objective=args.objective, maximize=not args.minimize,
                  constraints=constraints, overrides=_overrides(args.set), max_evals=args.max_evals,
                  workers=args.workers, exhaustive=args.exhaustive)
    if args.csv:
        df.to_csv(sys.stdout if args.csv == "-" else args.csv, index=False)
    cols = ["eval", "round", *space, args.objective, "feasible", "best"]
    print(df[cols].to_string(index=False))
    best = df[df["best"]]
    if best.empty:
        print("no feasible point", file=sys.stderr)
        return 1
    print("best: " + ", ".join(f"{k}={best.iloc[0][k]}" for k in space) + f" -> {args.objective}={best.iloc[0][args.objective]:.4g}"
          f" ({len(df)} evaluations)")
    return 0


def cmd_sweep(args) -> int:
    import pandas as pd

    from .sweep import sweep
    from .sweep_sampling import random_args

    if args.csv:
        _writable(args.csv, "--csv")
    if args.db:
        _writable(args.db, "--db")
    grid = _grid(args.grid)
    random = random_args(args.random)
    if not grid and not random:
        raise ScenarioError("sweep: give at least one --grid KEY.PATH=VALUE,VALUE,... or --random KEY.PATH=DIST")
    if args.scheduler and args.backend == "threads":
        raise ScenarioError("sweep: --scheduler runs on dask; drop --backend threads")
    backend = "dask" if args.scheduler else (args.backend or "threads")
    from .sweep_sampling import point_count

    base = load(args.scenario)
    n_points = point_count(grid, random or None, args.samples)
    est = json.loads(_core.estimate(base.to_json(), json.dumps(_overrides(args.set))))
    _check_cost(est, args, n_points, args.workers)
    client = None
    if args.scheduler:
        from distributed import Client

        client = Client(args.scheduler)
    try:
        df = sweep(base, grid, workers=args.workers, db=args.db, overrides=_overrides(args.set),
                   progress=sys.stderr.isatty() if args.progress is None else args.progress,
                   random=random or None, samples=args.samples, seed=args.seed, backend=backend, client=client)
    finally:
        if client is not None:
            client.close()
    if df.attrs["resumed"]:
        print(f"sweep: {df.attrs['resumed']} points were already in {args.db} (read back, not run)", file=sys.stderr)
    swept = df.attrs["grid"]
    failed = int(df["error"].notna().sum())
    if args.minimize or args.maximize:
        from .frames import pareto

        minimize = [c for c in (args.minimize or "").split(",") if c]
        maximize = [c for c in (args.maximize or "").split(",") if c]
        missing = [c for c in minimize + maximize if c not in df.columns]
        if missing:
            raise ScenarioError(f"sweep --minimize/--maximize: no column {', '.join(missing)} in the results")
        df["pareto"] = pareto(df, minimize, maximize)
    if args.csv == "-":
        df.to_csv(sys.stdout, index=False)
    elif args.csv:
        df.to_csv(args.csv, index=False)
        print(f"{len(df)} points -> {args.csv}", file=sys.stderr)
    else:
        objectives = [c for c in (args.minimize or "").split(",") + (args.maximize or "").split(",") if c]
        cols = list(df.columns) if args.all else \
            swept + [c for c in objectives if c not in swept] + \
            [c for c in SWEEP_SHOWN if c in df.columns and c not in swept and c not in objectives] + \
            (["pareto"] if "pareto" in df.columns else []) + ["wall_s"]
        shown = df[[c for c in cols if c != "error"]].copy()
        errors = df["error"].map(lambda e: "" if e is None or e != e else " ".join(e.split()))
        if failed:  # last, left-aligned: the messages are long
            width = int(errors.str.len().max())
            shown["error"] = errors.map(lambda e: e.ljust(width))
        with pd.option_context("display.max_colwidth", 400, "display.width", 400):
            print("\n".join(line.rstrip() for line in shown.to_string(index=False).splitlines()))
    if failed:
        print(f"{failed} of {len(df)} points failed (see the error column)", file=sys.stderr)
    return 0


def cmd_validate(args) -> int:
    sc = load(args.scenario)
    overrides = _overrides(args.set)
    sc.validate(overrides)
    print(f"{args.scenario}: valid")
    print(_estimate_line(json.loads(_core.estimate(sc.to_json(), json.dumps(overrides)))))
    return 0


def cmd_schema(args) -> int:
    if args.text:
        print(_core.help_text(), end="")
    else:
        print(_core.schema())
    return 0


def cmd_nccl_tests(args) -> int:
    from .compare import _bytes, nccl_size

    sc = load(args.scenario)
    try:
        nodes = [_count(n) for n in args.nodes.split(",")] if args.nodes else [2]
    except argparse.ArgumentTypeError as e:
        raise ScenarioError(f"--nodes {args.nodes}: {e}") from None
    node_list = args.node_list or []
    if node_list and not args.nodes:
        nodes = [len(node_list)]
    step = _bytes(nccl_size(args.stepbytes)) if args.stepbytes is not None else 0
    print(_core.nccl_tests(sc.to_json(), json.dumps(_overrides(args.set)), args.op, nodes, nccl_size(args.minbytes),
                           nccl_size(args.maxbytes), args.stepfactor, step, args.datatype, args.redop, node_list),
          end="")
    return 0


def cmd_drill(args) -> int:
    result = json.loads(_core.drill(load(args.scenario).to_json(), json.dumps(_overrides(args.set)), args.kill,
                                    args.at, args.hang))
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    k, ck = result["kill"], result["checkpoint"]
    print(f"drill      {k['kind']} of node {k['node']} at {k['at_s']:g} s ({result['job_gpus']:g} GPUs, "
          f"step {result['step_time_s']:.4g} s), during a {result['killed_during'].replace('_', ' ')}")
    restored = f"checkpoint of step {ck['restored_step']}"
    if ck["not_durable_step"] is not None:
        restored += f" (step {ck['not_durable_step']}'s was still flushing until {ck['not_durable_until_s']:.6g} s)"
    print(f"restores   {restored}; {result['lost_steps']} step(s) lost, {result['lost_work_s']:.6g} s of work")
    print(f"{'phase':<16} {'start s':>12} {'end s':>12} {'duration s':>12}")
    for p in result["phases"]:
        end = "" if p["duration_s"] is None else f"{p['end_s']:>12.6g}"
        dur = "" if p["duration_s"] is None else f"{p['duration_s']:>12.6g}"
        print(f"{p['phase']:<16} {p['start_s']:>12.6g} {end:>12} {dur:>12}")
    print(f"RTO        {result['rto_s']:.6g} s (closed form {result['closed_form_rto_s']:.6g} s, "
          f"{result['rto_vs_closed_form']:+.2%}); detected by {result['detected_by']} after "
          f"{result['detection_s']:.6g} s; {result['gpu_hours_lost']:.6g} GPU-hours lost")
    return 0


def cmd_rollout(args) -> int:
    result = json.loads(_core.rollout(load(args.scenario).to_json(), json.dumps(_overrides(args.set))))
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"{'GPUs':>7} {'nodes':>6} {'DP':>5} {'step s':>8} {'MFU':>6} {'tokens/s':>11} {'efficiency':>10} {'per 2x':>7}")
    for st in result["stages"]:
        if "error" in st:
            print(f"{st['gpus']:>7} {st['nodes']:>6} {st['data_parallel']:>5}  not computed: {st['error']}")
            continue
        gain = f"{st['doubling_gain']:+.0%}" if "doubling_gain" in st else ""
        print(f"{st['gpus']:>7} {st['nodes']:>6} {st['data_parallel']:>5} {st['step_time_s']:>8.3f} {st['mfu']:>6.1%}"
              f" {st['tokens_per_s']:>11.4g} {st['scaling_efficiency']:>10.1%} {gain:>7}")
    verdict = "meets" if result["linear_enough"] else "MISSES"
    print(f"worst throughput added per doubling: {result['worst_doubling_gain']:.0%} ({verdict} the 85% bar)")
    return 0


def _plan_model(args) -> dict | None:
    model = {"preset": args.model} if args.model else {}
    for flag in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "activation"):
        if getattr(args, flag) is not None:
            model[flag] = getattr(args, flag)
    return model or None


def cmd_plan(args) -> int:
    from .planning import plan

    result = plan(args.params, args.tokens, args.days, gpu=args.gpu, model=_plan_model(args), seq=args.seq,
                  batch_tokens=args.batch_tokens, pue=args.pue, threads=args.threads,
                  progress=not (args.quiet or args.json))
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    _print_plan(result)
    return 0


def _print_plan(result: dict) -> None:
    m, n = result["model"], result["inputs"]["params"]
    kv = f", {m['kv_heads']} KV heads" if m["kv_heads"] != m["heads"] else ""
    print(f"model             {m['layers']} layers, hidden {m['hidden']}, {m['heads']} heads{kv}, FFN {m['ffn_hidden']},"
          f" {m['activation']}, vocabulary {m['vocab']}, sequence {m['seq_length']}:"
          f" {m['active_parameters'] / 1e9:.1f}B parameters")
    print(f"                  {m['source']}")
    print(f"training compute  {result['training_flops']:.3g} FLOP (6 N D, N = {n / 1e9:.4g}B);"
          f" model state {result['model_state_bytes'] / 2**40:.1f} TiB")
    facility = result["inputs"]["pue"] is not None
    print(f"{'case':<13} {'MFU':>5} {'GPUs':>8} {'nodes':>6} {'HBM TiB':>8} {'NIC Tb/s':>9} {'IT MW':>7}"
          + (f" {'facility MW':>11}" if facility else ""))
    for name in ["optimistic", "base", "conservative"]:
        c = result["cases"][name]
        print(f"{name:<13} {c['mfu']:>5.0%} {c['gpus']:>8.0f} {c['nodes']:>6} {c['hbm_bytes'] / 2**40:>8.1f}"
              f" {c['nic_bandwidth_gbps'] / 1e3:>9.1f} {c['power_w'] / 1e6:>7.2f}"
              + (f" {c['facility_power_w'] / 1e6:>11.2f}" if facility else ""))
    lay = result["layout"]
    best = lay.get("best")
    if best:
        idle = lay["cluster_gpus"] - best["gpus_used"]
        print(f"layout search     on the base case's {lay['cluster_gpus']:,} GPUs, {lay['batch_tokens']:.3g} tokens per step:"
              f" {lay['layouts_simulated']} layouts simulated, {lay['layouts_not_fitting']} do not fit in memory,"
              f" {lay['layouts_off_batch']} cannot reach the batch")
        print(f"best layout       TP {best['tensor_parallel']} PP {best['pipeline_parallel']} DP {best['data_parallel']}"
              f" v {best['virtual_pipeline']} mb {best['micro_batch_size']} gbs {best['global_batch_size']},"
              f" {best['recompute_granularity']} recompute ({best['gpus_used']:,.0f} GPUs used"
              + (f", {idle:,.0f} idle)" if idle else ")"))
        print(f"predicted         {best['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU, MFU {best['mfu']:.1%}"
              f" ({best['mfu_6nd']:.1%} as 6 N D): {lay['days']:.1f} days on these GPUs;"
              f" {lay['gpus_for_deadline']:,} GPUs for {result['inputs']['days']:g} days")
    else:
        print(f"best layout       none: {lay.get('reason', 'no layout fits in memory')}")
    for w in result.get("warnings", []):
        print(f"warning: {w}")


def cmd_export(args) -> int:
    from .api import export_chakra

    summary = export_chakra(load(args.scenario), args.out, overrides=_overrides(args.set))
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"wrote {summary['ranks']} Chakra ET files ({summary['steps']} steps, {summary['nodes']} nodes: "
          f"{summary['computes']} compute, {summary['sends']} send, {summary['recvs']} recv, "
          f"{summary['collectives']} collective; {summary['bytes']} bytes) to {summary['directory']}")
    prefix = os.path.join(summary["directory"], summary["name"])
    print(f"replay:    a scenario with trace: {{format: chakra, path: {summary['directory']}}}"
          f" (ct.load_trace({summary['directory']!r}))")
    print(f"ASTRA-sim: --workload-configuration={prefix} --comm-group-configuration={summary['comm_group_file']}")
    return 0


def cmd_calibrate(args) -> int:
    from .api import calibrate

    result = calibrate(args.trace, out=args.out, gpu=args.gpu, execution_trace=args.execution_trace)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"base GPU   {result['base_gpu']}  (trace device: {result['provenance']['device_name'] or 'unknown'})")
    print(f"{'family':<17} {'shapes':>6} {'ops':>5} {'fit mean':>9} {'fit max':>8} {'hold-out n':>10} {'mean':>7} {'max':>7}")
    for family in ("gemm", "attention_fwd", "attention_fwdbwd", "elementwise"):
        f = result["fit"][family]
        if not f["fitted"]:
            print(f"{family:<17} {0:>6} {0:>5}  not fitted: {f['reason']}")
            continue
        a, h = f["abs_rel_error_fit_set"], f["abs_rel_error_holdout"]
        print(f"{family:<17} {f['samples']:>6} {f['operators']:>5} {a['mean']:>9.1%} {a['max']:>8.1%} {h['count']:>10}"
              f" {h['mean']:>7.1%} {h['max']:>7.1%}")
    skipped = result["fit"].get("skipped_operators", {})
    if skipped:
        top = sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))
        print(f"skipped    {sum(skipped.values())} operators, by reason:")
        for why, n in top[:12]:
            print(f"  {n:>6}  {why}")
        if len(top) > 12:
            print(f"  {sum(n for _, n in top[12:]):>6}  ({len(top) - 12} other reasons; the GPU file's "
                  "fit.skipped_operators lists all)")
    else:
        print("skipped    no operator")
    for w in result.get("provenance", {}).get("warnings", []):
        print(f"warning    {w}", file=sys.stderr)
    print(f"wrote      {result['out']}  ({result['wall_s']:.2f} s); use it with cluster.gpu_file: {result['out']}")
    return 0


def _accuracy_modes(args) -> int:
    from .accuracy import MODE_AGREEMENT, mode_agreement
    rows, summary = mode_agreement(args.set)
    if args.csv:
        rows.to_csv(args.csv if args.csv != "-" else sys.stdout, index=False)
        return 0
    md = args.markdown
    def pct(x):
        return "" if x is None or x != x else f"{100 * x:+.1f}%"
    def num(x):
        return "" if x is None or x != x else f"{x:.4g}"
    for name, part in rows.groupby("set", sort=False):
        print(f"\n## {name}\n" if md else f"\n== {name}")
        if md:
            print("| row | quantity | analytical | flow | gap |\n| --- | --- | ---: | ---: | ---: |")
        for r in part.itertuples():
            if md:
                print(f"| {r.row} | {r.quantity} | {num(r.analytical)} | {num(r.flow)} | {pct(r.gap)} |")
            else:
                print(f"{r.row[:52]:<52} {r.quantity:<16} {num(r.analytical):>10} {num(r.flow):>10} {pct(r.gap):>8}")
    bar = f"{100 * MODE_AGREEMENT:.0f}%"
    print("\n## summary\n" if md else "\n== summary")
    if md:
        print(f"| set | rows in both modes | largest gap | rows beyond {bar} |\n| --- | ---: | ---: | ---: |")
    else:
        print(f"{'set':<20} {'rows':>5} {'largest gap':>12} {'beyond ' + bar:>10}")
    for r in summary.to_dict("records"):
        if md:
            print(f"| {r['set']} | {r['computed']} | {pct(r['max_gap'])} | {r['over']} |")
        else:
            print(f"{r['set']:<20} {r['computed']:>5} {pct(r['max_gap']):>12} {r['over']:>10}")
    return 0


def cmd_accuracy(args) -> int:
    from .accuracy import accuracy
    if args.csv:
        _writable(args.csv, "--csv")
    if args.mode == "both":
        return _accuracy_modes(args)
    rows, summary = accuracy(args.set, mode=args.mode)
    if args.csv:
        rows.to_csv(args.csv if args.csv != "-" else sys.stdout, index=False)
        return 0
    md = args.markdown
    def pct(x):
        return "" if x is None or x != x else f"{100 * x:+.1f}%"
    for name, part in rows.groupby("set", sort=False):
        print(f"\n## {name}\n" if md else f"\n== {name}")
        if md:
            print("| row | quantity | published | predicted | error | note |\n| --- | --- | ---: | ---: | ---: | --- |")
        for r in part.itertuples():
            pred = "" if r.predicted is None or r.predicted != r.predicted else f"{r.predicted:.4g}"
            note = r.note or ("declared not to fit in memory" if r.fits is False else "")
            if md:
                print(f"| {r.row} | {r.quantity} | {r.published:.4g} | {pred} | {pct(r.error)} | {note} |")
            else:
                print(f"{r.row[:52]:<52} {r.quantity:<16} {r.published:>10.4g} {pred:>10} {pct(r.error):>8}  {note}")
    print("\n## summary\n" if md else "\n== summary")
    cols = ["set", "rows", "computed", "not_fitting", "mape", "worst_error", "baseline_mape", "spearman", "beats_baseline",
            "fitted"]
    if md:
        print("| set | rows | computed | declared OOM | MAPE | worst | baseline MAPE | Spearman | beats baseline |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    else:
        print(f"{'set':<20} {'rows':>5} {'computed':>8} {'OOM':>4} {'MAPE':>7} {'worst':>8} {'baseline':>8} {'spearman':>8}  beats")
    for r in summary.to_dict("records"):
        r = {k: r.get(k) for k in cols}
        mape = "" if r["mape"] is None or r["mape"] != r["mape"] else f"{100 * r['mape']:.1f}%"
        base = "" if r["baseline_mape"] is None or r["baseline_mape"] != r["baseline_mape"] else f"{100 * r['baseline_mape']:.1f}%"
        rho = "" if r["spearman"] is None or r["spearman"] != r["spearman"] else f"{r['spearman']:.2f}"
        beats = "" if r["beats_baseline"] is None or r["beats_baseline"] != r["beats_baseline"] else ("yes" if r["beats_baseline"] else "NO")
        if r["fitted"]:
            beats = "fitted"  # a set something is fitted on does not validate it
        if md:
            print(f"| {r['set']} | {r['rows']} | {r['computed']} | {r['not_fitting']} | {mape} | {pct(r['worst_error'])} | {base} | {rho} | {beats} |")
        else:
            print(f"{r['set']:<20} {r['rows']:>5} {r['computed']:>8} {r['not_fitting']:>4} {mape:>7} {pct(r['worst_error']):>8} {base:>8} {rho:>8}  {beats}")
    return 0


def _compare_step_log(sc, args) -> int:
    from .compare import read_step_log, slow_ranks
    steps = read_step_log(args.step_log)
    expected = None
    if not args.no_twin:
        report = run(sc, overrides=_overrides(args.set)).report
        expected = report.get("step_time_s")
    table = slow_ranks(steps, expected, args.threshold)
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(f"# {os.path.basename(args.step_log)}: {steps['rank'].nunique()} ranks, {steps['step'].nunique()} steps"
          + (f"; the twin expects {expected:.4g} s per step" if expected else ""))
    print(f"{'rank':>6} {'median s':>10} {'slow steps':>11}  flag")
    for _, r in table.iterrows():
        why = []
        if r["over_median"]:
            why.append(f"over the step median by >{100 * args.threshold:.0f}% in {r['slow_steps']} of {r['steps']} steps")
        if r["over_twin"]:
            why.append(f"{100 * (r['median_s'] / expected - 1):.0f}% over the twin's step (not explained by the model)")
        print(f"{r['rank']:>6} {r['median_s']:>10.4g} {r['slow_steps']:>11}  {'; '.join(why)}")
    flagged = int(table["flagged"].sum())
    print(f"# {flagged} rank(s) flagged" if flagged else "# no rank flagged")
    return 0


def cmd_compare(args) -> int:
    from .compare import compare_nccl_tests
    sc = load(args.scenario)
    if not args.nccl_tests and not args.step_log:
        raise ScenarioError("compare: give --nccl-tests LOG... or --step-log FILE")
    if args.step_log:
        return _compare_step_log(sc, args)
    host_nodes = None
    if args.hosts:
        with open(args.hosts) as f:
            try:
                host_nodes = json.load(f)
            except json.JSONDecodeError as e:
                raise ScenarioError(f"--hosts {args.hosts}: not JSON ({e})") from None
        if not isinstance(host_nodes, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                       for v in host_nodes.values()):
            raise ScenarioError(f"--hosts {args.hosts}: expected a JSON object of host name -> node index")
    rows, candidates = compare_nccl_tests(sc, args.nccl_tests, op=args.op, nodes=args.nodes,
                                          threshold=args.threshold, overrides=_overrides(args.set),
                                          host_nodes=host_nodes)
    if args.csv:
        rows.to_csv(args.csv, index=False)
    for log, part in rows.groupby("log", sort=False):
        first = part.iloc[0]
        print(f"# {log}: {first['op']} on {first['nodes']} nodes" + (f" ({first['hosts']})" if first["hosts"] else ""))
        print(f"{'size (B)':>12} {'measured':>10} {'twin':>10} {'ratio':>7}  busbw GB/s")
        for _, r in part.iterrows():
            flag = f"  short by {100 * (1 - r['ratio']):.0f}%" if r["short"] else ""
            print(f"{r['size']:>12} {r['measured_busbw']:>10.2f} {r['twin_busbw']:>10.2f} {r['ratio']:>7.3f}{flag}")
        short = part[part["short"]]
        if len(short):
            print(f"# falls short of the twin by more than {100 * args.threshold:.0f}% from {short['size'].min()} "
                  f"to {short['size'].max()} B")
        print()
    if len(set(rows["log"])) > 1:
        if len(candidates):
            print("# what explains the shortfall (confidence: in every short run and no healthy one = 1)")
            for _, c in candidates.iterrows():
                print(f"{c['kind']:<6} {c['candidate']:<32} confidence {c['confidence']:.2f}  "
                      f"(short runs {c['short_runs']}, healthy runs {c['healthy_runs']})")
            if candidates.attrs.get("switches"):
                print(f"# switches not ranked: {candidates.attrs['switches']}")
        elif rows["short"].any():
            print("# short runs, but no host or path stands out (every host also ran healthy)")
        else:
            print("# every run within the threshold of the twin")
    return 0


def cmd_import(args) -> int:
    from .importers import from_hf_config, from_megatron_args, from_nemo_config, import_report
    base = load(args.base).data if args.base else None
    if args.hf:
        sc = from_hf_config(args.hf, base=base, seq_length=args.seq)
    elif args.nemo:
        sc = from_nemo_config(args.nemo, base=base)
        if args.seq is not None:
            sc["training_job"]["model"]["seq_length"] = args.seq
    else:
        text = args.megatron
        if args.megatron_file:
            with open(args.megatron_file) as f:
                text = " ".join(line.split("#", 1)[0].replace("\\", " ") for line in f)
        if args.seq is not None:
            text += f" --seq-length {args.seq}"
        sc = from_megatron_args(text, base=base)
    doc = json.dumps(dict(sc), indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(doc + "\n")
    else:
        print(doc)
    report = import_report(sc)
    if report:
        print(report, file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="clustertwin", description="Digital twin of GPU training clusters.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--limit", action="append", type=_limit, default=[], metavar="NAME=VALUE",
                        help="raise (or lower) an input limit for this run, e.g. trace_bytes=8GiB; "
                             "names: " + ", ".join(_limit_names()))
    sub = p.add_subparsers(dest="command", required=True)
    add_parser = sub.add_parser
    sub.add_parser = lambda *a, **k: add_parser(*a, parents=[common], **k)
    r = sub.add_parser("run", help="simulate a scenario and print its report")
    r.add_argument("scenario")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key")
    r.add_argument("--out", metavar="DIR", help="write report.json, trace.json and CSV tables (fabric_links.csv: every link's load)")
    r.add_argument("--json", action="store_true", help="print the report as one JSON object")
    r.add_argument("--trace-gpus", type=_index_list, metavar="G,G,...",
                   help="with --out: the GPUs DIR/trace.json and timeline.csv show (default: one per pipeline stage "
                        "and the first TP group; analytical runs can trace only the GPUs they simulate)")
    r.add_argument("--metrics-interval", type=_seconds, default=10.0, metavar="DURATION",
                   help="with --out: sample interval of DIR/metrics.om (OpenMetrics; default 10s)")
    r.add_argument("--metrics-start", type=float, default=1735689600, metavar="UNIX_TIME",
                   help="with --out: the Unix time of the job's start in metrics.om (default 2025-01-01T00:00Z)")
    r.add_argument("--force", action="store_true", help=f"run even when estimated above {MAX_WALL_S:.0f} s or the free memory")
    r.add_argument("--quiet", action="store_true", help="no estimate and no progress lines on stderr")
    r.set_defaults(func=cmd_run)
    n = sub.add_parser("nccl-tests", help="nccl-tests style table of a collective on the scenario's cluster")
    n.add_argument("scenario")
    n.add_argument("--op", default="all_reduce",
                   choices=["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"])
    n.add_argument("--nodes", help="comma-separated node counts, e.g. 2,4,8 (default 2)")
    n.add_argument("--node-list", type=_index_list, metavar="N,N,...",
                   help="run on these nodes (e.g. 16,17 or 8-11) instead of the first --nodes; with the scenario's "
                        "link faults (link_degrade ... at 0s) this is a pair or group run of a degraded fabric")
    n.add_argument("-b", "--minbytes", default="8B", help="smallest size: 8, 1K, 64M, 8G (x1024, as nccl-tests) or 64MiB")
    n.add_argument("-e", "--maxbytes", default="8GiB", help="largest size, same forms")
    n.add_argument("-f", "--stepfactor", type=int, default=2, help="multiplication factor between sizes (default 2)")
    n.add_argument("-i", "--stepbytes", help="fixed increment between sizes instead of -f (1M, 64MiB)")
    n.add_argument("-d", "--datatype", default="float",
                   help="element type: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2 "
                        "(counts and the type column; the time depends on bytes)")
    n.add_argument("-o", "--redop", default="sum",
                   help="reduction of all_reduce / reduce_scatter: sum prod max min avg (the redop column)")
    n.add_argument("--set", action="append", metavar="KEY=VALUE")
    n.set_defaults(func=cmd_nccl_tests)
    dr = sub.add_parser("drill", help="kill a node at a time: detection, replacement, restart, restore, replay")
    dr.add_argument("scenario")
    dr.add_argument("--kill", type=int, required=True, metavar="NODE_INDEX")
    dr.add_argument("--at", required=True, help="when, from the job's start (e.g. 30s, 2h)")
    dr.add_argument("--hang", action="store_true", help="the node hangs (processes live) instead of crashing")
    dr.add_argument("--set", action="append", metavar="KEY=VALUE")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_drill)
    ro = sub.add_parser("rollout", help="staged rollout: the job at one replica, rail group, pod, whole cluster")
    ro.add_argument("scenario")
    ro.add_argument("--set", action="append", metavar="KEY=VALUE")
    ro.add_argument("--json", action="store_true")
    ro.set_defaults(func=cmd_rollout)
    pl = sub.add_parser("plan", help="GPUs, HBM, NIC bandwidth and power for N parameters, D tokens, T days")
    pl.add_argument("--params", type=_quantity, help="parameters N (405e9 or 405B); default: the model's active ones")
    pl.add_argument("--tokens", type=_quantity, required=True, help="training tokens D (15e12 or 15T)")
    pl.add_argument("--days", type=float, required=True, help="days T the training may take")
    pl.add_argument("--gpu", default="H100-SXM")
    pl.add_argument("--model", metavar="PRESET", help="a model preset (ct._core.model_presets(); docs/presets.md); "
                    "without it and the shape flags, the dense preset or GPT-3 shape nearest --params")
    for flag, kind in (("layers", _count), ("hidden", _count), ("heads", _count), ("kv-heads", _count),
                       ("ffn-hidden", _count), ("vocab", _count)):
        pl.add_argument(f"--{flag}", type=kind, help=f"model {flag.replace('-', '_')} (overrides the preset's)")
    pl.add_argument("--activation", choices=["gelu", "swiglu"], help="model activation (overrides the preset's)")
    pl.add_argument("--seq", type=_count, help="sequence length (default: the model's, 2048 for a GPT-3 shape)")
    pl.add_argument("--batch-tokens", type=_quantity, default=4e6,
                    help="tokens per optimizer step in the layout search (default 4M)")
    pl.add_argument("--pue", type=float, help="power usage effectiveness: adds facility power = IT power x PUE")
    pl.add_argument("--threads", type=int, default=0, help="layouts evaluated in parallel (0 = every core)")
    pl.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)
    sw = sub.add_parser("sweep", help="run a scenario over a grid and/or random draws of overrides, one row per point")
    sw.add_argument("scenario")
    sw.add_argument("--grid", action="append", metavar="KEY=V1,V2,...",
                    help="a swept key and its values (JSON when they parse, else strings); repeat for a cartesian grid")
    sw.add_argument("--random", action="append", metavar="KEY=DIST",
                    help="a key drawn at random, DIST one of choice:V1,V2,... uniform:LOW,HIGH loguniform:LOW,HIGH "
                         "randint:LOW,HIGH (bounds may carry a unit: 20KB,400KB); needs --samples")
    sw.add_argument("--samples", type=_count, metavar="N",
                    help="random draws (each paired with every grid point); with --grid alone: N grid points at random")
    sw.add_argument("--seed", type=int, default=0, help="seed of the random draws (default 0)")
    sw.add_argument("--backend", choices=["threads", "dask"],
                    help="threads in this process (default) or a dask LocalCluster of --workers processes")
    sw.add_argument("--scheduler", metavar="ADDRESS", help="run on this dask scheduler, e.g. tcp://host:8786")
    sw.add_argument("--workers", type=_count, default=1, help="points run in parallel: threads or dask processes (default 1)")
    sw.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress line on stderr: points done/total, points/s, ETA (default: when stderr is a terminal)")
    sw.add_argument("--db", metavar="FILE", help="SQLite file: append rows, skip points already there (resume)")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key at every point")
    sw.add_argument("--csv", metavar="OUT", help="write every column as CSV (- for stdout) instead of printing the table")
    sw.add_argument("--all", action="store_true", help="print every column (default: grid keys and headline metrics)")
    sw.add_argument("--minimize", metavar="COL,COL", help="mark the Pareto front: columns to minimise")
    sw.add_argument("--maximize", metavar="COL,COL", help="mark the Pareto front: columns to maximise")
    sw.add_argument("--force", action="store_true", help=f"run even when estimated above {MAX_WALL_S:.0f} s or the free memory")
    sw.add_argument("--quiet", action="store_true", help="no estimate line on stderr")
    sw.set_defaults(func=cmd_sweep)

    op = sub.add_parser("optimize", help="greedy (or exhaustive) search for the best point under constraints")
    op.add_argument("scenario")
    op.add_argument("--axis", action="append", metavar="KEY=V1,V2,...", help="an ordered axis of the search space")
    op.add_argument("--objective", default="mfu", help="report column to optimise (default mfu)")
    op.add_argument("--minimize", action="store_true", help="minimise the objective (default: maximise)")
    op.add_argument("--constraint", action="append", metavar="COL==VALUE",
                    help="a feasibility rule on a report column, e.g. memory.fits==true or step_time_s<3")
    op.add_argument("--max-evals", type=_count, default=200, help="evaluation budget (default 200)")
    op.add_argument("--exhaustive", action="store_true", help="evaluate the whole grid instead")
    op.add_argument("--workers", type=_count, default=1, help="points run in parallel threads (default 1)")
    op.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key at every point")
    op.add_argument("--csv", metavar="OUT", help="also write the search trace as CSV (- for stdout)")
    op.set_defaults(func=cmd_optimize)
    ex = sub.add_parser("export", help="write the scenario's generated training step as a trace (Chakra ET)")
    ex.add_argument("scenario")
    ex.add_argument("--format", default="chakra", choices=["chakra"], help="trace format (default chakra)")
    ex.add_argument("--out", metavar="DIR", required=True, help="directory for <name>.<rank>.et and comm_group.json")
    ex.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key")
    ex.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    ex.set_defaults(func=cmd_export)
    ca = sub.add_parser("calibrate", help="fit the compute model to a profiled step's kernels and write a GPU file")
    ca.add_argument("trace", help="PyTorch profiler (Kineto) trace, .json or .json.gz")
    ca.add_argument("--out", required=True, metavar="GPU.json", help="the GPU file to write (for cluster.gpu_file)")
    ca.add_argument("--gpu", help="base catalog GPU (default: from the trace's device name)")
    ca.add_argument("--execution-trace", metavar="ET.json.gz", help="PyTorch execution trace of the same step")
    ca.add_argument("--json", action="store_true", help="print the GPU file's content as one JSON object")
    ca.set_defaults(func=cmd_calibrate)
    cp = sub.add_parser("compare", help="real nccl-tests logs beside the twin's prediction; localise a shortfall")
    cp.add_argument("scenario")
    cp.add_argument("--nccl-tests", nargs="+", metavar="LOG", help="nccl-tests output files")
    cp.add_argument("--step-log", metavar="FILE", help="per-rank step times (CSV/JSON rank,step,time_s or a "
                    "Megatron-LM log): slow ranks by the 10%%-over-median rule and against the twin's step")
    cp.add_argument("--no-twin", action="store_true", help="with --step-log: the median rule only, no simulation")
    cp.add_argument("--op", choices=["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"],
                    help="the collective, when the log does not print it")
    cp.add_argument("--nodes", type=_count, help="node count, when the log has no '#  Rank ... on HOST' lines")
    cp.add_argument("--threshold", type=float, default=0.10, help="flag sizes this far below the twin (default 0.10)")
    cp.add_argument("--csv", metavar="FILE", help="write every row (log, size, measured, twin, ratio, short)")
    cp.add_argument("--hosts", metavar="FILE", help="JSON object host name -> node index of the scenario, so that "
                                                     "switches are ranked too (default: the number a host name ends in)")
    cp.add_argument("--set", action="append", metavar="KEY=VALUE")
    cp.set_defaults(func=cmd_compare)
    im = sub.add_parser("import", help="a scenario from a Hugging Face config.json, a Megatron-LM argument list or "
                                        "a NeMo / Megatron-Bridge YAML")
    src = im.add_mutually_exclusive_group(required=True)
    src.add_argument("--hf", metavar="CONFIG_JSON", help="a Hugging Face config.json")
    src.add_argument("--megatron", metavar="ARGS", help="Megatron-LM pretrain_gpt.py arguments, quoted")
    src.add_argument("--megatron-file", metavar="FILE", help="a file of Megatron-LM arguments (a launch script's)")
    src.add_argument("--nemo", metavar="YAML", help="a NeMo 1.x / NeMo-Framework-Launcher training YAML or a dumped "
                                                     "Megatron-Bridge ConfigContainer YAML")
    im.add_argument("--base", metavar="SCENARIO", help="cluster and defaults from this scenario (default: 8 x 8 H100)")
    im.add_argument("--seq", type=_count, help="the training sequence length")
    im.add_argument("--out", metavar="FILE", help="write the scenario here instead of stdout")
    im.set_defaults(func=cmd_import)
    ac = sub.add_parser("accuracy", help="every validation set under tests/validation: published vs predicted, MAPE, baseline")
    ac.add_argument("--set", action="append", metavar="NAME", help="only this set (repeat); default all")
    ac.add_argument("--mode", default="analytical", choices=["analytical", "flow", "both"],
                    help="network.mode of every run; both: each computed row in both modes and their gap "
                         "(flow / analytical - 1; slow: every rank on the fabric)")
    ac.add_argument("--markdown", action="store_true", help="print markdown tables (for docs/accuracy.md)")
    ac.add_argument("--csv", metavar="OUT", help="write the rows as CSV (- for stdout)")
    ac.set_defaults(func=cmd_accuracy)
    v = sub.add_parser("validate", help="check a scenario without running it")
    v.add_argument("scenario")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.set_defaults(func=cmd_validate)
    s = sub.add_parser("schema", help="print the JSON Schema of scenarios (or --text: the key table)")
    s.add_argument("--text", action="store_true")
    s.set_defaults(func=cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        for name, value in args.limit:
            _core.set_input_limit(name, value)
        return args.func(args)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a path that cannot be read or written: one line, no traceback
        where = f"{e.filename}: " if e.filename else ""
        print(f"error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"error: --db: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"error: out of memory ({e or 'allocation failed'}); reduce the input or raise the machine's memory",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
