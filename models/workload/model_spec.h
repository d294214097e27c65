// Typed training-job configuration. Field names are exactly the scenario keys under
// `training_job` (DESIGN.md "Scenario"), so the scenario loader fills them by name.
//
// Derived quantities and conventions (documented once here, used by every file):
//   head_dim      d   = hidden / heads
//   kv_heads          = heads when 0 (multi-head attention); GQA otherwise (Ainslie et al. 2023)
//   kv_dim            = kv_heads * d
//   ffn_hidden    f   = 4 h for "gelu" when 0 (GPT-2/3); for "swiglu" 8h/3 rounded up to a
//                       multiple of 256 (Llama: floor(8h/3), multiple_of = 256; h = 4096 gives
//                       11008)
//   expert_ffn_hidden = ffn_hidden when 0
// The activation also selects the architecture family, since the scenario has no other key
// for it:
//   "gelu"   GPT-2/3 / Megatron GPT: biases on every linear layer, LayerNorm (weight + bias),
//            learned absolute position embeddings (seq_length x hidden), dropout after the
//            attention and MLP blocks and on the embeddings. fc1/fc2 (2 matrices).
//   "swiglu" Llama / Mixtral: no biases, RMSNorm (weight only), rotary positions (no
//            parameters), no dropout. gate/up/down (3 matrices); gate and up are one fused
//            GEMM as in Megatron-core's linear_fc1.
// MoE (moe.experts > 0): every layer's MLP is replaced by `experts` routed experts (top_k
// per token), `shared_experts` always-on experts (DeepSeek-MoE), and a router h x experts
// without bias. Each expert is an MLP of width expert_ffn_hidden.
// recompute_granularity lives at `training_job.runtime.recompute_granularity` in the
// scenario file; it is a field of JobSpec here because only the job uses it.
#pragma once

#include <cstdint>
#include <string>

namespace ct::workload {

struct MoeSpec {
  int experts = 0;  // 0 = dense model
  int top_k = 1;
  int64_t expert_ffn_hidden = 0;  // 0 = ffn_hidden
  int shared_experts = 0;
  double capacity_factor = 1.0;  // expert GEMMs are padded to capacity_factor x balanced load
  // The first dense_layers layers keep a dense MLP of ffn_hidden (DeepSeek-V2/V3 and GLM-4.5's
  // first_k_dense_replace, Kimi K2's first_k_dense_replace = 1; Megatron's --moe-layer-freq
  // with leading zeros); the rest are MoE layers.
  int dense_layers = 0;
};

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2; Megatron-core MLASelfAttention, the
// Hugging Face config's fields of the same names): Q comes from a down-projection to q_lora_rank,
// normed, and an up-projection to heads x (qk_nope_head_dim + qk_rope_head_dim) (a direct
// projection when q_lora_rank is 0); K and V from one down-projection to kv_lora_rank +
// qk_rope_head_dim (the rotary key shared by every head), the latent normed and up-projected to
// heads x (qk_nope_head_dim + v_head_dim); the attention runs on heads of qk_nope + qk_rope for
// Q.K and v_head_dim for V, and the output projection maps heads x v_head_dim back to hidden.
// The down-projections are not split by TP (Megatron builds them duplicated).
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;  // 0 = no latent attention
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct ModelSpec {
  std::string preset = "none";  // training_job.model.preset the fields came from (scenario/model_presets.h)
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // 0 = heads
  // Width of one attention head; 0 = hidden / heads. Qwen3 (hidden 5120, 64 heads of 128) and
  // Gemma project the attention wider than the residual stream: Q is heads x head_dim, K and V
  // kv_heads x head_dim, and the output projection maps heads x head_dim back to hidden.
  int64_t head_dim = 0;
  int64_t ffn_hidden = 0;           // 0 = 4*hidden (gelu) or Llama's 8/3*hidden rounded (swiglu)
  std::string activation = "gelu";  // "gelu" | "swiglu"
  int64_t seq_length = 0;
  int64_t vocab = 0;
  bool tied_embeddings = true;
  // Dropout layers (their masks are stored for backward): "auto" = GPT-style (gelu) models have
  // them, Llama-style (swiglu) not; "yes" / "no" say so (MPT trains GELU without dropout).
  std::string dropout = "auto";
  // Position encoding: "learned" absolute embeddings (seq_length x hidden parameters, GPT),
  // "rope" rotary (no parameters; a kernel of its own in eager PyTorch, fused elsewhere),
  // "none" (also ALiBi, whose bias rides in the attention kernel); "auto" = learned with gelu,
  // rope with swiglu.
  std::string position_embedding = "auto";
  // Sliding-window attention: each query attends to at most the last `sliding_window` tokens
  // (itself included) instead of all earlier ones; 0 = none. With full_attention_every = k > 0,
  // layers k, 2k, ... (1-based) attend to the whole causal sequence and the others use the
  // window (GPT-OSS alternates, k = 2: HF config layer_types; Gemma 3 k = 6:
  // sliding_window_pattern); k = 0: every layer uses the window (Mistral 7B v0.1).
  int64_t sliding_window = 0;
  int full_attention_every = 0;
  MoeSpec moe;
  MlaSpec mla;
};

// Whether layer `layer` (0-based) attends through the sliding window (ModelSpec above).
inline bool windowed_layer(const ModelSpec& m, int64_t layer) {
  if (m.sliding_window <= 0) return false;
  return m.full_attention_every <= 0 || (layer + 1) % m.full_attention_every != 0;
}

struct ParallelSpec {
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;
  int virtual_pipeline = 1;
  // Interleaved 1F1B: micro-batches run back to back on a model chunk before the next chunk
  // (Megatron-Core's microbatch_group_size_per_vp_stage; schedule.h); 0 = p.
  int microbatch_group = 0;
  bool sequence_parallel = true;
  int context_parallel = 1;
  int expert_parallel = 1;  // carved out of data_parallel * context_parallel (Megatron)
  // Tensor parallelism of the expert MLPs (Megatron's expert_tensor_parallel_size; 0 = as
  // tensor_parallel). Below TP it folds: the expert groups are formed over TP x CP x DP
  // (MoE parallel folding), so EP x ETP must divide TP x CP x DP.
  int expert_tensor_parallel = 0;
  int zero_stage = 1;  // 0 DP all-reduce, 1 optimizer, 2 + grads, 3 + weights sharded
  // ZeRO / FSDP sharding group within DP (0 = all of DP x CP). Smaller: hybrid sharding
  // (HSDP): shard within groups of consecutive DP ranks, replicate across them.
  int shard_size = 0;
};

struct JobSpec {
  ModelSpec model;
  ParallelSpec parallelism;
  int64_t global_batch_size = 0;
  int64_t micro_batch_size = 1;
  std::string recompute_granularity = "selective";  // none | selective | full
  // With full recompute: layers of each model chunk recomputed, the first ones (Megatron's
  // --recompute-method block --recompute-num-layers); 0 = all of them.
  int recompute_layers = 0;
  std::string attention = "flash";  // flash (fused, causal-aware) | unfused (materialised scores)
  // The flash kernel: auto (the stack's) | cudnn | fa3 | fa2 | triton (layer_ops.h).
  std::string attention_kernel = "auto";
  // torch.compile fuses the element-wise ops of PyTorch-native stacks (torchtitan, pytorch,
  // composer); without it Llama blocks run eager composite kernels (layer_ops.h).
  bool torch_compile = false;
  // The cross-entropy loss compiled with the model (torchtitan's build_cross_entropy_loss since
  // April 2025: torch.compile(loss_fn) when compiling; components/loss.py): one fused pass
  // instead of eager fp32 copies of the logits (memory.h, 4.).
  bool compiled_loss = false;
  // Transformer Engine's fused Triton cross entropy (Megatron --cross-entropy-fusion-impl te):
  // one kernel computes the loss and the logits' gradient. TE 2.2-2.17 writes that gradient in
  // place into the bf16 logits; TE 2.18 (NVIDIA/TransformerEngine#3193) into a new fp32 tensor.
  enum class TeCrossEntropy { no, in_place, fp32_grad };
  TeCrossEntropy te_cross_entropy = TeCrossEntropy::no;
  std::string stack = "megatron-core";  // training_job.runtime.stack (memory.h)
  // bf16 | fp8 (Transformer Engine delayed scaling) | fp8-cs (per-tensor current scaling: TE
  // Float8CurrentScaling, torchao float8 tensorwise) | mxfp8 (Blackwell block scaling) | nvfp4
  // (TE NVFP4BlockScaling, Blackwell: FP4 GEMMs with FP8 block scales); layer_ops.h
  std::string precision = "bf16";
  // Low-precision primary weights (Megatron --fp8-param-gather, or with nvfp4 fp4_param_gather):
  // linear weights held and all-gathered in FP8 / NVFP4 instead of bf16 + a cached copy
  // (memory.h; resolved from fp8_params).
  bool fp8_params = false;
  // The optimizer keeps only the low 16 bits of each fp32 master weight beside the bf16 weight
  // (Apex DistributedFusedAdam / TE FusedAdam store_param_remainders): 2 bytes instead of 4
  // (memory.h; resolved from training_job.runtime.master_weights).
  bool master_remainders = false;
  // Layers whose activations are offloaded to host memory (Megatron --cpu-offloading-num-layers):
  // the first ones of the model, PP 1 and no recompute (memory.h, block_costs.h).
  int offload_activation_layers = 0;
  // Megatron's column-parallel linears overlap their backward TP collectives with the GEMMs
  // beside them (--async-tensor-model-parallel-allreduce, block_costs.h); resolved from
  // training_job.runtime.tp_async_backward (auto: megatron-core and nemo).
  bool tp_async_backward = false;
  // Megatron's gradient buffer in fp32 or 16 bits (--accumulate-allreduce-grads-in-fp32,
  // Megatron-Bridge ddp.grad_reduce_in_fp32): 4 or 2 bytes per parameter in memory and in the
  // data-parallel reduction; 0 = the stack's (memory.h). From training_job.runtime.grad_reduce_in_fp32.
  int grad_reduce_bytes = 0;
  // Megatron's --gradient-accumulation-fusion (on by default since Megatron-LM 83b1e42, Feb 2022):
  // the weight-gradient GEMM accumulates into the gradient buffer. Off, each micro-batch's
  // 16-bit weight gradients are added into it by a kernel of their own (memory.h
  // grad_accumulation_bytes_per_param).
  bool gradient_accumulation_fusion = true;
  // Megatron's combined 1F1B schedule (--overlap-moe-expert-parallel-comm; Megatron-Bridge
  // moe_a2a_overlap): the expert all-to-all of one micro-batch's forward runs under another's
  // backward compute and vice versa (block_costs.h).
  bool moe_a2a_overlap = false;
  // How expert-parallel tokens move (training_job.runtime.moe_dispatcher): alltoall (NCCL
  // all-to-all of top_k copies), or the flex dispatcher's DeepEP / HybridEP kernels, which send a
  // token once per destination GPU inside an NVLink domain and once per destination domain across
  // them, on SMs of their own (block_costs.cpp token_dispatch, dispatcher_sms).
  enum class MoeDispatcher : uint8_t { alltoall, deepep, hybridep };
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // Each MoE layer's forward waits for a device-to-host sync of the dispatcher's token counts and
  // then for the host to issue the rest of the layer (training_job.runtime.moe_host_sync; resolved:
  // auto is yes on megatron-core and nemo with experts; replay/block_costs.h kMoeHostSyncS).
  bool moe_host_sync = false;
  // Megatron's --recompute-modules under selective recompute (training_job.runtime.
  // recompute_modules): a mask of recompute_module bits; 0 = Megatron's default, the core
  // attention alone.
  uint32_t recompute_modules = 0;
};

// The submodules Megatron-core's selective recompute can replay (TransformerConfig.
// recompute_modules, megatron/core/transformer/transformer_config.py at d98e8a6): core_attn,
// mlp, moe and shared_experts are checkpointed (only their input kept), moe_act, layernorm and
// mla_up_proj discard their output once consumed and recompute it before backward.
namespace recompute_module {
constexpr uint32_t core_attn = 1, moe_act = 2, layernorm = 4, mla_up_proj = 8, mlp = 16, moe = 32,
                   shared_experts = 64;
}
// The modules a selective recompute of `job` replays.
inline uint32_t selective_modules(const JobSpec& job) {
  return job.recompute_modules != 0 ? job.recompute_modules : recompute_module::core_attn;
}

// The linear layers run quantized: any of the FP8 recipes, or NVFP4 (FP4 GEMMs, everything
// around them as under FP8: casts before the GEMMs, quantized copies saved and gathered).
inline bool is_fp8(const JobSpec& j) {
  return j.precision == "fp8" || j.precision == "fp8-cs" || j.precision == "mxfp8" || j.precision == "nvfp4";
}

// Bytes per element of a linear layer's quantized input or weight copy: 1 (FP8; MXFP8's 1-in-32
// scale bytes left out as before), 0.5 + 1/16 (NVFP4: E2M1 and one E4M3 scale per 16), 2 (bf16).
inline double quantized_bytes(const JobSpec& j) {
  return j.precision == "nvfp4" ? 0.5 + 1.0 / 16.0 : is_fp8(j) ? 1.0 : 2.0;
}

enum class Recompute { none, selective, full };

// ---- derived quantities (see the header comment) ----

inline bool is_swiglu(const ModelSpec& m) { return m.activation == "swiglu"; }
inline bool has_biases(const ModelSpec& m) { return !is_swiglu(m); }
inline bool has_dropout(const ModelSpec& m) {
  return m.dropout == "yes" || (m.dropout == "auto" && !is_swiglu(m));
}
inline bool learned_positions(const ModelSpec& m) {
  return m.position_embedding == "learned" || (m.position_embedding == "auto" && !is_swiglu(m));
}
inline bool rotary_positions(const ModelSpec& m) {
  return m.position_embedding == "rope" || (m.position_embedding == "auto" && is_swiglu(m));
}
// LayerNorm has weight and bias per channel, RMSNorm only a weight.
inline int64_t norm_params(const ModelSpec& m) { return is_swiglu(m) ? m.hidden : 2 * m.hidden; }
inline bool is_moe(const ModelSpec& m) { return m.moe.experts > 0; }
// Leading dense layers of an MoE model (0 for a dense model, whose layers are all alike).
inline int64_t dense_layers(const ModelSpec& m) { return is_moe(m) ? m.moe.dense_layers : 0; }
// The model one of an MoE model's leading dense layers belongs to: the same attention, a dense
// MLP of ffn_hidden.
inline ModelSpec dense_layer_model(ModelSpec m) {
  m.moe = MoeSpec{};
  return m;
}
inline JobSpec dense_layer_job(JobSpec j) {
  j.model = dense_layer_model(j.model);
  return j;
}
// The job a full-attention layer of a sliding-window model belongs to (ModelSpec::sliding_window).
inline JobSpec full_attention_job(JobSpec j) {
  j.model.sliding_window = 0;
  return j;
}

inline int expert_tp(const ParallelSpec& p) {
  return p.expert_tensor_parallel > 0 ? p.expert_tensor_parallel : p.tensor_parallel;
}
// Ranks sharing one expert shard, over those sharing a dense shard: the expert data-parallel
// group is TP x CP x DP / (EP x ETP) where the dense one is DP x CP, so t / (ETP x EP).
inline double expert_shard_ratio(const ParallelSpec& p) {
  return static_cast<double>(p.tensor_parallel) / expert_tp(p) / p.expert_parallel;
}

inline int64_t kv_heads(const ModelSpec& m) { return m.kv_heads > 0 ? m.kv_heads : m.heads; }
inline int64_t head_dim(const ModelSpec& m) {
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}
// Width of the query (and of the attention output the projection reads): heads x head_dim,
// the hidden size unless model.head_dim says otherwise.
inline int64_t q_dim(const ModelSpec& m) { return static_cast<int64_t>(m.heads) * head_dim(m); }
inline int64_t kv_dim(const ModelSpec& m) { return kv_heads(m) * head_dim(m); }

// Multi-head latent attention (MlaSpec) and the widths its layers see.
inline bool is_mla(const ModelSpec& m) { return m.mla.kv_lora_rank > 0; }
inline int64_t mla_qk_head_dim(const ModelSpec& m) { return m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim; }
// Width of the attention output the projection reads: heads x v_head_dim with MLA, else q_dim.
inline int64_t attention_out_dim(const ModelSpec& m) {
  return is_mla(m) ? int64_t{m.heads} * m.mla.v_head_dim : q_dim(m);
}
// K and V elements per token (all heads): 2 kv_dim, or heads x (qk + v head widths) with MLA.
inline int64_t kv_elements(const ModelSpec& m) {
  return is_mla(m) ? int64_t{m.heads} * (mla_qk_head_dim(m) + m.mla.v_head_dim) : 2 * kv_dim(m);
}
// One head's width as the attention kernel's FLOPs see it: QK^T over the qk width and AV over
// the v width, 2 (qk + v) per query-key pair, i.e. head_dim where both are head_dim.
inline int64_t attention_head_width(const ModelSpec& m) {
  return is_mla(m) ? (mla_qk_head_dim(m) + m.mla.v_head_dim) / 2 : head_dim(m);
}
// MLA's weight matrices per layer: Q (down + up, or direct), KV down and up.
inline int64_t mla_qkv_weights(const ModelSpec& m) {
  const MlaSpec& a = m.mla;
  const int64_t h = m.hidden, H = m.heads, qk = mla_qk_head_dim(m);
  const int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * H * qk : h * H * qk;
  return q + h * (a.kv_lora_rank + a.qk_rope_head_dim) +
         a.kv_lora_rank * H * (a.qk_nope_head_dim + a.v_head_dim);
}

inline int64_t ffn_hidden(const ModelSpec& m) {
  if (m.ffn_hidden > 0) return m.ffn_hidden;
  if (!is_swiglu(m)) return 4 * m.hidden;
  const int64_t raw = 8 * m.hidden / 3;  // int(2 * 4h / 3) as in Llama's FeedForward
  return (raw + 255) / 256 * 256;
}
inline int64_t expert_ffn_hidden(const ModelSpec& m) {
  return m.moe.expert_ffn_hidden > 0 ? m.moe.expert_ffn_hidden : ffn_hidden(m);
}
// Matrices per MLP (fc1/fc2 or gate/up/down).
inline int64_t mlp_matrices(const ModelSpec& m) { return is_swiglu(m) ? 3 : 2; }

// Throws std::invalid_argument for names other than none|selective|full.
Recompute parse_recompute(const std::string& granularity);

}  // namespace ct::workload
