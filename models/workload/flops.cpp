#include "models/workload/flops.h"

#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"

namespace ct::workload {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

// Keys per token summed over the layers, full square (each token against the whole sequence
// s); a sliding-window layer counts twice its causal band, 2 (w s - w (w - 1) / 2) / s, so that
// halving for causality leaves its band (ModelSpec::sliding_window).
double layer_keys(const ModelSpec& m) {
  const double s = d(m.seq_length), w = d(m.sliding_window);
  double keys = 0.0;
  for (int64_t l = 0; l < m.layers; ++l) {
    keys += windowed_layer(m, l) && w < s ? 2.0 * (w * s - w * (w - 1.0) / 2.0) / s : s;
  }
  return keys;
}

// Forward attention-core FLOPs per token, all layers: QK^T and AV, full square (MLA: the qk and
// v head widths, attention_head_width).
double attention_core_forward(const ModelSpec& m) {
  return 4.0 * d(m.heads) * d(attention_head_width(m)) * layer_keys(m);
}

}  // namespace

double model_flops_per_token(const ModelSpec& m, bool halve_causal_attention) {
  const ParameterCount c = count_parameters(m);
  const double attention = 3.0 * attention_core_forward(m);  // 12 l (a d) s without windows
  return 6.0 * d(c.matmul_active) + (halve_causal_attention ? 0.5 : 1.0) * attention;
}

double recompute_flops_per_token(const ModelSpec& m, Recompute r) {
  const double attention = attention_core_forward(m);
  switch (r) {
    case Recompute::none:
      return 0.0;
    case Recompute::selective:
      return attention;
    case Recompute::full: {
      const ParameterCount c = count_parameters(m);
      const double layer_matmul = d(c.matmul_active - m.vocab * m.hidden);
      return 2.0 * layer_matmul + attention;
    }
  }
  return 0.0;
}

double hardware_flops_per_token(const ModelSpec& m, Recompute r) {
  return model_flops_per_token(m) + recompute_flops_per_token(m, r);
}

double model_flops_per_iteration(const JobSpec& job) {
  return model_flops_per_token(job.model) * d(job.global_batch_size) * d(job.model.seq_length);
}

double hardware_flops_per_iteration(const JobSpec& job) {
  const Recompute r = parse_recompute(job.recompute_granularity);
  const double share = r == Recompute::full ? recomputed_layer_fraction(job) : 1.0;
  double recompute = share * recompute_flops_per_token(job.model, r);
  if (r == Recompute::selective && (stack_memory(job).op_level_selective || job.recompute_modules != 0)) {
    // torchtitan's op-level policy, or Megatron's recompute modules: the ops its recompute list
    // holds (layer_ops.cpp), per token of the whole layer (the ops are one TP rank's share of
    // b s / cp tokens).
    const double tokens =
        d(job.micro_batch_size) * d(job.model.seq_length) / d(job.parallelism.context_parallel);
    const int64_t k = dense_layers(job.model);
    double layer_flops = 0.0;
    if (job.model.sliding_window > 0) {  // windowed and full-attention layers, dense and MoE
      int64_t windowed_dense = 0, windowed_moe = 0;
      for (int64_t l = 0; l < job.model.layers; ++l) {
        if (windowed_layer(job.model, l)) ++(l < k ? windowed_dense : windowed_moe);
      }
      const auto per_layer = [](const JobSpec& j) { return transformer_layer_ops(j).recompute_flops(); };
      const JobSpec dense = dense_layer_job(job);
      layer_flops = per_layer(job) * d(windowed_moe) +
                    per_layer(full_attention_job(job)) * d(job.model.layers - k - windowed_moe);
      if (k > 0) {
        layer_flops += per_layer(dense) * d(windowed_dense) +
                       per_layer(full_attention_job(dense)) * d(k - windowed_dense);
      }
    } else {
      layer_flops = transformer_layer_ops(job).recompute_flops() * d(job.model.layers - k);
      if (k > 0) layer_flops += transformer_layer_ops(dense_layer_job(job)).recompute_flops() * d(k);
    }
    recompute = layer_flops * d(job.parallelism.tensor_parallel) / tokens;
  }
  return (model_flops_per_token(job.model) + recompute) * d(job.global_batch_size) * d(job.model.seq_length);
}

double megatron_flops_per_iteration(int64_t batch, int64_t seq, int64_t layers, int64_t hidden, int64_t vocab,
                                    bool full_recompute) {
  const double B = d(batch), s = d(seq), l = d(layers), h = d(hidden), V = d(vocab);
  const double factor = full_recompute ? 96.0 : 72.0;
  return factor * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

double megatron_parameters(int64_t layers, int64_t hidden, int64_t vocab, int64_t seq) {
  const double l = d(layers), h = d(hidden), V = d(vocab), s = d(seq);
  return 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (V + s) / (12.0 * l * h));
}

}  // namespace ct::workload
