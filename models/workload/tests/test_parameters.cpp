#include <gtest/gtest.h>

#include "models/workload/flops.h"
#include "models/workload/parameters.h"
#include "models/workload/tests/configs.h"

namespace ct::workload {
namespace {

using testing::gpt3_175b;
using testing::llama2_70b;
using testing::mixtral_8x7b;

TEST(Parameters, Gpt3Is175B) {
  const ParameterCount c = count_parameters(gpt3_175b());
  EXPECT_NEAR(static_cast<double>(c.total), 175e9, 0.01 * 175e9);
  EXPECT_NEAR(static_cast<double>(c.total), 174.6e9, 0.05e9);
  EXPECT_EQ(c.total, c.active);
  // Megatron's closed form, plus the final LayerNorm (2h) it leaves out.
  EXPECT_DOUBLE_EQ(static_cast<double>(c.total), megatron_parameters(96, 12288, 51200, 2048) + 2.0 * 12288);
  // Per layer 12 h^2 + 13 h.
  EXPECT_EQ(c.layer.total(), 12LL * 12288 * 12288 + 13LL * 12288);
  EXPECT_EQ(c.embedding, (51200LL + 2048LL) * 12288);
  EXPECT_EQ(c.output_layer, 0);
}

TEST(Parameters, UntiedGptAddsTheOutputLayer) {
  ModelSpec m = gpt3_175b();
  m.tied_embeddings = false;
  EXPECT_EQ(total_parameters(m) - total_parameters(gpt3_175b()), 51200LL * 12288);
}

TEST(Parameters, Llama2_70B) {
  const ParameterCount c = count_parameters(llama2_70b());
  EXPECT_NEAR(static_cast<double>(c.total), 69e9, 0.01 * 69e9);
  // Hand count: attention 2 h^2 + 2 h kv, MLP 3 h f, 2 RMSNorms; embeddings 2 V h; final norm.
  const int64_t h = 8192, kv = 1024, f = 28672;
  const int64_t layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h;
  EXPECT_EQ(c.layer.total(), layer);
  EXPECT_EQ(c.total, 80 * layer + 2 * 32000LL * h + h);
}

TEST(Parameters, MixtralTotalAndActive) {
  const ParameterCount c = count_parameters(mixtral_8x7b());
  EXPECT_NEAR(static_cast<double>(c.total), 46.7e9, 0.01 * 46.7e9);
  EXPECT_NEAR(static_cast<double>(c.active), 12.9e9, 0.01 * 12.9e9);
  EXPECT_EQ(c.layer.router, 4096LL * 8);
  EXPECT_EQ(c.layer.expert, 3LL * 4096 * 14336);
  EXPECT_EQ(c.total - c.active, 32LL * 6 * c.layer.expert);
}

// Qwen3 projects attention wider than the residual stream (config.json head_dim 128): Q is
// heads x 128, the output projection maps it back to hidden. The model cards (Hugging Face
// Qwen/Qwen3-32B, Qwen/Qwen3-30B-A3B) give 32.8B total / 31.2B non-embedding and 30.5B total /
// 3.3B active / 29.9B non-embedding; the twin leaves out only the per-head QK norms (256 per
// layer).
TEST(Parameters, Qwen3HeadDimWiderThanHidden) {
  const ParameterCount c = count_parameters(testing::qwen3_32b());
  EXPECT_EQ(c.layer.attention, 5120LL * (8192 + 2 * 1024) + 8192LL * 5120);
  EXPECT_NEAR(static_cast<double>(c.total), 32.8e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(c.non_embedding), 31.2e9, 0.05e9);
  ModelSpec moe = testing::qwen3_30b_a3b();
  const ParameterCount e = count_parameters(moe);
  EXPECT_NEAR(static_cast<double>(e.total), 30.5e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(e.active), 3.3e9, 0.06e9);
  EXPECT_NEAR(static_cast<double>(e.non_embedding), 29.9e9, 0.05e9);
  // Without head_dim the same keys would mean 32 heads of 64: a narrower attention.
  moe.head_dim = 0;
  EXPECT_LT(count_parameters(moe).layer.attention, e.layer.attention);
}

// Leading dense layers (model.moe.dense_layers): GLM-4.5 and GLM-4.5-Air, whose model cards give
// 355B and 106B parameters in total (the released weights add one MTP layer, 1.1% and 2.2% of
// them, which the twin does not train). Counted as MoE layers, both would be 2-3% over.
TEST(Parameters, LeadingDenseLayersHaveADenseMlp) {
  for (const auto& [m, published] :
       {std::pair{testing::glm45(), 355e9}, std::pair{testing::glm45_air(), 106e9}}) {
    const ParameterCount c = count_parameters(m);
    EXPECT_NEAR(static_cast<double>(c.total) / published, 1.0, 0.01) << m.layers;
    ModelSpec all_moe = m;
    all_moe.moe.dense_layers = 0;
    EXPECT_GT(static_cast<double>(count_parameters(all_moe).total) / published, 1.02) << m.layers;
    // Exactly: k layers trade the MoE MLP (routed + shared + router) for a dense one.
    const int64_t k = m.moe.dense_layers, h = m.hidden;
    const int64_t moe_mlp =
        (int64_t{m.moe.experts} + m.moe.shared_experts) * 3 * h * m.moe.expert_ffn_hidden + h * m.moe.experts;
    EXPECT_EQ(count_parameters(all_moe).total - c.total, k * (moe_mlp - 3 * h * m.ffn_hidden));
    EXPECT_EQ(count_parameters(all_moe).active - c.active,
              k * ((m.moe.top_k + m.moe.shared_experts) * 3 * h * m.moe.expert_ffn_hidden +
                   h * m.moe.experts - 3 * h * m.ffn_hidden));
  }
}

// Multi-head latent attention: DeepSeek-V3's card gives 671B parameters in total and 37B
// activated per token (its released weights add a 14B MTP module). The attention of one layer
// is the five projections and the two latent norms, summed from the config.
TEST(Parameters, LatentAttentionCountsItsProjections) {
  const ModelSpec m = testing::deepseek_v3();
  const ParameterCount c = count_parameters(m);
  EXPECT_EQ(c.layer.attention, 7168LL * 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512LL * 128 * 256 +
                                   128LL * 128 * 7168 + 1536 + 512);
  EXPECT_NEAR(static_cast<double>(c.total) / 671e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(c.active) / 37e9, 1.0, 0.02);
  // Without the Q latent, Q is projected directly: h x heads x 192 in place of the two.
  ModelSpec direct = m;
  direct.mla.q_lora_rank = 0;
  EXPECT_EQ(c.layer.attention - count_parameters(direct).layer.attention,
            7168LL * 1536 + 1536LL * 128 * 192 + 1536 - 7168LL * 128 * 192);
}

TEST(Parameters, SharedExpertsAreAlwaysActive) {
  ModelSpec m = mixtral_8x7b();
  m.moe.shared_experts = 1;
  m.moe.expert_ffn_hidden = 1024;
  const ParameterCount c = count_parameters(m);
  EXPECT_EQ(c.layer.dense_mlp, 3LL * 4096 * 1024);
  EXPECT_EQ(c.total - c.active, 32LL * 6 * 3 * 4096 * 1024);
}

TEST(Parameters, DefaultFfnWidths) {
  ModelSpec m = gpt3_175b();
  EXPECT_EQ(ffn_hidden(m), 4 * 12288);
  m.activation = "swiglu";
  m.hidden = 4096;
  EXPECT_EQ(ffn_hidden(m), 11008);  // Llama-7B
  m.hidden = 8192;
  EXPECT_EQ(ffn_hidden(m), 22016);  // Llama-65B
}

// Megatron SC'21 Table 1 model sizes (vocabulary 51200, sequence 2048). The smallest rows
// are printed rounded differently in the paper; from 18.4B on the formula matches to 0.3%.
TEST(Parameters, MegatronTable1Sizes) {
  struct Row {
    double params_b;
    int heads;
    int64_t hidden;
    int layers;
  };
  const Row rows[] = {{18.4, 48, 6144, 40},     {39.1, 64, 8192, 48},    {76.1, 80, 10240, 60},
                      {145.6, 96, 12288, 80},   {310.1, 128, 16384, 96}, {529.6, 128, 20480, 105},
                      {1008.0, 160, 25600, 128}};
  for (const Row& r : rows) {
    ModelSpec m;
    m.layers = r.layers;
    m.hidden = r.hidden;
    m.heads = r.heads;
    m.seq_length = 2048;
    m.vocab = 51200;
    EXPECT_NEAR(static_cast<double>(total_parameters(m)) / 1e9, r.params_b, 0.003 * r.params_b) << r.params_b;
  }
}

}  // namespace
}  // namespace ct::workload
