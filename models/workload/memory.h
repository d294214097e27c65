// Memory of one GPU (bytes), for a rank of a given pipeline stage.
//
// Model state (mixed precision with Adam; ZeRO, Rajbhandari et al. SC'20; Megatron-LM
// docs/distrib_optimizer.md: "bf16 param, fp32 grads: 18 bytes/param, distributed 6 + 12/d"):
//   weights 2 bytes/param (bf16), gradients 4 bytes/param (Megatron's default for bf16: fp32
//   main_grad buffers, accumulate_allreduce_grads_in_fp32), optimizer 12 bytes/param (fp32
//   master copy + Adam m + v). ZeRO shards over the data-parallel group d = DP x CP (Megatron's
//   data_parallel_group_with_cp; d / EP for expert parameters): stage 1 the optimizer,
//   stage 2 + gradients, stage 3 + weights.
// Parameters on a rank: its L/p layers with the matrices (and biases) split by t, norms and
//   the router replicated, routed experts split by EP x t; the first stage adds the vocab-
//   parallel embedding V h / t and learned positions s h; the last stage adds the final norm and
//   the output layer V h / t (also when tied and p > 1: Megatron keeps a copy there).
//
// Activations per layer per micro-batch (Korthikanti et al. MLSys'23, Sec. 4), with
// sequence s' = s / CP:
//   no TP:        s b h (34 + 5 a s / h)
//   TP + SP:      s b h (34 + 5 a s / h) / t
//   TP, no SP:    s b h (10 + 24/t + 5 a s / (h t))
//   selective recompute drops the 5 a s / h term; full recompute keeps only the layer input
//   2 s b h (/ t with SP).
// Generalised to GQA, SwiGLU and MoE by the same bookkeeping (bytes per token, bf16):
//   replicated over TP unless SP:  2h (norm 1 in) + 2h (QKV in) + 2h (norm 2 in) + 2h (MLP in)
//                                  + 2 x h dropout masks (gelu family)            = 10 h
//   split by TP:                   2h (Q) + 4 kv (K, V) + 2h (proj in)
//                                  + MLP 4f (gelu in, fc2 in) | 6f (gate+up out, fc2 in)   = 24 h
//   attention scores:              5 a s (softmax out, dropout mask, dropout out; 2 a s
//                                  without dropout, swiglu family), split by TP
//   MoE: the dense MLP term becomes S shared experts plus capacity_factor x k routed copies,
//        whose permuted inputs 2 k h are all-gathered over TP (never divided by t).
// With GPT (MHA, f = 4h, gelu) these are exactly Korthikanti's 10 + 24 and 5 a s / h.
// The scores use the local queries against all keys: 5 a b (s/CP) s.
//
// In-flight micro-batches on stage i of p, m micro-batches (Megatron schedules.py warm-up):
//   1F1B:         min(p - i, m) micro-batches of the stage's L/p layers (first stage: p)
//   interleaved:  min(2 (p - i - 1) + (v - 1) p + 1, m v) chunks of L/(p v) layers; on the
//                 first stage (p v + p - 1) chunks = p (1 + (p - 1)/(p v)) micro-batches of
//                 L/p layers (Megatron theoretical_memory_usage.py's interleaving penalty).
// With recompute, the layer being recomputed has its full activations live for a moment:
//   full adds one layer's no-recompute activations, selective one layer's score term.
// First stage: token ids 8 s' b and the embedding dropout mask s' b h (/ t with SP) per
//   in-flight micro-batch. Last stage: the output layer, 4 s' b h (1 + V/h) / t
//   (Megatron theoretical_memory_usage.py: fp32 logits), one micro-batch.
// Temporary allowance: two gradient buckets (Megatron DDP bucket: max(40e6, 1e6 d) params x
//   gradient bytes), the SP all-gather workspace 2 x 2 s' b h when t > 1, and under ZeRO-3 the
//   gathered bf16 weights of two layers (prefetch). `reserved_bytes` (CUDA context, NCCL,
//   allocator fragmentation) is the caller's.
#pragma once

#include <cstdint>

#include "models/workload/model_spec.h"

namespace ct::workload {

struct MemoryOptions {
  int64_t capacity_bytes = 0;  // HBM of one GPU
  int64_t weight_bytes_per_param = 2;
  int64_t grad_bytes_per_param = 4;
  int64_t optimizer_bytes_per_param = 12;
  int64_t bucket_params = 0;  // 0 = Megatron's max(40e6, 1e6 x DP x CP)
  int64_t reserved_bytes = 0;
};

struct MemoryBreakdown {
  int stage = 0;
  int64_t parameters = 0;  // parameters held by this rank before ZeRO sharding
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;        // transformer layers, all in-flight micro-batches
  int64_t embedding_buffers = 0;  // first stage
  int64_t logits_buffers = 0;     // last stage
  int64_t temporary = 0;
  int64_t reserved = 0;
  int64_t total = 0;
  int64_t capacity = 0;
  bool fits = false;                    // total <= capacity
  double in_flight_microbatches = 0.0;  // micro-batches' worth of this stage's L/p layers
};

// Korthikanti activation bytes of one layer for one micro-batch on one TP rank.
int64_t activation_bytes_per_layer(const JobSpec& job, Recompute recompute);
// Layer-micro-batches of activations held at the peak by stage `stage` (see above).
double in_flight_microbatches(const JobSpec& job, int stage);
// Parameters held by one rank of `stage` (dense, and routed-expert parameters).
struct StageParameters {
  int64_t dense = 0;
  int64_t expert = 0;
};
StageParameters stage_parameters(const JobSpec& job, int stage);

MemoryBreakdown memory_per_gpu(const JobSpec& job, int stage, const MemoryOptions& options);
// The stage with the largest total (the first or the last, usually).
MemoryBreakdown peak_memory_per_gpu(const JobSpec& job, const MemoryOptions& options);

}  // namespace ct::workload
