"""Model presets, ct.from_hf_config, ct.from_megatron_args, `clustertwin import`, nccl-tests sizes."""
import json
import os
import re
import subprocess

import pytest

import clustertwin as ct
from clustertwin import _core

CLI = ["./clustertwin"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LLAMA3_70B_HF = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000, "eos_token_id": 128001,
    "hidden_act": "silu", "hidden_size": 8192, "initializer_range": 0.02, "intermediate_size": 28672,
    "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 500000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0", "use_cache": True,
    "vocab_size": 128256}
MIXTRAL_HF = {
    "architectures": ["MixtralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "sliding_window": None,
    "tie_word_embeddings": False, "vocab_size": 32000, "some_new_field": 3}
MEGATRON_70B = ("--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --group-query-attention "
                "--num-query-groups 8 --ffn-hidden-size 28672 --swiglu --untie-embeddings-and-output-weights "
                "--seq-length 8192 --max-position-embeddings 8192 --padded-vocab-size 128256 "
                "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 "
                "--num-layers-per-virtual-pipeline-stage 5 --sequence-parallel --use-distributed-optimizer "
                "--overlap-grad-reduce --micro-batch-size 1 --global-batch-size 128 --bf16 --lr 3e-4 "
                "--train-iters 100 --made-up-flag 3")


def _model(preset_or_keys: dict) -> dict:
    return {"name": "p", "cluster": {"gpu": "H100-SXM", "nodes": 8, "gpus_per_node": 8, "nics_per_node": 8,
                                     "nic": "400Gbps"},
            "network": {"mode": "analytical"},
            "training_job": {"model": preset_or_keys,
                             "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 1, "data_parallel": 8},
                             "micro_batch_size": 1, "global_batch_size": 64}}


def test_a_preset_runs_as_the_same_keys_written_out():
    keys = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "activation": "swiglu",
            "vocab": 128256, "seq_length": 8192, "tied_embeddings": False}
    by_preset = ct.run(_model({"preset": "llama3-8b"})).report
    by_keys = ct.run(_model(keys)).report
    assert by_preset["step_time_s"] == by_keys["step_time_s"]
    assert by_preset["memory"]["peak_bytes"] == by_keys["memory"]["peak_bytes"]
    # a key beside the preset wins, and changes the outcome
    shorter = ct.run(_model({"preset": "llama3-8b", "seq_length": 4096})).report
    assert shorter["step_time_s"] < by_preset["step_time_s"]
    with pytest.raises(ct.ScenarioError, match="training_job.model.preset: got 'llama9'"):
        ct.run(_model({"preset": "llama9"}))


def test_docs_table_lists_every_preset_with_its_values():
    presets = {p["name"]: p for p in json.loads(_core.model_presets())}
    with open(os.path.join(ROOT, "docs", "presets.md")) as f:
        rows = [line.split("|")[1:-1] for line in f
                if re.match(r"\| [a-z0-9.]+(-[a-z]+)?-([0-9x.]+b(-a[0-9]+b)?|v[0-9]+) \|", line)]
    assert {r[0].strip() for r in rows} == set(presets)
    for r in rows:
        cells = [c.strip() for c in r]
        m = presets[cells[0]]["model"]
        assert [int(cells[1]), int(cells[2]), int(cells[3])] == [m["layers"], m["hidden"], m["heads"]], cells[0]
        assert int(cells[4]) == m.get("kv_heads", m["heads"]), cells[0]
        if "mla" in m:  # latent attention: the Q/K head over the V head
            a = m["mla"]
            assert cells[5] == f"{a['qk_nope_head_dim'] + a['qk_rope_head_dim']}/{a['v_head_dim']}", cells[0]
        else:
            assert int(cells[5]) == m.get("head_dim", m["hidden"] // m["heads"]), cells[0]
        ffn = m["moe"].get("expert_ffn_hidden", m["ffn_hidden"]) if "moe" in m else m["ffn_hidden"]
        assert int(cells[6]) == ffn, cells[0]
        assert cells[7] == m["activation"] and int(cells[8]) == m["vocab"] and int(cells[9]) == m["seq_length"]
        assert (cells[10] == "yes") == m["tied_embeddings"]
        assert ("moe" in m) == bool(cells[11])


def test_hf_config_becomes_a_running_scenario(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3_70B_HF))
    sc = ct.from_hf_config(path)
    m = sc["training_job"]["model"]
    assert (m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["ffn_hidden"], m["vocab"]) == \
        (80, 8192, 64, 8, 28672, 128256)
    assert m["activation"] == "swiglu" and m["tied_embeddings"] is False and m["seq_length"] == 8192
    assert sc.unmapped == []  # every field is modelled or has no effect
    assert any("data_parallel" in n for n in sc.notes)
    # same architecture as the preset: same step
    preset = ct.from_hf_config(path)
    preset["training_job"]["model"] = {"preset": "llama3-70b"}
    assert ct.run(sc).report["step_time_s"] == ct.run(preset).report["step_time_s"]


def test_head_dim_wider_than_hidden_is_modelled_in_every_mode():
    # Qwen3-32B's config.json: 64 heads of 128 over a hidden size of 5120
    qwen = {**LLAMA3_70B_HF, "model_type": "qwen3", "num_hidden_layers": 8, "hidden_size": 5120,
            "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 25600,
            "vocab_size": 151936}
    sc = ct.from_hf_config(qwen, seq_length=4096)
    assert sc["training_job"]["model"]["head_dim"] == 128 and sc.unmapped == []
    narrow = ct.from_hf_config({**qwen, "head_dim": 80}, seq_length=4096)  # 64 x 80 = hidden
    assert "head_dim" not in narrow["training_job"]["model"]
    for mode in ("analytical", "flow"):
        wide, base = (ct.run(x, overrides={"network.mode": mode}).report for x in (sc, narrow))
        # Q, the attention and the output projection are 8192 wide instead of 5120
        assert wide["step_time_s"] > 1.05 * base["step_time_s"]
        assert wide["memory"]["activations_bytes"] > base["memory"]["activations_bytes"]
        assert wide["model"]["parameters"] - base["model"]["parameters"] == \
            8 * (5120 * (8192 - 5120) + 2 * 5120 * (1024 - 640) + (8192 - 5120) * 5120)
    with pytest.raises(ct.ScenarioError, match="training_job.model.head_dim"):
        ct.run(sc, overrides={"training_job.model.head_dim": -1})


def test_leading_dense_layers_are_modelled_in_every_mode():
    # GLM-4.5-Air's config.json (zai-org/GLM-4.5-Air), cut to 8 layers: first_k_dense_replace 1
    air = {"model_type": "glm4_moe", "num_hidden_layers": 8, "hidden_size": 4096, "num_attention_heads": 96,
           "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 10944, "moe_intermediate_size": 1408,
           "n_routed_experts": 128, "num_experts_per_tok": 8, "n_shared_experts": 1, "first_k_dense_replace": 1,
           "vocab_size": 151552, "hidden_act": "silu", "tie_word_embeddings": False}
    sc = ct.from_hf_config(air, seq_length=4096)
    assert sc["training_job"]["model"]["moe"]["dense_layers"] == 1
    assert not any(u.startswith("first_k_dense_replace") for u in sc.unmapped)
    over = {"cluster.nodes": 2, "training_job.parallelism.tensor_parallel": 1,
            "training_job.parallelism.pipeline_parallel": 2, "training_job.parallelism.data_parallel": 8,
            "training_job.parallelism.expert_parallel": 8, "training_job.global_batch_size": 64,
            "training_job.micro_batch_size": 1}
    for mode in ("analytical", "flow"):
        o = {**over, "network.mode": mode}
        dense, moe = (ct.run(sc, overrides={**o, "training_job.model.moe.dense_layers": k}).report for k in (1, 0))
        # One layer trades 128 routed experts + a shared one + the router for a dense MLP of 10944
        assert moe["model"]["parameters"] - dense["model"]["parameters"] == \
            129 * 3 * 4096 * 1408 + 4096 * 128 - 3 * 4096 * 10944
        # ... on the first pipeline stage, whose time and memory move; a dense MLP of 10944 costs
        # more per token than 8 + 1 experts of 1408 (12672 wide), and no all-to-all
        assert dense["step_time_s"] != moe["step_time_s"]
        assert dense["memory"]["stages"][0]["activations_bytes"] != moe["memory"]["stages"][0]["activations_bytes"]
        assert dense["memory"]["stages"][1] == moe["memory"]["stages"][1]
    with pytest.raises(ct.ScenarioError, match="training_job.model.moe.dense_layers"):
        ct.run(sc, overrides={"training_job.model.moe.dense_layers": 8})
    # Megatron's --moe-layer-freq: leading zeros are dense layers; other patterns are unmapped
    args = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --swiglu "
            "--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 512 --micro-batch-size 1 "
            "--global-batch-size 64 --expert-model-parallel-size 8")
    freq = ct.from_megatron_args(args + " --moe-layer-freq '([0]*1+[1]*7)'")
    assert freq["training_job"]["model"]["moe"]["dense_layers"] == 1 and freq.unmapped == []
    every_other = ct.from_megatron_args(args + " --moe-layer-freq 2")
    assert "dense_layers" not in every_other["training_job"]["model"]["moe"]
    assert any(u.startswith("--moe-layer-freq 2") for u in every_other.unmapped)


# Qwen3-30B-A3B's experts over two H100 nodes (EP 16, 16-way DP, 4 micro-batches of 1): the
# layout of the MoE runtime keys' tests, with the stack and any other key given.
def _qwen3_moe_ep16(**runtime) -> dict:
    over = {"cluster.nodes": 2, "training_job.parallelism.tensor_parallel": 1,
            "training_job.parallelism.data_parallel": 16, "training_job.parallelism.expert_parallel": 16,
            "training_job.global_batch_size": 64, "training_job.micro_batch_size": 1}
    return {**over, **{f"training_job.runtime.{k}": v for k, v in runtime.items()}}


def test_moe_a2a_overlap_hides_the_expert_exchange_in_every_mode():
    # Qwen3-30B-A3B with its experts over two nodes (EP 16): Megatron's combined 1F1B schedule
    # hides part of the all-to-all under the other micro-batch's compute
    sc = _model({"preset": "qwen3-30b-a3b"})
    over = _qwen3_moe_ep16(stack="megatron-core")
    for mode in ("analytical", "flow"):
        o = {**over, "network.mode": mode}
        alone, paired = (ct.run(sc, overrides={**o, "training_job.runtime.moe_a2a_overlap": v}).report
                         for v in (False, True))
        assert paired["breakdown"]["exposed_tp_comm_s"] < alone["breakdown"]["exposed_tp_comm_s"]
        assert paired["step_time_s"] < alone["step_time_s"]
    for key, value, why in (("training_job.parallelism.expert_parallel", 1, "expert_parallel > 1"),
                            ("training_job.runtime.recompute_granularity", "full", "recompute_granularity none"),
                            ("training_job.runtime.stack", "torchtitan", "megatron-core or nemo")):
        with pytest.raises(ct.ScenarioError, match=f"training_job.runtime.moe_a2a_overlap: got true.*{why}"):
            ct.run(sc, overrides={**over, "training_job.runtime.moe_a2a_overlap": True, key: value})
    meg = ct.from_megatron_args("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
                                "--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8 "
                                "--overlap-moe-expert-parallel-comm --micro-batch-size 1 --global-batch-size 64")
    assert meg["training_job"]["runtime"]["moe_a2a_overlap"] is True and meg.unmapped == []


def test_moe_host_sync_waits_once_per_moe_layer_forward_in_every_mode():
    # Qwen3-30B-A3B (48 MoE layers) on 16 H100 with EP 16, 4 micro-batches: Megatron's dispatcher
    # waits for the host once per MoE layer forward (1.5 ms, fitted); the sync-free path does not
    sc = _model({"preset": "qwen3-30b-a3b"})
    over = _qwen3_moe_ep16(stack="nemo", recompute_granularity="none")
    for mode in ("analytical", "flow"):
        o = {**over, "network.mode": mode}
        auto, yes, free = (ct.run(sc, overrides={**o, "training_job.runtime.moe_host_sync": v}).report
                           for v in ("auto", "yes", "no"))
        assert auto["step_time_s"] == yes["step_time_s"]
        waits = 48 * 4 * 1.5e-3
        assert auto["breakdown"]["exposed_tp_comm_s"] - free["breakdown"]["exposed_tp_comm_s"] == \
            pytest.approx(waits, rel=1e-6), mode
        assert auto["step_time_s"] - free["step_time_s"] == pytest.approx(waits, rel=0.02), mode
        assert auto["breakdown"]["compute_s"] == pytest.approx(free["breakdown"]["compute_s"], rel=1e-3)
        assert any(a.startswith("training_job.runtime.moe_host_sync") for a in auto["assumptions"])
        assert not any(a.startswith("training_job.runtime.moe_host_sync") for a in free["assumptions"])
    # Replaying the expert block waits again before backward
    moe_replay = {**over, "training_job.runtime.recompute_granularity": "selective",
                  "training_job.runtime.recompute_modules": "moe"}
    on, off = (ct.run(sc, overrides={**moe_replay, "training_job.runtime.moe_host_sync": v}).report
               for v in ("auto", "no"))
    assert on["breakdown"]["exposed_tp_comm_s"] - off["breakdown"]["exposed_tp_comm_s"] == \
        pytest.approx(2 * 48 * 4 * 1.5e-3, rel=1e-3)
    # Not modelled off Megatron's stacks; no dispatcher in a dense model
    titan = {**over, "training_job.runtime.stack": "torchtitan"}
    assert not any(a.startswith("training_job.runtime.moe_host_sync")
                   for a in ct.run(sc, overrides=titan).report["assumptions"])
    for extra, value in ((titan, "no"), ({**over, "training_job.model.preset": "llama3-8b"}, "yes")):
        with pytest.raises(ct.ScenarioError, match="training_job.runtime.moe_host_sync: got .*MoE model on the "
                                                   "megatron-core or nemo stack"):
            ct.run(sc, overrides={**extra, "training_job.runtime.moe_host_sync": value})
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.moe_host_sync"):
        ct.run(sc, overrides={**over, "training_job.runtime.moe_host_sync": "maybe"})
    # Megatron's --cuda-graph-impl: full-iteration capture is the sync-free path
    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --num-experts 8 "
            "--moe-router-topk 2 --expert-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 64 ")
    full = ct.from_megatron_args(args + "--cuda-graph-impl full_iteration")
    assert full["training_job"]["runtime"]["moe_host_sync"] == "no" and full.unmapped == []
    layers = ct.from_megatron_args(args + "--cuda-graph-impl transformer_engine")
    assert "moe_host_sync" not in layers["training_job"]["runtime"] and layers.unmapped == []
    assert any(n.startswith("--cuda-graph-impl transformer_engine") for n in layers.notes)


def test_token_dispatcher_sends_fewer_copies_in_every_mode():
    # Qwen3-30B-A3B (128 experts, top 8) with EP 16 over two nodes: DeepEP / HybridEP send a token
    # once to the other node where alltoall sends its four copies for the experts there
    sc = _model({"preset": "qwen3-30b-a3b"})
    over = _qwen3_moe_ep16(stack="nemo")
    for mode in ("analytical", "flow"):
        o = {**over, "network.mode": mode}
        a2a, deepep, hybridep = (ct.run(sc, overrides={**o, "training_job.runtime.moe_dispatcher": d}).report
                                 for d in ("alltoall", "deepep", "hybridep"))
        assert deepep["breakdown"]["exposed_tp_comm_s"] < 0.5 * a2a["breakdown"]["exposed_tp_comm_s"]
        assert deepep["step_time_s"] < a2a["step_time_s"]
        assert hybridep["step_time_s"] == deepep["step_time_s"]  # the same bytes on the same links
        # the compute is the same kernels (at the power-limited clock of a step with less idle time)
        assert deepep["breakdown"]["compute_s"] == pytest.approx(a2a["breakdown"]["compute_s"], rel=1e-2)
    for key, value in (("training_job.parallelism.expert_parallel", 1), ("training_job.model.moe.experts", 0)):
        with pytest.raises(ct.ScenarioError, match="training_job.runtime.moe_dispatcher: got \"deepep\".*expert_parallel > 1"):
            ct.run(sc, overrides={**over, "training_job.runtime.moe_dispatcher": "deepep", key: value})
    with pytest.raises(ct.ScenarioError, match="training_job.runtime.moe_dispatcher"):
        ct.run(sc, overrides={**over, "training_job.runtime.moe_dispatcher": "nccl"})
    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --num-experts 8 "
            "--moe-router-topk 2 --expert-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 64 ")
    for flags, expected in (("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", "hybridep"),
                            ("--moe-token-dispatcher-type flex", "deepep"), ("--moe-enable-deepep", "deepep"),
                            ("--moe-token-dispatcher-type alltoall", "alltoall")):
        meg = ct.from_megatron_args(args + flags)
        assert meg["training_job"]["runtime"]["moe_dispatcher"] == expected and meg.unmapped == [], flags
    gathered = ct.from_megatron_args(args + "--moe-token-dispatcher-type allgather")
    assert "moe_dispatcher" not in gathered["training_job"]["runtime"]
    assert any("allgather" in u for u in gathered.unmapped)
    dense = ct.from_megatron_args(args.replace("--expert-model-parallel-size 8 ", "") + "--moe-enable-deepep")
    assert "moe_dispatcher" not in dense["training_job"].get("runtime", {})
    assert any(n.startswith("moe_dispatcher deepep: no effect") for n in dense.notes)


def test_recompute_modules_replay_and_keep_less_in_every_mode():
    # Megatron's --recompute-modules: each module replays its forward before backward and keeps
    # none of what it replays; moe replays the expert block's all-to-all too
    sc = _model({"preset": "qwen3-30b-a3b"})
    over = _qwen3_moe_ep16(stack="nemo", recompute_granularity="selective")
    for mode in ("analytical", "flow"):
        o = {**over, "network.mode": mode}
        default, act, block = (ct.run(sc, overrides={**o, "training_job.runtime.recompute_modules": m}).report
                               for m in ("", "core_attn,moe_act,layernorm", "core_attn,moe"))
        assert block["memory"]["activations_bytes"] < act["memory"]["activations_bytes"] < \
            default["memory"]["activations_bytes"]
        assert default["step_time_s"] < act["step_time_s"] < block["step_time_s"]
        assert block["breakdown"]["exposed_tp_comm_s"] > act["breakdown"]["exposed_tp_comm_s"]
        # norms and activations are FLOP-free: the expert block's GEMMs are what a replay adds
        flops = [r["model"]["hardware_flops_per_iteration"] for r in (default, act, block)]
        assert flops[1] == pytest.approx(flops[0], rel=1e-12) and flops[2] > flops[1]
    for extra, why in (({"training_job.runtime.recompute_modules": "moe_act,foo"}, "\"foo\" needs a comma-separated"),
                       ({"training_job.runtime.recompute_modules": "mla_up_proj"}, "needs latent attention"),
                       ({"training_job.runtime.recompute_modules": "mlp"}, "needs a dense MLP"),
                       ({"training_job.runtime.recompute_modules": "moe_act",
                         "training_job.runtime.recompute_granularity": "full"}, "expected recompute_granularity selective"),
                       ({"training_job.runtime.recompute_modules": "moe_act",
                         "training_job.runtime.stack": "torchtitan"}, "megatron-core or nemo")):
        with pytest.raises(ct.ScenarioError, match="training_job.runtime.recompute_modules: got.*" + why):
            ct.run(sc, overrides={**over, **extra})
    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --num-experts 8 "
            "--moe-router-topk 2 --expert-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 64 "
            "--recompute-granularity selective --recompute-modules moe_act layernorm mhc --swiglu")
    meg = ct.from_megatron_args(args)
    assert meg["training_job"]["runtime"]["recompute_modules"] == "moe_act,layernorm"
    assert [u for u in meg.unmapped if u.startswith("--recompute-modules mhc")] and meg["training_job"]["model"][
        "activation"] == "swiglu"


def test_latent_attention_is_modelled_in_every_mode():
    # DeepSeek-V3's config.json (deepseek-ai/DeepSeek-V3), cut to 6 layers and 32 experts
    ds = {"model_type": "deepseek_v3", "num_hidden_layers": 6, "hidden_size": 7168, "num_attention_heads": 128,
          "num_key_value_heads": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048,
          "n_routed_experts": 32, "num_experts_per_tok": 8, "n_shared_experts": 1, "first_k_dense_replace": 1,
          "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
          "v_head_dim": 128, "vocab_size": 129280, "hidden_act": "silu", "tie_word_embeddings": False}
    sc = ct.from_hf_config(ds, seq_length=4096)
    m = sc["training_job"]["model"]
    assert m["mla"] == {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                        "v_head_dim": 128}
    assert "kv_heads" not in m and not any(u.split(" ")[0] in ("kv_lora_rank", "v_head_dim") for u in sc.unmapped)
    over = {"training_job.parallelism.tensor_parallel": 1, "training_job.parallelism.data_parallel": 64,
            "training_job.parallelism.expert_parallel": 8, "training_job.global_batch_size": 64}
    for mode in ("analytical", "flow"):
        o = {**over, "network.mode": mode}
        base, wide = (ct.run(sc, overrides={**o, "training_job.model.mla.v_head_dim": v}).report for v in (128, 192))
        # V's up-projection and the output projection widen by 128 heads x 64 per layer
        assert wide["model"]["parameters"] - base["model"]["parameters"] == 6 * (512 * 128 * 64 + 128 * 64 * 7168)
        assert wide["step_time_s"] > base["step_time_s"]
        assert wide["memory"]["activations_bytes"] > base["memory"]["activations_bytes"]
    for key, value, match in (("training_job.model.head_dim", 128, "training_job.model.head_dim = 128 must be 0"),
                              ("training_job.model.kv_heads", 8, "training_job.model.kv_heads = 8 must be 0 or"),
                              ("training_job.model.mla.v_head_dim", 0, "training_job.model.mla.v_head_dim = 0")):
        with pytest.raises(ct.ScenarioError, match=match):
            ct.run(sc, overrides={**over, key: value})
    with pytest.raises(ct.ScenarioError, match="needs training_job.model.mla.kv_lora_rank > 0"):
        ct.run(sc, overrides={**over, "training_job.model.mla.kv_lora_rank": 0})
    # Megatron's flags name the same widths
    meg = ct.from_megatron_args("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
                                "--multi-latent-attention --q-lora-rank 256 --kv-lora-rank 128 --qk-head-dim 64 "
                                "--qk-pos-emb-head-dim 32 --v-head-dim 64 --micro-batch-size 1 "
                                "--global-batch-size 64")
    assert meg["training_job"]["model"]["mla"]["kv_lora_rank"] == 128 and meg.unmapped == []


def test_hf_moe_unmapped_fields_and_refusals():
    sc = ct.from_hf_config(MIXTRAL_HF, seq_length=4096)
    m = sc["training_job"]["model"]
    assert m["moe"] == {"experts": 8, "top_k": 2} and m["seq_length"] == 4096
    assert any(u.startswith("some_new_field") for u in sc.unmapped)
    long = ct.from_hf_config({**MIXTRAL_HF, "max_position_embeddings": 131072})
    assert long["training_job"]["model"]["seq_length"] == 8192 and any("capped" in n for n in long.notes)
    with pytest.raises(ValueError, match="latent attention"):
        ct.from_hf_config({**LLAMA3_70B_HF, "model_type": "deepseek_v3", "kv_lora_rank": 512})
    with pytest.raises(ValueError, match="num_hidden_layers"):
        ct.from_hf_config({"model_type": "llama", "hidden_size": 8})


def test_megatron_arguments_map_layout_and_say_what_was_not_mapped():
    sc = ct.from_megatron_args(MEGATRON_70B)
    job = sc["training_job"]
    assert job["model"]["layers"] == 80 and job["model"]["kv_heads"] == 8 and job["model"]["vocab"] == 128256
    par = job["parallelism"]
    assert (par["tensor_parallel"], par["pipeline_parallel"], par["virtual_pipeline"], par["data_parallel"]) == \
        (8, 4, 4, 2)
    assert par["sequence_parallel"] is True and par["zero_stage"] == 1
    assert job["runtime"]["overlap_grad_reduce"] is True and job["runtime"]["overlap_param_gather"] is False
    assert job["global_batch_size"] == 128
    assert sc.unmapped == ["--made-up-flag 3: not mapped"]
    report = ct.run(sc).report
    assert report["memory"]["fits"] and report["step_time_s"] > 0
    # Megatron's own defaults when the flags are absent
    bare = ct.from_megatron_args(MEGATRON_70B.replace("--sequence-parallel", "").replace(
        "--use-distributed-optimizer", ""))
    assert bare["training_job"]["parallelism"]["sequence_parallel"] is False
    assert bare["training_job"]["parallelism"]["zero_stage"] == 0
    # the switches of the backward TP overlap and the FP8 amax group change the step
    sync = ct.from_megatron_args(MEGATRON_70B + " --no-async-tensor-model-parallel-allreduce --tp-only-amax-red")
    assert sync["training_job"]["runtime"]["tp_async_backward"] == "off"
    assert sync["training_job"]["runtime"]["fp8_amax_reduction"] == "tp-cp" and sync.unmapped == sc.unmapped
    assert ct.run(sync).report["step_time_s"] > report["step_time_s"]
    with pytest.raises(ValueError, match="--num-layers missing"):
        ct.from_megatron_args("--hidden-size 8 --num-attention-heads 1 --seq-length 8")
    with pytest.raises(ValueError, match="--tensor-model-parallel-size: got 'x'"):
        ct.from_megatron_args(MEGATRON_70B + " --tensor-model-parallel-size x")


def test_cli_import_prints_a_scenario_and_reports_on_stderr(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(MIXTRAL_HF))
    out = subprocess.run(CLI + ["import", "--hf", str(cfg), "--seq", "4096"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["training_job"]["model"]["moe"]["experts"] == 8
    assert "not mapped: some_new_field" in out.stderr
    dest = tmp_path / "meg.json"
    out = subprocess.run(CLI + ["import", "--megatron", MEGATRON_70B, "--out", str(dest)], capture_output=True,
                         text=True)
    assert out.returncode == 0 and json.loads(dest.read_text())["name"] == "megatron-args"
    bad = subprocess.run(CLI + ["import", "--megatron", "--hidden-size 8"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--num-layers missing" in bad.stderr and "Traceback" not in bad.stderr


def test_nccl_tests_takes_the_real_tools_sizes():
    base = os.path.join(ROOT, "scenarios", "default.json")
    a = subprocess.run(CLI + ["nccl-tests", base, "--nodes", "2", "-b", "1G", "-e", "8G"], capture_output=True,
                       text=True)
    b = subprocess.run(CLI + ["nccl-tests", base, "--nodes", "2", "--minbytes", "1GiB", "--maxbytes", "8GiB"],
                       capture_output=True, text=True)
    assert a.returncode == 0 and a.stdout == b.stdout and "8589934592" in a.stdout


def test_hot_spares_are_named_in_the_error_and_the_text_output(tmp_path):
    sc = _model({"preset": "llama3-70b"})
    sc["cluster"]["nodes"] = 128
    sc["training_job"]["parallelism"] = {"tensor_parallel": 8, "pipeline_parallel": 4}  # data_parallel derived
    sc["training_job"]["global_batch_size"] = 1024
    with pytest.raises(ct.ScenarioError, match=r"data_parallel 31 was derived: 125 of 128 nodes after "
                                               r"recovery.hot_spares = 0.02 keeps 3 as hot spares"):
        ct.run(sc)
    sc["training_job"]["global_batch_size"] = 992
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sc))
    out = subprocess.run(CLI + ["run", str(path), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 0 and "spares     4 of 128 nodes are not in the job" in out.stdout
    sc["training_job"]["parallelism"]["data_parallel"] = 32
    sc["training_job"]["global_batch_size"] = 1024
    path.write_text(json.dumps(sc))
    out = subprocess.run(CLI + ["run", str(path), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 0 and "spares" not in out.stdout


def test_pip_install_builds_a_package_that_runs_from_anywhere(tmp_path):
    # pip install . into a scratch venv that sees Debian's packages (offline: no build isolation);
    # the CMake build directory is the tree's (built already by the README's commands).
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, not the tree's
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", ROOT],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    out = subprocess.run([str(venv / "bin" / "clustertwin"), "run", os.path.join(ROOT, "scenarios", "default.json"),
                          "--set", "network.mode=analytical", "--quiet", "--json"], capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["step_time_s"] > 0
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import clustertwin; print(clustertwin.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, check=True, env=env).stdout
    assert str(venv) in where


def test_position_embedding_from_each_importer_and_its_effect():
    # Hugging Face families: learned tables (GPT-2), rotary (Llama), ALiBi (BLOOM) as none.
    assert ct.from_hf_config(LLAMA3_70B_HF)["training_job"]["model"]["position_embedding"] == "rope"
    gpt2 = {"model_type": "gpt2", "n_layer": 2, "n_embd": 256, "n_head": 4, "vocab_size": 50257, "n_positions": 1024}
    assert ct.from_hf_config(gpt2)["training_job"]["model"]["position_embedding"] == "learned"
    bloom = {**gpt2, "model_type": "bloom"}
    assert ct.from_hf_config(bloom)["training_job"]["model"]["position_embedding"] == "none"
    # Megatron: --position-embedding-type, and an unknown type is an error naming the flag.
    sc = ct.from_megatron_args(MEGATRON_70B + " --position-embedding-type learned_absolute")
    assert sc["training_job"]["model"]["position_embedding"] == "learned"
    with pytest.raises(ValueError, match="--position-embedding-type: got 'kerple'"):
        ct.from_megatron_args(MEGATRON_70B + " --position-embedding-type kerple")
    # The key changes the outcome: learned positions add seq x hidden parameters; rotary costs a
    # kernel of its own in an eager PyTorch stack.
    keys = {"layers": 2, "hidden": 1024, "heads": 8, "seq_length": 4096, "vocab": 32000, "activation": "swiglu"}
    runs = {}
    for pe in ("rope", "none", "learned"):
        s = _model({**keys, "position_embedding": pe})
        s["training_job"]["runtime"] = {"stack": "pytorch"}
        runs[pe] = ct.run(s).report
    assert runs["learned"]["model"]["parameters"] - runs["none"]["model"]["parameters"] == 4096 * 1024
    assert runs["rope"]["model"]["parameters"] == runs["none"]["model"]["parameters"]
    assert runs["rope"]["step_time_s"] > runs["none"]["step_time_s"]
    bad = _model({**keys, "position_embedding": "alibi"})
    with pytest.raises(Exception, match="training_job.model.position_embedding"):
        ct.run(bad)


def test_cross_entropy_fusion_from_megatron_arguments_and_its_effect():
    # Megatron: --cross-entropy-fusion-impl te acts with --cross-entropy-loss-fusion only.
    sc = ct.from_megatron_args(MEGATRON_70B + " --cross-entropy-loss-fusion --cross-entropy-fusion-impl te")
    assert sc["training_job"]["runtime"]["cross_entropy_fusion"] == "te"
    assert "cross_entropy_fusion" not in ct.from_megatron_args(
        MEGATRON_70B + " --cross-entropy-fusion-impl te")["training_job"]["runtime"]
    with pytest.raises(ValueError, match="--cross-entropy-fusion-impl: got 'apex'"):
        ct.from_megatron_args(MEGATRON_70B + " --cross-entropy-fusion-impl apex")
    # The key changes the outcome: the last stage's loss holds 2 bytes per logit instead of 6,
    # and the fused kernel moves fewer bytes, so the step is shorter.
    keys = {"layers": 2, "hidden": 1024, "heads": 8, "seq_length": 4096, "vocab": 128256, "activation": "swiglu"}
    runs = {}
    for ce in ("native", "te", "te-2.18"):
        s = _model(keys)
        s["training_job"]["runtime"] = {"stack": "megatron-core", "cross_entropy_fusion": ce}
        runs[ce] = ct.run(s).report
    mb = runs["te"]["memory"]
    logits = 4096 * 128256 // 8  # one micro-batch's tokens x the vocabulary shard of TP 8
    assert runs["native"]["memory"]["logits_loss_bytes"] - mb["logits_loss_bytes"] == pytest.approx(4 * logits, abs=4)
    assert runs["te-2.18"]["memory"]["logits_loss_bytes"] == runs["native"]["memory"]["logits_loss_bytes"]
    assert runs["te"]["step_time_s"] < runs["te-2.18"]["step_time_s"] < runs["native"]["step_time_s"]
    # Only Megatron's stacks have it: an error naming the key elsewhere.
    bad = _model(keys)
    bad["training_job"]["runtime"] = {"stack": "torchtitan", "cross_entropy_fusion": "te"}
    with pytest.raises(Exception, match="training_job.runtime.cross_entropy_fusion: got \"te\" on stack"):
        ct.run(bad)


def test_megatron_gradient_flags_change_the_step():
    # --no-gradient-accumulation-fusion: every micro-batch's gradients added by a kernel of their
    # own; --fp16 keeps 16-bit gradient buffers unless --accumulate-allreduce-grads-in-fp32.
    base = ct.from_megatron_args(MEGATRON_70B)
    assert "gradient_accumulation_fusion" not in base["training_job"]["runtime"]
    unfused = ct.from_megatron_args(MEGATRON_70B + " --no-gradient-accumulation-fusion")
    assert unfused["training_job"]["runtime"]["gradient_accumulation_fusion"] is False
    assert not [u for u in unfused.unmapped if "accumulation" in u]
    assert ct.run(unfused).report["step_time_s"] > ct.run(base).report["step_time_s"]
    fp16 = ct.from_megatron_args(MEGATRON_70B.replace("--bf16", "") + " --fp16")
    assert fp16["training_job"]["runtime"]["grad_reduce_in_fp32"] == "no"
    fp32 = ct.from_megatron_args(MEGATRON_70B.replace("--bf16", "") + " --fp16 --accumulate-allreduce-grads-in-fp32")
    assert fp32["training_job"]["runtime"]["grad_reduce_in_fp32"] == "yes"
    assert (ct.run(fp16).report["memory"]["gradients_bytes"]
            < ct.run(fp32).report["memory"]["gradients_bytes"])


@pytest.mark.parametrize("key,value", [("gradient_accumulation_fusion", False), ("grad_reduce_in_fp32", "no")])
def test_megatron_gradient_keys_are_refused_off_megatron(key, value):
    sc = ct.from_megatron_args(MEGATRON_70B)
    sc["training_job"]["runtime"]["stack"] = "torchtitan"
    sc["training_job"]["runtime"][key] = value
    with pytest.raises(ValueError, match=f"training_job.runtime.{key}"):
        ct.run(sc)


def test_sliding_window_layers_from_hugging_face_configs():
    # GPT-OSS: layer_types alternate sliding (even-indexed) and full; Gemma 3: every 6th layer
    # global; Mistral 7B v0.1: every layer windowed. The window shortens the step.
    oss = {"model_type": "gpt_oss", "num_hidden_layers": 4, "hidden_size": 2880, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
           "num_local_experts": 8, "num_experts_per_tok": 4, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention"] * 2, "max_position_embeddings": 131072,
           "initial_context_length": 4096, "swiglu_limit": 7.0, "experts_per_token": 4}
    sc = ct.from_hf_config(oss, seq_length=4096)
    model = sc["training_job"]["model"]
    assert (model["sliding_window"], model["full_attention_every"]) == (128, 2)
    assert model["activation"] == "swiglu" and not [u for u in sc.unmapped if "sliding_window" in u]
    gemma3 = {"model_type": "gemma3_text", "num_hidden_layers": 12, "hidden_size": 1152, "num_attention_heads": 4,
              "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912, "vocab_size": 262144,
              "sliding_window": 512, "sliding_window_pattern": 6, "max_position_embeddings": 32768}
    model = ct.from_hf_config(gemma3, seq_length=8192)["training_job"]["model"]
    assert (model["sliding_window"], model["full_attention_every"]) == (512, 6)
    mistral = {"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
               "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "sliding_window": 4096,
               "max_position_embeddings": 32768}
    windowed = ct.from_hf_config(mistral, seq_length=16384)
    assert windowed["training_job"]["model"]["sliding_window"] == 4096
    assert "full_attention_every" not in windowed["training_job"]["model"]
    full = ct.from_hf_config({**mistral, "sliding_window": None}, seq_length=16384)
    assert "sliding_window" not in full["training_job"]["model"]
    assert ct.run(windowed).report["step_time_s"] < ct.run(full).report["step_time_s"]
    # A choice of windowed layers the twin cannot express is reported, not guessed.
    odd = ct.from_hf_config({**oss, "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                                                     "full_attention"]}, seq_length=4096)
    assert "sliding_window" not in odd["training_job"]["model"]
    assert [u for u in odd.unmapped if u.startswith("sliding_window = 128")]


def test_full_attention_every_needs_a_window():
    sc = ct.from_hf_config({"model_type": "mistral", "num_hidden_layers": 4, "hidden_size": 512,
                            "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 32000,
                            "max_position_embeddings": 4096}, seq_length=2048)
    sc["training_job"]["model"]["full_attention_every"] = 2
    with pytest.raises(ValueError, match="training_job.model.full_attention_every = 2 needs"):
        ct.run(sc)
    sc["training_job"]["model"]["sliding_window"] = -1
    with pytest.raises(ValueError, match="sliding_window"):
        ct.run(sc)


def test_megatron_window_attention_flags():
    # --window-size "(left, 0)": left + 1 keys with the query; --window-attn-skip-freq N: one
    # full-attention layer after N - 1 windowed ones, or a 1/0 pattern.
    sc = ct.from_megatron_args(MEGATRON_70B + " --window-size (127,0) --window-attn-skip-freq 2")
    model = sc["training_job"]["model"]
    assert (model["sliding_window"], model["full_attention_every"]) == (128, 2)
    assert not [u for u in sc.unmapped if "window" in u]
    pattern = ct.from_megatron_args(MEGATRON_70B + " --window-size (4095,0) --window-attn-skip-freq [1,1,1,0]*20")
    assert pattern["training_job"]["model"]["full_attention_every"] == 4
    every = ct.from_megatron_args(MEGATRON_70B + " --window-size (4095,0)")
    assert every["training_job"]["model"]["sliding_window"] == 4096
    assert "full_attention_every" not in every["training_job"]["model"]
    assert ct.run(every).report["step_time_s"] < ct.run(ct.from_megatron_args(MEGATRON_70B)).report["step_time_s"]
    odd = ct.from_megatron_args(MEGATRON_70B + " --window-size (127,0) --window-attn-skip-freq [0,1,1,0]*20")
    assert "sliding_window" not in odd["training_job"]["model"]
    assert [u for u in odd.unmapped if "window_attn_skip_freq" in u]
    two_sided = ct.from_megatron_args(MEGATRON_70B + " --window-size (127,127)")
    assert [u for u in two_sided.unmapped if "window_size" in u]


def test_bucket_size_counts_bytes_of_the_gradient_buffer():
    # bucket_size is bytes of the gradient buffer: fp32 buffers (4 bytes per parameter) fill a
    # bucket with half the parameters of 16-bit ones, so the same backward issues about twice the
    # data-parallel reductions.
    sc = ct.from_megatron_args(MEGATRON_70B.replace("--use-distributed-optimizer", ""))
    sc["training_job"]["runtime"].update({"overlap_grad_reduce": True, "bucket_size": "256MiB"})

    def reductions(fp32: str) -> int:
        s = json.loads(json.dumps(sc))
        s["training_job"]["runtime"]["grad_reduce_in_fp32"] = fp32
        df = ct.run(s).collectives
        dp = df[df["op"] == "all_reduce"]
        return int(dp["count"].sum())
    wide, narrow = reductions("yes"), reductions("no")
    assert narrow > 0 and 1.7 < wide / narrow < 2.3
