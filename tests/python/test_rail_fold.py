"""network.fold_rails: in flow mode, the first GPU of every tensor-parallel group runs for its
group, each sibling's route loading the links that rails share (path_uses.h set_rail_fold).
Exact where no link is shared; within a stated tolerance elsewhere (docs/performance.md)."""
import copy

import pytest

from clustertwin import ScenarioError
from clustertwin.api import run

BASE = {"name": "rails", "cluster": {"gpu": "H100-SXM", "nodes": 16, "gpus_per_node": 8, "nics_per_node": 8,
                                     "nic": "400Gbps"},
        "network": {"mode": "flow"},
        "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                         "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 8},
                         "micro_batch_size": 1, "global_batch_size": 64, "steps": 2}}

# 32 nodes on 3 tiers of 16-port switches: 4 nodes per rail leaf, pipeline and data-parallel
# neighbours reach each other over spines and cores that all 8 rails share.
ACROSS_PODS = {"cluster": {"nodes": 32, "fabric": {"tiers": 3, "switch_radix": 16}},
               "training_job": {"parallelism": {"tensor_parallel": 8, "pipeline_parallel": 4, "data_parallel": 8}}}
# The same nodes under 2:1 oversubscribed fat-tree leaves, where every rail of a node shares
# the leaf's uplinks.
FAT_TREE = {"cluster": {"nodes": 32, "fabric": {"topology": "fat_tree", "tiers": 2, "switch_radix": 64,
                                                "oversubscription": 2}},
            "training_job": {"parallelism": {"tensor_parallel": 8, "pipeline_parallel": 4, "data_parallel": 8}}}


def merge(a, b):
    out = copy.deepcopy(a)
    for k, v in b.items():
        out[k] = merge(out.get(k, {}), v) if isinstance(v, dict) else copy.deepcopy(v)
    return out


def report(fold, *changes):
    sc = copy.deepcopy(BASE)
    for c in changes:
        sc = merge(sc, c)
    sc["network"]["fold_rails"] = fold
    return run(sc).report


def test_rails_that_share_no_link_fold_exactly():
    # 16 nodes: each rail's NICs on one leaf, no link carries two rails.
    full, folded = report("no"), report("auto")
    assert full["ranks"]["fold"] == "none" and full["ranks"]["simulated"] == 128
    assert folded["ranks"]["fold"] == "rails" and folded["ranks"]["simulated"] == 16
    assert folded["step_time_s"] == pytest.approx(full["step_time_s"], rel=1e-12)
    for key, value in full["breakdown"].items():
        assert folded["breakdown"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert folded["network"]["max_link_utilization"] == pytest.approx(full["network"]["max_link_utilization"],
                                                                      rel=1e-9)
    assert folded["sim"]["events"] < full["sim"]["events"] / 5
    assert any("network.fold_rails" in a for a in folded["assumptions"])
    assert not any("network.fold_rails" in a for a in full["assumptions"])


@pytest.mark.parametrize("fabric, tolerance", [(ACROSS_PODS, 0.01), (FAT_TREE, 0.025)])
def test_shared_links_carry_the_siblings_routes(fabric, tolerance):
    # Measured: +0.51% across pods, +1.72% on the oversubscribed fat tree. Without the
    # siblings' routes the shared links carry one rail's load: the folded step comes out short
    # of contention there (and with capacities scaled to the rail's share instead, +7% and
    # +35%: docs/performance.md).
    full, folded = report("no", fabric), report("auto", fabric)
    assert folded["ranks"]["fold"] == "rails"
    assert folded["step_time_s"] == pytest.approx(full["step_time_s"], rel=tolerance)
    assert folded["network"]["max_link_utilization"] == pytest.approx(
        full["network"]["max_link_utilization"], rel=0.05)
    top = folded["network"]["top_links"][0]
    assert top["bytes"] > 0


def test_perturbed_or_mixed_groups_run_every_rank():
    cases = [
        {"cluster": {"variability": {"kernel_jitter_cv": 0.01}}},
        {"training_job": {"scheduling": {"topology_aware": False}}},
        {"training_job": {"parallelism": {"tensor_parallel": 1, "pipeline_parallel": 2, "data_parallel": 64}}},
        {"cluster": {"nics_per_node": 4}},
        {"faults": [{"kind": "link_degrade", "link": "node0.nic0-leaf0", "factor": 0.5}]},
        {"faults": [{"kind": "gpu_throttle", "rank": 3, "factor": 0.8}]},
    ]
    for change in cases:
        folded = report("auto", change)
        assert folded["ranks"]["fold"] == "none", change
        assert folded["ranks"]["simulated"] == 128, change


def test_moe_expert_groups_across_tensor_parallel_ranks_run_every_rank():
    # Experts folded below TP 4 into EP 2: a rank's expert data-parallel group is every second
    # rank of its stage (step_program.cpp expert_group), TP indices 0 and 2 together.
    moe = {"training_job": {"model": {"moe": {"experts": 16, "top_k": 2}},
                            "parallelism": {"tensor_parallel": 4, "pipeline_parallel": 2, "data_parallel": 16,
                                            "expert_parallel": 2, "expert_tensor_parallel": 1}}}
    full, folded = report("no", moe), report("auto", moe)
    assert folded["ranks"]["fold"] == "none"
    assert folded["step_time_s"] == full["step_time_s"]
    # EP 8 strides 8 ranks: every expert group of a TP-0 rank is TP-0 ranks, and it folds.
    ep8 = merge(moe, {"training_job": {"parallelism": {"expert_parallel": 8}}})
    assert report("auto", ep8)["ranks"]["fold"] == "rails"


def test_auto_folds_in_flow_mode_only():
    with pytest.raises(ScenarioError, match="network.fold_rails"):
        report("yes")
    # The default is auto.
    sc = copy.deepcopy(BASE)
    assert run(sc).report["ranks"]["fold"] == "rails"
    # Packet mode runs every rank (its queues and ECN marks are per link and packet).
    small = {"cluster": {"nodes": 2}, "network": {"mode": "packet"},
             "training_job": {"parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 1},
                              "global_batch_size": 4, "steps": 1}}
    assert report("auto", small)["ranks"]["fold"] == "none"
    # Analytical mode folds replicas whatever the key says.
    a = report("auto", {"network": {"mode": "analytical"}})
    b = report("no", {"network": {"mode": "analytical"}})
    assert a["ranks"]["fold"] == b["ranks"]["fold"] == "replicas"
    assert a["step_time_s"] == b["step_time_s"]
