// Closed-form FLOP counts of one training iteration (a multiply-add is 2 FLOPs).
//
// Model FLOPs (for MFU; PaLM, Chowdhery et al. 2022, Appendix B):
//   per token  F_model = 6 N_mm + 12 l (a d) s
// where N_mm are the matmul parameters a token multiplies by (parameters.h: active weight
// matrices incl. router and the logits projection; no embedding lookups, norms or biases),
// a d = heads x head_dim = hidden, and s the sequence length. The attention term counts the
// full s x s score and context products (QK^T and AV, 2 x 2 s (a d) FLOPs per token per layer
// forward, x3 for forward + backward), i.e. no causal halving, as PaLM and Megatron do;
// `halve_causal_attention` gives the variant that counts only the lower triangle.
// Per iteration: F_model x global_batch_size x s.
//
// Hardware FLOPs (for HFU) add the recomputed forward work, per token:
//   selective: the attention core again      4 l (a d) s
//   full:      every layer's forward again    2 N_mm,layers + 4 l (a d) s
// (the logits layer is never recomputed).
//
// Megatron-LM (Narayanan et al. SC'21, Eq. 3), GPT with MHA and f = 4h, full recompute:
//   F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
// and the no-recompute variant used in DESIGN.md: the factor 72 with the same bracket.
// 96 = 4 x 24: a layer's forward GEMMs are 24 B s h^2, done 4 times (forward, recompute,
// 2 x backward); the logits GEMM 2 B s h V is done 3 times (6 B s h V = 96 B s l h^2 V/(16lh)).
// With the 72 factor the logits term becomes 4.5 B s h V instead of the exact 6 B s h V; the
// difference is 1.5 V / (72 l h + 12 l s) of the total (0.09% for GPT-3 175B).
#pragma once

#include <cstdint>

#include "models/workload/model_spec.h"

namespace ct::workload {

double model_flops_per_token(const ModelSpec& model, bool halve_causal_attention = false);
// Extra forward FLOPs per token spent recomputing activations.
double recompute_flops_per_token(const ModelSpec& model, Recompute recompute);
double hardware_flops_per_token(const ModelSpec& model, Recompute recompute);

// Per iteration (global_batch_size x seq_length tokens).
double model_flops_per_iteration(const JobSpec& job);     // MFU numerator x step time
double hardware_flops_per_iteration(const JobSpec& job);  // HFU numerator x step time

double megatron_flops_per_iteration(int64_t batch, int64_t seq, int64_t layers, int64_t hidden, int64_t vocab,
                                    bool full_recompute);
// Megatron SC'21 Sec. 5.1: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)).
double megatron_parameters(int64_t layers, int64_t hidden, int64_t vocab, int64_t seq);

}  // namespace ct::workload
