"""ClusterTwin: a discrete-event digital twin of GPU training clusters.

    import clustertwin as ct
    sc = ct.load("scenarios/default.json")
    r = ct.run(sc, overrides={"training_job.micro_batch_size": 2})
    r.report["mfu"]
    df = ct.sweep(sc, grid={"training_job.micro_batch_size": [1, 2]}, workers=2)

``ct.frames`` turns reports into long DataFrames and ``ct.plots`` draws runs and sweeps
(both import pandas / matplotlib on first use, so the CLI starts without them).
"""
import importlib

from .accuracy import accuracy
from .api import (InputLimitError, Result, Scenario, ScenarioError, calibrate, drill, estimate, export_chakra, layer_kernels,
                  limits, load,
                  load_trace,
                  run, schema, set_limit)
from .compare import compare_nccl_tests, nccl_tests
from .importers import ImportedScenario, from_hf_config, from_megatron_args, from_nemo_config
from .layouts import evaluate_layouts
from .metrics import write_openmetrics
from .optimize import optimize
from .planning import plan
from .sweep import sweep

__all__ = ["ImportedScenario", "InputLimitError", "Result", "Scenario", "ScenarioError", "accuracy", "calibrate", "compare_nccl_tests", "drill", "estimate", "evaluate_layouts", "export_chakra", "frames", "layer_kernels", "from_hf_config", "from_megatron_args", "from_nemo_config", "limits", "nccl_tests",
           "load", "load_trace", "optimize", "plan", "plots", "run", "schema", "set_limit", "sweep", "write_openmetrics"]


def __getattr__(name):
    if name in ("frames", "plots"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
