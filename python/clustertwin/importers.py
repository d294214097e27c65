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
import math
import os
import re
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
             "phi3", "olmo", "olmo2", "granite", "deepseek_v2", "deepseek_v3", "internlm2", "yi", "cohere",
             "glm4_moe", "gemma3_text", "gpt_oss"}
_HF_PLAIN = {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "gpt_bigcode", "mpt", "starcoder2", "phi"}
_MLA_FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_HF_HANDLED = {  # fields mapped above, reported separately, or with no effect on step time or memory
    "architectures", "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "transformers_version",
    "initializer_range", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "rope_theta", "rope_scaling",
    "use_cache", "model_type", "hidden_act", "attention_dropout", "attention_bias", "mlp_bias", "pretraining_tp",
    "router_aux_loss_coef", "router_jitter_noise", "output_router_logits", "max_window_layers", "use_sliding_window",
    "sliding_window", "tie_word_embeddings", "max_position_embeddings", "head_dim", "num_hidden_layers",
    "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
    "num_local_experts", "num_experts_per_tok", "num_experts", "moe_intermediate_size", "n_routed_experts",
    "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq", *_MLA_FIELDS,
    "n_embd", "n_layer", "n_head", "n_inner",
    "n_positions", "ffn_hidden_size", "activation_function", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "sliding_window_pattern", "experts_per_token", "initial_context_length",
    "hidden_dropout", "dropout"}


def _mla_fields(cfg: dict, where: str) -> dict[str, int]:
    """training_job.model.mla from the fields of the same names (Hugging Face config.json, NeMo /
    Megatron-Bridge model config); q_lora_rank null or absent is a direct Q projection (0)."""
    out = {"q_lora_rank": int(cfg.get("q_lora_rank") or 0)}
    for name in _MLA_FIELDS[1:]:
        if not cfg.get(name):
            raise ValueError(f"{where}: {name} missing: multi-head latent attention needs kv_lora_rank, "
                             "qk_nope_head_dim, qk_rope_head_dim and v_head_dim")
        out[name] = int(cfg[name])
    return out


def _leading_dense_layers(value: str | None) -> int | None:
    """Megatron's --moe-layer-freq as leading dense layers: 1 (every layer MoE) is 0, a pattern
    ``([0]*k+[1]*n)`` (DeepSeek-V3's recipes: ``([0]*3+[1]*58)``) is k; anything else None."""
    text = str(value or "").replace(" ", "")
    if text == "1":
        return 0
    m = re.fullmatch(r"\(?\[0\]\*(\d+)\+\[1\]\*(\d+)\)?", text)
    return int(m.group(1)) if m else None


def _full_attention_every(windowed: list[bool]) -> int | None:
    """k such that layer i (0-based) attends to the whole sequence exactly when (i + 1) % k == 0
    (0: every layer through the window), or None when the pattern is not of that form."""
    if all(windowed):
        return 0
    k = windowed.index(False) + 1
    ok = all(w == ((i + 1) % k != 0) for i, w in enumerate(windowed))
    return k if ok else None


def _hf_sliding_window(cfg: dict, mtype: str, model: dict, unmapped: list[str]) -> None:
    """training_job.model.sliding_window / full_attention_every from a config's sliding_window and
    which layers use it: layer_types (GPT-OSS, recent Gemma / Qwen), sliding_window_pattern (Gemma 3:
    every k-th layer global), Gemma 2's alternation, or every layer (Mistral)."""
    window = int(cfg["sliding_window"])
    layers = model["layers"]
    every: int | None
    if isinstance(cfg.get("layer_types"), list) and len(cfg["layer_types"]) == layers:
        every = _full_attention_every([t == "sliding_attention" for t in cfg["layer_types"]])
    elif cfg.get("sliding_window_pattern"):
        every = int(cfg["sliding_window_pattern"])
    elif mtype == "gemma2":
        every = 2  # Gemma 2: local (sliding) and global layers alternate, local first
    elif mtype in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and cfg.get("max_window_layers", layers) < layers:
        every = None  # Qwen2's max_window_layers: the window only on the top layers
    else:
        every = 0
    if every is None:
        unmapped.append(f"sliding_window = {window}: this config's choice of windowed layers is not modelled "
                        "(only every k-th layer global, or all windowed); attention over the full sequence")
        return
    model["sliding_window"] = window
    if every:
        model["full_attention_every"] = every


def _megatron_window(size: Any, skip: Any, where: str, given: dict, unmapped: list[str]) -> None:
    """Megatron's window attention (--window-size "(left, right)", --window-attn-skip-freq N or a
    pattern such as "[1,1,1,0]*3"; TransformerConfig window_size / window_attn_skip_freq): a query
    attends to the `left` keys before it and itself (Transformer Engine's window), so the window is
    left + 1 tokens; N is one full-attention layer after N - 1 windowed ones, 1 in a pattern a
    windowed layer."""
    if size is None:
        if skip is not None:
            unmapped.append(f"{where} window_attn_skip_freq {skip!r}: no window size given")
        return
    nums = re.findall(r"-?\d+", str(size))
    if len(nums) != 2 or int(nums[0]) < 0 or int(nums[1]) != 0:
        unmapped.append(f"{where} window_size {size!r}: only a causal window (left, 0) is modelled")
        return
    every: int | None = 0
    if skip is not None:
        text = str(skip).replace(" ", "")
        if re.fullmatch(r"\d+", text):
            every = int(text)
        else:
            m = re.fullmatch(r"\[([01](?:,[01])*)\](?:\*(\d+))?", text.strip("\"'"))
            every = None if m is None else _full_attention_every(
                [c == "1" for c in m.group(1).split(",")] * int(m.group(2) or 1))
            if every is None:
                unmapped.append(f"{where} window_attn_skip_freq {skip!r}: only every k-th layer without the window "
                                "is modelled; attention over the full sequence")
                return
    given["training_job.model.sliding_window"] = int(nums[0]) + 1
    if every:
        given["training_job.model.full_attention_every"] = every


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
    if cfg.get("kv_lora_rank"):  # DeepSeek-V2/V3, Kimi K2: multi-head latent attention
        model["mla"] = _mla_fields(cfg, where)
        model.pop("kv_heads", None)  # every head has its own K and V (the config repeats the head count)
    if cfg.get("head_dim") and "mla" not in model and int(cfg["head_dim"]) * model["heads"] != model["hidden"]:
        model["head_dim"] = int(cfg["head_dim"])  # Qwen3, Gemma: attention wider than the residual stream
    gated = mtype in _HF_GATED or (mtype not in _HF_PLAIN and str(cfg.get("hidden_act", "")) in ("silu", "swish"))
    model["activation"] = "swiglu" if gated else "gelu"
    if mtype not in _HF_GATED | _HF_PLAIN:
        notes.append(f"model_type {mtype!r} not known: MLP taken as {model['activation']} from hidden_act "
                     f"{cfg.get('hidden_act')!r}")
    ffn = cfg.get("intermediate_size") or cfg.get("n_inner") or cfg.get("ffn_hidden_size")
    if ffn:
        model["ffn_hidden"] = int(ffn)
    model["tied_embeddings"] = bool(cfg.get("tie_word_embeddings", not gated))
    # Position encoding by family: learned absolute tables (GPT-2, OPT, StarCoder 1), rotary
    # (GPT-NeoX, GPT-J, Falcon, Phi, StarCoder 2 and the gated families), ALiBi (BLOOM, MPT) as
    # none, its bias riding in the attention kernel; an unknown family keeps auto.
    alibi = bool(cfg.get("alibi") or (cfg.get("attn_config") or {}).get("alibi"))
    if mtype in ("gpt2", "opt", "gpt_bigcode") or (mtype == "mpt" and not alibi and cfg.get("learned_pos_emb", True)):
        model["position_embedding"] = "learned"
    elif mtype in ("bloom", "mpt") or alibi:
        model["position_embedding"] = "none"
    elif mtype in _HF_GATED | _HF_PLAIN:
        model["position_embedding"] = "rope"
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
        if cfg.get("first_k_dense_replace"):  # DeepSeek-V2/V3, GLM-4.5, Kimi K2: leading dense layers
            moe["dense_layers"] = int(cfg["first_k_dense_replace"])
        if cfg.get("moe_layer_freq", 1) != 1:  # DeepSeek's config: 1 = every layer after them is MoE
            unmapped.append(f"moe_layer_freq = {cfg['moe_layer_freq']}: only every layer after the leading dense "
                            "ones as MoE (1) is modelled")
        model["moe"] = moe
    if cfg.get("sliding_window") and cfg.get("use_sliding_window", True):
        _hf_sliding_window(cfg, mtype, model, unmapped)
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
    "--q-lora-rank": ("training_job.model.mla.q_lora_rank", int),
    "--kv-lora-rank": ("training_job.model.mla.kv_lora_rank", int),
    "--qk-head-dim": ("training_job.model.mla.qk_nope_head_dim", int),
    "--qk-pos-emb-head-dim": ("training_job.model.mla.qk_rope_head_dim", int),
    "--v-head-dim": ("training_job.model.mla.v_head_dim", int),
    "--tensor-model-parallel-size": ("training_job.parallelism.tensor_parallel", int),
    "--pipeline-model-parallel-size": ("training_job.parallelism.pipeline_parallel", int),
    "--virtual-pipeline-model-parallel-size": ("training_job.parallelism.virtual_pipeline", int),
    "--microbatch-group-size-per-virtual-pipeline-stage": ("training_job.parallelism.microbatch_group", int),
    "--context-parallel-size": ("training_job.parallelism.context_parallel", int),
    "--expert-model-parallel-size": ("training_job.parallelism.expert_parallel", int),
    "--micro-batch-size": ("training_job.micro_batch_size", int),
    "--global-batch-size": ("training_job.global_batch_size", int),
    "--recompute-granularity": ("training_job.runtime.recompute_granularity", str),
    "--recompute-num-layers": ("training_job.runtime.recompute_layers", int),
}
_MEGATRON_SWITCH = {
    "--swiglu": ("training_job.model.activation", "swiglu"),
    "--use-rotary-position-embeddings": ("training_job.model.position_embedding", "rope"),
    "--untie-embeddings-and-output-weights": ("training_job.model.tied_embeddings", False),
    "--sequence-parallel": ("training_job.parallelism.sequence_parallel", True),
    "--overlap-grad-reduce": ("training_job.runtime.overlap_grad_reduce", True),
    "--overlap-param-gather": ("training_job.runtime.overlap_param_gather", True),
    "--tp-comm-overlap": ("training_job.runtime.tp_comm_overlap", True),
    "--overlap-moe-expert-parallel-comm": ("training_job.runtime.moe_a2a_overlap", True),
    "--overlap-p2p-communication": ("training_job.runtime.overlap_p2p", True),
    "--use-flash-attn": ("training_job.runtime.attention", "flash"),
    "--bf16": ("training_job.runtime.precision", "bf16"),
    "--no-async-tensor-model-parallel-allreduce": ("training_job.runtime.tp_async_backward", "off"),
    "--no-gradient-accumulation-fusion": ("training_job.runtime.gradient_accumulation_fusion", False),
    "--accumulate-allreduce-grads-in-fp32": ("training_job.runtime.grad_reduce_in_fp32", "yes"),
    "--tp-only-amax-red": ("training_job.runtime.fp8_amax_reduction", "tp-cp"),
}
# Flags that do not change step time or memory in the twin (optimizer hyper-parameters, data,
# logging, checkpoint paths): taken without a word in `unmapped`.
_MEGATRON_NO_EFFECT = (
    "--lr", "--min-lr", "--lr-", "--weight-decay", "--clip-grad", "--adam-", "--init-method-std", "--seed",
    "--log-", "--tensorboard", "--wandb", "--save", "--load", "--data-", "--split", "--tokenizer-model",
    "--eval-", "--exit-", "--train-samples", "--no-", "--distributed-backend", "--distributed-timeout-minutes",
    "--normalization", "--norm-epsilon", "--rotary-", "--attention-dropout",
    "--hidden-dropout", "--disable-bias-linear", "--group-query-attention", "--use-mcore-models",
    "--transformer-impl", "--max-position-embeddings", "--make-vocab-size-divisible-by", "--vocab-file",
    "--merge-file", "--tokenizer-type", "--apply-layernorm-1p",
    "--attention-softmax-in-fp32", "--ckpt-format")


def _dispatcher(kind: str | None, backend: str | None, deepep: bool, unmapped: list[str], where: str) -> str | None:
    """training_job.runtime.moe_dispatcher from Megatron's token dispatcher type and flex backend
    (--moe-token-dispatcher-type alltoall | allgather | flex, --moe-flex-dispatcher-backend deepep |
    hybridep, the older --moe-enable-deepep): None when nothing was given."""
    if deepep and backend is None:
        backend = "deepep"
    if kind is None and backend is None:
        return None
    if kind in (None, "flex") and backend in ("deepep", "hybridep"):
        return backend
    if kind == "flex":
        return "deepep" if backend is None else None  # Megatron's flex default backend is DeepEP
    if kind == "alltoall":
        return "alltoall"
    unmapped.append(f"{where}: dispatcher {kind!r} (backend {backend!r}) is not modelled (alltoall, flex with "
                    "deepep or hybridep)")
    return None


# Megatron-core's selective-recompute modules the twin replays (training_job.runtime.recompute_modules).
_RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")


def _recompute_modules(mods: list[str], given: dict, unmapped: list[str], where: str) -> None:
    """Megatron's recompute modules as training_job.runtime.recompute_modules; the ones the twin
    does not model (GatedDeltaNet / HyperConnection modules) are reported, not passed on."""
    known = [x for x in mods if x in _RECOMPUTE_MODULES]
    for x in mods:
        if x not in _RECOMPUTE_MODULES:
            unmapped.append(f"{where} {x}: not a module the twin replays ({', '.join(_RECOMPUTE_MODULES)})")
    if known:
        given["training_job.runtime.recompute_modules"] = ",".join(known)


def _set_dispatcher(dispatcher: str | None, given: dict, notes: list[str]) -> None:
    """The dispatcher where it has a meaning (an MoE model with expert parallelism), else a note."""
    if dispatcher is None:
        return
    if given.get("training_job.model.moe.experts", 0) > 0 and given.get("training_job.parallelism.expert_parallel",
                                                                         1) > 1:
        given["training_job.runtime.moe_dispatcher"] = dispatcher
    else:
        notes.append(f"moe_dispatcher {dispatcher}: no effect without experts spread by expert parallelism")


def _cuda_graphs(impl: str | None, given: dict, notes: list[str], where: str) -> None:
    """Megatron's CUDA graph implementation (--cuda-graph-impl none | local | transformer_engine |
    full_iteration): only full-iteration capture changes the twin's step, for an MoE model, whose
    layers then run Megatron's sync-free path (training_job.runtime.moe_host_sync no); the launch
    time other graphs save is not modelled."""
    if impl is None:
        return
    moe = given.get("training_job.model.moe.experts", 0) > 0
    if impl == "full_iteration" and moe:
        given["training_job.runtime.moe_host_sync"] = "no"
        notes.append(f"{where} full_iteration: moe_host_sync no (Megatron's sync-free MoE path)")
    elif impl != "none":
        notes.append(f"{where} {impl}: the kernel launches a graph saves are not modelled"
                     + ("; the MoE dispatcher's host sync stays (moe_host_sync auto)" if moe else ""))


def _guess_vocab(given: dict, notes: list[str], why: str) -> None:
    """No vocabulary in the source: Llama 3's 128,256 for swiglu models, GPT-2's 50,257 otherwise."""
    vocab = 128256 if given.get("training_job.model.activation") == "swiglu" else 50257
    given["training_job.model.vocab"] = vocab
    notes.append(f"vocab {vocab}: {why}; Llama 3's for swiglu models, GPT-2's otherwise")


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
        elif flag == "--position-embedding-type":
            if value not in _POSITION_TYPES:
                raise ValueError(f"--position-embedding-type: got {value!r}, expected one of "
                                 f"{', '.join(sorted(_POSITION_TYPES))}")
            given["training_job.model.position_embedding"] = _POSITION_TYPES[value]
        elif flag == "--fp4-format":
            # Megatron's NVFP4 training (--fp4-format e2m1 --fp4-recipe nvfp4, Transformer Engine's
            # NVFP4BlockScaling): the twin's nvfp4
            given["training_job.runtime.precision"] = "nvfp4"
            notes.append(f"--fp4-format {value}: NVFP4 linears (Transformer Engine NVFP4BlockScaling)")
        elif flag == "--fp4-recipe":
            if value not in (None, "nvfp4"):
                unmapped.append(f"--fp4-recipe {value}: no such recipe in the twin (nvfp4)")
        elif flag == "--fp8-recipe":
            if value in ("tensorwise", "delayed"):
                given["training_job.runtime.precision"] = "fp8" if value == "delayed" else "fp8-cs"
            elif value == "mxfp8":
                given["training_job.runtime.precision"] = "mxfp8"
            else:
                unmapped.append(f"--fp8-recipe {value}: no such recipe in the twin (delayed, tensorwise, mxfp8)")
        elif flag == "--use-distributed-optimizer":
            given["training_job.parallelism.zero_stage"] = 1
        elif flag == "--cross-entropy-loss-fusion":
            given["_ce_fusion"] = True
        elif flag == "--cross-entropy-fusion-impl":
            if value not in _CE_IMPLS:
                raise ValueError(f"--cross-entropy-fusion-impl: got {value!r}, expected native or te")
            given["_ce_impl"] = value
        elif flag == "--recompute-activations":
            given["training_job.runtime.recompute_granularity"] = "selective"
        elif flag == "--recompute-method":
            if value != "block":
                unmapped.append(f"--recompute-method {value}: only block is modelled (full recompute of every "
                                "layer unless --recompute-num-layers)")
        elif flag == "--moe-shared-expert-intermediate-size":
            given["_shared_width"] = int(value)
        elif flag == "--multi-latent-attention":
            given["_latent"] = True
        elif flag == "--moe-layer-freq":
            dense = _leading_dense_layers(value)
            if dense is None:
                unmapped.append(f"--moe-layer-freq {value}: only every layer MoE (1) or leading dense layers "
                                "([0]*k+[1]*n) are modelled")
            elif dense > 0:
                given["training_job.model.moe.dense_layers"] = dense
        elif flag == "--num-layers-per-virtual-pipeline-stage":
            given["_layers_per_vp"] = int(value)
        elif flag in ("--window-size", "--window-attn-skip-freq"):
            given["_window_size" if flag == "--window-size" else "_window_skip"] = value
        elif flag == "--fp16":
            unmapped.append("--fp16: fp16 mixed precision is modelled as bf16 (same tensor-core rate)")
            given["training_job.runtime.precision"] = "bf16"
            # Megatron keeps fp16 gradient buffers unless --accumulate-allreduce-grads-in-fp32
            # (megatron/training/arguments.py: only bf16 forces fp32 accumulation)
            given.setdefault("_fp16", True)
        elif flag == "--recompute-modules":  # nargs="+"
            mods = [value] if value is not None else []
            while i < len(tokens) and not tokens[i].startswith("--"):
                mods.append(tokens[i])
                i += 1
            given["_recompute_modules"] = mods
        elif flag in ("--moe-token-dispatcher-type", "--moe-flex-dispatcher-backend"):
            given["_dispatcher_type" if flag == "--moe-token-dispatcher-type" else "_dispatcher_backend"] = value
        elif flag == "--moe-enable-deepep":
            given["_deepep"] = True
        elif flag == "--cuda-graph-impl":
            given["_cuda_graph_impl"] = value
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
        _guess_vocab(given, notes, "no --vocab-size/--padded-vocab-size (the tokenizer decides it)")
    _cross_entropy(given.pop("_ce_fusion", False), given.pop("_ce_impl", None), given, notes)
    if given.pop("_latent", False):  # the MLA widths from their flags; no query groups
        mla = {k.rsplit(".", 1)[1]: v for k, v in given.items() if k.startswith("training_job.model.mla.")}
        _mla_fields(mla, "Megatron arguments: --multi-latent-attention")
        given.pop("training_job.model.kv_heads", None)
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
    window, skip = given.pop("_window_size", None), given.pop("_window_skip", None)
    if window is not None or skip is not None:
        _megatron_window(window, skip, "Megatron arguments:", given, unmapped)
    mods = given.pop("_recompute_modules", None)
    if mods:
        if given.get("training_job.runtime.recompute_granularity") == "selective":
            _recompute_modules(mods, given, unmapped, "--recompute-modules")
        else:
            notes.append(f"--recompute-modules {' '.join(mods)}: no effect without --recompute-granularity selective")
    _set_dispatcher(_dispatcher(given.pop("_dispatcher_type", None), given.pop("_dispatcher_backend", None),
                                given.pop("_deepep", False), unmapped, "--moe-token-dispatcher-type"), given, notes)
    _cuda_graphs(given.pop("_cuda_graph_impl", None), given, notes, "--cuda-graph-impl")
    if given.pop("_fp16", False) and "training_job.runtime.grad_reduce_in_fp32" not in given:
        given["training_job.runtime.grad_reduce_in_fp32"] = "no"
        notes.append("grad_reduce_in_fp32 no: --fp16 without --accumulate-allreduce-grads-in-fp32 keeps 16-bit "
                     "gradient buffers")
    if "training_job.runtime.stack" not in given:
        given["training_job.runtime.stack"] = "megatron-core"
    par = job.get("parallelism", {})
    par.pop("data_parallel", None)
    for path, value in given.items():
        _set(sc, path, value)
    sc["name"] = "megatron-args"
    _fill_data_parallel(sc, notes)
    return ImportedScenario(sc, unmapped, notes)


# NeMo (1.x / NeMo-Framework-Launcher) and Megatron-Bridge (ConfigContainer) YAML -> scenario keys.
# Each entry: the twin's key path and the config's field names in the sections where they live,
# first match wins. NeMo 1.x keeps nearly everything under `model:` (and the node count under
# `trainer:`); Megatron-Bridge splits it over `model:`, `train:`, `ddp:`, `optimizer:`,
# `comm_overlap:` and `mixed_precision:`.
_NEMO_VALUE: list[tuple[str, Any, tuple[str, ...]]] = [
    ("training_job.model.layers", int, ("model.num_layers",)),
    ("training_job.model.hidden", int, ("model.hidden_size",)),
    ("training_job.model.heads", int, ("model.num_attention_heads",)),
    ("training_job.model.kv_heads", int, ("model.num_query_groups",)),
    ("training_job.model.ffn_hidden", int, ("model.ffn_hidden_size",)),
    ("training_job.model.vocab", int, ("model.vocab_size", "model.padded_vocab_size", "tokenizer.vocab_size")),
    ("training_job.model.seq_length", int, ("model.seq_length", "model.encoder_seq_length", "model.data.seq_length",
                                            "dataset.sequence_length", "dataset.seq_length")),
    ("training_job.model.tied_embeddings", bool, ("model.share_embeddings_and_output_weights",)),
    ("training_job.model.moe.experts", int, ("model.num_moe_experts",)),
    ("training_job.model.moe.top_k", int, ("model.moe_router_topk",)),
    ("training_job.model.moe.expert_ffn_hidden", int, ("model.moe_ffn_hidden_size",)),
    ("training_job.parallelism.tensor_parallel", int, ("model.tensor_model_parallel_size",)),
    ("training_job.parallelism.pipeline_parallel", int, ("model.pipeline_model_parallel_size",)),
    ("training_job.parallelism.virtual_pipeline", int, ("model.virtual_pipeline_model_parallel_size",)),
    ("training_job.parallelism.context_parallel", int, ("model.context_parallel_size",)),
    ("training_job.parallelism.expert_parallel", int, ("model.expert_model_parallel_size",)),
    ("training_job.parallelism.sequence_parallel", bool, ("model.sequence_parallel",)),
    ("training_job.micro_batch_size", int, ("train.micro_batch_size", "model.micro_batch_size")),
    ("training_job.global_batch_size", int, ("train.global_batch_size", "model.global_batch_size")),
    ("training_job.runtime.recompute_layers", int, ("model.recompute_num_layers",
                                                    "model.activations_checkpoint_num_layers")),
    ("training_job.runtime.overlap_grad_reduce", bool, ("ddp.overlap_grad_reduce", "comm_overlap.overlap_grad_reduce",
                                                        "model.optim.overlap_grad_sync")),
    ("training_job.runtime.overlap_param_gather", bool, ("ddp.overlap_param_gather",
                                                         "comm_overlap.overlap_param_gather",
                                                         "model.optim.overlap_param_sync")),
    ("training_job.runtime.tp_comm_overlap", bool, ("comm_overlap.tp_comm_overlap", "model.tp_comm_overlap",
                                                    "model.ub_tp_comm_overlap")),
    ("training_job.runtime.overlap_p2p", bool, ("comm_overlap.overlap_p2p_comm", "model.overlap_p2p_comm")),
    ("training_job.runtime.moe_a2a_overlap", bool, ("comm_overlap.overlap_moe_expert_parallel_comm",
                                                    "model.overlap_moe_expert_parallel_comm")),
    ("training_job.runtime.gradient_accumulation_fusion", bool, ("model.gradient_accumulation_fusion",)),
]
# Fields read above or in from_nemo_config, and fields with no effect on step time or memory in
# the twin (initialisation, norms' epsilon, rotary details, loss scaling, logging, data paths).
_NEMO_READ = {
    "window_size", "window_attn_skip_freq", "recompute_modules", "activation", "activation_func", "gated_linear_unit", "recompute_granularity", "activations_checkpoint_granularity",
    "recompute_method", "activations_checkpoint_method", "fp8", "fp8_recipe", "fp8_e4m3", "fp8_hybrid",
    "moe_shared_expert_intermediate_size", "multi_latent_attention", "kv_lora_rank", "q_lora_rank", "qk_head_dim",
    "qk_pos_emb_head_dim", "v_head_dim", "mcore_gpt",
    "use_distributed_optimizer", "name", "precision", "num_nodes", "devices", "transformer_engine",
    "use_flash_attention", "attention_backend", "bf16", "fp16", "mixed_precision", "fp8_wgrad", "fsdp",
    "cross_entropy_loss_fusion", "cross_entropy_fusion_impl"}
_NEMO_NO_EFFECT = (
    "init_method", "use_scaled_init_method", "layernorm_epsilon", "normalization", "rotary_", "rope_", "apply_rope",
    "max_position_embeddings", "seed", "lr", "min_lr", "weight_decay", "adam_", "betas",
    "clip_grad", "gradient_clip_val", "loss_scale", "initial_loss_scale", "min_loss_scale", "hysteresis",
    "native_amp_", "make_vocab_size_divisible_by", "log_", "logger", "val_", "limit_", "max_steps", "max_epochs",
    "max_time", "train_iters", "eval_", "hidden_dropout", "attention_dropout", "ffn_dropout", "kv_channels",
    "apply_query_key_layer_scaling", "normalize_attention_scores", "persist_layer_norm", "pre_process",
    "post_process", "bias", "add_bias_linear", "add_qkv_bias", "headscale", "transformer_block_type", "openai_gelu",
    "masked_softmax_fusion", "bias_activation_fusion", "bias_dropout",
    "grad_div_ar_fusion", "accelerator", "enable_checkpointing",
    "use_distributed_sampler", "accumulate_grad_batches", "resume_", "onnx_safe", "apex_", "gradient_as_bucket_view",
    "sync_batch_comm", "deterministic_mode", "gc_interval", "manual_gc", "fp8_margin", "fp8_interval",
    "fp8_amax_", "rampup_batch_size", "num_workers", "split", "data_impl", "skip_warmup", "dataloader_type",
    "reset_", "eod_mask_loss", "index_mapping_dir", "hf_model_id", "test_mode", "perform_initialization",
    "use_cpu_initialization", "timers", "config_logger_dir", "barrier_with_L1_time", "check_", "average_in_collective",
    "contiguous_", "bucket_cap_mb", "grad_allreduce_chunk_size_mb", "fp32_residual_connection",
    "fp16_lm_cross_entropy", "scale_positional_embedding", "attention_type", "layernorm_zero_centered_gamma",
    "qk_layernorm", "clone_scatter_output_in_embedding", "calculate_per_token_loss", "tp_comm_bootstrap_backend",
    "batch_p2p_comm", "batch_p2p_sync", "wgrad_deferral_limit", "num_dataset_builder_threads", "random_seed",
    "mmap_bin_files", "pin_memory", "persistent_workers", "drop_last", "data_sharding", "create_attention_mask",
    "add_extra_token_to_sequence", "mock", "exit_", "iterations_to_skip", "rerun_", "decoupled_weight_decay",
    "end_weight_decay", "start_weight_decay", "tp_comm_", "parallel_output", "mtp_loss_scaling_factor",
    "moe_aux_loss_coeff", "moe_z_loss_coeff", "moe_router_", "moe_token_", "moe_per_layer_logging",
    "moe_input_jitter_eps", "moe_grouped_gemm", "moe_permute_fusion", "gradient_reduce_div_fusion", "optimizer")
# Sections that only hold logging, checkpointing, data paths, scheduling and launcher settings.
_NEMO_SKIP_SECTIONS = {"checkpoint", "logger", "profiling", "rerun_state_machine", "rng", "scheduler", "tokenizer",
                       "validation", "dist", "ft", "inprocess_restart", "nvrx_straggler", "straggler",
                       "tensor_inspect", "peft", "optimizer_config_override_provider", "exp_manager", "run",
                       "hydra", "defaults", "nsys_profile", "sched", "data_prefix", "dataset", "data"}


def _nemo_sections(doc: dict) -> dict[str, dict]:
    """The config's sections by name (NeMo launcher files nest everything under `training:`);
    NeMo 1.x's model.optim and model.data as well."""
    if isinstance(doc.get("training"), dict) and "model" in doc["training"]:
        doc = doc["training"]
    out = {k: v for k, v in doc.items() if isinstance(v, dict)}
    model = out.get("model", {})
    for sub in ("optim", "data"):
        if isinstance(model.get(sub), dict):
            out[f"model.{sub}"] = model[sub]
    return out


def from_nemo_config(config: str | os.PathLike | dict, base: dict | None = None) -> ImportedScenario:
    """A scenario from a NeMo training YAML: NeMo 1.x / NeMo-Framework-Launcher
    (``trainer:`` + ``model:``, as in launcher_scripts/conf/training/*/*.yaml) or a dumped
    Megatron-Bridge ``ConfigContainer`` (``model:``, ``train:``, ``ddp:``, ``mixed_precision:``
    ...). Model shape, layout, batch, recompute, distributed optimizer, overlaps and FP8 recipe
    are mapped; the node count from ``trainer.num_nodes`` x ``devices`` when given, else the
    base cluster's. Interpolations (``${...}``) must be resolved first. ``unmapped`` lists the
    fields that could change performance but have no counterpart in the twin."""
    if isinstance(config, dict):
        doc, where = config, "config"
    else:
        from . import _core
        where = os.fspath(config)
        try:
            doc = json.loads(_core.read_document(where))
        except _core.ScenarioError as e:  # "invalid scenario:\n  document: <why>" -> "<file>: <why>"
            why = str(e).split("document:", 1)[-1].strip()
            raise ValueError(f"{where}: {why}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a mapping (a NeMo or Megatron-Bridge training config)")
    sections = _nemo_sections(doc)
    model = sections.get("model")
    if not isinstance(model, dict) or "num_layers" not in model:
        raise ValueError(f"{where}: no model.num_layers; not a NeMo / Megatron-Bridge GPT training config")
    latent = bool(model.get("multi_latent_attention") or model.get("kv_lora_rank"))
    unmapped: list[str] = []
    notes: list[str] = []
    given: dict[str, Any] = {}
    used: set[str] = set()

    def field(dotted: str) -> tuple[bool, Any]:
        sec, _, name = dotted.rpartition(".")
        d = sections.get(sec)
        if not isinstance(d, dict) or name not in d or d[name] is None:
            return False, None
        v = d[name]
        if isinstance(v, str) and "${" in v:
            v = _interpolate(v, sec, sections, f"{where}: {dotted}")
        return True, v

    for path, conv, names in _NEMO_VALUE:
        for dotted in names:
            ok, v = field(dotted)
            if ok:
                used.add(dotted)
                given[path] = _yaml_bool(v, f"{where}: {dotted}") if conv is bool else _yaml_int(v, f"{where}: {dotted}")
                break
    ok, fp32_grads = field("ddp.grad_reduce_in_fp32")  # Megatron-Bridge DistributedDataParallelConfig
    if ok:
        used.add("ddp.grad_reduce_in_fp32")
        fp32 = _yaml_bool(fp32_grads, f"{where}: ddp.grad_reduce_in_fp32")
        given["training_job.runtime.grad_reduce_in_fp32"] = "yes" if fp32 else "no"
    _nemo_activation(sections, given, notes)
    _nemo_positions(sections, given, unmapped)
    _nemo_recompute(sections, given, unmapped)
    _nemo_cross_entropy(sections, given, notes, unmapped)
    root = doc["training"] if isinstance(doc.get("training"), dict) and "model" in doc["training"] else doc
    _nemo_precision(sections, root.get("mixed_precision"), given, notes, unmapped)
    if latent:  # Megatron-core's MLATransformerConfig names
        mla: dict[str, Any] = {}
        for twin, name in (("q_lora_rank", "q_lora_rank"), ("kv_lora_rank", "kv_lora_rank"),
                           ("qk_nope_head_dim", "qk_head_dim"), ("qk_rope_head_dim", "qk_pos_emb_head_dim"),
                           ("v_head_dim", "v_head_dim")):
            ok, v = field(f"model.{name}")
            if ok and v is not None:
                used.add(f"model.{name}")
                mla[twin] = v
        given["training_job.model.mla"] = _mla_fields(mla, f"{where}: model (multi-head latent attention)")
        given.pop("training_job.model.kv_heads", None)
    ok_kind, kind = field("model.moe_token_dispatcher_type")
    ok_backend, backend = field("model.moe_flex_dispatcher_backend")
    ok_deepep, deepep = field("model.moe_enable_deepep")
    used.update(d for d, ok in (("model.moe_token_dispatcher_type", ok_kind),
                                ("model.moe_flex_dispatcher_backend", ok_backend),
                                ("model.moe_enable_deepep", ok_deepep)) if ok)
    deepep = bool(ok_deepep and _yaml_bool(deepep, f"{where}: model.moe_enable_deepep"))
    _set_dispatcher(_dispatcher(kind, backend, deepep, unmapped, f"{where}: model.moe_token_dispatcher_type"),
                    given, notes)
    ok_graphs, graphs = field("model.cuda_graph_impl")
    if ok_graphs:
        used.add("model.cuda_graph_impl")
        _cuda_graphs(str(graphs), given, notes, f"{where}: model.cuda_graph_impl")
    ok, shared = field("model.moe_shared_expert_intermediate_size")
    if ok and given.get("training_job.model.moe.experts"):
        width = given.get("training_job.model.moe.expert_ffn_hidden") or given.get("training_job.model.ffn_hidden")
        if width:
            given["training_job.model.moe.shared_experts"] = max(1, round(int(shared) / width))
    dist = any(_yaml_bool(sections.get(s, {}).get("use_distributed_optimizer"), s) for s in ("ddp", "optimizer")
               if sections.get(s, {}).get("use_distributed_optimizer") is not None)
    if "distributed" in str(sections.get("model.optim", {}).get("name", "")):  # distributed_fused_adam,
        dist = True                                                          # mcore_distributed_optim
    _nemo_master_weights(sections, given, notes)
    if model.get("megatron_amp_O2") is not None:  # bf16 weights (the nemo stack's), master remainders above
        used.add("model.megatron_amp_O2")
    fsdp = bool(model.get("fsdp")) and model.get("fsdp") not in ("false", "False")
    given["training_job.parallelism.zero_stage"] = 3 if fsdp else 1 if dist else 0
    if fsdp:
        notes.append("zero_stage 3: model.fsdp (parameters, gradients and optimizer state sharded)")
    elif not dist:
        notes.append("zero_stage 0: no distributed optimizer (ddp.use_distributed_optimizer / "
                     "optim.name distributed_fused_adam)")
    trainer = sections.get("trainer", {})
    if trainer.get("num_nodes") and trainer.get("devices"):
        nodes, devices = int(trainer["num_nodes"]), int(trainer["devices"])
        given["cluster.nodes"] = nodes
        given["cluster.gpus_per_node"] = devices
        notes.append(f"cluster: {nodes} nodes x {devices} GPUs from trainer.num_nodes / devices; GPU and network "
                     "from the base scenario")
    for path, what in (("training_job.micro_batch_size", "micro_batch_size"),
                       ("training_job.global_batch_size", "global_batch_size"),
                       ("training_job.model.seq_length", "seq_length / encoder_seq_length")):
        if path not in given:
            if path.endswith("seq_length"):
                raise ValueError(f"{where}: no model.seq_length, model.encoder_seq_length or dataset.sequence_length")
            notes.append(f"{what} not given: the base scenario's")
    if "training_job.model.vocab" not in given:
        tok = sections.get("model", {}).get("tokenizer")
        name = " ".join(str(tok.get(k) or "") for k in ("type", "model")).lower() if isinstance(tok, dict) else ""
        known = next((v for key, v in _TOKENIZER_VOCAB if key in name), None)
        if known:
            given["training_job.model.vocab"] = known
            notes.append(f"vocab {known}: the tokenizer's ({name.strip()})")
        else:
            _guess_vocab(given, notes, "the config leaves it to the tokenizer")
    if given.get("training_job.parallelism.virtual_pipeline") == 1:
        given.pop("training_job.parallelism.virtual_pipeline")
    given.setdefault("training_job.runtime.overlap_grad_reduce", False)
    given.setdefault("training_job.runtime.overlap_param_gather", False)
    given["training_job.runtime.stack"] = "nemo"
    _nemo_unmapped(sections, used, unmapped)
    sc = _base(base)
    job = sc.setdefault("training_job", {})
    job.pop("model", None)
    job.get("parallelism", {}).pop("data_parallel", None)
    for path, value in given.items():
        _set(sc, path, value)
    sc["name"] = "nemo-config"
    _fill_data_parallel(sc, notes)
    return ImportedScenario(sc, unmapped, notes)


_INNER = re.compile(r"\$\{([^${}]*)\}")


def _interpolate(text: str, section: str, sections: dict, where: str) -> Any:
    """The OmegaConf interpolations NeMo launcher files use in model fields: ${.key} (same
    section), ${model.key} / ${training.model.key}, and the resolvers multiply, divide_ceil and
    divide_floor, e.g. ffn_hidden_size: ${multiply:4, ${.hidden_size}}. Anything else is an
    error asking for the resolved config."""
    def lookup(ref: str) -> Any:
        if ref.startswith("."):
            sec, key = section, ref[1:]
        else:
            parts = ref.split(".")
            if parts[0] == "training":
                parts = parts[1:]
            sec, key = ".".join(parts[:-1]), parts[-1]
        d = sections.get(sec, {})
        if key not in d or isinstance(d[key], (dict, list)):
            raise KeyError(ref)
        v = d[key]
        return _interpolate(v, sec, sections, where) if isinstance(v, str) and "${" in v else v

    def evaluate(inner: str) -> str:
        name, colon, args = inner.partition(":")
        if not colon:
            return str(lookup(inner.strip()))
        nums = [float(a) for a in args.split(",")]
        if name == "multiply" and nums:
            out = 1.0
            for n in nums:
                out *= n
        elif name in ("divide_ceil", "divide_floor") and len(nums) == 2 and nums[1]:
            q = nums[0] / nums[1]
            out = float(math.ceil(q) if name == "divide_ceil" else math.floor(q))
        else:
            raise KeyError(name)
        return str(int(out)) if out.is_integer() else str(out)

    value = text
    try:
        for _ in range(64):
            m = _INNER.search(value)
            if m is None:
                break
            value = value[:m.start()] + evaluate(m.group(1)) + value[m.end():]
    except (KeyError, ValueError):
        raise ValueError(f"{where} = {text!r}: an interpolation this import does not resolve; resolve the config "
                         "first (OmegaConf.to_yaml(cfg, resolve=True))") from None
    try:
        return json.loads(value)
    except ValueError:
        return value


# Vocabulary sizes of the tokenizers NeMo configs name (the models' Hugging Face config.json
# vocab_size; GPT-2 BPE 50,257; Nemotron's 256K SentencePiece model).
_TOKENIZER_VOCAB = (("llama-3", 128256), ("llama3", 128256), ("llama-2", 32000), ("llama2", 32000),
                    ("mixtral", 32000), ("mistral-7b", 32000), ("gpt2", 50257), ("256k", 256000))


def _yaml_int(v: Any, where: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    raise ValueError(f"{where}: got {v!r}, expected int")


def _yaml_bool(v: Any, where: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise ValueError(f"{where}: got {v!r}, expected true or false")


def _nemo_activation(sections: dict, given: dict, notes: list[str]) -> None:
    m = sections["model"]
    act = m.get("activation")
    if isinstance(act, str):  # NeMo 1.x: swiglu, fast-swiglu, geglu, gelu, squared-relu, ...
        gated = "glu" in act
        if act.replace("fast-", "") not in ("swiglu", "geglu", "reglu", "gelu", "relu"):
            notes.append(f"model.activation {act!r}: modelled as {'swiglu' if gated else 'gelu'} (same FLOPs and memory)")
        given["training_job.model.activation"] = "swiglu" if gated else "gelu"
    elif m.get("gated_linear_unit") is not None:  # Megatron-Bridge
        given["training_job.model.activation"] = "swiglu" if _yaml_bool(m["gated_linear_unit"],
                                                                       "model.gated_linear_unit") else "gelu"


# Megatron's loss kernels (--cross-entropy-loss-fusion, --cross-entropy-fusion-impl; NeMo and
# Megatron-Bridge cross_entropy_loss_fusion / cross_entropy_fusion_impl): "te" only acts with the
# fusion on. Transformer Engine 2.2-2.17 is assumed (gradient in place in the bf16 logits); TE
# 2.18 keeps it in fp32 (training_job.runtime.cross_entropy_fusion: te-2.18).
_CE_IMPLS = ("native", "te")


def _cross_entropy(fusion: bool, impl: str | None, given: dict, notes: list[str]) -> None:
    if impl == "te" and fusion:
        given["training_job.runtime.cross_entropy_fusion"] = "te"
        notes.append("cross entropy: Transformer Engine's fused kernel as TE 2.2-2.17 runs it (gradient in "
                     "place in the bf16 logits); set training_job.runtime.cross_entropy_fusion: te-2.18 for TE >= 2.18")
    elif impl == "te":
        notes.append("cross_entropy_fusion_impl te without the loss fusion on: Megatron's native loss")


def _nemo_cross_entropy(sections: dict, given: dict, notes: list[str], unmapped: list[str]) -> None:
    impl = sections["model"].get("cross_entropy_fusion_impl")
    if impl is not None and impl not in _CE_IMPLS:
        unmapped.append(f"model.cross_entropy_fusion_impl {impl!r}: not native or te")
        return
    # GPTModelProvider (Megatron-Bridge models/gpt_provider.py) defaults the fusion on
    fusion = sections["model"].get("cross_entropy_loss_fusion", True)
    _cross_entropy(_yaml_bool(fusion, "model.cross_entropy_loss_fusion"), impl, given, notes)


# NeMo / Megatron-Bridge position_embedding_type -> model.position_embedding (ALiBi as none: its
# bias rides in the attention kernel).
_POSITION_TYPES = {"learned_absolute": "learned", "rope": "rope", "none": "none", "alibi": "none"}


def _nemo_positions(sections: dict, given: dict, unmapped: list[str]) -> None:
    m = sections["model"]
    if m.get("window_size") is not None or m.get("window_attn_skip_freq") is not None:
        _megatron_window(m.get("window_size"), m.get("window_attn_skip_freq"), "model.", given, unmapped)
    kind = sections["model"].get("position_embedding_type")
    if kind is None:
        return
    if kind in _POSITION_TYPES:
        given["training_job.model.position_embedding"] = _POSITION_TYPES[kind]
    else:
        unmapped.append(f"model.position_embedding_type {kind!r}: not learned_absolute, rope, alibi or none")


def _nemo_recompute(sections: dict, given: dict, unmapped: list[str]) -> None:
    m = sections["model"]
    gran = m.get("recompute_granularity", m.get("activations_checkpoint_granularity"))
    if gran in (None, "null", "none"):
        given["training_job.runtime.recompute_granularity"] = "none"
    elif gran in ("selective", "full"):
        given["training_job.runtime.recompute_granularity"] = gran
    else:
        unmapped.append(f"recompute granularity {gran!r}: not selective or full")
    method = m.get("recompute_method", m.get("activations_checkpoint_method"))
    if gran == "full" and method not in (None, "block"):
        unmapped.append(f"recompute method {method!r}: only block is modelled (full recompute of "
                        "recompute_num_layers layers per stage, or all)")
    mods = m.get("recompute_modules")
    if gran == "selective" and isinstance(mods, list) and mods and sorted(mods) != ["core_attn"]:
        _recompute_modules([str(x) for x in mods], given, unmapped, "recompute_modules")


def _nemo_precision(sections: dict, mp_name: Any, given: dict, notes: list[str], unmapped: list[str]) -> None:
    m, mp = sections["model"], sections.get("mixed_precision")
    fp8, recipe = None, None
    fp4 = mp.get("fp4") if isinstance(mp, dict) else ("e2m1" if isinstance(mp_name, str) and "nvfp4" in mp_name
                                                      else None)
    if fp4 not in (None, False):  # Megatron-Bridge bf16_with_nvfp4_mixed: fp4 e2m1, fp4_recipe nvfp4
        fp4_recipe = mp.get("fp4_recipe", "nvfp4") if isinstance(mp, dict) else "nvfp4"
        given["training_job.runtime.precision"] = "nvfp4"
        if fp4_recipe != "nvfp4":
            unmapped.append(f"fp4_recipe {fp4_recipe!r}: modelled as NVFP4 block scaling (nvfp4)")
        notes.append(f"FP4 ({fp4}, recipe {fp4_recipe}) -> training_job.runtime.precision nvfp4")
        return
    if isinstance(mp, dict):  # Megatron-Bridge MixedPrecisionConfig
        fp8, recipe = mp.get("fp8"), mp.get("fp8_recipe")
    elif isinstance(mp_name, str):  # a Megatron-Bridge recipe name, e.g. bf16_with_fp8_current_scaling_mixed
        if "fp8" in mp_name:
            fp8 = "e4m3"
            recipe = ("mxfp8" if "mxfp8" in mp_name else "tensorwise" if "current_scaling" in mp_name
                      else "blockwise" if "blockwise" in mp_name else "delayed")
    raw = m.get("fp8")
    if fp8 is None and raw not in (None, False, "false", "False"):
        fp8, recipe = raw, m.get("fp8_recipe", "delayed")
    if fp8 in (None, False):
        given["training_job.runtime.precision"] = "bf16"
        return
    if recipe in (None, "delayed"):
        given["training_job.runtime.precision"] = "fp8"
    elif recipe == "tensorwise":
        given["training_job.runtime.precision"] = "fp8-cs"
    elif recipe == "mxfp8":
        given["training_job.runtime.precision"] = "mxfp8"
    else:
        given["training_job.runtime.precision"] = "fp8-cs"
        unmapped.append(f"fp8_recipe {recipe!r}: modelled as per-tensor current scaling (fp8-cs)")
    notes.append(f"FP8 ({fp8}, recipe {recipe or 'delayed'}) -> training_job.runtime.precision "
                 f"{given['training_job.runtime.precision']}")


def _nemo_master_weights(sections: dict, given: dict, notes: list[str]) -> None:
    """NeMo 1.x's distributed_fused_adam keeps only 16-bit remainders of the fp32 master weights
    when the model's weights are bf16 (megatron_amp_O2 with bf16 precision), its state dtype is
    fp32 and there are no FP8 primary weights (fp8_params) and no explicit store_params:
    nemo/collections/nlp/models/language_modeling/megatron_base_model.py at v2.0.0."""
    model, optim = sections["model"], sections.get("model.optim", {})
    if optim.get("name") != "distributed_fused_adam" or "store_params" in optim:
        return
    precision = str(sections.get("trainer", {}).get("precision", ""))
    o2 = model.get("megatron_amp_O2") is not None and _yaml_bool(model["megatron_amp_O2"], "model.megatron_amp_O2")
    fp8_params = model.get("fp8_params") is not None and _yaml_bool(model["fp8_params"], "model.fp8_params")
    fp32_state = str(optim.get("dtype", "float32")).replace("torch.", "") in ("float32", "fp32", "32")
    if o2 and precision.startswith("bf16") and fp32_state and not fp8_params:
        given["training_job.runtime.master_weights"] = "remainder"
        notes.append("master_weights remainder: distributed_fused_adam with bf16 O2 weights stores 16-bit "
                     "remainders of the fp32 masters (store_param_remainders)")


def _nemo_unmapped(sections: dict, used: set[str], unmapped: list[str]) -> None:
    """Set fields (not null, false, 0 or empty) of the performance sections that nothing above
    read and that are not known to leave step time and memory alone."""
    for sec, d in sections.items():
        if sec in _NEMO_SKIP_SECTIONS or sec.split(".")[-1] in _NEMO_SKIP_SECTIONS:
            continue
        for k, v in d.items():
            if f"{sec}.{k}" in used or k in _NEMO_READ or k.startswith(_NEMO_NO_EFFECT) or k.startswith("_"):
                continue
            if v in (None, False, 0, "", [], "none", "null") or isinstance(v, dict):
                continue
            if k.startswith("fsdp_") and not sections.get("model", {}).get("fsdp"):
                continue  # FSDP settings of a config that does not use FSDP
            unmapped.append(f"{sec}.{k} = {v!r}: not modelled")


def import_report(sc: ImportedScenario) -> str:
    """Text for the CLI: the notes and what was not mapped."""
    lines: list[str] = []
    for n in sc.notes:
        lines.append(f"note: {n}")
    for u in sc.unmapped:
        lines.append(f"not mapped: {u}")
    return "\n".join(lines)


__all__ = ["BASE", "ImportedScenario", "from_hf_config", "from_megatron_args", "from_nemo_config", "import_report"]
