#include "models/scenario/model_presets.h"

namespace ct::scenario {
namespace {

nlohmann::json llama(int layers, int64_t hidden, int heads, int kv_heads, int64_t ffn, int64_t vocab,
                     int64_t seq) {
  return {{"layers", layers},     {"hidden", hidden},       {"heads", heads},
          {"kv_heads", kv_heads}, {"ffn_hidden", ffn},      {"vocab", vocab},
          {"seq_length", seq},    {"activation", "swiglu"}, {"tied_embeddings", false}};
}

nlohmann::json with_moe(nlohmann::json model, int experts, int top_k) {
  model["moe"] = {{"experts", experts}, {"top_k", top_k}};
  return model;
}

// Qwen3 (config.json head_dim 128 whatever the hidden size; untied embeddings from 8B up).
nlohmann::json qwen3(int layers, int64_t hidden, int heads, int kv_heads, int64_t ffn) {
  nlohmann::json m = llama(layers, hidden, heads, kv_heads, ffn, 151936, 4096);
  m["head_dim"] = 128;
  return m;
}

nlohmann::json qwen3_moe(int layers, int64_t hidden, int heads, int kv_heads, int64_t expert_ffn) {
  nlohmann::json m = with_moe(qwen3(layers, hidden, heads, kv_heads, expert_ffn), 128, 8);
  m["moe"]["expert_ffn_hidden"] = expert_ffn;
  return m;
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json): multi-head latent attention, the first 3 of
// 61 layers dense (first_k_dense_replace), 256 routed experts + 1 shared; 4K pre-training
// sequence (DeepSeek-V3 technical report, Sec. 4.2). Its MTP module is not a preset layer.
nlohmann::json deepseek_v3() {
  nlohmann::json m = llama(61, 7168, 128, 128, 18432, 129280, 4096);
  m["moe"] = {{"experts", 256},
              {"top_k", 8},
              {"expert_ffn_hidden", 2048},
              {"shared_experts", 1},
              {"dense_layers", 3}};
  m["mla"] = {{"q_lora_rank", 1536},
              {"kv_lora_rank", 512},
              {"qk_nope_head_dim", 128},
              {"qk_rope_head_dim", 64},
              {"v_head_dim", 128}};
  return m;
}
// GPT-OSS (openai/gpt-oss-120b and -20b config.json): 64 query heads of 64 over hidden 2880 (8 KV
// heads), SwiGLU experts of 2880, 4 of num_local_experts per token, no shared expert; layer_types
// alternate sliding_attention (window 128) and full_attention, the even-indexed layers sliding;
// vocabulary 201088, untied; initial_context_length 4096 (the pre-training sequence, extended with
// YaRN later). Its learned attention sinks (one logit per head in the softmax denominator) and the
// attention biases are not modelled: per token they cost nothing next to the projections.
nlohmann::json gpt_oss(int layers, int experts) {
  nlohmann::json m = with_moe(llama(layers, 2880, 64, 8, 2880, 201088, 4096), experts, 4);
  m["head_dim"] = 64;
  m["moe"]["expert_ffn_hidden"] = 2880;
  m["sliding_window"] = 128;
  m["full_attention_every"] = 2;
  return m;
}

std::vector<ModelPreset> build() {
  // Shapes are the published config.json of each model on Hugging Face (num_hidden_layers,
  // hidden_size, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
  // tie_word_embeddings; SiLU-gated MLPs = swiglu) or the paper's table. seq_length is the
  // pre-training sequence, not the longest context the released model accepts.
  return {
      {"llama2-7b", llama(32, 4096, 32, 32, 11008, 32000, 4096),
       "meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023, Llama 2, Table 1 (4k context)"},
      {"llama2-13b", llama(40, 5120, 40, 40, 13824, 32000, 4096),
       "meta-llama/Llama-2-13b-hf config.json; Llama 2 paper Table 1"},
      {"llama2-70b", llama(80, 8192, 64, 8, 28672, 32000, 4096),
       "meta-llama/Llama-2-70b-hf config.json (GQA, 8 KV heads); Llama 2 paper Table 1"},
      {"llama3-8b", llama(32, 4096, 32, 8, 14336, 128256, 8192),
       "meta-llama/Meta-Llama-3-8B config.json; The Llama 3 Herd of Models (2024) Table 3, 8K pre-training "
       "sequence"},
      {"llama3-70b", llama(80, 8192, 64, 8, 28672, 128256, 8192),
       "meta-llama/Meta-Llama-3-70B config.json; Llama 3 Herd Table 3"},
      {"llama3-405b", llama(126, 16384, 128, 8, 53248, 128256, 8192),
       "meta-llama/Llama-3.1-405B config.json; Llama 3 Herd Table 3 (8K sequence in the main pre-training "
       "stage)"},
      {"gpt3-175b",
       {{"layers", 96},
        {"hidden", 12288},
        {"heads", 96},
        {"ffn_hidden", 49152},
        {"activation", "gelu"},
        {"vocab", 50257},
        {"seq_length", 2048},
        {"tied_embeddings", true}},
       "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1 (GPT-2 BPE vocabulary, 2048 "
       "context)"},
      {"mixtral-8x7b", with_moe(llama(32, 4096, 32, 8, 14336, 32000, 4096), 8, 2),
       "mistralai/Mixtral-8x7B-v0.1 config.json (8 local experts, 2 per token); seq_length 4096 as NVIDIA's "
       "Mixtral performance recipes (the model accepts 32768)"},
      {"mixtral-8x22b", with_moe(llama(56, 6144, 48, 8, 16384, 32000, 4096), 8, 2),
       "mistralai/Mixtral-8x22B-v0.1 config.json; seq_length 4096 as for 8x7B (the model accepts 65536)"},
      {"qwen2.5-7b", llama(28, 3584, 28, 4, 18944, 152064, 4096),
       "Qwen/Qwen2.5-7B config.json; Qwen2.5 technical report (4,096-token pre-training stage)"},
      {"qwen2.5-72b", llama(80, 8192, 64, 8, 29568, 152064, 4096),
       "Qwen/Qwen2.5-72B config.json; Qwen2.5 technical report (4,096-token pre-training stage)"},
      {"qwen3-8b", qwen3(36, 4096, 32, 8, 12288),
       "Qwen/Qwen3-8B config.json (head_dim 128); Qwen3 technical report (4,096-token general stage)"},
      {"qwen3-32b", qwen3(64, 5120, 64, 8, 25600),
       "Qwen/Qwen3-32B config.json (64 heads of 128 over hidden 5120); Qwen3 technical report"},
      {"deepseek-v3", deepseek_v3(),
       "deepseek-ai/DeepSeek-V3 config.json (MLA, 3 leading dense layers, 256 experts + 1 shared, 8 per "
       "token); DeepSeek-V3 technical report (4K pre-training sequence)"},
      {"gpt-oss-120b", gpt_oss(36, 128),
       "openai/gpt-oss-120b config.json (36 layers, 128 experts, 4 per token, sliding window 128 on the "
       "even-indexed layers); OpenAI gpt-oss model card (4,096-token initial context)"},
      {"gpt-oss-20b", gpt_oss(24, 32),
       "openai/gpt-oss-20b config.json (24 layers, 32 experts, 4 per token, sliding window 128 on the "
       "even-indexed layers); OpenAI gpt-oss model card"},
      {"qwen3-30b-a3b", qwen3_moe(48, 2048, 32, 4, 768),
       "Qwen/Qwen3-30B-A3B config.json (128 experts, 8 per token, moe_intermediate_size 768); Qwen3 report"},
      {"qwen3-235b-a22b", qwen3_moe(94, 4096, 64, 4, 1536),
       "Qwen/Qwen3-235B-A22B config.json (128 experts, 8 per token, moe_intermediate_size 1536); Qwen3 "
       "report"},
  };
}

std::string known_names() {
  std::string s;
  for (const ModelPreset& p : model_presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s + " (or none)";
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = build();
  return presets;
}

const ModelPreset* find_model_preset(std::string_view name) {
  for (const ModelPreset& p : model_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string unavailable_model_preset(std::string_view name) {
  if (name == "deepseek-v2") {
    return "not available as a preset: give its shape as model keys (mla, moe with dense_layers), as "
           "from_hf_config does from its config.json";
  }
  if (name.starts_with("nemotron")) return "not available: squared-ReLU MLPs are not modelled";
  return "";
}

void expand_model_preset(nlohmann::json& document, std::vector<std::string>& problems) {
  if (!document.is_object() || !document.contains("training_job")) return;
  nlohmann::json& job = document["training_job"];
  if (!job.is_object() || !job.contains("model") || !job["model"].is_object()) return;
  nlohmann::json& model = job["model"];
  if (!model.contains("preset")) return;
  const nlohmann::json& name = model["preset"];
  if (!name.is_string()) {
    problems.push_back("training_job.model.preset: got " + name.dump() + ", expected one of " +
                       known_names());
    model.erase("preset");  // reported once, here
    return;
  }
  const std::string n = name.get<std::string>();
  if (n == "none") return;
  const ModelPreset* preset = find_model_preset(n);
  if (preset == nullptr) {
    const std::string why = unavailable_model_preset(n);
    problems.push_back("training_job.model.preset: got '" + n + "', " +
                       (why.empty() ? "expected one of " + known_names() : why));
    model.erase("preset");
    return;
  }
  for (const auto& [key, value] : preset->model.items()) {
    if (!model.contains(key)) {
      model[key] = value;
    } else if (value.is_object() && model[key].is_object()) {
      for (const auto& [sub, v] : value.items()) {
        if (!model[key].contains(sub)) model[key][sub] = v;
      }
    }
  }
}

}  // namespace ct::scenario
