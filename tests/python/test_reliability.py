"""Campaign, failure classes, health checks and power in the report of a training scenario."""
import pytest

import clustertwin as ct

FAST = {"network.mode": "analytical"}  # folds the identical replicas: milliseconds


def run(overrides):
    return ct.run(ct.load("scenarios/default.json"), overrides={**FAST, **overrides}).report


def test_llama3_profile_reports_interruptions_by_cause_and_the_simulated_curve():
    r = run({"campaign.repeats": 20, "campaign.train_tokens": 300e9})  # default.json: profile llama3
    rel = r["reliability"]
    causes = rel["interruptions_by_cause"]
    assert set(causes) == {"gpu", "hbm", "nic", "host", "latent", "link", "switch", "software", "hang"}
    # 1,248 job nodes at the Llama 3 rates: 419 / 110,592 node-days -> ~4.7 failures a day, 14 in 72 h.
    assert 8 < rel["failures"] < 22
    assert causes["gpu"] > causes["hbm"] > causes["hang"]
    assert rel["mtbf_s"] == pytest.approx(86400 / (1248 * 419 / 110592), rel=1e-6)
    lo, hi = rel["goodput_ci95"]
    assert lo < rel["goodput"] < hi
    assert rel["lost_gpu_hours"] > 0
    curve = rel["interval_curve"]
    assert len(curve) >= 9 and all("simulated_goodput" in p for p in curve)
    assert rel["simulated_optimum_inside_grid"] is True
    # 20 replicas of 72 h: the simulated optimum is noisy; it must still sit near Young/Daly.
    assert 0.5 < rel["simulated_optimal_interval_s"] / rel["young_daly_interval_s"] < 2.0
    assert rel["time_to_train_s"] == pytest.approx(rel["time_to_train_ideal_s"] / rel["goodput"])


def test_a_campaign_of_six_months():
    rel = run({"campaign.duration": "180d", "campaign.repeats": 4})["reliability"]
    assert rel["campaign"]["duration_s"] == 180 * 86400
    assert rel["failures"] > 400  # ~4.7 a day on 1,248 nodes at the Llama 3 rates


def test_campaign_is_identical_whatever_the_thread_count():
    base = {"failures.latent_defect_fraction": 0.02,
            "recovery.health_check": "5min", "campaign.repeats": 16}
    one = run({**base, "campaign.threads": 1})
    two = run({**base, "campaign.threads": 2})
    assert one["reliability"] == two["reliability"]


def test_hang_detection_waits_for_the_collective_timeout():
    hangs = {"failures": {"hang_failure_rate_per_day": 0.005}, "campaign.repeats": 10}  # replaces the profile
    short = run({**hangs, "training_job.runtime.collective_timeout": "300s"})["reliability"]
    long = run({**hangs, "training_job.runtime.collective_timeout": "3600s"})["reliability"]
    assert long["time_lost_s"]["detection"] > 5 * short["time_lost_s"]["detection"]
    assert long["goodput"] < short["goodput"]


def test_power_report_has_facility_rack_and_stop_figures():
    r = run({})
    p = r["power"]
    assert p["facility_mean_w"] == pytest.approx(p["cluster_mean_w"] * p["pue"])
    assert p["idle_w"] < p["cluster_mean_w"] <= p["cluster_peak_w"]
    assert p["stop_swing_w"] == pytest.approx(p["cluster_mean_w"] - p["idle_w"])
    # 4 DGX-class nodes of 8 x 700 W with 50% host overhead: 33.6 kW per rack.
    assert p["rack_peak_w"] == pytest.approx(4 * 8 * 700 * 1.5)
    assert p["racks"] == 320 and p["racks_over_limit"] == 0
    assert p["idle_w"] < p["campaign_mean_w"] < p["cluster_mean_w"]
    dense = run({"cluster.power.nodes_per_rack": 8})["power"]
    assert dense["racks_over_limit"] == 160


@pytest.mark.parametrize("overrides, key", [
    ({"failures.gpu_failure_rate_per_day": 0.001}, "failures.gpu_failure_rate_per_day"),  # profile llama3 sets it
    ({"recovery.health_check_coverage": 1.5}, "recovery.health_check_coverage"),
    ({"failures.latent_defect_mean": "0s"}, "failures.latent_defect_mean"),
    ({"campaign.duration": "40000d"}, "campaign.duration"),  # past the campaign clock's 100 years
    ({"campaign.duration": "0s"}, "campaign.duration"),
    ({"failures.hbm_failure_rate_per_day": -1}, "failures.hbm_failure_rate_per_day"),
    ({"cluster.power.pue": 0.8}, "cluster.power.pue"),
])
def test_bad_reliability_input_names_the_key(overrides, key):
    with pytest.raises(ct.ScenarioError, match=key.replace(".", r"\.")):
        run(overrides)


def test_synchronous_save_longer_than_the_interval_is_an_error():
    with pytest.raises(ct.ScenarioError, match=r"training_job\.checkpoint\.interval"):
        run({"training_job.checkpoint": {"interval": "1s", "async_save": False}})  # the save takes 2.5 s


def test_storage_limits_capacity_and_flush_over_the_compute_fabric():
    base = run({"campaign.repeats": 10})
    st = base["storage"]
    assert st["flush_cost_s"] == 0 and st["network"] == "frontend"
    # Every one of the 1,248 nodes writes its shard (ZeRO-1): at 0.2 GB/s each, 250 GB/s
    # instead of the 1 TB/s aggregate.
    slow = run({"cluster.storage.per_node_write": "0.2GB/s", "campaign.repeats": 10})["storage"]
    assert slow["write_bytes_per_s"] < st["write_bytes_per_s"]
    assert slow["checkpoint_flush_s"] > 2 * st["checkpoint_flush_s"]
    shared = run({"cluster.storage.network": "compute", "campaign.repeats": 10})
    s2 = shared["storage"]
    assert 0 < s2["flush_nic_share"] < 0.9
    assert s2["step_time_during_flush_s"] > shared["step_time_s"]
    assert s2["flush_cost_s"] > 0
    assert shared["reliability"]["young_daly_interval_s"] > base["reliability"]["young_daly_interval_s"]
    with pytest.raises(ct.ScenarioError, match=r"keep_last_n"):
        run({"cluster.storage.capacity": "10TB"})  # 5 checkpoints of 2.46 TB


SMALL = {
    "cluster": {"nodes": 16},
    "network": {"mode": "analytical"},
    "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                     "global_batch_size": 64,
                     "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 8}},
    "recovery": {"hot_spares": 0},
}


def run_small(variability):
    sc = ct.Scenario(SMALL).with_overrides({"cluster.variability": variability})
    return ct.run(sc).report


def test_gpu_variability_and_throttling_slow_the_step_and_flag_stragglers():
    nominal = run_small({})
    spread = run_small({"gpu_speed_cv": 0.03})
    assert spread["step_time_s"] > nominal["step_time_s"]
    a = run_small({"gpu_speed_cv": 0.03, "throttled_fraction": 0.05, "throttle_factor": 0.8})
    b = run_small({"gpu_speed_cv": 0.03, "throttled_fraction": 0.05, "throttle_factor": 0.8})
    a.pop("sim"), b.pop("sim")
    assert a == b
    ranks = a["ranks"]
    assert ranks["slow_rank_count"] >= 1
    swap = ranks["keep_vs_swap"]
    assert swap["swapped_gpus"] == ranks["slow_rank_count"]
    assert swap["step_time_without_slow_s"] < swap["step_time_with_slow_s"]
    # Swapping the throttled GPUs leaves the spread: still slower than nominal.
    assert swap["step_time_without_slow_s"] > nominal["step_time_s"]


def test_kernel_jitter_makes_the_slowest_rank_set_the_pace():
    nominal = run_small({})
    jitter = run_small({"kernel_jitter_cv": 0.1})
    again = run_small({"kernel_jitter_cv": 0.1})
    assert jitter["step_time_s"] == again["step_time_s"]
    assert nominal["step_time_s"] < jitter["step_time_s"] < 1.2 * nominal["step_time_s"]
    assert jitter["ranks"]["step_time_max_s"] >= jitter["ranks"]["step_time_p50_s"]


def test_campaign_timeline_counts_the_job_stops_the_grid_sees():
    r = ct.run(ct.load("scenarios/default.json"), overrides={**FAST, "campaign.repeats": 4})
    phases = r.report["tables"]["campaign_phases"]
    assert phases[0]["phase"] == "train" and phases[0]["t_s"] == 0
    assert all(a["t_s"] <= b["t_s"] for a, b in zip(phases, phases[1:]))
    assert all(a["phase"] != b["phase"] for a, b in zip(phases, phases[1:]))
    p = r.report["power"]
    saves = sum(1 for x in phases if x["phase"] == "save")
    failures = sum(1 for x in phases if x["phase"] == "detect")
    assert failures > 0
    days = r.report["reliability"]["campaign"]["duration_s"] / 86400
    # Every checkpoint stall and every failure that hits training stops the whole job.
    assert p["job_stops_per_day"] == pytest.approx((saves + p["failure_stops_per_day"] * days) / days)
    assert {x["it_w"] for x in phases if x["phase"] != "train"} == {p["idle_w"]}
