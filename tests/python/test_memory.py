"""Memory in the report: itemised per pipeline stage, a layout that does not fit is still
simulated with its shortfall, and every training_job.runtime.stack changes the memory."""
import math

import pytest

import clustertwin as ct

GPT_1P4B = {  # the H200 1.42B GPT step of tests/validation/h200-gpt1.4b-step.json
    "cluster": {"gpu": "H200-SXM", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1},
    "network": {"mode": "analytical"},
    "training_job": {"model": {"layers": 24, "hidden": 2048, "heads": 16, "seq_length": 2048, "vocab": 50304},
                     "global_batch_size": 8, "micro_batch_size": 8,
                     "parallelism": {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": 1},
                     "runtime": {"recompute_granularity": "none"}},
}

PIPELINED = {
    "cluster": {"nodes": 8},
    "network": {"mode": "analytical"},
    "recovery": {"hot_spares": 0},
    "training_job": {"model": {"layers": 30, "hidden": 8192, "heads": 64, "seq_length": 4096, "vocab": 51200},
                     "global_batch_size": 64, "micro_batch_size": 1,
                     "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 4, "data_parallel": 2}},
}


def test_single_gpu_step_with_flash_attention_fits():
    # No s x s scores are stored with flash attention: 1.4B at micro-batch 8 fits on 141 GB.
    m = ct.run(ct.Scenario(GPT_1P4B)).report["memory"]
    assert m["fits"] and 40 * 2**30 < m["peak_bytes"] < 80 * 2**30
    unfused = ct.run(ct.Scenario(GPT_1P4B), overrides={"training_job.runtime.attention": "unfused"}).report
    assert unfused["memory"]["activations_bytes"] > 2 * m["activations_bytes"]


def test_every_stage_is_itemised_and_the_peak_named():
    m = ct.run(ct.Scenario(PIPELINED)).report["memory"]
    stages = m["stages"]
    assert [s["stage"] for s in stages] == [0, 1, 2, 3]
    peak = max(stages, key=lambda s: s["total_bytes"])
    assert m["peak_stage"] == peak["stage"] and m["peak_bytes"] == peak["total_bytes"]
    # 30 layers on 4 stages: 7, 8, 8, 7 (the end stages are lighter)
    assert stages[0]["parameters"] < stages[1]["parameters"]
    assert stages[0]["in_flight_microbatches"] == 4 and stages[3]["in_flight_microbatches"] == 1
    assert stages[3]["logits_loss_bytes"] > 0 and stages[0]["logits_loss_bytes"] == 0
    assert stages[0]["embedding_bytes"] > 0
    for s in stages:
        assert s["reserved_bytes"] >= s["allocated_bytes"]
        assert s["total_bytes"] == s["reserved_bytes"] + s["cuda_context_bytes"] + s["nccl_bytes"]
        assert s["margin_bytes"] == m["capacity_bytes"] - s["total_bytes"]


def test_a_layout_that_does_not_fit_is_simulated_with_its_shortfall():
    r = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.micro_batch_size": 8, "cluster.gpu": "A100-40GB",
                                                  "training_job.runtime.recompute_granularity": "none",
                                                  "training_job.parallelism.zero_stage": 0}).report
    assert r["memory"]["fits"] is False and r["memory"]["margin_bytes"] < 0
    assert r["step_time_s"] > 0 and 0 < r["mfu"] < 1
    assert "step_time_s" not in r.get("not_computed", {})


def test_each_stack_changes_the_memory():
    peaks = {}
    for stack in ["megatron-core", "deepspeed", "torchtitan", "pytorch"]:
        r = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.stack": stack}).report
        assert r["memory"]["stack"] == stack
        peaks[stack] = r["memory"]["peak_bytes"]
    assert len(set(peaks.values())) == 4, peaks


def test_zero_stages_shrink_the_model_state():
    totals = []
    for stage in [0, 1, 2, 3]:
        r = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.parallelism.zero_stage": stage,
                                                      "training_job.parallelism.data_parallel": 2}).report
        m = r["memory"]
        totals.append(m["weights_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"])
    assert totals[0] > totals[1] > totals[2] > totals[3]


def test_fp8_needs_fp8_tensor_cores_and_speeds_up_the_step():
    import pytest
    bf16 = ct.run(ct.Scenario(PIPELINED)).report
    fp8 = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.precision": "fp8"}).report
    assert fp8["step_time_s"] < 0.9 * bf16["step_time_s"]
    assert fp8["memory"]["weights_bytes"] > bf16["memory"]["weights_bytes"]
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.precision.*A100-80GB"):
        ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.precision": "fp8", "cluster.gpu": "A100-80GB"})


def test_fp8_recipes_change_the_step_and_mxfp8_needs_blackwell():
    b200 = {"cluster.gpu": "B200"}
    steps = {p: ct.run(ct.Scenario(PIPELINED), overrides={**b200, "training_job.runtime.precision": p}).report
             for p in ("bf16", "fp8", "fp8-cs", "mxfp8")}
    t = {p: r["step_time_s"] for p, r in steps.items()}
    # current scaling pays an amax pass per cast; MXFP8 block-scaled GEMMs are slower kernels
    assert t["fp8"] < t["fp8-cs"] < t["bf16"]
    assert t["fp8"] < t["mxfp8"] < t["bf16"]
    assert any(a.startswith("mxfp8: ") for a in steps["mxfp8"]["assumptions"])
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.precision.*mxfp8"):
        ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.precision": "mxfp8"})


def test_nvfp4_runs_fp4_gemms_on_blackwell_on_transformer_engine_stacks():
    b200 = {"cluster.gpu": "B200"}
    runs = {p: ct.run(ct.Scenario(PIPELINED), overrides={**b200, "training_job.runtime.precision": p}).report
            for p in ("mxfp8", "nvfp4")}
    # FP4 GEMMs at twice B200's FP8 peak, casts as costly as FP8's: a faster step, smaller copies
    assert runs["nvfp4"]["step_time_s"] < runs["mxfp8"]["step_time_s"]
    assert runs["nvfp4"]["memory"]["weights_bytes"] < runs["mxfp8"]["memory"]["weights_bytes"]
    assert any(a.startswith("nvfp4: ") and "EXTRAPOLATED" in a for a in runs["nvfp4"]["assumptions"])
    # the FP4 peak is a key of its own: half of it slows the step
    slow = ct.run(ct.Scenario(PIPELINED), overrides={**b200, "training_job.runtime.precision": "nvfp4",
                                                     "cluster.gpu_spec.fp4_tflops": 4500}).report
    assert slow["step_time_s"] > runs["nvfp4"]["step_time_s"]
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.precision.*nvfp4.*H100-SXM.*FP4"):
        ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.precision": "nvfp4"})
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.precision.*nvfp4.*stack.*torchtitan"):
        ct.run(ct.Scenario(PIPELINED), overrides={**b200, "training_job.runtime.precision": "nvfp4",
                                                  "training_job.runtime.stack": "torchtitan"})


def test_nvlink_defaults_to_the_catalog_value_of_the_gpu():
    a100 = ct.run(ct.Scenario(PIPELINED), overrides={"cluster.gpu": "A100-80GB"}).report
    h100 = ct.run(ct.Scenario(PIPELINED)).report
    forced = ct.run(ct.Scenario(PIPELINED), overrides={"cluster.gpu": "A100-80GB", "cluster.nvlink": "450GB/s"}).report
    # TP 8 inside a node: slower NVLink (A100: 300 GB/s) exposes more tensor-parallel time
    assert a100["breakdown"]["exposed_tp_comm_s"] > forced["breakdown"]["exposed_tp_comm_s"]
    assert h100["breakdown"]["exposed_tp_comm_s"] > 0


def test_memory_frame_has_one_row_per_stage():
    from clustertwin import frames
    r = ct.run(ct.Scenario(PIPELINED))
    df = frames.memory_frame(r)
    assert list(df["stage"]) == [0, 1, 2, 3] and df["peak"].sum() == 1
    items = df[frames.MEMORY_ITEMS].sum(axis=1)
    assert (items == df["allocated_bytes"]).all()
    assert frames.memory_frame({}).empty


def test_bucket_size_sets_the_gradient_reductions():
    # Megatron's buckets are views into the gradient buffer (no memory), but their size sets how
    # many reductions the backward issues and how they overlap it.
    def reductions(bucket):
        r = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.bucket_size": bucket}).report
        return sum(c["count"] for c in r["collectives"] if c["op"] == "reduce_scatter"), r
    default, a = reductions("0B")
    small, b = reductions("4MB")
    assert small > 10 * default
    assert a["memory"]["peak_bytes"] == b["memory"]["peak_bytes"]
    assert a["step_time_s"] != b["step_time_s"]


def test_nvlink_domain_spanning_nodes_carries_the_groups_inside_it():
    # PIPELINED on 8 nodes: TP 8 fills a node, so each DP pair and each pipeline hop crosses
    # nodes. With a 64-GPU NVLink domain (NVL72-style) those transfers move over NVLink
    # instead of the NICs: less exposed data-parallel and pipeline time, and a bad domain
    # size is an error naming the key.
    base = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.overlap_grad_reduce": False}).report
    rack = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.overlap_grad_reduce": False,
                                                     "cluster.nvlink_domain": 64}).report
    assert rack["breakdown"]["exposed_dp_comm_s"] < 0.5 * base["breakdown"]["exposed_dp_comm_s"]
    assert rack["step_time_s"] < base["step_time_s"]
    with pytest.raises(ct.ScenarioError, match="cluster.nvlink_domain"):
        ct.run(ct.Scenario(PIPELINED), overrides={"cluster.nvlink_domain": 12})


def test_gb200_defaults_to_its_nvl72_domain():
    gb = {**PIPELINED, "cluster": {"gpu": "GB200", "nodes": 16, "gpus_per_node": 4, "nics_per_node": 4}}
    rack = ct.run(ct.Scenario(gb), overrides={"training_job.runtime.overlap_grad_reduce": False}).report
    trays = ct.run(ct.Scenario(gb), overrides={"training_job.runtime.overlap_grad_reduce": False,
                                               "cluster.nvlink_domain": 4}).report
    assert rack["step_time_s"] < trays["step_time_s"]
    # TP 8 spans two 4-GPU trays: inside the rack it stays on NVLink, with one tray per
    # domain it rings through the NICs
    assert trays["breakdown"]["exposed_tp_comm_s"] > 2 * rack["breakdown"]["exposed_tp_comm_s"]
    assert any("GB200 best-shape" in a for a in rack["assumptions"])


def test_stragglers_grow_with_the_number_of_workers_and_follow_their_keys():
    one = ct.run(ct.Scenario(GPT_1P4B)).report
    assert one["breakdown"]["straggler_s"] == 0.0  # one worker waits for nobody
    base = ct.run(ct.Scenario(PIPELINED)).report
    big = ct.run(ct.Scenario(PIPELINED), overrides={"cluster.nodes": 64,  # DP 16: 16 x 4 workers
                                                    "training_job.parallelism.data_parallel": 16}).report
    def share(r):
        return r["breakdown"]["straggler_s"] / r["breakdown"]["compute_s"]
    # 8 workers with 32 micro-batches each: 0.75% of the compute; 64 workers with 4: 2.6%
    assert abs(share(base) - 0.0075) < 0.001 and abs(share(big) - 0.026) < 0.002
    quiet = ct.run(ct.Scenario(PIPELINED), overrides={"cluster.variability.microbatch_noise_cv": 0,
                                                      "cluster.variability.worker_offset_cv": 0}).report
    assert quiet["breakdown"]["straggler_s"] == 0.0
    assert quiet["step_time_s"] < base["step_time_s"]
    noisy = ct.run(ct.Scenario(PIPELINED), overrides={"cluster.variability.worker_offset_cv": 0.02}).report
    assert noisy["breakdown"]["straggler_s"] > base["breakdown"]["straggler_s"]


def test_fp8_delayed_scaling_syncs_the_amax_group_every_chunk():
    # Transformer Engine all-reduces the amaxes when each chunk's forward and backward end, over
    # Megatron's TP x DP x CP group (tp-dp-cp): each micro-batch waits for the slowest replica
    # of its stage, and 2 v m all-reduces per step sit on the compute stream.
    def run(**kw):
        return ct.run(ct.Scenario(PIPELINED), overrides=kw).report
    delayed = run(**{"training_job.runtime.precision": "fp8"})
    tp_only = run(**{"training_job.runtime.precision": "fp8", "training_job.runtime.fp8_amax_reduction": "tp-cp"})
    current = run(**{"training_job.runtime.precision": "fp8-cs"})
    def share(r):
        return r["breakdown"]["straggler_s"] / r["breakdown"]["compute_s"]
    # DP 2 workers per micro-batch: sqrt(0.4%^2 + 2%^2) x E[max of 2 normals] (Blom: 0.589)
    assert abs(share(delayed) - 0.0204 * 0.589) < 0.0005
    # TP only: no replica waits for another inside the step; the step-level wait of 8 workers
    # over 32 micro-batches is left (0.75%), as with current scaling, which reduces no amax history
    assert abs(share(tp_only) - 0.0075) < 0.001 and abs(share(current) - 0.0075) < 0.001
    assert delayed["step_time_s"] > tp_only["step_time_s"]
    # the all-reduces: over 16 ranks on two nodes they cost more than over the 8 of one
    dp_comm = run(**{"training_job.runtime.precision": "fp8", "training_job.runtime.overlap_grad_reduce": False})
    tp_comm = run(**{"training_job.runtime.precision": "fp8", "training_job.runtime.overlap_grad_reduce": False,
                     "training_job.runtime.fp8_amax_reduction": "tp-cp"})
    bf16 = run(**{"training_job.runtime.overlap_grad_reduce": False})
    extra = dp_comm["breakdown"]["exposed_dp_comm_s"] - tp_comm["breakdown"]["exposed_dp_comm_s"]
    assert extra > 0 and tp_comm["breakdown"]["exposed_dp_comm_s"] > bf16["breakdown"]["exposed_dp_comm_s"]
    # 2 x 32 micro-batches: each all-reduce between 5 and 100 us
    assert 64 * 5e-6 < extra + (tp_comm["breakdown"]["exposed_dp_comm_s"] - bf16["breakdown"]["exposed_dp_comm_s"]) < 64 * 100e-6
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.fp8_amax_reduction"):
        run(**{"training_job.runtime.fp8_amax_reduction": "dp"})


def test_attention_kernel_sets_the_attention_time_per_stack():
    long = {"training_job.model.seq_length": 16384, "training_job.runtime.recompute_granularity": "full"}
    def step(**kw):
        return ct.run(ct.Scenario(PIPELINED), overrides={**long, **kw}).report
    cudnn = step()
    fa2 = step(**{"training_job.runtime.attention_kernel": "fa2"})
    fa3 = step(**{"training_job.runtime.attention_kernel": "fa3"})
    # the calibrated kernel (torch 2.11's cuDNN on H200) runs at FlashAttention-3's speed
    assert fa3["step_time_s"] == cudnn["step_time_s"] < fa2["step_time_s"]
    # cuDNN before 9.0 (NGC containers up to 24.01) ran at flash-attn 2's speed on Hopper
    old_cudnn = step(**{"training_job.runtime.attention_kernel": "cudnn-8.9"})
    assert old_cudnn["step_time_s"] == fa2["step_time_s"]
    assert any(a.startswith("attention: the cudnn-8.9 kernel") for a in old_cudnn["assumptions"])
    assert any(a.startswith("attention: the fa2 kernel") for a in fa2["assumptions"])
    a100 = {"cluster.gpu": "A100-80GB"}
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.attention_kernel"):
        step(**a100, **{"training_job.runtime.attention_kernel": "fa3"})
    assert step(**a100, **{"training_job.runtime.attention_kernel": "fa2"})["step_time_s"] == step(**a100)["step_time_s"]
    assert step(**a100, **{"training_job.runtime.attention_kernel": "cudnn-8.9"})["step_time_s"] == step(**a100)["step_time_s"]
    # LLM Foundry's 2022 Triton kernel is FlashAttention-1 class: on Ampere 0.55 of FA2's forward
    # and 0.45 of its backward (its header against FA1, FA1 at half of FA2)
    def attention_s(kernel, gpu):
        df = ct.layer_kernels(ct.Scenario(PIPELINED), overrides={**long, "cluster.gpu": gpu,
                                                               "training_job.runtime.attention_kernel": kernel})
        rows = df[df["kind"] == "attention"].set_index("pass")["seconds"]
        return rows["forward"], rows["backward"]
    (tf, tb), (ff, fb) = attention_s("triton", "A100-80GB"), attention_s("fa2", "A100-80GB")
    assert abs(ff / tf - 0.55) < 1e-9 and abs(fb / tb - 0.45) < 1e-9
    # auto follows the stack: torchtitan runs PyTorch SDPA's FA2 backend
    titan = step(**{"training_job.runtime.stack": "torchtitan"})
    assert any(a.startswith("attention: the fa2 kernel") for a in titan["assumptions"])


def test_attention_speed_follows_the_head_dim_where_it_is_measured():
    # Same attention FLOPs (4 b h s^2 d) with 128 heads of 64 or 32 heads of 256 instead of 64
    # of 128: the kernel runs at its measured plateau ratio to head dim 128 (FlashAttention-3
    # paper Figs. 5-6, H100): FA3 / cuDNN forward 0.766 and backward 0.845 at 64, forward 1.042
    # at 256 (no backward bar: 1.0); FA2 0.889 / 0.903 at 64.
    long = {"training_job.model.seq_length": 16384, "training_job.runtime.recompute_granularity": "full"}
    def attention_s(heads, **kw):
        df = ct.layer_kernels(ct.Scenario(PIPELINED), overrides={**long, "training_job.model.heads": heads, **kw})
        rows = df[df["kind"] == "attention"].set_index("pass")["seconds"]
        return rows["forward"], rows["backward"]
    def near(ratio, expected):  # within the step's sustained-clock shift (the kernel mix moves it)
        return abs(ratio / expected - 1.0) < 0.005
    f128, b128 = attention_s(64)
    f64, b64 = attention_s(128)
    f256, b256 = attention_s(32)
    assert near(f128 / f64, 0.766) and near(b128 / b64, 0.845)
    assert near(f128 / f256, 1.042) and near(b128 / b256, 1.0)
    fa2 = {"training_job.runtime.attention_kernel": "fa2"}
    (g128, c128), (g64, c64) = attention_s(64, **fa2), attention_s(128, **fa2)
    assert near(g128 / g64, 0.889) and near(c128 / c64, 0.903)
    # between the bars, linear in log2(head dim): 12288 / 128 heads = 96
    wide = {"training_job.model.hidden": 12288, "training_job.model.heads": 96}
    h128 = ct.layer_kernels(ct.Scenario(PIPELINED), overrides={**long, **wide})
    h96 = ct.layer_kernels(ct.Scenario(PIPELINED), overrides={**long, **wide, "training_job.model.heads": 128})
    def fwd(df):
        return df[(df["kind"] == "attention") & (df["pass"] == "forward")]["seconds"].iloc[0]
    assert near(fwd(h128) / fwd(h96), 1 + 0.234 * math.log2(96 / 128))
    # not measured, so not applied: Ampere, and LLM Foundry's 2022 Triton kernel
    a100 = {"cluster.gpu": "A100-80GB"}
    assert attention_s(64, **a100) == attention_s(128, **a100)
    triton = {"training_job.runtime.attention_kernel": "triton"}
    assert attention_s(64, **triton) == attention_s(128, **triton)
    # the report says what it assumed
    report = ct.run(ct.Scenario(PIPELINED), overrides={**long, "training_job.model.heads": 128}).report
    assert any(a.startswith("attention: head dim 64 at 0.766 (forward) and 0.845 (backward)")
               for a in report["assumptions"])
    plain = ct.run(ct.Scenario(PIPELINED), overrides=long).report
    assert not any(a.startswith("attention: head dim") for a in plain["assumptions"])


def test_torch_compile_fuses_eager_llama_ops_and_is_an_error_where_kernels_are_fused():
    llama = {"training_job.model.activation": "swiglu", "training_job.runtime.stack": "torchtitan",
             "training_job.parallelism.zero_stage": 3}
    eager = ct.run(ct.Scenario(PIPELINED), overrides=llama).report
    compiled = ct.run(ct.Scenario(PIPELINED), overrides={**llama, "training_job.runtime.torch_compile": True}).report
    assert compiled["step_time_s"] < 0.97 * eager["step_time_s"]
    gpt = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.stack": "torchtitan",
                                                    "training_job.parallelism.zero_stage": 3}).report
    gpt_c = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.stack": "torchtitan",
                                                      "training_job.parallelism.zero_stage": 3,
                                                      "training_job.runtime.torch_compile": True,
                                                      "training_job.runtime.compile_loss": "eager"}).report
    assert gpt["step_time_s"] == gpt_c["step_time_s"]  # LayerNorm and GELU are single kernels either way
    # torchtitan compiles its loss with the model (compile_loss auto): one fused cross entropy
    gpt_l = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.stack": "torchtitan",
                                                      "training_job.parallelism.zero_stage": 3,
                                                      "training_job.runtime.torch_compile": True}).report
    assert gpt_l["step_time_s"] < gpt_c["step_time_s"]
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.torch_compile"):
        ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.torch_compile": True})


def test_blocking_pipeline_sends_hold_the_compute_stream():
    overlapped = ct.run(ct.Scenario(PIPELINED)).report
    blocking = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.overlap_p2p": False}).report
    assert blocking["step_time_s"] > overlapped["step_time_s"]


def test_dropout_key_sets_the_stored_masks():
    auto = ct.run(ct.Scenario(PIPELINED)).report  # gelu: GPT with dropout
    off = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.model.dropout": "no"}).report
    assert off["memory"]["activations_bytes"] < auto["memory"]["activations_bytes"]
    on = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.model.activation": "swiglu",
                                                   "training_job.model.dropout": "yes"}).report
    llama = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.model.activation": "swiglu"}).report
    assert on["memory"]["activations_bytes"] > llama["memory"]["activations_bytes"]


def test_a_multi_node_hopper_report_states_the_ring_cta_bound():
    # The fitted per-CTA bound of a ring all-reduce across nodes (collective/nccl_tuning.h) can
    # act on a Hopper job that spans nodes: its report says so; one node or an A100 job: not.
    def said(sc, **over):
        r = ct.run(ct.Scenario(sc), overrides=over).report
        return any(a.startswith("collectives: a Simple ring all-reduce across nodes") for a in r["assumptions"])
    assert said(PIPELINED)  # 8 nodes of H100 (the default GPU)
    assert not said(GPT_1P4B)
    assert not said(PIPELINED, **{"cluster.gpu": "A100-80GB"})


def test_collective_algorithm_nvls_tree_and_nvls_are_what_nccl_tests_runs():
    import json
    from clustertwin import _core
    sc = {"cluster": {"nodes": 4}, "network": {"mode": "analytical"}, "traffic": {"pattern": "collective"}}

    def busbw(nodes, algo):
        table = _core.nccl_tests(json.dumps(sc), json.dumps({"network.collective_algorithm": algo}), "all_reduce",
                                 [nodes], "8GiB", "8GiB")
        row = [l.split() for l in table.splitlines() if l.strip() and not l.startswith("#")][0]
        return float(row[7])
    # the ring across nodes: its 16 CTAs' 16 x 20.6 GB/s (collective/nccl_tuning.h), under the NICs' 380
    assert abs(busbw(4, "nvls_tree") - 364) < 4 and abs(busbw(4, "ring") - 329.6) < 4
    assert abs(busbw(1, "nvls") - 476) < 4 and abs(busbw(1, "ring") - 360) < 4


def test_layer_kernels_itemise_the_blocks_the_step_is_made_of():
    k = ct.layer_kernels(ct.Scenario(GPT_1P4B))
    assert set(k["pass"]) == {"forward", "backward"} and set(k["layer"]) == {"transformer", "output", "embedding"}
    layer = k[k.layer == "transformer"]
    fwd = layer[layer["pass"] == "forward"]
    # forward GEMMs of one GPT layer at micro-batch 8 x 2048 tokens: 24 T h^2 FLOPs
    tokens, h = 8 * 2048, 2048
    assert abs(fwd[fwd.kind == "gemm"].flops.sum() - 24 * tokens * h * h) < 1e-6 * 24 * tokens * h * h
    # no recompute: nothing to recompute; backward GEMMs are twice the forward's
    assert layer[layer["pass"] == "recompute"].empty
    bwd = layer[layer["pass"] == "backward"]
    assert abs(bwd[bwd.kind == "gemm"].flops.sum() - 2 * fwd[fwd.kind == "gemm"].flops.sum()) < 1.0
    assert (k.seconds > 0).all() and (k[k.kind == "elementwise"].bytes > 0).all()
    # the layer's kernels are the step's compute: 24 layers x (forward + backward) + output + embedding
    step = ct.run(ct.Scenario(GPT_1P4B)).report
    assert abs(k.seconds.sum() + 23 * layer.seconds.sum() - step["breakdown"]["compute_s"]) < 0.01 * step["breakdown"]["compute_s"]
    full = ct.layer_kernels(ct.Scenario(GPT_1P4B), overrides={"training_job.runtime.recompute_granularity": "full"})
    assert not full[(full.layer == "transformer") & (full["pass"] == "recompute")].empty
    with pytest.raises(ct.ScenarioError, match="training_job.micro_batch_size"):
        ct.layer_kernels(ct.Scenario(GPT_1P4B), overrides={"training_job.micro_batch_size": 0})


def test_megatron_overlaps_backward_tp_collectives_with_the_gemms_beside_them():
    def run(**kw):
        return ct.run(ct.Scenario(PIPELINED), overrides=kw).report
    auto = run()  # megatron-core: on
    on = run(**{"training_job.runtime.tp_async_backward": "on"})
    off = run(**{"training_job.runtime.tp_async_backward": "off"})
    assert auto["step_time_s"] == on["step_time_s"]
    assert on["breakdown"]["exposed_tp_comm_s"] < 0.8 * off["breakdown"]["exposed_tp_comm_s"]
    assert on["step_time_s"] < off["step_time_s"]
    # without sequence parallelism only the two all-reduces of the input gradients are hidden
    nosp = {"training_job.parallelism.sequence_parallel": False}
    assert run(**nosp)["breakdown"]["exposed_tp_comm_s"] < run(**nosp, **{
        "training_job.runtime.tp_async_backward": "off"})["breakdown"]["exposed_tp_comm_s"]
    # PyTorch's DTensor TP (torchtitan) runs them in line; userbuffers replace the mechanism
    titan = {"training_job.runtime.stack": "torchtitan", "training_job.parallelism.zero_stage": 3}
    assert run(**titan)["step_time_s"] == run(**titan, **{"training_job.runtime.tp_async_backward": "off"})["step_time_s"]
    ub = {"training_job.runtime.tp_comm_overlap": True}
    assert run(**ub)["step_time_s"] == run(**ub, **{"training_job.runtime.tp_async_backward": "off"})["step_time_s"]
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.tp_async_backward"):
        run(**{"training_job.runtime.tp_async_backward": "yes"})


def test_megatron_fused_softmax_streams_its_scores():
    # Unfused attention: Megatron's scale-mask-softmax keeps each row in registers, one read and
    # one write per score, at the streaming rate of the dropout beside it (not torch.softmax's)
    k = ct.layer_kernels(ct.Scenario(PIPELINED), overrides={"training_job.runtime.attention": "unfused"})
    k = k[(k.layer == "transformer") & (k["pass"] == "forward")].set_index("name")
    rate = k.bytes / k.seconds
    assert abs(rate["attn_core.softmax"] / rate["attn_core.dropout"] - 1) < 0.02


def test_master_weight_remainders_cut_the_optimizer_state_and_need_bf16_weights():
    # NeMo 1.x's distributed_fused_adam (Apex store_param_remainders): 2 + 4 + 4 bytes of state
    # per parameter instead of 4 + 4 + 4, sharded as before; the step moves 2 bytes fewer.
    base = ct.run(ct.Scenario(PIPELINED)).report
    rem = ct.run(ct.Scenario(PIPELINED), overrides={"training_job.runtime.master_weights": "remainder"}).report
    assert rem["memory"]["optimizer_bytes"] / base["memory"]["optimizer_bytes"] == pytest.approx(10 / 12, rel=1e-6)
    assert rem["memory"]["total_bytes"] < base["memory"]["total_bytes"]
    assert rem["breakdown"]["optimizer_s"] < base["breakdown"]["optimizer_s"]
    for bad in ({"training_job.runtime.stack": "torchtitan"},
                {"training_job.runtime.stack": "nemo", "training_job.runtime.precision": "fp8"}):
        with pytest.raises(ct.ScenarioError, match="training_job.runtime.master_weights"):
            ct.run(ct.Scenario(PIPELINED), overrides={**bad, "training_job.runtime.master_weights": "remainder"})


def test_full_recompute_drops_autocast_weight_copies_but_one_blocks():
    # torch.utils.checkpoint keeps only a block's input: the bf16 casts of its fp32 weights die
    # with the forward and are cast again in the recompute, one block at a time.
    llama = {"training_job.model.activation": "swiglu", "training_job.runtime.stack": "pytorch"}
    m = GPT_1P4B["training_job"]["model"]
    h, layers = m["hidden"], m["layers"]
    f = ((8 * h // 3 + 255) // 256) * 256  # Llama's SwiGLU width for h (model_spec.h)
    per_layer = 4 * h * h + 3 * h * f  # Q, K, V, O and gate, up, down; no biases
    kept = ct.run(ct.Scenario(GPT_1P4B), overrides=llama).report["memory"]
    full = ct.run(ct.Scenario(GPT_1P4B), overrides={**llama, "training_job.runtime.recompute_granularity": "full"})
    assert kept["weights_bytes"] - full.report["memory"]["weights_bytes"] == 2 * (layers - 1) * per_layer
    # stacks without autocast copies (bf16 weights) are not changed by it
    mc = {"training_job.runtime.stack": "megatron-core"}
    a = ct.run(ct.Scenario(GPT_1P4B), overrides=mc).report["memory"]["weights_bytes"]
    b = ct.run(ct.Scenario(GPT_1P4B), overrides={**mc, "training_job.runtime.recompute_granularity": "full"})
    assert a == b.report["memory"]["weights_bytes"]


def test_pytorch_stack_runs_rmsnorm_as_one_fused_kernel():
    # PyTorch >= 2.8 dispatches nn.RMSNorm to aten::_fused_rms_norm; torchtitan's 2024 module
    # (and Hugging Face's) is composite: its norms move 9x the bytes.
    llama = {"training_job.model.activation": "swiglu"}
    rows = {}
    for stack in ("pytorch", "torchtitan"):
        k = ct.layer_kernels(ct.Scenario(GPT_1P4B), overrides={**llama, "training_job.runtime.stack": stack})
        rows[stack] = k[(k["name"] == "input_norm") & (k["pass"] == "forward")]["bytes"].iloc[0]
    tokens, h = 8 * 2048, 2048
    assert rows["pytorch"] == 8 * tokens * h  # fp32 in, fp32 out under autocast
    assert rows["torchtitan"] == 36 * tokens * h  # composite fp32 over bf16 activations


def test_expert_tensor_parallel_folds_experts_in_every_mode():
    # Mixtral-shaped MoE on TP 2 x DP 8: with the experts split like the rest (ETP = TP) EP may
    # only use DP (8); folded (ETP 1) the expert groups span TP x DP, so EP 16 is a layout
    moe = {"cluster": {"nodes": 2}, "recovery": {"hot_spares": 0},
           "training_job": {"model": {"preset": "mixtral-8x7b", "layers": 4, "seq_length": 4096,
                                      "moe": {"experts": 16, "top_k": 2}},
                            "global_batch_size": 16, "micro_batch_size": 1,
                            "parallelism": {"tensor_parallel": 2, "data_parallel": 8, "expert_parallel": 8}}}
    sc = ct.Scenario(moe)
    for mode in ("analytical", "flow"):
        split = ct.run(sc, overrides={"network.mode": mode}).report
        folded = ct.run(sc, overrides={"network.mode": mode,
                                       "training_job.parallelism.expert_tensor_parallel": 1}).report
        # unsplit experts: twice the expert weights per GPU, their state sharded over 2 x 8 / 8 ranks
        assert folded["memory"]["peak_bytes"] != split["memory"]["peak_bytes"]
        assert folded["step_time_s"] != split["step_time_s"]
        wide = ct.run(sc, overrides={"network.mode": mode, "training_job.parallelism.expert_parallel": 16,
                                     "training_job.parallelism.expert_tensor_parallel": 1}).report
        assert wide["step_time_s"] > 0
    with pytest.raises(ct.ScenarioError, match="expert_parallel = 16 must divide"):
        ct.run(sc, overrides={"training_job.parallelism.expert_parallel": 16})
    with pytest.raises(ct.ScenarioError, match="training_job.parallelism.expert_tensor_parallel = 3"):
        ct.run(sc, overrides={"training_job.parallelism.expert_tensor_parallel": 3})


def test_microbatch_group_sets_the_interleaved_schedule_in_every_mode():
    # Megatron-Core's microbatch_group_size_per_vp_stage: n micro-batches run on a chunk before
    # the next; the first stage holds 2 (p - 1) + (v - 1) n + 1 chunks at its peak.
    interleaved = {"training_job.model.layers": 32, "training_job.parallelism.virtual_pipeline": 2}
    for mode in ("analytical", "flow"):
        base = {**interleaved, "network.mode": mode}
        runs = {n: ct.run(ct.Scenario(PIPELINED), overrides={**base, "training_job.parallelism.microbatch_group": n})
                .report for n in (0, 4, 8, 32)}
        flight = {n: r["memory"]["stages"][0]["in_flight_microbatches"] for n, r in runs.items()}
        assert flight == {0: 5.5, 4: 5.5, 8: 7.5, 32: 19.5}
        assert runs[0]["step_time_s"] == runs[4]["step_time_s"]  # n = p is the default
        assert runs[32]["memory"]["peak_bytes"] > runs[8]["memory"]["peak_bytes"] > runs[0]["memory"]["peak_bytes"]
        assert runs[8]["step_time_s"] != runs[0]["step_time_s"]  # another order of passes
    with pytest.raises(ct.ScenarioError, match=r"training_job.parallelism.microbatch_group: got 4, but it groups"):
        ct.run(ct.Scenario(PIPELINED), overrides={"training_job.parallelism.microbatch_group": 4})
    for n, why in ((2, "expected pipeline_parallel = 4 to"), (64, "expected pipeline_parallel = 4 to"),
                   (10, "the last group would hold 2")):
        with pytest.raises(ct.ScenarioError, match=f"microbatch_group = {n}: {why}"):
            ct.run(ct.Scenario(PIPELINED), overrides={**interleaved, "training_job.parallelism.microbatch_group": n})
    # with n given, the micro-batches need not be a multiple of p: 18 = 10 + 8
    odd = ct.run(ct.Scenario(PIPELINED), overrides={**interleaved, "training_job.global_batch_size": 36,
                                                    "training_job.parallelism.microbatch_group": 10}).report
    assert odd["step_time_s"] > 0
    meg = ct.from_megatron_args("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 "
                                "--pipeline-model-parallel-size 4 --virtual-pipeline-model-parallel-size 2 "
                                "--microbatch-group-size-per-virtual-pipeline-stage 8 --micro-batch-size 1 "
                                "--global-batch-size 64")
    assert meg["training_job"]["parallelism"]["microbatch_group"] == 8 and meg.unmapped == []


def test_pcie_defaults_to_the_gpus_generation():
    # One GPU and one NIC a node: a data-parallel ring's every byte crosses the GPU's PCIe path
    # to its NIC. An 800 Gb/s NIC (100 GB/s) on B300 has PCIe Gen6 (128 GB/s) behind it; forced
    # to Gen5's 64 GB/s the path binds and the reductions slow down. H100 (Gen5) and A100 (Gen4)
    # default to their own generation: equal to the value given explicitly.
    ring = {"cluster": {"nodes": 4, "gpus_per_node": 1, "nics_per_node": 1, "nic": "800Gbps"},
            "network": {"mode": "analytical"}, "recovery": {"hot_spares": 0},
            "training_job": {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 51200},
                             "global_batch_size": 4, "micro_batch_size": 1,
                             "parallelism": {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": 4},
                             "runtime": {"overlap_grad_reduce": False}}}

    def dp_time(gpu, pcie=None):
        over = {"cluster.gpu": gpu, **({"cluster.pcie": pcie} if pcie else {})}
        r = ct.run(ct.Scenario(ring), overrides=over).report
        return sum(c["time_s"] * c["count"] for c in r["collectives"] if c["op"] == "reduce_scatter")

    gen6 = dp_time("B300")
    assert dp_time("B300", "128GB/s") == gen6
    assert dp_time("B300", "64GB/s") > 1.3 * gen6
    assert dp_time("H100-SXM") == dp_time("H100-SXM", "64GB/s")
    assert dp_time("A100-80GB") == dp_time("A100-80GB", "32GB/s") > dp_time("A100-80GB", "64GB/s")
