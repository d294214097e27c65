"""The cost estimator against measured runs (issue 20): for each run below, the estimate
(`clustertwin validate` prints the same) and the measured wall time (the whole CLI process,
as a user waits for it) and simulation events.

    /usr/bin/python3 tools/estimate_check.py [--quick]

--quick leaves out the 10,240-GPU flow step (about a minute). Prints a markdown table.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

RUNS = [
    # (label, command args after `clustertwin`, scenario, overrides for the estimate)
    ("10K step analytical + campaign", ["run", "scenarios/default.json", "--set", "network.mode=analytical"],
     "scenarios/default.json", {"network.mode": "analytical"}),
    ("10K step flow + campaign", ["run", "scenarios/default.json"], "scenarios/default.json", {}),
    ("1K step flow", ["run", "scenarios/default.json", "--set", "cluster.nodes=128",
                      "--set", "training_job.parallelism.data_parallel=15", "--set", "training_job.global_batch_size=960"],
     "scenarios/default.json", {"cluster.nodes": 128, "training_job.parallelism.data_parallel": 15,
                                "training_job.global_batch_size": 960}),
    ("packet step slice", ["run", "scenarios/packet-slice-step.yaml"], "scenarios/packet-slice-step.yaml", {}),
    ("packet incast traffic", ["run", "scenarios/ecn-tuning-incast.yaml"], "scenarios/ecn-tuning-incast.yaml", {}),
    ("packet PFC storm traffic", ["run", "scenarios/pfc-storm.yaml"], "scenarios/pfc-storm.yaml", {}),
    ("Kineto + ET trace replay", ["run", "scenarios/trace-kineto-h200.yaml"], "scenarios/trace-kineto-h200.yaml", {}),
    ("Chakra trace replay", ["run", "scenarios/trace-chakra-allreduce.yaml"], "scenarios/trace-chakra-allreduce.yaml", {}),
    ("sweep 8 points analytical", ["sweep", "scenarios/default.json", "--set", "network.mode=analytical",
                                   "--grid", "training_job.steps=1,2", "--grid", "training_job.runtime.recompute_granularity=selective,full",
                                   "--grid", "campaign.repeats=1,2", "--csv", "-"],
     "scenarios/default.json", {"network.mode": "analytical"}),
]


def main() -> int:
    from clustertwin import _core
    from clustertwin.api import load

    quick = "--quick" in sys.argv
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    print("| run | estimated events | measured events | estimated wall s | measured wall s | wall ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, args, scenario, overrides in RUNS:
        if quick and "10K step flow" in label:
            continue
        est = json.loads(_core.estimate(load(os.path.join(ROOT, scenario)).to_json(), json.dumps(overrides)))
        points = 8 if args[0] == "sweep" else 1
        json_args = ["--json"] if args[0] == "run" else []
        t0 = time.perf_counter()
        r = subprocess.run(["/usr/bin/python3", "-m", "clustertwin", *args, *json_args], cwd=ROOT, env=env,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"| {label} | failed: {r.stderr.strip().splitlines()[-1]} |")
            continue
        events = json.loads(r.stdout)["sim"]["events"] if args[0] == "run" else float("nan")
        est_wall = 0.25 + (est["wall_s"] - 0.25) * points if points > 1 else est["wall_s"]  # as cli._wall
        est_events = est["events"] * points
        print(f"| {label} | {est_events:.3g} | {events:.3g} | {est_wall:.3g} | {wall:.3g} | {est_wall / wall:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
