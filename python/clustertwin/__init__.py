"""ClusterTwin: a discrete-event digital twin of GPU training clusters.

    import clustertwin as ct
    sc = ct.load("scenarios/default.json")
    r = ct.run(sc, overrides={"training_job.micro_batch_size": 2})
    r.report["mfu"]
"""
from .api import Result, Scenario, ScenarioError, load, run, schema

__all__ = ["Result", "Scenario", "ScenarioError", "load", "run", "schema"]
