// Parameter counts of a decoder-only transformer (conventions in model_spec.h).
//
// Per layer, with h = hidden, d = h / heads, kv = kv_heads x d, f = ffn_hidden, E = experts,
// k = top_k, S = shared_experts, f_e = expert_ffn_hidden, beta = 1 with biases (gelu family)
// and 0 without (swiglu family), n = norm parameters per norm (2h LayerNorm, h RMSNorm):
//   attention  = h (h + 2 kv)  + h h           + beta (h + 2 kv + h)      (QKV + output proj)
//   mlp(f)     = 2 h f  [gelu] or 3 h f [swiglu]   + beta (f + h) [gelu]
//   norms      = 2 n
//   dense      : attention + norms + mlp(f)
//   MoE        : attention + norms + router h E + S mlp(f_e) + E mlp(f_e)
// Model:
//   N = l x layer + V h (token embedding) + s h (learned positions, gelu family)
//       + V h (output layer, untied only) + n (final norm)
//   N_active (per token) replaces E mlp(f_e) by k mlp(f_e) (Mixtral 8x7B: 46.7B / 12.9B).
// Checks: GPT with MHA, f = 4h, tied: l (12 h^2 + 13 h) + (V + s) h + 2h
//   = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) + 2h   (Narayanan et al. SC'21 Sec. 5.1;
//   GPT-3 175B: 174.6e9). Llama-2-70B (GQA 8, f 28672, untied): 68.98e9.
// Matmul parameters (for FLOPs): the weight matrices a token is multiplied by, i.e. N_active
// without embedding lookups, norms and biases, plus the logits projection V h whether tied
// or not (the tied embedding matrix is used twice, once as a lookup and once as a GEMM).
#pragma once

#include <cstdint>

#include "models/workload/model_spec.h"

namespace ct::workload {

struct LayerParameters {
  int64_t attention = 0;  // QKV + output projection (+ biases)
  int64_t norms = 0;      // the two pre-norms
  int64_t dense_mlp = 0;  // dense MLP, or the shared experts of an MoE layer
  int64_t router = 0;     // h x experts (MoE only)
  int64_t expert = 0;     // one routed expert (MoE only)
  int64_t experts = 0;    // number of routed experts
  int64_t top_k = 0;
  int64_t total() const { return attention + norms + dense_mlp + router + experts * expert; }
  int64_t active() const { return attention + norms + dense_mlp + router + top_k * expert; }
  // The routed experts one GPU holds: experts / EP of them, each split ETP ways.
  int64_t experts_per_gpu(const ParallelSpec& p) const {
    return experts * expert / (int64_t{p.expert_parallel} * expert_tp(p));
  }
  // What one GPU holds of the rest: attention and dense MLP split by TP, norms and router whole.
  int64_t non_expert_per_gpu(const ParallelSpec& p) const {
    return (attention + dense_mlp) / p.tensor_parallel + norms + router;
  }
};

struct ParameterCount {
  LayerParameters layer;     // one transformer layer (an MoE layer where leading ones are dense)
  int64_t embedding = 0;     // token embedding V h + learned positions s h (gelu family)
  int64_t output_layer = 0;  // V h when untied, 0 when tied
  int64_t final_norm = 0;
  int64_t total = 0;          // N
  int64_t active = 0;         // N_active per token (== total for dense models)
  int64_t non_embedding = 0;  // total - embedding - output_layer
  int64_t matmul_active = 0;  // weight-matrix parameters a token multiplies by (for 6N)
};

// Parameters of one MLP of width `width` (bias included for the gelu family).
int64_t mlp_parameters(const ModelSpec& model, int64_t width);
LayerParameters layer_parameters(const ModelSpec& model);
ParameterCount count_parameters(const ModelSpec& model);
inline int64_t total_parameters(const ModelSpec& m) { return count_parameters(m).total; }
inline int64_t active_parameters(const ModelSpec& m) { return count_parameters(m).active; }

}  // namespace ct::workload
