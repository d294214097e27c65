#include "models/workload/memory.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/workload/layout.h"
#include "models/workload/parameters.h"
#include "models/workload/schedule.h"
#include "models/workload/sharding.h"

namespace ct::workload {
namespace {

double d(int64_t v) { return static_cast<double>(v); }
int64_t to_bytes(double v) { return static_cast<int64_t>(std::llround(v)); }

// Outside PyTorch's allocator (sources):
//  CUDA context: about 300 MB since CUDA 11.7 loads kernels lazily, over 1 GB before
//    (pytorch/pytorch#107667, NVIDIA's ptrblck); cuBLAS/cuDNN handles and the NCCL proxy add
//    more: 512 MiB.
//  NCCL: each communicator that carries traffic keeps per-channel FIFOs (4 MiB Simple +
//    LL128 + LL buffers per connection, NCCL_BUFFSIZE), linear in the channel count and flat
//    beyond two nodes (NVIDIA/nccl#986, sjeaugey; #864 measures about 1.6 GB for the first
//    communicator including the context): 512 MiB per communicator of more than one rank.
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kCudaContextBytes = 512 * kMiB;
constexpr int64_t kNcclBytesPerCommunicator = 512 * kMiB;

// Caching-allocator fragmentation, reserved / allocated - 1: two measured training peaks in
// pytorch/pytorch#40989 (allocated 15,006 / reserved 16,726 MB and 17,402 / 19,354 MB:
// 0.115 and 0.112). Nothing in tests/validation was used to set it.
constexpr double kFragmentation = 0.11;

struct ActivationTerms {
  double replicated = 0.0;  // bytes per token, divided by t only with SP
  double split = 0.0;       // bytes per token, divided by t
  double gathered = 0.0;    // bytes per token, never divided by t
  double permuted = 0.0;    // bytes per token, times the experts' share of the tokens
  double scores = 0.0;      // bytes per (token x key), divided by t (unfused attention)
  double lse = 0.0;         // bytes per token, divided by t (flash attention)
};

// Bytes per element of a linear layer's saved input: its quantized copy where the stack saves
// one (Transformer Engine under FP8 / NVFP4), else bf16 (torchao's float8 keeps bf16 inputs).
double saved_input_bytes(const JobSpec& job, const StackMemory& st) {
  return is_fp8(job) && st.fp8_saves_fp8_inputs ? quantized_bytes(job) : 2.0;
}

// Bytes an MLP keeps per unit of its width and token: its input GEMM's output (2 or, SwiGLU, 4)
// and the activation's output, which the output GEMM keeps (2, or its quantized copy qb: FP8 1,
// NVFP4 0.5625). qb: bytes per element of a saved GEMM input (2 = bf16, not quantized).
double mlp_bytes_per_width(const ModelSpec& m, double qb) { return (is_swiglu(m) ? 4.0 : 2.0) + qb; }

// fp8 (Transformer Engine): each linear layer saves its FP8-cast input for the weight
// gradient instead of the bf16 one: the QKV and MLP-in inputs 1 byte instead of 2, the MLP-out
// input f bytes instead of 2f, and the projection's FP8 copy beside the attention output that
// flash attention keeps in bf16 (+h). NVFP4 the same with its column-wise copy for the wgrad
// GEMM (0.5625 bytes per element: TE saves the quantized input, module/linear.py). qb: bytes
// per element of those saved copies, 2 when the layers run in bf16.
ActivationTerms activation_terms(const ModelSpec& m, const StackMemory& st, bool flash, double qb) {
  const bool quantized = qb < 2.0;
  const double h = d(m.hidden);
  const double q = d(q_dim(m));  // the query and the attention output: h unless model.head_dim
  const double kv = d(kv_dim(m));
  const double mlp_per_width = mlp_bytes_per_width(m, qb);
  ActivationTerms a;
  a.replicated = 2.0 * st.residual_bytes * h + 2.0 * qb * h + (has_dropout(m) ? 2.0 * h : 0.0);
  a.split = 2.0 * q + 4.0 * kv + 2.0 * q + (quantized ? qb * q : 0.0);
  if (is_mla(m)) {
    // Q and K of heads x (nope + rope), V and the attention output of heads x v_head_dim; the
    // two normed latents each saved by its RMSNorm and by its up-projection (FP8 there), not
    // split by TP (the down-projections are duplicated).
    const double H = d(m.heads), qk = d(mla_qk_head_dim(m)), v = d(m.mla.v_head_dim);
    a.split = 4.0 * H * qk + 4.0 * H * v + (quantized ? qb * H * v : 0.0);
    a.gathered = (2.0 + qb) * d(m.mla.q_lora_rank + m.mla.kv_lora_rank);
  }
  if (!is_moe(m)) {
    a.split += mlp_per_width * d(ffn_hidden(m));
  } else {
    const double fe = d(expert_ffn_hidden(m));
    const double routed = m.moe.capacity_factor * d(m.moe.top_k);
    a.split += mlp_per_width * fe * (d(m.moe.shared_experts) + routed);
    // The routed copies of the tokens, the experts' first GEMM's input: what that grouped GEMM
    // saves for its weight gradient, bf16 or (Transformer Engine's GroupedLinear under FP8 /
    // NVFP4) its quantized copy, as every linear layer's input above; nothing else keeps the
    // bf16 tokens the dispatcher delivered (the all-to-all's and the fused permutation's
    // backward need only the routing).
    a.permuted = qb * h * routed;
  }
  if (flash) {
    a.lse = 4.0 * d(m.heads);
  } else {
    a.scores = (has_dropout(m) ? 5.0 : 2.0) * d(m.heads);
  }
  return a;
}

// torchtitan's op-level selective checkpointing (parallelisms/parallelize_llama.py, Dec 2024:
// _save_list = mm, SDPA, reduce-scatter; every other mm recomputed): per token it keeps the
// layer input and the mid-layer residual (r h each), the attention output 2h with its log-sum-
// exp, and half of the matmul outputs (Q, K, V, projection, MLP in and out).
double op_level_selective(const ModelSpec& m, const StackMemory& st, const ActivationTerms& a) {
  const double h = d(m.hidden);
  // Q's width, and half of K + V's (MLA: heads x (nope + rope), heads x (qk + v) / 2)
  const double q = d(is_mla(m) ? int64_t{m.heads} * mla_qk_head_dim(m) : q_dim(m));
  const double kv = d(kv_elements(m)) / 2.0;
  const double mlp_out =
      is_moe(m) ? (a.split - 8.0 * q - 4.0 * kv) * 2.0 / 3.0 : (is_swiglu(m) ? 4.0 : 2.0) * d(ffn_hidden(m));
  const double matmul_outputs = 2.0 * q + 4.0 * kv + 2.0 * h + mlp_out + 2.0 * h;
  return 2.0 * st.residual_bytes * h + 2.0 * h + a.lse + 0.5 * matmul_outputs;
}

// Bytes per token that Megatron's selective recompute of `modules` does not keep, by where
// activation_terms() counts them (the core attention's scores are handled by the caller):
// layernorm the two norm outputs the QKV and MLP-in linears save (bf16, or their FP8 copies);
// moe_act the routed experts' activation output (fc2's input); mla_up_proj the up-projected Q, K
// and V; mlp a dense MLP's internals (its input, the norm output, stays); shared_experts the
// shared expert's; moe the whole expert block: routed and shared experts and the permuted tokens.
ActivationTerms replayed_terms(const ModelSpec& m, double qb, uint32_t modules) {
  namespace rm = recompute_module;
  const double h = d(m.hidden);
  const double mlp_per_width = mlp_bytes_per_width(m, qb);
  ActivationTerms cut;
  if (modules & rm::layernorm) cut.replicated = 2.0 * qb * h;
  if ((modules & rm::mla_up_proj) && is_mla(m))
    cut.split += 4.0 * d(m.heads) * d(mla_qk_head_dim(m)) + 2.0 * d(m.heads) * d(m.mla.v_head_dim);
  if (!is_moe(m)) {
    if (modules & rm::mlp) cut.split += mlp_per_width * d(ffn_hidden(m));
    return cut;
  }
  const double fe = d(expert_ffn_hidden(m)), routed = m.moe.capacity_factor * d(m.moe.top_k);
  if (modules & rm::moe) {
    cut.split += mlp_per_width * fe * (d(m.moe.shared_experts) + routed);
    cut.permuted = qb * h * routed;
    return cut;
  }
  if (modules & rm::moe_act) cut.split += qb * fe * routed;
  if (modules & rm::shared_experts) cut.split += mlp_per_width * fe * d(m.moe.shared_experts);
  return cut;
}

}  // namespace

const std::vector<std::string>& stack_names() {
  // In the order of enum Stack.
  static const std::vector<std::string> names{"megatron-core", "nemo",    "deepspeed", "deepspeed-2021",
                                              "torchtitan",    "pytorch", "composer"};
  return names;
}

Stack parse_stack(const std::string& name) {
  const auto& names = stack_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Stack>(i);
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("training_job.runtime.stack: got \"" + name + "\", expected one of " + known);
}

StackMemory stack_memory(Stack stack) {
  StackMemory s;
  s.fragmentation = kFragmentation;
  switch (stack) {
    case Stack::megatron_core:
      break;  // 2 + 4 + 12, persistent fp32 grad buffer, fused CE 6 B/logit (memory.h)
    case Stack::nemo:
      s.grad_bytes = 2;
      s.reduce_bytes = 2;
      break;
    case Stack::deepspeed:
    case Stack::deepspeed_2021:
      s.grad_bytes = 2;
      s.reduce_bytes = 2;
      s.dp_bucket_elements = 1'000'000'000;  // reduce + all-gather buckets, 5e8 each
      break;
    case Stack::torchtitan:
      s.weight_bytes = 4;
      s.grad_bytes = 4;
      s.optimizer_bytes = 8;
      s.loss_bytes_per_logit = 12;
      s.op_level_selective = true;
      s.unsharded_with_pp = true;
      s.fp8_weight_cache_bytes = 0;  // torchao float8: casts per use, FSDP gathers FP8 shards
      s.fp8_saves_fp8_inputs = false;
      s.fp8_grad_gathers = false;
      break;
    case Stack::composer:
      // MosaicML Composer / LLM Foundry: FSDP (FULL_SHARD) with bf16 mixed precision over fp32
      // sharded parameters, Adam states and gradients (4 + 4 + 8, as FSDP2); activation
      // checkpointing per block (Megatron's full recompute); the MPT yamls' loss_fn
      // fused_crossentropy (flash-attn's Triton cross entropy) keeps the bf16 logits and writes
      // their gradient in place: 2 + 2 bytes per logit, no fp32 softmax copy.
      s.weight_bytes = 4;
      s.grad_bytes = 4;
      s.optimizer_bytes = 8;
      s.loss_bytes_per_logit = 4;
      s.fp8_weight_cache_bytes = 0;  // Transformer Engine layers under FSDP: FP8 copies per gathered unit
      break;
    case Stack::pytorch:
      s.weight_bytes = 4;
      s.grad_bytes = 4;
      s.optimizer_bytes = 8;
      s.persistent_grads = false;
      s.autocast_weight_copy = 2;
      s.residual_bytes = 4;
      s.loss_bytes_per_logit = 14;
      s.dp_bucket_copy = 4;
      s.fp8_weight_cache_bytes = 0;  // torchao float8
      s.fp8_saves_fp8_inputs = false;
      s.fp8_grad_gathers = false;
      break;
  }
  return s;
}

StackMemory stack_memory(const JobSpec& job) {
  StackMemory s = stack_memory(parse_stack(job.stack));
  // A compiled cross entropy (inductor fuses pred.float(), log_softmax and the NLL, and its
  // backward into one kernel) saves only the bf16 logits and a per-row log-sum-exp, and writes
  // the logits' bf16 gradient: 2 + 2 bytes per logit at the peak.
  if (job.compiled_loss) s.loss_bytes_per_logit = 4;
  // Transformer Engine's fused cross entropy (JobSpec::te_cross_entropy): the bf16 logits
  // hold their own gradient (TE 2.2-2.17), or beside an fp32 gradient (TE 2.18).
  if (job.te_cross_entropy == JobSpec::TeCrossEntropy::in_place) s.loss_bytes_per_logit = 2;
  if (job.te_cross_entropy == JobSpec::TeCrossEntropy::fp32_grad) s.loss_bytes_per_logit = 6;
  // The cached copies (the weight and its transpose; NVFP4's row- and column-wise copies, 2-D
  // 16 x 16 scaled, TE keeping both layouts for the fprop and dgrad GEMMs) are quantized_bytes
  // each: 2 x 1 in FP8, 2 x 0.5625 in NVFP4.
  if (is_fp8(job)) s.fp8_weight_cache_bytes *= quantized_bytes(job);
  // FP8 primary weights: each linear weight is held as an FP8 tensor (1 byte) with its cached
  // FP8 transpose (1 byte) where the bf16 copy (2 bytes) was, and there is no separate FP8 cache;
  // NVFP4 primary weights (Megatron-Bridge's fp4_param_gather) as their two 0.5625-byte copies,
  // 0.875 bytes per linear weight less than the bf16 copy counted in the weights.
  if (job.fp8_params) s.fp8_weight_cache_bytes = 2.0 * quantized_bytes(job) - 2.0;
  // fp32 master weights kept as 16-bit remainders of the bf16 weights (store_param_remainders).
  if (job.master_remainders) s.optimizer_bytes -= 2.0;
  if (bf16_optimizer(job)) s.grad_bytes = 4;  // its fp32 gradients (memory.h)
  if (job.grad_reduce_bytes > 0) {            // Megatron's grad_reduce_in_fp32 (megatron-core / nemo)
    s.grad_bytes = job.grad_reduce_bytes;
    s.reduce_bytes = job.grad_reduce_bytes;
  }
  return s;
}

double grad_accumulation_bytes_per_param(const JobSpec& job) {
  if (bf16_optimizer(job)) return kBf16OptimizerBytesPerParam;
  const Stack stack = parse_stack(job.stack);
  const bool unfused_megatron =
      (stack == Stack::megatron_core || stack == Stack::nemo) && !job.gradient_accumulation_fusion;
  const bool deepspeed_fp16 =
      (stack == Stack::deepspeed || stack == Stack::deepspeed_2021) && job.parallelism.zero_stage <= 1;
  // read the 16-bit gradient, read and write the kept one (DeepSpeed's 16-bit .grad: 6)
  if (unfused_megatron || deepspeed_fp16) return 2.0 + 2.0 * stack_memory(job).grad_bytes;
  const StackMemory st = stack_memory(job);
  const bool fsdp2_kept =
      job.parallelism.zero_stage >= 3 && job.parallelism.pipeline_parallel > 1 && st.unsharded_with_pp;
  return fsdp2_kept ? 2.0 + 2.0 * st.reduce_bytes : 0.0;  // into the reduce-dtype accumulator
}

bool bf16_optimizer(const JobSpec& job) {
  return parse_stack(job.stack) == Stack::deepspeed && job.precision == "bf16" &&
         job.parallelism.pipeline_parallel > 1 && job.parallelism.zero_stage <= 1;
}

namespace {

int64_t activation_bytes(const JobSpec& job, Recompute recompute, const StackMemory& st) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallelism;
  const double t = d(p.tensor_parallel);
  const double tokens = d(job.micro_batch_size) * d(m.seq_length) / d(p.context_parallel);
  const bool sp = p.sequence_parallel && p.tensor_parallel > 1;
  const bool flash = job.attention != "unfused";
  const ActivationTerms a = activation_terms(m, st, flash, saved_input_bytes(job, st));
  // The experts' share of the layer's tokens (layer_ops.cpp's moe_tokens): Megatron's
  // dispatcher routes each TP rank's sequence shard over the expert group, and expert tensor
  // parallelism all-gathers etp of those shards (token_dispatcher.py: the TP all-gather after
  // the all-to-all runs over the expert-TP group), so a GPU's experts see tokens x etp / t.
  const double moe_share = sp ? d(expert_tp(p)) / t : 1.0;
  if (recompute == Recompute::full) {
    return to_bytes(st.residual_bytes * tokens * d(m.hidden) / (sp ? t : 1.0));
  }
  if (recompute == Recompute::selective && st.op_level_selective) {
    // Tensor-parallel shards: the residuals follow SP, the rest is split by t.
    const double residual = 2.0 * st.residual_bytes * d(m.hidden);
    const double rest = op_level_selective(m, st, a) - residual;
    return to_bytes(tokens * (residual / (sp ? t : 1.0) + rest / t + a.gathered + a.permuted * moe_share));
  }
  // Bytes per token on this GPU of the terms kept per token (the scores aside).
  auto per_token = [&](const ActivationTerms& x) {
    return x.replicated / (sp ? t : 1.0) + (x.split + x.lse) / t + x.gathered + x.permuted * moe_share;
  };
  double bytes = tokens * per_token(a);
  const uint32_t modules = recompute == Recompute::selective ? selective_modules(job) : 0;
  if (!(modules & recompute_module::core_attn)) bytes += tokens * d(m.seq_length) * a.scores / t;
  bytes -= tokens * per_token(replayed_terms(m, saved_input_bytes(job, st), modules));
  return to_bytes(bytes);
}

// activation_bytes per layer averaged over the stage's layers: its MoE layers and the model's
// leading dense layers it holds.
int64_t stage_activation_bytes(const JobSpec& job, Recompute recompute, const StackMemory& st, int stage) {
  const int64_t moe = activation_bytes(job, recompute, st);
  const int64_t n = layers_in_stage(job, stage), k = dense_layers_in_stage(job, stage);
  if (k <= 0 || n <= 0) return moe;
  const int64_t dense = activation_bytes(dense_layer_job(job), recompute, st);
  return to_bytes((d(n - k) * d(moe) + d(k) * d(dense)) / d(n));
}

int communicators(const ParallelSpec& p) {
  int n = 0;
  for (int size : {p.tensor_parallel, p.pipeline_parallel, p.data_parallel * p.context_parallel,
                   p.context_parallel, p.expert_parallel}) {
    if (size > 1) ++n;
  }
  return n;
}

}  // namespace

int64_t activation_bytes_per_layer(const JobSpec& job, Recompute recompute) {
  return activation_bytes(job, recompute, stack_memory(job));
}

double in_flight_microbatches(const JobSpec& job, int stage) {
  const int64_t p = job.parallelism.pipeline_parallel;
  const int64_t v = job.parallelism.virtual_pipeline;
  const int64_t m = microbatches(job);
  if (v <= 1) return d(std::min<int64_t>(p - stage, m));
  const int64_t n = microbatch_group(static_cast<int>(p), job.parallelism.microbatch_group);
  const int64_t chunks = std::min<int64_t>(2 * (p - stage - 1) + (v - 1) * n + 1, m * v);
  return d(chunks) / d(v);
}

StageParameters stage_parameters(const JobSpec& job, int stage) {
  const ModelSpec& m = job.model;
  const ParallelSpec& par = job.parallelism;
  const int64_t t = par.tensor_parallel;
  const ParameterCount c = count_parameters(m);
  const LayerParameters& L = c.layer;
  StageParameters s;
  const int64_t layers = layers_in_stage(job, stage), dense = dense_layers_in_stage(job, stage);
  s.dense = (layers - dense) * L.non_expert_per_gpu(par);
  s.expert = (layers - dense) * L.experts_per_gpu(par);
  if (dense > 0) s.dense += dense * layer_parameters(dense_layer_model(m)).non_expert_per_gpu(par);
  const int64_t vocab_shard = (m.vocab + t - 1) / t * m.hidden;
  if (stage == 0) s.dense += vocab_shard + (learned_positions(m) ? m.seq_length * m.hidden : 0);
  if (stage == par.pipeline_parallel - 1) {
    s.dense += c.final_norm;
    const bool shares_embedding = m.tied_embeddings && par.pipeline_parallel == 1;
    if (!shares_embedding) s.dense += vocab_shard;
  }
  return s;
}

ModelStateBytes model_state_bytes(const JobSpec& job, const StageParameters& params) {
  const ParallelSpec& par = job.parallelism;
  const StackMemory st = stack_memory(job);
  const double shard_dense = d(zero_shard_degree(par));
  // Expert state is sharded over the expert data-parallel group: TP x CP x DP / (EP x ETP)
  // ranks hold the same experts (DP x CP / EP without folding, ETP = TP).
  const double shard_expert = shard_dense * expert_shard_ratio(par);
  auto state = [&](double bytes_per_param, bool sharded) {
    const double dense = d(params.dense) * bytes_per_param;
    const double expert = d(params.expert) * bytes_per_param;
    return sharded ? to_bytes(dense / shard_dense + expert / shard_expert) : to_bytes(dense + expert);
  };
  ModelStateBytes s;
  s.weights = state(st.weight_bytes, par.zero_stage >= 3);
  s.gradients = state(st.grad_bytes, par.zero_stage >= 2);
  s.optimizer = state(st.optimizer_bytes, par.zero_stage >= 1);
  return s;
}

namespace {

// fp8: Transformer Engine caches each linear weight's FP8 copy and its transpose for the
// step (cast on the first micro-batch): 2 bytes per matmul parameter of the stage's layers
// (NVFP4 1.125; negative with NVFP4 primary weights, which replace the bf16 copy: stack_memory).
int64_t fp8_weight_cache(const JobSpec& job, const StackMemory& st, int stage) {
  if (!is_fp8(job)) return 0;
  const ParallelSpec& par = job.parallelism;
  // With ZeRO-3 / FSDP the FP8 copies are sharded like the weights (Megatron FSDP's
  // fp8_param_gather gathers FP8 shards per unit): the gathered unit is in `temporary`.
  const double shard = par.zero_stage >= 3 ? d(zero_shard_degree(par)) : 1.0;
  return to_bytes(st.fp8_weight_cache_bytes * matmul_parameters_in_stage(job, stage) / shard);
}

// Buffers live only part of the step: TP all-gather outputs, ZeRO-3 / FSDP gathered
// parameters and reduce buffers, and the DP gradient buckets.
int64_t temporary_bytes(const JobSpec& job, const StackMemory& st, int stage, int64_t parameters) {
  const ModelSpec& m = job.model;
  const ParallelSpec& par = job.parallelism;
  const int64_t t = par.tensor_parallel;
  const double tokens = d(job.micro_batch_size) * d(m.seq_length) / d(par.context_parallel);
  const bool last = stage == par.pipeline_parallel - 1;
  int64_t temporary = 0;
  if (t > 1) temporary += to_bytes(2.0 * 2.0 * tokens * d(m.hidden));
  if (par.zero_stage >= 3 && st.unsharded_with_pp && par.pipeline_parallel > 1) {
    // torchtitan keeps a pipelined stage's parameters gathered (reshard_after_forward = not
    // pp_enabled, parallelize_llama.py) and the pipeline schedule accumulates unsharded
    // gradients in the reduce dtype until the last micro-batch.
    temporary += to_bytes(d(parameters) * (2.0 + st.reduce_bytes));
  } else if (par.zero_stage >= 3) {
    const LayerParameters L = layer_parameters(m);
    double unit = d(L.non_expert_per_gpu(par) + L.experts_per_gpu(par));
    if (dense_layers_in_stage(job, stage) > 0) {  // the larger unit, where leading layers are dense
      unit = std::max(unit, d(layer_parameters(dense_layer_model(m)).non_expert_per_gpu(par)));
    }
    // The stack's fetch plan (sharding.h): the running module and the prefetched ones gathered
    // in bf16; in backward the largest module's 16-bit gradient and its reduce buffer (the
    // reduce bucket, or the module's reduce-scatter input).
    const Zero3Plan plan = zero3_plan(job);
    std::vector<double> modules;
    for (const ModuleFetch& mf : plan.modules) {
      double share = 0.0;
      for (const double g : mf.gather_fractions) share += g;
      modules.push_back(share * unit);
    }
    // The running module and the `prefetch` after it, wrapping into the next layer (FSDP2:
    // one module per layer, so two layers).
    const size_t n = modules.size(), window = static_cast<size_t>(plan.prefetch) + 1;
    double gathered = 0.0, largest = 0.0;
    for (size_t i = 0; i < n; ++i) {
      double w = 0.0;
      for (size_t k = 0; k < window; ++k) w += modules[(i + k) % n];
      gathered = std::max(gathered, w);
      largest = std::max(largest, modules[i]);
    }
    // A per-parameter reduce-scatter works on the gradient itself (DeepSpeed 2021,
    // contiguous_gradients off); a bucket or FSDP2's reduce dtype needs a buffer.
    const double reduce_buffer = plan.reduce_bucket_params > 0 ? plan.reduce_bucket_params * 2.0
                                 : plan.reduce_per_gather      ? 0.0
                                                               : largest * plan.reduce_bytes;
    temporary += to_bytes(2.0 * gathered + 2.0 * largest + reduce_buffer);
    // The output layer is gathered while the loss runs.
    if (last) temporary += to_bytes(2.0 * d((m.vocab + t - 1) / t * m.hidden));
  }
  const int64_t dp = int64_t{par.data_parallel} * par.context_parallel;
  if (dp > 1 && par.zero_stage <= 2) {
    temporary += to_bytes(st.dp_bucket_copy * d(parameters));
    temporary += 2 * st.dp_bucket_elements;
  }
  return temporary;
}

}  // namespace

MemoryBreakdown memory_per_gpu(const JobSpec& job, int stage, const MemoryOptions& o) {
  const ModelSpec& m = job.model;
  const ParallelSpec& par = job.parallelism;
  const StackMemory st = stack_memory(job);
  const Recompute rc = parse_recompute(job.recompute_granularity);
  const int64_t t = par.tensor_parallel;
  const bool sp = par.sequence_parallel && t > 1;
  const double tokens = d(job.micro_batch_size) * d(m.seq_length) / d(par.context_parallel);
  const bool last = stage == par.pipeline_parallel - 1;

  MemoryBreakdown b;
  b.stage = stage;
  const StageParameters sp_params = stage_parameters(job, stage);
  b.parameters = sp_params.dense + sp_params.expert;

  const ModelStateBytes states = model_state_bytes(job, sp_params);
  const int64_t layers = layers_in_stage(job, stage);
  // Autocast's bf16 weight copies live one forward, saved by each linear for its backward;
  // under ZeRO-3 / FSDP only the gathered unit has them (counted with the unit in
  // `temporary`). A block under full recompute (torch.utils.checkpoint) saves only its input:
  // its copies die with the forward and are cast again when the backward recomputes it, so
  // at the peak only one such block's copies are live.
  double autocast_parameters = d(b.parameters);
  if (rc == Recompute::full && layers > 0) {
    const double recomputed = d(recomputed_layers_in_stage(job, stage));
    autocast_parameters -=
        std::max(0.0, recomputed - 1.0) * matmul_parameters_in_stage(job, stage) / d(layers);
  }
  const int64_t autocast = par.zero_stage >= 3 ? 0 : to_bytes(autocast_parameters * st.autocast_weight_copy);
  const int64_t fp8_weights = fp8_weight_cache(job, st, stage);
  b.weights = states.weights + autocast + fp8_weights;
  const int64_t grads = states.gradients;
  b.optimizer = states.optimizer;

  b.in_flight_microbatches = in_flight_microbatches(job, stage);
  // Offloaded layers (PP 1, no recompute) leave GPU memory but for one layer in transit: the
  // one whose copy to the host is still running, or being prefetched back for backward.
  const int64_t offloaded = std::clamp<int64_t>(job.offload_activation_layers, 0, layers);
  const double resident_layers = offloaded > 0 ? d(layers - offloaded + 1) : d(layers);
  const double layer_microbatches = b.in_flight_microbatches * resident_layers;
  // Per layer, averaged over the stage's MoE and leading dense layers.
  const int64_t full_layer = stage_activation_bytes(job, Recompute::none, st, stage);
  int64_t per_layer = stage_activation_bytes(job, rc, st, stage);
  if (rc == Recompute::full && layers > 0) {
    // Block recompute: the stage's first recompute_layers layers per chunk keep their input,
    // the others everything.
    const int64_t recomputed = recomputed_layers_in_stage(job, stage);
    per_layer = to_bytes((d(recomputed) * d(per_layer) + d(layers - recomputed) * d(full_layer)) / d(layers));
  }
  const int64_t working = rc == Recompute::none ? 0 : std::max<int64_t>(0, full_layer - per_layer);
  b.activations = to_bytes(layer_microbatches * d(per_layer)) + working;

  if (stage == 0) {
    const double micro_in_flight = std::ceil(b.in_flight_microbatches);
    const double mask = has_dropout(m) ? tokens * d(m.hidden) / (sp ? d(t) : 1.0) : 0.0;
    b.embedding_buffers = to_bytes(micro_in_flight * (8.0 * tokens + mask));
  }
  if (last) {
    // The loss runs on the last micro-batch in flight: logits over the vocabulary shard, and
    // the final norm's input.
    const double logits = tokens * d(m.vocab) / d(t);
    b.logits_buffers = to_bytes(st.loss_bytes_per_logit * logits +
                                st.residual_bytes * tokens * d(m.hidden) / (sp ? d(t) : 1.0));
  }

  b.temporary = temporary_bytes(job, st, stage, b.parameters);

  // Peak of live tensors: at the forward/backward boundary (all in-flight activations and the
  // loss; gradients only where the stack keeps a persistent buffer), or at the end of the
  // backward (every gradient, no activations) for stacks that free gradients between steps.
  const int64_t held = b.weights + b.optimizer;
  const int64_t boundary = held + (st.persistent_grads ? grads : 0) + b.activations + b.embedding_buffers +
                           b.logits_buffers + b.temporary;
  const int64_t after_backward = held - autocast + grads + b.temporary;
  b.gradients = grads;
  b.peak_phase = boundary >= after_backward ? "forward-backward" : "optimizer";
  b.allocated = std::max(boundary, after_backward);

  // Fragmentation applies to what is allocated and freed during the step (activations, loss,
  // gathers, buckets); weights, persistent gradient buffers and optimizer state are allocated
  // once, in large blocks (Megatron's contiguous param/grad buffers, FSDP2's sharded
  // parameters), and do not fragment.
  const int64_t persistent = states.weights + fp8_weights + b.optimizer + (st.persistent_grads ? grads : 0);
  const double frag = o.fragmentation >= 0 ? o.fragmentation : st.fragmentation;
  b.reserved = persistent + to_bytes(d(b.allocated - persistent) * (1.0 + frag));
  b.cuda_context = o.cuda_context_bytes >= 0 ? o.cuda_context_bytes : kCudaContextBytes;
  b.nccl = o.nccl_bytes >= 0 ? o.nccl_bytes : kNcclBytesPerCommunicator * communicators(par);
  b.capacity = o.capacity_bytes;
  // The fragmentation above is what the caching allocator keeps cached with room to spare. When
  // a cudaMalloc fails, PyTorch's allocator frees every cached block it is not using and tries
  // again (CUDACachingAllocator: release_cached_blocks, counted as num_alloc_retries), so a step
  // whose live tensors fit runs, its reserved memory held at what the GPU has left. That works
  // when the transient tensors are freed whole: when a layer keeps every activation it makes (no
  // recompute, or a selective one that discards nothing the flash kernel keeps) each lives until
  // its backward, and a kept gradient buffer takes the gradients. Recompute that discards
  // activations (only some kept, the rest freed) and gradients allocated during the backward
  // interleave short- and long-lived tensors, whose fragmentation no release undoes and which
  // runs out of memory with enough free memory (ZeRO, Rajbhandari et al. 2020, Sec. 6.3
  // "memory defragmentation"; SC'21 Sec. 5.2: the 530B ZeRO-3 model with full recompute did not
  // fit at micro-batch 4 on 560 GPUs with live tensors about 91% of the A100's 80 GB).
  const int64_t room = b.capacity - b.cuda_context - b.nccl;
  const bool releasable = per_layer == full_layer && st.persistent_grads;  // nothing discarded
  b.allocator_at_capacity = releasable && b.reserved > room && b.allocated <= room;
  if (b.allocator_at_capacity) b.reserved = room;
  b.total = b.reserved + b.cuda_context + b.nccl;
  b.margin = b.capacity - b.total;
  b.fits = b.total <= b.capacity;
  return b;
}

double matmul_parameters_in_stage(const JobSpec& job, int stage) {
  const ParallelSpec& par = job.parallelism;
  const int64_t t = par.tensor_parallel;
  const LayerParameters L = layer_parameters(job.model);
  const double per_layer = d((L.attention + L.dense_mlp) / t) + d(L.experts_per_gpu(par));
  const int64_t dense = dense_layers_in_stage(job, stage);
  double dense_layer = 0.0;
  if (dense > 0) {
    const LayerParameters D = layer_parameters(dense_layer_model(job.model));
    dense_layer = d((D.attention + D.dense_mlp) / t);
  }
  return per_layer * d(layers_in_stage(job, stage) - dense) + dense_layer * d(dense);
}

std::vector<MemoryBreakdown> memory_per_stage(const JobSpec& job, const MemoryOptions& options) {
  std::vector<MemoryBreakdown> out;
  out.reserve(static_cast<size_t>(job.parallelism.pipeline_parallel));
  for (int s = 0; s < job.parallelism.pipeline_parallel; ++s) out.push_back(memory_per_gpu(job, s, options));
  return out;
}

MemoryBreakdown peak_memory_per_gpu(const JobSpec& job, const MemoryOptions& options) {
  MemoryBreakdown best = memory_per_gpu(job, 0, options);
  for (int s = 1; s < job.parallelism.pipeline_parallel; ++s) {
    MemoryBreakdown b = memory_per_gpu(job, s, options);
    if (b.total > best.total) best = b;
  }
  return best;
}

}  // namespace ct::workload
