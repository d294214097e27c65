"""Traces in and out: ct.load_trace for the shipped Chakra and Kineto traces, and the export
command (Chakra ET of a generated training step) replayed back to the same step time."""
import json
import os
import subprocess
import sys

import pytest

import clustertwin as ct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAKRA = os.path.join(ROOT, "tests/data/traces/chakra")
KINETO = os.path.join(ROOT, "tests/data/traces/kineto")


def cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "clustertwin", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT)


def test_load_trace_chakra_directories_size_the_cluster():
    sc = ct.load_trace(os.path.join(CHAKRA, "all_reduce_8npus_1MB"))
    assert sc.data["trace"] == {"format": "chakra", "path": os.path.join(CHAKRA, "all_reduce_8npus_1MB")}
    assert sc.data["cluster"] == {"nodes": 1, "gpus_per_node": 8, "nics_per_node": 8}
    assert sc.data["name"] == "all_reduce_8npus_1MB"
    r = ct.run(sc).report
    assert r["trace"]["ranks"] == 8
    assert r["step_time_s"] > 0
    (coll,) = r["collectives"]
    assert (coll["op"], coll["group_size"], coll["bytes"]) == ("all_reduce", 8, 1 << 20)
    assert abs(coll["time_s"] - r["step_time_s"]) < 1e-12  # a lone collective is the whole step

    a2a = ct.load_trace(os.path.join(CHAKRA, "all_to_all_16npus_1MB"))
    assert a2a.data["cluster"]["nodes"] == 2
    r = ct.run(a2a).report
    assert r["trace"]["ranks"] == 16 and r["collectives"][0]["op"] == "all_to_all"
    assert r["ranks"]["simulated"] == 16


def test_load_trace_kineto_file_replays_the_profiled_step():
    with open(os.path.join(KINETO, "trace_meta.json")) as f:
        unprofiled = json.load(f)["unprofiled_step_s"]
    sc = ct.load_trace(os.path.join(KINETO, "kineto_gpt1.3b_h200.json.gz"))
    assert sc.data["trace"]["format"] == "kineto"
    assert sc.data["cluster"] == {"nodes": 1, "gpus_per_node": 1, "nics_per_node": 1}
    assert sc.data["name"] == "kineto_gpt1.3b_h200"
    r = ct.run(sc).report
    assert r["trace"]["ranks"] == 1
    # The replay keeps the trace's idle gaps: the profiled GPU span, within 7% of the
    # unprofiled step (the profiler slows the CPU-bound gaps; see models/trace/tests).
    assert abs(r["step_time_s"] - unprofiled) < 0.07 * unprofiled, (r["step_time_s"], unprofiled)
    # With its execution trace and a given cluster: the paths are stored absolute.
    h200 = {"gpu": "H200-SXM", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1}
    et = ct.load_trace(os.path.join("tests/data/traces/kineto", "kineto_gpt1.3b_h200.json.gz"), cluster=h200,
                       execution_trace="tests/data/traces/kineto/pytorch_et_gpt1.3b_h200.json.gz")
    assert et.data["cluster"] == h200
    assert et.data["trace"]["execution_trace"] == os.path.join(KINETO, "pytorch_et_gpt1.3b_h200.json.gz")
    et.validate()


def test_load_trace_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        ct.load_trace(tmp_path / "missing.json")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="cannot tell the format"):
        ct.load_trace(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="execution_trace goes with a Kineto trace"):
        ct.load_trace(os.path.join(CHAKRA, "all_reduce_8npus_1MB"), execution_trace="et.json")
    with pytest.raises(ValueError, match="no <name>.<rank>.et files"):
        ct.load_trace(tmp_path)
    with pytest.raises(ValueError, match="format 'onnx'"):
        ct.load_trace(tmp_path, format="onnx")


SMALL_JOB = {
    "name": "gpt-small-export",
    "seed": 3,
    "cluster": {"nodes": 2},
    "network": {"mode": "flow"},
    "training_job": {"model": {"layers": 8, "hidden": 2048, "heads": 16, "seq_length": 2048, "vocab": 32000},
                     "global_batch_size": 16, "steps": 2,
                     "parallelism": {"tensor_parallel": 2, "pipeline_parallel": 2, "data_parallel": 4,
                                     "zero_stage": 1}},
}


def test_export_cli_round_trip_reproduces_the_step_time(tmp_path):
    scenario = tmp_path / "small.json"
    scenario.write_text(json.dumps(SMALL_JOB))
    out = tmp_path / "et"
    done = cli("export", str(scenario), "--format", "chakra", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ranks"] == 16 and summary["steps"] == 2
    assert summary["sends"] == summary["recvs"] > 0 and summary["collectives"] > 0
    assert sorted(os.listdir(out)) == sorted(["comm_group.json"] + [f"gpt-small-export.{r}.et" for r in range(16)])
    groups = json.loads((out / "comm_group.json").read_text())
    assert sorted(len(v) for v in groups.values()) == [4] * 4  # the DP groups of TP 2 x PP 2

    original = ct.run(ct.Scenario(SMALL_JOB)).report
    replay_sc = ct.load_trace(out, cluster=SMALL_JOB["cluster"])
    replay_sc = replay_sc.with_overrides({"network.mode": "flow", "seed": SMALL_JOB["seed"]})
    replayed = ct.run(replay_sc).report
    assert replayed["trace"]["ranks"] == 16
    # The exported program is the simulated step; the expected straggler wait is added on top
    # of training_job runs only (a replay keeps the traced ranks' own timing).
    simulated = original["step_time_s"] - original["breakdown"]["straggler_s"]
    assert original["breakdown"]["straggler_s"] > 0
    assert abs(replayed["step_time_s"] - simulated) <= 1e-12 * simulated, (replayed["step_time_s"], simulated)
    by_gpu = {row["gpu"]: row["step_time_s"] for row in original["tables"]["ranks"]}
    for row in replayed["tables"]["ranks"]:
        assert abs(row["step_time_s"] - by_gpu[row["gpu"]]) <= 1e-12 * original["step_time_s"]

    # The human-readable summary, and a second export into the same directory is refused.
    again = cli("export", str(scenario), "--out", str(out))
    assert again.returncode == 2 and "already holds .et files" in again.stderr
    text = cli("export", str(scenario), "--out", str(tmp_path / "et2"), "--set", "training_job.steps=1")
    assert text.returncode == 0, text.stderr
    assert "wrote 16 Chakra ET files (1 steps" in text.stdout and "--comm-group-configuration=" in text.stdout


def test_export_api_overrides_and_errors(tmp_path):
    summary = ct.export_chakra(ct.Scenario(SMALL_JOB), tmp_path / "one", overrides={"training_job.steps": 1})
    assert summary["steps"] == 1 and summary["ranks"] == 16
    assert summary["bytes"] == sum(os.path.getsize(f) for f in summary["files"])
    one_step = ct.run(ct.load_trace(tmp_path / "one", cluster=SMALL_JOB["cluster"]).with_overrides(
        {"seed": SMALL_JOB["seed"]})).report
    original = ct.run(ct.Scenario(SMALL_JOB), overrides={"training_job.steps": 1}).report
    simulated = original["step_time_s"] - original["breakdown"]["straggler_s"]
    assert abs(one_step["step_time_s"] - simulated) <= 1e-12 * simulated
    with pytest.raises(ct.ScenarioError, match="no training_job"):
        ct.export_chakra({"cluster": {"nodes": 2}, "traffic": {"pattern": "incast"}}, tmp_path / "t")


def test_what_if_replays_the_recorded_h200_step_on_other_gpus():
    def run(gpu):
        return ct.run("scenarios/trace-kineto-h200.yaml",
                      overrides={"cluster.gpu": gpu, "trace.recorded_gpu": "H200-SXM"}).report

    same = run("H200-SXM")
    assert "what_if" not in same["trace"]
    h100, b200 = run("H100-SXM"), run("B200")
    for r in (h100, b200):
        w = r["trace"]["what_if"]
        assert w["step_time_recorded_gpu_s"] == pytest.approx(same["step_time_s"], rel=1e-9)
        assert w["step_time_replay_gpu_s"] == pytest.approx(r["step_time_s"])
        assert r["trace"]["execution_trace"]["what_if_model_scaled"] > 1000
    # H100: less HBM bandwidth and the same tensor-core peak -> slower; B200 faster, but the
    # step's CPU-launch-bound part does not shrink, so far less than its 2.3x peak ratio.
    assert h100["trace"]["what_if"]["speedup"] < 1.0
    assert 1.0 < b200["trace"]["what_if"]["speedup"] < 1.5
    with pytest.raises(ct.ScenarioError, match=r"trace\.recorded_gpu"):
        ct.run("scenarios/trace-kineto-h200.yaml", overrides={"cluster.gpu": "H100-SXM", "trace.recorded_gpu": "Z100"})


def test_what_if_scales_the_recorded_batch():
    def run(scale):
        return ct.run("scenarios/trace-kineto-h200.yaml", overrides={"trace.batch_scale": scale}).report

    base, double, half = run(1.0), run(2.0), run(0.5)
    et = double["trace"]["execution_trace"]
    assert (et["recorded_batch"], et["recorded_seq"]) == (8, 2048)  # the trace's micro-batch 8 x 2048
    assert et["batch_scaled_ops"] > 500
    # Twice the batch: GPU work about doubles and the launch-bound idle time disappears.
    assert 1.5 * base["step_time_s"] < double["step_time_s"] < 2.1 * base["step_time_s"]
    assert et["compute_bound_s"] == pytest.approx(2 * base["trace"]["execution_trace"]["compute_bound_s"], rel=0.1)
    # Half the batch: the CPU launches do not shrink, so the step shrinks far less than half.
    assert 0.6 * base["step_time_s"] < half["step_time_s"] < base["step_time_s"]
    with pytest.raises(ct.ScenarioError, match=r"trace\.batch_scale"):
        ct.run("scenarios/trace-chakra-allreduce.yaml", overrides={"trace.batch_scale": 2.0})


def test_profiler_overhead_per_operator_is_estimated_given_or_kept():
    with open(os.path.join(KINETO, "trace_meta.json")) as f:
        unprofiled = json.load(f)["unprofiled_step_s"]

    def run(value):
        return ct.run("scenarios/trace-kineto-h200.yaml", overrides={"trace.profiler_overhead": value}).report

    auto, none, given = run("auto"), run("none"), run("5us")
    est = auto["trace"]["execution_trace"]["profiler_op_overhead"]
    assert est["source"] == "estimated" and est["samples"] > 1000 and 2e-6 < est["per_op_s"] < 20e-6
    assert given["trace"]["execution_trace"]["profiler_op_overhead"] == {
        "per_op_s": pytest.approx(5e-6), "source": "given", "samples": est["samples"]}
    # The target: the replay within 5% of the step measured without the profiler.
    assert abs(auto["step_time_s"] - unprofiled) < 0.05 * unprofiled, (auto["step_time_s"], unprofiled)
    # Less profiler time removed, a longer (launch-bound) step.
    assert none["step_time_s"] > given["step_time_s"] > auto["step_time_s"]
    for bad in ("fast", "-1us", "2ms"):
        with pytest.raises(ct.ScenarioError, match=r"trace\.profiler_overhead: got '" + bad):
            run(bad)
    with pytest.raises(ct.ScenarioError, match=r"trace\.profiler_overhead"):
        ct.run("scenarios/trace-chakra-allreduce.yaml", overrides={"trace.profiler_overhead": "none"})


def _rank_trace(rank, world, nelems):
    """One rank of a data-parallel step (us): a GEMM [0, 200], the gradient all-reduce after it
    (measured [200, 700]), an optimizer kernel [705, 755] that waits for it."""
    def launch(corr, ts):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 3,
                "args": {"correlation": corr}}

    def kernel(corr, name, ts, dur, stream=7, **extra):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": stream, "correlation": corr, **extra}}

    nccl = {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": nelems, "Out msg nelems": nelems,
            "Group size": world, "Process Group Name": "0",
            "Process Group Ranks": "[" + ", ".join(str(r) for r in range(world)) + "]"}
    events = [launch(1, -20), kernel(1, "gemm", 0, 200), launch(2, 5),
              kernel(2, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 200, 500, stream=20, **nccl),
              launch(3, 600), kernel(3, "multi_tensor_apply_kernel", 705, 50)]
    return {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world}, "traceEvents": events}


def test_multi_rank_kineto_replays_nccl_kernels_as_collectives_on_the_fabric(tmp_path):
    world, nelems = 8, 64 << 20  # 128 MiB of bf16 gradients
    for rank in range(world):
        with open(tmp_path / f"host_{rank}.pt.trace.json", "w") as f:
            json.dump(_rank_trace(rank, world, nelems), f)
    sc = ct.load_trace(tmp_path)
    assert sc.data["trace"]["format"] == "kineto"
    assert sc.data["cluster"] == {"nodes": 1, "gpus_per_node": 8, "nics_per_node": 8}
    one_node = ct.run(sc).report
    kr = one_node["trace"]["kineto_ranks"]
    assert (kr["collectives"], kr["nccl_kernels"], kr["compute_waits_on_collectives"]) == (1, world, world)
    assert kr["measured_step_s"] == pytest.approx(755e-6)
    assert kr["measured_nccl_s_per_rank"] == pytest.approx(500e-6)
    (coll,) = one_node["collectives"]
    assert (coll["op"], coll["group_size"], coll["bytes"]) == ("all_reduce", world, 2 * nelems)
    # The step is the GEMM, the simulated all-reduce, the 5 us CPU gap and the optimizer kernel.
    assert one_node["step_time_s"] == pytest.approx(200e-6 + coll["time_s"] + 5e-6 + 50e-6, rel=1e-6)
    # The same recorded step with its ranks spread over two nodes: the all-reduce crosses the
    # RDMA fabric (NICs far slower than NVLink), so the step is longer.
    two_nodes = ct.run(ct.load_trace(tmp_path, cluster={"nodes": 2, "gpus_per_node": 4, "nics_per_node": 4})).report
    assert two_nodes["collectives"][0]["time_s"] > coll["time_s"]
    assert two_nodes["step_time_s"] > one_node["step_time_s"]
    with pytest.raises(ValueError, match="execution_trace goes with a single Kineto file"):
        ct.load_trace(tmp_path, execution_trace=os.path.join(KINETO, "pytorch_et_gpt1.3b_h200.json.gz"))
    with pytest.raises(ct.ScenarioError, match=r"trace\.execution_trace"):
        ct.run(sc, overrides={"trace.execution_trace": os.path.join(KINETO, "pytorch_et_gpt1.3b_h200.json.gz")})


def _two_step_kineto(path):
    """ProfilerStep#1 launches a 130 us kernel, #2 a 40 us one; #3 launches nothing."""
    ev = []
    for n, (b, e) in enumerate([(0, 100), (100, 200), (200, 300)], start=1):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 0, "tid": 1, "ts": b, "dur": e - b})
    for corr, (launch, ts, dur) in enumerate([(10, 20, 130), (102, 150, 40)], start=1):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 1, "ts": launch,
                   "dur": 1, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_trace_step_chooses_the_profiler_step(tmp_path):
    sc = ct.load_trace(_two_step_kineto(tmp_path / "steps.json"))
    last = ct.run(sc).report
    assert last["trace"]["kineto"]["profiler_step"] == 2
    assert last["trace"]["kineto"]["profiler_steps_without_gpu_work"] == 1
    assert abs(last["step_time_s"] - 40e-6) < 1e-12
    first = ct.run(sc.with_overrides({"trace.step": 1})).report
    assert first["trace"]["kineto"]["profiler_step"] == 1 and abs(first["step_time_s"] - 130e-6) < 1e-12
    with pytest.raises(ct.ScenarioError, match=r"trace.step 3 is not a ProfilerStep with GPU work; the trace's "
                                               r"ProfilerSteps: 1, 2, 3 \(no GPU work\)"):
        ct.run(sc.with_overrides({"trace.step": 3}))
    with pytest.raises(ct.ScenarioError, match="trace.step: got 1, expected -1"):
        ct.run(ct.load_trace("tests/data/traces/chakra/all_reduce_8npus_1MB").with_overrides({"trace.step": 1}))


WILD = "tests/data/traces/wild/"


def test_public_traces_of_older_pytorch(tmp_path):
    """HolisticTraceAnalysis' test traces: an execution trace in the flat schema 1.0.1 layout
    with a Kineto trace that has no "Record function id" (matched by External id), and a
    profile whose last step starts with a prefetch copy (the period, not the time since it)."""
    r = ct.run(ct.load_trace(WILD + "benchmark_simple_add_trace.json.gz",
                             execution_trace=WILD + "benchmark_simple_add_et.json.gz")).report
    et = r["trace"]["execution_trace"]
    assert et["et_nodes"] == 38 and et["ops_matched"] == 36
    # 19.6 s of CUDA initialisation inside the first aten::rand: the profile is host time.
    assert 19.5 < r["step_time_s"] < 20.0
    q = ct.run(ct.load_trace(WILD + "hta_negative_queue_rank0.json.gz")).report
    k = q["trace"]["kineto"]
    assert k["profiler_step"] == 554 and k["profiler_steps"] == 5
    assert 0.210 < q["step_time_s"] < 0.217  # the trace's own step period (last GPU ends 212-217 ms apart)
    assert k["before_step_s"] > 0 and any("GPU was busy" in w for w in k["warnings"])


def test_text_output_names_the_step_and_each_warning_once(tmp_path):
    scenario = tmp_path / "wild.json"
    scenario.write_text(json.dumps({"trace": {"format": "kineto",
                                              "path": os.path.abspath(WILD + "hta_negative_queue_rank0.json.gz")},
                                    "cluster": {"nodes": 1}}))
    done = cli("run", str(scenario))
    assert done.returncode == 0, done.stderr
    assert "trace      ProfilerStep#554: measured 0.2125" in done.stdout
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning ")]
    assert len(warnings) == 2 and len(set(warnings)) == 2, warnings


def test_files_that_are_not_kineto_traces_are_named_for_what_they_are():
    seeds = os.path.join(os.path.dirname(__file__), "..", "fuzz", "trace-seeds")
    with pytest.raises(ValueError, match=r"a PyTorch execution trace \(schema 1.0.1\), not a Kineto trace.*"
                                         r"execution_trace"):
        ct.run(ct.load_trace(os.path.join(seeds, "pytorch-et-alone.json")))
    with pytest.raises(ValueError, match=r"a Chakra JSON dump \(chakra_jsonizer output.*\.et protobuf"):
        ct.run(ct.load_trace(os.path.join(seeds, "chakra-json-dump.json")))
