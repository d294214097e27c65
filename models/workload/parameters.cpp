#include "models/workload/parameters.h"

namespace ct::workload {

int64_t mlp_parameters(const ModelSpec& m, int64_t width) {
  const int64_t weights = mlp_matrices(m) * m.hidden * width;
  const int64_t biases = has_biases(m) ? width + m.hidden : 0;
  return weights + biases;
}

LayerParameters layer_parameters(const ModelSpec& m) {
  const int64_t h = m.hidden;
  const int64_t q = q_dim(m);
  const int64_t kv = kv_dim(m);
  LayerParameters p;
  p.attention = h * (q + 2 * kv) + q * h + (has_biases(m) ? q + 2 * kv + h : 0);
  if (is_mla(m)) {  // the latent projections, their two RMSNorms, the output projection
    p.attention = mla_qkv_weights(m) + m.mla.q_lora_rank + m.mla.kv_lora_rank + attention_out_dim(m) * h;
  }
  p.norms = 2 * norm_params(m);
  if (is_moe(m)) {
    p.router = h * m.moe.experts;
    p.dense_mlp = m.moe.shared_experts * mlp_parameters(m, expert_ffn_hidden(m));
    p.expert = mlp_parameters(m, expert_ffn_hidden(m));
    p.experts = m.moe.experts;
    p.top_k = m.moe.top_k;
  } else {
    p.dense_mlp = mlp_parameters(m, ffn_hidden(m));
  }
  return p;
}

ParameterCount count_parameters(const ModelSpec& m) {
  ParameterCount c;
  c.layer = layer_parameters(m);
  const int64_t h = m.hidden;
  c.embedding = m.vocab * h + (learned_positions(m) ? m.seq_length * h : 0);
  c.output_layer = m.tied_embeddings ? 0 : m.vocab * h;
  c.final_norm = norm_params(m);
  // An MoE model's leading dense layers (model.moe.dense_layers) have a dense MLP instead.
  const int64_t k = dense_layers(m);
  const LayerParameters dense = k > 0 ? layer_parameters(dense_layer_model(m)) : LayerParameters{};
  c.total =
      (m.layers - k) * c.layer.total() + k * dense.total() + c.embedding + c.output_layer + c.final_norm;
  c.active =
      (m.layers - k) * c.layer.active() + k * dense.active() + c.embedding + c.output_layer + c.final_norm;
  c.non_embedding = c.total - c.embedding - c.output_layer;

  // Weight matrices only: attention projections, active MLP matrices, router, logits.
  const int64_t q = q_dim(m);
  const int64_t kv = kv_dim(m);
  const int64_t attn = is_mla(m) ? mla_qkv_weights(m) + attention_out_dim(m) * h : h * (q + 2 * kv) + q * h;
  int64_t mlp = mlp_matrices(m) * h * ffn_hidden(m);
  int64_t router = 0;
  if (is_moe(m)) {
    mlp = (m.moe.top_k + m.moe.shared_experts) * mlp_matrices(m) * h * expert_ffn_hidden(m);
    router = h * m.moe.experts;
  }
  const int64_t dense_mlp = mlp_matrices(m) * h * ffn_hidden(m);
  c.matmul_active = (m.layers - k) * (attn + mlp + router) + k * (attn + dense_mlp) + m.vocab * h;
  return c;
}

}  // namespace ct::workload
