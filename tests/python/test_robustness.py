"""Hostile and huge inputs (issue 20): each runs the real CLI in a subprocess under a hard memory
cap (2 GiB of address space) and a time cap, and must end with exit code 2 and a one-line
error naming the input, the limit or the flag -- no traceback, no core dump, no hang -- and
must leave files that existed before unchanged."""
from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON = "/usr/bin/python3"
MEMORY_CAP = 2 << 30
TIME_CAP_S = 120


def _caps() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def cli(*args: str, cwd: str = ROOT, capped: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "OMP_NUM_THREADS": "1"}
    return subprocess.run([PYTHON, "-m", "clustertwin", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIME_CAP_S, preexec_fn=_caps if capped else None)


def refused(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit code 2, every fragment in stderr, and no traceback or crash."""
    err = result.stderr
    assert result.returncode == 2, (result.returncode, err[-2000:])
    assert "Traceback" not in err and "core dumped" not in err, err[-2000:]
    for f in fragments:
        assert f in err, (f, err[-2000:])
    return err


def small_scenario(**extra) -> dict:
    return {"name": "small", "cluster": {"gpu": "H100-SXM", "nodes": 1, "gpus_per_node": 8},
            "network": {"mode": "analytical"},
            "training_job": {"model": {"layers": 4, "hidden": 1024, "heads": 8, "seq_length": 1024, "vocab": 32000},
                             "parallelism": {"tensor_parallel": 8}, "micro_batch_size": 1, "global_batch_size": 8,
                             "steps": 1}, **extra}


def write(path, doc) -> str:
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


# ---- input limits -------------------------------------------------------------------------

def test_yaml_alias_bomb_stops_at_the_node_limit(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = write(tmp_path / "laughs.yaml", "\n".join(lines) + "\n")  # 10^9 nodes expanded
    assert os.path.getsize(path) < 2048
    refused(cli("validate", path), "document: 1000001 nodes or more, above the yaml_nodes limit of 1000000",
            "--limit yaml_nodes=N")
    refused(cli("run", path), "yaml_nodes limit")


def test_endless_scenario_stream_stops_at_the_byte_limit():
    refused(cli("validate", "/dev/zero"), "scenario file '/dev/zero':", "above the scenario_bytes limit of 16777216")


def test_endless_gpu_file_stops_at_the_byte_limit(tmp_path):
    sc = small_scenario()
    sc["cluster"]["gpu_file"] = "/dev/zero"
    refused(cli("run", write(tmp_path / "s.json", sc), "--limit", "input_file_bytes=8MiB"),
            "cluster.gpu_file: /dev/zero:", "above the input_file_bytes limit of 8388608")


def _trace_scenario(tmp_path, path: str) -> str:
    return write(tmp_path / "trace.json", {
        "name": "t", "cluster": {"gpu": "H100-SXM", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1},
        "network": {"mode": "analytical"}, "trace": {"format": "kineto", "path": path}})


def test_endless_trace_stream_stops_at_the_byte_limit(tmp_path):
    refused(cli("run", _trace_scenario(tmp_path, "/dev/zero"), "--limit", "trace_bytes=32MiB"),
            "trace.path: /dev/zero:", "above the trace_bytes limit of 33554432", "--limit trace_bytes=N")


def test_gzip_bomb_is_inflated_only_up_to_the_limit(tmp_path):
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as f:  # 64 MiB of spaces compress to about 64 KiB
        chunk = b" " * (1 << 20)
        for _ in range(64):
            f.write(chunk)
    assert os.path.getsize(bomb) < 1 << 20
    refused(cli("run", _trace_scenario(tmp_path, str(bomb)), "--limit", "trace_bytes=16MiB"),
            f"{bomb} (inflated):", "or more, above the trace_bytes limit of 16777216")


def test_trace_event_count_is_bounded(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(2000)]
    path = write(tmp_path / "many.json", {"traceEvents": events})
    refused(cli("run", _trace_scenario(tmp_path, path), "--limit", "trace_events=1000"),
            "1001 events or more, above the trace_events limit of 1000")


def test_limits_are_listed_and_settable_from_python():
    import clustertwin as ct

    table = ct.limits()
    assert set(table) == {"scenario_bytes", "scenario_nesting", "yaml_nodes", "input_file_bytes", "trace_bytes",
                          "trace_events", "trace_ranks"}
    before = table["trace_events"]["value"]
    try:
        ct.set_limit("trace_events", 5)
        assert ct.limits()["trace_events"]["value"] == 5
    finally:
        ct.set_limit("trace_events", before)
    with pytest.raises(ValueError, match="unknown input limit 'nope'"):
        ct.set_limit("nope", 1)
    with pytest.raises(ValueError, match="expected a whole number >= 1"):
        ct.set_limit("trace_events", 0)


def test_bad_limit_flags_are_refused(tmp_path):
    path = write(tmp_path / "s.json", small_scenario())
    refused(cli("validate", path, "--limit", "nope=3"), "unknown limit 'nope'")
    refused(cli("validate", path, "--limit", "trace_bytes=0"), "expected a whole number >= 1")
    refused(cli("validate", path, "--limit", "trace_bytes"), "expected NAME=VALUE")


# ---- numbers and keys ---------------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ('{"name": "a", "cluster": {"nodes": NaN}}', "cluster.nodes: not valid JSON"),
    ('{"name": "a", "cluster": {"nodes": Infinity}}', "cluster.nodes: not valid JSON"),
    ('{"name": "a", "cluster": {"nodes": 1e400}}', "cluster.nodes: a number beyond the range of a double"),
    ('{"name": "a", "name": "b"}', "name: given twice"),
])
def test_bad_numbers_and_duplicate_keys_in_json_name_the_key(tmp_path, text, fragment):
    refused(cli("validate", write(tmp_path / "s.json", text)), fragment)


def test_duplicate_keys_and_overflow_in_yaml_name_the_key(tmp_path):
    refused(cli("validate", write(tmp_path / "d.yaml", "name: a\ncluster:\n  nodes: 2\n  nodes: 3\n")),
            "cluster.nodes: given twice (line 4)")
    refused(cli("validate", write(tmp_path / "o.yaml", "name: a\ncluster:\n  nodes: 1e400\n")),
            "cluster.nodes: 1e400 is beyond the range of a number")


def test_nan_in_an_override_names_the_key(tmp_path):
    path = write(tmp_path / "s.json", small_scenario())
    refused(cli("validate", path, "--set", "training_job.micro_batch_size=NaN"), "training_job.micro_batch_size")


# ---- CLI paths and counts -----------------------------------------------------------------

@pytest.mark.parametrize("flag", ["0", "-3", "1.5", "many"])
def test_worker_counts_below_one_are_refused(tmp_path, flag):
    path = write(tmp_path / "s.json", small_scenario())
    refused(cli("sweep", path, "--grid", "training_job.micro_batch_size=1", "--workers", flag),
            "argument --workers:", "expected a whole number >= 1")


def test_count_flags_reject_values_below_one(tmp_path):
    path = write(tmp_path / "s.json", small_scenario())
    refused(cli("sweep", path, "--grid", "training_job.micro_batch_size=1,2", "--samples", "0"), "argument --samples:")
    refused(cli("optimize", path, "--axis", "training_job.micro_batch_size=1,2", "--max-evals", "0"),
            "argument --max-evals:")
    refused(cli("nccl-tests", path, "--nodes", "2,0"), "--nodes 2,0:")


def test_python_api_rejects_worker_counts_below_one(tmp_path):
    import clustertwin as ct

    with pytest.raises(ValueError, match="workers=0"):
        ct.sweep(small_scenario(), {"training_job.micro_batch_size": [1]}, workers=0)


def test_unwritable_outputs_fail_before_running_and_leave_files_unchanged(tmp_path):
    path = write(tmp_path / "s.json", small_scenario())
    grid = ("--grid", "training_job.micro_batch_size=1")
    refused(cli("sweep", path, *grid, "--db", str(tmp_path / "missing" / "x.db")), "--db", "does not exist")
    refused(cli("sweep", path, *grid, "--csv", str(tmp_path)), "--csv", "is a directory")
    refused(cli("sweep", path, *grid, "--csv", str(tmp_path / "missing" / "x.csv")), "--csv", "does not exist")
    afile = write(tmp_path / "plain.txt", "keep me\n")
    refused(cli("run", path, "--out", afile), "--out", "is not a directory")
    notdb = write(tmp_path / "notdb.db", "not a database, keep me\n")
    refused(cli("sweep", path, *grid, "--db", notdb), "--db")
    with open(notdb) as f:
        assert f.read() == "not a database, keep me\n"
    with open(afile) as f:
        assert f.read() == "keep me\n"


def test_missing_and_unreadable_scenarios_are_one_line_errors(tmp_path):
    refused(cli("run", str(tmp_path / "nope.json")), "nope.json")
    refused(cli("run", str(tmp_path)), "is a directory")


# ---- several processes on one database ----------------------------------------------------

def test_two_sweeps_started_together_share_a_new_database(tmp_path):
    path = write(tmp_path / "s.json", small_scenario())
    db = str(tmp_path / "shared.db")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    procs = [subprocess.Popen([PYTHON, "-m", "clustertwin", "sweep", path, "--grid", f"training_job.micro_batch_size={mb}",
                               "--grid", "training_job.parallelism.tensor_parallel=2,4,8", "--db", db, "--csv", "-"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for mb in (1, 2)]
    outs = [p.communicate(timeout=TIME_CAP_S) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM sweep").fetchone()
        assert rows == (6, 6)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# ---- nothing listens beyond the machine ---------------------------------------------------

def test_local_dask_cluster_listens_on_loopback_only():
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("distributed")
    from clustertwin.sweep_dask import _client

    me = psutil.Process()
    with _client(None, 1):
        deadline = time.time() + 30
        listening = []
        while time.time() < deadline:
            listening = [(proc.pid, c.laddr) for proc in [me, *me.children(recursive=True)]
                         for c in proc.connections(kind="inet") if c.status == psutil.CONN_LISTEN]
            if len({pid for pid, _ in listening}) >= 2:  # the scheduler here and the worker process
                break
            time.sleep(0.5)
    assert len(listening) >= 2, listening
    outside = [(pid, a) for pid, a in listening if a.ip not in ("127.0.0.1", "::1")]
    assert not outside, f"listening beyond loopback: {outside}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


# ---- validate answers what run answers ----------------------------------------------------

PRE_RUN_ERRORS = [
    # (scenario file, overrides, fragment of the error both must give)
    ("scenarios/default.json", ["campaign.duration=1e9d"], "campaign.duration: got 86400000000000"),
    ("scenarios/default.json", ["training_job.parallelism.tensor_parallel=7"], "tensor_parallel = 7 must divide"),
    ("scenarios/default.json", ["training_job.steps=1000"], "training_job.steps: got 1000"),
    ("scenarios/default.json", ["cluster.nvlink_domain=12"], "cluster.nvlink_domain: got 12"),
    ("scenarios/trace-kineto-h200.yaml", ["trace.profiler_overhead=5s"], "trace.profiler_overhead: got '5s'"),
    ("scenarios/trace-kineto-h200.yaml", ["trace.recorded_gpu=Z100"], "trace.recorded_gpu:"),
    ("scenarios/trace-chakra-allreduce.yaml", ["trace.recorded_gpu=H100-SXM"], "trace.recorded_gpu: got 'H100-SXM'"),
    ("scenarios/trace-chakra-allreduce.yaml", ["trace.path=/nonexistent/dir"], "trace.path: '/nonexistent/dir' does not exist"),
]


@pytest.mark.parametrize("scenario, overrides, fragment", PRE_RUN_ERRORS)
def test_validate_refuses_what_run_refuses_before_simulating(scenario, overrides, fragment):
    sets = [a for o in overrides for a in ("--set", o)]
    v = refused(cli("validate", scenario, *sets), fragment)
    r = refused(cli("run", scenario, *sets, "--set", "network.mode=analytical", "--set", "campaign.repeats=1"), fragment)
    assert v.splitlines()[:2] == r.splitlines()[:2]


def test_every_problem_is_named_in_one_pass():
    err = refused(cli("validate", "scenarios/default.json", "--set", "cluster.bogus=1",
                      "--set", "training_job.parallelism.tensor_parallel=7"))
    assert "cluster.bogus: unknown key" in err
    assert "tensor_parallel = 7 must divide" in err


# ---- the cost estimate, its refusals and progress -----------------------------------------

def _events(args: list[str]) -> float:
    r = cli("run", *args, "--json", "--quiet", capped=False)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)["sim"]["events"]


@pytest.mark.parametrize("args", [
    ["scenarios/packet-slice-step.yaml", "--set", "training_job.steps=1"],
    ["scenarios/ecn-tuning-incast.yaml"],
    ["scenarios/default.json", "--set", "network.mode=analytical"],
    ["scenarios/default.json", "--set", "cluster.nodes=16", "--set", "training_job.parallelism.data_parallel=1",
     "--set", "training_job.global_batch_size=64", "--set", "training_job.steps=1"],
])
def test_estimate_is_within_a_factor_two_of_the_events_run(args):
    """Events are deterministic, so the estimate's error on them is a fair test (wall time is
    not asserted: machines differ; tools/estimate_check.py measures it)."""
    import clustertwin as ct

    scenario, sets = args[0], args[1:]
    overrides = {}
    for i in range(0, len(sets), 2):
        key, raw = sets[i + 1].split("=", 1)
        overrides[key] = json.loads(raw) if raw[0].isdigit() else raw
    est = ct.estimate(os.path.join(ROOT, scenario), overrides)
    assert set(est) == {"events", "memory_bytes", "wall_s", "basis"}
    measured = _events(args)
    assert 0.5 < est["events"] / measured < 2.0, (est, measured)


def test_runs_estimated_too_long_are_refused_before_any_work():
    t0 = time.perf_counter()
    err = refused(cli("run", "scenarios/default.json", "--set", "training_job.steps=100",
                      "--set", "network.mode=packet"), "above the 3600 s limit; pass --force")
    assert "estimate: about" in err
    refused(cli("sweep", "scenarios/default.json", "--random", "training_job.micro_batch_size=choice:1,2",
                "--samples", "1000000000"), "1000000000 points x", "above the 3600 s limit")
    assert time.perf_counter() - t0 < TIME_CAP_S


def test_packet_permutation_on_ten_thousand_gpus_is_refused(tmp_path):
    """Issue 20: this run would take hours (measured about 31 h) and used to start silently."""
    with open(os.path.join(ROOT, "scenarios", "default.json")) as f:
        sc = json.load(f)
    del sc["training_job"]
    sc["network"]["mode"] = "packet"
    sc["traffic"] = {"pattern": "permutation", "size": "64MiB"}
    refused(cli("run", write(tmp_path / "perm.json", sc)), "10240 flows, 167772160 packets", "above the 3600 s limit")


def test_validate_prints_the_estimate():
    r = cli("validate", "scenarios/default.json")
    assert r.returncode == 0
    # The default folds its rails in flow mode (network.fold_rails auto): one rank per TP group.
    assert "estimate: about" in r.stdout and "instructions on one rank per tensor-parallel group" in r.stdout
    r = cli("validate", "scenarios/default.json", "--set", "network.fold_rails=no")
    assert r.returncode == 0 and "instructions on every rank" in r.stdout


def test_progress_lines_report_rate_and_time_left(tmp_path):
    code = ("import json, clustertwin as ct; from clustertwin import _core; _core.progress_start(2e6, 0.0);"
            "r = ct.run('scenarios/packet-slice-step.yaml', {'training_job.steps': 1}); _core.progress_stop()")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    r = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIME_CAP_S)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("progress: ")]
    assert lines and "events/s" in lines[0], r.stderr
    assert "about" in lines[0] and "left" in lines[0], lines[0]
    assert lines[-1].startswith("progress: done,"), lines[-1]


def test_progress_counts_the_reliability_campaigns(tmp_path):
    """The failure campaigns (Monte Carlo, no Simulation of their own) report to the progress
    line too: the last line counts more events than the step simulated."""
    code = ("import json, clustertwin as ct; from clustertwin import _core;"
            "over = {'network.mode': 'analytical', 'campaign.repeats': 64, 'campaign.duration': '720h'};"
            "est = json.loads(_core.estimate(ct.load('scenarios/default.json').to_json(), json.dumps(over)));"
            "_core.progress_start(est['events'], 0.0);"
            "r = ct.run('scenarios/default.json', over); _core.progress_stop();"
            "print(r.report['sim']['events'])")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    r = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIME_CAP_S)
    assert r.returncode == 0, r.stderr
    step_events = int(r.stdout.split()[-1])
    lines = [l for l in r.stderr.splitlines() if l.startswith("progress: ")]
    assert lines[-1].startswith("progress: done,"), r.stderr
    done = float(lines[-1].split(",")[1].split()[0])
    assert done > 10 * step_events  # the campaigns' checkpoint and failure events
