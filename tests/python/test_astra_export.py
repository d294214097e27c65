"""Chakra export against ASTRA-sim's rules, checked with an independent reader and interpreter
(tests/python/astra_semantics.py; ASTRA-sim itself is not installed here).

For each layout the export must (1) follow the rules ASTRA-sim needs to run it to the end: no
self sends, no collective on a one-rank communicator, comm_size in ASTRA-sim's convention and a
multiple of every preferred-dataset-splits value up to 64; (2) encode exactly the schedule the
twin simulated: interpreted with the twin's own operation durations and without ASTRA-sim's
one-communication-per-GPU rule, the step ends when the twin's does; (3) run to the end under
ASTRA-sim's rules, where the difference from the twin is that rule alone (docs/chakra-export.md
lists the figures).
"""
import collections
import copy
import json
import math

import pytest

import astra_semantics as A
import clustertwin as ct

BASE = {
    "name": "astra", "seed": 3, "cluster": {"nodes": 2}, "network": {"mode": "flow"},
    "training_job": {"model": {"layers": 8, "hidden": 2048, "heads": 16, "seq_length": 2048, "vocab": 32000},
                     "global_batch_size": 16, "steps": 1,
                     "parallelism": {"tensor_parallel": 2, "pipeline_parallel": 2, "data_parallel": 4,
                                     "zero_stage": 1}},
}


def layout(runtime=None, **par):
    sc = copy.deepcopy(BASE)
    sc["training_job"]["parallelism"].update(par)
    if runtime:
        sc["training_job"]["runtime"] = runtime
    return sc


# label -> (scenario, whether the twin ever runs two communications at once on a GPU)
LAYOUTS = {
    "tp2-pp2-dp4-zero1": (layout(), True),
    "pp1-vp2-dp8 (was: self sends)": (layout(pipeline_parallel=1, virtual_pipeline=2, data_parallel=8), False),
    "tp8-pp2-dp1 (was: one-rank collectives)": (layout(tensor_parallel=8, data_parallel=1), False),
    "tp2-pp4-vp2-dp2": (layout(pipeline_parallel=4, virtual_pipeline=2, data_parallel=2), True),
    "dp8-zero3 (two collective streams)": (layout(pipeline_parallel=1, data_parallel=8, zero_stage=3), True),
    "no overlap": (layout(runtime={"overlap_grad_reduce": False}), False),
}


def step_end(times, ranks):
    return max(times[r][n.id][1] for r, nodes in ranks.items() for n in nodes
               if n.attr.get("ct_category") == "step_end")


def twin_durations(ranks, timeline):
    """The twin's duration of each exported compute, send and collective, matched by order on
    the stream it ran on (streams run in order, so the k-th entry is the k-th instruction)."""
    entries = collections.defaultdict(list)
    for row in timeline.itertuples():
        entries[(row.gpu, str(row.kind), row.stream)].append((row.start_s, row.seconds))
    for v in entries.values():
        v.sort()
    seen, of = collections.Counter(), {}
    for r, nodes in ranks.items():
        for n in sorted(nodes, key=lambda n: n.id):
            stream = {A.COMP: "compute", A.SEND: n.attr.get("ct_stream", "p2p"),
                      A.COLL: n.attr.get("ct_stream", "dp")}.get(n.type)
            if stream is None:
                continue
            kind = {A.COMP: "compute", A.SEND: "send", A.COLL: "collective"}[n.type]
            key = (r, kind, stream)
            if seen[key] < len(entries[key]):
                of[(r, n.id)] = entries[key][seen[key]]
            seen[key] += 1
    # A collective's network time: from the last member's arrival to its end.
    instances = collections.defaultdict(list)
    for r, nodes in ranks.items():
        k = collections.Counter()
        for n in sorted(nodes, key=lambda n: n.id):
            if n.type == A.COLL:
                pg = str(n.attr["pg_name"])
                instances[(pg, k[pg])].append(of[(r, n.id)])
                k[pg] += 1
    coll = {key: max(s + d for s, d in v) - max(s for s, d in v) for key, v in instances.items()}
    return (lambda r, n: of[(r, n.id)][1] if (r, n.id) in of else 0.0,
            lambda r, n: of[(r, n.id)][1],
            lambda pg, k, n: coll[(pg, k)])


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    out = {}
    for label, (sc, _) in LAYOUTS.items():
        d = tmp_path_factory.mktemp("astra")
        ct.export_chakra(ct.Scenario(sc), d)
        result = ct.run(ct.Scenario(sc), trace_gpus=range(16))  # the timeline of every rank
        ranks, groups, metas = A.read_export(d)
        out[label] = (d, result, ranks, groups, metas)
    return out


@pytest.mark.parametrize("label", list(LAYOUTS))
def test_export_follows_astra_sim_rules(exports, label):
    _, _, ranks, groups, metas = exports[label]
    assert len(ranks) == 16
    for meta in metas.values():
        assert meta == {"version": "0.0.4", "ct_comm_size": "astra-sim"}
    assert all(len(members) >= 2 for members in groups.values()), groups
    for r, nodes in ranks.items():
        for n in nodes:
            if n.type in (A.SEND, A.RECV):
                assert n.attr["comm_src"] != n.attr["comm_dst"], (label, r, n.name)
            if n.type == A.COLL or "ct_local_collective" in n.attr:
                exact, size = n.attr["ct_bytes"], n.attr["comm_size"]
                members = len(groups.get(str(n.attr["pg_name"]), [r]))
                per_rank = math.ceil(exact / members) if n.attr["comm_type"] == A.ALL_GATHER else exact
                assert size == math.ceil(per_rank / 64) * 64, (label, n.name, exact, size, members)
                for splits in (1, 4, 16, 64):
                    assert A.astra_chunks(size, splits) == splits
            if n.type == A.COLL:
                assert str(n.attr["pg_name"]) in groups, (label, n.name)
            if "ct_local_collective" in n.attr:
                assert n.type == A.INVALID and str(n.attr["pg_name"]) not in groups


@pytest.mark.parametrize("label", list(LAYOUTS))
def test_export_encodes_the_simulated_schedule(exports, label):
    """With the twin's durations and concurrent communications, the exported graph's step ends
    exactly where the twin's does: the dependencies and stream orders are the twin's."""
    _, result, ranks, groups, _ = exports[label]
    comp, send, coll = twin_durations(ranks, result.timeline)
    times, _ = A.interpret(ranks, groups, send, coll, one_comm=False, comp_seconds=comp)
    report = result.report
    twin = report["step_time_s"] - report["breakdown"]["straggler_s"]
    assert step_end(times, ranks) == pytest.approx(twin, rel=1e-9, abs=1e-8)  # zero-length nodes: 1 ns each


@pytest.mark.parametrize("label", list(LAYOUTS))
def test_export_runs_to_the_end_under_astra_sim_rules(exports, label):
    """ASTRA-sim's rules (one communication in flight per GPU, durations in whole
    microseconds, no compute slowdown while communication runs): the graph completes; where the
    twin never overlaps two communications on a GPU, the step is the twin's within 0.25%."""
    _, result, ranks, groups, _ = exports[label]
    comp, send, coll = twin_durations(ranks, result.timeline)
    times, _ = A.interpret(ranks, groups, send, coll)  # raises Deadlock if it stops
    report = result.report
    twin = report["step_time_s"] - report["breakdown"]["straggler_s"]
    timed, _ = A.interpret(ranks, groups, send, coll, comp_seconds=comp)
    if not LAYOUTS[label][1]:
        assert step_end(timed, ranks) == pytest.approx(twin, rel=1e-9, abs=1e-8)
        assert step_end(times, ranks) == pytest.approx(twin, rel=0.0125)  # contention: docs/chakra-export.md
    else:
        assert step_end(timed, ranks) > twin * (1 + 1e-6)  # the one-communication rule costs time


@pytest.mark.parametrize("label", ["pp1-vp2-dp8 (was: self sends)", "tp8-pp2-dp1 (was: one-rank collectives)",
                                   "dp8-zero3 (two collective streams)"])
def test_export_round_trips(exports, label):
    d, result, _, _, _ = exports[label]
    sc = LAYOUTS[label][0]
    replay = ct.load_trace(d, cluster=sc["cluster"]).with_overrides({"network.mode": "flow", "seed": sc["seed"]})
    replayed = ct.run(replay).report
    twin = result.report["step_time_s"] - result.report["breakdown"]["straggler_s"]
    assert replayed["step_time_s"] == pytest.approx(twin, rel=1e-12)
    assert json.dumps(replayed["trace"]["ranks"]) == "16"
