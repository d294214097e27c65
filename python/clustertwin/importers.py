"""Scenarios from the configurations users already have: a Hugging Face ``config.json`` and a
Megatron-LM argument list.

    sc = ct.from_hf_config("Meta-Llama-3-70B/config.json")
    sc = ct.from_megatron_args("--num-layers 80 --hidden-size 8192 ... --tensor-model-parallel-size 8")
    sc.unmapped   # what in the source was not carried over, and why
    sc.notes      # choices the import made (defaults taken from the base scenario)
    ct.run(sc)

Both return an ``ImportedScenario``: a plain scenario dict (it runs, saves as JSON and takes
overrides like any other) with two extra attributes. Everything not given by the source comes
from ``base`` (default: ``BASE``, 8 nodes of 8 H100 with 8 x 400G, analytical network).
"""
from __future__ import annotations

import copy
import json
import os
import shlex
from typing import Any, Sequence

BASE: dict[str, Any] = {
    "name": "imported",
    "cluster": {"gpu": "H100-SXM", "nodes": 8, "gpus_per_node": 8, "nics_per_node": 8, "nic": "400Gbps"},
    "network": {"mode": "analytical"},
    "training_job": {
        "parallelism": {"tensor_parallel": 1, "pipeline_parallel": 1},
        "micro_batch_size": 1,
        "global_batch_size": 512,
    },
}


class ImportedScenario(dict):
    """A scenario dict with ``unmapped`` (source fields or flags not carried over, each with the
    reason) and ``notes`` (choices made by the import)."""

    def __init__(self, scenario: dict, unmapped: list[str], notes: list[str]):
        super().__init__(scenario)
        self.unmapped = unmapped
        self.notes = notes


def _base(base: dict | None) -> dict:
    return copy.deepcopy(BASE if base is None else base)


def _gpus(sc: dict) -> int:
    c = sc.get("cluster", {})
    return int(c.get("nodes", 1)) * int(c.get("gpus_per_node", 8))


def _fill_data_parallel(sc: dict, notes: list[str]) -> None:
    """Every GPU of the base cluster joins data parallelism unless the source or base says."""
    job = sc["training_job"]
    par = job.setdefault("parallelism", {})
    if par.get("data_parallel"):
        return
    per_replica = (int(par.get("tensor_parallel", 1)) * int(par.get("pipeline_parallel", 1)) *
                   int(par.get("context_parallel", 1)))
    gpus = _gpus(sc)
    if gpus % per_replica:
        raise ValueError(f"cluster has {gpus} GPUs, not a multiple of TP x PP x CP = {per_replica}; "
                         "pass a base scenario whose cluster fits the layout")
    par["data_parallel"] = gpus // per_replica
    notes.append(f"training_job.parallelism.data_parallel = {gpus // per_replica}: every GPU of the base cluster "
                 f"({gpus}) in data parallelism")


# Hugging Face config.json -> training_job.model
_HF_GATED = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2",
             "phi3", "olmo", "olmo2", "granite", "deepseek_v2", "deepseek_v3", "internlm2", "yi", "cohere"}
_HF_PLAIN = {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "gpt_bigcode", "mpt", "starcoder2", "phi"}
_HF_HANDLED = {  # fields mapped above, reported separately, or with no effect on step time or memory
    "architectures", "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "transformers_version",
    "initializer_range", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "rope_theta", "rope_scaling",
    "use_cache", "model_type", "hidden_act", "attention_dropout", "attention_bias", "mlp_bias", "pretraining_tp",
    "router_aux_loss_coef", "router_jitter_noise", "output_router_logits", "max_window_layers", "use_sliding_window",
    "sliding_window", "tie_word_embeddings", "max_position_embeddings", "head_dim", "num_hidden_layers",
    "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
    "num_local_experts", "num_experts_per_tok", "num_experts", "moe_intermediate_size", "n_routed_experts",
    "n_shared_experts", "shared_expert_intermediate_size", "n_embd", "n_layer", "n_head", "n_inner",
    "n_positions", "ffn_hidden_size", "activation_function", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "hidden_dropout", "dropout"}


def from_hf_config(config: str | os.PathLike | dict, base: dict | None = None,
                   seq_length: int | None = None) -> ImportedScenario:
    """A scenario whose ``training_job.model`` is the architecture of a Hugging Face
    ``config.json`` (a path, or the parsed dict); the rest comes from ``base``. ``seq_length``
    is the training sequence (a config holds the longest context the model accepts, which is
    kept only when neither ``seq_length`` nor the base gives one)."""
    if isinstance(config, dict):
        cfg, where = config, "config"
    else:
        with open(config) as f:
            cfg, where = json.load(f), os.fspath(config)
    if not isinstance(cfg, dict):
        raise ValueError(f"{where}: expected a JSON object (a Hugging Face config.json)")
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers keep the LM here
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", cfg.get("model_type"))}
    unmapped: list[str] = []
    notes: list[str] = []
    mtype = str(cfg.get("model_type", ""))

    def need(*names: str) -> Any:
        for n in names:
            if n in cfg and cfg[n] is not None:
                return cfg[n]
        raise ValueError(f"{where}: none of {', '.join(names)} is given; not a decoder-only transformer config")

    model: dict[str, Any] = {
        "layers": int(need("num_hidden_layers", "n_layer", "num_layers")),
        "hidden": int(need("hidden_size", "n_embd", "d_model")),
        "heads": int(need("num_attention_heads", "n_head")),
        "vocab": int(need("vocab_size", "padded_vocab_size")),
    }
    if cfg.get("num_key_value_heads"):
        model["kv_heads"] = int(cfg["num_key_value_heads"])
    if mtype in ("deepseek_v2", "deepseek_v3") or cfg.get("kv_lora_rank"):
        raise ValueError(f"{where}: model_type {mtype!r} uses multi-head latent attention, which the twin does not "
                         "model; give the MoE shape as training_job.model keys if an approximation will do")
    if cfg.get("head_dim") and int(cfg["head_dim"]) * model["heads"] != model["hidden"]:
        unmapped.append(f"head_dim = {cfg['head_dim']}: heads x head_dim != hidden; the twin uses hidden / heads")
    gated = mtype in _HF_GATED or (mtype not in _HF_PLAIN and str(cfg.get("hidden_act", "")) in ("silu", "swish"))
    model["activation"] = "swiglu" if gated else "gelu"
    if mtype not in _HF_GATED | _HF_PLAIN:
        notes.append(f"model_type {mtype!r} not known: MLP taken as {model['activation']} from hidden_act "
                     f"{cfg.get('hidden_act')!r}")
    ffn = cfg.get("intermediate_size") or cfg.get("n_inner") or cfg.get("ffn_hidden_size")
    if ffn:
        model["ffn_hidden"] = int(ffn)
    model["tied_embeddings"] = bool(cfg.get("tie_word_embeddings", not gated))
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    if experts:
        moe: dict[str, Any] = {"experts": int(experts), "top_k": int(cfg.get("num_experts_per_tok", 1))}
        if cfg.get("moe_intermediate_size"):
            moe["expert_ffn_hidden"] = int(cfg["moe_intermediate_size"])
        if cfg.get("n_shared_experts"):
            moe["shared_experts"] = int(cfg["n_shared_experts"])
        elif cfg.get("shared_expert_intermediate_size") and moe.get("expert_ffn_hidden"):
            moe["shared_experts"] = max(1, round(cfg["shared_expert_intermediate_size"] / moe["expert_ffn_hidden"]))
            notes.append(f"shared_expert_intermediate_size {cfg['shared_expert_intermediate_size']} as "
                         f"{moe['shared_experts']} shared expert(s) of width {moe['expert_ffn_hidden']}")
        model["moe"] = moe
    if cfg.get("sliding_window") and cfg.get("use_sliding_window", True):
        unmapped.append(f"sliding_window = {cfg['sliding_window']}: attention is modelled over the full sequence")
    for k in ("attention_dropout", "hidden_dropout", "resid_pdrop", "attn_pdrop", "dropout"):
        if cfg.get(k):
            model["dropout"] = "yes"
    sc = _base(base)
    job = sc.setdefault("training_job", {})
    base_seq = job.get("model", {}).get("seq_length") if isinstance(job.get("model"), dict) else None
    context = cfg.get("max_position_embeddings") or cfg.get("n_positions")
    if seq_length is not None:
        model["seq_length"] = int(seq_length)
    elif base_seq:
        model["seq_length"] = int(base_seq)
        notes.append(f"seq_length {base_seq} from the base scenario (the config's context limit is {context})")
    elif context:
        model["seq_length"] = int(min(int(context), 8192))
        notes.append(f"seq_length {model['seq_length']}: the config's max_position_embeddings {context}"
                     + (" capped at 8192 (a context limit, not a training sequence; pass seq_length=)"
                        if int(context) > 8192 else ""))
    else:
        raise ValueError(f"{where}: no max_position_embeddings and no seq_length given")
    for k in cfg:
        if k not in _HF_HANDLED and not isinstance(cfg[k], (dict, list)):
            unmapped.append(f"{k} = {cfg[k]!r}: not a field the twin models")
    job["model"] = model
    sc["name"] = f"hf-{mtype or 'model'}"
    _fill_data_parallel(sc, notes)
    return ImportedScenario(sc, unmapped, notes)


# Megatron-LM arguments -> scenario keys. Value flags: (key path, converter).
_MEGATRON_VALUE = {
    "--num-layers": ("training_job.model.layers", int),
    "--hidden-size": ("training_job.model.hidden", int),
    "--num-attention-heads": ("training_job.model.heads", int),
    "--num-query-groups": ("training_job.model.kv_heads", int),
    "--ffn-hidden-size": ("training_job.model.ffn_hidden", int),
    "--seq-length": ("training_job.model.seq_length", int),
    "--vocab-size": ("training_job.model.vocab", int),
    "--padded-vocab-size": ("training_job.model.vocab", int),
    "--num-experts": ("training_job.model.moe.experts", int),
    "--moe-router-topk": ("training_job.model.moe.top_k", int),
    "--moe-ffn-hidden-size": ("training_job.model.moe.expert_ffn_hidden", int),
    "--tensor-model-parallel-size": ("training_job.parallelism.tensor_parallel", int),
    "--pipeline-model-parallel-size": ("training_job.parallelism.pipeline_parallel", int),
    "--virtual-pipeline-model-parallel-size": ("training_job.parallelism.virtual_pipeline", int),
    "--context-parallel-size": ("training_job.parallelism.context_parallel", int),
    "--expert-model-parallel-size": ("training_job.parallelism.expert_parallel", int),
    "--micro-batch-size": ("training_job.micro_batch_size", int),
    "--global-batch-size": ("training_job.global_batch_size", int),
    "--recompute-granularity": ("training_job.runtime.recompute_granularity", str),
    "--recompute-num-layers": ("training_job.runtime.recompute_layers", int),
}
_MEGATRON_SWITCH = {
    "--swiglu": ("training_job.model.activation", "swiglu"),
    "--untie-embeddings-and-output-weights": ("training_job.model.tied_embeddings", False),
    "--sequence-parallel": ("training_job.parallelism.sequence_parallel", True),
    "--overlap-grad-reduce": ("training_job.runtime.overlap_grad_reduce", True),
    "--overlap-param-gather": ("training_job.runtime.overlap_param_gather", True),
    "--tp-comm-overlap": ("training_job.runtime.tp_comm_overlap", True),
    "--overlap-p2p-communication": ("training_job.runtime.overlap_p2p", True),
    "--use-flash-attn": ("training_job.runtime.attention", "flash"),
    "--bf16": ("training_job.runtime.precision", "bf16"),
}
# Flags that do not change step time or memory in the twin (optimizer hyper-parameters, data,
# logging, checkpoint paths): taken without a word in `unmapped`.
_MEGATRON_NO_EFFECT = (
    "--lr", "--min-lr", "--lr-", "--weight-decay", "--clip-grad", "--adam-", "--init-method-std", "--seed",
    "--log-", "--tensorboard", "--wandb", "--save", "--load", "--data-", "--split", "--tokenizer-model",
    "--eval-", "--exit-", "--train-samples", "--no-", "--distributed-backend", "--distributed-timeout-minutes",
    "--normalization", "--norm-epsilon", "--position-embedding-type", "--rotary-", "--attention-dropout",
    "--hidden-dropout", "--disable-bias-linear", "--group-query-attention", "--use-mcore-models",
    "--transformer-impl", "--max-position-embeddings", "--make-vocab-size-divisible-by", "--vocab-file",
    "--merge-file", "--tokenizer-type", "--use-rotary-position-embeddings", "--apply-layernorm-1p",
    "--attention-softmax-in-fp32", "--accumulate-allreduce-grads-in-fp32", "--ckpt-format")


def _set(sc: dict, path: str, value: Any) -> None:
    node = sc
    parts = path.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def from_megatron_args(args: str | Sequence[str], base: dict | None = None) -> ImportedScenario:
    """A scenario from a Megatron-LM ``pretrain_gpt.py`` argument list (a string as on the
    command line, or a list); cluster and anything the arguments leave out come from ``base``.
    Data parallelism fills the base cluster's GPUs (Megatron takes it from the world size)."""
    tokens: list[str] = shlex.split(args) if isinstance(args, str) else list(args)
    sc = _base(base)
    job = sc.setdefault("training_job", {})
    job.pop("model", None)
    unmapped: list[str] = []
    notes: list[str] = []
    given: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--"):
            unmapped.append(f"{tok}: not an option")
            i += 1
            continue
        flag, _, inline = tok.partition("=")
        if inline:
            value, i = inline, i + 1
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            value, i = tokens[i + 1], i + 2
        else:
            value, i = None, i + 1
        if flag in _MEGATRON_VALUE:
            path, conv = _MEGATRON_VALUE[flag]
            if value is None:
                raise ValueError(f"{flag}: expects a value")
            try:
                given[path] = conv(value)
            except ValueError:
                raise ValueError(f"{flag}: got {value!r}, expected {conv.__name__}") from None
        elif flag in _MEGATRON_SWITCH:
            path, v = _MEGATRON_SWITCH[flag]
            given[path] = v
        elif flag in ("--fp8-format", "--fp8"):
            given["training_job.runtime.precision"] = "fp8"
            if value and flag == "--fp8-format":
                notes.append(f"--fp8-format {value}: FP8 linears (delayed scaling, Transformer Engine)")
        elif flag == "--fp8-recipe":
            if value in ("tensorwise", "delayed"):
                given["training_job.runtime.precision"] = "fp8" if value == "delayed" else "fp8-cs"
            elif value == "mxfp8":
                given["training_job.runtime.precision"] = "mxfp8"
            else:
                unmapped.append(f"--fp8-recipe {value}: no such recipe in the twin (delayed, tensorwise, mxfp8)")
        elif flag == "--use-distributed-optimizer":
            given["training_job.parallelism.zero_stage"] = 1
        elif flag == "--recompute-activations":
            given["training_job.runtime.recompute_granularity"] = "selective"
        elif flag == "--recompute-method":
            if value != "block":
                unmapped.append(f"--recompute-method {value}: only block is modelled (full recompute of every "
                                "layer unless --recompute-num-layers)")
        elif flag == "--moe-shared-expert-intermediate-size":
            given["_shared_width"] = int(value)
        elif flag == "--num-layers-per-virtual-pipeline-stage":
            given["_layers_per_vp"] = int(value)
        elif flag == "--fp16":
            unmapped.append("--fp16: fp16 mixed precision is modelled as bf16 (same tensor-core rate)")
            given["training_job.runtime.precision"] = "bf16"
        elif flag == "--train-iters":
            notes.append(f"--train-iters {value}: the twin simulates training_job.steps steps and reports the last")
        elif flag.startswith(_MEGATRON_NO_EFFECT):
            continue
        else:
            unmapped.append(f"{flag}" + (f" {value}" if value is not None else "") + ": not mapped")
    flags = {"layers": "--num-layers", "hidden": "--hidden-size", "heads": "--num-attention-heads",
             "seq_length": "--seq-length"}
    for name, flag in flags.items():
        if f"training_job.model.{name}" not in given:
            raise ValueError(f"Megatron arguments: {flag} missing (training_job.model.{name} has no default)")
    for path, what in (("training_job.micro_batch_size", "--micro-batch-size"),
                       ("training_job.global_batch_size", "--global-batch-size")):
        if path not in given:
            notes.append(f"{what} not given: {job.get(path.rsplit('.', 1)[1])} from the base scenario")
    if "training_job.model.vocab" not in given:
        given["training_job.model.vocab"] = 128256 if given.get("training_job.model.activation") == "swiglu" else 50257
        notes.append(f"vocab {given['training_job.model.vocab']}: no --vocab-size/--padded-vocab-size (the tokenizer "
                     "decides it); Llama 3's for swiglu models, GPT-2's otherwise")
    shared = given.pop("_shared_width", None)
    if shared:
        width = given.get("training_job.model.moe.expert_ffn_hidden") or given.get("training_job.model.ffn_hidden")
        if width:
            given["training_job.model.moe.shared_experts"] = max(1, round(shared / width))
    per_vp = given.pop("_layers_per_vp", None)
    if per_vp:
        layers = given["training_job.model.layers"]
        pp = given.get("training_job.parallelism.pipeline_parallel", 1)
        if layers % (pp * per_vp):
            raise ValueError(f"--num-layers-per-virtual-pipeline-stage {per_vp}: {layers} layers do not split into "
                             f"{pp} stages of chunks of {per_vp}")
        given["training_job.parallelism.virtual_pipeline"] = layers // (pp * per_vp)
    tp = given.get("training_job.parallelism.tensor_parallel", 1)
    if "training_job.parallelism.sequence_parallel" not in given and tp > 1:
        given["training_job.parallelism.sequence_parallel"] = False
        notes.append("sequence_parallel false: --sequence-parallel not given (Megatron's default is off)")
    if "training_job.parallelism.zero_stage" not in given:
        given["training_job.parallelism.zero_stage"] = 0
        notes.append("zero_stage 0: no --use-distributed-optimizer (gradients all-reduced, optimizer replicated)")
    for key in ("training_job.runtime.overlap_grad_reduce", "training_job.runtime.overlap_param_gather"):
        if key not in given:
            given[key] = False
    if "training_job.runtime.stack" not in given:
        given["training_job.runtime.stack"] = "megatron-core"
    par = job.get("parallelism", {})
    par.pop("data_parallel", None)
    for path, value in given.items():
        _set(sc, path, value)
    sc["name"] = "megatron-args"
    _fill_data_parallel(sc, notes)
    return ImportedScenario(sc, unmapped, notes)


def import_report(sc: ImportedScenario) -> str:
    """Text for the CLI: the notes and what was not mapped."""
    lines: list[str] = []
    for n in sc.notes:
        lines.append(f"note: {n}")
    for u in sc.unmapped:
        lines.append(f"not mapped: {u}")
    return "\n".join(lines)


__all__ = ["BASE", "ImportedScenario", "from_hf_config", "from_megatron_args", "import_report"]
