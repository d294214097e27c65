// Memory of one GPU (bytes), for a rank of a given pipeline stage, as the training stack
// really lays it out. Every convention below names its source; `docs/memory.md` has the
// validation tables.
//
// 1. Model state per parameter, by stack (training_job.runtime.stack):
//    megatron-core  bf16 weights 2 + fp32 main grads 4 + fp32 master and Adam m, v 12 = 18
//                   (Megatron-LM docs/source/api-guide/dist_optimizer.md: "bf16 param, fp32
//                   grads: 18 bytes/param, distributed 6 + 12/d"). The gradient buffer is one
//                   contiguous, persistent buffer and the DDP buckets are views into it
//                   (megatron/core/distributed/param_and_grad_buffer.py): buckets cost nothing.
//    deepspeed      fp16/bf16 weights 2 + fp16/bf16 grads 2 + K = 12 (ZeRO paper, Rajbhandari
//                   et al. SC'20 Sec. 3: (2 + 2 + K) Psi). Stages 1-2 hold an IPG reduce bucket
//                   and an all-gather bucket of 5e8 elements each (DeepSpeed config docs,
//                   reduce_bucket_size / allgather_bucket_size defaults), in 16-bit.
//                   Under its pipeline engine in bf16 with ZeRO 0-1 it runs BF16_Optimizer
//                   (bf16_optimizer below): fp32 gradients, 4.
//    deepspeed-2021 as deepspeed (without BF16_Optimizer, which came in 2022); differs in how
//                   ZeRO-3 communicates (sharding.h).
//    nemo           megatron-core as NVIDIA's performance recipes run it: gradient buffers and
//                   their data-parallel reduction in bf16, 2 bytes (NeMo scripts/performance:
//                   grad_reduce_in_fp32 = False with FP8; Megatron-Bridge perf configs:
//                   cfg.ddp.grad_reduce_in_fp32 = False).
//    torchtitan     FSDP2 with MixedPrecisionPolicy(bf16 params, fp32 reduce): sharded fp32
//                   params 4 + fp32 grads 4 + AdamW m, v 8 = 16 (torchtitan
//                   parallelisms/parallelize_llama.py, torch.distributed.fsdp.fully_shard).
//    pytorch        eager PyTorch, torch.autocast(bf16) over fp32 parameters, AdamW, DDP when
//                   DP > 1: fp32 params 4 + fp32 grads 4 + Adam m, v 8; autocast keeps the bf16
//                   cast of every matmul weight from forward until its backward (2 B/param,
//                   torch.autocast weight cache); gradients are freed by zero_grad
//                   (set_to_none=True, the default since PyTorch 2.0) so they do not exist at the
//                   forward/backward boundary; DDP's buckets hold a copy of every gradient
//                   (DistributedDataParallel docs, gradient_as_bucket_view=False by default).
//    ZeRO shards over the data-parallel group d = DP x CP (Megatron's
//    data_parallel_group_with_cp; d / EP for expert parameters), or over shard_size of them
//    (HSDP): stage 1 the optimizer, stage 2 + gradients, stage 3 (FSDP full shard) + weights.
//    Parameters on a rank: its L/p layers with the matrices (and biases) split by t, norms and
//    the router replicated, routed experts split by EP x t; the first stage adds the vocab-
//    parallel embedding V h / t and learned positions s h; the last stage adds the final norm
//    and the output layer V h / t (also when tied and p > 1: Megatron keeps a copy there).
//
// 2. Activations per layer per micro-batch (Korthikanti et al. MLSys'23, Sec. 4), sequence
//    s' = s / CP, bytes per token:
//      replicated over TP unless SP:  2 norm inputs at r bytes (r = 2 in bf16 stacks, 4 for
//                                     the fp32 residual stream of autocast) + the bf16 inputs
//                                     of QKV and MLP 2h + 2h; + 2 h dropout masks (gelu family)
//                                     Megatron bf16: 10 h (Korthikanti's 10)
//      split by TP:                   2h (Q) + 4 kv (K, V) + 2h (proj in)
//                                     + MLP 4f (gelu in, fc2 in) | 6f (gate+up out, fc2 in)
//      attention, unfused:            5 a s (softmax out, dropout mask, dropout out; 2 a s
//                                     without dropout), split by TP
//      attention, flash:              no s x s term: the kernel keeps only its fp32 log-sum-exp,
//                                     4 a bytes per token, split by TP (Dao et al. 2022 Sec. 3.1;
//                                     dropout masks are regenerated from the RNG state)
//      MoE: the dense MLP term becomes S shared experts plus capacity_factor x k routed copies,
//           whose permuted inputs 2 k h are all-gathered over TP (never divided by t).
//    With GPT (MHA, f = 4h, gelu, unfused) these are exactly Korthikanti's 34 + 5 a s / h.
//    Recompute: selective (Megatron) drops the s x s term; selective on torchtitan is its op-
//    level policy (saves the layer input and mid-layer residual, the attention output, and
//    every other matmul output); full keeps the layer input, r h bytes per token (/ t with SP).
//    The layer being recomputed has its no-recompute activations live once.
//
// 3. In-flight micro-batches on stage i of p, m micro-batches (Megatron schedules.py warm-up):
//      1F1B:         min(p - i, m) micro-batches of the stage's L/p layers (first stage: p)
//      interleaved:  min(2 (p - i - 1) + (v - 1) n + 1, m v) chunks of L/(p v) layers,
//                    n the micro-batch group (p unless training_job.parallelism.
//                    microbatch_group; schedule.h) (Megatron theoretical_memory_usage.py's
//                    interleaving penalty, get_pp_rank_microbatches' warm-up).
//
// 4. Embedding and loss. First stage: token ids 8 s' b and the embedding dropout mask per
//    in-flight micro-batch. Last stage: the logits and the loss around them, per logit
//    (token x V / t), at the peak:
//      megatron-core, deepspeed: the bf16 logits 2 while the fused vocab-parallel cross
//        entropy casts them to fp32 4, which it keeps (exponentiated in place) for backward
//        (megatron/core/tensor_parallel/cross_entropy.py): 6
//      torchtitan: cross_entropy(pred.float()): forward bf16 2 + fp32 copy 4 + log_softmax 4;
//        `del pred` before backward, then log_softmax 4 + nll grad 4 + its softmax grad 4: 12
//        (torchtitan train.py, Dec 2024)
//      pytorch: F.cross_entropy under autocast (fp32), the bf16 logits kept by the caller:
//        2 + log_softmax 4 + nll grad 4 + softmax grad 4: 14
//      a compiled loss (torchtitan since April 2025 when compiling, or training_job.runtime.
//        compile_loss): one fused kernel each way, bf16 logits 2 + their bf16 gradient 2: 4
//
// 5. Temporary buffers: the SP all-gather workspace 2 x 2 s' b h when t > 1; ZeRO-3 / FSDP:
//    the gathered bf16 weights of the running and the prefetched unit (one layer each,
//    FSDP2 prefetch of one unit; DeepSpeed's submodules as it fetches them, sharding.h), and
//    in backward the largest module's unsharded 16-bit gradient and its reduce buffer (the
//    reduce bucket, or the reduce-scatter copy in the reduce precision) (torchtitan with PP instead
//    keeps the whole stage gathered in bf16 and its gradients unsharded in fp32 across the
//    micro-batches); the stack's buckets (1.).
//
// 6. Outside the tensors: the caching allocator's fragmentation (reserved / allocated - 1),
//    the CUDA context and NCCL's buffers, which PyTorch's allocator does not see but the GPU's
//    capacity must hold. Defaults and their sources are in memory.cpp (kStack...).
//    Fragmentation applies to the tensors allocated and freed during the step, not to the
//    persistent weights, gradient buffers and optimizer state:
//    reserved = persistent + (allocated - persistent) x (1 + fragmentation);
//    fits = reserved + context + NCCL <= capacity.
//    When that reserved memory is more than the GPU has left but the live tensors are not, the
//    allocator frees its unused cache and retries each cudaMalloc that fails (PyTorch's
//    release_cached_blocks; torch.cuda.memory_stats num_alloc_retries): a step without
//    recompute on a stack with a kept gradient buffer fits, its reserved memory at capacity -
//    context - NCCL (allocator_at_capacity); it pays the retries' cudaFree / cudaMalloc
//    synchronisations, which the step time does not model. With recompute, or gradients
//    allocated in the backward, short- and long-lived tensors interleave and the fragmentation
//    stays (ZeRO, Sec. 6.3): such a step fits only on its reserved memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/workload/model_spec.h"

namespace ct::workload {

enum class Stack { megatron_core, nemo, deepspeed, deepspeed_2021, torchtitan, pytorch, composer };
// Throws std::invalid_argument naming training_job.runtime.stack for unknown names.
Stack parse_stack(const std::string& name);
const std::vector<std::string>& stack_names();

// What a stack does with memory (the table in memory.cpp, sourced there).
struct StackMemory {
  double weight_bytes = 2;          // per parameter held as the working weights
  double grad_bytes = 4;            // per parameter of the gradient buffer
  double optimizer_bytes = 12;      // master copy (if separate) + Adam moments
  double reduce_bytes = 4;          // per parameter of a ZeRO-3 reduce-scatter input
  bool persistent_grads = true;     // gradients exist at the forward/backward boundary
  double autocast_weight_copy = 0;  // bf16 casts of fp32 weights kept forward -> backward
  double residual_bytes = 2;        // residual stream / norm inputs
  double loss_bytes_per_logit = 6;
  double dp_bucket_copy = 0;        // bytes per parameter of DDP bucket copies when DP > 1
  int64_t dp_bucket_elements = 0;   // fixed reduce + gather buckets (deepspeed), 16-bit
  bool op_level_selective = false;  // selective recompute = torchtitan's op-level policy
  bool unsharded_with_pp = false;   // ZeRO-3 + PP: stage kept gathered, grads unsharded
  // precision fp8: bytes per matmul parameter of cached FP8 weights (Transformer Engine keeps
  // the FP8 weight and its transpose for the step), and whether linear layers save their
  // FP8-cast input instead of the bf16 one (TE yes; torchao's float8 keeps bf16 inputs).
  double fp8_weight_cache_bytes = 2;
  bool fp8_saves_fp8_inputs = true;
  // precision fp8 with sequence parallelism: the tensor-parallel all-gathers move FP8 data (1
  // byte per element) instead of bf16. Transformer Engine casts before every gather: the
  // forward input of QKV / MLP-in, its backward re-gather, and the row-parallel layers' output
  // gradient (module/layernorm_linear.py, base.py grad_output_preprocess, v1.9; MXFP8 with its
  // 1-in-32 scales, distributed.py _all_gather_mxfp8, v2.5). torchao's Float8ColwiseParallel
  // casts the forward input before its gather; the gradients stay bf16. Reduce-scatters are
  // bf16 everywhere.
  bool fp8_grad_gathers = true;
  double fragmentation = 0.0;  // reserved / allocated - 1 of the caching allocator
};
StackMemory stack_memory(Stack stack);
// The job's stack (training_job.runtime.stack).
StackMemory stack_memory(const JobSpec& job);

// Whether the job runs DeepSpeed's BF16_Optimizer: stack deepspeed (v0.6 and later), bf16,
// pipeline parallel (DeepSpeed's PipelineEngine), ZeRO 0 or 1 (the twin's zero_stage 1: the
// optimizer state sharded, which BF16_Optimizer does itself). BLOOM's Megatron-DeepSpeed ran it
// with ZERO_STAGE=0 ("the new BF16_Optimizer implements its own ZeRO Stage 1", bigscience
// train/tr11-176B-ml/README.md); DeepSpeed's engine picks it for bf16 without ZeRO under the
// pipeline engine, and for bf16 with ZeRO-1 only when gradients accumulate in fp32
// (engine.py _do_optimizer_sanity_check; that case, and BF16_Optimizer without pipeline
// parallelism, are not told apart here: the twin keeps DeepSpeed's ZeRO optimizer for
// them, 16-bit gradients as the ZeRO paper counts them). It keeps an fp32
// gradient per parameter the rank holds (fp32_groups_gradients), reduced in fp32 over the
// data-parallel group (pipe/engine.py _bf16_reduce_grads): grad_bytes 4. After every
// micro-batch's backward it adds the bf16 gradients into them, hp.add_(lp.grad.to(fp32))
// (bf16_optimizer.py update_hp_grads, called from pipe/engine.py _exec_backward_pass; DeepSpeed
// 735406e, June 2022, PR #1801): read 2 + write 4 (the cast), read 4 + 4, write 4 = 18 bytes per
// parameter (block_costs.cpp). deepspeed-2021 (v0.3-v0.5) predates it.
bool bf16_optimizer(const JobSpec& job);
inline constexpr double kBf16OptimizerBytesPerParam = 18.0;

// HBM bytes per parameter of a model chunk moved after each micro-batch's backward to add its
// gradients into the ones kept across micro-batches (block_costs.cpp charges them at the
// memory-bound rate), by stack:
//   BF16_Optimizer (above): 18.
//   megatron-core / nemo without gradient accumulation fusion (JobSpec): the backward writes
//     each 16-bit weight gradient, then adds it into the gradient buffer of g bytes (LocalDDP's
//     hook param.main_grad.add_(param.grad), megatron/model/distributed.py at aed2f75, April
//     2021; with 16-bit buffers and no contiguous buffer, autograd's own .grad accumulation):
//     read 2 + read g + write g = 2 + 2 g (10 with fp32 buffers, 6 with 16-bit ones).
//   deepspeed / deepspeed-2021 with ZeRO 0-1 (not BF16_Optimizer): autograd accumulates into
//     the 16-bit .grad between gradient-accumulation boundaries (the engine reduces only at
//     the boundary): 6.
//   FSDP2 with pipeline parallelism (torchtitan: unsharded_with_pp): the stage stays gathered and its
//     gradients are reduce-scattered after the last micro-batch; until then each micro-batch's
//     bf16 unsharded gradient is added into an accumulator of the reduce dtype
//     (FSDPParam.to_accumulated_grad_if_needed / accumulate_unsharded_grad_if_needed, torch
//     2.5-2.7 _fsdp_param.py): read 2 + read r + write r = 2 + 2 r (10 with fp32 reduction).
//   Others 0 (fused accumulation, FSDP's per-micro-batch reduce-scatter, ZeRO-2/3 partitions).
// Charged on every micro-batch: the first one of a step writes rather than adds (at most
// 1/m of this cost too much, m micro-batches per replica).
double grad_accumulation_bytes_per_param(const JobSpec& job);

struct MemoryOptions {
  int64_t capacity_bytes = 0;  // HBM of one GPU
  // Negative = the stack's default (see StackMemory / memory.cpp).
  double fragmentation = -1;
  int64_t cuda_context_bytes = -1;
  int64_t nccl_bytes = -1;
};

struct MemoryBreakdown {
  int stage = 0;
  int64_t parameters = 0;  // parameters held by this rank before ZeRO sharding
  int64_t weights = 0;     // incl. autocast weight copies
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;        // transformer layers, all in-flight micro-batches
  int64_t embedding_buffers = 0;  // first stage
  int64_t logits_buffers = 0;     // last stage: logits and the loss around them
  int64_t temporary = 0;          // SP workspace, ZeRO-3 gathered units, buckets
  int64_t allocated = 0;          // peak of live tensors (torch.cuda.max_memory_allocated)
  int64_t reserved = 0;           // + fragmentation of the transient part (max_memory_reserved)
  int64_t cuda_context = 0;
  int64_t nccl = 0;
  int64_t total = 0;  // reserved + context + NCCL: what the GPU must hold
  int64_t capacity = 0;
  int64_t margin = 0;                   // capacity - total (negative: short by that much)
  bool fits = false;                    // total <= capacity
  bool allocator_at_capacity = false;   // fits only by releasing the allocator's cache (see 6.)
  double in_flight_microbatches = 0.0;  // micro-batches' worth of this stage's L/p layers
  std::string peak_phase;               // "forward-backward" or "optimizer"
};

// Activation bytes of one layer for one micro-batch on one TP rank.
int64_t activation_bytes_per_layer(const JobSpec& job, Recompute recompute);
// Layer-micro-batches of activations held at the peak by stage `stage` (see above).
double in_flight_microbatches(const JobSpec& job, int stage);
// Parameters held by one rank of `stage` (dense, and routed-expert parameters).
struct StageParameters {
  int64_t dense = 0;
  int64_t expert = 0;
};
StageParameters stage_parameters(const JobSpec& job, int stage);

// Parameters of the transformer layers' linear (matmul) weights one GPU of `stage` holds (TP-
// and EP-split, not ZeRO-sharded): what FP8 weight copies and FP8 parameter gathers cover.
double matmul_parameters_in_stage(const JobSpec& job, int stage);

// Weights, gradients and optimizer state of `params` on one rank, by the job's stack and ZeRO
// stage (section 1 above; without autocast copies).
struct ModelStateBytes {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
};
ModelStateBytes model_state_bytes(const JobSpec& job, const StageParameters& params);

MemoryBreakdown memory_per_gpu(const JobSpec& job, int stage, const MemoryOptions& options);
// Every pipeline stage, in order.
std::vector<MemoryBreakdown> memory_per_stage(const JobSpec& job, const MemoryOptions& options);
// The stage with the largest total (the first or the last, usually).
MemoryBreakdown peak_memory_per_gpu(const JobSpec& job, const MemoryOptions& options);

}  // namespace ct::workload
