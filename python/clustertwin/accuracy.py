"""Accuracy against published and measured runs: ``ct.accuracy()`` / ``clustertwin accuracy``.

Every validation set under ``tests/validation/`` is mapped row by row onto a scenario (the
mapping of each set, and why, is in ``SETS`` below and in ``tests/validation/README.md``),
run, and compared with the published value. Per set: rows, rows computed (the others say
why not), mean absolute percentage error (MAPE), the worst row, the MAPE of a naive baseline
(predicting the set's mean for every row) and the Spearman rank correlation of predicted
with published values. A set used to fit anything is labelled ``fitted`` and is not
validation; none of these sets was used to fit the model.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .api import run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VALIDATION = os.path.join(ROOT, "tests", "validation")
GIB = 2 ** 30


@dataclass
class _Case:
    """One row: its label, the published value and what it measures, and either scenario
    variants to run (the best-fitting one by ``pick`` is kept, as the source chose its layout)
    or the reason it cannot be computed."""
    label: str
    quantity: str
    published: float
    scenarios: list[dict] = field(default_factory=list)
    predict: Callable[[dict, dict], float] | None = None  # (report, scenario) -> value
    reason: str | None = None
    pick: str = "first"  # "first", or "min" over the scenarios that fit
    source: str = ""
    direct: Callable[[], float] | None = None  # a value computed without a training run (nccl-tests)


def _cluster(gpu: str, gpus: int, nic: str, fabric: dict | None = None, hbm: str | None = None,
             gpus_per_node: int = 8) -> dict:
    per_node = gpus_per_node if gpus >= gpus_per_node else gpus
    c = {"gpu": gpu, "nodes": max(1, gpus // per_node), "gpus_per_node": per_node, "nics_per_node": per_node, "nic": nic}
    if fabric:
        c["fabric"] = fabric
    if hbm:
        c["gpu_spec"] = {"hbm": hbm}
    return c


# NVIDIA's DGX SuperPODs (Selene: DGX A100 with HDR; EOS: DGX H100 with NDR; the DGX B200 /
# GB200 NVL72 systems of NeMo's and Megatron-Bridge's tables) run their compute fabric on
# InfiniBand, whose subnet manager programs destination-based routes into the fat tree (OpenSM's
# ftree / updn engines; D-mod-K, Zahavi 2010), not per-flow ECMP hashing: cluster.fabric.routing
# dmodk. Ethernet/RoCE clusters (Meta's, ByteDance's) keep the default ecmp.
_INFINIBAND = {"routing": "dmodk"}
SELENE = {"topology": "fat_tree", "tiers": 3, "switch_radix": 40, **_INFINIBAND}  # DGX A100 SuperPOD, HDR InfiniBand


def _selene(gpus: int) -> dict:
    c = _cluster("A100-80GB", gpus, "200Gbps", SELENE)
    c["nvlink"] = "300GB/s"
    return c


def _megatron_tflops(layers: int, hidden: int, vocab: int, seq: int, gbs: int, gpus: int, recompute: bool):
    factor = 96.0 if recompute else 72.0
    flops = factor * gbs * seq * layers * hidden * hidden * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    return lambda report, sc: flops / report["step_time_s"] / gpus / 1e12


def _scenario(cluster: dict, model: dict, par: dict, mb: int, gbs: int, runtime: dict, mode: str) -> dict:
    return {"name": "accuracy", "cluster": cluster, "network": {"mode": mode}, "recovery": {"hot_spares": 0},
            "training_job": {"model": model, "parallelism": par, "micro_batch_size": mb, "global_batch_size": gbs,
                             "steps": 2, "runtime": runtime}}


# ---- sets ----------------------------------------------------------------------------------

def _sc21_table1(mode: str) -> Iterable[_Case]:
    """Narayanan et al. SC'21 Table 1: GPT on Selene, TFLOP/s per GPU with recompute (Eq. 3).
    Each row runs the micro-batch and interleaving depth of the paper's artifact
    (Megatron-LM examples/sc21/run_table_1.sh, the file's `artifact`)."""
    for row in _load("megatron-sc21-table1.json")["rows"]:
        gpus, tp, pp, layers, hidden = row["gpus"], row["tp"], row["pp"], row["layers"], row["hidden"]
        gbs = row["global_batch"]
        dp = gpus // (tp * pp)
        model = {"layers": layers, "hidden": hidden, "heads": row["heads"], "seq_length": 2048, "vocab": 51200}
        # 2021 Megatron: batched blocking p2p (Sec. 4.1), unfused attention, and backward TP
        # all-reduces in line (the asynchronous ones came in Sep 2021, 3f65246); --fp16 with
        # 16-bit gradients accumulated in .grad and all-reduced in fp16 (no
        # --accumulate-allreduce-grads-in-fp32; gradient accumulation fusion came in Feb 2022,
        # 83b1e42). The artifact (examples/sc21/run_table_1.sh at de7dc40, Aug 2021) runs
        # --DDP-impl torch for the models without pipeline parallelism: PyTorch DDP's 25 MB
        # buckets all-reduced under the last micro-batch's backward (no_sync before it,
        # megatron/schedules.py); local DDP for the others: one all-reduce after the backward.
        torch_ddp = pp == 1
        runtime = {"recompute_granularity": "full", "attention": "unfused", "overlap_grad_reduce": torch_ddp,
                   "overlap_p2p": False, "tp_async_backward": "off", "grad_reduce_in_fp32": "no",
                   "gradient_accumulation_fusion": False}
        if torch_ddp:
            runtime["bucket_size"] = "25MiB"  # torch DistributedDataParallel bucket_cap_mb
        par = {"tensor_parallel": tp, "pipeline_parallel": pp, "data_parallel": dp,
               "virtual_pipeline": row["virtual_pipeline"], "zero_stage": 0}
        sc = _scenario(_selene(gpus), model, par, row["micro_batch"], gbs, runtime, mode)
        yield _Case(f"{row['params_b']}B on {gpus}", "TFLOP/s per GPU", row["tflops_per_gpu"], [sc],
                   _megatron_tflops(layers, hidden, 51200, 2048, gbs, gpus, True), source=row.get("source", ""))


# Korthikanti et al. 2022 (arXiv 2205.05198) Sec. 6 / Appendix: model FLOPs per iteration
# 72 B s l h^2 (1 + s / 6h + V / 12 l h) (no recompute), MFU against the A100's 312 TFLOP/s.
_KORTHIKANTI_VOCAB = 51200  # Megatron GPT's padded GPT-2 vocabulary, as in SC'21
_A100_PEAK = 312e12


def _korthikanti_batch(rows: list[dict], model: str) -> int | None:
    """The global batch of a Korthikanti model, from its published (MFU, iteration time) pair:
    B = MFU x time x GPUs x peak / (model FLOPs per sequence). The paper's Table 3 lists it but
    the transcriptions at hand do not; the pair pins it to an integer (22B: 3.99, 175B: 64.0,
    530B: 279.8, 1T: 512.3). None when no pair is published or it does not land within 2% of
    an integer."""
    for r in rows:
        if r["model"] == model and r.get("mfu_pct") and r.get("step_time_s") and r["num_gpus"] == (
                (r.get("tp") or 1) * (r.get("pp") or 1) * (r.get("dp") or 1)):
            s, l, h = r["seq_length"], r["layers"], r["hidden"]
            per_seq = 72.0 * s * l * h * h * (1 + s / (6 * h) + _KORTHIKANTI_VOCAB / (12 * l * h))
            b = r["mfu_pct"] / 100 * r["step_time_s"] * r["num_gpus"] * _A100_PEAK / per_seq
            if abs(b - round(b)) <= 0.02 * b:
                return int(round(b))
    return None


def _korthikanti(mode: str) -> Iterable[_Case]:
    """Korthikanti et al. 2022 Table 5: iteration time of GPT 22B-1T on Selene A100s with data
    parallel size 1, full recompute (2021 Megatron: tensor parallel without sequence
    parallelism) against sequence parallelism + selective recompute ("present work"). Megatron
    of 2022: unfused attention, blocking batched p2p. The micro-batch and interleaving are not
    published: as for SC'21, the fastest layout that fits is kept (micro-batch 1-8, 1-8 chunks).
    The batch comes from the model's (MFU, time) pair (_korthikanti_batch). Table 4's per-layer
    times (22B: forward + backward of one layer over the step's batch, TP comm included) are the
    transformer layer's kernels (ct.layer_kernels) times the micro-batches, plus the step's
    exposed TP time per layer. The 2,240-GPU MFU rows are not computed (no batch)."""
    rows = [r for r in _load("nemo_megatron_perf.json")["rows"] if _group(r) == "korthikanti"]
    for row in rows:
        quantity, published = ("step s", row["step_time_s"]) if row.get("step_time_s") else _published(row)
        label = f"{row['model']} {row['num_gpus']}x{row['gpu']} {row.get('recompute')}"
        case = _Case(label, quantity, published, source=row["source"])
        step_row = next((r["model"] for r in rows if r.get("step_time_s") and r["hidden"] == row["hidden"]
                         and r["layers"] == row["layers"]), row["model"])
        gbs = _korthikanti_batch(rows, step_row)
        if quantity not in ("step s", "layer ms") or gbs is None:
            case.reason = "the batch is not in the row"
        if case.reason:
            yield case
            continue
        gpus, tp, pp, layers = row["num_gpus"], row["tp"], row["pp"], row["layers"]
        dp = gpus // (tp * pp)
        model = {"layers": layers, "hidden": row["hidden"], "heads": row["heads"], "seq_length": row["seq_length"],
                 "vocab": _KORTHIKANTI_VOCAB}
        recompute = str(row["recompute"])
        if quantity == "layer ms":  # Table 4: each recompute and sequence-parallel setting
            granularity = next(g for g in ("selective", "full", "none") if recompute.startswith(g))
            present = "sequence_parallel" in recompute
        else:  # Table 5: 2021 (full recompute) against the present work (selective + SP)
            present = "selective" in recompute
            granularity = "selective" if present else "full"
        runtime = {"recompute_granularity": granularity, "attention": "unfused",
                   "overlap_grad_reduce": False, "overlap_p2p": False}
        for mb in (1, 2, 4, 8):
            if gbs % (mb * dp):
                continue
            m = gbs // (mb * dp)
            for v in (1, 2, 3, 4, 6, 8):
                if v > 1 and (pp == 1 or m % pp) or layers % (pp * v):
                    continue
                par = {"tensor_parallel": tp, "pipeline_parallel": pp, "data_parallel": dp, "virtual_pipeline": v,
                       "zero_stage": 0, "sequence_parallel": present}
                case.scenarios.append(_scenario(_selene(gpus), model, par, mb, gbs, runtime, mode))
        case.predict = _layer_ms if quantity == "layer ms" else (lambda report, sc: report["step_time_s"])
        case.pick = "min"
        yield case


def _layer_ms(report: dict, sc: dict) -> float:
    """One transformer layer's forward + backward over the step's batch, ms: its kernels per
    micro-batch times the micro-batches per replica, plus the step's exposed TP time per layer."""
    from .api import layer_kernels

    job = sc["training_job"]
    kernels = layer_kernels(sc)
    per_mb = kernels[kernels.layer == "transformer"].seconds.sum()
    m = job["global_batch_size"] // (job["micro_batch_size"] * job["parallelism"]["data_parallel"])
    return 1e3 * (m * per_mb + report["breakdown"]["exposed_tp_comm_s"] / job["model"]["layers"])


def _sc21_table2(mode: str) -> Iterable[_Case]:
    """Narayanan et al. SC'21 Table 2: ZeRO-3 (DeepSpeed of spring 2021) and PTD-P at fixed
    global batch, TFLOP/s per GPU with recompute."""
    for row in _load("sc21-table2-zero3.json")["rows"]:
        m = row["model"]
        gpus, tp, pp = row["num_gpus"], row["tensor_parallel"], row["pipeline_parallel"]
        zero3 = row["scheme"].startswith("ZeRO-3")
        model = {"layers": m["layers"], "hidden": m["hidden"], "heads": m["heads"], "seq_length": m["seq_len"],
                 "vocab": m["vocab"]}
        runtime = {"recompute_granularity": "full", "attention": "unfused",
                   "stack": "deepspeed-2021" if zero3 else "megatron-core", "overlap_grad_reduce": zero3,
                   "overlap_p2p": False, "tp_async_backward": "off"}  # the paper's code: spring 2021
        if not zero3:  # Megatron's --fp16 of 2021 and local DDP, as in Table 1 (_sc21_table1)
            runtime.update({"grad_reduce_in_fp32": "no", "gradient_accumulation_fusion": False})
        par = {"tensor_parallel": tp, "pipeline_parallel": pp, "data_parallel": gpus // (tp * pp),
               "zero_stage": 3 if zero3 else 0}
        gbs = row["global_batch_sequences"]
        sc = _scenario(_selene(gpus), model, par, row["micro_batch"], gbs, runtime, mode)
        yield _Case(f"{row['scheme'].split(' ')[0]} {m['name']} on {gpus}", "TFLOP/s per GPU",
                   row["throughput_published"]["value"], [sc],
                   _megatron_tflops(m["layers"], m["hidden"], m["vocab"], m["seq_len"], gbs, gpus, True),
                   source=row["source"])


def _torchtitan_memory(mode: str) -> Iterable[_Case]:
    """torchtitan's measured peak memory (max reserved GiB) of Llama 3.1 on H100 96 GB."""
    for row in _load("activation_memory.json")["rows"]:
        t = row.get("twin")
        if not t:
            continue
        model = {"layers": t["layers"], "hidden": row["hidden"], "heads": row["heads"], "kv_heads": t["kv_heads"],
                 "ffn_hidden": t["ffn_hidden"], "activation": t["activation"], "vocab": t["vocab"],
                 "tied_embeddings": t["tied_embeddings"], "seq_length": row["seq_length"]}
        par = {"tensor_parallel": t["tp"], "pipeline_parallel": t["pp"], "context_parallel": t["cp"],
               "data_parallel": t["dp"], "virtual_pipeline": t["virtual_pipeline"], "zero_stage": t["zero_stage"]}
        runtime = {"recompute_granularity": t["recompute"], "stack": t["stack"]}
        gpus = t["tp"] * t["pp"] * t["cp"] * t["dp"]
        cluster = _cluster("H100-SXM", gpus, "400Gbps")
        cluster["gpu_spec"] = dict(_GRAND_TETON_H100)
        sc = _scenario(cluster, model, par, t["micro_batch"],
                       t["global_batch"], runtime, "analytical")
        label = f"{row['model']} s{row['seq_length']} tp{t['tp']} pp{t['pp']} cp{t['cp']} dp{t['dp']}"
        if t.get("compile"):
            label += " compile"
        yield _Case(label, "reserved GiB", row["measured_peak_gib"], [sc],
                   lambda report, sc: report["memory"]["reserved_bytes"] / GIB, source=row["source"])
    for row in _load("torchtitan-h200.json")["rows"]:  # the H200 runs' peak memory (max reserved)
        gpus, sc = _torchtitan_h200_scenario(row, mode)
        yield _Case(f"{row['model']} {gpus}xH200 s{row['seq_length']} float8 compile", "reserved GiB",
                    row["peak_memory_gib"], [sc], lambda report, sc: report["memory"]["reserved_bytes"] / GIB,
                    source=row["source"])


def _one_h200(m: dict, model_keys: dict, mode: str, recompute: str = "none") -> dict:
    """A single-H200 step of the project's own measurements (plain PyTorch under autocast): the
    row's shape (layers, hidden, heads, seq, micro_batch, vocab) plus `model_keys`."""
    model = {"layers": m["layers"], "hidden": m["hidden"], "heads": m["heads"], "seq_length": m["seq"],
             "vocab": m["vocab"], **model_keys}
    par = {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": 1}
    runtime = {"recompute_granularity": recompute, "stack": "pytorch"}
    return _scenario(_cluster("H200-SXM", 1, "400Gbps"), model, par, m["micro_batch"], m["micro_batch"], runtime, mode)


def _h200_step(mode: str) -> Iterable[_Case]:
    """One measured training step on one H200 (PyTorch, autocast bf16), without the profiler."""
    meta = _load("h200-gpt1.4b-step.json")
    # 1,418,842,112 parameters = untied LM head + learned positions (a tied head gives 1.316e9)
    sc = _one_h200(meta["model"], {"tied_embeddings": False}, mode)
    yield _Case("GPT 1.42B mb 8 on 1 H200", "step s", meta["unprofiled_step_s"], [sc],
               lambda report, sc: report["step_time_s"], source="tests/validation/h200-gpt1.4b-step.json")


def _h200_pytorch_steps(mode: str) -> Iterable[_Case]:
    """Training steps measured on one H200 by tools/device/h200_sustained.py (plain PyTorch,
    autocast bf16, fused AdamW): step time, peak allocated and peak reserved memory, PyTorch's
    default caching allocator. Row by row the model is the program's: untied head, no dropout,
    no position encoding (its GPT counts 1,414,647,808 parameters, 2048 x 2048 fewer than
    h200-step's learned-position model; its SwiGLU model has no RoPE)."""
    data = _load("h200-pytorch-steps.json")
    src = "tests/validation/h200-pytorch-steps.json"
    for row in data["rows"]:
        if row["alloc_conf"] != "default":
            continue
        m = row["model"]
        extra = {"tied_embeddings": False, "dropout": "no", "activation": "swiglu" if m.get("swiglu") else "gelu",
                 "position_embedding": "none"}  # the program has neither learned positions nor RoPE
        if m.get("ffn"):
            extra["ffn_hidden"] = m["ffn"]
        sc = _one_h200(m, extra, mode, "full" if m.get("recompute") else "none")
        step = row["step_s_steps_2_to_5_median"]
        if data["sustained"]["name"] == row["name"]:
            step = data["sustained"]["sustained_step_s"]
        yield _Case(f"{row['name']} step", "step s", step, [sc], lambda report, sc: report["step_time_s"],
                    source=src)
        yield _Case(f"{row['name']} allocated", "allocated GiB", row["max_allocated_bytes"] / GIB, [sc],
                    lambda report, sc: report["memory"]["allocated_bytes"] / GIB, source=src)
        yield _Case(f"{row['name']} reserved", "reserved GiB", row["max_reserved_bytes"] / GIB, [sc],
                    lambda report, sc: report["memory"]["reserved_bytes"] / GIB, source=src)


# GPU of a row -> (catalog GPU, NIC per GPU, GPUs per node). GB200/GB300: NVL72 compute trays
# of 4 GPUs with one ConnectX-7 400G (GB200) or ConnectX-8 800G (GB300) per GPU.
# torchtitan's H100s (benchmarks/llama3_h100_202412_torchtitan.md, "Hardware"): Grand Teton
# hosts, each H100 with 96 GB of HBM2e at 2.4 TB/s and the default 500 W power limit (the SXM
# part is rated 700 W); the compute die is H100 SXM's.
_GRAND_TETON_H100 = {"hbm": "96GiB", "hbm_bandwidth": "2.4TB/s", "power_limit": "500W"}

_GPUS = {"A100": ("A100-80GB", "200Gbps", 8), "H100": ("H100-SXM", "400Gbps", 8), "B200": ("B200", "400Gbps", 8),
         "H100 (96GB HBM2e, 500W)": ("H100-SXM", "400Gbps", 8), "GB200": ("GB200", "400Gbps", 4),
         "GB300": ("GB300", "800Gbps", 4), "B300": ("B300", "800Gbps", 8)}


def _perf_rows(mode: str, group: str) -> Iterable[_Case]:
    """nemo_megatron_perf.json, one source group at a time: tokens/s per GPU."""
    for row in _load("nemo_megatron_perf.json")["rows"]:
        if _group(row) != group:
            continue
        label = f"{row['model']} {row.get('num_gpus')}x{row['gpu'].split(' ')[0]} {row.get('precision') or ''}".strip()
        quantity, published = _published(row)
        case = _Case(label, quantity, published, source=row["source"])
        case.reason = _perf_reason(row, quantity)
        if case.reason is None:
            case.scenarios, case.predict = _perf_scenario(row, mode)
            if quantity == "TFLOP/s per GPU":
                flops, gpus = _nemo_long_sequence_flops(row), row["num_gpus"]
                case.predict = lambda report, sc, f=flops, n=gpus: f / report["step_time_s"] / n / 1e12
        yield case


# NeMo's model FLOPs per step at the long-sequence table's commit (NVIDIA/NeMo 19fadb67, May 2025,
# nemo/utils/flops_formulas.py llama2 / llama3): gbs s L h^2 (12 + 12 g/a + 18 f/h + 12 s/h +
# 6 V/(L h)), the attention term not yet halved for the causal mask (NeMo added that discount in
# August 2025, #14424), vocabulary 32,000 (Llama 2) or 128,256 (Llama 3).
def _nemo_long_sequence_flops(row: dict) -> float:
    s, L, h, f = row["seq_length"], row["layers"], row["hidden"], row["ffn_hidden"]
    g, a, v = row["kv_heads"], row["heads"], _vocab(row)
    return row["global_batch"] * s * L * h * h * (12 + 12 * g / a + 18 * f / h + 12 * s / h + 6 * v / (L * h))


def _published_dp(row: dict) -> int | None:
    m = re.search(r"published DP column = (\d+)", str(row.get("notes") or ""))
    return int(m.group(1)) if m else None


def _published(row: dict) -> tuple[str, float]:
    for key, name in (("tokens_per_sec_per_gpu", "tokens/s per GPU"), ("mfu_pct", "MFU %"), ("step_time_s", "step s"),
                      ("layer_total_ms", "layer ms"), ("tflops_per_gpu", "TFLOP/s per GPU")):
        if row.get(key) is not None:
            return name, float(row[key])
    return "none", math.nan


def _precision(row: dict) -> str | None:
    """The twin's training_job.runtime.precision for a row: NeMo 24.07 "fp8" is Transformer
    Engine's delayed scaling (fp8); "fp8-cs" and torchao float8 (tensorwise) are per-tensor
    current scaling (fp8-cs); "mxfp8" / "fp8-mx" are Blackwell block scaling (mxfp8); "nvfp4" is
    Transformer Engine's NVFP4 block scaling (nvfp4)."""
    p = str(row.get("precision") or "bf16").lower()
    if "fp4" in p:
        return "nvfp4"
    if "mx" in p:
        return "mxfp8"
    if "fp8-cs" in p or "float8" in p or "tensorwise" in p:
        return "fp8-cs"
    return "fp8" if "fp8" in p else "bf16"


# Vocabulary of model families whose rows do not state it: NeMo's GPT-3 recipes use the GPT-2
# BPE tokenizer (50,257 tokens, Megatron pads the embedding); Nemotron-4 has 256,000 tokens
# (Nemotron-4 15B technical report, arXiv 2402.16819, Sec. 2).
_FAMILY_VOCAB = {"GPT3-": 50257, "Nemotron-": 256000}


def _vocab(row: dict) -> int | None:
    if row.get("vocab") is not None:
        return row["vocab"]
    return next((v for prefix, v in _FAMILY_VOCAB.items() if row["model"].startswith(prefix)), None)


# Rows whose shape is a model preset of the twin (models/scenario/model_presets.cpp): Megatron-
# Bridge's DeepSeek-V3 rows say "w/o MTP", as the preset trains it; their notes say the routing
# was force-balanced and dropless, as the twin's expert GEMMs assume (capacity factor 1).
_ROW_PRESET = {"DeepSeekV3 (w/o MTP)": "deepseek-v3", "DeepSeekV3": "deepseek-v3", "Qwen3_30B_a3B": "qwen3-30b-a3b",
               "Qwen3_235B_a22B": "qwen3-235b-a22b", "GPT OSS 120B": "gpt-oss-120b", "GPT OSS 20B": "gpt-oss-20b",
               "Qwen3_8B": "qwen3-8b"}
# The token dispatcher of Megatron-Bridge's MoE recipes (moe_flex_dispatcher_backend;
# scripts/performance/configs/{deepseek,gpt_oss,qwen}/*_workload_base_configs.py at 0426418 /
# 07eea52 / 01b2977, and the 25.11 DeepSeek-V3 recipes at 5a7e66e): HybridEP for DeepSeek-V3,
# GPT-OSS 120B (V2) and Qwen3-30B-A3B on every GPU, and for Qwen3-235B-A22B on GB300 / GB200;
# alltoall (moe_token_dispatcher_type) for Qwen3-235B-A22B on B300, B200 and H100.
# GPT-OSS 120B on H100 runs its base recipe's alltoall (gpt_oss_120b_pretrain_64gpu_h100_bf16_config,
# src/megatron/bridge/recipes/gpt_oss/h100/gpt_oss.py at 067f987: moe_token_dispatcher_type).
_MOE_ALLTOALL = {("Qwen3_235B_a22B", "H100"), ("Qwen3_235B_a22B", "B300"), ("Qwen3_235B_a22B", "B200"),
                 ("GPT OSS 120B", "H100")}
# megatron-bridge-moe rows the twin cannot compute, and why.
_MOE_NOT_MODELLED = {
    "Kimi_K2": "the Muon optimizer (the table's note) is not modelled, nor is there a Kimi K2 preset"}


def _perf_reason(row: dict, quantity: str) -> str | None:
    if quantity == "TFLOP/s per GPU":
        if "performance_long_sequence" not in row["source"]:
            return "only the source's model TFLOP/s is published; its FLOP convention is not reproduced"
        dp = _published_dp(row)
        layout = (row.get("tp") or 1) * (row.get("pp") or 1) * (row.get("cp") or 1) * (dp or 0)
        if layout != row["num_gpus"]:
            return (f"the published TP x PP x CP x DP ({layout}) is not the row's {row['num_gpus']} GPUs; "
                    "the layout is ambiguous")
    if row["gpu"] not in _GPUS:
        return f"GPU {row['gpu']} is not in the catalog"
    if row["model"] in _ROW_PRESET:  # the shape from the twin's preset of the model
        return None
    if row.get("layers") is None or row.get("hidden") is None:
        return "the model shape is not in the row"
    if quantity == "layer ms":
        return "per-layer times are not in the report"
    if row.get("global_batch") is None and row.get("micro_batch") is None:
        return "the batch is not in the row"
    if _vocab(row) is None:
        return "the vocabulary is not in the row"
    if (row.get("ep") or 1) > 1:
        return "MoE rows need their expert shapes, not in the row"
    return None


# Megatron-Bridge's Llama 3 70B FSDP recipes on GB200/GB300 offload activations to the Grace
# CPU (cpu_offloading_num_layers): scripts/performance/configs/llama3/workload_base_configs.py
# at 5a7e66e (Nov 2025, the 25.11 container's tables; unchanged in perf_recipes/llama/gb*00/
# llama3.py at 067f987, Aug 2026): GB200 bf16 20 / fp8-cs 40, GB300 bf16 30 / fp8-cs 20. The
# 26.04.01 table's "fp8" FSDP rows are taken as the fp8-cs recipe (the only FP8 FSDP recipe).
_MEGATRON_BRIDGE_OFFLOAD = {("LLAMA3_70B", "GB200", False): 20, ("LLAMA3_70B", "GB200", True): 40,
                            ("LLAMA3_70B", "GB300", False): 30, ("LLAMA3_70B", "GB300", True): 20}


def _perf_scenario(row: dict, mode: str, group: str | None = None):
    group = group or _group(row)
    gpu, nic, per_node = _GPUS[row["gpu"]]
    gpus = row["num_gpus"]
    tp, pp, cp = row.get("tp") or 1, row.get("pp") or 1, row.get("cp") or 1
    dp = gpus // (tp * pp * cp)
    torchtitan = str(row.get("framework", "")).startswith("torchtitan")
    fsdp = (row.get("fsdp") or 0) > 1 or torchtitan  # torchtitan always shards with FSDP2 (over DP x CP)
    recompute = str(row.get("recompute") or "none").split(" ")[0]
    recompute = recompute if recompute in ("none", "selective", "full") else "none"
    if row["model"] in _ROW_PRESET:
        model = {"preset": _ROW_PRESET[row["model"]], "seq_length": row["seq_length"]}
    else:
        model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"],
                 "kv_heads": row.get("kv_heads") or 0, "ffn_hidden": row.get("ffn_hidden") or 0,
                 "activation": "swiglu" if "llama" in row["model"].lower() else "gelu", "vocab": _vocab(row),
                 "tied_embeddings": False, "seq_length": row["seq_length"]}
    if row["model"].startswith("Nemotron-"):
        model["dropout"] = "no"  # NeMo's Nemotron recipes: hidden and attention dropout 0 (squared-ReLU MLP, 2 GEMMs as gelu)
    mb = row.get("micro_batch") or 1
    gbs = row.get("global_batch") or mb * dp
    if torchtitan and pp > 1:  # the local batch split into pipeline_parallel_microbatches = pp
        gbs, mb = mb * dp, max(1, mb // pp)
    vp = row.get("vp") or 1
    if torchtitan and pp > 1 and "Interleaved" in str(row.get("framework", "")) and row.get("vp") is None:
        # torchtitan 9dec370 pipelining_utils.generate_split_points: a multi-stage schedule
        # (Interleaved 1F1B) without split points gets 2 stages per rank
        vp = 2
    par = {"tensor_parallel": tp, "pipeline_parallel": pp, "context_parallel": cp, "data_parallel": dp,
           "virtual_pipeline": vp, "zero_stage": 3 if fsdp else 1}
    if (row.get("ep") or 1) > 1:
        # Megatron-Bridge's MoE recipes fold experts below TP (expert_tensor_parallel_size=1,
        # scripts/performance/configs/deepseek/workload_base_configs.py at 5a7e66e)
        par.update({"expert_parallel": row["ep"], "expert_tensor_parallel": 1})
    nvidia = group in ("nemo", "nemo-long-sequence", "megatron-bridge")
    runtime = {"recompute_granularity": recompute,
               "stack": "torchtitan" if torchtitan else "nemo" if nvidia else "megatron-core",
               "precision": _precision(row)}
    if nvidia and tp > 1:  # NVIDIA's performance recipes turn on TP overlap (userbuffers configs) with TP
        runtime["tp_comm_overlap"] = True
    if torchtitan and tp > 1 and re.search(r"async ?tp", str(row.get("framework", "")), re.IGNORECASE):
        # torchtitan's parallelism.enable_async_tensor_parallel (with torch.compile): PyTorch's
        # micro-pipelined TP, which tp_comm_overlap runs on the torchtitan stack
        runtime["tp_comm_overlap"] = True
    if str(row.get("framework", "")).startswith("NeMo 24.03"):
        # NeMo's Dockerfile builds on nvcr.io/nvidia/pytorch:24.01-py3 from February to April 2024
        # (NVIDIA/NeMo 666db39684, cb3f2bc748, a3825d54e2), a container with cuDNN 8.9.7: the
        # attention kernels before cuDNN 9.0's flash-attention speed-ups
        runtime["attention_kernel"] = "cudnn-8.9"
    if group == "megatron-bridge" and (row.get("ep") or 1) > 1:
        runtime["moe_dispatcher"] = "alltoall" if (row["model"], row["gpu"]) in _MOE_ALLTOALL else "hybridep"
    if group == "megatron-bridge":
        # scripts/performance/utils/helpers.py set_common_perf_overrides (bf75c658c, Nov 2025; at
        # 5a7e66e): cross_entropy_fusion_impl = "te" for every recipe; the 25.11 and 26.04
        # containers ship Transformer Engine 2.9-2.14 (in-place bf16 gradient)
        runtime["cross_entropy_fusion"] = "te"
    offload = _MEGATRON_BRIDGE_OFFLOAD.get((row["model"], row["gpu"], _precision(row) != "bf16")) if fsdp else None
    if offload and group == "megatron-bridge":
        runtime["offload_activation_layers"] = offload
    if torchtitan and "compile" in str(row.get("framework", "")):
        runtime["torch_compile"] = True
        if "Dec 2024" in str(row.get("framework", "")):
            runtime["compile_loss"] = "eager"  # torchtitan 9dec370 train.py: torch.compile(loss_fn) commented out
    # NVIDIA's own tables (and Korthikanti et al., on Selene) ran on InfiniBand DGX systems
    infiniband = nvidia or group == "korthikanti"
    cluster = _cluster(gpu, gpus, nic, dict(_INFINIBAND) if infiniband else None, gpus_per_node=per_node)
    if "96GB" in row["gpu"]:
        cluster["gpu_spec"] = dict(_GRAND_TETON_H100)
    if per_node == 4 and gpus >= 64:
        # NVIDIA's benchmark launcher allocates NVL72 racks in 16-tray (64-GPU) NVLink blocks
        # (Megatron-Bridge scripts/performance, slurm --segment 16): a 256-GPU run is four
        # 64-GPU NVLink domains joined by InfiniBand.
        cluster["nvlink_domain"] = 64
    return [_scenario(cluster, model, par, mb, gbs, runtime, mode)], lambda report, sc: report["tokens_per_s_per_gpu"]


def _moe_runtime(case: _Case, dispatcher: str | None = None, ep_overlap: bool | None = None,
                 recompute_modules: Iterable[str] = (), cuda_graphs: str | None = None) -> dict:
    """A MoE row's recipe settings on its (first) scenario's runtime: the token dispatcher,
    Megatron's EP overlap (moe_a2a_overlap), the selective recompute's modules and, with
    full-iteration CUDA graphs (Megatron's sync-free MoE path), no host sync per MoE layer
    (moe_host_sync), where given. Returns the runtime for further keys."""
    runtime = case.scenarios[0]["training_job"]["runtime"]
    if dispatcher is not None:
        runtime["moe_dispatcher"] = dispatcher
    if ep_overlap is not None:
        runtime["moe_a2a_overlap"] = ep_overlap
    if cuda_graphs == "full_iteration":
        runtime["moe_host_sync"] = "no"
    modules = list(recompute_modules or ())
    if modules:
        runtime.update(recompute_granularity="selective", recompute_modules=",".join(modules))
    return runtime


def _row_recipe(case: _Case, row: dict, keys: Iterable[str]) -> None:
    """Runtime keys a row copies from its recipe onto its (first) scenario, those of `keys` the
    row gives."""
    runtime = case.scenarios[0]["training_job"]["runtime"]
    runtime.update({key: row[key] for key in keys if key in row})


def _megatron_bridge_moe(mode: str) -> Iterable[_Case]:
    """megatron-bridge-moe.json: Megatron-Bridge's MoE rows, each model from the twin's preset,
    run as the megatron-bridge set runs its rows (_perf_scenario: stack nemo, TE cross entropy,
    NVL72 racks in 64-GPU NVLink blocks, experts folded below TP)."""
    for row in _load("megatron-bridge-moe.json")["rows"]:
        label = f"{row['model']} {row['num_gpus']}x{row['gpu']} {row['precision']} EP{row['ep']} PP{row['pp']}"
        case = _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], source=row["source"])
        case.reason = _MOE_NOT_MODELLED.get(row["model"])
        if case.reason is None:
            case.scenarios, case.predict = _perf_scenario(row, mode)
            # Megatron's combined 1F1B schedule and the CUDA graphs as each row's recipe had them
            # (ep_overlap, cuda_graphs: the row's recipe_source)
            _moe_runtime(case, ep_overlap=row.get("ep_overlap"), recompute_modules=row.get("recompute_modules") or (),
                         cuda_graphs=row.get("cuda_graphs"))
        yield case


def _megatron_bridge_moe_h100(mode: str) -> Iterable[_Case]:
    """megatron-bridge-moe-h100.json: one Qwen3-30B-A3B layout on 16 H100 with the token
    dispatcher and Megatron's EP overlap varied, each row run as the megatron-bridge-moe rows are
    (_perf_scenario) with the row's dispatcher, overlap and BF16. The MoE host sync
    (moe_host_sync) is fitted on these rows: the set is labelled fitted. The per-layer CUDA graphs'
    launch savings and the unfused permutation of the alltoall pair are not modelled."""
    for row in _load("megatron-bridge-moe-h100.json")["rows"]:
        label = (f"{row['model']} {row['num_gpus']}x{row['gpu']} EP{row['ep']} {row['dispatcher']}"
                 f"{' + EP overlap' if row['ep_overlap'] else ''}")
        case = _Case(label, "step s", row["step_time_s"], source=row["source"])
        perf = {"model": "Qwen3_30B_a3B", "gpu": row["gpu"], "num_gpus": row["num_gpus"], "tp": row["tp"],
                "pp": row["pp"], "cp": row["cp"], "ep": row["ep"], "micro_batch": row["micro_batch"],
                "global_batch": row["global_batch"], "seq_length": row["seq_length"], "precision": row["precision"],
                "source": row["source"]}
        case.scenarios, _ = _perf_scenario(perf, mode)
        _moe_runtime(case, row["dispatcher"], row["ep_overlap"])
        case.predict = lambda report, sc: report["step_time_s"]
        yield case


def _megatron_bridge_cards(mode: str) -> Iterable[_Case]:
    """megatron-bridge-cards.json: Megatron-Bridge's verification-card runs, step seconds, each
    run as the megatron-bridge-moe rows are (_perf_scenario) with its recipe's dispatcher, EP
    overlap, recompute modules and overlap_grad_reduce (and, for the base recipes of the bounded
    Qwen3-8B and GPT-OSS 20B runs, TP overlap, grad_reduce_in_fp32 and the cross entropy);
    full-iteration CUDA graphs run Megatron's sync-free MoE path (moe_host_sync no). DeepSeek-V3's
    MTP layer, its custom pipeline layout and GPT-OSS 20B's learned (not forced-balanced) routing
    are not modelled."""
    for row in _load("megatron-bridge-cards.json")["rows"]:
        label = (f"{row['model']} {row['num_gpus']}x{row['gpu']} {row['precision']} TP{row['tp']} PP{row['pp']} "
                 f"EP{row['ep']} mb{row['micro_batch']} gbs{row['global_batch']} {row['dispatcher'] or 'dense'}")
        case = _Case(label, "step s", row["step_time_s"], source=row["source"])
        case.scenarios, _ = _perf_scenario(row, mode, group="megatron-bridge")
        _moe_runtime(case, row["dispatcher"], row["ep_overlap"], row["recompute_modules"], row.get("cuda_graphs"))
        # overlap_grad_reduce in every row; the base (non-performance) recipes' settings where
        # they differ from the performance ones
        _row_recipe(case, row,
                    ("overlap_grad_reduce", "tp_comm_overlap", "grad_reduce_in_fp32", "cross_entropy_fusion"))
        case.predict = lambda report, sc: report["step_time_s"]
        yield case


def _megatron_bridge_nvfp4(mode: str) -> Iterable[_Case]:
    """megatron-bridge-nvfp4.json: Megatron-Bridge's dense NVFP4 layouts, each run as the
    megatron-bridge set runs its rows (_perf_scenario) in precision nvfp4 with its recipe's TP
    overlap (off in every NVFP4 recipe) and parameter-gather overlap. The FP4 GEMM rate is
    extrapolated (datasheet FP4 peak x the MXFP8 efficiency): nothing is fitted on these rows."""
    for row in _load("megatron-bridge-nvfp4.json")["rows"]:
        label = (f"{row['model']} {row['num_gpus']}x{row['gpu']} NVFP4 TP{row['tp']} PP{row['pp']} VP{row['vp']} "
                 f"({row['container']})")
        case = _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], source=row["source"])
        case.scenarios, case.predict = _perf_scenario(row, mode, group="megatron-bridge")
        _row_recipe(case, row, ("tp_comm_overlap", "overlap_param_gather"))
        yield case


def _megatron_core_moe(mode: str) -> Iterable[_Case]:
    """megatron-core-moe.json: the Megatron-Core MoE report's Table 11, each row with Table 20's
    layout and B.2's dispatcher, recompute modules and 1F1B all-to-all overlap, run as
    Megatron-Bridge's rows are (_perf_scenario; the report reproduces them through
    Megatron-Bridge, B.3). Every row's graphs are per-layer (or none), so each keeps the MoE host
    sync. Not modelled: the graphs' launch savings, offloading, DeepSeek-V3's MTP layer;
    blockwise FP8 on H100 runs as per-tensor current scaling (fp8-cs)."""
    for row in _load("megatron-core-moe.json")["rows"]:
        label = (f"{row['model']} {row['num_gpus']}x{row['gpu']} {row['precision']} s{row['seq_length']} "
                 f"TP{row['tp']} PP{row['pp']} CP{row['cp']} EP{row['ep']} {row['dispatcher']}")
        case = _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], source=row["source"])
        perf = dict(row, precision="fp8-cs" if row["precision"] == "FP8-BLK" else row["precision"])
        case.scenarios, case.predict = _perf_scenario(perf, mode, group="megatron-bridge")
        _moe_runtime(case, row["dispatcher"], row["ep_overlap"], row["recompute_modules"])
        yield case


def _group(row: dict) -> str:
    s = row["source"]
    if s.startswith("NVIDIA/NeMo docs/source/performance/performance_long_sequence"):
        return "nemo-long-sequence"
    for prefix, name in (("NVIDIA/NeMo docs", "nemo"), ("NVIDIA-NeMo/Megatron-Bridge", "megatron-bridge"),
                         ("pytorch/torchtitan", "torchtitan"), ("Korthikanti", "korthikanti"),
                         ("mosaicml/llm-foundry", "llm-foundry")):
        if s.startswith(prefix):
            return name
    return "other"


# Megatron-DeepSpeed on DeepSpeed's pipeline engine (MT-NLG 2021, BLOOM 2022): full recompute,
# Megatron's own (unfused) attention, blocking p2p between micro-batches, and the data-parallel
# gradient reduction after the pipeline flush (TrainSchedule ends with ReduceTiedGrads,
# ReduceGrads, OptimizerStep: deepspeed/runtime/pipe/schedule.py), not during backward.
_DEEPSPEED_PIPELINE = {"recompute_granularity": "full", "attention": "unfused", "stack": "deepspeed",
                       "overlap_p2p": False, "overlap_grad_reduce": False}


# MT-NLG's micro-batch is not published (the paper gives TP 8, PP 35, batch 1,920 and the step
# times at DP 8 / 10 / 12). A 1F1B pipeline steps in (m + p - 1) t with m = 1920 / (DP b)
# micro-batches of b sequences, t one micro-batch's forward and backward on a stage: the ratio
# of the DP 8 and DP 12 steps, 60.1 / 44.4 = (1920 / (8 b) + 34) / (1920 / (12 b) + 34), solves
# to b = 1.95, and b = 2 then gives the DP 10 step within 1% (50.7 against 50.2 s) with t =
# 0.39 s and no fixed cost beside the pipeline. b = 1 leaves 6.3 s per step that no part of
# DeepSpeed's schedule explains; b = 4 needs a negative one. Only the ratios of the published
# steps choose b; the step's level stays the twin's prediction (README, MT-NLG lead).
_MT_NLG_MICRO_BATCH = 2


def _large_runs(mode: str) -> Iterable[_Case]:
    """Published large runs: per-GPU throughput where the layout is published."""
    for row in _load("large_runs.json")["rows"]:
        if row["model"].startswith("MT-NLG"):
            gpus, tp, pp = row["gpus"], row["tp"], row["pp"]
            model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "seq_length": 2048,
                     "vocab": 51200}  # GPT-2 BPE padded as Megatron pads it (derived)
            par = {"tensor_parallel": tp, "pipeline_parallel": pp, "data_parallel": gpus // (tp * pp), "zero_stage": 1}
            # DeepSpeed of 2021 (the paper's Sec. 2: Megatron-LM + DeepSpeed, trained from late
            # 2021): before its BF16_Optimizer (v0.6, 2022), which the deepspeed stack runs in bf16
            runtime = {**_DEEPSPEED_PIPELINE, "stack": "deepspeed-2021"}
            sc = _scenario(_selene(gpus), model, par, _MT_NLG_MICRO_BATCH, row["global_batch_seqs"], runtime, mode)
            yield _Case(f"MT-NLG 530B on {gpus} (mb {_MT_NLG_MICRO_BATCH})", "step s", row["step_time_s"], [sc],
                       lambda report, sc: report["step_time_s"], source=row["source"])
        elif row["model"].startswith("BLOOM"):
            yield _bloom(row, mode)
        else:
            q, v = _published(row)
            yield _Case(row["model"], q, v, reason="no per-GPU throughput with its layout in the row",
                        source=row["source"])


# BLOOM-176B on Jean Zay (bigscience train/tr11-176B-ml README, Hardware: "8 GPUs per node Using
# NVLink 4 inter-gpu connects, 4 OmniPath links", "Inter-node connect: Omni-Path Architecture
# (OPA)", a dedicated NCCL subnet; A100 SXM4 NVLink 3 at 300 GB/s a direction): 4 x 100 Gb/s
# OPA NICs per node on a non-blocking fat tree of 48-port OPA switches (two tiers cover the 48
# nodes). tr11-176B-ml.slurm: --pad-vocab-size-to 250880, --attention-dropout 0 --hidden-dropout
# 0, --checkpoint-activations, ALiBi through Megatron-DeepSpeed's fused softmax (no flash
# attention in 2022), tied embeddings, DeepSpeed's pipeline engine and BF16_Optimizer (ZeRO-1).
# The published 150 TFLOP/s counts the recompute forward (Megatron-DeepSpeed's 4 x 24 formula).
_JEAN_ZAY_OPA = {"topology": "fat_tree", "tiers": 2, "switch_radix": 48}


def _bloom(row: dict, mode: str) -> _Case:
    gpus, tp, pp, vocab = row["gpus"], row["tp"], row["pp"], 250880
    cluster = _cluster("A100-80GB", gpus, "100Gbps", _JEAN_ZAY_OPA)
    cluster["nics_per_node"] = 4
    cluster["nvlink"] = "300GB/s"
    model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "seq_length": row["seq_length"],
             "vocab": vocab, "tied_embeddings": True, "dropout": "no", "position_embedding": "none"}  # ALiBi
    par = {"tensor_parallel": tp, "pipeline_parallel": pp, "data_parallel": gpus // (tp * pp), "zero_stage": 1}
    runtime = dict(_DEEPSPEED_PIPELINE)
    gbs = row["global_batch_seqs"]
    sc = _scenario(cluster, model, par, row["micro_batch"], gbs, runtime, mode)
    return _Case(f"{row['model']} on {gpus} (TP {tp}, PP {pp}, mb {row['micro_batch']})", "TFLOP/s per GPU",
                 row["tflops_per_gpu"], [sc],
                 _megatron_tflops(row["layers"], row["hidden"], vocab, row["seq_length"], gbs, gpus, True),
                 source=row["source"])


# Llama 3 405B (tests/validation/llama3-405b.json): Meta's FSDP over data parallelism shards
# weights, gradients and optimizer state (zero_stage 3), TP inside a server with sequence
# parallelism, an interleaved pipeline, no activation checkpointing at 8K (the paper, Sec.
# 3.3.2); H100 SXM at 700 W with 8 x 400 Gb/s per server. Interleaving: the paper removes one
# transformer layer from the first and the last stage so that the first model chunk holds only
# the embedding and the last only the output layer and loss: 126 + 2 = 128 = 16 stages x 8
# chunks of one layer (virtual_pipeline 8). The kernels are megatron-core's (fused norms and
# flash attention; Meta's own stack is not public).
_LLAMA3_405B = {"layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "ffn_hidden": 53248, "vocab": 128256,
                "activation": "swiglu", "tied_embeddings": False, "dropout": "no", "position_embedding": "rope"}


def _llama3_405b(mode: str) -> Iterable[_Case]:
    data = _load("llama3-405b.json")
    for row in data["rows"]:
        label = f"Llama 3 405B {row['gpus']}xH100 TP{row['tp']} CP{row['cp']} PP{row['pp']} s{row['seq_length']}"
        if row["cp"] > 1:
            yield _Case(label, "TFLOP/s per GPU", row["tflops_per_gpu"], source=data["sources"]["paper"],
                        reason="Meta's attention FLOP convention is not published; at 128K tokens causal halving "
                               "moves the value by about 30%")
            continue
        model = {**_LLAMA3_405B, "seq_length": row["seq_length"]}
        par = {"tensor_parallel": row["tp"], "pipeline_parallel": row["pp"], "context_parallel": row["cp"],
               "data_parallel": row["dp"], "virtual_pipeline": 8, "sequence_parallel": True, "zero_stage": 3}
        runtime = {"recompute_granularity": "none", "stack": "megatron-core"}
        sc = _scenario(_cluster("H100-SXM", row["gpus"], "400Gbps"), model, par, 1, row["global_batch_seqs"], runtime,
                       mode)
        yield _Case(label, "TFLOP/s per GPU", row["tflops_per_gpu"], [sc], lambda report, sc: report["tflops_per_gpu"],
                    source=data["sources"]["paper"])


def _foundry(mode: str) -> Iterable[_Case]:
    """LLM Foundry MPT benchmarks: Composer FSDP FULL_SHARD over every GPU with bf16 mixed
    precision (stack composer, zero_stage 3), Transformer Engine FP8 linears for amp_fp8 (delayed
    scaling, TE's default then), activation checkpointing = full recompute, no dropout. H100 nodes: 8 x 400G
    (the table does not state it); A100: 8 x 200G RoCE (1600 Gbps per node, as stated)."""
    for row in _load("llm-foundry.json")["rows"]:
        label = f"{row['model']} s{row['seq_length']} {row['gpus']}x{'H100' if row['gpu'].startswith('h100') else 'A100'} " \
                f"{row['precision']}"
        if row["legacy"]:
            label += " (legacy run)"
        yield _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], [_foundry_scenario(row, mode)],
                    lambda report, sc: report["tokens_per_s_per_gpu"], source=row["source"])


_FOUNDRY_GPUS = {"h100_80gb": ("H100-SXM", "400Gbps"), "a100_80gb": ("A100-80GB", "200Gbps"),
                 "a100_40gb": ("A100-40GB", "200Gbps")}


def _foundry_scenario(row: dict, mode: str) -> dict:
    """One LLM Foundry row as a scenario (the mapping _foundry's docstring gives)."""
    gpu, nic = _FOUNDRY_GPUS[row["gpu"]]
    model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "ffn_hidden": row["ffn_hidden"],
             "activation": "gelu", "vocab": row["vocab"], "tied_embeddings": row["tied_embeddings"],
             "seq_length": row["seq_length"], "dropout": "no"}  # MPT yamls: attn_pdrop = resid_pdrop = 0
    par = {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": row["gpus"], "zero_stage": 3}
    runtime = {"stack": "composer", "recompute_granularity": "full" if row["activation_checkpointing"] else "none",
               "precision": "fp8" if "fp8" in row["precision"] else "bf16"}
    return _scenario(_cluster(gpu, row["gpus"], nic), model, par, row["micro_batch"], row["global_batch"], runtime, mode)


def _foundry_sweeps(mode: str) -> Iterable[_Case]:
    """llm-foundry-sweeps.json: one node of 8 A100, MPT-3B/7B/13B at 2,048 tokens, micro-batch
    1-6 (larger_mb_1.md), mapped as _foundry maps the README's rows. Activation CPU offload is
    not modelled: those rows are not computed."""
    for row in _load("llm-foundry-sweeps.json")["rows"]:
        label = f"{row['model']} {row['gpus']}x{row['gpu']} mb{row['micro_batch']} ga{row['grad_accum']}" + (
            " AC + CPU offload" if row["activation_cpu_offload"] else "")
        if row["activation_cpu_offload"]:
            yield _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], source=row["source"],
                        reason="activation CPU offload (Composer's activation_cpu_offload) is not modelled")
            continue
        yield _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], [_foundry_scenario(row, mode)],
                    lambda report, sc: report["tokens_per_s_per_gpu"], source=row["source"])


def _torchtitan_h200_scenario(row: dict, mode: str) -> tuple[int, dict]:
    """(GPUs, scenario) of a torchtitan-h200.json row: Llama 3.1 8B on H200 nodes (Trainy, June
    2025), FSDP2 over every GPU, torch.compile, torchao float8 tensorwise linears (fp8-cs),
    op-level selective checkpointing."""
    gpus = row["nodes"] * row["gpus_per_node"]
    model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "kv_heads": row["kv_heads"],
             "ffn_hidden": row["ffn_hidden"], "activation": "swiglu", "vocab": row["vocab"],
             "tied_embeddings": False, "seq_length": row["seq_length"]}
    par = {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": gpus, "zero_stage": 3}
    runtime = {"stack": "torchtitan", "recompute_granularity": "selective", "precision": "fp8-cs",
               "torch_compile": row["compile"]}
    return gpus, _scenario(_cluster(row["gpu"], gpus, row["nic"]), model, par, row["local_batch"],
                           row["local_batch"] * gpus, runtime, mode)


def _torchtitan_h200(mode: str) -> Iterable[_Case]:
    """torchtitan-h200.json: tokens/s per GPU."""
    for row in _load("torchtitan-h200.json")["rows"]:
        gpus, sc = _torchtitan_h200_scenario(row, mode)
        yield _Case(f"{row['model']} {gpus}xH200 float8 compile", "tokens/s per GPU", row["tokens_per_sec_per_gpu"],
                    [sc], lambda report, sc: report["tokens_per_s_per_gpu"], source=row["source"])


def _torchao_float8(mode: str) -> Iterable[_Case]:
    """torchao-float8.json: torchao's end-to-end float8 benchmark, torchtitan Llama 3 8B on 8
    GPUs (FSDP2, torch.compile, op-level selective checkpointing, local batch 1 of 8,192
    tokens), tokens/s per GPU. H100 rows on Meta's 96 GB / 2.4 TB/s / 500 W variant (the file's
    note); tensorwise scaling with float8 FSDP all-gathers runs as fp8-cs (per-tensor current
    scaling, the casts before the gather). Its loss stays eager: torchtitan compiled it from
    April 2025 (training_job.runtime.compile_loss), after this PyTorch 2.7.0a0 run."""
    data = _load("torchao-float8.json")
    for row in data["rows"]:
        label = f"{row['model']} {row['gpus']}x{row['gpu']} {row['scaling']}"
        case = _Case(label, "tokens/s per GPU", row["tokens_per_sec_per_gpu"], source=data["sources"]["table"])
        if row["gpu"] != "H100":
            case.reason = ("no MI300X in the GPU catalog: its eight GPUs are a mesh of xGMI links, not a switched "
                           "NVLink domain, and nothing of it is measured here")
        elif row["precision"] == "rowwise":
            case.reason = ("torchao's rowwise float8 scaling is not a precision of the twin "
                           "(training_job.runtime.precision: bf16, fp8, fp8-cs, mxfp8, nvfp4)")
        else:
            model = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
                     "activation": "swiglu", "vocab": 128256, "tied_embeddings": False,
                     "seq_length": row["seq_length"]}
            gpus = row["gpus"]
            par = {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": gpus, "zero_stage": 3}
            runtime = {"stack": "torchtitan", "recompute_granularity": "selective", "precision": row["precision"],
                       "torch_compile": True, "compile_loss": "eager"}
            cluster = _cluster("H100-SXM", gpus, "400Gbps")
            cluster["gpu_spec"] = dict(_GRAND_TETON_H100)
            case.scenarios = [_scenario(cluster, model, par, row["local_batch"], row["local_batch"] * gpus, runtime,
                                        mode)]
            case.predict = lambda report, sc: report["tokens_per_s_per_gpu"]
        yield case


def _dgxc(mode: str) -> Iterable[_Case]:
    """NVIDIA DGX Cloud weak-scaling tables (NeMo 24.09 on DGX H100, 8 x 400G): the step time of
    each row's own layout, stack nemo with TP overlap as NVIDIA's recipes run it, FP8 as delayed
    scaling (NeMo 24.09's default recipe). From the benchmark's own files at v24.11.1: no
    recompute except Nemotron4 340B (nemotron4-340b-synth.yaml: activations_checkpoint_granularity
    selective); NeMo 1.x's distributed_fused_adam, whose bf16 runs keep 16-bit master weight
    remainders unless fp8_params is set; GPT-3 175B and Nemotron4 340B run with NVTE_FUSED_ATTN=0 (nemo_megatron/launch.sh,
    nemotron/configure.sh), so Transformer Engine takes the flash-attn 2 package, the others
    cuDNN's fused attention (NVTE_FUSED_ATTN=1)."""
    for row in _load("dgxc-v24.11.json")["rows"]:
        model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "kv_heads": row["kv_heads"],
                 "ffn_hidden": row["ffn_hidden"], "activation": row["activation"], "vocab": row["vocab"],
                 "tied_embeddings": False, "seq_length": row["seq_length"]}
        if row["model"].startswith("Nemotron"):
            model["dropout"] = "no"
        par = {"tensor_parallel": row["tp"], "pipeline_parallel": row["pp"], "context_parallel": row["cp"],
               "data_parallel": row["dp"], "virtual_pipeline": row["vp"], "zero_stage": 1}
        flash_attn_package = row["model"].startswith(("GPT-3 175B", "Nemotron4 340B"))  # NVTE_FUSED_ATTN=0
        runtime = {"stack": "nemo",
                   "recompute_granularity": "selective" if row["model"].startswith("Nemotron4 340B") else "none",
                   "precision": "fp8" if row["precision"] == "FP8" else "bf16",
                   "attention_kernel": "fa2" if flash_attn_package else "cudnn"}
        if row["precision"] == "BF16" and not row["model"].startswith("GPT-3 175B"):
            # NeMo 1.x distributed_fused_adam keeps 16-bit master remainders for bf16 weights
            # without fp8_params (megatron_base_model.py, NeMo v2.0.0); the GPT-3 yaml sets
            # fp8_params: true even for bf16, which makes it store fp32 masters.
            runtime["master_weights"] = "remainder"
        if row["tp"] > 1:
            runtime["tp_comm_overlap"] = True
        sc = _scenario(_cluster("H100-SXM", row["gpus"], "400Gbps", dict(_INFINIBAND)), model, par,
                       row["micro_batch"], row["global_batch"], runtime, mode)
        yield _Case(f"{row['model']} {row['precision']} {row['gpus']}xH100", "step s", row["step_time_s"], [sc],
                    lambda report, sc: report["step_time_s"], source=row["source"])


def _megascale(mode: str) -> Iterable[_Case]:
    """MegaScale Table 2, the Megatron-LM baseline: A100-80GB with 8 x 200G, TP 8 / PP 8 / VP 6,
    micro-batch 1 (not published; the smallest), selective recompute, and no overlap of the
    data-parallel reduce-scatter / all-gather with compute: Megatron-LM 285068c8 (Jan 2023)
    predates --overlap-grad-reduce / --overlap-param-gather, which MegaScale Sec. 3.2 adds. Its
    attention is Megatron's own (scores in HBM, fused softmax): --use-flash-attn is opt-in at
    285068c8 (megatron/arguments.py), and MegaScale Sec. 3.3 lists adopting FlashAttention-2 among
    its own operator improvements over the baseline."""
    for row in _load("megascale-175b.json")["rows"]:
        model = {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "vocab": row["vocab"],
                 "seq_length": row["seq_length"]}
        par = {"tensor_parallel": row["tp"], "pipeline_parallel": row["pp"], "virtual_pipeline": row["vp"],
               "data_parallel": row["dp"], "zero_stage": 1}
        runtime = {"recompute_granularity": "selective", "overlap_grad_reduce": False, "overlap_param_gather": False,
                   "overlap_p2p": False, "attention": "unfused"}
        sc = _scenario(_cluster("A100-80GB", row["gpus"], "200Gbps"), model, par, 1, row["global_batch"], runtime, mode)
        yield _Case(f"Megatron-LM 175B on {row['gpus']} (batch {row['global_batch']})", "MFU %", row["mfu_pct"], [sc],
                    lambda report, sc: 100 * report["mfu"], source=row["source"])


def _log_ctas(env: dict) -> int | None:
    """The CTAs (runtime channels) a log's environment makes NCCL run: NCCL_MIN_CTAS or
    NCCL_MIN_NCHANNELS when above NCCL's own 16 on these nodes (a lower minimum changes
    nothing), None otherwise."""
    asked = [int(env[k]) for k in ("NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS") if str(env.get(k, "")).isdigit()]
    return max(asked) if asked and max(asked) > 16 else None


def _nccl_busbw(nodes: int, algorithm: str, size: int, mode: str, ctas: int | None = None) -> float:
    """The twin's nccl-tests all_reduce busbw (out-of-place) on H100 nodes with 8 x 400G; a log
    run with NCCL_MIN_CTAS / NCCL_MIN_NCHANNELS runs with that many CTAs (network.ctas)."""
    from . import _core
    net = {"mode": mode, "collective_algorithm": "auto" if algorithm == "default" else algorithm}
    if ctas is not None:
        net["ctas"] = ctas
    sc = {"name": "nccl-tests", "cluster": {"gpu": "H100-SXM", "nodes": nodes, "gpus_per_node": 8, "nics_per_node": 8,
                                            "nic": "400Gbps"},
          "network": net, "traffic": {"pattern": "collective"}}
    table = _core.nccl_tests(json.dumps(sc), "{}", "all_reduce", [nodes], f"{size}B", f"{size}B")
    for line in table.splitlines():
        f = line.split()
        if f and not line.startswith("#") and f[0] == str(size):
            return float(f[7])
    raise RuntimeError(f"no row of {size} B in the twin's nccl-tests table")


def _nccl_tests(mode: str, fit: bool = False) -> Iterable[_Case]:
    """Real nccl-tests all_reduce_perf logs on H100/H200 with 8 x 400G per node: busbw at the
    largest size of each log, NCCL's default choice, the ring forced, or NVLS tree forced. The
    rows marked `fit` (the one log a constant of the model is fitted on) with fit=True, the others
    without."""
    for row in _load("nccl-tests-h100.json")["rows"]:
        if bool(row.get("fit")) != fit:
            continue
        label = f"{row['id']} {row['nodes']} nodes {row['algorithm']} {row['size_bytes'] >> 30} GiB"
        if row["derived"]:
            label += " (chart)"
        nodes, algo, size, ctas = row["nodes"], row["algorithm"], row["size_bytes"], _log_ctas(row.get("env") or {})
        yield _Case(label, "busbw GB/s", row["busbw_GBps"], source=row["source"],
                    direct=lambda n=nodes, a=algo, b=size, c=ctas: _nccl_busbw(n, a, b, mode, c))


@functools.lru_cache(maxsize=None)
def _nccl_table(nodes: int, mode: str) -> dict[int, float]:
    """The twin's default all_reduce busbw by size (64 KiB to 16 GiB, x2) on H100 nodes with 8 x 400G."""
    from . import _core
    sc = {"name": "nccl-tests", "cluster": {"gpu": "H100-SXM", "nodes": nodes, "gpus_per_node": 8, "nics_per_node": 8,
                                            "nic": "400Gbps"},
          "network": {"mode": mode}, "traffic": {"pattern": "collective"}}
    rows = json.loads(_core.nccl_tests_rows(json.dumps(sc), "{}", "all_reduce", [nodes], "64KiB", "16GiB"))
    return {r["size_bytes"]: r["busbw_GBps"] for r in rows}


def _nccl_sizes(mode: str) -> Iterable[_Case]:
    """Whole nccl-tests all_reduce tables (NVIDIA/nccl-tests #309: 2, 4 and 8 H100 nodes with
    8 x 400G, NCCL's default): busbw at every size from 64 KiB or 1 MiB to the largest."""
    data = _load("nccl-tests-h100-sizes.json")
    for row in data["rows"]:
        size = row["size_bytes"]
        label = f"{row['log']} {row['nodes']} nodes {size >> 20} MiB" if size >= 1 << 20 else \
            f"{row['log']} {row['nodes']} nodes {size >> 10} KiB"
        case = _Case(label, "busbw GB/s", row["busbw_GBps"], source=data["sources"][row["log"]]["url"],
                     direct=lambda n=row["nodes"], b=size: _nccl_table(n, mode)[b])
        if row.get("fit"):
            case.reason = row["fit"]
        yield case


def _gemm_kernels(mode: str) -> Iterable[_Case]:
    """OpenXLA's measured matmul table (H100 bf16, B200 bf16 and FP8): achieved TFLOP/s of each
    shape of at least 1e11 FLOP (training-sized; smaller problems are dominated by how a launch
    is timed) against the compute model's, which is fitted on H200 kernels only. The same
    numbers in both network modes: no network is involved."""
    from . import _core
    for row in _load("gemm-kernels-xla.json")["rows"]:
        b, m, n, k = row["b"], row["m"], row["n"], row["k"]
        flops = 2.0 * b * m * n * k
        if flops < 1e11:
            continue
        fp8 = row["dtype"] != "bf16"
        yield _Case(f"{row['gpu']} {row['dtype']} {b}x{m}x{n}x{k}", "TFLOP/s", row["flops_per_s"] / 1e12,
                    source="ROCm/xla d02afb4 matmul_interpolator_data.h",
                    direct=lambda g=row["gpu"], shape=(m, n, k, b), f=flops, q=fp8:
                        f / _core.gemm_seconds(g, *shape, q) / 1e12)


@dataclass
class _SetSpec:
    name: str
    file: str
    build: Callable[[str], Iterable[_Case]]
    note: str
    fitted: bool = False


SETS = [
    _SetSpec("sc21-table1", "megatron-sc21-table1.json", _sc21_table1, "Megatron-LM SC'21 Table 1, GPT 1.7B-1T on A100"),
    _SetSpec("sc21-table2-zero3", "sc21-table2-zero3.json", _sc21_table2, "SC'21 Table 2, ZeRO-3 vs PTD-P at fixed batch"),
    _SetSpec("torchtitan-memory", "activation_memory.json", _torchtitan_memory, "torchtitan peak memory, Llama 3.1 on H100"),
    _SetSpec("h200-step", "h200-gpt1.4b-step.json", _h200_step, "one measured H200 step (PyTorch)"),
    _SetSpec("h200-pytorch-steps", "h200-pytorch-steps.json", _h200_pytorch_steps,
             "three measured H200 training steps (PyTorch): step time, allocated and reserved peaks"),
    _SetSpec("torchtitan-perf", "nemo_megatron_perf.json", lambda m: _perf_rows(m, "torchtitan"), "torchtitan tokens/s"),
    _SetSpec("torchtitan-h200", "torchtitan-h200.json", _torchtitan_h200, "torchtitan Llama 3.1 8B on 32-64 H200 (Trainy)"),
    _SetSpec("torchao-float8", "torchao-float8.json", _torchao_float8,
             "torchao float8 end-to-end benchmark: torchtitan Llama 3 8B on 8 H100 / MI300X, bf16 vs float8"),
    _SetSpec("nemo-24.07", "nemo_megatron_perf.json", lambda m: _perf_rows(m, "nemo"), "NeMo 24.07 tables"),
    _SetSpec("nemo-long-sequence", "nemo_megatron_perf.json", lambda m: _perf_rows(m, "nemo-long-sequence"),
             "NeMo 25.04 long-sequence tables: Llama 2 7B FP8 on 4-1,024 H100, 4K-1M tokens with CP (model TFLOP/s)"),
    _SetSpec("megatron-bridge", "nemo_megatron_perf.json", lambda m: _perf_rows(m, "megatron-bridge"), "Megatron-Bridge archive"),
    _SetSpec("megatron-bridge-moe", "megatron-bridge-moe.json", _megatron_bridge_moe,
             "Megatron-Bridge MoE tables (26.06)"),
    _SetSpec("megatron-core-moe", "megatron-core-moe.json", _megatron_core_moe,
             "Megatron-Core MoE report Table 11: DeepSeek-V3, Qwen3-235B on GB300/GB200/H100"),
    _SetSpec("megatron-bridge-moe-h100", "megatron-bridge-moe-h100.json", _megatron_bridge_moe_h100,
             "Megatron-Bridge Qwen3-30B-A3B on 16 H100: token dispatcher x EP overlap, step s; the MoE host sync "
             "(training_job.runtime.moe_host_sync, 1.5 ms per MoE layer forward) is fitted on it", fitted=True),
    _SetSpec("megatron-bridge-cards", "megatron-bridge-cards.json", _megatron_bridge_cards,
             "Megatron-Bridge verification cards (Aug 2026): Qwen3-30B-A3B weak scaling on 8-256 GB300, DeepSeek-V3 "
             "on 1,024 H100 BF16, GPT-OSS 120B on 64 GB200 BF16, step s"),
    _SetSpec("megatron-bridge-nvfp4", "megatron-bridge-nvfp4.json", _megatron_bridge_nvfp4,
             "Megatron-Bridge NVFP4 (26.04.01-26.06): Llama 3 70B on 64 and Llama 3.1 405B on 256 GB300 / GB200; "
             "FP4 GEMM rate extrapolated"),
    _SetSpec("korthikanti", "nemo_megatron_perf.json", _korthikanti, "Korthikanti et al. 2022 Table 5: iteration s"),
    _SetSpec("llm-foundry", "llm-foundry.json", _foundry, "MosaicML LLM Foundry MPT benchmarks (Composer FSDP)"),
    _SetSpec("llm-foundry-sweeps", "llm-foundry-sweeps.json", _foundry_sweeps,
             "LLM Foundry micro-batch sweep: MPT-3B/7B/13B on 8 A100, micro-batch 1-6 (Composer FSDP)"),
    _SetSpec("large-runs", "large_runs.json", _large_runs, "published large runs"),
    _SetSpec("llama3-405b", "llama3-405b.json", _llama3_405b,
             "Llama 3 405B on 8,192-16,384 H100 (Meta's scaling table: TFLOP/s per GPU)"),
    _SetSpec("dgxc-v24.11", "dgxc-v24.11.json", _dgxc, "NVIDIA DGX Cloud weak scaling, NeMo 24.09 on H100, 8-2,304 GPUs"),
    _SetSpec("megascale-175b", "megascale-175b.json", _megascale, "MegaScale Table 2, Megatron-LM 175B strong scaling, 256-12,288 A100"),
    _SetSpec("nccl-tests-h100", "nccl-tests-h100.json", _nccl_tests, "nccl-tests all_reduce busbw, H100/H200 8 x 400G"),
    _SetSpec("nccl-tests-ring-fit", "nccl-tests-h100.json", lambda m: _nccl_tests(m, fit=True),
             "the nccl-tests log (4 H100 nodes, NCCL's default ring at 8 GiB) that the ring's per-CTA bandwidth "
             "across nodes is fitted on", fitted=True),
    _SetSpec("nccl-tests-sizes", "nccl-tests-h100-sizes.json", _nccl_sizes,
             "whole nccl-tests all_reduce tables, 64 KiB-16 GiB, 2-8 H100 nodes with 8 x 400G"),
    _SetSpec("gemm-kernels-xla", "gemm-kernels-xla.json", _gemm_kernels,
             "OpenXLA measured matmuls >= 1e11 FLOP: H100 bf16, B200 bf16 and FP8 (kernels, not steps)"),
]


def _load(name: str) -> dict:
    with open(os.path.join(VALIDATION, name)) as f:
        return json.load(f)


def _evaluate(case: _Case) -> tuple[float | None, str | None, bool | None]:
    """(predicted, why not, whether the layout fits in memory)."""
    if case.reason:
        return None, case.reason, None
    if case.direct is not None:
        return case.direct(), None, None
    best = None
    for sc in case.scenarios:
        try:
            report = run(sc).report
        except Exception as e:  # a mapping the loader rejects is reported, not raised
            return None, f"scenario rejected: {str(e).splitlines()[-1].strip()}", None
        fits = bool(report["memory"]["fits"])
        if case.pick != "first" and not fits:
            continue
        value = case.predict(report, sc)
        if case.pick == "first":
            return value, None, fits
        best = value if best is None else min(best, value)
    return (best, None, True) if best is not None else (None, "no candidate layout fits in memory", False)


def _spearman(a: list[float], b: list[float]) -> float:
    import pandas as pd
    if len(a) < 3:
        return math.nan
    return float(pd.Series(a).rank().corr(pd.Series(b).rank()))


def accuracy(sets: Iterable[str] | None = None, mode: str = "analytical"):
    """Runs the validation sets (all, or those named) and returns (rows, summary) DataFrames.

    rows: set, row, quantity, published, predicted, error (relative), fits (the layout fits in
    the GPU's memory; every row really ran), note (why a row was not computed). summary: set,
    rows, computed, not_fitting (rows declared not to fit), mape, worst_row, worst_error,
    baseline_mape (each row predicted as the mean of the set's rows of its quantity), spearman, beats_baseline, fitted, about.
    """
    import pandas as pd
    if mode not in ("analytical", "flow"):
        raise ValueError(f"mode: got {mode!r}, expected analytical or flow")
    chosen = [s for s in SETS if sets is None or s.name in set(sets)]
    unknown = set(sets or []) - {s.name for s in SETS}
    if unknown:
        raise ValueError(f"unknown validation set(s) {sorted(unknown)}; known: {[s.name for s in SETS]}")
    rows, summary = [], []
    for spec in chosen:
        cases = list(spec.build(mode))
        done = []
        for case in cases:
            value, note, fits = _evaluate(case)
            err = (value - case.published) / case.published if value is not None and case.published else None
            rows.append({"set": spec.name, "row": case.label, "quantity": case.quantity, "published": case.published,
                         "predicted": value, "error": err, "fits": fits, "note": note})
            if err is not None:
                done.append((case.published, value, err, case.label, case.quantity))
        # Every row is a run that really happened: one declared not to fit is a memory-model miss.
        set_rows = rows[-len(cases):] if cases else []
        entry = {"set": spec.name, "rows": len(cases), "computed": len(done),
                 "not_fitting": sum(1 for r in set_rows if r["fits"] is False),
                 "fitted": spec.fitted, "about": spec.note}
        if done:
            published = [d[0] for d in done]
            # The baseline predicts, for each row, the mean of the published values of the same
            # quantity (a set may mix step seconds and TFLOP/s).
            by_quantity: dict[str, list[float]] = {}
            for d in done:
                by_quantity.setdefault(d[4], []).append(d[0])
            mean = {q: sum(v) / len(v) for q, v in by_quantity.items()}
            worst = max(done, key=lambda d: abs(d[2]))
            entry.update(mape=sum(abs(d[2]) for d in done) / len(done), worst_row=worst[3], worst_error=worst[2],
                         baseline_mape=sum(abs(mean[d[4]] - d[0]) / d[0] for d in done) / len(done),
                         spearman=_spearman(published, [d[1] for d in done]))
            entry["beats_baseline"] = entry["mape"] < entry["baseline_mape"]
        summary.append(entry)
    return pd.DataFrame(rows), pd.DataFrame(summary)


# The bar for the two network backends on one validation row (issue 16, "Done when").
MODE_AGREEMENT = 0.03


def mode_agreement(sets: Iterable[str] | None = None):
    """Every computed row in both network modes: (rows, summary) DataFrames.

    rows: set, row, quantity, published, analytical, flow, gap (flow / analytical - 1), agrees
    (|gap| <= MODE_AGREEMENT). summary: set, computed (rows with both predictions), max_gap,
    worst_row, over (rows beyond MODE_AGREEMENT). Flow mode replays every rank on the fabric, so
    this takes minutes to tens of minutes for all sets on two cores.
    """
    import pandas as pd
    a, _ = accuracy(sets, mode="analytical")
    f, _ = accuracy(sets, mode="flow")
    rows = a[["set", "row", "quantity", "published"]].copy()
    rows["analytical"] = pd.to_numeric(a["predicted"], errors="coerce")
    rows["flow"] = pd.to_numeric(f["predicted"], errors="coerce")
    rows["gap"] = rows["flow"] / rows["analytical"] - 1
    rows["agrees"] = rows["gap"].abs() <= MODE_AGREEMENT
    summary = []
    for name, part in rows.groupby("set", sort=False):
        both = part[part["gap"].notna()]
        entry = {"set": name, "computed": len(both), "max_gap": math.nan, "worst_row": None, "over": 0}
        if len(both):
            worst = both.loc[both["gap"].abs().idxmax()]
            entry.update(max_gap=float(worst["gap"]), worst_row=worst["row"], over=int((~both["agrees"]).sum()))
        summary.append(entry)
    return rows, pd.DataFrame(summary)
