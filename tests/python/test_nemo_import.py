"""NeMo / Megatron-Bridge training YAML -> scenario (issue 22: framework configs). The two
fixtures are written here in the layouts the frameworks use: a NeMo-Framework-Launcher training
file (trainer: + model:, NeMo 1.x) and a dumped Megatron-Bridge ConfigContainer (model:, train:,
ddp:, comm_overlap:, mixed_precision:), with only the fields that matter plus a few of the many
that do not."""
import json
import textwrap

import pytest

import clustertwin as ct
from clustertwin.cli import main

LAUNCHER = textwrap.dedent("""\
    defaults:
      - _self_
    run:
      name: llama3_1_70b
      results_dir: ${base_results_dir}/${.name}
    trainer:
      num_nodes: 128
      devices: 8
      precision: bf16
      max_steps: 300000
    exp_manager:
      name: megatron_llama
    model:
      mcore_gpt: true
      micro_batch_size: 1
      global_batch_size: 2048
      tensor_model_parallel_size: 4
      pipeline_model_parallel_size: 4
      virtual_pipeline_model_parallel_size: 10
      context_parallel_size: 2
      encoder_seq_length: 8192
      max_position_embeddings: 8192
      num_layers: 80
      hidden_size: 8192
      ffn_hidden_size: 28672
      num_attention_heads: 64
      num_query_groups: 8
      init_method_std: 0.008944
      normalization: rmsnorm
      activation: fast-swiglu
      share_embeddings_and_output_weights: false
      sequence_parallel: true
      activations_checkpoint_granularity: null
      fp8: false
      ub_tp_comm_overlap: true
      overlap_p2p_comm: true
      cpu_offloading: true
      tokenizer:
        library: huggingface
        type: meta-llama/Meta-Llama-3.1-70B
      optim:
        name: distributed_fused_adam
        lr: 0.00015
        overlap_grad_sync: true
        overlap_param_sync: true
      data:
        seq_length: 8192
        data_prefix:
        - .5
        - ${data_dir}/a
    """)

BRIDGE = textwrap.dedent("""\
    _target_: megatron.bridge.training.config.ConfigContainer
    checkpoint:
      save_interval: 2000
    comm_overlap:
      tp_comm_overlap: false
      overlap_grad_reduce: null
    ddp:
      use_distributed_optimizer: true
      overlap_grad_reduce: true
      overlap_param_gather: true
    mixed_precision:
      bf16: true
      fp8: e4m3
      fp8_recipe: tensorwise
    model:
      _target_: megatron.bridge.models.llama.Llama3ModelProvider8B
      num_layers: 32
      hidden_size: 4096
      ffn_hidden_size: 14336
      num_attention_heads: 32
      num_query_groups: 8
      seq_length: 8192
      vocab_size: 128256
      gated_linear_unit: true
      activation_func: {_call_: false, _target_: torch.nn.functional.silu}
      share_embeddings_and_output_weights: false
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: 1
      virtual_pipeline_model_parallel_size: null
      context_parallel_size: 2
      sequence_parallel: false
      recompute_granularity: null
      enable_cuda_graph: true
      init_method_std: 0.02
    optimizer:
      lr: 0.0003
      use_distributed_optimizer: true
    train:
      micro_batch_size: 1
      global_batch_size: 128
      train_iters: 50
    """)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_nemo_launcher_training_file(tmp_path):
    sc = ct.from_nemo_config(write(tmp_path, "llama3_1_70b.yaml", LAUNCHER))
    job = sc["training_job"]
    assert job["model"] == {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn_hidden": 28672,
                            "seq_length": 8192, "tied_embeddings": False, "activation": "swiglu", "vocab": 128256}
    assert job["parallelism"] == {"tensor_parallel": 4, "pipeline_parallel": 4, "virtual_pipeline": 10,
                                  "context_parallel": 2, "sequence_parallel": True, "zero_stage": 1,
                                  "data_parallel": 32}
    assert (job["micro_batch_size"], job["global_batch_size"]) == (1, 2048)
    rt = job["runtime"]
    assert rt == {"overlap_grad_reduce": True, "overlap_param_gather": True, "tp_comm_overlap": True,
                  "overlap_p2p": True, "recompute_granularity": "none", "precision": "bf16", "stack": "nemo"}
    assert (sc["cluster"]["nodes"], sc["cluster"]["gpus_per_node"]) == (128, 8)
    assert any("model.cpu_offloading = True" in u for u in sc.unmapped)
    assert not any("init_method_std" in u or "lr" in u.split(" ")[0] for u in sc.unmapped)
    assert any(n.startswith("vocab 128256") for n in sc.notes)
    r = ct.run(sc)
    assert r.report["step_time_s"] > 0 and r.report["cluster"]["gpus"] == 1024


def test_megatron_bridge_config_container(tmp_path):
    sc = ct.from_nemo_config(write(tmp_path, "llama3_8b.yaml", BRIDGE))
    job = sc["training_job"]
    assert job["model"]["vocab"] == 128256 and job["model"]["activation"] == "swiglu"
    assert job["parallelism"]["context_parallel"] == 2 and "virtual_pipeline" not in job["parallelism"]
    assert job["parallelism"]["zero_stage"] == 1 and job["parallelism"]["data_parallel"] == 32  # base 64 GPUs / CP 2
    assert job["runtime"]["precision"] == "fp8-cs"
    assert job["runtime"]["overlap_grad_reduce"] is True and job["runtime"]["tp_comm_overlap"] is False
    assert (job["micro_batch_size"], job["global_batch_size"]) == (1, 128)
    assert [u for u in sc.unmapped if "enable_cuda_graph" in u]
    # The FP8 recipe changes the outcome: the same config in bf16 is slower.
    bf16 = ct.from_nemo_config(write(tmp_path, "bf16.yaml", BRIDGE.replace("fp8: e4m3", "fp8: null")))
    assert bf16["training_job"]["runtime"]["precision"] == "bf16"
    assert ct.run(bf16).report["step_time_s"] > ct.run(sc).report["step_time_s"]


def test_launcher_interpolations_and_tokenizers():
    doc = {"trainer": {"num_nodes": 2, "devices": 8},
           "model": {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "encoder_seq_length": 2048,
                     "ffn_hidden_size": "${multiply:4, ${.hidden_size}}", "micro_batch_size": 1,
                     "global_batch_size": "${multiply:${.micro_batch_size}, 32}", "fsdp": True,
                     "fsdp_sharding_strategy": "full", "tokenizer": {"type": "mistralai/Mixtral-8x7B-v0.1"}}}
    sc = ct.from_nemo_config(doc)
    job = sc["training_job"]
    assert job["model"]["ffn_hidden"] == 4096 and job["global_batch_size"] == 32
    assert job["model"]["vocab"] == 32000 and job["parallelism"]["zero_stage"] == 3
    with pytest.raises(ValueError, match=r"model.ffn_hidden_size = '\$\{oc.env:FFN\}': an interpolation this"):
        ct.from_nemo_config({"model": {**doc["model"], "ffn_hidden_size": "${oc.env:FFN}"}})


def test_recipe_names_and_full_recompute():
    doc = {"mixed_precision": "bf16_with_mxfp8_mixed",
           "model": {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "seq_length": 2048,
                     "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1},
           "train": {"micro_batch_size": 2, "global_batch_size": 128}}
    sc = ct.from_nemo_config(doc)
    rt = sc["training_job"]["runtime"]
    assert rt["precision"] == "mxfp8" and rt["recompute_granularity"] == "full" and rt["recompute_layers"] == 1
    assert any("uniform" in u for u in sc.unmapped)


def test_nvfp4_recipe_names_and_mixed_precision_configs():
    model = {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "seq_length": 2048}
    train = {"micro_batch_size": 2, "global_batch_size": 128}
    by_name = ct.from_nemo_config({"mixed_precision": "bf16_with_nvfp4_mixed", "model": model, "train": train})
    assert by_name["training_job"]["runtime"]["precision"] == "nvfp4"
    spelled = ct.from_nemo_config({"mixed_precision": {"bf16": True, "fp4": "e2m1", "fp4_recipe": "nvfp4"},
                                   "model": model, "train": train})
    assert spelled["training_job"]["runtime"]["precision"] == "nvfp4"
    other = ct.from_nemo_config({"mixed_precision": {"fp4": "e2m1", "fp4_recipe": "mxfp4"}, "model": model,
                                 "train": train})
    assert any("fp4_recipe 'mxfp4'" in u for u in other.unmapped)
    meg = ct.from_megatron_args("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
                                "--micro-batch-size 1 --global-batch-size 8 --bf16 --fp4-format e2m1 --fp4-recipe nvfp4")
    assert meg["training_job"]["runtime"]["precision"] == "nvfp4"


@pytest.mark.parametrize("doc, match", [
    ({"model": {"hidden_size": 1}}, "no model.num_layers"),
    ({"model": {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "seq_length": 2048,
                "multi_latent_attention": True}}, "multi-head latent attention"),
    ({"model": {"num_layers": "${layers}", "hidden_size": 1024}}, "interpolation this import does not resolve"),
    ({"model": {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8}}, "no model.seq_length"),
    ({"model": {"num_layers": 4, "hidden_size": "big", "num_attention_heads": 8, "seq_length": 2}},
     "model.hidden_size: got 'big', expected int"),
    ({"model": {"num_layers": 4, "hidden_size": 64, "num_attention_heads": 8, "seq_length": 2,
                "sequence_parallel": "maybe"}}, "model.sequence_parallel: got 'maybe', expected true or false"),
    ({"model": {"num_layers": 4.5, "hidden_size": 64, "num_attention_heads": 8, "seq_length": 2}},
     "model.num_layers: got 4.5, expected int"),
])
def test_bad_configs_are_named(doc, match):
    with pytest.raises(ValueError, match=match):
        ct.from_nemo_config(doc)


def test_cli_import_nemo(tmp_path, capsys):
    src = write(tmp_path, "l.yaml", LAUNCHER)
    out = tmp_path / "sc.json"
    assert main(["import", "--nemo", str(src), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "not mapped: model.cpu_offloading" in err
    sc = json.loads(out.read_text())
    assert sc["training_job"]["parallelism"]["context_parallel"] == 2
    assert main(["validate", str(out)]) == 0
    assert main(["import", "--nemo", str(tmp_path / "missing.yaml")]) == 2
    bad = write(tmp_path, "bad.yaml", "model: [1, 2\n")
    assert main(["import", "--nemo", str(bad)]) == 2
    assert f"{bad}: not valid YAML" in capsys.readouterr().err


def test_yaml_numbers_as_yaml_1_2_reads_them(tmp_path):
    """NeMo configs write data weights as .0333: YAML 1.2 numbers JSON spells differently."""
    from clustertwin import _core
    path = write(tmp_path, "n.yaml", "a: .5\nb: +3\nc: 5.\nd: 007\ne: 1.e3\nf: -.25e-1\ng: '7'\nh: .inf\ni: 0x1F\n")
    assert json.loads(_core.read_document(str(path))) == {"a": 0.5, "b": 3, "c": 5.0, "d": 7, "e": 1000.0,
                                                          "f": -0.025, "g": "7", "h": ".inf", "i": "0x1F"}
    with pytest.raises(ValueError, match="1e400 is beyond the range"):
        _core.read_document(str(write(tmp_path, "big.yaml", "a: 1e400\n")))


def test_nemo1_distributed_adam_keeps_master_remainders_for_bf16_o2(tmp_path):
    o2 = LAUNCHER.replace("  mcore_gpt: true\n", "  mcore_gpt: true\n  megatron_amp_O2: true\n")
    sc = ct.from_nemo_config(write(tmp_path, "o2.yaml", o2))
    assert sc["training_job"]["runtime"]["master_weights"] == "remainder"
    assert any(n.startswith("master_weights remainder") for n in sc.notes)
    # FP8 primary weights make NeMo store fp32 masters; without O2 the weights are fp32
    fp8p = ct.from_nemo_config(write(tmp_path, "fp8p.yaml", o2.replace("  fp8: false\n", "  fp8: false\n  fp8_params: true\n")))
    assert "master_weights" not in fp8p["training_job"]["runtime"]
    assert "master_weights" not in ct.from_nemo_config(write(tmp_path, "o1.yaml", LAUNCHER))["training_job"]["runtime"]


def test_position_embedding_type_is_mapped(tmp_path):
    for kind, expected in (("rope", "rope"), ("learned_absolute", "learned"), ("alibi", "none")):
        text = LAUNCHER.replace("  num_layers: 80\n", f"  num_layers: 80\n  position_embedding_type: {kind}\n")
        sc = ct.from_nemo_config(write(tmp_path, f"{kind}.yaml", text))
        assert sc["training_job"]["model"]["position_embedding"] == expected
    text = LAUNCHER.replace("  num_layers: 80\n", "  num_layers: 80\n  position_embedding_type: kerple\n")
    sc = ct.from_nemo_config(write(tmp_path, "kerple.yaml", text))
    assert "position_embedding" not in sc["training_job"]["model"]
    assert any(u.startswith("model.position_embedding_type 'kerple'") for u in sc.unmapped)


def test_cross_entropy_fusion_impl_is_mapped(tmp_path):
    # Megatron-Bridge's GPTModelProvider has the loss fusion on unless the file turns it off.
    text = LAUNCHER.replace("  num_layers: 80\n", "  num_layers: 80\n  cross_entropy_fusion_impl: te\n")
    sc = ct.from_nemo_config(write(tmp_path, "te.yaml", text))
    assert sc["training_job"]["runtime"]["cross_entropy_fusion"] == "te"
    off = text.replace("  num_layers: 80\n", "  num_layers: 80\n  cross_entropy_loss_fusion: false\n")
    assert "cross_entropy_fusion" not in ct.from_nemo_config(write(tmp_path, "off.yaml", off))["training_job"]["runtime"]
    bad = LAUNCHER.replace("  num_layers: 80\n", "  num_layers: 80\n  cross_entropy_fusion_impl: apex\n")
    sc = ct.from_nemo_config(write(tmp_path, "bad.yaml", bad))
    assert any(u.startswith("model.cross_entropy_fusion_impl 'apex'") for u in sc.unmapped)


def test_gradient_accumulation_fusion_and_buffer_precision_are_mapped(tmp_path):
    # model.gradient_accumulation_fusion (TransformerConfig) and ddp.grad_reduce_in_fp32
    # (DistributedDataParallelConfig) change the step: unfused accumulation adds every
    # micro-batch's gradients into the buffer, and fp32 buffers double the data-parallel reduction.
    fused = ct.from_nemo_config(write(tmp_path, "fused.yaml", BRIDGE))
    assert fused["training_job"]["runtime"].get("gradient_accumulation_fusion", True) is True
    text = BRIDGE.replace("model:\n", "model:\n  gradient_accumulation_fusion: false\n", 1)
    unfused = ct.from_nemo_config(write(tmp_path, "unfused.yaml", text))
    assert unfused["training_job"]["runtime"]["gradient_accumulation_fusion"] is False
    assert not [u for u in unfused.unmapped if "gradient_accumulation_fusion" in u]
    assert ct.run(unfused).report["step_time_s"] > ct.run(fused).report["step_time_s"]
    for value, expected in (("true", "yes"), ("false", "no")):
        doc = BRIDGE.replace("ddp:\n", f"ddp:\n  grad_reduce_in_fp32: {value}\n", 1)
        sc = ct.from_nemo_config(write(tmp_path, f"g{value}.yaml", doc))
        assert sc["training_job"]["runtime"]["grad_reduce_in_fp32"] == expected
        assert not [u for u in sc.unmapped if "grad_reduce_in_fp32" in u]


def test_window_attention_fields_are_mapped(tmp_path):
    text = BRIDGE.replace("model:\n", "model:\n  window_size: [127, 0]\n  window_attn_skip_freq: 2\n", 1)
    sc = ct.from_nemo_config(write(tmp_path, "swa.yaml", text))
    model = sc["training_job"]["model"]
    assert (model["sliding_window"], model["full_attention_every"]) == (128, 2)
    assert not [u for u in sc.unmapped if "window" in u]


def test_token_dispatcher_fields_are_mapped(tmp_path):
    # Megatron-Bridge's MoE recipes: moe_token_dispatcher_type flex with moe_flex_dispatcher_backend
    moe = BRIDGE.replace("model:\n", "model:\n  num_moe_experts: 16\n  moe_router_topk: 2\n"
                         "  expert_model_parallel_size: 8\n", 1).replace("context_parallel_size: 2", "context_parallel_size: 1")
    for fields, expected in (("moe_token_dispatcher_type: flex\n  moe_flex_dispatcher_backend: hybridep\n", "hybridep"),
                             ("moe_token_dispatcher_type: alltoall\n", "alltoall"), ("moe_enable_deepep: true\n", "deepep")):
        sc = ct.from_nemo_config(write(tmp_path, f"{expected}.yaml", moe.replace("model:\n", "model:\n  " + fields, 1)))
        assert sc["training_job"]["runtime"]["moe_dispatcher"] == expected
        assert not [u for u in sc.unmapped if "dispatcher" in u or "deepep" in u]
    assert "moe_dispatcher" not in ct.from_nemo_config(write(tmp_path, "none.yaml", moe))["training_job"]["runtime"]
    # model.cuda_graph_impl full_iteration: Megatron's sync-free MoE path, no host sync per layer
    full = ct.from_nemo_config(write(tmp_path, "graphs.yaml", moe.replace("model:\n", "model:\n  cuda_graph_impl: full_iteration\n", 1)))
    assert full["training_job"]["runtime"]["moe_host_sync"] == "no"
    assert not [u for u in full.unmapped if "cuda_graph_impl" in u]
    assert ct.run(full).report["step_time_s"] < ct.run(ct.from_nemo_config(write(tmp_path, "eager.yaml", moe))).report["step_time_s"]


def test_recompute_modules_are_mapped(tmp_path):
    # Megatron-Bridge's model.recompute_modules under selective recompute
    moe = BRIDGE.replace("model:\n", "model:\n  num_moe_experts: 16\n  moe_router_topk: 2\n"
                         "  expert_model_parallel_size: 8\n", 1).replace("context_parallel_size: 2", "context_parallel_size: 1")
    doc = moe.replace("recompute_granularity: null", "recompute_granularity: selective\n  recompute_modules: [moe_act, layernorm]")
    sc = ct.from_nemo_config(write(tmp_path, "mods.yaml", doc))
    assert sc["training_job"]["runtime"]["recompute_modules"] == "moe_act,layernorm"
    assert not [u for u in sc.unmapped if "recompute" in u]
    plain = ct.from_nemo_config(write(tmp_path, "plain.yaml", doc.replace("[moe_act, layernorm]", "[core_attn]")))
    assert "recompute_modules" not in plain["training_job"]["runtime"]
    assert ct.run(sc).report["memory"]["activations_bytes"] < ct.run(plain).report["memory"]["activations_bytes"]
