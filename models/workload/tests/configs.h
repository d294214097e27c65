// Published model configurations used by the workload tests.
#pragma once

#include "models/workload/model_spec.h"

namespace ct::workload::testing {

// GPT-3 175B (Brown et al. 2020): 96 layers, h 12288, 96 heads, s 2048, V 51200 (Megatron).
inline ModelSpec gpt3_175b() {
  ModelSpec m;
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.seq_length = 2048;
  m.vocab = 51200;
  return m;
}

// Llama-2-70B (Touvron et al. 2023): GQA with 8 kv heads, SwiGLU f 28672, untied.
inline ModelSpec llama2_70b() {
  ModelSpec m;
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.ffn_hidden = 28672;
  m.activation = "swiglu";
  m.seq_length = 4096;
  m.vocab = 32000;
  m.tied_embeddings = false;
  return m;
}

// Mixtral 8x7B (Jiang et al. 2024): 8 experts, top-2, expert width 14336.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m;
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.activation = "swiglu";
  m.seq_length = 4096;
  m.vocab = 32000;
  m.tied_embeddings = false;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  return m;
}

// Qwen3-32B (Qwen/Qwen3-32B config.json): 64 heads of 128 over hidden 5120, untied.
inline ModelSpec qwen3_32b() {
  ModelSpec m = llama2_70b();
  m.layers = 64;
  m.hidden = 5120;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 25600;
  m.vocab = 151936;
  return m;
}

// Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B config.json): 128 experts of width 768, 8 per token.
inline ModelSpec qwen3_30b_a3b() {
  ModelSpec m = qwen3_32b();
  m.layers = 48;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 4;
  m.moe.experts = 128;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 768;
  return m;
}

// GLM-4.5 (zai-org/GLM-4.5 config.json): 92 layers, the first 3 dense (first_k_dense_replace,
// intermediate_size 12288), then 160 routed experts of 1536, 8 per token, and one shared expert;
// 96 query heads of 128 over hidden 5120, 8 KV heads. The config's MTP layer
// (num_nextn_predict_layers) is not a training layer of the twin.
inline ModelSpec glm45() {
  ModelSpec m = qwen3_32b();
  m.layers = 92;
  m.hidden = 5120;
  m.heads = 96;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 12288;
  m.vocab = 151552;
  m.moe.experts = 160;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 1536;
  m.moe.shared_experts = 1;
  m.moe.dense_layers = 3;
  return m;
}

// GLM-4.5-Air (zai-org/GLM-4.5-Air config.json): 46 layers, the first dense (10944), 128
// experts of 1408, 8 per token, one shared; 96 heads of 128 over hidden 4096, 8 KV heads.
inline ModelSpec glm45_air() {
  ModelSpec m = glm45();
  m.layers = 46;
  m.hidden = 4096;
  m.ffn_hidden = 10944;
  m.moe.experts = 128;
  m.moe.expert_ffn_hidden = 1408;
  m.moe.dense_layers = 1;
  return m;
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json): 61 layers, the first 3 dense (18432), then
// 256 routed experts of 2048, 8 per token, one shared; multi-head latent attention with 128
// heads (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 + qk_rope 64, v 128) over hidden
// 7168; vocabulary 129280, untied. Its MTP module (num_nextn_predict_layers) is not trained here.
inline ModelSpec deepseek_v3() {
  ModelSpec m = qwen3_32b();
  m.layers = 61;
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 0;
  m.head_dim = 0;
  m.ffn_hidden = 18432;
  m.vocab = 129280;
  m.moe.experts = 256;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 2048;
  m.moe.shared_experts = 1;
  m.moe.dense_layers = 3;
  m.mla.q_lora_rank = 1536;
  m.mla.kv_lora_rank = 512;
  m.mla.qk_nope_head_dim = 128;
  m.mla.qk_rope_head_dim = 64;
  m.mla.v_head_dim = 128;
  return m;
}

// GPT-3 175B on 1536 GPUs as in DESIGN.md's default scenario: TP 8, PP 8, DP 24.
inline JobSpec gpt3_job() {
  JobSpec j;
  j.model = gpt3_175b();
  j.parallelism.tensor_parallel = 8;
  j.parallelism.pipeline_parallel = 8;
  j.parallelism.data_parallel = 24;
  j.global_batch_size = 1536;
  j.micro_batch_size = 1;
  return j;
}

}  // namespace ct::workload::testing
