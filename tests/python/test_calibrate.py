"""`clustertwin calibrate` on the profiled GPT-1.42B H200 step, then scenarios that use the GPU
file through cluster.gpu_file; errors name the key and the file."""
import json
import os
import subprocess
import sys

import pytest

import clustertwin as ct

KINETO = "tests/data/traces/kineto/kineto_gpt1.3b_h200.json.gz"
ET = "tests/data/traces/kineto/pytorch_et_gpt1.3b_h200.json.gz"
CLI = [sys.executable, "-m", "clustertwin"]
CLI_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.path.abspath("python"),
                                                                      os.environ.get("PYTHONPATH")]))}


def gpt_on_one_h200(gpu_file=None):
    cluster = {"gpu": "H200-SXM", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1,
               "fabric": {"topology": "rail_optimized", "tiers": 2, "switch_radix": 8}}
    if gpu_file:
        cluster["gpu_file"] = gpu_file
    return ct.Scenario({
        "name": "h200-gpt1.4b", "cluster": cluster, "network": {"mode": "analytical"},
        "training_job": {"model": {"layers": 24, "hidden": 2048, "heads": 16, "seq_length": 2048, "vocab": 50304},
                         "global_batch_size": 8, "micro_batch_size": 8, "parallelism": {"zero_stage": 0},
                         "runtime": {"recompute_granularity": "none"}}})


@pytest.fixture(scope="module")
def gpu_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibrate") / "h200.json"
    run = subprocess.run(CLI + ["calibrate", KINETO, "--execution-trace", ET, "--out", str(out)],
                         capture_output=True, text=True, env=CLI_ENV)
    assert run.returncode == 0, run.stderr
    assert "base GPU   H200-SXM" in run.stdout and "gemm" in run.stdout
    assert "operators, by reason:" in run.stdout  # the skip reasons are always printed
    return out


def test_cli_writes_a_gpu_file_with_fit_errors(gpu_file):
    data = json.loads(gpu_file.read_text())
    assert data["format"] == "clustertwin-gpu" and data["version"] == 1 and data["base_gpu"] == "H200-SXM"
    fit = data["fit"]
    assert all(fit[f]["fitted"] for f in ("gemm", "attention_fwd", "attention_fwdbwd", "elementwise"))
    assert fit["gemm"]["samples"] >= 8 and fit["gemm"]["abs_rel_error_fit_set"]["mean"] < 0.03
    assert data["provenance"]["execution_trace"] == ET
    assert set(data["calibration"]) == {"gemm", "attention", "elementwise"}


def test_scenarios_use_the_gpu_file(gpu_file):
    builtin = ct.run(gpt_on_one_h200()).report["step_time_s"]
    fitted = ct.run(gpt_on_one_h200(str(gpu_file))).report["step_time_s"]
    assert fitted != builtin and 0.2 < fitted < 0.35
    trace = ct.run("scenarios/trace-kineto-h200.yaml", overrides={"cluster.gpu_file": str(gpu_file)}).report
    graph = trace["trace"]["execution_trace"]
    assert graph["compute_model"] == str(gpu_file)
    assert graph["ops_matched"] == 9749 and graph["filled_by_compute_model"] == 0
    shares = graph["shares"]
    assert abs(sum(shares.values()) - 1) < 1e-6 and shares["compute_bound"] > 0.5
    assert trace["step_time_s"] == pytest.approx(graph["modelled_step_s"], rel=1e-6)


def test_python_api_matches_the_cli(gpu_file, tmp_path):
    result = ct.calibrate(KINETO, out=tmp_path / "api.json", execution_trace=ET)
    assert result["calibration"] == json.loads(gpu_file.read_text())["calibration"]
    assert result["wall_s"] > 0 and (tmp_path / "api.json").exists()


def test_errors_name_the_key_and_file(gpu_file, tmp_path):
    bad = tmp_path / "v9.json"
    data = json.loads(gpu_file.read_text())
    data["version"] = 9
    bad.write_text(json.dumps(data))
    with pytest.raises(ct.ScenarioError, match=f"cluster.gpu_file: {bad}: version: got 9"):
        gpt_on_one_h200(str(bad)).validate()
    with pytest.raises(ct.ScenarioError, match="fitted on H200-SXM but cluster.gpu is H100-SXM"):
        gpt_on_one_h200(str(gpu_file)).validate({"cluster.gpu": "H100-SXM"})
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(open(KINETO, "rb").read()[:2000])
    run = subprocess.run(CLI + ["calibrate", str(cut), "--out", str(tmp_path / "x.json")],
                         capture_output=True, text=True, env=CLI_ENV)
    assert run.returncode == 2 and f"trace.path: {cut}: corrupt gzip stream" in run.stderr
    run = subprocess.run(CLI + ["calibrate", KINETO, "--gpu", "Z100", "--out", str(tmp_path / "x.json")],
                         capture_output=True, text=True, env=CLI_ENV)
    assert run.returncode == 2 and "--gpu: unknown GPU 'Z100'" in run.stderr


def _one_gemm_trace(path, dtype="float", device="NVIDIA H100 80GB HBM3"):
    """Ten aten::mm of 4096^3 with their launches and kernels (Kineto layout, record_shapes on)."""
    ev = []
    for i in range(10):
        t = 1000 * i
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": t, "dur": 20,
                   "args": {"External id": i + 1, "Record function id": 0,
                            "Input Dims": [[4096, 4096], [4096, 4096]], "Input type": [dtype, dtype]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 1, "ts": t + 5,
                   "dur": 3, "args": {"correlation": i + 1, "External id": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": t + 10, "dur": 400,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1, "External id": i + 1}})
    doc = {"deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85e9, "numSms": 132}],
           "traceEvents": ev}
    path.write_text(json.dumps(doc))
    return path


def test_calibrate_says_why_it_cannot_or_should_not(tmp_path):
    # fp32 GEMMs: said so, not "record_shapes off?"
    fp32 = _one_gemm_trace(tmp_path / "fp32.json")
    run = subprocess.run(CLI + ["calibrate", str(fp32), "--out", str(tmp_path / "x.json")],
                         capture_output=True, text=True, env=CLI_ENV)
    assert run.returncode == 2 and "10 GEMM operator(s) have fp32 operands" in run.stderr
    assert "record_shapes off" not in run.stderr
    # Another vendor's GPU is refused; another NVIDIA generation is a warning.
    amd = _one_gemm_trace(tmp_path / "amd.json", "c10::BFloat16", "AMD Instinct MI300X")
    run = subprocess.run(CLI + ["calibrate", str(amd), "--gpu", "H100-SXM", "--out", str(tmp_path / "x.json")],
                         capture_output=True, text=True, env=CLI_ENV)
    assert run.returncode == 2 and "ran on 'AMD Instinct MI300X' (AMD)" in run.stderr
    a100 = _one_gemm_trace(tmp_path / "a100.json", "c10::BFloat16", "NVIDIA A100-SXM4-80GB")
    run = subprocess.run(CLI + ["calibrate", str(a100), "--gpu", "H100-SXM", "--out", str(tmp_path / "x.json")],
                         capture_output=True, text=True, env=CLI_ENV)
    assert run.returncode == 0, run.stderr
    assert "warning    the trace's kernels ran on 'NVIDIA A100-SXM4-80GB' (A100-80GB)" in run.stderr
    assert json.loads((tmp_path / "x.json").read_text())["provenance"]["warnings"]
    # The skip reasons are always printed.
    assert "skipped    no operator" in run.stdout


def test_steady_state_under_the_power_limit_is_reported(gpu_file):
    # Built-in H200 fit: the step runs at its power-limited steady state, stated with its basis.
    builtin = ct.run(gpt_on_one_h200()).report
    assert 0.841 < builtin["compute"]["steady_ratio"] < 1.0
    assert any(a.startswith("steady state: GEMM and attention at") and "h200_sustained" in a
               for a in builtin["assumptions"])
    # A fit to a trace already holds that run's clock: no second derating, and the report says why.
    fitted = ct.run(gpt_on_one_h200(str(gpu_file))).report
    assert "compute" not in fitted and "gpu_file" in fitted["not_computed"]["compute.steady_ratio"]
    # A100 has no steady-state measurement: the per-kernel throttle stands in, and the report says so.
    a100 = gpt_on_one_h200()
    a100.data["cluster"]["gpu"] = "A100-80GB"
    a100.data["training_job"]["micro_batch_size"] = a100.data["training_job"]["global_batch_size"] = 2
    report = ct.run(a100).report
    assert "compute" not in report and "A100-80GB" in report["not_computed"]["compute.steady_ratio"]
